"""Reference solutions for the task evals: each one `grpo-skill new` command, as an assistant should make it, and a
smoke run of the project with a local stand-in model (no hub here).

tests/test_evals.py makes each one, smoke-runs it and runs the task's checker on it; it must pass, and the broken
variants the test derives from it must fail.

    python evals/reference.py TASK DEST [--smoke]   # DEST/<project>, from the task's data; --smoke runs train.py

The commands, run in the folder that holds the task's data/ (`grpo-skill new` copies the dataset in):

    grpo-skill new math-grpo --preset thinking --dataset data/problems.jsonl --prompt-column question
        --answer-column final --reward accuracy:1 --reward thinking:0.5 --reward soft_overlong:0.5
        --set grpo.steps_per_generation=8
    grpo-skill new zh-grpo --preset standard --model Qwen/Qwen3-1.7B --lang zh-CN --dataset data/word_problems.csv
        --prompt-column 题目 --answer-column 答案 --reward accuracy:1 --reward language:0.3
        --param language.language=zh --set grpo.steps_per_generation=1
    grpo-skill new invoice-grpo --preset standard --backend trl --dataset data/invoices.json --prompt-column email
        --answer-column expected --reward json_match:1 --param json_match.strict=true
        --set 'dataset.system_prompt="Read the invoice email and answer with ..."'
        --set grpo.steps_per_generation=1

Why that setting: a generation of one group (steps_per_generation = num_generations / per-device batch: thinking's
batch is 1, standard's 4) keeps the CPU smoke run to one prompt a generation. Gradient checkpointing is left to the
presets' "auto": train.py turns it off on the card the run meets where plan says it fits (until 2026-12-05 the
references set it false by hand).
The smoke run is ``python train.py --smoke --model STAND_IN`` (STAND_IN from ``grpo-skill build-model
--shape tiny``, ``--chat`` for a model that answers without thinking): one generation, every reward, a checkpoint,
a resume; its tokenizer makes the prompts longer than Qwen3's, and train.py gives that run the room it needs.
tests/test_evals.py runs one step instead (``--max-steps 1``, see ONE_STEP).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TASKS = Path(__file__).resolve().parent / "tasks"

INVOICE_SYSTEM_PROMPT = ("Read the invoice email and answer with exactly one JSON object with the keys vendor, "
                         "invoice_number, date (YYYY-MM-DD), total (a number) and currency (ISO code), and nothing "
                         "else.")


def one_group(num_generations: int, per_device_batch: int) -> tuple[str, ...]:
    """A generation of one group: steps_per_generation (it counts micro-batches) = num_generations / per-device batch."""
    return ("--set", f"grpo.steps_per_generation={num_generations // per_device_batch}")


@dataclass(frozen=True)
class Reference:
    task: str
    project: str
    new_args: tuple[str, ...]  # after `grpo-skill new PROJECT`
    stand_in: str = "think"  # the local model the smoke run uses: build-model's "think" or "chat" (--chat)


REFERENCES = {
    "thinking-math-jsonl": Reference(
        "thinking-math-jsonl", "math-grpo",
        ("--preset", "thinking", "--dataset", "data/problems.jsonl", "--prompt-column", "question",
         "--answer-column", "final", "--reward", "accuracy:1", "--reward", "thinking:0.5",
         "--reward", "soft_overlong:0.5", *one_group(8, 1)),
    ),
    "zh-csv-word-problems": Reference(
        "zh-csv-word-problems", "zh-grpo",
        ("--preset", "standard", "--model", "Qwen/Qwen3-1.7B", "--lang", "zh-CN", "--dataset",
         "data/word_problems.csv", "--prompt-column", "题目", "--answer-column", "答案", "--reward", "accuracy:1",
         "--reward", "language:0.3", "--param", "language.language=zh", *one_group(4, 4)),
        stand_in="chat",
    ),
    "json-extraction-2gpu": Reference(
        "json-extraction-2gpu", "invoice-grpo",
        ("--preset", "standard", "--backend", "trl", "--dataset", "data/invoices.json", "--prompt-column", "email",
         "--answer-column", "expected", "--reward", "json_match:1", "--param", "json_match.strict=true",
         "--set", f'dataset.system_prompt="{INVOICE_SYSTEM_PROMPT}"', *one_group(4, 4)),
        stand_in="chat",
    ),
}


def make(task: str, dest: Path) -> Path:
    """Copies the task's data into ``dest`` (the user's folder) and runs the reference's `grpo-skill new` there."""
    from click.testing import CliRunner

    from grpo_skill.cli import main

    reference = REFERENCES[task]
    shutil.copytree(TASKS / task / "data", dest / "data", dirs_exist_ok=True)
    with contextlib.chdir(dest):  # --dataset is read from the user's folder
        result = CliRunner().invoke(main, ["new", reference.project, *reference.new_args], catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"grpo-skill new failed for {task}: {result.output}")
    return dest / reference.project


def stand_in_model(kind: str) -> str:
    """A local Qwen3-shaped model for the smoke run (no hub here): build-model's, cached after the first build."""
    from grpo_skill import modelbuild

    return str(modelbuild.build("tiny", opens_think=kind != "chat"))


# CI runs one step: `train.py --smoke` runs train.py twice (a checkpoint, then a resume) and took twice as long
# (35 s against 17 s a reference on 2 CPU cores), while the checker needs only logged steps, a checkpoint and a summary.
ONE_STEP = ("--max-steps", "1")
SMOKE_TEST = ("--smoke",)


def smoke(project: Path, model: str, run: tuple[str, ...] = ONE_STEP) -> subprocess.CompletedProcess:
    """``python train.py --model STAND_IN --max-steps 1`` (or ``run``) in the project; its output goes to smoke.log."""
    with open(project / "smoke.log", "w", encoding="utf-8") as log:
        return subprocess.run([sys.executable, "train.py", "--model", model, *run],
                              cwd=project, stdout=log, stderr=subprocess.STDOUT, text=True, timeout=900,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(REFERENCES))
    parser.add_argument("dest", type=Path)
    parser.add_argument("--smoke", action="store_true", help="also run train.py --smoke with a stand-in model")
    parser.add_argument("--one-step", action="store_true", help="with --smoke: one step (--max-steps 1), as CI runs")
    args = parser.parse_args()
    made = make(args.task, args.dest)
    print(made)
    if args.smoke:
        model = stand_in_model(REFERENCES[args.task].stand_in)
        done = smoke(made, model, ONE_STEP if args.one_step else SMOKE_TEST)
        print(f"stand-in model: {model}; output in {made / 'smoke.log'}")
        sys.exit(done.returncode)
