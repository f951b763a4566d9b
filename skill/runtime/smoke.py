"""`python train.py --smoke`: the fewest steps that exercise generation, every reward, a checkpoint and a resume,
whatever the batch layout.

TRL samples a new batch of completions every ``steps_per_generation x num_iterations`` micro-steps, so with
``steps_per_generation = 32`` and 4 micro-steps per optimizer step a 5-step run samples once and saves nothing. The
smoke test reads the layout from config.toml and runs train.py twice, in ``<output_dir>/smoke``: to the step where the
first generation's batch is used up, saving a checkpoint there, then resumed from that checkpoint for as many steps
again (so a second generation happens). Then it checks the run's own records and says what it verified.

A stand-in model (``--model PATH``, e.g. ``grpo-skill build-model --shape tiny --chat``) brings its own tokenizer,
which may count a prompt in far more tokens than the configured model's (the tiny one: a 130-token email in 434). Its
prompts then get the max_seq_length they need for that run only; config.toml stays as it is.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from ..core.i18n import _
from ..core.schema import grpo_value
from . import data, distributed, metrics, resume

SMOKE_DIR = "smoke"  # inside grpo.output_dir: ignored by git like the rest of it, never taken for the real run
# train.py's options that --smoke chooses itself
CHOSEN = ("--max-steps", "--output-dir", "--resume", "--overwrite")


class SmokeError(UserError):
    """--smoke with options it chooses itself, or under a launcher."""


@dataclass(frozen=True)
class SmokePlan:
    steps_per_generation: int  # optimizer steps one generation serves (at least 1)
    output_dir: str  # relative to the project, as grpo.output_dir

    @property
    def checkpoint_step(self) -> int:
        return self.steps_per_generation

    @property
    def max_steps(self) -> int:
        return 2 * self.steps_per_generation


def plan(grpo: dict) -> SmokePlan:
    """The steps of a smoke test for this [grpo]: one generation's worth, a checkpoint, then one more."""
    per_device = grpo_value(grpo, "per_device_train_batch_size")
    accumulation = grpo_value(grpo, "gradient_accumulation_steps") or 1
    if grpo.get("generation_batch_size"):
        micro_steps = max(grpo["generation_batch_size"] // (per_device * distributed.world_size()), 1)
    else:
        micro_steps = grpo.get("steps_per_generation") or accumulation
    micro_steps *= grpo_value(grpo, "num_iterations") or 1
    return SmokePlan(max(math.ceil(micro_steps / accumulation), 1), f"{grpo['output_dir']}/{SMOKE_DIR}")


def overrides(save_steps: int | None) -> dict:
    """What a smoke phase changes in config.toml besides max_steps and output_dir (``--smoke-save-steps``)."""
    if save_steps is None:
        return {}
    return {"grpo.save_steps": save_steps, "grpo.save_strategy": "steps", "grpo.logging_steps": 1,
            "grpo.report_to": []}


def fit_prompts(config, prompt_lengths: list[int], stand_in: bool) -> None:
    """Prompts plus a full completion must fit max_seq_length (else a one-line refusal). A stand-in model's
    tokenizer says nothing about the configured model's prompt lengths, so for it max_seq_length is raised for this
    run only, and one line says so."""
    from ..core.project import model_positions

    needed = max(prompt_lengths) + config.grpo["max_completion_length"]
    limit = config.model["max_seq_length"]
    positions = model_positions(config, config.model_path()) if stand_in else None
    if stand_in and needed > limit and (positions is None or needed <= positions):
        if distributed.is_main_process():
            print(_("note: the stand-in model's tokenizer makes the longest prompt {longest} tokens, so "
                    "max_seq_length is {needed} for this run only (config.toml keeps {limit}; grpo-skill plan "
                    "counts the prompts with the configured model)").format(
                longest=max(prompt_lengths), needed=needed, limit=limit), file=sys.stderr)
        config.model["max_seq_length"] = needed
    data.check_prompt_lengths(prompt_lengths, config)


def _phase(script: str, kept: list[str], smoke: SmokePlan, max_steps: int, start: str) -> int:
    command = [sys.executable, script, *kept, "--max-steps", str(max_steps), "--output-dir", smoke.output_dir,
               start, "--smoke-save-steps", str(smoke.checkpoint_step)]
    return subprocess.run(command).returncode


def run(config, argv: list[str]) -> int:
    """Run both phases as child processes of train.py (``argv``: its sys.argv) and check what they wrote."""
    given = [arg.split("=")[0] for arg in argv[1:]]
    clash = [option for option in CHOSEN if option in given]
    if clash:
        raise SmokeError(_("--smoke chooses {options} itself; leave them out").format(options=", ".join(clash)))
    if distributed.is_launched():
        raise SmokeError(_("run the smoke test as python train.py --smoke, on one process"))
    smoke = plan(config.grpo)
    folder = config.project_dir / smoke.output_dir
    kept = [arg for arg in argv[1:] if arg != "--smoke"]
    print(_("smoke test: {first} step(s) with a checkpoint, then resumed to step {last} (one generation serves {n} "
            "optimizer step(s) here), in {folder}").format(
        first=smoke.checkpoint_step, last=smoke.max_steps, n=smoke.steps_per_generation, folder=folder),
        file=sys.stderr)
    code = _phase(argv[0], kept, smoke, smoke.checkpoint_step, "--overwrite")
    if code:
        return _failed(_("the first part (to step {step}) exited with {code}").format(step=smoke.checkpoint_step,
                                                                                   code=code), code)
    saved = resume.last_checkpoint(folder)
    if saved is None or saved.step != smoke.checkpoint_step:
        return _failed(_("no checkpoint at step {step} in {folder}").format(step=smoke.checkpoint_step, folder=folder))
    code = _phase(argv[0], kept, smoke, smoke.max_steps, "--resume")
    if code:
        return _failed(_("the resumed part (to step {step}) exited with {code}").format(step=smoke.max_steps,
                                                                                     code=code), code)
    problems, verified = verify(folder, smoke, [choice.name for choice in config.rewards], saved.path.name)
    if problems:
        return _failed("; ".join(problems))
    print(_("smoke test passed ({folder}):").format(folder=folder))
    for line in verified:
        print("  " + line)
    return 0


def _failed(reason: str, code: int = 1) -> int:
    print(_("smoke test FAILED: {reason}").format(reason=reason), file=sys.stderr)
    return code or 1


def verify(folder: Path, smoke: SmokePlan, rewards: list[str], checkpoint: str) -> tuple[list[str], list[str]]:
    """(problems, what was verified) from the smoke run's metrics.jsonl and summary.json."""
    rows = [row for row in metrics.read_metrics(folder) if metrics.END_OF_TRAINING_KEY not in row and "step" in row]
    steps = [row["step"] for row in rows]
    problems = []
    if sorted(set(steps)) != list(range(1, smoke.max_steps + 1)) or len(steps) != len(set(steps)):
        problems.append(_("metrics.jsonl has steps {steps}, not each of 1..{last} once").format(
            steps=steps, last=smoke.max_steps))
    sampled = sorted({row["step"] for row in rows if "reward" in row})
    before = [step for step in sampled if step <= smoke.checkpoint_step]
    after = [step for step in sampled if step > smoke.checkpoint_step]
    if not before or not after:
        problems.append(_("completions were scored at steps {steps}: not both before and after the resume").format(
            steps=sampled))
    missing = [name for name in rewards
               if not any(f"rewards/{name}/mean" in row for row in rows if row["step"] in sampled)]
    if missing:
        problems.append(_("no score logged for {names}").format(names=", ".join(missing)))
    try:
        finished = json.loads((folder / resume.SUMMARY_FILE).read_text(encoding="utf-8")).get("global_step")
    except (OSError, ValueError):
        finished = None
    if finished != smoke.max_steps:
        problems.append(_("summary.json says step {step}, not {last}").format(step=finished, last=smoke.max_steps))
    verified = [
        _("generation: completions sampled and scored at steps {steps}").format(steps=", ".join(map(str, sampled))),
        _("rewards: {names}, each logged (rewards/NAME/mean)").format(names=", ".join(rewards)),
        _("checkpoint: {checkpoint} saved at step {step}; the run resumed from it and finished step {last}, each step "
          "in metrics.jsonl once").format(checkpoint=checkpoint, step=smoke.checkpoint_step, last=smoke.max_steps),
        _("the adapter: {path}").format(path=folder / resume.ADAPTER_DIR),
    ]
    return problems, verified
