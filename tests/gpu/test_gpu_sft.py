"""The warm start on both backends: a generated project's sft.py writes a LoRA adapter, train.py continues from
it once ``[model] adapter`` names it, and evaluate.py compares that starting adapter with the trained one.

The CPU tests (tests/test_sft.py) cover the TRL path; Unsloth loads an adapter its own way
(``FastLanguageModel.from_pretrained`` on the adapter folder), which only a GPU can run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

from gpu_helpers import set_toml

DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"
SFT_STEPS, GRPO_STEPS = (2, 2) if DRY_RUN else (30, 5)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ("trl", "unsloth"))
def test_train_continues_from_the_sft_adapter(backend, tmp_path, commands, record_property):
    if backend == "unsloth" and importlib.util.find_spec("unsloth") is None:
        pytest.skip("unsloth is not installed")
    from peft.utils import load_peft_weights

    commands.run([*commands.grpo_skill(), "new", "warm", "--preset", "tiny", "--backend", backend, "-o", tmp_path],
                 name="new")
    project = tmp_path / "warm"
    sft = commands.run([sys.executable, "sft.py", "--max-steps", SFT_STEPS], name="sft", cwd=project)
    summary = json.loads(sft.stdout[sft.stdout.index("{"):])
    record_property("sft_seconds", round(sft.seconds, 1))
    record_property("sft_training_loss", round(summary["training_loss"], 4))
    start_dir = project / "outputs" / "sft" / "adapter"
    assert summary["adapter"] == str(start_dir) and summary["steps"] == SFT_STEPS

    set_toml(project / "config.toml", "model", "adapter", '"outputs/sft/adapter"')
    # beta > 0 as in the 4B presets: TRL then keeps a frozen copy of the starting adapter as the reference
    set_toml(project / "config.toml", "grpo", "beta", "0.1")
    trained = commands.run([sys.executable, "train.py", "--max-steps", GRPO_STEPS], name="train", cwd=project)
    record_property("train_seconds", round(trained.seconds, 1))
    assert json.loads((project / "outputs" / "summary.json").read_text())["steps"] == GRPO_STEPS

    start = load_peft_weights(str(start_dir), device="cpu")
    end = load_peft_weights(str(project / "outputs" / "adapter"), device="cpu")
    lora_a = sorted(key for key in start if "lora_A" in key)
    assert lora_a and set(lora_a) <= set(end)
    change = sum(float((end[k].float() - start[k].float()).norm()) ** 2 for k in lora_a) ** 0.5
    size = sum(float(start[k].float().norm()) ** 2 for k in lora_a) ** 0.5
    record_property("lora_a_relative_change", round(change / size, 4))
    # a new adapter's random A would differ from sft.py's by about sqrt(2); a few GRPO steps move it little
    assert change / size < 0.5

    evaluated = commands.run([sys.executable, "evaluate.py", "--prompts", 2], name="evaluate", cwd=project)
    result = json.loads(evaluated.stdout[evaluated.stdout.index("{"):])
    record_property("eval_reward_start_adapter", round(result["mean_reward_before"], 3))
    record_property("eval_reward_after", round(result["mean_reward_after"], 3))
