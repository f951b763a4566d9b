"""What every task checker in evals/tasks/ verifies about a project folder an assistant produced.

A task's ``check.py`` describes its task (a ``Task``) and calls ``main``. The checks read the project the way
grpo-skill does, never by re-parsing it:

- config: ``grpo_skill.project.load`` (what ``grpo-skill check`` runs; it also runs the project's rewards.py);
- model, data: the model id against the task's pattern; the project's dataset, loaded as ``train.py`` loads it,
  holds every question of the task's input file with the same gold answer;
- rewards: ``grpo_skill.rewardtry.try_rewards`` (what ``grpo-skill rewards try --project`` runs) scores the task's
  ``cases.jsonl`` with the project's rewards, weights and params. The right answers must total more than every
  wrong or junk one; no reward with a positive weight may score a junk answer above a right one; and scoring a
  right answer against another row's gold must lower its total (the gold column is wired to a reward);
- plan: ``grpo-skill plan PROJECT --gpu-memory G [--gpus N] --json`` must say ``fits``;
- smoke run: the project's output folder holds logged steps with every configured reward, a complete
  checkpoint, the run's summary (preset, model) and completions sampled from the task's questions.

Exit status: 0 when every check passes, 1 with one line per failed check, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

Problems = list[str]
SMOKE_DIR = "smoke"  # where `python train.py --smoke` runs, inside the output folder


@dataclass(frozen=True)
class Task:
    name: str
    folder: Path  # evals/tasks/<name>: task.md, data/, cases.jsonl
    data_file: str  # the user's input file, relative to the folder
    prompt_column: str
    gold_column: str
    model_pattern: str  # a regular expression the model id must match (case-insensitive)
    model_label: str  # how task.md names the model
    gpu_memory_gib: float
    gpus: int = 1
    extra: tuple[Callable[..., Problems], ...] = field(default=())  # task-specific checks: f(config) -> problems


def _err(error: BaseException) -> str:
    return " ".join(str(error).split())


# --- config, model, data ------------------------------------------------------------------------------------

def load_config(project: Path):
    from grpo_skill import project as projects
    from grpo_skill.errors import UserError

    try:
        return projects.load(project), []
    except UserError as error:
        return None, [f"config: grpo-skill check refuses the project: {_err(error)}"]


def check_model(config, task: Task) -> Problems:
    name = config.model["name"]
    if not re.search(task.model_pattern, name, re.IGNORECASE):
        return [f"model: model.name = {name!r} is not {task.model_label}, the model the task asks for"]
    return []


def _rows(path: Path, prompt_column: str) -> dict[str, dict]:
    """question -> row, as train.py loads the file (grpo_skill.runtime.data.load_file)."""
    from grpo_skill.runtime.data import load_file

    return {row[prompt_column]: row for row in load_file(path)}


def project_rows(config) -> tuple[dict[str, dict], Problems]:
    if config.dataset_file() is None:
        return {}, [f"data: dataset.path = {config.dataset['path']!r} is not the user's local file"]
    return _rows(config.dataset_file(), config.dataset["prompt_column"]), []


def check_data(config, rows: dict[str, dict], task: Task) -> Problems:
    problems = []
    if config.dataset["prompt_column"] != task.prompt_column:
        problems.append(f"data: prompt_column = {config.dataset['prompt_column']!r}; the questions are in "
                        f"{task.prompt_column!r}")
        return problems
    wanted = _rows(task.folder / task.data_file, task.prompt_column)
    missing = [question for question in wanted if question not in rows]
    if missing:
        problems.append(f"data: {len(missing)} of the task's {len(wanted)} questions are not in "
                        f"{config.dataset['path']} (first: {missing[0][:60]!r})")
    changed = [q for q, row in wanted.items() if q in rows and rows[q].get(task.gold_column) != row[task.gold_column]]
    if changed:
        problems.append(f"data: the gold column {task.gold_column!r} differs from the user's file for "
                        f"{len(changed)} questions")
    return problems


# --- rewards ------------------------------------------------------------------------------------------------

def read_cases(task: Task) -> list[dict]:
    lines = (task.folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def tokenizer_for(config, stand_in: str | None) -> tuple[str, str | None]:
    """A tokenizer folder for token-based rewards, and a note when it is not the project's own."""
    if stand_in:
        return stand_in, f"token counts from the stand-in model {stand_in}"
    if config.builds_its_model() or config.local_model_dir():
        return config.model_path(), None
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(config.model["name"], local_files_only=True), None
    except Exception:  # not cached (no hub here): the tiny tokenizer has Qwen3's thinking tokens
        from grpo_skill import modelbuild

        return str(modelbuild.build("tiny")), "token counts from the tiny tokenizer (the model is not cached)"


def _other_gold(rows: dict[str, dict], gold_column: str, gold) -> object | None:
    return next((row[gold_column] for row in rows.values() if row[gold_column] != gold), None)


def score_cases(config, project: Path, rows: dict[str, dict], task: Task, tokenizer: str) -> tuple[dict, list]:
    from grpo_skill.rewardtry import Sample, try_rewards

    samples, index = [], []  # index[i]: (case number, kind, completion number)
    for number, case in enumerate(read_cases(task)):
        row = rows[case["question"]]
        columns = {key: value for key, value in row.items() if key != config.dataset["prompt_column"]}
        for kind in ("right", "wrong", "junk"):
            for position, completion in enumerate(case.get(kind, [])):
                samples.append(Sample(completion, case["question"], dict(columns)))
                index.append((number, kind, position))
        other = _other_gold(rows, task.gold_column, row[task.gold_column])
        for position, completion in enumerate(case["right"]):  # the same answer against another row's gold
            samples.append(Sample(completion, case["question"], {**columns, task.gold_column: other}))
            index.append((number, "regolded", position))
    specs = [f"{choice.name}:{choice.weight}" for choice in config.rewards]
    return try_rewards(specs, samples, project=str(project), tokenizer=tokenizer), index


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= 50 else text[:47] + "...")


def judge_scores(result: dict, index: list, weights: dict[str, float], task: Task) -> Problems:
    problems = []
    by_case: dict[int, dict[str, list]] = {}
    for sample, (number, kind, _position) in zip(result["samples"], index):
        by_case.setdefault(number, {}).setdefault(kind, []).append(sample)
    for number, kinds in sorted(by_case.items()):
        rights = kinds.get("right", [])
        if any(sample["total"] is None for sample in rights):
            problems.append(f"rewards: case {number + 1}: no reward scores the right answer")
            continue
        floor = min(sample["total"] for sample in rights)
        for sample in kinds.get("wrong", []) + kinds.get("junk", []):
            if sample["total"] is not None and sample["total"] >= floor:
                problems.append(f"rewards: case {number + 1}: {_short(sample['completion'])} totals "
                                f"{sample['total']:g}, not below the right answers' {floor:g}")
        for name, weight in weights.items():
            if weight <= 0:
                continue  # monitored only (weight 0): it does not steer training
            for junk in kinds.get("junk", []):
                for right in rights:
                    worse, better = junk["scores"].get(name), right["scores"].get(name)
                    if worse is not None and better is not None and worse > better:
                        problems.append(f"rewards: {name} (weight {weight:g}) scores {_short(junk['completion'])} "
                                        f"{worse:g}, above the right {_short(right['completion'])} ({better:g}): "
                                        f"it does not fit this task")
        for right, regolded in zip(rights, kinds.get("regolded", [])):
            if regolded["total"] is not None and not regolded["total"] < right["total"]:
                problems.append(f"rewards: case {number + 1}: scored against another row's {task.gold_column!r}, "
                                f"{_short(right['completion'])} still totals {regolded['total']:g}: no reward with a "
                                f"positive weight reads the gold column {task.gold_column!r}")
    return list(dict.fromkeys(problems))


def check_rewards(config, project: Path, rows: dict[str, dict], task: Task, stand_in: str | None) -> Problems:
    from grpo_skill.errors import UserError

    weights = {choice.name: choice.weight for choice in config.rewards}
    if not any(weight > 0 for weight in weights.values()):
        return ["rewards: no reward has a positive weight"]
    missing = [case["question"] for case in read_cases(task) if case["question"] not in rows]
    if missing:
        return [f"rewards: the project's data lacks the question {missing[0][:60]!r} that the cases score"]
    tokenizer, note = tokenizer_for(config, stand_in)
    if note:
        print(f"note: {note}", file=sys.stderr)
    try:
        result, index = score_cases(config, project, rows, task, tokenizer)
    except (UserError, ValueError, TypeError, KeyError) as error:
        return [f"rewards: scoring the task's cases failed: {_err(error)}"]
    return judge_scores(result, index, weights, task)


# --- plan -------------------------------------------------------------------------------------------------------

def check_plan(project: Path, task: Task) -> Problems:
    command = [sys.executable, "-m", "grpo_skill.cli", "plan", str(project), "--gpu-memory", f"{task.gpu_memory_gib:g}",
               "--json"] + (["--gpus", str(task.gpus)] if task.gpus > 1 else [])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return [f"plan: grpo-skill plan failed: {_err(done.stderr)[-300:]}"]
    plan = json.loads(done.stdout)
    if not plan.get("fits"):
        where = f"{task.gpus} GPUs of {task.gpu_memory_gib:g} GiB" if task.gpus > 1 else f"{task.gpu_memory_gib:g} GiB"
        return [f"plan: needs {plan.get('needed_gib')} GiB per GPU, more than {where}; change what "
                f"`grpo-skill plan` suggests"]
    return []


# --- the smoke run --------------------------------------------------------------------------------------------

def _same_model(recorded: str, wanted: str) -> bool:
    if recorded == wanted:
        return True
    recorded_path, wanted_path = Path(recorded).expanduser(), Path(wanted).expanduser()
    return recorded_path.exists() and wanted_path.exists() and recorded_path.resolve() == wanted_path.resolve()


def _as_seen(questions, tokenizer: str) -> list[str]:
    """Each question as the run's tokenizer gives it back (a stand-in's small vocabulary drops what it lacks)."""
    from transformers import AutoTokenizer

    tokens = AutoTokenizer.from_pretrained(tokenizer)
    seen = [tokens.decode(tokens.encode(q, add_special_tokens=False), skip_special_tokens=True).strip()
            for q in questions]
    return [text for text in seen if text]


def check_smoke(config, rows: dict[str, dict], stand_in: str | None) -> Problems:
    from grpo_skill.errors import UserError
    from grpo_skill.runtime import metrics, resume, traces

    output_dir = config.project_dir / config.grpo["output_dir"]
    hint = "; run a short `python train.py` (a smoke test) in the project"
    # a short run writes to the output folder; `train.py --smoke` to its smoke/ folder
    runs = [folder for folder in (output_dir, output_dir / SMOKE_DIR) if (folder / metrics.METRICS_FILE).is_file()]
    if not runs:
        return [f"smoke: {output_dir} holds no metrics.jsonl (nor its {SMOKE_DIR}/ folder): no run" + hint]
    output_dir = runs[0]
    try:
        logged = [row for row in metrics.read_metrics(output_dir, on_warning=lambda _m: None)
                  if metrics.END_OF_TRAINING_KEY not in row]
        sampled = metrics.read_metrics(output_dir / traces.TRACES_FILE, on_warning=lambda _m: None) \
            if (output_dir / traces.TRACES_FILE).is_file() else []
    except UserError as error:
        return [f"smoke: {_err(error)}"]
    problems = []
    if not any("loss" in row for row in logged):
        problems.append("smoke: metrics.jsonl logs no training step" + hint)
    unlogged = [c.name for c in config.rewards if not any(f"rewards/{c.name}/mean" in row for row in logged)]
    if unlogged:
        problems.append(f"smoke: the run logged no score for {', '.join(unlogged)}: it ran other rewards than "
                        f"config.toml's" + hint)
    if resume.last_checkpoint(output_dir) is None:
        problems.append("smoke: no complete checkpoint in the output folder: the run never saved (with "
                        "steps_per_generation above the accumulation steps, a few steps may never reach one)")
    try:
        summary = json.loads((output_dir / resume.SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return problems + ["smoke: no summary.json: the run did not finish" + hint]
    if summary.get("preset") != config.model["preset"]:
        problems.append(f"smoke: the run used preset {summary.get('preset')!r}, config.toml says "
                        f"{config.model['preset']!r}")
    allowed = [config.model_path()] + ([stand_in] if stand_in else [])
    if not any(_same_model(str(summary.get("model")), wanted) for wanted in allowed):
        problems.append(f"smoke: the run trained {summary.get('model')!r}, not {config.model['name']!r}"
                        + ("" if stand_in else " (a stand-in model: pass it to this checker as --model PATH)"))
    questions = _as_seen(rows, tokenizer_for(config, stand_in)[0])
    if not any(any(question in str(row.get("prompt", "")) for question in questions) for row in sampled):
        problems.append("smoke: completions.jsonl shows no prompt from the task's questions: the run trained on "
                        "other data")
    return problems


# --- the command ------------------------------------------------------------------------------------------------

def run_checks(task: Task, project: Path, stand_in: str | None) -> Problems:
    config, problems = load_config(project)
    if config is None:
        return problems
    rows, problems = project_rows(config)
    if problems:
        return problems
    problems = check_model(config, task) + check_data(config, rows, task)
    for extra in task.extra:
        problems += extra(config)
    if not any(problem.startswith("data:") for problem in problems):  # the cases need the task's rows
        problems += check_rewards(config, project, rows, task, stand_in)
    problems += check_plan(project, task)
    problems += check_smoke(config, rows, stand_in)
    return problems


def main(task: Task, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"check.py ({task.name})",
        description=f"Check a project made for evals/tasks/{task.name}/task.md; exit 0 when it does the task.")
    parser.add_argument("project", type=Path, help="the project folder the assistant made")
    parser.add_argument("--model", metavar="PATH",
                        help="the stand-in model the smoke run used (python train.py --model PATH) where the "
                             "task's model could not be downloaded")
    args = parser.parse_args(argv)
    if not (args.project / "config.toml").is_file():
        print(f"{args.project}: no config.toml; give the project folder the assistant made", file=sys.stderr)
        return 2
    problems = run_checks(task, args.project, args.model)
    for problem in problems:
        print(f"FAIL {problem}")
    if problems:
        print(f"{task.name}: {len(problems)} problem{'s' if len(problems) > 1 else ''} in {args.project}")
        return 1
    print(f"{task.name}: OK ({args.project})")
    return 0
