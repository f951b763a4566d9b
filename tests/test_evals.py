"""The skill evals in evals/: each task checker passes its reference solution and fails broken ones, for the
right reason; the trigger queries are checked against SKILL.md's description.

The references are each one `grpo-skill new` command (evals/reference.py), run for one step with a local stand-in
model (no hub here; one step costs half of ``train.py --smoke``, and the checker needs no more); the broken
variants are copies of a reference with one thing wrong in its config.toml, so they need no run of their own.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EVALS = REPO / "evals"
TASK_NAMES = ("thinking-math-jsonl", "zh-csv-word-problems", "json-extraction-2gpu")


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


reference = load_module(EVALS / "reference.py", "evals_reference")
checkers = {name: load_module(EVALS / "tasks" / name / "check.py", f"evals_check_{name.replace('-', '_')}")
            for name in TASK_NAMES}


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """task -> (project folder, stand-in model): made by the CLI, run for one step."""
    made = {}
    for task in TASK_NAMES:
        project = reference.make(task, tmp_path_factory.mktemp(task))
        model = reference.stand_in_model(reference.REFERENCES[task].stand_in)
        done = reference.smoke(project, model)
        log = (project / "smoke.log").read_text(encoding="utf-8")
        assert done.returncode == 0, f"{task}: the reference's smoke run failed\n{log[-3000:]}"
        made[task] = (project, model)
    return made


def check(task: str, project: Path, model: str, capsys) -> tuple[int, str]:
    status = checkers[task].main(checkers[task].TASK, [str(project), "--model", model])
    return status, capsys.readouterr().out


def broken_copy(references, task: str, tmp_path: Path) -> tuple[Path, str]:
    project, model = references[task]
    copy = tmp_path / project.name
    shutil.copytree(project, copy, symlinks=True)
    return copy, model


def set_key(text: str, table: str, key: str, value) -> str:
    """config.toml's ``key = value`` in ``[table]``: the existing line replaced, else a line added under the header
    (how a user breaks a copy by hand)."""
    from grpo_skill.schema import toml_value

    header = re.search(rf"^\[{re.escape(table)}\][^\n]*\n", text, re.MULTILINE)
    end = re.search(r"^\[", text[header.end():], re.MULTILINE)
    body_end = header.end() + (end.start() if end else len(text) - header.end())
    body = text[header.end():body_end]
    line = f"{key} = {toml_value(value)}\n"
    existing = re.compile(rf"^{re.escape(key)}\s*=.*\n", re.MULTILINE)
    body = existing.sub(line.replace("\\", "\\\\"), body, count=1) if existing.search(body) else line + body
    return text[:header.end()] + body + text[body_end:]


def set_rewards(text: str, rewards) -> str:
    """config.toml's [[rewards]] replaced by ``rewards`` ((name, weight, params), ...), before [grpo]."""
    from grpo_skill.schema import toml_value

    text = re.sub(r"^\[\[rewards\]\]\n(?:(?!\[)[^\n]*\n)*", "", text, flags=re.MULTILINE)
    blocks = ""
    for name, weight, params in rewards:
        blocks += f"[[rewards]]\nname = {toml_value(name)}\nweight = {weight!r}\n"
        if params:
            blocks += "params = { " + ", ".join(f"{key} = {toml_value(v)}" for key, v in params.items()) + " }\n"
        blocks += "\n"
    at = re.search(r"^\[grpo\]", text, re.MULTILINE).start()
    return text[:at] + blocks + text[at:]


def edit_config(project: Path, edit) -> None:
    config = project / "config.toml"
    config.write_text(edit(config.read_text(encoding="utf-8")), encoding="utf-8")


@pytest.mark.parametrize("task", TASK_NAMES)
def test_the_reference_solution_passes(task, references, capsys):
    project, model = references[task]
    status, out = check(task, project, model, capsys)
    assert status == 0, out
    assert out.strip().endswith(f"{task}: OK ({project})")


BROKEN = {
    "thinking-math-jsonl": [
        # the correctness reward reads the worked solution, not the gold column
        (lambda text: text.replace('answer_column = "final"', 'answer_column = "solution"'),
         "no reward with a positive weight reads the gold column 'final'"),
        # the seed's 128 tokens: every completion is cut while the model still thinks
        (lambda text: set_key(text, "grpo", "max_completion_length", 128), "max_completion_length = 128"),
    ],
    "zh-csv-word-problems": [
        # the built-ins as they were before Chinese answers were read, beside the seed's length and format
        (lambda text: set_rewards(text, [("accuracy", 1.0, {"answer_column": "答案"}),
                                                   ("length", 0.2, {}), ("format", 0.2, {})]),
         "format (weight 0.2) scores 'The answer is 20 stamps.'"),
        # thinking left on
        (lambda text: re.sub(r"^chat_template_kwargs = .*\n", "", text, flags=re.MULTILINE), "enable_thinking"),
    ],
    "json-extraction-2gpu": [
        (lambda text: set_key(text, "model", "backend", "unsloth"), "trains on one GPU only"),
        # completions of 4096 tokens with gradient checkpointing forced off ("auto" would keep it on): the
        # activations of every layer, more than 24 GiB
        (lambda text: set_key(set_key(set_key(text, "grpo", "max_completion_length", 4096), "model", "max_seq_length",
                                      4608), "lora", "gradient_checkpointing", False), "plan: needs"),
    ],
}


@pytest.mark.parametrize("task, case", [(task, index) for task in TASK_NAMES for index in range(len(BROKEN[task]))])
def test_a_broken_solution_fails_with_its_reason(task, case, references, tmp_path, capsys):
    edit, reason = BROKEN[task][case]
    project, model = broken_copy(references, task, tmp_path)
    edit_config(project, edit)
    status, out = check(task, project, model, capsys)
    assert status == 1, out
    assert reason in out, out
    assert re.search(rf"{task}: \d+ problems? in ", out)


def test_a_project_without_a_smoke_run_fails(references, tmp_path, capsys):
    project, model = broken_copy(references, "thinking-math-jsonl", tmp_path)
    shutil.rmtree(project / "outputs")
    status, out = check("thinking-math-jsonl", project, model, capsys)
    assert status == 1 and "holds no metrics.jsonl (nor its smoke/ folder): no run" in out, out


def test_a_smoke_run_of_other_rewards_or_models_fails(references, tmp_path, capsys):
    project, model = broken_copy(references, "json-extraction-2gpu", tmp_path)
    edit_config(project, lambda text: set_rewards(
        text, [("json_match", 1.0, {"answer_column": "expected"}), ("repetition", 0.1, {})]))
    status, out = check("json-extraction-2gpu", project, model, capsys)
    assert status == 1 and "the run logged no score for repetition" in out, out
    # without --model the stand-in the run used is not the project's model
    status = checkers["json-extraction-2gpu"].main(checkers["json-extraction-2gpu"].TASK, [str(project)])
    assert status == 1 and "pass it to this checker as --model PATH" in capsys.readouterr().out


def test_the_checker_is_a_script_with_exit_codes(references, tmp_path):
    """Run as a user runs it: exit 2 for a folder that is no project, 1 with reasons for a broken one."""
    script = EVALS / "tasks" / "zh-csv-word-problems" / "check.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no config.toml" in done.stderr
    project, model = broken_copy(references, "zh-csv-word-problems", tmp_path)
    (project / ".copier-answers.yml").write_text(
        (project / ".copier-answers.yml").read_text(encoding="utf-8").replace("lang: zh-CN", "lang: en"),
        encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(project), "--model", model], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL task: the project's language is 'en'" in done.stdout


# --- trigger queries ---------------------------------------------------------------------------------------------

triggers = load_module(EVALS / "check_triggers.py", "evals_check_triggers")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_trigger_queries_are_half_and_half_and_classified_as_labelled(lang, capsys):
    report = triggers.classify(lang)
    labels = [query["trigger"] for query in report["queries"]]
    assert len(labels) >= 20 and labels.count(True) == labels.count(False)
    assert triggers.main(["--lang", lang]) == 0, capsys.readouterr().out
    assert "FAIL" not in capsys.readouterr().out


def test_a_description_that_drops_its_terms_fails_the_trigger_check(monkeypatch, capsys):
    full = triggers.description("en")
    monkeypatch.setattr(triggers, "description", lambda lang: full.replace("reward function, ", "").replace(
        "GRPO, RLHF", "RLHF"))
    assert triggers.main(["--lang", "en"]) == 1
    out = capsys.readouterr().out
    assert "FAIL en: 'Write a reward function that checks the final answer after </think>' should trigger" in out
    # a near-miss that names a trigger term is caught as well
    assert triggers.hits("Train on my preference pairs with GRPOTrainer", triggers.trigger_terms(full, "en"))
