"""Trainer callbacks for generated projects: a rich progress bar with per-step reward/KL, and metrics.jsonl.

Imports transformers: use it only after unsloth has been imported.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from ..core import contract
from ..core.i18n import _
from ..core.project import model_positions
from . import distributed, health, resume, traces


class JsonlMetrics(TrainerCallback):
    """Appends every log (one per logging step) to a JSON-lines file, with its step. It never empties the file:
    resume.prepare has removed an earlier run's file, or rewound it to the checkpoint a resumed run starts from."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"step": state.global_step, **logs}) + "\n")


class RewardSeconds(TrainerCallback):
    """Adds ``rewards/<name>/seconds`` (mean wall time per call since the last log) to each log with a reward:
    a slow reward, such as a judge, shows in metrics.jsonl beside what it scores."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and "reward" in logs:
            logs.update(contract.reward_seconds(self.trainer.reward_funcs))


class RichProgress(TrainerCallback):
    """One progress bar, and one short line per logged step instead of the raw log dict."""

    def __init__(self, console: Console | None = None, label: str = "GRPO"):
        self.console = console or Console(stderr=True)
        self.label = label  # sft.py's bar says SFT
        self.progress = None

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.progress = Progress(
                TextColumn(f"[bold]{self.label}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                TextColumn("{task.fields[status]}"), console=self.console, transient=False,
            )
            self.progress.start()
            # a resumed run starts at its checkpoint's step
            self.task = self.progress.add_task("train", total=state.max_steps, completed=state.global_step, status="")

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress:
            self.progress.update(self.task, completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self.progress or not logs or "reward" not in logs:
            return
        line = f"reward {logs['reward']:+.3f} ± {logs.get('reward_std', 0):.3f}"
        if "kl" in logs:
            line += f"  kl {logs['kl']:.4f}"
        line += f"  len {logs.get('completions/mean_length', 0):.0f}"
        self.progress.console.print(f"step {state.global_step:>4}  {line}")
        self.progress.update(self.task, status=line)

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress:
            self.progress.stop()


class SaveAndStopOnCtrlC(TrainerCallback):
    """After the step in which Ctrl-C was pressed: save a checkpoint, then stop (resume.CtrlC sets the flag).

    Several processes (accelerate launch) decide together, at the end of each step: Ctrl-C may reach them in
    different steps, or reach only one; a process that stopped alone would leave the others waiting for it."""

    def __init__(self, ctrl_c):
        self.ctrl_c = ctrl_c

    def on_step_end(self, args, state, control, **kwargs):
        if distributed.any_process(self.ctrl_c.requested, args.device):
            self.ctrl_c.requested = True  # on every process: each one exits 130 after train()
            control.should_save = True
            control.should_training_stop = True
        return control


class RecordSettings(TrainerCallback):
    """Writes the run's settings into each checkpoint, for --resume to compare with config.toml's
    (resume.SETTINGS_FILE): a changed setting is then applied and said, or refused, never silently kept."""

    def __init__(self, settings: dict):
        self.settings = settings

    def on_save(self, args, state, control, **kwargs):
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and checkpoint.is_dir():
            (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(self.settings, indent=2), encoding="utf-8")


class StepStartRandomState(TrainerCallback):
    """The random state at the start of each step, for a checkpoint saved after that step failed: it then holds
    what the previous step's checkpoint would have held, and the resumed run repeats the failed step exactly."""

    def __init__(self):
        self.saved = None

    def on_step_begin(self, args, state, control, **kwargs):
        import random

        import numpy
        import torch

        self.saved = (random.getstate(), numpy.random.get_state(), torch.random.get_rng_state(),
                      torch.cuda.random.get_rng_state_all() if torch.cuda.is_available() else None)

    def restore(self) -> None:
        import random

        import numpy
        import torch

        python_state, numpy_state, torch_state, cuda_states = self.saved
        random.setstate(python_state)
        numpy.random.set_state(numpy_state)
        torch.random.set_rng_state(torch_state)
        if cuda_states is not None:
            torch.cuda.random.set_rng_state_all(cuda_states)


@contextmanager
def checkpoint_when_a_reward_fails(trainer):
    """Around ``trainer.train``: a reward that cannot be computed (a judge down after its retries, a reward that
    raises) stops the run with a checkpoint of the last finished step and one line naming the cause and
    ``--resume``, instead of losing every step since the last checkpoint. Single process only: under a launch,
    the other processes would wait for this one in their next collective call."""
    random_state = StepStartRandomState()
    trainer.add_callback(random_state)
    try:
        yield
    except contract.RewardError as error:
        step = trainer.state.global_step
        if step == 0 or distributed.world_size() > 1 or random_state.saved is None:
            raise
        checkpoint = Path(trainer.args.output_dir) / f"checkpoint-{step}"
        if not (checkpoint / resume.TRAINER_STATE).is_file():
            random_state.restore()
            trainer._save_checkpoint(trainer.model, trial=None)  # what Trainer saves every save_steps
        raise contract.RewardError(
            _("{error}; stopped at step {step} of {max_steps} with a checkpoint; once that is fixed, continue with: "
              "{command}").format(error=error, step=step, max_steps=trainer.state.max_steps,
                                  command=resume.resume_command())) from None


def install(trainer, metrics_path: str | Path, config=None) -> None:
    """Replace the trainer's default printing with RichProgress, and record metrics."""
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(RichProgress())
    # the clipped advice's command names the run's config file and its max_seq_length (a train.py from before it
    # passed config: the command without them), within the positions of the model loaded
    trainer.add_callback(health.TrainingHealth(  # before JsonlMetrics: its warnings go into that step's row
        config_file=config.path if config else None, run_dir=Path(metrics_path).parent,
        max_seq_length=config.model["max_seq_length"] if config else None,
        positions=model_positions(config, model_config=trainer.model.config.to_dict()) if config else None))
    trainer.add_callback(RewardSeconds(trainer))  # before JsonlMetrics too
    trainer.add_callback(JsonlMetrics(metrics_path))
    trainer.add_callback(traces.CompletionTraces(trainer, Path(metrics_path).parent / traces.TRACES_FILE))
