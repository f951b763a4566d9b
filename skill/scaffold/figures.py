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

from ..core.i18n import N_, gettext_for
from ..runtime.planning import ran_on_report_gpu

BENCHMARK_FILE = Path("docs/benchmarks.json")
PLAN_GPU = "H200"  # plan's constants were fitted on one: its estimate there needs no scaling
# its memory as `plan --gpu H200` takes it (runtime/gpus.py): "auto" settings resolve against it;
# tests/test_docs.py checks the quoted estimate against what that command prints
PLAN_GPU_GIB = 141.0
PLAN_PROMPT_TOKENS = 64  # given, not guessed: a guess counts with a tokenizer when one happens to be cached
SPEED_PRESETS = ("standard", "thinking")
GENERATED, HAND_WRITTEN = "generated default", "hand-written unsloth"

# The rows references/grpo-config.md discusses, by (case, name) in docs/benchmarks.json, with what ran; a row the
# JSON lacks is left out. The settings come from the row. Every phrase here is translated through the gettext
# catalog, as the CLI's messages are.
REFERENCE = N_("a hand-written Unsloth GRPO loop (the reference)")
AS_GENERATED = N_("the project `new` makes, as it is")
UNSLOTH = N_("generated, Unsloth backend")
UNSLOTH_SPEED = N_("generated, Unsloth backend, the preset's `steps_per_generation`")
BENCHMARK_ROWS = {
    ("standard", HAND_WRITTEN): REFERENCE,
    ("standard", GENERATED): AS_GENERATED,
    ("standard", "generated default, bf16 base"): N_("the same with `load_in_4bit = false`"),
    ("standard", "generated default, 4-bit base"): N_("the same with `load_in_4bit = true`"),
    ("standard", "generated unsloth"): UNSLOTH,
    ("standard", "generated unsloth + speed"): UNSLOTH_SPEED,
    ("standard", "plain trl"): N_("plain TRL + peft in bf16"),
    ("standard", "plain trl, spg 8, static compiled"): N_("plain TRL in bf16, compiled static KV cache"),
    ("standard", "generated trl, spg 8, static compiled"): N_("generated, TRL backend (4-bit), compiled static KV "
                                                              "cache"),
    ("thinking", HAND_WRITTEN): REFERENCE,
    ("thinking", GENERATED): AS_GENERATED,
    ("thinking", "generated unsloth"): UNSLOTH,
    ("thinking", "generated unsloth + speed"): UNSLOTH_SPEED,
}

SPEED_HEADER = (N_("Preset"), N_("`plan` on an {gpu}, the preset's settings"),
                N_("Measured on an {gpu}: the project `new` makes"), N_("A hand-written Unsloth loop"))
ESTIMATE = N_("~{reserved:.1f} GiB reserved, ~{seconds:.1f} s/step")
MEASURED = N_("{seconds:.2f} s/step, {reserved:.1f} GiB reserved")
AGAINST_REFERENCE = N_("{seconds:.2f} s/step, {reserved:.1f} GiB reserved ({ratio:.1f}× as long)")
SPEED_NOTE = N_("Measured with Qwen3-4B's shape (random weights), {settings} ([docs/benchmarks.md]({link}), {date}); "
                "the estimate is for the preset's own settings, with {tokens}-token prompts: `grpo-skill plan "
                "--preset thinking --gpu {gpu} --prompt-tokens {tokens}`.")
# A preset's default that changed after its row ran is said under the table, not left to the settings column.
DEFAULT_CHANGED = N_("Those rows held the base in 4 bits: the presets' default then; `load_in_4bit = \"auto\"` (16-bit "
                     "on the fast path) has not been measured on a GPU yet.")
CHECKPOINTING_CHANGED = N_("Those rows ran with gradient checkpointing and cuDNN attention on, the defaults then; "
                           "`train.py` now turns cuDNN attention off on a GPU, and `gradient_checkpointing = \"auto\"` "
                           "turns checkpointing off where `plan` says the run fits: measured as changes against those "
                           "rows, not yet as the default itself.")
# The project as `new` makes it measured again on another card (no H200 came) after the page's rows: said under the
# table, with the card, since those rows no longer describe what `new` makes.
LATER_ELSEWHERE = N_("Measured since on other cards, as `new` makes them now: {cases}.")
LATER_CASE = N_("{case} {seconds:.2f} s/step, {reserved:.1f} GiB reserved ({gpu}, {date})")
LATER_CASE_AGAINST = N_("{case} {seconds:.2f} s/step, {reserved:.1f} GiB reserved, against the hand-written Unsloth "
                        "loop's {reference:.2f} s/step on the same card ({gpu}, {date}; the loop {reference_date})")
BENCHMARK_HEADER = (N_("Case"), N_("What ran"), N_("Settings"), N_("s/step"), N_("GiB reserved"), N_("Measured"))
SETTINGS = N_("G {g}, batch {batch}, {tokens} tokens, {spg}, {bits}")
PER_STEP, PER_STEPS = N_("1 generation per step"), N_("1 generation per {steps} steps")
CASE_SETTINGS = N_("{case}: {settings}")
# Translators: what separates the two presets' settings in the sentence under the speed table.
CASE_SEPARATOR = N_("; ")

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
    """The row (case, name) that finished all its timed steps on the report's GPU, its rounds folded into one: the
    median s/step, the largest memory. A row the time budget cut short, or merged from another card, is left out."""
    rows = [row for row in _finished(report, case, name) if ran_on_report_gpu(row, report)]
    if not rows:
        return None
    return {**rows[0], "s_per_step": statistics.median(row["s_per_step"] for row in rows),
            "peak_reserved_gib": max(row.get("peak_reserved_gib") or 0 for row in rows)}


def _finished(report: dict, case: str, name: str) -> list[dict]:
    """The rows (case, name) that finished all their timed steps, on any card."""
    return [row for row in report.get("rows", [])
            if row.get("case") == case and row.get("name") == name and row.get("s_per_step")
            and row.get("status") == "ok" and not row.get("partial")]


def _required(report: dict, case: str, name: str) -> dict:
    row = measured(report, case, name)
    if row is None:
        raise FiguresError(f"{BENCHMARK_FILE} has no finished row {case}/{name}, which SKILL.md quotes")
    return row


def _settings(row: dict, tr) -> str:
    settings = row["settings"]
    grpo = settings["grpo"]
    accumulation = grpo.get("gradient_accumulation_steps", 1)
    batch = grpo["per_device_train_batch_size"] * accumulation
    steps = max(1, (settings.get("steps_per_generation") or accumulation) // accumulation)  # optimizer steps
    spg = tr(PER_STEP) if steps == 1 else tr(PER_STEPS).format(steps=steps)
    return tr(SETTINGS).format(g=grpo["num_generations"], batch=batch, tokens=grpo["max_completion_length"],
                               spg=spg, bits=_weights(row, tr))


def _weights(row: dict, tr) -> str:
    """The row's base weights: as train.py said it took them, else as the settings asked ("auto" unresolved when a
    row does not say what it took)."""
    held = (row.get("took") or {}).get("load_in_4bit", row["settings"]["model"].get("load_in_4bit"))
    if held == "auto":
        return 'load_in_4bit = "auto"'
    return tr("4-bit") if held else "bf16"


def _date(row: dict) -> str:
    return str(row.get("run_date", "")).split(" ")[0]


def plan_estimate(preset: str) -> tuple[float, float]:
    """(peak GiB reserved, s per step) as `grpo-skill plan --preset P --gpu H200 --prompt-tokens 64` prints them."""
    from ..runtime.estimate import estimate
    from ..runtime.planning import from_preset, resolved

    settings, _about = from_preset(preset, None, PLAN_PROMPT_TOKENS, 1)
    result = estimate(resolved(settings, PLAN_GPU_GIB))
    return round(result.peak_reserved_gib, 2), round(result.s_per_step, 2)


def render_speed(lang: str, root: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]], str]:
    """The speed table (header, rows) and the sentence under it."""
    report, tr = benchmark(root), gettext_for(lang)
    rows, cases = [], []
    for preset in SPEED_PRESETS:
        reserved, seconds = plan_estimate(preset)
        generated, reference = _required(report, preset, GENERATED), _required(report, preset, HAND_WRITTEN)
        rows.append((
            f"`{preset}`",
            tr(ESTIMATE).format(reserved=reserved, seconds=seconds),
            tr(MEASURED).format(seconds=generated["s_per_step"], reserved=generated["peak_reserved_gib"]),
            tr(AGAINST_REFERENCE).format(seconds=reference["s_per_step"], reserved=reference["peak_reserved_gib"],
                                         ratio=reference["s_per_step"] / generated["s_per_step"]),
        ))
        cases.append((preset, generated))
    note = tr(SPEED_NOTE).format(
        settings=tr(CASE_SEPARATOR).join(tr(CASE_SETTINGS).format(case=f"`{case}`", settings=_settings(row, tr))
                                         for case, row in cases),
        link=BENCHMARKS_LINK, date=max(_date(row) for _case, row in cases), tokens=PLAN_PROMPT_TOKENS, gpu=PLAN_GPU)
    if any(_default_changed(case, row) for case, row in cases):
        note += " " + tr(DEFAULT_CHANGED)
    if any(_checkpointing_changed(case, row) for case, row in cases):
        note += " " + tr(CHECKPOINTING_CHANGED)
    later = [(case, row) for case, page_row in cases if (row := _later_elsewhere(report, case, page_row))]
    if later:
        note += " " + tr(LATER_ELSEWHERE).format(cases=tr(CASE_SEPARATOR).join(
            _later_case(report, case, row, tr) for case, row in later))
    return tuple(tr(cell).format(gpu=PLAN_GPU) for cell in SPEED_HEADER), rows, note


def _later_elsewhere(report: dict, case: str, page_row: dict) -> dict | None:
    """The newest finished 'generated default' row of ``case`` from another card than the page's, measured after the
    page's own row."""
    rows = [row for row in _finished(report, case, GENERATED) if not ran_on_report_gpu(row, report)
            and str(row.get("run_date", "")) > str(page_row.get("run_date") or report.get("date") or "")]
    return max(rows, key=lambda row: str(row.get("run_date", "")), default=None)


def _later_case(report: dict, case: str, row: dict, tr) -> str:
    """A row from another card, beside the hand-written loop's newest row on that card where there is one (speeds
    of two cards are not compared)."""
    figures = dict(case=f"`{case}`", seconds=row["s_per_step"], reserved=row["peak_reserved_gib"],
                   gpu=row["run_gpu"].removeprefix("NVIDIA "), date=_date(row))
    same_card = [other for other in _finished(report, case, HAND_WRITTEN) if other.get("run_gpu") == row["run_gpu"]]
    if not same_card:
        return tr(LATER_CASE).format(**figures)
    reference = max(same_card, key=lambda other: str(other.get("run_date", "")))
    return tr(LATER_CASE_AGAINST).format(reference=reference["s_per_step"], reference_date=_date(reference), **figures)


def _default_changed(preset: str, row: dict) -> bool:
    """Whether the preset's load_in_4bit is no longer what its 'generated default' row ran with."""
    from ..core import plugins

    return row["settings"]["model"].get("load_in_4bit") != plugins.get_preset(preset).load_in_4bit


def _checkpointing_changed(preset: str, row: dict) -> bool:
    """Whether the preset's gradient checkpointing is no longer what its 'generated default' row ran with."""
    from ..core import plugins

    return row["settings"]["lora"].get("gradient_checkpointing") != plugins.get_preset(preset).lora.gradient_checkpointing


def render_benchmark(lang: str, root: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]], None]:
    report, tr = benchmark(root), gettext_for(lang)
    rows = []
    for (case, name), label in BENCHMARK_ROWS.items():
        row = measured(report, case, name)
        if row is None:
            continue
        rows.append((f"`{case}`", tr(label), _settings(row, tr), f"{row['s_per_step']:.2f}",
                     f"{row['peak_reserved_gib']:.1f}", _date(row)))
    return tuple(tr(cell) for cell in BENCHMARK_HEADER), rows, None
