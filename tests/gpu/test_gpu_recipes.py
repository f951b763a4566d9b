"""Each preset's recipe learns on a model that behaves like the preset's real one.

No hub here, so the real models (Qwen3-4B-Thinking-2507, Qwen3-4B) are stood in for by a small Qwen3 built on
the machine and warm-started (``grpo_skill.warmstart``, every weight, a short supervised pass) on worked
two-digit additions (``grpo_skill.arithmetic``) to behave like the target:

- ``thinking``: its template opens <think>; it thinks for a varying length, from one line to hundreds of tokens
  of checking an answer it already has (a few runs past the budget), closes </think> and answers, in varied styles;
- ``standard``: a hybrid chat model (its template thinks unless ``enable_thinking=False``), warm-started on
  both modes.

Then, for each backend: ``grpo-skill new --preset P --model <warm start> --dataset train.jsonl`` and the
preset's own recipe (its config.toml as generated: rewards, LoRA, 4-bit, G, batch, steps per generation, beta, chat
template settings) scaled down in steps and, with the model, in learning rate and the thinking budget (``SCALED``;
the standard recipe also runs once at the presets' own learning rate, to measure what it does on this model).
``grpo-skill probe`` measures
the model on held-out problems before GRPO and after it (``[model] adapter = outputs/adapter``): reward,
each reward's mean (plus ``accuracy`` at weight 0, measured only), clipped and closed-thinking ratios.

The trl recipes also run twice more on the same warm start, to tell whether the fast generation path (a bf16
copy of the policy, ``[model] generation``) changes what is learned: once with ``generation = "plain"`` at the
same seed, and once on the fast path at another seed, whose gap to the first run is the run-to-run noise
(scripts/gpu_report.py compares them). The three runs' probes sample with the same seed, so the held-out reward
before GRPO is measured once and shared.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from gpu_helpers import Commands, set_toml
from grpo_skill.runtime import metrics

DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"  # plumbing only, on a CPU: tiny sizes, no claim
BACKENDS = ("trl", "unsloth")
# The targets: does the chat template open <think> (a thinking model) or not (a hybrid chat model)? The thinking
# stand-in's checks go on for an exponential number of rounds (mean 8, at most 30): its thinking runs from ~10
# to ~1000 tokens (median ~220), about 15% of it past the scaled budget below.
TARGETS = {"thinking": {"chat": False, "examples": ["--recheck-mean", 8, "--recheck-max", 30]},
           "standard": {"chat": True, "examples": []}}

SETTINGS = {
    "train": 4000, "test": 200, "shape": "small", "warm_steps": 600, "warm_batch": 64, "warm_lr": 1e-3,
    "probe_prompts": 40,
}
# The departures from the presets' recipes: fewer steps; a learning rate for a 256-wide model (the presets' 1e-5 is
# sized for 4B parameters; small models take larger steps, as the tiny preset's 5e-3 and the arithmetic test's 1e-3
# do; the "presets-lr" run measures 1e-5 here); and the thinking budget scaled with the stand-in's thinking (the
# real model thinks for thousands of tokens against 2048; the stand-in's ~10-1000 would never reach 2048).
SCALED = {"max_steps": 60, "learning_rate": 5e-4}
SCALED_BY_PRESET = {"thinking": {"max_completion_length": 512}, "standard": {}}
PRESETS_LR = {"learning_rate": 1e-5}
if DRY_RUN:
    SETTINGS.update(train=200, test=8, shape="tiny", warm_steps=4, warm_batch=8, probe_prompts=2)
    SCALED.update(max_steps=2, max_completion_length=24)  # a CPU samples a nearly random model slowly
    SCALED_BY_PRESET["thinking"] = {}
SETTINGS.update(json.loads(os.environ.get("GRPO_SKILL_RECIPES", "{}")))  # e.g. '{"warm_steps": 900}'


def warm_model(preset: str, commands: Commands) -> tuple[Path, Path, dict]:
    """(warm-started model, data folder, warm-start result): made once per machine and preset, shared by the
    backends' tests (a file lock: pytest-xdist runs them side by side)."""
    from filelock import FileLock

    root = Path(os.environ.get("GRPO_SKILL_GPU_CACHE", "/tmp/grpo-skill-gpu-cache"))
    key = hashlib.sha256(json.dumps([preset, TARGETS[preset], SETTINGS, DRY_RUN], sort_keys=True).encode()).hexdigest()[:12]
    folder = root / "recipes" / f"{preset}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / "build.lock")):
        done = folder / "warm-start.json"
        if not done.is_file():
            data = folder / "data"
            commands.run([sys.executable, "-m", "grpo_skill.arithmetic", "data", "--out", data, "--train",
                          SETTINGS["train"], "--test", SETTINGS["test"], "--seed", 0], name=f"data-{preset}")
            commands.run([sys.executable, "-m", "grpo_skill.warmstart", "examples", "--data", data / "train.jsonl",
                          "--out", data / "worked.jsonl", "--seed", 0, *TARGETS[preset]["examples"]],
                         name=f"examples-{preset}")
            chat = ["--chat"] if TARGETS[preset]["chat"] else []
            warmed = commands.run([sys.executable, "-m", "grpo_skill.warmstart", "train", "--examples",
                                   data / "worked.jsonl", "--out", folder / "model", "--shape", SETTINGS["shape"],
                                   "--steps", SETTINGS["warm_steps"], "--batch-size", SETTINGS["warm_batch"],
                                   "--lr", SETTINGS["warm_lr"], "--seed", 0, *chat],
                                  name=f"warm-start-{preset}", timeout=600)
            done.write_text(warmed.stdout[warmed.stdout.index("{"):])
    return folder / "model", folder / "data", json.loads(done.read_text())


def probe(commands: Commands, config: Path, name: str) -> dict:
    result = commands.run([*commands.grpo_skill(), "probe", config, "--prompts", SETTINGS["probe_prompts"],
                           "--json"], name=name, timeout=600)
    return json.loads(result.stdout[result.stdout.index("{"):])


# One id per pytest run, the same in every xdist worker: a probe is shared within a run, never across runs.
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex


def probe_shared(commands: Commands, config: Path, name: str, folder: Path) -> tuple[dict, bool]:
    """(probe of ``config``, whether another test of this run measured it): runs whose held-out config is the same
    text (same warm start, same recipe, same probe seed) probe the warm start once."""
    from filelock import FileLock

    key = hashlib.sha256(config.read_bytes()).hexdigest()[:12]
    cached = folder / "probes" / f"{RUN_ID}-{key}.json"
    cached.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cached) + ".lock"):
        if cached.is_file():
            return json.loads(cached.read_text()), True
        result = probe(commands, config, name)
        cached.write_text(json.dumps(result))
        return result, False


def figures(result: dict) -> dict:
    """What the report keeps of a probe."""
    rewards = result["rewards"]
    return {
        "reward": result["reward"]["mean"],
        "reward_std": result["reward"]["std"],  # over the completions: the probe's own sampling spread
        **{f"reward_{name}": stats["mean"] for name, stats in rewards.items()},
        "clipped": result["clipped_ratio"],
        "closed_thinking": result["thinking"]["closed_ratio"],
        "thinking_mode": result["thinking"]["mode"],
        "zero_spread_groups": result["zero_spread_groups"],
        "completion_tokens": result["completion_tokens"]["mean"],
        "verdict": result["verdict"],
    }


# The variants of a run: "scaled" is the recipe as above (generation left to "auto": on a GPU the trl backend takes
# the fast path, the test checks it); "presets" keeps the presets' learning rate; "plain" samples by the backend
# itself at the same seed; "reseeded" is the fast path at another training seed (the noise between two runs);
# "compiled" is the fast path with the policy's decoder layers compiled for training (compile_layers = true; "auto"
# compiles only runs long enough to repay it), at the same seed as "scaled": the same held-out reward within that
# noise, or compiling changes what is learned.
VARIANTS = {
    "scaled": {"generation": "auto", "seed_offset": 0},
    "presets": {"generation": "auto", "seed_offset": 0},
    "plain": {"generation": "plain", "seed_offset": 0},
    "reseeded": {"generation": "fast", "seed_offset": 1},
    "compiled": {"generation": "fast", "seed_offset": 0, "compile_layers": True},
}
# (preset, backend, variant): every preset x backend scaled, standard/trl at the presets' rate, and each trl recipe
# on the plain path and at another seed (fast against plain: tests/gpu/test_gpu_recipes.py's docstring)
RUNS = [(preset, backend, "scaled") for preset in sorted(TARGETS) for backend in BACKENDS] + [
    ("standard", "trl", "presets")] + [
    (preset, "trl", variant) for preset in sorted(TARGETS) for variant in ("plain", "reseeded")] + [
    ("thinking", "trl", "compiled")]


def expected_generation(backend: str, asked: str) -> str:
    """The path a run must take: the one asked for; "auto" is the fast path for the trl backend on a GPU (the
    stand-in's copy fits an H200 many times over), the backend's own on a CPU or with Unsloth."""
    if asked != "auto":
        return asked
    return "fast" if backend == "trl" and not DRY_RUN else "plain"


@pytest.mark.gpu
@pytest.mark.parametrize(("preset_name", "backend", "variant"), RUNS, ids=["-".join(run) for run in RUNS])
def test_preset_recipe_learns_on_a_model_like_its_target(preset_name, backend, variant, tmp_path, commands,
                                                         record_property):
    if backend == "unsloth" and importlib.util.find_spec("unsloth") is None:
        pytest.skip("unsloth is not installed")
    model, data, warmed = warm_model(preset_name, commands)
    record_property("warm_start_seconds", warmed["seconds"])
    record_property("warm_start_final_loss", warmed["final_loss"])

    # 1. The project, as a user makes it: the preset's recipe, the arithmetic prompts (prompt, answer).
    name = f"{preset_name}-{backend}"
    commands.run([*commands.grpo_skill(), "new", name, "--preset", preset_name, "--backend", backend,
                  "--model", model, "--dataset", data / "train.jsonl", "-o", tmp_path], name="new")
    project = tmp_path / name
    config = project / "config.toml"
    scaled = {**SCALED, **SCALED_BY_PRESET[preset_name], **(PRESETS_LR if variant == "presets" else {})}
    for key, value in scaled.items():
        set_toml(config, "grpo", key, json.dumps(value))
    # `new` adds the accuracy reward (weight 1) for a dataset with an answer column; the recipe under test is the
    # preset's rewards, so accuracy stays beside them at weight 0: logged and probed, changing nothing in the reward
    added = '[[rewards]]\nname = "accuracy"\nweight = 1.0\n'
    assert added in config.read_text(), "new did not add the accuracy reward on the dataset's answer column"
    config.write_text(config.read_text().replace(added, added.replace("1.0", "0.0")))
    recipe = (config.read_text())
    shutil.copyfile(data / "test.jsonl", project / "data" / "test.jsonl")

    # 2. Held-out configs for the probe: the test problems (accuracy among the rewards, at weight 0). "after" adds
    # the adapter GRPO trains.
    before = project / "heldout-before.toml"
    before.write_text(recipe)
    set_toml(before, "dataset", "path", '"data/test.jsonl"')
    after = project / "heldout-after.toml"
    after.write_text(before.read_text())
    set_toml(after, "model", "adapter", '"outputs/adapter"')

    # 3. What only training sees (the probes keep the recipe's seed and sample alike): the generation path, the seed.
    asked, seed = VARIANTS[variant]["generation"], _grpo(recipe)["seed"] + VARIANTS[variant]["seed_offset"]
    set_toml(config, "model", "generation", json.dumps(asked))
    set_toml(config, "grpo", "seed", json.dumps(seed))
    if "compile_layers" in VARIANTS[variant]:
        set_toml(config, "model", "compile_layers", json.dumps(VARIANTS[variant]["compile_layers"]))

    measured_before, shared = probe_shared(commands, before, "probe-before", model.parent)
    trained = commands.run([sys.executable, "train.py"], name="train", cwd=project)
    measured_after = probe(commands, after, "probe-after")
    summary = json.loads((project / "outputs" / "summary.json").read_text())

    record_property("generation_asked", asked)
    record_property("generation", summary["generation"])
    record_property("compiled_layers", summary["compiled_layers"])
    record_property("seed", seed)
    record_property("heldout_before_shared", shared)
    record_property("train_seconds", round(trained.seconds, 1))
    record_property("grpo_first10_reward", round(summary["first_mean_reward"], 3))
    record_property("grpo_last10_reward", round(summary["last_mean_reward"], 3))
    for label, result in (("before", measured_before), ("after", measured_after)):
        for key, value in figures(result).items():
            record_property(f"heldout_{key}_{label}", round(value, 3) if isinstance(value, float) else value)
    record_property("heldout_completions", measured_after["completions"])
    record_property("recipe", json.dumps({key: value for key, value in _grpo(recipe).items()
                                          if key in ("max_completion_length", "num_generations", "beta",
                                                     "per_device_train_batch_size", "gradient_accumulation_steps",
                                                     "learning_rate", "max_steps", "steps_per_generation",
                                                     "num_iterations")},
                                          sort_keys=True))
    record_property("settings", json.dumps(SETTINGS, sort_keys=True))

    # The run took the generation path it was given (train.py's summary, beside its 'generation:' line).
    assert summary["generation"] == expected_generation(backend, asked), (
        f"generation = {asked!r} took the {summary['generation']} path; the train log says why: {trained.log}")
    assert summary["compiled_layers"] is VARIANTS[variant].get("compile_layers", False)  # 60 steps: "auto" is off
    # What the preset's recipe promises, checked on every run: prompts rendered as the preset says.
    assert measured_before["thinking"]["mode"] == ("off" if preset_name == "standard" else "open")
    traces = (project / "outputs" / "completions.jsonl").read_text().splitlines()
    rewarded = {row["step"] for row in metrics.read_metrics(project / "outputs") if "reward" in row}
    assert {json.loads(line)["step"] for line in traces} == rewarded  # one group per generation
    if DRY_RUN or variant == "presets":  # the presets' rate on a small model: measured, not a claim
        return
    assert measured_after["reward"]["mean"] > measured_before["reward"]["mean"], (
        f"held-out reward {measured_before['reward']['mean']} before GRPO, {measured_after['reward']['mean']} after")
    if preset_name == "thinking":
        # the stand-in overthinks: some thinking runs past the budget, and the recipe's rewards (-1 without
        # </think>, soft_overlong near the end) teach it to close sooner
        clipped = (measured_before["clipped_ratio"], measured_after["clipped_ratio"])
        closed = (measured_before["thinking"]["closed_ratio"], measured_after["thinking"]["closed_ratio"])
        assert clipped[0] > 0.05, f"the stand-in never ran past the budget ({clipped[0]}): nothing to learn here"
        assert clipped[1] < clipped[0] and closed[1] > closed[0], f"clipped {clipped}, closed </think> {closed}"


def _grpo(config_text: str) -> dict:
    import tomllib

    return tomllib.loads(config_text)["grpo"]
