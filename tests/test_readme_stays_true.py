"""The generated README stays true when config.toml is edited, and weight 0 (monitor only) is said (issue 22)."""

import json

import pytest


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_readme_repeats_nothing_config_toml_decides(cli, tmp_path, lang):
    data = tmp_path / "d.jsonl"
    # 8 rows: one generation of this layout draws 8 prompts (fewer rows and TRL would train 0 steps)
    data.write_text("".join(json.dumps({"question": f"2 + {n}?", "final": str(2 + n)}) + "\n" for n in range(8)))
    cli("new", "p", "--preset", "tiny", "--lang", lang, "-o", str(tmp_path / "a"), cwd=tmp_path)
    cli("new", "p", "--preset", "tiny", "--lang", lang, "-o", str(tmp_path / "b"), "--dataset", str(data),
        "--prompt-column", "question", "--answer-column", "final", "-r", "accuracy:0.7", "-r", "length:0",
        "--backend", "trl", "--set", "grpo.num_generations=4", "--set", "grpo.steps_per_generation=4",
        "--set", "grpo.max_steps=9", cwd=tmp_path)
    first = (tmp_path / "a" / "p" / "README.md").read_text()
    assert first == (tmp_path / "b" / "p" / "README.md").read_text()  # other settings, the same README
    assert "config.toml" in first and "grpo-skill check ." in first and "python train.py --smoke" in first
    assert "weight = 0" in first
    assert "https://github.com/grpo-skill/grpo-skill/blob/main/docs/multi-gpu.md" in first


def test_weight_zero_is_scored_and_logged_but_not_in_the_total(cli, tmp_path, english):
    args = ("-c", "6 x 7 = 42.</think>The answer is \\boxed{42}.", "-c", "</think>41", "--column", "answer=42",
            "--preset", "tiny", "--json")
    alone = json.loads(cli("rewards", "try", "accuracy:1", *args, cwd=tmp_path).stdout)
    watched = json.loads(cli("rewards", "try", "accuracy:1", "length:0", *args, cwd=tmp_path).stdout)
    assert [s["total"] for s in watched["samples"]] == [s["total"] for s in alone["samples"]]
    assert all("length" in s["scores"] and s["scores"]["length"] is not None for s in watched["samples"])
    shown = cli("rewards", "show", "length", cwd=tmp_path).stdout
    assert "weight = 0 makes it monitor-only: it is computed and logged (rewards/length/mean" in shown
    assert "weight = 1.0  # 0: monitor only" in shown
