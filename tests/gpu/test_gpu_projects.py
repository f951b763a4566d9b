"""Every registered preset x backend: scaffold with `grpo-skill new`, train with the generated train.py on a
local model build, then check the adapter, the metrics and evaluate.py's before/after samples.

The tiny preset trains its full run (60 steps) and must learn the thinking reward; the Qwen3-4B-shape
presets (random weights) run a few short steps: they show that the project runs on the real shape, memory
and special-token ids, not that a random model learns.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

from gpu_helpers import set_toml
from grpo_skill import plugins
from grpo_skill.runtime import health, metrics

DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"


def torch_cuda() -> bool:
    import torch

    return torch.cuda.is_available()  # tiny builds stand in for the 4B shape
BACKENDS = ("trl", "unsloth")
PRESETS = sorted(plugins.presets())
THINK_END_ID = 151668  # Qwen3's </think>; the 4B-shape build puts it there

# The Qwen3-4B-shape runs: a few steps of short completions, to fit a GPU session.
BIG_STEPS = 3
BIG_COMPLETION = 24
BIG_EVAL_PROMPTS = 2
# Random weights spread the probability over 151936 ids, so a 4B-shape model almost never samples </think>
# (about 24 / 151936 per completion). A sampling bias on that one id (GRPOConfig.generation_kwargs ->
# transformers' sequence_bias) makes the model emit it in some completions and not others; the thinking reward
# then has to find id 151668 in the completion ids that TRL hands it.
THINK_END_BIAS = 10.0
TINY_MIN_GAIN = 0.5


def model_for(preset, commands, qwen3_4b) -> tuple[str, bool]:
    """(local model folder, is_4b_shape) for a preset; presets never download here."""
    if preset.build_model is not None:  # tiny: its own small build, as `grpo-skill build-model` makes it
        if preset.name == "tiny":
            built = commands.run([*commands.grpo_skill(), "build-model", "--shape", "tiny"], name="build-tiny")
            return built.stdout.strip().splitlines()[-1], False
        return preset.build_model(), False
    return str(qwen3_4b["think" if preset.template_opens_think else "chat"]), True


@pytest.mark.gpu
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset_name", PRESETS)
def test_generated_project_trains_on_gpu(preset_name, backend, tmp_path, commands, request, record_property):
    if backend == "unsloth" and importlib.util.find_spec("unsloth") is None:
        pytest.skip("unsloth is not installed")
    preset = plugins.get_preset(preset_name)
    qwen3_4b = None if preset.build_model else request.getfixturevalue("qwen3_4b")
    model, big = model_for(preset, commands, qwen3_4b)
    if qwen3_4b and "build_seconds" in qwen3_4b:
        record_property("qwen3_4b_build_seconds", qwen3_4b["build_seconds"])

    # 1. Scaffold, as a user would.
    name = f"{preset_name}-{backend}"
    commands.run([*commands.grpo_skill(), "new", name, "--preset", preset_name, "--backend", backend,
                  "--model", model, "-o", tmp_path], name="new")
    project = tmp_path / name
    config_path = project / "config.toml"
    thinking = any(reward == "thinking" for reward, _ in preset.rewards)
    if big:
        set_toml(config_path, "grpo", "max_completion_length", str(BIG_COMPLETION))
        if thinking and not DRY_RUN:  # (a tiny stand-in samples </think> often enough without it)
            think_end = think_end_id(model)
            set_toml(config_path, "grpo", "generation_kwargs",
                     f"{{ sequence_bias = [[[{think_end}], {THINK_END_BIAS}]] }}")
    config = tomllib.loads(config_path.read_text())
    steps = BIG_STEPS if big else config["grpo"]["max_steps"]

    # 2. Train with the generated train.py.
    trained = commands.run([sys.executable, "train.py", "--max-steps", steps, "--backend", backend],
                           name="train", cwd=project)
    record_property("train_seconds", round(trained.seconds, 1))
    summary = json.loads((project / "outputs" / "summary.json").read_text())
    assert summary["backend"] == backend
    assert summary["model"] == model

    # 3. metrics.jsonl: one row per step; the steps that generated (the first, then one per generation with the
    # presets' steps_per_generation: TRL logs rewards there) have every configured reward.
    logged = metrics.read_metrics(project / "outputs")
    assert [row["step"] for row in logged if "loss" in row] == list(range(1, steps + 1))
    rows = [row for row in logged if "reward" in row]
    assert rows and rows[0]["step"] == 1
    for row in rows:
        for reward in config["rewards"]:
            assert f"rewards/{reward['name']}/mean" in row, (reward["name"], sorted(row))
    record_property("steps", len(rows))
    record_property("peak_step_seconds", round(max(row.get("step_time", 0.0) for row in rows), 2))
    # completions.jsonl: one group of completions per step, on both backends; the health warnings the run gave
    traces = [json.loads(line) for line in (project / "outputs" / "completions.jsonl").read_text().splitlines()]
    assert {row["step"] for row in traces} == {row["step"] for row in rows}  # each generation's group once
    record_property("health_warnings", ", ".join(w["check"] for w in health.warnings_in(rows)) or "none")

    # 4. The adapter: saved, with every target module, and trained where the rewards gave a signal. GRPO's
    # advantages are zero when a group's rewards are all equal (a random 4B-shape model's completions all score
    # the same under the standard preset's rewards), so LoRA B (initialised at zero) moves only after a step
    # whose rewards differed. evaluate.py below reloads it onto the base model with peft.
    signal_steps = sum(row.get("reward_std", 0.0) > 0 for row in rows)
    record_property("steps_with_reward_signal", signal_steps)
    check_adapter(project / "outputs" / "adapter", config, trained=signal_steps > 0)

    # 5. Learning (tiny) or the </think> id seen by the reward (4B-shape thinking).
    if not big and thinking:
        trend = metrics.reward_trend(rows)
        record_property("first10_reward", round(trend["first_mean_reward"], 3))
        record_property("last10_reward", round(trend["last_mean_reward"], 3))
        record_property("gain", round(trend["gain"], 3))
        assert trend["gain"] >= TINY_MIN_GAIN, trend
    if big and thinking:
        check_thinking_reward_sees_think_end(model, rows, record_property)

    # 6. evaluate.py: samples before (adapter off) and after (adapter on) GRPO.
    prompts = BIG_EVAL_PROMPTS if big else 8
    evaluated = commands.run([sys.executable, "evaluate.py", "--prompts", prompts], name="evaluate", cwd=project)
    result = json.loads(evaluated.stdout[evaluated.stdout.index("{"):])
    samples = [json.loads(line) for line in (project / "outputs" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == prompts
    for sample in samples:
        assert {"prompt", "before", "after", "before_reward", "after_reward"} <= set(sample)
        assert isinstance(sample["before"], str) and isinstance(sample["after"], str)
    record_property("eval_reward_before", round(result["mean_reward_before"], 3))
    record_property("eval_reward_after", round(result["mean_reward_after"], 3))
    record_property("evaluate_seconds", round(evaluated.seconds, 1))


def think_end_id(model: str) -> int:
    from transformers import AutoTokenizer

    found = AutoTokenizer.from_pretrained(model).convert_tokens_to_ids("</think>")
    if not DRY_RUN:
        assert found == THINK_END_ID
    return found


def check_adapter(adapter: Path, config: dict, trained: bool) -> None:
    from peft import PeftConfig
    from peft.utils import load_peft_weights

    assert (adapter / "adapter_config.json").is_file()
    assert (adapter / "adapter_model.safetensors").is_file()
    peft_config = PeftConfig.from_pretrained(adapter)
    assert peft_config.r == config["lora"]["r"]
    # Unsloth trains lm_head as a full matrix (modules_to_save) rather than through LoRA
    adapted = set(peft_config.target_modules) | set(peft_config.modules_to_save or ())
    assert set(config["lora"]["target_modules"]) <= adapted
    weights = load_peft_weights(str(adapter), device="cpu")
    lora_b = {key: value for key, value in weights.items() if "lora_B" in key}
    assert lora_b and any("lora_A" in key for key in weights)
    if trained:
        assert any(value.float().abs().max() > 0 for value in lora_b.values()), "no LoRA B weight moved from zero"


def check_thinking_reward_sees_think_end(model: str, rows: list[dict], record_property) -> None:
    """In the run: some completions scored above the reward's -1.0 for a missing </think>, which the reward
    gives only when id 151668 is in the completion ids. Outside it: the registered reward, built with the
    model's own tokenizer as train.py builds it, scores ids from that tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    think_end = think_end_id(model)
    best = max(row["rewards/thinking/mean"] for row in rows)
    record_property("thinking_reward_best_step_mean", round(best, 3))
    assert best > -1.0, "no completion in the run closed its thinking with id 151668"

    reward = plugins.get_reward("thinking").build(tokenizer=tokenizer, preset=plugins.get_preset("thinking"))
    texts = ["First, is 6 times 7 forty-two? Then I check it again and again, step by step.</think>42", "42"]
    ids = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    assert think_end in ids[0] and think_end not in ids[1]
    closed, unclosed = reward(prompts=["q", "q"], completions=texts, completion_ids=ids)
    assert unclosed == -1.0
    assert closed > 0.0


@pytest.mark.gpu
def test_default_project_on_a_gpu_takes_the_fast_generation_path(tmp_path, commands, qwen3_4b, record_property):
    """A project as `new` makes it (no --backend, no [model] edits) samples from the bf16 copy of the policy on a GPU
    where plan says it fits: the user gets the fastest path without knowing its name."""
    model = str(qwen3_4b["chat"])
    commands.run([*commands.grpo_skill(), "new", "default", "--preset", "standard", "--model", model,
                  "-o", tmp_path], name="new")
    project = tmp_path / "default"
    set_toml(project / "config.toml", "grpo", "max_completion_length", str(BIG_COMPLETION))
    trained = commands.run([sys.executable, "train.py", "--max-steps", 2], name="train", cwd=project)
    record_property("train_seconds", round(trained.seconds, 1))
    summary = json.loads((project / "outputs" / "summary.json").read_text())
    said = trained.log.read_text(encoding="utf-8")  # train.py says which path it took, and why
    if DRY_RUN and not torch_cuda():  # the dry run on a CPU: the fast path is for GPUs
        assert summary["generation"] == "plain" and "generation: the trl backend's own: no CUDA GPU" in said
        assert 'gradient checkpointing: on (gradient_checkpointing = "auto"): no CUDA GPU' in said
        assert summary["gradient_checkpointing"] is True
        return
    assert (summary["generation"], summary["backend"]) == ("fast", "trl"), summary
    speed = summary["generation_speed"]  # the report shows how fast the default path sampled in a real run
    assert speed["generations"] >= 1, speed
    record_property("generation_speed", speed)
    assert "generation: fast" in said
    # bf16 on: the copy computes the LoRA as the trainer scores it, under bf16 autocast (benchmarks/sampler_mismatch.py)
    assert "its LoRA beside each layer in bfloat16, as the trainer computes it" in said
    # the decode step's levers (runtime/fused_projections.py, grouped_decode.py's windows, the deferred stop check):
    # 4 fused matmuls in each of Qwen3-4B's 36 layers (q/k/v, o, gate/up, down)
    assert "in 144 fused matmuls (A with the base weight, q/k/v and gate/up together)" in said
    assert "its attention reading the cache up to the tokens so far, in steps of 128" in said
    assert "the end of generation read one step late" in said
    assert "generation: the first one compiles the decode step" in said  # a minute or two without a word otherwise
    # load_in_4bit = "auto": the base in 16 bits, and the copy decodes with those very tensors (no second copy)
    assert 'weights: 16-bit (load_in_4bit = "auto")' in said and summary["load_in_4bit"] is False
    assert "(0.0 GiB of its own," in said
    # gradient_checkpointing = "auto": off where plan says the run fits without it (an H200 has room)
    assert 'gradient checkpointing: off (gradient_checkpointing = "auto"): plan without it' in said
    assert summary["gradient_checkpointing"] is False


def stored_in_4_bits(tmp_path, commands) -> Path:
    """The tiny build saved in 4 bits (bitsandbytes nf4), as the presets' unsloth/...-bnb-4bit checkpoints are."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    if importlib.util.find_spec("bitsandbytes") is None:
        if DRY_RUN:  # the CPU suite installs no bitsandbytes (tests/test_stored_4bit.py says why)
            pytest.skip("bitsandbytes is not installed on this machine")
        pytest.fail("bitsandbytes is not installed: the GPU bundle carries it (scripts/build_gpu_bundle.py)")
    built = commands.run([*commands.grpo_skill(), "build-model", "--shape", "tiny"], name="build-tiny")
    source = built.stdout.strip().splitlines()[-1]
    stored = tmp_path / "tiny-bnb-4bit"
    four_bit = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
    AutoModelForCausalLM.from_pretrained(source, quantization_config=four_bit, dtype=torch.bfloat16).save_pretrained(stored)
    AutoTokenizer.from_pretrained(source).save_pretrained(stored)
    return stored


@pytest.mark.gpu
def test_a_checkpoint_stored_in_4_bits_trains_held_in_16_bits(tmp_path, commands, record_property):
    """The presets name checkpoints saved in 4 bits (unsloth/...-bnb-4bit). With ``load_in_4bit = false`` the TRL
    backend holds their weights in bf16, says so, and trains; without that, transformers read the 16-bit request as
    "this checkpoint is 16-bit" and stopped on mismatched shapes. The tiny build, saved in 4 bits here, stands in."""
    import torch

    stored = stored_in_4_bits(tmp_path, commands)
    commands.run([*commands.grpo_skill(), "new", "stored", "--preset", "tiny", "--backend", "trl",
                  "--model", stored, "-o", tmp_path], name="new")
    project = tmp_path / "stored"
    set_toml(project / "config.toml", "model", "load_in_4bit", "false")
    trained = commands.run([sys.executable, "train.py", "--max-steps", 2], name="train", cwd=project)
    record_property("train_seconds", round(trained.seconds, 1))
    said = trained.log.read_text(encoding="utf-8")
    dtype = "bfloat16" if torch_cuda() else "float32"
    assert f"note: {stored} is stored in 4 bits; this run holds its weights in {dtype}: the same values" in said
    assert json.loads((project / "outputs" / "summary.json").read_text())["steps"] == 2


@pytest.mark.gpu
def test_the_fast_path_on_a_4_bit_base_with_lora_on_some_layers_samples_from_all_of_them(tmp_path, commands):
    """A 4-bit base on the fast path, LoRA on the attention's q and v only: the generation copy holds the layers LoRA
    leaves out dequantized (it once copied their packed 4-bit bytes and stopped on mismatched sizes)."""
    stored = stored_in_4_bits(tmp_path, commands)
    commands.run([*commands.grpo_skill(), "new", "partial", "--preset", "tiny", "--backend", "trl",
                  "--model", stored, "-o", tmp_path], name="new")
    project = tmp_path / "partial"
    set_toml(project / "config.toml", "model", "load_in_4bit", "true")
    set_toml(project / "config.toml", "model", "generation", '"fast"')
    set_toml(project / "config.toml", "lora", "target_modules", '["q_proj", "v_proj"]')
    trained = commands.run([sys.executable, "train.py", "--max-steps", 2], name="train", cwd=project)
    said = trained.log.read_text(encoding="utf-8")
    assert "generation: a " in said and "copy of the policy" in said
    assert json.loads((project / "outputs" / "summary.json").read_text())["steps"] == 2
