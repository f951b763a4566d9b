"""Training-health warnings: a callback that watches each logged step for the signs of a run that learns nothing
or goes wrong, and says so once per sign, with what to change.

It reads the metrics GRPOTrainer logs (TRL 1.14.2): ``frac_reward_zero_std``, ``completions/clipped_ratio``,
``reward``, ``kl`` (when beta > 0) and the Trainer's ``grad_norm``. A warning is printed under the progress bar
and recorded in that step's row of metrics.jsonl as ``health`` (a list of ``{"check", "message"}``); the
callback must therefore come before JsonlMetrics in the trainer's callbacks.

Imports transformers: use it only after unsloth has been imported.
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text
from transformers import TrainerCallback

from ..core.commands import set_command
from ..core.errors import UserError, shown_path
from ..core.i18n import N_, _

HEALTH_KEY = "health"


class TrainingDiverged(UserError):
    """The loss or the gradient went non-finite: the weights after that step are not usable."""


@dataclass(frozen=True)
class Limits:
    """When a sign counts as trouble."""

    # The reward signs are logged on the steps that generate (each step, or one in steps_per_generation /
    # gradient_accumulation_steps): they count generations; a warning says how many optimizer steps they span.
    steps: int = 5  # a sign must hold for this many logged generations in a row (one noisy one is not a trend)
    zero_std: float = 0.9  # frac_reward_zero_std above this: nearly every group scores all its completions alike
    clipped: float = 0.5  # completions/clipped_ratio above this: most completions hit max_completion_length
    flat_steps: int = 10  # the reward has not moved at all for this many logged generations
    flat_range: float = 1e-3
    kl: float = 1.0  # kl above this: the policy is far from the reference model
    grad_factor: float = 10.0  # grad_norm above this many times its median so far (or not finite)
    grad_history: int = 5  # steps of grad_norm seen before a spike can count


CHECKS = {
    "zero_std": (
        N_("frac_reward_zero_std has stayed above {limit} for {steps} steps: almost every group scores all its "
           "completions the same, so their advantages are zero and nothing is learned"),
        N_("run `grpo-skill probe`; use graded rewards, more num_generations, easier prompts, or warm-start with "
           "sft.py"),
    ),
    "clipped": (
        N_("completions/clipped_ratio has stayed above {limit} for {steps} steps: most completions hit "
           "max_completion_length before they end"),
        N_("raise [grpo] max_completion_length (and model.max_seq_length), e.g. {command}; or add a length "
           "reward such as soft_overlong"),
    ),
    "flat_reward": (
        N_("the reward has not moved for {steps} steps (stuck at {value:.3f})"),
        N_("check that the rewards can tell completions apart (`grpo-skill probe`); raise learning_rate if "
           "reward_std is clearly above 0"),
    ),
    "kl": (
        N_("kl reached {value:.3g} (above {limit}): the policy has drifted far from the reference model"),
        N_("raise [grpo] beta or lower learning_rate; read outputs/completions.jsonl for degenerate text"),
    ),
    "grad_norm": (
        N_("grad_norm jumped to {value:.3g} (the median so far is {median:.3g})"),
        N_("lower learning_rate, keep max_grad_norm at 1.0, keep the rewards within about [-1, 1]; "
           "use bf16 rather than fp16"),
    ),
}

# The clipped advice where the model's positions (its max_position_embeddings) stop the doubled budget: as far as
# they go, or, with model.max_seq_length already there, none
CLIPPED_AS_FAR_AS_IT_READS = N_(
    "raise [grpo] max_completion_length (and model.max_seq_length) as far as the model reads ({positions} tokens, "
    "its max_position_embeddings; twice the budget does not fit), e.g. {command}; or add a length reward such as "
    "soft_overlong")
CLIPPED_NO_FURTHER = N_(
    "max_completion_length cannot grow and keep the prompts their room: model.max_seq_length is already the "
    "{positions} tokens the model reads (its max_position_embeddings); add a length reward such as soft_overlong")


class TrainingHealth(TrainerCallback):
    """Warns once per check, with advice, when the logged metrics show a run in trouble."""

    def __init__(self, limits: Limits | None = None, console: Console | None = None, config_file=None,
                 run_dir=None, max_seq_length: int | None = None, positions: int | None = None):
        self.limits = limits or Limits()
        # the run's config file (train.py --config's, not always config.toml), its folder, model.max_seq_length and
        # the model's max_position_embeddings, for the command the clipped advice gives (None: not known)
        self.config_file = Path(config_file).resolve() if config_file is not None else None
        self.run_dir = Path(run_dir).resolve() if run_dir is not None else None
        self.max_seq_length = max_seq_length
        self.positions = positions
        self.console = console or Console(stderr=True)
        self.warned: set[str] = set()
        self.streaks = {"zero_std": 0, "clipped": 0}
        self.streak_starts: dict[str, int] = {}  # the step each current streak began at
        self.rewards: list[tuple[int, float]] = []  # (step, reward) of each generation
        self.grad_norms: list[float] = []
        self.diverged: tuple[int, str, float] | None = None  # (step, metric, value) when a NaN/inf stopped the run
        self.budget: int | None = None  # the run's max_completion_length (GRPOConfig's), for the clipped advice

    def on_log(self, args, state, control, logs=None, **kwargs):
        # only training steps (not the summary at the end); with steps_per_generation, the steps that do not
        # generate log loss, kl and grad_norm without rewards
        if not logs or ("loss" not in logs and "reward" not in logs):
            return
        self.budget = getattr(args, "max_completion_length", None)
        broken = next(((key, logs[key]) for key in ("grad_norm", "loss")
                       if isinstance(logs.get(key), float) and not math.isfinite(logs[key])), None)
        if broken and self.diverged is None:
            # Every process sees the same logged values, so all stop after this step; the step's weights are not
            # saved (the last checkpoint is the last good state)
            self.diverged = (state.global_step, *broken)
            control.should_training_stop = True
            control.should_save = False
        found = [(check, values) for check, values in self.check(logs, state.global_step)
                 if check not in self.warned]
        if not found:
            return
        records = []
        for check, values in found:
            self.warned.add(check)
            message, advice = (_(text).format(**values) for text in texts(check, values))
            # values too: `grpo-skill metrics` says it again in the reader's language
            records.append({"check": check, "message": message, "advice": advice, "values": values})
            if state.is_world_process_zero:
                self.console.print(Text.assemble(
                    (_("warning"), "bold yellow"),
                    _(" (step {step}): {message}\n  -> {advice}").format(
                        step=state.global_step, message=message, advice=advice)))
        logs[HEALTH_KEY] = records  # JsonlMetrics, next in line, writes it into this step's row

    def check(self, logs: dict, step: int) -> list[tuple[str, dict]]:
        """Every check that fires on this step's metrics (whether or not it was already said)."""
        limits, fired = self.limits, []
        if "reward" in logs:  # a step that generated
            for check, key, limit in (("zero_std", "frac_reward_zero_std", limits.zero_std),
                                      ("clipped", "completions/clipped_ratio", limits.clipped)):
                value = logs.get(key)
                self.streaks[check] = self.streaks[check] + 1 if value is not None and value > limit else 0
                if self.streaks[check] == 1:
                    self.streak_starts[check] = step
                if self.streaks[check] >= limits.steps:
                    values = {"limit": limit, "steps": step - self.streak_starts[check] + 1}
                    if check == "clipped":
                        settings = longer_budget(self.budget, self.max_seq_length, self.positions)
                        values["command"] = _command(settings, self.config_file)
                        doubled = settings and settings["grpo.max_completion_length"] == 2 * self.budget
                        if _count(self.budget) and not doubled:  # the model's positions stopped it
                            values["positions"] = self.positions
                        if settings:  # recorded: `grpo-skill metrics` writes the command again where it runs
                            values["settings"] = settings
                            if self.config_file is not None and self.run_dir is not None:
                                # relative to the run folder: a project copied or moved with its outputs (or a run
                                # fetched from a GPU machine) names its own config file, not the one it ran from
                                values["config"] = os.path.relpath(self.config_file, self.run_dir)
                    fired.append((check, values))

            self.rewards.append((step, logs["reward"]))
            recent = self.rewards[-limits.flat_steps:]
            values = [reward for _, reward in recent]
            if len(recent) == limits.flat_steps and max(values) - min(values) <= limits.flat_range:
                fired.append(("flat_reward", {"steps": step - recent[0][0] + 1, "value": values[-1]}))

        kl = logs.get("kl")
        if kl is not None and (not math.isfinite(kl) or kl > limits.kl):
            fired.append(("kl", {"value": kl, "limit": limits.kl}))

        grad_norm = logs.get("grad_norm")
        if grad_norm is not None:
            history = self.grad_norms[:]
            self.grad_norms.append(grad_norm)
            median = statistics.median(history) if history else float("nan")
            if not math.isfinite(grad_norm) or (
                    len(history) >= limits.grad_history and grad_norm > limits.grad_factor * median > 0):
                fired.append(("grad_norm", {"value": grad_norm, "median": median}))
        return fired


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def longer_budget(budget, max_seq_length=None, positions=None) -> dict | None:
    """The settings that double the run's completion budget, and raise model.max_seq_length by as much where it is
    known: the prompts keep the room they had, without which `grpo-skill set` refuses the budget as train.py would
    (it is what `set` raises it to on its own once the budget reaches it). With the model's ``positions`` known,
    max_seq_length goes no further (`set` refuses more), and the budget only as far as that leaves. None where the
    budget is not known, or cannot grow."""
    if not _count(budget):
        return None
    if not _count(max_seq_length):
        return {"grpo.max_completion_length": 2 * budget}
    length = max_seq_length + budget
    if _count(positions):
        length = min(length, positions)
    room = max_seq_length - budget
    if length - room <= budget:
        return None
    return {"grpo.max_completion_length": length - room, "model.max_seq_length": length}


def texts(check: str, values: dict) -> tuple[str, str] | None:
    """The message and advice of ``check`` (untranslated) for its ``values``; None for a check not known here."""
    if not isinstance(check, str) or check not in CHECKS:
        return None
    message, advice = CHECKS[check]
    if check == "clipped" and "positions" in values:
        advice = CLIPPED_AS_FAR_AS_IT_READS if values.get("settings") else CLIPPED_NO_FURTHER
    return message, advice


def _command(settings: dict | None, config_file=None) -> str:
    if not settings:
        return "grpo-skill set grpo.max_completion_length=N"
    if config_file is not None and Path(config_file).name == "config.toml":
        config_file = Path(config_file).parent  # the project folder: what `set --project` is given most often
    return set_command(settings, shown_path(config_file) if config_file is not None else None)


def raise_if_diverged(trainer) -> None:
    """After trainer.train(): a run that a non-finite loss or gradient stopped ends in one line, before its
    broken adapter is saved."""
    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, TrainingHealth) and callback.diverged:
            step, metric, value = callback.diverged
            raise TrainingDiverged(_(
                "training stopped at step {step}: {metric} became {value}, so the weights after it are not "
                "usable (nothing was saved from that step); lower [grpo] learning_rate and start over with "
                "--overwrite, or continue from the last checkpoint with --resume").format(
                    step=step, metric=metric, value=value))


def warnings_in(rows: list[dict], run_dir=None) -> list[dict]:
    """The health warnings recorded in metrics.jsonl rows, with their step, in the current language; ``run_dir``:
    the folder they were read from, where a recorded config file's relative path starts."""
    found = []
    for row in rows:
        for record in row.get(HEALTH_KEY) or ():
            record = dict(record)
            values = record.get("values")
            if isinstance(values, dict) and isinstance(values.get("settings"), dict):
                # the command as it works from here: --project where the config is not this folder's config.toml
                config = values.get("config")
                # from the run folder resolved, as the path was recorded (an outputs folder may be a symbolic link)
                config = (Path(os.path.normpath(Path(run_dir).resolve() / config))
                          if isinstance(config, str) and run_dir is not None else None)
                values = {**values, "command": _command(values["settings"], config)}
                record["values"] = values  # --json says the command as the text does
            found_texts = texts(record.get("check"), values) if isinstance(values, dict) else None
            if found_texts:  # else (an older run): the text as it was recorded
                try:
                    record["message"], record["advice"] = (_(text).format(**values) for text in found_texts)
                except (KeyError, ValueError):
                    pass
            found.append({"step": row.get("step"), **record})
    return found
