"""The figures the skill docs quote from `grpo-skill plan` and from the GPU benchmark, rendered from the code and
from docs/benchmarks.json, so that a re-fitted estimate or a new benchmark row cannot leave a stale number behind
(`python -m grpo_skill.docs --check` fails, `--write` rewrites them; scaffold/docs.py places them).

- ``speed`` (SKILL.md): per preset, plan's estimate at the preset's settings and what the benchmark measured for the
  project `new` makes against a hand-written Unsloth loop.
- ``benchmark`` (references/grpo-config.md): the benchmark rows the reference discusses, with their settings.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

BENCHMARK_FILE = Path("docs/benchmarks.json")
PLAN_GPU = "H200"  # plan's constants were fitted on one: its estimate there needs no scaling
PLAN_PROMPT_TOKENS = 64  # given, not guessed: a guess counts with a tokenizer when one happens to be cached
SPEED_PRESETS = ("standard", "thinking")
GENERATED, HAND_WRITTEN = "generated default", "hand-written unsloth"

# The rows references/grpo-config.md discusses, by (case, name) in docs/benchmarks.json; a row the JSON lacks is
# left out. What ran, in each language: the settings come from the row.
BENCHMARK_ROWS = {
    ("standard", HAND_WRITTEN): ("a hand-written Unsloth GRPO loop (the reference)", "手写的 Unsloth GRPO 循环（参照）"),
    ("standard", GENERATED): ("the project `new` makes, as it is", "`new` 生成的项目，不做改动"),
    ("standard", "generated default, bf16 base"): ("the same with `load_in_4bit = false`",
                                                    "同上，`load_in_4bit = false`"),
    ("standard", "generated unsloth"): ("generated, Unsloth backend", "生成的项目，Unsloth 后端"),
    ("standard", "generated unsloth + speed"): ("generated, Unsloth backend, the preset's `steps_per_generation`",
                                                "生成的项目，Unsloth 后端，预设的 `steps_per_generation`"),
    ("standard", "plain trl"): ("plain TRL + peft in bf16", "纯 TRL + peft，bf16"),
    ("standard", "plain trl, spg 8, static compiled"): ("plain TRL in bf16, compiled static KV cache",
                                                        "纯 TRL，bf16，编译的静态 KV 缓存"),
    ("standard", "generated trl, spg 8, static compiled"): ("generated, TRL backend (4-bit), compiled static KV cache",
                                                            "生成的项目，TRL 后端（4 位），编译的静态 KV 缓存"),
    ("thinking", HAND_WRITTEN): ("a hand-written Unsloth GRPO loop (the reference)", "手写的 Unsloth GRPO 循环（参照）"),
    ("thinking", GENERATED): ("the project `new` makes, as it is", "`new` 生成的项目，不做改动"),
    ("thinking", "generated unsloth"): ("generated, Unsloth backend", "生成的项目，Unsloth 后端"),
    ("thinking", "generated unsloth + speed"): ("generated, Unsloth backend, the preset's `steps_per_generation`",
                                                "生成的项目，Unsloth 后端，预设的 `steps_per_generation`"),
}

TEXT = {
    "en": {
        "speed_header": ("Preset", f"`plan` on an {PLAN_GPU}, the preset's settings",
                         f"Measured on an {PLAN_GPU}: the project `new` makes", "A hand-written Unsloth loop"),
        "estimate": "~{reserved:.1f} GiB reserved, ~{seconds:.1f} s/step",
        "measured": "{seconds:.2f} s/step, {reserved:.1f} GiB reserved",
        "reference": "{seconds:.2f} s/step, {reserved:.1f} GiB reserved ({ratio:.1f}× as long)",
        "speed_note": ("Measured with Qwen3-4B's shape (random weights), {settings} ([docs/benchmarks.md]({link}), "
                       "{date}); the estimate is for the preset's own settings, with {tokens}-token prompts: "
                       "`grpo-skill plan --preset thinking --gpu {gpu} --prompt-tokens {tokens}`."),
        "bench_header": ("Case", "What ran", "Settings", "s/step", "GiB reserved", "Measured"),
        "settings": "G {g}, batch {batch}, {tokens} tokens, {spg}, {bits}",
        "per_step": "1 generation per step",
        "per_steps": "1 generation per {steps} steps",
        "bits": {True: "4-bit", False: "bf16"},
        "join": "; ",
        "case_settings": "{case}: {settings}",
    },
    "zh-CN": {
        "speed_header": ("预设", f"`plan` 在 {PLAN_GPU} 上的估算（预设自己的设置）", f"{PLAN_GPU} 上实测：`new` 生成的项目",
                         "手写的 Unsloth 循环"),
        "estimate": "约 {reserved:.1f} GiB 保留显存，约每步 {seconds:.1f} 秒",
        "measured": "每步 {seconds:.2f} 秒，保留显存 {reserved:.1f} GiB",
        "reference": "每步 {seconds:.2f} 秒，保留显存 {reserved:.1f} GiB（用时 {ratio:.1f} 倍）",
        "speed_note": ("实测使用 Qwen3-4B 的结构（随机权重），{settings}（[docs/benchmarks.md]({link})，{date}）；"
                       "估算按预设自己的设置、{tokens} 个 token 的提示词："
                       "`grpo-skill plan --preset thinking --gpu {gpu} --prompt-tokens {tokens}`。"),
        "bench_header": ("场景", "运行的程序", "设置", "秒/步", "保留显存 GiB", "测量时间"),
        "settings": "G {g}，批大小 {batch}，{tokens} 个 token，{spg}，{bits}",
        "per_step": "每步生成一次",
        "per_steps": "每 {steps} 步生成一次",
        "bits": {True: "4 位", False: "bf16"},
        "join": "；",
        "case_settings": "{case}：{settings}",
    },
}
BENCHMARKS_LINK = "https://github.com/grpo-skill/grpo-skill/blob/main/docs/benchmarks.md"


class FiguresError(Exception):
    """docs/benchmarks.json lacks a row the docs quote, or cannot be read."""


def benchmark(root: Path) -> dict:
    path = root / BENCHMARK_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise FiguresError(f"{path}: {error}") from None


def measured(report: dict, case: str, name: str) -> dict | None:
    """The row (case, name) that finished all its timed steps, its rounds folded into one: the median s/step, the
    largest memory. A row the time budget cut short is left out."""
    rows = [row for row in report.get("rows", [])
            if row.get("case") == case and row.get("name") == name and row.get("s_per_step")
            and row.get("status") == "ok" and not row.get("partial")]
    if not rows:
        return None
    return {**rows[0], "s_per_step": statistics.median(row["s_per_step"] for row in rows),
            "peak_reserved_gib": max(row.get("peak_reserved_gib") or 0 for row in rows)}


def _required(report: dict, case: str, name: str) -> dict:
    row = measured(report, case, name)
    if row is None:
        raise FiguresError(f"{BENCHMARK_FILE} has no finished row {case}/{name}, which SKILL.md quotes")
    return row


def _settings(row: dict, lang: str) -> str:
    text, settings = TEXT[lang], row["settings"]
    grpo = settings["grpo"]
    accumulation = grpo.get("gradient_accumulation_steps", 1)
    batch = grpo["per_device_train_batch_size"] * accumulation
    steps = max(1, (settings.get("steps_per_generation") or accumulation) // accumulation)  # optimizer steps
    spg = text["per_step"] if steps == 1 else text["per_steps"].format(steps=steps)
    return text["settings"].format(g=grpo["num_generations"], batch=batch, tokens=grpo["max_completion_length"],
                                   spg=spg, bits=text["bits"][bool(settings["model"].get("load_in_4bit"))])


def _date(row: dict) -> str:
    return str(row.get("run_date", "")).split(" ")[0]


def plan_estimate(preset: str) -> tuple[float, float]:
    """(peak GiB reserved, s per step) as `grpo-skill plan --preset P --gpu H200 --prompt-tokens 64` prints them."""
    from ..runtime.estimate import estimate
    from ..runtime.planning import from_preset, resolve_generation

    settings, _about = from_preset(preset, None, PLAN_PROMPT_TOKENS, 1)
    settings, _why = resolve_generation(settings, None)
    result = estimate(settings)
    return round(result.peak_reserved_gib, 2), round(result.s_per_step, 2)


def render_speed(lang: str, root: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]], str]:
    """The speed table (header, rows) and the sentence under it."""
    report, text = benchmark(root), TEXT[lang]
    rows, cases = [], []
    for preset in SPEED_PRESETS:
        reserved, seconds = plan_estimate(preset)
        generated, reference = _required(report, preset, GENERATED), _required(report, preset, HAND_WRITTEN)
        rows.append((
            f"`{preset}`",
            text["estimate"].format(reserved=reserved, seconds=seconds),
            text["measured"].format(seconds=generated["s_per_step"], reserved=generated["peak_reserved_gib"]),
            text["reference"].format(seconds=reference["s_per_step"], reserved=reference["peak_reserved_gib"],
                                     ratio=reference["s_per_step"] / generated["s_per_step"]),
        ))
        cases.append((preset, generated))
    note = text["speed_note"].format(
        settings=text["join"].join(text["case_settings"].format(case=f"`{case}`", settings=_settings(row, lang))
                                   for case, row in cases),
        link=BENCHMARKS_LINK, date=max(_date(row) for _case, row in cases), tokens=PLAN_PROMPT_TOKENS, gpu=PLAN_GPU)
    return text["speed_header"], rows, note


def render_benchmark(lang: str, root: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]], None]:
    report, text = benchmark(root), TEXT[lang]
    rows = []
    for (case, name), labels in BENCHMARK_ROWS.items():
        row = measured(report, case, name)
        if row is None:
            continue
        rows.append((f"`{case}`", labels[lang == "zh-CN"], _settings(row, lang), f"{row['s_per_step']:.2f}",
                     f"{row['peak_reserved_gib']:.1f}", _date(row)))
    return text["bench_header"], rows, None
