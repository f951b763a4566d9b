"""The built-in arithmetic task (grpo_skill.arithmetic): seeded, disjoint splits, right answers, a warm start
that saves a loadable model. The learning itself is checked on the GPU (tests/gpu/test_gpu_arithmetic.py)."""

import json
import sys

import pytest

from grpo_skill import arithmetic

from support import run


def test_splits_are_seeded_disjoint_and_right(tmp_path):
    first = arithmetic.write_splits(tmp_path / "a", train=300, test=50, seed=3)
    again = arithmetic.write_splits(tmp_path / "b", train=300, test=50, seed=3)
    other = arithmetic.write_splits(tmp_path / "c", train=300, test=50, seed=4)
    train, test = arithmetic.read_jsonl(first["train"]), arithmetic.read_jsonl(first["test"])
    assert (len(train), len(test)) == (300, 50)
    assert train == arithmetic.read_jsonl(again["train"]) and test == arithmetic.read_jsonl(again["test"])
    assert train != arithmetic.read_jsonl(other["train"])
    assert not {row["prompt"] for row in train} & {row["prompt"] for row in test}
    assert len({row["prompt"] for row in train}) == 300
    for row in train + test:
        a, b = arithmetic.pair_of(row)
        assert row["answer"] == str(a + b) and 0 <= a <= 99 and 0 <= b <= 99


def test_asking_for_more_problems_than_exist_is_refused():
    try:
        arithmetic.problems(101, seed=0, high=9)
    except ValueError as error:
        assert "only 100 distinct problems" in str(error)
    else:
        raise AssertionError("expected a ValueError")


@pytest.mark.parametrize("text, answer, right", [
    ("12", "12", True),
    ("The sum is 12.", "12", True),
    ("-3", "-3", True),
    ("12 or 13", "12", False),  # the last number counts
    ("13", "12", False),
    ("", "12", False),
    ("twelve", "12", False),
])
def test_an_answer_is_right_when_its_last_number_is_the_sum(text, answer, right):
    assert arithmetic.is_right(text, answer) is right


def test_a_warm_start_that_memorised_its_problems_scores_one_on_them_and_zero_on_wrong_sums(tmp_path):
    """Four problems learned to the end (the loss falls, sampled accuracy reaches 1.0 and the pass stops early);
    the saved model then answers all four right, and a key whose sums are all off by one scores it 0.0."""
    run([sys.executable, "-m", "grpo_skill.arithmetic", "data", "--out", str(tmp_path), "--train", "4",
         "--test", "8", "--seed", "1"])
    result = run([sys.executable, "-m", "grpo_skill.arithmetic", "warm-start", "--data", str(tmp_path / "train.jsonl"),
                  "--out", str(tmp_path / "warm"), "--shape", "tiny", "--steps", "400", "--batch-size", "8",
                  "--lr", "1e-2", "--target-accuracy", "1.0"])
    info = json.loads(result.stdout)
    assert info["train_accuracy"] == 1.0 and info["steps"] < info["max_steps"] == 400
    assert info["final_loss"] < info["first_loss"] / 5
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tmp_path / "warm")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "warm")
    rows = arithmetic.read_jsonl(tmp_path / "train.jsonl")
    off_by_one = [{**row, "answer": str(int(row["answer"]) + 1)} for row in rows]
    assert arithmetic.sampled_accuracy(model, tokenizer, rows) == 1.0
    assert arithmetic.sampled_accuracy(model, tokenizer, off_by_one) == 0.0
    assert arithmetic.sampled_accuracy(model, tokenizer, rows[:2] + off_by_one[2:]) == 0.5
