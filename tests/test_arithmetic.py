"""The built-in arithmetic task (grpo_skill.arithmetic): seeded, disjoint splits, right answers, a warm start
that saves a loadable model. The learning itself is checked on the GPU (tests/gpu/test_gpu_arithmetic.py)."""

import json
import sys

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


def test_warm_start_command_saves_a_model_that_loads(tmp_path):
    run([sys.executable, "-m", "grpo_skill.arithmetic", "data", "--out", str(tmp_path), "--train", "64",
         "--test", "8"])
    result = run([sys.executable, "-m", "grpo_skill.arithmetic", "warm-start", "--data", str(tmp_path / "train.jsonl"),
                  "--out", str(tmp_path / "warm"), "--shape", "tiny", "--steps", "4", "--batch-size", "8",
                  "--target-accuracy", "0.99"])
    info = json.loads(result.stdout)
    assert info["steps"] == 4 and info["max_steps"] == 4
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tmp_path / "warm")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "warm")
    accuracy = arithmetic.sampled_accuracy(model, tokenizer, arithmetic.read_jsonl(tmp_path / "test.jsonl"))
    assert 0.0 <= accuracy <= 1.0
