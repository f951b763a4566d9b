"""The GPU suite's report: the machine and versions, per-test results, learning numbers; JSON + Markdown.

    python scripts/gpu_report.py env > env.json
    python scripts/gpu_report.py report --env env.json --results DIR --wall-seconds N --out PREFIX
    python scripts/gpu_report.py render PREFIX.json [--device-seconds N] [--note TEXT]  # rederive, rewrite PREFIX.md

``report`` reads the per-test JSON files that tests/gpu/conftest.py writes (GRPO_SKILL_GPU_RESULTS), writes
PREFIX.json and PREFIX.md, and prints a short table last on stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import math
import platform
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

PACKAGES = ("torch", "transformers", "trl", "unsloth", "unsloth_zoo", "peft", "bitsandbytes", "accelerate",
            "datasets", "liger-kernel", "grpo-skill")


def environment() -> dict:
    info = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "versions": {}}
    for name in PACKAGES:
        try:
            info["versions"][name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            info["versions"][name] = None
    try:
        import torch

        info["cuda"] = torch.version.cuda
        info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        if torch.cuda.is_available():
            info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    except ImportError:
        info["gpu"] = None
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        info["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 and smi.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        info["driver"] = None
    return info


def short_name(nodeid: str) -> str:
    name = nodeid.split("::")[-1]
    return re.sub(r"^test_", "", name)


def build_report(env: dict, results_dir: Path, wall_seconds: float | None, pytest_status: int | None,
                 expected: list[str] = ()) -> dict:
    tests = [json.loads(path.read_text()) for path in sorted(results_dir.glob("*.json"))]
    return report_of(env, tests, wall_seconds, pytest_status, expected)


BUDGET_STOP = 124  # timeout's status: gpu-suite.sh's --budget interrupted pytest (its KeyboardInterrupt text is that)
RECIPE_ID = re.compile(r"\[(?P<preset>[^-\]]+)-(?P<backend>[^-\]]+)(?:-(?P<variant>[^\]]+))?\]$")
# tests/gpu/test_gpu_recipes.py's variants of a recipe run, each its own row: the label after the backend's name
VARIANT_LABELS = {"scaled": "", "presets": ", presets' lr", "plain": ", plain generation", "reseeded": ", another seed",
                  "compiled": ", decoder layers compiled"}


def report_of(env: dict, tests: list[dict], wall_seconds: float | None, pytest_status: int | None,
              expected: list[str] = ()) -> dict:
    for test in tests:  # a test keeps the card it ran on through later merges (calls may land on other cards)
        if test["outcome"] != "not run":
            test.setdefault("gpu", env.get("gpu"))
    seen = {test["test"] for test in tests}
    tests += [{"test": nodeid, "outcome": "not run", "seconds": 0, "numbers": {},
               "error": "no result: the suite stopped (budget or crash) before this test ended"}
              for nodeid in expected if nodeid not in seen]
    grid = {}
    for test in tests:
        match = re.search(r"\[(?P<preset>[^-\]]+)-(?P<backend>[^\]]+)\]$", test["test"])
        if match and "generated_project" in test["test"]:
            grid.setdefault(match["preset"], {})[match["backend"]] = {
                "outcome": test["outcome"], "seconds": test["seconds"], "gpu": test.get("gpu"), **test["numbers"]}
    learning = {"tiny_thinking": {}, "arithmetic": None, "recipes": {}, "warm_start_continuation": {}}
    for preset, backends in grid.items():
        if preset == "tiny":
            for backend, row in backends.items():
                if "gain" in row:
                    learning["tiny_thinking"][backend] = {
                        key: row[key] for key in ("first10_reward", "last10_reward", "gain")}
    for test in tests:
        if "arithmetic" in test["test"]:
            learning["arithmetic"] = {"outcome": test["outcome"], **test["numbers"]}
        match = RECIPE_ID.search(test["test"])
        if match and "recipe_learns" in test["test"]:
            variant = match["variant"] or "scaled"
            label = match["backend"] + VARIANT_LABELS.get(variant, f", {variant}")
            learning["recipes"].setdefault(match["preset"], {})[label] = {
                "outcome": test["outcome"], "seconds": test["seconds"], "backend": match["backend"],
                "variant": variant, "gpu": test.get("gpu"), **test["numbers"]}
        match = re.search(r"continues_from_the_sft_adapter\[(?P<backend>[^\]]+)\]$", test["test"])
        if match:
            learning["warm_start_continuation"][match["backend"]] = {
                "outcome": test["outcome"], "seconds": test["seconds"], **test["numbers"]}
    counts = {}
    for test in tests:
        counts[test["outcome"]] = counts.get(test["outcome"], 0) + 1
    return {"environment": env, "suite_wall_seconds": wall_seconds, "pytest_exit_status": pytest_status,
            "counts": counts, "grid": grid, "learning": learning, "tests": tests}


# Which trl recipe run plays which part of a comparison (tests/gpu/test_gpu_recipes.py): its variant, the generation
# path its summary.json says it took, and whether it compiled its decoder layers. The first part is the base, the
# second is compared with it at the same seed, the third is the base at another seed (the run-to-run noise).
PARITY_RUNS = {"fast": ("scaled", "fast", False), "plain": ("plain", "plain", False),
               "fast, another seed": ("reseeded", "fast", False)}
COMPILED_RUNS = {"fast": ("scaled", "fast", False), "compiled": ("compiled", "fast", True),
                 "fast, another seed": ("reseeded", "fast", False)}


def paired(rows: dict, parts: dict) -> dict:
    """A preset's comparison of two trl recipe runs at one seed (``parts``, as PARITY_RUNS): held-out reward after
    GRPO, and the run-to-run noise it is judged against: the larger of the gap between the base's runs at two seeds
    and the probe's standard error of a difference of two means (completions taken as independent). Within the noise
    means a gap of at most twice that. ``gap``: the second part's reward minus the base's."""
    runs, missing = {}, []
    for part, (variant, path, compiled) in parts.items():
        row = next((row for row in rows.values() if row.get("backend") == "trl" and row.get("variant") == variant),
                   None)
        if row is None or row["outcome"] != "passed" or row.get("heldout_reward_after") is None:
            missing.append(f"{part}: {'no result' if row is None else row['outcome']}")
        elif row.get("generation") != path:
            missing.append(f"{part}: took the {row.get('generation') or 'unrecorded'} path")
        elif bool(row.get("compiled_layers")) != compiled:
            missing.append(f"{part}: decoder layers {'compiled' if row.get('compiled_layers') else 'not compiled'}")
        else:
            runs[part] = row
    result = {"runs": {part: {key: row.get(key) for key in (
        "generation", "seed", "heldout_reward_before", "heldout_reward_after", "heldout_reward_std_after",
        "heldout_reward_accuracy_after", "heldout_completions", "train_seconds")} for part, row in runs.items()},
        "missing": missing, "names": list(parts)[:2]}
    if missing:
        return result
    gpus = {part: row.get("gpu") or "unknown" for part, row in runs.items()}
    if len(set(gpus.values())) > 1:  # another card's run-to-run noise is not this one's
        result["missing"] = ["ran on different GPUs (" + ", ".join(f"{part}: {gpu}" for part, gpu in gpus.items())
                             + "): run all three on one card"]
        return result
    (base_name, base), (versus_name, versus), (_, other) = ((part, runs[part]) for part in parts)
    if base["seed"] != versus["seed"] or other["seed"] == base["seed"]:
        result["missing"] = [f"seeds {base['seed']} ({base_name}), {versus['seed']} ({versus_name}), {other['seed']} "
                             f"(another seed): {base_name} and {versus_name} need one seed, the noise run another"]
        return result
    gap = versus["heldout_reward_after"] - base["heldout_reward_after"]
    seed_gap = abs(other["heldout_reward_after"] - base["heldout_reward_after"])
    standard_error = math.sqrt(sum(run["heldout_reward_std_after"] ** 2 / run["heldout_completions"]
                                   for run in (base, versus)))
    noise = max(seed_gap, standard_error)
    result.update({"gap": round(gap, 3), "seed_gap": round(seed_gap, 3), "standard_error": round(standard_error, 3),
                   "noise": round(noise, 3), "within_noise": abs(gap) <= 2 * noise})
    return result


def generation_parity(rows: dict) -> dict:
    """A preset's fast-against-plain comparison (``paired``): the plain path against the fast one."""
    return paired(rows, PARITY_RUNS)


def compiled_parity(rows: dict) -> dict | None:
    """A preset's compiled-layers run against its fast run at the same seed (``paired``); None where the preset has
    no compiled run."""
    if not any(row.get("variant") == "compiled" for row in rows.values()):
        return None
    return paired(rows, COMPILED_RUNS)


def parity_by_preset(recipes: dict) -> dict:
    return {preset: generation_parity(rows) for preset, rows in sorted(recipes.items())
            if any(row.get("variant") in ("plain", "reseeded") for row in rows.values())}


def reuse_line(preset: str, recipe_json: str) -> str:
    """How many optimizer steps one generation feeds in a recipe as run, named for what it is."""
    recipe = json.loads(recipe_json)
    accumulation = recipe.get("gradient_accumulation_steps", 1)
    per_generation = recipe.get("steps_per_generation") or accumulation
    iterations = recipe.get("num_iterations", 1)
    settings = f"steps_per_generation {per_generation}, gradient_accumulation_steps {accumulation}" + (
        f", num_iterations {iterations}" if iterations != 1 else "")
    steps = per_generation * iterations / accumulation
    if steps <= 1:
        return f"- {preset}: one generation per optimizer step ({settings}): on-policy"
    return (f"- {preset}: one generation feeds {steps:g} optimizer steps ({settings}): all but the first step of each "
            f"cycle train on completions an older policy sampled, which makes training more off-policy than one "
            f"generation per step (TRL weighs them by its clipped importance ratio); both generation paths run it "
            f"alike")


def rederived(report: dict) -> dict:
    """``report`` with what it derives from its tests (counts, grid, learning) derived again by this code."""
    return {**report, **report_of(report["environment"], [dict(test) for test in report["tests"]],
                                  report.get("suite_wall_seconds"), report.get("pytest_exit_status"))}


def cards_of(report: dict) -> Counter:
    """How many of the report's results each card gave (tests not run have none)."""
    return Counter(test.get("gpu") for test in report["tests"] if test["outcome"] != "not run" and test.get("gpu"))


def merge(old: dict, new: dict, expected: list[str] | None = None) -> dict:
    """``old`` with ``new``'s results in place of the same tests' (a test ``new`` did not get to, "not run", keeps
    its old result); with ``expected`` (the tests there are now), results of tests that no longer exist are
    dropped. The environment, wall time and exit status are the new run's; both runs' notes are kept."""
    ran = {test["test"]: test for test in new["tests"] if test["outcome"] != "not run"}
    old_gpu = old["environment"].get("gpu")
    tests = [ran.pop(test["test"], test if test["outcome"] == "not run" else {"gpu": old_gpu, **test})
             for test in old["tests"]]
    known = {test["test"] for test in tests}
    tests += list(ran.values()) + [test for test in new["tests"]
                                    if test["outcome"] == "not run" and test["test"] not in known]
    if expected is not None:
        tests = [test for test in tests if test["test"] in expected]
    merged = report_of(new["environment"], tests, new.get("suite_wall_seconds"), new.get("pytest_exit_status"))
    merged["notes"] = old.get("notes", []) + new.get("notes", [])
    return merged


def markdown(report: dict) -> str:
    env = report["environment"]
    lines = ["# GPU suite report", "",
             "Generated by `scripts/gpu-suite.sh` (tests in `tests/gpu/`, marked `gpu`). Durations are what one run "
             "took, with the tests running side by side on one GPU (pytest-xdist): they are not benchmarks.", "",
             "To run it again on a GPU machine with the offline bundle (`python scripts/build_gpu_bundle.py`, see "
             "`docs/gpu-suite.md`): `source .gpu/env.sh && scripts/gpu-suite.sh --out DIR`, then copy "
             "`DIR/gpu-report.{json,md}` here; this page is generated from the JSON (`python scripts/gpu_report.py "
             "render docs/gpu-report.json`). Without CUDA the tests skip; "
             "`GRPO_SKILL_GPU_DRY_RUN=1 pytest tests/gpu` checks their plumbing on a CPU (tiny stand-ins, no learning "
             "claims).", ""]
    lines += [f"- date: {env.get('date')}",
              f"- GPU: {env.get('gpu')} ({env.get('gpu_memory_gib')} GiB), driver {env.get('driver')}, CUDA "
              f"{env.get('cuda')}, Python {env.get('python')}",
              "- versions: " + ", ".join(f"{name} {version}" for name, version in env["versions"].items()),
              f"- result: {', '.join(f'{n} {k}' for k, n in sorted(report['counts'].items()))}; pytest exit status "
              f"{report.get('pytest_exit_status')}" + (" (stopped by gpu-suite.sh --budget)"
                                                         if report.get("pytest_exit_status") == BUDGET_STOP else ""),
              f"- suite wall time on the machine: {report.get('suite_wall_seconds')} s"]
    cards = cards_of(report)
    if len(cards) > 1:
        lines.append("- results from several cards (the GPU above is the latest call's; each test's row names its "
                     "own), tests per card: " + ", ".join(f"{gpu} {count}" for gpu, count in cards.most_common()))
    if report.get("device_seconds") is not None:
        lines.append(f"- device time of the session call(s) that made this report (machine start and transfers "
                     f"included): {report['device_seconds']} s")
    for note in report.get("notes", []):
        lines.append(f"- {note}")
    lines += ["", "## Every preset x backend", "",
              "| preset | backend | result | seconds | steps | train s | evaluate s | reward before / after (evaluate.py) | GPU |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for preset in sorted(report["grid"]):
        for backend in sorted(report["grid"][preset]):
            row = report["grid"][preset][backend]
            lines.append(
                f"| {preset} | {backend} | {row['outcome']} | {row['seconds']} | {row.get('steps', '')} | "
                f"{row.get('train_seconds', '')} | {row.get('evaluate_seconds', '')} | "
                f"{row.get('eval_reward_before', '')} / {row.get('eval_reward_after', '')} | {row.get('gpu') or ''} |")
    learning = report["learning"]
    lines += ["", "## Learning", "", "Tiny preset, thinking reward (mean reward of the first and last 10 logged steps; "
              "the test needs a gain of at least 0.5):", "",
              "| backend | first 10 | last 10 | gain |", "| --- | --- | --- | --- |"]
    for backend, row in sorted(learning["tiny_thinking"].items()):
        lines.append(f"| {backend} | {row['first10_reward']} | {row['last10_reward']} | {row['gain']} |")
    arithmetic = learning.get("arithmetic")
    if arithmetic:
        lines += ["", "Arithmetic (seeded two-digit addition, `grpo_skill.arithmetic`; warm start by a short supervised "
                  "pass, then GRPO with the `accuracy` reward; accuracy on held-out problems, one sample each at "
                  "temperature 1, the same seeds before and after):", "",
                  f"- result: {arithmetic['outcome']}",
                  f"- held-out accuracy before GRPO (warm-started model): {arithmetic.get('heldout_accuracy_before_grpo')}"
                  f" on {arithmetic.get('heldout_problems')} problems",
                  f"- held-out accuracy after GRPO: {arithmetic.get('heldout_accuracy_after_grpo')}",
                  f"- GRPO mean reward (train prompts), first / last 10 steps: {arithmetic.get('grpo_first10_reward')} / "
                  f"{arithmetic.get('grpo_last10_reward')}",
                  f"- warm start: {arithmetic.get('warm_start_seconds')} s, final loss "
                  f"{arithmetic.get('warm_start_final_loss')}; GRPO run {arithmetic.get('grpo_seconds')} s",
                  f"- settings: `{arithmetic.get('settings')}`"]
    recipes = learning.get("recipes") or {}
    if recipes:
        lines += ["", "## Each preset's recipe on a stand-in for its model", "",
                  "A small Qwen3 built on the machine, warm-started on worked additions to act like the preset's model "
                  "(thinking: its template opens `<think>`, it thinks for a varying length, closes and answers; "
                  "standard: a hybrid chat model, run with thinking off), then the generated project with the preset's "
                  "own recipe, scaled down in steps and, with the model, in learning rate and the thinking budget (see "
                  "`recipe`; one standard run keeps the presets' learning rate). Measured by "
                  "`grpo-skill probe` on held-out problems before GRPO and after it (adapter on); accuracy is measured "
                  "beside the recipe's rewards at weight 0. Cells read before -> after.", "",
                  "| preset | backend | result | held-out reward | accuracy | clipped | closed `</think>` | zero-spread "
                  "groups | completion tokens | GRPO reward first / last 10 | train s | GPU |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for preset in sorted(recipes):
            for backend in sorted(recipes[preset]):
                row = recipes[preset][backend]

                def pair(key):
                    before, after = row.get(f"heldout_{key}_before"), row.get(f"heldout_{key}_after")
                    return "" if before is None and after is None else f"{before} -> {after}"

                lines.append(
                    f"| {preset} | {backend} | {row['outcome']} | {pair('reward')} | {pair('reward_accuracy')} | "
                    f"{pair('clipped')} | {pair('closed_thinking')} | {pair('zero_spread_groups')} | "
                    f"{pair('completion_tokens')} | {row.get('grpo_first10_reward', '')} / "
                    f"{row.get('grpo_last10_reward', '')} | {row.get('train_seconds', '')} | {row.get('gpu') or ''} |")
        lines.append("")
        for preset in sorted(recipes):
            for recipe in dict.fromkeys(row["recipe"] for row in recipes[preset].values() if row.get("recipe")):
                lines.append(f"- {preset} recipe as run: `{recipe}`")
        settings = next((row.get("settings") for rows in recipes.values() for row in rows.values()
                         if row.get("settings")), None)
        lines.append(f"- stand-in settings: `{settings}`")
        lines += ["", "Generation reused for several optimizer steps (the recipes' `steps_per_generation`, as run):",
                  ""]
        lines += dict.fromkeys(reuse_line(preset, row["recipe"]) for preset in sorted(recipes)
                               for row in recipes[preset].values() if row.get("recipe"))
        lines += parity_markdown(recipes)
    continuation = learning.get("warm_start_continuation") or {}
    if continuation:
        lines += ["", "Warm start (`sft.py`) then `train.py` continuing from its adapter (tiny preset): relative change "
                  "of LoRA A from the SFT adapter (a new adapter would differ by about 1.4):", "",
                  "| backend | result | LoRA A change | evaluate.py reward, start adapter / after |",
                  "| --- | --- | --- | --- |"]
        for backend, row in sorted(continuation.items()):
            lines.append(f"| {backend} | {row['outcome']} | {row.get('lora_a_relative_change', '')} | "
                         f"{row.get('eval_reward_start_adapter', '')} / {row.get('eval_reward_after', '')} |")
    lines += ["", "## Every test", "", "| test | result | seconds | GPU | numbers |", "| --- | --- | --- | --- | --- |"]
    for test in report["tests"]:
        numbers = ", ".join(f"{k}={v}" for k, v in test["numbers"].items() if k != "settings")
        lines.append(f"| {short_name(test['test'])} | {test['outcome']} | {test['seconds']} | {test.get('gpu') or ''} "
                     f"| {numbers} |")
    failures = [test for test in report["tests"] if test["outcome"] != "passed"]
    if failures:
        lines += ["", "## Failures and skips", ""]
        for test in failures:
            lines += [f"### {short_name(test['test'])}", "", "```", test["error"][-1500:].strip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def parity_markdown(recipes: dict) -> list[str]:
    parity = parity_by_preset(recipes)
    lines = ["", "### Fast generation against plain, the same recipe", ""]
    if not parity:
        return lines + ["Not measured in these results: the trl recipe runs on the plain path and at another seed "
                        "(`-k 'recipe and trl and not presets'`) have no result here."]
    lines += ["Each trl recipe run three times on the same warm start: sampling from the bf16 copy of the "
              "policy (`[model] generation = \"fast\"`, what `\"auto\"` takes on a GPU) and by TRL on the policy "
              "itself (`\"plain\"`) at the same training seed, then the fast path at another seed. The probes of all "
              "three sample with the recipe's seed. The noise is the gap between the two fast runs, or the probe's "
              "standard error of a difference of two held-out means (completions taken as independent) where that "
              "is larger; fast and plain reach the same held-out reward within the noise when they differ by at "
              "most twice it. One seed pair gives a rough noise figure: a gap outside it asks for more seeds before "
              "it is read as an effect.", ""] + _parity_table(parity, "")
    compiled = {preset: result for preset, rows in sorted(recipes.items())
                if (result := compiled_parity(rows)) is not None}
    if compiled:
        lines += ["", "With the decoder layers compiled for training (`[model] compile_layers = true`), the fast path "
                  "at the fast run's seed, judged against the same noise:", ""] + _parity_table(compiled,
                                                                                          ", compiled layers")
    return lines


def _parity_table(results: dict, label: str) -> list[str]:
    """``paired`` comparisons by preset: their runs' table, then each preset's verdict."""
    lines = ["| preset | run | generation | seed | held-out reward before -> after | accuracy after | train s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for preset, result in results.items():
        for part, run in result["runs"].items():
            lines.append(f"| {preset} | {part} | {run['generation']} | {run['seed']} | "
                         f"{run['heldout_reward_before']} -> {run['heldout_reward_after']} | "
                         f"{run['heldout_reward_accuracy_after']} | {run['train_seconds']} |")
    return lines + [""] + [f"- {preset}{label}: {parity_verdict(result)}" for preset, result in results.items()]


def parity_verdict(result: dict) -> str:
    """A ``paired`` comparison in one line."""
    if result["missing"]:
        return "not compared: " + "; ".join(result["missing"])
    (base, versus), gap, noise = result["names"], result["gap"], result["noise"]
    figures = (f"{versus} - {base} {gap:+.3f}, noise {noise} ({base} at two seeds {result['seed_gap']}, standard "
               f"error {result['standard_error']})")
    if result["within_noise"]:
        return f"{figures}: the same held-out reward within the noise"
    return f"{figures}: a gap over twice the noise, {versus if gap > 0 else base} higher"


def table(report: dict) -> str:
    mixed = len(cards_of(report)) > 1
    rows = [f"{'test':58} {'result':8} {'seconds':>8}" + ("  GPU" if mixed else "")]
    for test in report["tests"]:
        card = f"  {test.get('gpu') or ''}" if mixed else ""
        rows.append(f"{short_name(test['test'])[:58]:58} {test['outcome']:8} {test['seconds']:>8}{card}")
    for backend, row in sorted(report["learning"]["tiny_thinking"].items()):
        rows.append(f"tiny thinking [{backend}]: reward {row['first10_reward']} -> {row['last10_reward']} "
                    f"(gain {row['gain']})")
    for preset, backends in sorted((report["learning"].get("recipes") or {}).items()):
        for backend, row in sorted(backends.items()):
            if row.get("heldout_reward_before") is None:
                continue
            rows.append(f"{preset} recipe [{backend}]: held-out reward {row.get('heldout_reward_before')} -> "
                        f"{row.get('heldout_reward_after')}, clipped {row.get('heldout_clipped_before')} -> "
                        f"{row.get('heldout_clipped_after')}")
    for preset, result in parity_by_preset(report["learning"].get("recipes") or {}).items():
        rows.append(f"{preset} recipe, fast against plain: {parity_verdict(result)}")
    for preset, recipe_rows in sorted((report["learning"].get("recipes") or {}).items()):
        result = compiled_parity(recipe_rows)
        if result is not None:
            rows.append(f"{preset} recipe, compiled layers against fast: {parity_verdict(result)}")
    arithmetic = report["learning"].get("arithmetic")
    if arithmetic:
        rows.append(f"arithmetic held-out accuracy: {arithmetic.get('heldout_accuracy_before_grpo')} before GRPO -> "
                    f"{arithmetic.get('heldout_accuracy_after_grpo')} after")
    rows.append(f"{report['counts']}  wall {report.get('suite_wall_seconds')} s  on {report['environment'].get('gpu')}")
    return "\n".join(rows)


def read_expected(path: Path) -> list[str]:
    """Test ids from ``pytest --collect-only -q`` output."""
    return [line.strip() for line in path.read_text().splitlines() if "::" in line]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("env")
    rep = verbs.add_parser("report")
    rep.add_argument("--env", type=Path, required=True)
    rep.add_argument("--results", type=Path, required=True)
    rep.add_argument("--wall-seconds", type=float)
    rep.add_argument("--pytest-status", type=int)
    rep.add_argument("--expected", type=Path, help="the test ids collected (pytest --collect-only -q)")
    rep.add_argument("--out", type=Path, required=True, help="PREFIX: writes PREFIX.json and PREFIX.md")
    mer = verbs.add_parser("merge", help="a report with another run's results in place of the same tests' old ones")
    mer.add_argument("old", type=Path)
    mer.add_argument("new", type=Path)
    mer.add_argument("--expected", type=Path, help="the test ids there are now (pytest --collect-only -q): results "
                     "of other tests are dropped")
    mer.add_argument("--out", type=Path, required=True, help="PREFIX: writes PREFIX.json and PREFIX.md")
    ren = verbs.add_parser("render")
    ren.add_argument("json", type=Path)
    ren.add_argument("--device-seconds", type=float)
    ren.add_argument("--note", action="append", default=[])
    args = parser.parse_args(argv)

    if args.verb == "env":
        print(json.dumps(environment(), indent=2))
        return 0
    if args.verb == "report":
        env = json.loads(args.env.read_text()) if args.env.is_file() else environment()
        expected = read_expected(args.expected) if args.expected and args.expected.is_file() else []
        report = build_report(env, args.results, args.wall_seconds, args.pytest_status, expected)
        out = args.out
    elif args.verb == "merge":
        expected = read_expected(args.expected) if args.expected else None
        report = merge(json.loads(args.old.read_text()), json.loads(args.new.read_text()), expected)
        out = args.out
    else:
        report = rederived(json.loads(args.json.read_text()))
        if args.device_seconds is not None:
            report["device_seconds"] = args.device_seconds
        report["notes"] = report.get("notes", []) + args.note
        out = args.json.with_suffix("")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
