"""A verifiable task with no download: GRPO raises held-out accuracy on seeded two-digit addition.

1. ``python -m grpo_skill.arithmetic data``: train.jsonl and a disjoint test.jsonl (prompt, answer).
2. ``python -m grpo_skill.arithmetic warm-start``: a small Qwen3 (shape ``small``) built locally, then a short
   supervised pass on train.jsonl teaches it to answer with the number and stop; it stops once one sample
   per training problem is right about half the time, which leaves GRPO something to improve.
3. ``grpo-skill new --preset tiny --model <warm-start>``; config.toml pointed at train.jsonl, the accuracy
   reward and short completions, as a user would edit it; ``python train.py`` (GRPO, LoRA).
4. ``python evaluate.py --config config.heldout.toml``: the same project with dataset.path = test.jsonl, so
   "before" (adapter off: the warm-started model) and "after" (adapter on) are scored by the accuracy reward on
   held-out problems, one seeded sample each at temperature 1, the same seeds before and after.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib

import pytest

from gpu_helpers import set_toml

DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"  # plumbing only, on a CPU: tiny sizes, no claim

SETTINGS = {
    "train": 8000, "test": 200, "shape": "small",
    "sft_steps": 3000, "sft_batch": 128, "sft_lr": 1e-3, "sft_target": 0.5,
    "grpo_steps": 60, "grpo_lr": 1e-3, "grpo_batch": 64, "generations": 8, "completion": 8,
}
if DRY_RUN:
    SETTINGS.update(train=300, test=8, shape="tiny", sft_steps=4, sft_batch=16, grpo_steps=2, grpo_batch=16)
SETTINGS.update(json.loads(os.environ.get("GRPO_SKILL_ARITHMETIC", "{}")))  # e.g. '{"sft_steps": 3000}'


@pytest.mark.gpu
def test_grpo_raises_held_out_arithmetic_accuracy(tmp_path, commands, record_property):
    s = SETTINGS
    data, warm = tmp_path / "data", tmp_path / "warm-start"
    commands.run([sys.executable, "-m", "grpo_skill.arithmetic", "data", "--out", data, "--train", s["train"],
                  "--test", s["test"], "--seed", 0], name="data")
    warmed = commands.run([sys.executable, "-m", "grpo_skill.arithmetic", "warm-start", "--data",
                           data / "train.jsonl", "--out", warm, "--shape", s["shape"], "--steps", s["sft_steps"],
                           "--batch-size", s["sft_batch"], "--lr", s["sft_lr"], "--target-accuracy", s["sft_target"],
                           "--seed", 0], name="warm-start")
    warm_info = json.loads(warmed.stdout[warmed.stdout.index("{"):])
    record_property("warm_start_seconds", warm_info["seconds"])
    record_property("warm_start_steps", warm_info["steps"])
    record_property("warm_start_final_loss", round(warm_info["final_loss"], 4))
    record_property("warm_start_train_sampled_accuracy", warm_info["train_accuracy"])

    # `--reward accuracy` is refused at `new`: the sample prompts file has no answer column. So the project is
    # made with the preset's reward, then pointed at the arithmetic data and the accuracy reward.
    commands.run([*commands.grpo_skill(), "new", "arith", "--preset", "tiny", "--backend", "trl",
                  "--model", warm, "-o", tmp_path], name="new")
    project = tmp_path / "arith"
    for split in ("train", "test"):
        (project / "data" / f"{split}.jsonl").write_bytes((data / f"{split}.jsonl").read_bytes())
    config = project / "config.toml"
    set_toml(config, "dataset", "path", '"data/train.jsonl"')
    text = config.read_text()
    assert text.count('name = "thinking"') == 1
    config.write_text(text.replace('name = "thinking"', 'name = "accuracy"'))
    for key, value in {
        "max_completion_length": s["completion"], "num_generations": s["generations"],
        "per_device_train_batch_size": s["grpo_batch"], "learning_rate": s["grpo_lr"],
        "max_steps": s["grpo_steps"],
    }.items():
        set_toml(config, "grpo", key, json.dumps(value))
    heldout = project / "config.heldout.toml"
    heldout.write_text(config.read_text())
    set_toml(heldout, "dataset", "path", '"data/test.jsonl"')
    assert tomllib.loads(heldout.read_text())["dataset"]["path"] == "data/test.jsonl"

    trained = commands.run([sys.executable, "train.py"], name="train", cwd=project)
    record_property("grpo_seconds", round(trained.seconds, 1))
    summary = json.loads((project / "outputs" / "summary.json").read_text())
    record_property("grpo_first10_reward", round(summary["first_mean_reward"], 3))
    record_property("grpo_last10_reward", round(summary["last_mean_reward"], 3))

    evaluated = commands.run([sys.executable, "evaluate.py", "--config", heldout, "--prompts", s["test"]],
                             name="evaluate-heldout", cwd=project)
    result = json.loads(evaluated.stdout[evaluated.stdout.index("{"):])
    samples = [json.loads(line) for line in (project / "outputs" / "samples.jsonl").read_text().splitlines()]
    held_out = {json.loads(line)["prompt"] for line in (data / "test.jsonl").read_text().splitlines()}
    trained_on = {json.loads(line)["prompt"] for line in (data / "train.jsonl").read_text().splitlines()}
    assert len(samples) == s["test"] and {row["prompt"] for row in samples} <= held_out
    assert not held_out & trained_on
    before, after = result["mean_reward_before"], result["mean_reward_after"]  # accuracy: reward 1 or 0, weight 1
    record_property("heldout_problems", s["test"])
    record_property("heldout_accuracy_before_grpo", round(before, 3))
    record_property("heldout_accuracy_after_grpo", round(after, 3))
    record_property("settings", json.dumps(s, sort_keys=True))
    if not DRY_RUN:
        assert after > before, f"held-out accuracy {before:.3f} before GRPO, {after:.3f} after"
