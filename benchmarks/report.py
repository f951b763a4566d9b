"""The benchmark's report: benchmarks.json -> benchmarks.md, and the short table printed at the end of a run.

    python benchmarks/report.py docs/benchmarks.json      # rewrite docs/benchmarks.md from the JSON (no hand edits)
    python benchmarks/report.py docs/benchmarks.json --merge OUT/bench/benchmarks.json
        # add another run's rows (a row of the same case and name is replaced), then rewrite the page
    python benchmarks/report.py docs/benchmarks.json --decode OUT/decode/decode.json
        # the decode-step profile (benchmarks/decode_profile.py) as the page's last section: its rows replace those
        # of the same path, batch and length, the others stay
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import kernel_profile

CASE_TITLES = {"standard": "standard", "thinking": "thinking"}
# Columns of where a step goes, from the harness's phases (seconds per optimizer step, amortized).
PHASES = (("generation", "generation"), ("scoring", "scoring (rewards, old/ref log-probs)"),
          ("loss", "policy forward + loss"), ("backward", "backward"), ("optimizer", "optimizer"),
          ("other", "other"))


def phase_split(row: dict) -> dict:
    """Exclusive phase times per step: the harness times nested phases inclusively."""
    phases = row.get("phases_s_per_step") or {}
    if not phases:
        return {}
    generation = phases.get("generation", 0.0)
    return {
        "generation": generation,
        "scoring": max(phases.get("generate_and_score", 0.0) - generation, 0.0),
        "loss": phases.get("loss", 0.0),
        "backward": phases.get("backward", 0.0),
        "optimizer": phases.get("optimizer", 0.0),
        "other": phases.get("other", 0.0),
    }


def contenders(rows: list[dict], environment: dict) -> list[dict]:
    """One line per contender and GPU, in the order first run: one run several times (``run.py --rounds``) reads as
    the mean of its rounds, its peak memory as the highest, and keeps each round's s/step in ``rounds_s_per_step``."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["case"], row["name"], row_gpu(row, environment)), []).append(row)
    return [group[0] if len(group) == 1 else combined(group) for group in groups.values()]


def mean(values) -> float | None:
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else None


def combined(group: list[dict]) -> dict:
    measured = [row for row in group if row.get("s_per_step")]
    statuses = sorted({row["status"] for row in group})
    line = {**group[0], "status": ", ".join(statuses), "rounds_s_per_step": [row.get("s_per_step") for row in group]}
    if not measured:
        return line
    line["s_per_step"] = mean(row["s_per_step"] for row in measured)
    line["tokens_per_s"] = mean(row.get("tokens_per_s") for row in measured)
    for key in ("peak_allocated_gib", "peak_reserved_gib"):
        line[key] = max((row[key] for row in measured if row.get(key) is not None), default=None)
    phase_names = {name for row in measured for name in row.get("phases_s_per_step") or {}}
    line["phases_s_per_step"] = {name: mean((row.get("phases_s_per_step") or {}).get(name) for row in measured)
                                 for name in phase_names}
    return line


def row_gpu(row: dict, environment: dict) -> str | None:
    """The GPU a row ran on: its merged run's, else the page's."""
    return row.get("run_gpu") or environment.get("gpu")


def reference(rows: list[dict], compared: dict, environment: dict) -> dict | None:
    """The hand-written loop of the compared row's case: the one measured in the same run, else the newest on the
    same GPU (none from another card: its timings are not comparable)."""
    gpu, run_date = row_gpu(compared, environment), compared.get("run_date")
    loops = [row for row in rows if row["case"] == compared["case"] and row["name"].startswith("hand-written unsloth")
             and row.get("s_per_step") and row_gpu(row, environment) == gpu]
    same_run = [row for row in loops if run_date and row.get("run_date") == run_date]
    return (same_run or sorted(loops, key=lambda row: row.get("run_date") or "", reverse=True) or [None])[0]


def versus(row: dict, ref: dict | None) -> str:
    """The row's s/step against the hand-written loop's; marked when the two were not measured in the same run
    (merged reports), since the same contender moves by several percent from one machine to the next."""
    if not ref or not row.get("s_per_step") or row is ref or row.get("equal_work") is False:
        return ""  # a row of other work per step (the preset's own shape) is not compared
    ratio = row["s_per_step"] / ref["s_per_step"]
    text = f"{(ratio - 1) * 100:+.1f}%" if 0.5 <= ratio <= 2 else f"{ratio:.2f}x"
    return text if row.get("run_date") == ref.get("run_date") else f"{text} (other run)"


def timed_steps(row: dict) -> list[float]:
    """The seconds of each timed step (the warm-up steps left out)."""
    step_s, warmup = row.get("step_s") or [], row.get("warmup_steps") or 0
    return step_s[warmup:warmup + (row.get("measured_steps") or 0)]


def number(value, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def labelled(name: str, round_number: int | None) -> str:
    """A contender's name with its round, when it ran in several (``run.py --rounds``)."""
    return f"{name} (round {round_number})" if round_number else name


def seconds_per_step(line: dict) -> str:
    rounds = line.get("rounds_s_per_step")
    each = f" ({', '.join(number(value) or '-' for value in rounds)})" if rounds else ""
    return number(line.get("s_per_step")) + each


def speed_settings(row: dict) -> str:
    settings = row.get("settings", {})
    if row.get("preset_defaults"):
        return f"none: the {settings.get('preset')} preset as `new` makes it"
    grpo = settings.get("grpo", {})
    keys = ("steps_per_generation", "generation_batch_size", "cache_implementation", "use_liger_kernel", "beta")
    parts = [f"{key}={grpo[key]}" for key in keys if key in grpo and not (key == "beta" and grpo[key] == 0.1)]
    load_in_4bit = settings.get("model", {}).get("load_in_4bit", True)
    if not load_in_4bit:
        parts.append("bf16 weights")
    elif load_in_4bit is True and settings.get("backend") == "auto":
        parts.append("load_in_4bit = true")
    took = row.get("took") or {}
    if took.get("gradient_checkpointing", settings.get("lora", {}).get("gradient_checkpointing")) is False:
        parts.append("no gradient checkpointing")
    elif took.get("checkpoint_every_n_layers", 1) > 1:
        parts.append(f"gradient checkpointing of one layer in {took['checkpoint_every_n_layers']}")
    for key, value in settings.get("env", {}).items():
        parts.append(f"{key}={value}")
    parts += [f"ablate {name}" for name in settings.get("ablate", [])]
    if settings.get("tty"):
        parts.append("terminal")
    if settings.get("compile_decode"):
        parts.append("compiled decode")
    if settings.get("run_steps"):
        parts.append(f"a run of {settings['run_steps']} steps (stopped after the timed ones)")
    if took.get("decode_compile_mode") and took["decode_compile_mode"] != "reduce-overhead":
        parts.append(f"decode compiled {took['decode_compile_mode']}")
    if took.get("compiled_layers"):
        parts.append("decoder layers compiled")
    elif "compile_layers" in settings.get("model", {}):
        parts.append(f"compile_layers = {str(settings['model']['compile_layers']).lower()}")
    return ", ".join(parts)


# Issue 21's targets, on an H200: s/step of each case's default as `new` makes it, a 24 GiB card's peak reserved
# memory, the fast path's decode step against its bandwidth floor.
TARGET_S_PER_STEP = {"standard": 1.0, "thinking": 3.0}
TARGET_24_GIB_RESERVED = 22.0
TARGET_X_FLOOR = 3.0
DEFAULT_NAME = "generated default"
LONG_RUN_NAME = "generated default, a 2000-step run"
CARD_24_NAME = "generated default, 24 GiB card"


def met(value, target) -> str:
    return "" if value is None else ("yes" if value <= target else "**no**")


def by_card(lines: list[dict], environment: dict) -> list[str]:
    """The cards the lines ran on, the H200s (the targets' card) first."""
    cards = {row_gpu(line, environment) or "unknown" for line in lines}
    return sorted(cards, key=lambda card: ("H200" not in card, card))


def replacement(line: dict) -> str | None:
    """The row a superseded row names as measuring what it stood for now (its note: "... the row 'NAME' ...")."""
    match = re.search(r"the row '([^']+)'", line.get("superseded") or "")
    return match.group(1) if match else None


def targets(lines: list[dict], decode: dict | None, environment: dict) -> list[str]:
    """Issue 21's targets against the newest rows of each card: the default as `new` makes it (a row marked
    ``preset_defaults``) beside the hand-written loop, the same project as a long run, a 24 GiB card's row (where it
    is superseded, beside the row that its note names), and the fast path's decode step (decode_profile.DEFAULT_PATH)
    against its floor."""
    def line_of(case, name, card):
        return next((line for line in lines if line["case"] == case and line["name"] == name
                     and (row_gpu(line, environment) or "unknown") == card and line.get("s_per_step")
                     and (name != DEFAULT_NAME or line.get("preset_defaults"))), None)

    out = ["| case | card | target, s/step | the preset as `new` makes it | met | hand-written loop | "
           "a 2000-step run (max-autotune decode) | met |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case, target in TARGET_S_PER_STEP.items():
        for card in by_card([line for line in lines if line["case"] == case], environment):
            default, long_run = line_of(case, DEFAULT_NAME, card), line_of(case, LONG_RUN_NAME, card)
            if not (default or long_run):
                continue
            loop = reference(lines, default, environment) if default else None
            ratio = versus(default, loop) if loop else ""
            versus_loop = f" ({ratio.replace(' (other run)', ', other run')})" if ratio else ""
            out.append(f"| {case} | {card} | <= {target:g} | "
                       f"{number((default or {}).get('s_per_step'))} | "
                       f"{met((default or {}).get('s_per_step'), target)} | "
                       f"{number((loop or {}).get('s_per_step'))}{versus_loop} | "
                       f"{number((long_run or {}).get('s_per_step'))} | "
                       f"{met((long_run or {}).get('s_per_step'), target)} |")
    out += ["", f"| case | card | the preset as `new` makes it for a 24 GiB card | s/step | peak reserved GiB | "
                f"<= {TARGET_24_GIB_RESERVED:g} GiB |", "| --- | --- | --- | --- | --- | --- |"]
    for case in TARGET_S_PER_STEP:
        for card in by_card([line for line in lines if line["case"] == case], environment):
            small = line_of(case, CARD_24_NAME, card)
            if not small:
                continue
            shown = [small]
            if small.get("superseded") and replacement(small):  # what the row measures now, measured by another
                shown += [line for line in [line_of(case, replacement(small), card)] if line]
            for line in shown:  # a superseded row no longer measures what `new` makes: shown, not held to the target
                out.append(f"| {case} | {card} | {line['name']} | {number(line['s_per_step'])} | "
                           f"{number(line.get('peak_reserved_gib'))} | "
                           + ("superseded |" if line.get("superseded") else
                              f"{met(line.get('peak_reserved_gib'), TARGET_24_GIB_RESERVED)} |"))
    if decode:
        from decode_profile import DEFAULT_PATH, LONG_RUN_PATH  # benchmarks/: the decode table's own names

        out += ["", "| the fast path's decode step | card | batch | ms | floor, ms | x floor | "
                    f"<= {TARGET_X_FLOOR:g}x |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        rows = [row for row in decode.get("rows", []) if row.get("decode_ms")]
        for card in by_card([{"run_gpu": row.get("device", decode.get("device"))} for row in rows], {}):
            for label, path in (("default compile mode", DEFAULT_PATH),
                                ("a long run's (max-autotune)", LONG_RUN_PATH)):
                on_card = [row for row in rows
                           if row["path"] == path and row.get("device", decode.get("device")) == card]
                for row in sorted(on_card, key=lambda row: row["batch"]):
                    out.append(f"| {label} | {card} | {row['batch']} | {row['decode_ms']:.2f} | "
                               f"{row['floor_ms']:.2f} | {row['x_floor']:.1f} | "
                               f"{met(row['x_floor'], TARGET_X_FLOOR)} |")
    return out


def status(row: dict) -> str:
    """A row's status, and whether the code it measured has changed since (its time no longer what a run takes)."""
    return f"{row['status']}, superseded" if row.get("superseded") else row["status"]


def run_line(report: dict) -> str:
    if len(report.get("runs") or []) > 1:  # a merged report: every run whose rows it holds
        env = report.get("environment") or {}
        return "- runs: " + "; ".join(
            f"{run.get('date')} (suites {', '.join(run.get('suites') or [])}, wall {run.get('wall_s')} s of "
            f"{run.get('budget_s')}{'; on ' + run['gpu'] if another_gpu(run.get('gpu'), env) else ''})"
            for run in report["runs"])
    return (f"- run: suites {', '.join(report.get('suites', []))}; wall {report.get('wall_s')} s of a "
            f"{report.get('budget_s')} s budget" + ("; DRY RUN (tiny model on a CPU: plumbing only)"
                                                   if report.get("dry_run") else ""))


def another_gpu(gpu: str | None, environment: dict) -> bool:
    """Whether a merged run or row was measured on another GPU than the page's header names (timings differ)."""
    return bool(gpu) and gpu != environment.get("gpu")


def on_another_gpu(row: dict, environment: dict) -> str:
    return f" (on {row['run_gpu']})" if another_gpu(row.get("run_gpu"), environment) else ""


def markdown(report: dict) -> str:
    env = report.get("environment", {})
    model = report.get("model", {})
    lines = ["# Benchmarks", "",
             "Generated by `benchmarks/run.py` from `benchmarks.json` (`python benchmarks/report.py "
             "docs/benchmarks.json` rewrites this page; no hand edits). Each contender ran in its own process on the "
             "same random-weight model, one after another on one GPU. A step is one optimizer step: one prompt, "
             "`num_generations` completions of `max_completion_length` tokens (a random-weight model never samples "
             "its end token, so every completion runs to full length). **s/step** is the wall time of the measured "
             "steps divided by their number, over whole generation cycles (with `steps_per_generation` = k, one "
             "generation serves k steps), warm-up steps left out; **tokens/s** counts completion tokens generated "
             "in that time. Memory is `torch.cuda.max_memory_allocated` / `max_memory_reserved` over the whole run, "
             "loading and warm-up included. Where a step goes comes from timing the trainer's methods with the GPU "
             "synchronised around each: `scoring` is reward computing and the old/reference log-probs at "
             "generation time, `policy forward + loss` is `compute_loss`.", ""]
    lines += [f"- date: {report.get('date')}",
              f"- GPU: {env.get('gpu')} ({env.get('gpu_memory_gib')} GiB), driver {env.get('driver')}, CUDA "
              f"{env.get('cuda')}, Python {env.get('python')}",
              "- versions: " + ", ".join(f"{name} {version}" for name, version in env.get("versions", {}).items()
                                         if version),
              f"- model: {model.get('description')}",
              run_line(report)]
    rows = report.get("rows", [])
    lines_by_contender = contenders(rows, env)
    if not report.get("dry_run") and any(line["name"] in (DEFAULT_NAME, LONG_RUN_NAME) for line in lines_by_contender):
        lines += ["", "## Against issue 21's targets", "",
                  "Read off the tables below (the newest row of each contender on each card; the targets are an "
                  "H200's). Where a target is not met, the phases of a step ('Where a training step goes') and the "
                  "decode table ('Where a decode step goes') say what is left.", ""]
        lines += targets(lines_by_contender, report.get("decode"), env)
        lines += ["", "## Runs", ""]
    for note in report.get("notes", []):
        lines.append(f"- {note}")
    if any(line.get("rounds_s_per_step") for line in lines_by_contender):
        lines.append("- a contender run in several rounds (`--rounds`, every other round in reverse order) shows "
                     "the mean of its rounds' s/step, each round's in brackets, and its highest peak memory")
    for case in CASE_TITLES:
        case_rows = [row for row in lines_by_contender if row["case"] == case]
        if not case_rows:
            continue
        settings = case_rows[0].get("settings", {})
        grpo = settings.get("grpo", {})
        lines += ["", f"## {CASE_TITLES[case]}: {grpo.get('max_completion_length')} completion tokens, "
                      f"G={grpo.get('num_generations')}, {grpo.get('per_device_train_batch_size')} completions per "
                      f"step, max_seq_length {settings.get('model', {}).get('max_seq_length')}", "",
                  "| contender | status | s/step | vs hand-written | tokens/s | peak allocated GiB | peak reserved GiB | "
                  + " | ".join(title for _, title in PHASES) + " | changes |",
                  "| --- | --- | --- | --- | --- | --- | --- | " + " | ".join("---" for _ in PHASES) + " | --- |"]
        for row in case_rows:
            split = phase_split(row)
            lines.append(
                f"| {row['name']}{on_another_gpu(row, env)} | {status(row)} | {seconds_per_step(row)} | "
                f"{versus(row, reference(case_rows, row, env))} | "
                f"{number(row.get('tokens_per_s'), 0)} | {number(row.get('peak_allocated_gib'))} | "
                f"{number(row.get('peak_reserved_gib'))} | "
                + " | ".join(number(split.get(key)) for key, _ in PHASES)
                + f" | {speed_settings(row)} |")
    lines += ["", "## What each row tells", "", "Each timed step's seconds show how noisy a row's mean is (with "
              "several steps per generation, the step that generates is the slow one).", "",
              "| case | contender | tells | wall s | steps (warm-up + timed) | first step s | timed steps s | "
              "prompt tokens | sequences per generation | CUDA graphs recorded, by generation | expandable segments | "
              "exit status | run |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        tells = row.get("tells", "")
        if row.get("superseded"):
            tells = f"{tells.rstrip('.')}. Superseded: {row['superseded']}."
        lines.append(f"| {row['case']} | {labelled(row['name'], row.get('round'))} | {tells} | "
                     f"{number(row.get('wall_s'), 0)} | "
                     f"{row.get('warmup_steps', '')} + {row.get('measured_steps', '')} | "
                     f"{number((row.get('step_s') or [None])[0], 1)} | {', '.join(map(number, timed_steps(row)))} | "
                     f"{row.get('prompt_tokens_per_sequence', '')} | "
                     f"{row.get('sequences_per_generation', '')} | "
                     f"{', '.join(map(str, row.get('cudagraph_recordings_by_generation') or []))} | "
                     f"{row.get('expandable_segments', '')} | "
                     f"{row.get('exit_status', '')} | {row.get('run_date', '')}{on_another_gpu(row, env)} |")
    profiled = kernel_profile.render_training(rows, report.get("date"))
    if profiled:
        lines += ["", "## Where a training step goes", "", profiled]
    if report.get("decode"):
        from decode_profile import render  # benchmarks/: the decode-step profile's own table

        lines += ["", "## Where a decode step goes", ""] + [f"- {note}" for note in report["decode"].get("notes", [])]
        lines += ["", render(report["decode"]).rstrip()]
    failures = [row for row in rows if row.get("error")]
    if failures:
        lines += ["", "## Failures", ""]
        for row in failures:
            lines += [f"### {row['case']} / {row['name']} ({row['status']})", "", "```",
                      row["error"][-1500:].strip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def table(report: dict) -> str:
    rows = [f"{'case':9} {'contender':42} {'status':10} {'s/step':>7} {'vs hw':>7} {'tok/s':>7} {'alloc':>6} "
            f"{'resv':>6}"]
    environment = report.get("environment", {})
    lines = contenders(report.get("rows", []), environment)
    for row in lines:
        ref = reference(lines, row, environment)
        rows.append(f"{row['case']:9} {row['name'][:42]:42} {row['status'][:10]:10} "
                    f"{number(row.get('s_per_step')):>7} {versus(row, ref):>7} {number(row.get('tokens_per_s'), 0):>7} "
                    f"{number(row.get('peak_allocated_gib')):>6} {number(row.get('peak_reserved_gib')):>6}")
    rows.append(f"wall {report.get('wall_s')} s on {report.get('environment', {}).get('gpu')}")
    return "\n".join(rows)


def write(report: dict, prefix: Path) -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    prefix.with_suffix(".md").write_text(markdown(report))


def merge(report: dict, other: dict) -> dict:
    """``report`` with ``other``'s rows added; each row keeps the date and GPU of the run that measured it (a row
    already merged once keeps its own). A contender measured again on the same GPU replaces its rows; measured on
    another card, it stands beside them (timings of two cards are not one row's rounds)."""
    runs = report.setdefault("runs", [{key: report.get(key) for key in ("date", "suites", "wall_s", "budget_s")}])
    gpu = (other.get("environment") or {}).get("gpu")
    gpu_gib = (other.get("environment") or {}).get("gpu_memory_gib")
    runs.append({**{key: other.get(key) for key in ("date", "suites", "wall_s", "budget_s")}, "gpu": gpu})
    page_gpu = (report.get("environment") or {}).get("gpu")
    for row in report["rows"]:
        row.setdefault("run_date", report.get("date"))

    def row_key(row):
        return row["case"], row["name"], row.get("run_gpu") or page_gpu

    incoming: dict[tuple, list[dict]] = {}
    for row in other["rows"]:
        row = {**row, "run_date": row.get("run_date") or other.get("date"), "run_gpu": row.get("run_gpu") or gpu,
               "run_gpu_gib": row.get("run_gpu_gib") or gpu_gib}
        incoming.setdefault(row_key(row), []).append(row)
    # A contender measured again takes its old place on the page; a new one goes last.
    rows, placed = [], set()
    for row in report["rows"]:
        key = row_key(row)
        if key not in incoming:
            rows.append(row)
        elif key not in placed:
            first, *rest = incoming[key]  # a profile goes with one row of the contender, not with each round
            rows += [keep_profile(row, first), *rest]
            placed.add(key)
    report["rows"] = rows + [row for key, group in incoming.items() if key not in placed for row in group]
    report["notes"] = report.get("notes", []) + [f"rows of the run of {other.get('date')} (suites "
                                                 f"{', '.join(other.get('suites', []))}) merged in"]
    return report


def keep_profile(old: dict, new: dict) -> dict:
    """``new``, a contender measured again without the profiler, with ``old``'s profile kept beside it: the profile
    is dated and timed by the run that took it, so the page does not lose a profile's table to a plain re-run."""
    if new.get("profile") or not old.get("profile"):
        return new
    profile = {**old["profile"], "run_date": old["profile"].get("run_date") or old.get("run_date"),
               "timed_phases_s_per_step": old["profile"].get("timed_phases_s_per_step")
               or old.get("phases_s_per_step")}
    return {**new, "profile": profile}


def merge_decode(old: dict | None, new: dict) -> dict:
    """A decode-step call's rows merged into the page's table: a row of the same path, batch size and number of
    sampled tokens measured on the same card is replaced where it stood, a new one goes last (one of another card
    too: two cards' timings stand side by side), the others stay with the length and date they were measured at
    (each row's floor is its own call's); the header (device, bandwidth, lengths) is the new call's, and so are the
    profiles it took."""
    if not old:
        return new

    def key(row, results):
        return (row["path"], row["batch"], row.get("new_tokens", results["new_tokens"]),
                row.get("device", results["device"]))

    kept = [{**row, "new_tokens": row.get("new_tokens", old["new_tokens"]), "device": row.get("device", old["device"])}
            for row in old["rows"]]
    incoming = {key(row, new): {**row, "new_tokens": row.get("new_tokens", new["new_tokens"]),
                                "device": new["device"]} for row in new["rows"]}
    rows = [incoming.pop(key(row, old), row) for row in kept]
    merged = {**old, **{name: value for name, value in new.items() if name not in ("rows", "profiles", "notes")}}
    merged["rows"] = rows + list(incoming.values())
    merged["profiles"] = {**old.get("profiles", {}), **new.get("profiles", {})}
    merged["notes"] = old.get("notes", []) + new.get("notes", [])
    return merged


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path)
    parser.add_argument("--merge", type=Path, action="append", default=[], help="another run's benchmarks.json")
    parser.add_argument("--decode", type=Path, help="a decode.json of benchmarks/decode_profile.py")
    args = parser.parse_args(argv)
    report = json.loads(args.json.read_text())
    for other in args.merge:
        report = merge(report, json.loads(other.read_text()))
    if args.decode:
        report["decode"] = merge_decode(report.get("decode"), json.loads(args.decode.read_text()))
    if args.merge or args.decode:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    args.json.with_suffix(".md").write_text(markdown(report))
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
