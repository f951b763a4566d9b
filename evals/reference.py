"""Reference solutions for the task evals, made with the grpo-skill CLI as an assistant would make them.

tests/test_evals.py builds each one, smoke-runs it with a local stand-in model (no hub here) and runs the task's
checker on it; it must pass, and the broken variants the test derives from it must fail.

    python evals/reference.py TASK DEST [--smoke]   # DEST/<project>, from the task's data; --smoke runs train.py

Where the CLI cannot say something yet, the config is edited here, as the assistant had to by hand:
- the gold column (``new --answer-column`` to come) and reward params (``new --param`` to come) are written into
  config.toml's [[rewards]]; other settings (``new --set`` to come) into their tables;
- the Chinese task's answer reward and the JSON reward are project rewards in rewards.py until the built-in
  Chinese-aware ``accuracy`` and ``json_match`` are merged; then these references use the built-ins.

Once those are merged, each reference is one command (tried on a merge of the branches, 2026-12-03):
    new math-grpo --preset thinking --dataset data/problems.jsonl --prompt-column question --answer-column final
        --reward accuracy:1 --reward thinking:0.5 --reward soft_overlong:0.5 --set lora.gradient_checkpointing=false
        --set grpo.steps_per_generation=4
    new invoice-grpo --preset standard --backend trl --dataset data/invoices.json --prompt-column email
        --answer-column expected --reward json_match:1 --param json_match.strict=true
        --set 'dataset.system_prompt="..."' --set lora.gradient_checkpointing=false --set grpo.steps_per_generation=4
    new zh-grpo ... --answer-column 答案 --reward accuracy:1 --reward language:0.3 --param language.language=zh
        (not yet: that language reward scores a right Chinese answer with a formula in it 0.0, so an English right
        answer ties it; the zh reference keeps its project reward until it does not)
and the smoke run is ``python train.py --smoke --model STAND_IN``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

TASKS = Path(__file__).resolve().parent / "tasks"

# A project reward that reads a Chinese answer: the last stated answer after 答案/一共/共, else the last number.
ZH_ANSWER = r'''
import re as _re

_FULL_WIDTH = str.maketrans({chr(0xFF10 + d): str(d) for d in range(10)} | {"．": ".", "：": ":"})
_ANCHORED = _re.compile(r"(?:答案|结果|一共|总共|共)(?:是|为|有|:)?\s*(-?\d+(?:\.\d+)?(?:点\d+分?)?)")
_NUMBERS = _re.compile(r"-?\d+(?:\.\d+)?")
_CHINESE = _re.compile(r"[\u4e00-\u9fff]")


def _numbers(text):
    return [float(n) for n in _NUMBERS.findall(text)]


def zh_answer_factory(context):
    column = context.params["answer_column"]

    def zh_answer(completions, **kwargs):
        scores = []
        for completion, gold in zip(completions, kwargs[column]):
            text = completion_text(completion).split("</think>")[-1].translate(_FULL_WIDTH)
            anchored = _ANCHORED.findall(text)
            stated = anchored[-1] if anchored else (_NUMBERS.findall(text) or [""])[-1]
            wanted = _numbers(str(gold).translate(_FULL_WIDTH))
            right = wanted and _numbers(stated) == wanted and _CHINESE.search(text)  # the user wants Chinese
            scores.append(1.0 if right else 0.0)
        return scores

    return zh_answer

'''
ZH_ANSWER_REGISTER = '''    register(Reward(
        "zh_answer", zh_answer_factory,
        "1.0 when the completion is written in Chinese and the last answer it states (after 答案/一共/共, else its "
        "last number) equals the numbers of the gold answer, else 0.0.",
        params={"answer_column": "answer"},
    ))
'''

# A project reward for one JSON object against a gold object: the share of gold keys with the right value.
JSON_FIELDS = r'''
import json as _json


def _same(value, gold):
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value - gold) < 1e-6
    return isinstance(value, str) and value.strip() == str(gold).strip()


def json_fields_factory(context):
    column = context.params["answer_column"]

    def json_fields(completions, **kwargs):
        scores = []
        for completion, gold in zip(completions, kwargs[column]):
            gold = _json.loads(gold) if isinstance(gold, str) else gold
            try:
                answer = _json.loads(completion_text(completion).split("</think>")[-1].strip())
            except ValueError:
                scores.append(0.0)  # not one JSON value and nothing else
                continue
            if not isinstance(answer, dict):
                scores.append(0.0)
                continue
            right = sum(_same(answer.get(key), value) for key, value in gold.items())
            extra = len(set(answer) - set(gold))
            scores.append(max(0.0, (right - 0.5 * extra) / len(gold)))
        return scores

    return json_fields

'''
JSON_FIELDS_REGISTER = '''    register(Reward(
        "json_fields", json_fields_factory,
        "Share of the gold object's keys the completion's one JSON object gets right (0.0 for text that is not one "
        "JSON object); half a key off for each key the gold lacks.",
        params={"answer_column": "answer"},
    ))
'''

INVOICE_SYSTEM_PROMPT = ("Read the invoice email and answer with exactly one JSON object with the keys vendor, "
                         "invoice_number, date (YYYY-MM-DD), total (a number) and currency (ISO code), and nothing "
                         "else.")


@dataclass(frozen=True)
class Reference:
    task: str
    project: str
    new_args: tuple[str, ...]  # after `grpo-skill new PROJECT`
    rewards: tuple[tuple[str, float, dict], ...]  # [[rewards]] as config.toml will list them
    settings: dict[str, object] = field(default_factory=dict)  # "table.key" -> value
    project_rewards: tuple[tuple[str, str], ...] = ()  # (code, register lines) added to rewards.py
    stand_in: str = "think"  # the local model the smoke run uses: build-model's "think" or "chat" (--chat)


REFERENCES = {
    "thinking-math-jsonl": Reference(
        "thinking-math-jsonl", "math-grpo",
        ("--preset", "thinking", "--dataset", "data/problems.jsonl", "--prompt-column", "question"),
        rewards=(("accuracy", 1.0, {"answer_column": "final"}), ("thinking", 0.5, {}), ("soft_overlong", 0.5, {})),
        # plan: fits 24 GiB without gradient checkpointing; one generation per optimizer step keeps the CPU
        # smoke run in CI to 4 completions (the preset generates 16 at a time)
        settings={"lora.gradient_checkpointing": False, "grpo.steps_per_generation": 4},
    ),
    "zh-csv-word-problems": Reference(
        "zh-csv-word-problems", "zh-grpo",
        ("--preset", "standard", "--model", "Qwen/Qwen3-1.7B", "--dataset", "data/word_problems.csv",
         "--prompt-column", "题目", "--lang", "zh-CN"),
        rewards=(("zh_answer", 1.0, {"answer_column": "答案"}),),
        settings={"lora.gradient_checkpointing": False, "grpo.steps_per_generation": 4},
        project_rewards=((ZH_ANSWER, ZH_ANSWER_REGISTER),),
        stand_in="chat",
    ),
    "json-extraction-2gpu": Reference(
        "json-extraction-2gpu", "invoice-grpo",
        ("--preset", "standard", "--backend", "trl", "--dataset", "data/invoices.json", "--prompt-column", "email"),
        rewards=(("json_fields", 1.0, {"answer_column": "expected"}),),
        settings={"dataset.system_prompt": INVOICE_SYSTEM_PROMPT, "lora.gradient_checkpointing": False,
                  "grpo.steps_per_generation": 4},
        project_rewards=((JSON_FIELDS, JSON_FIELDS_REGISTER),),
        stand_in="chat",
    ),
}


# --- config.toml edits (until `new --set/--param/--answer-column` can say them) ----------------------------------

def set_key(text: str, table: str, key: str, value) -> str:
    """``key = value`` in ``[table]``: the existing line replaced, else a line added under the header."""
    from grpo_skill.schema import toml_value

    header = re.search(rf"^\[{re.escape(table)}\][^\n]*\n", text, re.MULTILINE)
    if header is None:
        raise ValueError(f"config.toml has no [{table}] table")
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


def add_project_rewards(rewards_py: Path, additions) -> None:
    text = rewards_py.read_text(encoding="utf-8")
    hook = text.index("@hookimpl\ndef register_rewards(register):")
    code = "".join(code for code, _register in additions)
    registers = "".join(register for _code, register in additions)
    rewards_py.write_text(text[:hook] + code.lstrip("\n") + "\n" + text[hook:].rstrip("\n") + "\n" + registers,
                          encoding="utf-8")


# --- making and smoke-running a reference ------------------------------------------------------------------------

def make(task: str, dest: Path) -> Path:
    """Copies the task's data into ``dest`` (the user's folder) and makes the reference project there."""
    from click.testing import CliRunner

    from grpo_skill.cli import main

    reference = REFERENCES[task]
    shutil.copytree(TASKS / task / "data", dest / "data", dirs_exist_ok=True)
    with contextlib.chdir(dest):  # --dataset is read from the user's folder
        result = CliRunner().invoke(main, ["new", reference.project, *reference.new_args], catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"grpo-skill new failed for {task}: {result.output}")
    project = dest / reference.project
    config = project / "config.toml"
    text = config.read_text(encoding="utf-8")
    for dotted, value in reference.settings.items():
        table, key = dotted.split(".", 1)
        text = set_key(text, table, key, value)
    config.write_text(set_rewards(text, reference.rewards), encoding="utf-8")
    if reference.project_rewards:
        add_project_rewards(project / "rewards.py", reference.project_rewards)
    return project


def stand_in_model(kind: str) -> str:
    """A local Qwen3-shaped model for the smoke run (no hub here): build-model's, cached after the first build."""
    from grpo_skill import modelbuild

    return str(modelbuild.build("tiny", opens_think=kind != "chat"))


def smoke(project: Path, model: str, steps: int = 1) -> subprocess.CompletedProcess:
    """``python train.py --model STAND_IN --max-steps 1`` in the project; its output goes to smoke.log there."""
    with open(project / "smoke.log", "w", encoding="utf-8") as log:
        return subprocess.run([sys.executable, "train.py", "--model", model, "--max-steps", str(steps)],
                              cwd=project, stdout=log, stderr=subprocess.STDOUT, text=True, timeout=900,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(REFERENCES))
    parser.add_argument("dest", type=Path)
    parser.add_argument("--smoke", action="store_true", help="also run train.py for one step with a stand-in model")
    args = parser.parse_args()
    made = make(args.task, args.dest)
    print(made)
    if args.smoke:
        model = stand_in_model(REFERENCES[args.task].stand_in)
        done = smoke(made, model)
        print(f"stand-in model: {model}; output in {made / 'smoke.log'}")
        sys.exit(done.returncode)
