"""A run's output folder across interruptions: its checkpoints, starting, resuming or starting over, and Ctrl-C.

Light (no torch, no transformers): train.py calls :func:`prepare` before the model loads, so that a wrong
``--resume`` or a fresh start over an earlier run costs a second, not a model load.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..core import errors
from ..core.errors import UserError
from ..core.i18n import _
from . import distributed, metrics, traces

CHECKPOINT_PATTERN = re.compile(r"^checkpoint-(\d+)$")  # what transformers' Trainer names them
TRAINER_STATE = "trainer_state.json"  # the last file Trainer writes into a checkpoint
ADAPTER_CONFIG = "adapter_config.json"  # peft's, in every LoRA checkpoint and adapter folder
SUMMARY_FILE = "summary.json"
PLOT_FILE = "reward.png"
ADAPTER_DIR = "adapter"
SAMPLES_FILE = "samples.jsonl"  # evaluate.py's, about this run's adapter
MODEL_CARD = "README.md"  # TRL's, written at each save
TENSORBOARD_DIR = "runs"  # transformers' TensorBoard logs (report_to = ["tensorboard"]), from the first step on
# How each row of a run's JSON-lines files opens (callbacks.JsonlMetrics and traces: its step; evaluate.py: its
# prompt): what tells them from a user's files of the same name.
RUN_ROW_START = b'{"step": '
SAMPLES_ROW_START = b'{"prompt": '
# What a run (and evaluate.py) writes into its output folder, besides the checkpoints: --overwrite removes
# these and nothing else. (TRL's model card, README.md, is rewritten by the next run.)
RUN_FILES = (metrics.METRICS_FILE, traces.TRACES_FILE, SUMMARY_FILE, PLOT_FILE, ADAPTER_DIR, SAMPLES_FILE)
SETTINGS_FILE = "grpo_skill_settings.json"  # in each checkpoint: the settings it was trained with
# What Trainer and peft write into a checkpoint: any one of them tells a checkpoint (cut off while saving, before
# trainer_state.json) from a folder of the user's that bears a checkpoint's name.
CHECKPOINT_FILES = (TRAINER_STATE, ADAPTER_CONFIG, "adapter_model.safetensors", "adapter_model.bin",
                    "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "training_args.bin",
                    "optimizer.pt", "scheduler.pt", "rng_state.pth", SETTINGS_FILE)
# Settings a checkpoint fixes: its weights (model, LoRA), and what its step count means (generations per prompt,
# batch layout, data order). Another value cannot continue it.
FIXED_SETTINGS = ("model.name", "model.adapter", "model.load_in_4bit", "grpo.num_generations",
                  "grpo.per_device_train_batch_size", "grpo.gradient_accumulation_steps", "grpo.steps_per_generation",
                  "grpo.generation_batch_size", "grpo.seed", "grpo.data_seed", "processes")
# Settings the checkpoint's optimizer state carries: Trainer restores them over config.toml's, so a new value
# would be ignored without a word.
OPTIMIZER_SETTINGS = ("grpo.learning_rate", "grpo.optim", "grpo.optim_args", "grpo.weight_decay", "grpo.adam_beta1",
                      "grpo.adam_beta2", "grpo.adam_epsilon")
# A setting whose value a run resolves ("auto"): each checkpoint also records what it resolved to, and that is what
# must not change (the literal may, e.g. "auto" -> false to hold the weights as before). Checkpoints from before
# this was recorded are compared by the literal.
RESOLVED_SETTINGS = {"model.load_in_4bit": "model.load_in_4bit (as this run took it)"}
# What "auto" generation split the micro-batches into on this run's GPU: the same optimizer step in other passes, so a
# checkpoint continues under another split; a change is said, compared only where both runs recorded it.
TAKEN_MICRO_BATCHES = "grpo micro-batches (as this run took them)"
TARGET_MODULES = "lora.target_modules"  # compared by the modules it picks, as the LoRA check compares them
# How a run was started, not what it trains: free to differ (compile_layers: the same layers in fused kernels; a
# checkpoint from before it existed recorded none)
FREE_SETTINGS = ("grpo.output_dir", "grpo.resume_from_checkpoint", "lora.gradient_checkpointing", "model.backend",
                 "model.compile_layers")
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a program stopped by Ctrl-C
# Under accelerate launch/torchrun, Ctrl-C reaches each process twice: from the terminal, and forwarded by the
# launcher a moment later. Within this many seconds a second one is that same Ctrl-C, not the user's second.
FORWARDED_SIGINT_S = 2.0


class ResumeError(UserError):
    """--resume, --overwrite or a fresh start that does not fit what the output folder holds."""


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int


@dataclass(frozen=True)
class Start:
    """How train.py starts: from scratch (checkpoint None) or from a checkpoint."""

    checkpoint: Checkpoint | None = None

    @property
    def resume_from(self) -> str | None:
        """For ``trainer.train(resume_from_checkpoint=...)``."""
        return str(self.checkpoint.path) if self.checkpoint else None

    @contextmanager
    def checkpoint_must_fit(self):
        """Around ``trainer.train``: a checkpoint whose weights do not fit the model (another model, or a LoRA
        shape that lora_shape could not tell) ends in one line instead of torch's list of every tensor."""
        try:
            yield
        except RuntimeError as error:
            if self.checkpoint is None or "size mismatch" not in str(error):
                raise
            # torch lists every tensor: the first one's name is enough
            first = next(line.strip() for line in str(error).splitlines() if "size mismatch" in line)
            raise ResumeError(
                _("{checkpoint} does not fit this run's model and LoRA ({first}); resume with the model and [lora] "
                  "it was trained with, or start over with --overwrite").format(
                    checkpoint=self.checkpoint.path, first=first.split(":")[0])) from None


def _named_as_checkpoints(output_dir: Path) -> list[Checkpoint]:
    """Every folder named as Trainer names its checkpoints, oldest step first."""
    if not output_dir.is_dir():
        return []
    found = []
    for path in output_dir.iterdir():
        match = CHECKPOINT_PATTERN.match(path.name)
        if match and path.is_dir():
            found.append(Checkpoint(path, int(match.group(1))))
    return sorted(found, key=lambda checkpoint: checkpoint.step)


def _saved_by_trainer(path: Path) -> bool:
    """Whether a checkpoint-N folder is a checkpoint, complete or cut off while saving: it holds a file that Trainer
    or peft writes there, or nothing (made, then killed). Else it is someone's folder of that name."""
    try:
        names = {entry.name for entry in path.iterdir()}
    except OSError:  # unreadable: taken for what its name says, as before
        return True
    return (not names or not names.isdisjoint(CHECKPOINT_FILES)
            or b"\nlibrary_name: peft\n" in _head(path / MODEL_CARD, 512))  # peft's card, the first file it writes


def checkpoint_dirs(output_dir: Path) -> list[Checkpoint]:
    """Every checkpoint folder, complete or not, oldest step first."""
    return [checkpoint for checkpoint in _named_as_checkpoints(output_dir) if _saved_by_trainer(checkpoint.path)]


def _not_checkpoints(output_dir: Path) -> list[Path]:
    """Folders named as checkpoints that hold none."""
    return [checkpoint.path for checkpoint in _named_as_checkpoints(output_dir)
            if not _saved_by_trainer(checkpoint.path)]


def is_complete(checkpoint: Checkpoint) -> bool:
    # Trainer writes the model, optimizer, scheduler and RNG state first and trainer_state.json last: a
    # checkpoint without it was cut off while saving.
    return (checkpoint.path / TRAINER_STATE).is_file()


def last_checkpoint(output_dir: Path) -> Checkpoint | None:
    """The newest complete checkpoint."""
    return next((c for c in reversed(checkpoint_dirs(output_dir)) if is_complete(c)), None)


def steps_done(output_dir: Path) -> int:
    """The step --resume continues from: the newest complete checkpoint's (0 without one)."""
    checkpoint = last_checkpoint(Path(output_dir))
    return checkpoint.step if checkpoint else 0


def finished_step(output_dir: Path) -> int | None:
    """The step at which a run ended and wrote its summary, or None (no summary.json, or one that is not
    train.py's: every one of those names its adapter and metrics file, and its steps)."""
    try:
        summary = json.loads((output_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(summary, dict) and {"adapter", "metrics"} <= summary.keys()):
        return None
    step = summary.get("global_step", summary.get("steps"))  # "steps": from before global_step was written
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _head(path: Path, size: int) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:  # missing, or a folder
        return b""


def is_main_process() -> bool:
    """Rank 0 of a multi-process launch (torchrun and accelerate set RANK), or a single process: the one that
    changes the output folder."""
    return distributed.is_main_process()


def has_run(output_dir: Path) -> bool:
    """Whether ``output_dir`` holds a run (train.py's, or sft.py's, whose metrics are alike): told by what a run
    writes there, not by a file's name alone, so that a folder of the user's with a summary.json is not one."""
    rows = (output_dir / metrics.METRICS_FILE, output_dir / traces.TRACES_FILE)
    return (bool(checkpoint_dirs(output_dir)) or finished_step(output_dir) is not None
            or any(_head(path, len(RUN_ROW_START)) == RUN_ROW_START for path in rows))


def _left_to_a_run(entry: Path) -> bool:
    """An entry of a folder without a run that a run there leaves alone, or may write over as its own."""
    if entry.name.startswith("."):  # a run writes nothing hidden (.gitkeep, .DS_Store; --overwrite's scratch folder)
        return True
    if entry.is_dir():
        # a run of its own (sft.py's outputs/sft, --smoke's outputs/smoke), or what one that failed before its first
        # step leaves: an empty folder, TensorBoard's runs/ of event files
        files = [path for path in entry.rglob("*") if path.is_file()]
        return has_run(entry) or not files or (entry.name == TENSORBOARD_DIR and all(
            path.name.startswith("events.out.tfevents.") for path in files))
    # TRL's model card, left behind by a run that --overwrite removed and that stopped before its first step
    return entry.name == MODEL_CARD and b"\n- trl\n" in _head(entry, 512)


def others_files(output_dir: Path) -> list[str]:
    """What a folder that holds no run holds besides what a run leaves alone: files of the user's, which a run
    there would be written among, and over where their names are a run's (README.md, adapter, summary.json)."""
    if not output_dir.is_dir() or has_run(output_dir):
        return []
    return sorted(entry.name for entry in output_dir.iterdir() if not _left_to_a_run(entry))


def refuse_others_folder(output_dir: Path, choose: str) -> None:
    """Refuse to write a run into a folder that is not empty and holds no run: it is someone's own, and nothing
    there (not --overwrite either) may be written over; or into a run's folder with a checkpoint-N folder that holds
    no checkpoint, which Trainer would write into and remove. ``choose``: the setting that picks another folder."""
    others = others_files(Path(output_dir))
    if others:
        names = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise ResumeError(_("{dir} is not empty and holds no run ({names}); a run writes its files there (README.md, "
                            "adapter, ...) over any of the same name: choose a new or empty folder with {choose}")
                          .format(dir=output_dir, names=names, choose=choose))
    posing = _not_checkpoints(Path(output_dir))
    if posing:
        raise ResumeError(_("{path} holds no checkpoint (no trainer_state.json, adapter or weights), but Trainer takes "
                            "any folder of that name for one, to save into or delete as an older checkpoint: rename "
                            "it or move it out, or choose another folder with {choose}").format(
            path=posing[0], choose=choose))


def samples_file(adapter_dir: Path) -> Path:
    """Where evaluate.py writes its samples: beside the adapter, over an earlier samples.jsonl of its own but
    never over a file of the user's (checked before the model loads)."""
    path = Path(adapter_dir).parent / SAMPLES_FILE
    if path.is_dir() or (path.exists() and path.stat().st_size
                         and _head(path, len(SAMPLES_ROW_START)) != SAMPLES_ROW_START):
        raise ResumeError(_("{path} is not evaluate.py's, which writes its samples there (beside the adapter): move "
                            "it, or pass --adapter a copy of the adapter in another folder").format(path=path))
    return path


def lora_shape(config) -> dict:
    """The rank and target modules of the adapter a run trains, which give its weights their shapes: those of
    [model] adapter when training continues from one (it keeps its own), else [lora]'s. ``layers``: the model's
    modules (None where it is not on this machine), for comparing target modules that name no layers ("all-linear")
    with ones that do."""
    from .model import adapter_dir  # light: no torch

    @functools.lru_cache(maxsize=None)  # asked only where a comparison needs them, once (a child process lists them)
    def layers():
        from . import modelfiles

        folder = modelfiles.model_folder(config)
        return modelfiles.layers(folder) if folder is not None else None

    adapter = adapter_dir(config)
    if adapter is not None:
        saved = json.loads((adapter / ADAPTER_CONFIG).read_text(encoding="utf-8"))
        return {"r": saved.get("r"), "target_modules": saved.get("target_modules"), "source": str(adapter),
                "layers": layers}
    return {"r": config.lora["r"], "target_modules": config.lora["target_modules"], "source": "[lora]",
            "layers": layers}


def _names_or_pattern(value) -> bool:
    """target_modules as peft takes them: a list of names, or a string ("all-linear", or a regular expression)."""
    return isinstance(value, str) or isinstance(value, list) and all(isinstance(name, str) for name in value)


def _targets_shown(targets) -> str:
    return str(sorted(targets)) if isinstance(targets, list) else json.dumps(targets)


def _plain(specs) -> bool:
    """Whether target_modules ``specs`` are all lists of plain names ("q_proj"), which need no model to compare."""
    return all(isinstance(spec, list) and not any("." in name for name in spec) for spec in specs)


def _picks(specs, layers) -> list[set] | None:
    """The modules each of target_modules ``specs`` picks: plain names as they are, the rest ("all-linear", a
    pattern, whole names) in the model (``layers``: lora_shape's, asked only then); None where that cannot be told
    (no target_modules peft takes, or the model's modules not on this machine)."""
    from .model import lora_modules  # light: no torch

    if not all(map(_names_or_pattern, specs)):
        return None
    if _plain(specs):
        return [set(spec) for spec in specs]
    found = layers() if layers is not None else None
    return None if found is None else [lora_modules(found, spec) for spec in specs]


def _targets_change(saved: dict, shape: dict) -> str | None:
    """``target_modules OLD (now NEW)`` where a saved adapter does not train the modules asked for, else None.
    Unsloth trains some of them whole rather than through LoRA (lm_head, embed_tokens) and lists those under
    modules_to_save, not target_modules. Plain names are compared as they are; the rest by the modules each picks in
    the model: peft saves "all-linear" as the whole names it stands for ("model.layers.0.mlp.up_proj", ...), or from
    20 of them on as their shortest distinct ends ("up_proj", ...)."""
    from .model import lora_modules  # light: no torch

    targets, wanted, whole = saved.get("target_modules"), shape["target_modules"], saved.get("modules_to_save") or []
    picks = _picks((targets, wanted, whole), shape.get("layers"))
    if picks is None:  # not a LoRA checkpoint's (Trainer says what is wrong with it), or no model here to tell by
        return None  # (loading the checkpoint says)
    picked, asked, kept = picks
    if picked <= asked <= picked | kept:
        return None
    shown = _targets_shown(targets)
    if not _plain((targets, wanted, whole)) and picked == lora_modules(shape["layers"](), "all-linear"):
        shown = _targets_shown("all-linear")
    return f"target_modules {shown} (now {_targets_shown(wanted)})"


def _check_lora_fits(checkpoint: Checkpoint, shape: dict) -> None:
    """Refuse, before the model loads, a checkpoint whose adapter has another rank or other target modules: its
    weights cannot load into this run's adapter."""
    try:
        saved = json.loads((checkpoint.path / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # not a readable LoRA checkpoint; Trainer says what is wrong with it
    if not isinstance(saved, dict):
        return
    differences = []
    if isinstance(saved.get("r"), int) and isinstance(shape["r"], int) and saved["r"] != shape["r"]:
        differences.append(f"r {saved['r']} (now {shape['r']})")
    targets = _targets_change(saved, shape)
    if targets:
        differences.append(targets)
    if differences:
        raise ResumeError(
            _("{checkpoint} was trained with LoRA {differences}, not what {source} says now: resume with the values "
              "it was trained with, or start over with --overwrite").format(
                checkpoint=checkpoint.path, differences=", ".join(differences), source=shape["source"]))


def run_settings(config, held_4bit: bool | None = None, micro_batches: dict | None = None) -> dict:
    """This run's settings as flat ``section.key`` values, the way each checkpoint records them (SETTINGS_FILE);
    ``held_4bit``: whether this run holds its base weights in 4 bits (``load_in_4bit`` resolved); ``micro_batches``:
    the [grpo] micro-batch settings "auto" generation changed ({} where none)."""
    flat = {f"model.{key}": value for key, value in config.model.items()}
    if held_4bit is not None:
        flat[RESOLVED_SETTINGS["model.load_in_4bit"]] = held_4bit
    if micro_batches is not None:
        flat[TAKEN_MICRO_BATCHES] = micro_batches
    flat.update({f"lora.{key}": value for key, value in config.lora.items()})
    flat.update({f"grpo.{key}": value for key, value in config.grpo.items()})
    flat["rewards"] = [{"name": choice.name, "weight": choice.weight, "params": choice.params}
                       for choice in config.rewards]
    flat["processes"] = distributed.world_size()
    return json.loads(json.dumps(flat, default=str))


def _shown(value) -> str:
    return json.dumps(value, ensure_ascii=False) if value is not None else _("(unset)")


def _compare_settings(checkpoint: Checkpoint, now: dict, layers=None) -> list[str]:
    """Refuse what a checkpoint cannot continue with (FIXED_SETTINGS, LoRA) or would silently override
    (OPTIMIZER_SETTINGS); return the other changes, which this run applies, as ``key old -> new``. target_modules
    are compared as the LoRA check compares them, by the modules they pick (``layers``: lora_shape's): "all-linear"
    for the layers it stands for, named, is no change; by their words where the model's modules are not here."""
    try:
        then = json.loads((checkpoint.path / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # a checkpoint from before grpo-skill recorded its settings: nothing to compare with
    changed = sorted(key for key in set(then) | set(now)
                     if key not in FREE_SETTINGS and then.get(key) != now.get(key))
    if TARGET_MODULES in changed:
        picks = _picks((then.get(TARGET_MODULES), now.get(TARGET_MODULES)), layers)
        if picks is not None and picks[0] == picks[1]:
            changed.remove(TARGET_MODULES)
    fixed_keys = set(FIXED_SETTINGS)
    for literal, resolved in RESOLVED_SETTINGS.items():
        if resolved in then and resolved in now:  # the resolved value is fixed, the literal may change
            fixed_keys = (fixed_keys - {literal}) | {resolved}
        elif resolved in changed:  # recorded on one side only: compared by the literal
            changed.remove(resolved)
    if TAKEN_MICRO_BATCHES in changed and not (TAKEN_MICRO_BATCHES in then and TAKEN_MICRO_BATCHES in now):
        changed.remove(TAKEN_MICRO_BATCHES)  # a checkpoint from before it was recorded

    def change(key):
        return f"{key} {_shown(then.get(key))} (now {_shown(now.get(key))})"

    fixed = [change(key) for key in changed if key in fixed_keys or key.startswith("lora.")]
    if fixed:
        raise ResumeError(
            _("{checkpoint} was trained with {changes}, which a checkpoint cannot change: set them back to resume, "
              "or start over with --overwrite").format(checkpoint=checkpoint.path, changes=", ".join(fixed)))
    kept = [key for key in changed if key in OPTIMIZER_SETTINGS]
    if kept:
        raise ResumeError(
            _("{checkpoint} was trained with {changes}: its optimizer state keeps the old value, so the new one would "
              "be ignored; set it back to resume, or start over with --overwrite to train with the new one").format(
                checkpoint=checkpoint.path, changes=", ".join(change(key) for key in kept)))
    return [f"{key} {_shown(then.get(key))} -> {_shown(now.get(key))}" if key != "rewards"
            else f"rewards {_rewards_shown(then.get(key))} -> {_rewards_shown(now.get(key))}" for key in changed]


def _rewards_shown(rewards) -> str:
    """``name:weight{params}, ...``: what a change of [[rewards]] shows."""
    return ", ".join(f"{reward['name']}:{reward['weight']:g}" + (json.dumps(reward["params"], ensure_ascii=False)
                                                                  if reward.get("params") else "")
                     for reward in rewards or ())


def prepare(output_dir: str | Path, *, resume: bool = False, overwrite: bool = False, max_steps: int | None = None,
            grpo: dict | None = None, lora: dict | None = None, settings: dict | None = None) -> Start:
    """Decide how a run starts in ``output_dir``, and make the folder ready for it; raises ResumeError (one line)
    when the choice does not fit what is there. Nothing is changed before every check has passed.

    - fresh (no flag): only into a folder without an earlier run, whose history it would otherwise bury;
    - ``resume``: from the newest complete checkpoint; metrics.jsonl and completions.jsonl are rewound to that step;
    - ``overwrite``: removes what the earlier run wrote (RUN_FILES and checkpoints), nothing else.

    None of them writes into a folder that is not empty and holds no run: its files are someone's own.

    ``lora`` (from :func:`lora_shape`): the adapter this run trains; a checkpoint of another shape is refused.
    ``settings`` (from :func:`run_settings`): compared with the checkpoint's; see :func:`_compare_settings`.
    """
    output_dir = Path(output_dir)
    if grpo and grpo.get("resume_from_checkpoint") is not None:
        raise ResumeError(_("grpo.resume_from_checkpoint: remove it from [grpo]; to continue a run, use "
                            "python train.py --resume (it takes the last checkpoint in grpo.output_dir)"))
    if resume and overwrite:
        raise ResumeError(_("--resume and --overwrite: choose one (continue the run, or start it over)"))
    if is_main_process() or not overwrite:  # under a launch the main process may be removing the run already
        refuse_others_folder(output_dir, "--output-dir")
    last = last_checkpoint(output_dir)
    finished = finished_step(output_dir)
    if overwrite:
        if is_main_process():
            remove_run(output_dir)
        return Start()
    if resume:
        if last is None and has_run(output_dir):  # a fresh start would refuse it too: point past both
            raise ResumeError(_("{dir} holds a run without a checkpoint to resume from: start over with "
                                "--overwrite instead of --resume").format(dir=output_dir))
        if last is None:
            raise ResumeError(_("{dir} has no checkpoint to resume from; start the run without --resume").format(
                dir=output_dir))
        if max_steps is not None and 0 < max_steps <= last.step:  # Trainer would still train one step
            raise ResumeError(
                _("the run in {dir} already reached step {step} (max_steps {max_steps}); to train further, raise "
                  "--max-steps above {step}, or start over with --overwrite").format(
                    dir=output_dir, step=last.step, max_steps=max_steps))
        if lora is not None:
            _check_lora_fits(last, lora)
        applied = (_compare_settings(last, settings, lora.get("layers") if lora is not None else None)
                   if settings is not None else [])
        if is_main_process():
            metrics.rewind(output_dir, last.step)
            metrics.rewind(output_dir / traces.TRACES_FILE, last.step)
            print(_("resuming from {checkpoint} (step {step})").format(checkpoint=last.path, step=last.step),
                  file=sys.stderr)
            if applied:
                print(_("changed since that checkpoint, and applied from here on: {changes}").format(
                    changes="; ".join(applied)), file=sys.stderr)
            for cut_off in checkpoint_dirs(output_dir):
                if cut_off.step > last.step:  # killed while saving; the resumed run saves that step again
                    shutil.rmtree(cut_off.path)
        return Start(last)
    if has_run(output_dir):
        if last is not None and (finished is None or last.step > finished):
            raise ResumeError(
                _("{dir} holds a run stopped at step {step}: continue it with --resume, or start over with "
                  "--overwrite").format(dir=output_dir, step=last.step))
        if finished is not None:
            raise ResumeError(
                _("{dir} holds a finished run ({step} steps): start over with --overwrite, or choose another "
                  "--output-dir").format(dir=output_dir, step=finished))
        raise ResumeError(
            _("{dir} holds a run that stopped before its first checkpoint: start over with --overwrite, or choose "
              "another --output-dir").format(dir=output_dir))
    return Start()


def remove_run(output_dir: Path, choose: str = "--output-dir") -> None:
    """Move the earlier run aside into one hidden folder, all of it or (on the first failure, moved back) none of
    it, then delete that folder: a folder that cannot be written keeps the whole earlier run. ``choose``: the
    setting that picks another folder."""
    removed = [checkpoint.path for checkpoint in checkpoint_dirs(output_dir)]
    removed += [output_dir / name for name in RUN_FILES if (output_dir / name).exists()]
    if not removed:
        return
    try:
        aside = Path(tempfile.mkdtemp(prefix=".overwrite-", dir=output_dir))
    except OSError as error:
        raise ResumeError(_("--overwrite: cannot remove the earlier run in {dir} ({reason}); nothing was removed: "
                            "make the folder writable, or choose another folder with {choose}").format(
            dir=output_dir, reason=error.strerror or error, choose=choose)) from None
    moved = []
    try:
        for path in removed:
            path.rename(aside / path.name)
            moved.append(path)
    except OSError as error:
        for path in reversed(moved):
            (aside / path.name).rename(path)
        shutil.rmtree(aside, ignore_errors=True)
        raise ResumeError(_("--overwrite: cannot remove {path} ({reason}); nothing was removed: make {dir} writable, "
                            "or choose another folder with {choose}").format(
            path=path, reason=error.strerror or error, dir=output_dir, choose=choose)) from None
    shutil.rmtree(aside, ignore_errors=True)
    if removed:
        print(_("--overwrite: removed the earlier run in {dir} ({names})").format(
            dir=output_dir, names=", ".join(sorted(path.name for path in removed))), file=sys.stderr)


def resume_command(argv: list[str] | None = None) -> str:
    """The command that continues this run: the same arguments, with --resume instead of --overwrite; under
    accelerate launch or torchrun, the launcher's command as the user typed it."""
    argv = list(sys.argv if argv is None else argv)
    kept = [arg for arg in argv[1:] if arg not in ("--resume", "--overwrite")]
    script = [Path(argv[0]).name, *kept, "--resume"]
    if distributed.is_launched():
        launched = distributed.launch_command([argv[0], *kept, "--resume"])
        return shlex.join(launched or ["accelerate", "launch", "--num_processes", str(distributed.world_size()),
                                       *script])
    return shlex.join(["python", *script])


class CtrlC:
    """Ctrl-C (SIGINT) or SIGTERM (what SLURM, Kubernetes and spot preemption send) during training: the first
    finishes the current step, saves a checkpoint and stops (callbacks.SaveAndStopOnCtrlC acts on ``requested``);
    a second one, or one outside training, stops at once. Either way the program ends with exit code 128 + the
    signal's number (130, 143) and one line, without a traceback."""

    def __init__(self, output_dir: str | Path):
        self.output_dir = Path(output_dir)
        self.requested = False
        self.requested_at = 0.0
        self.training = False
        self.signum = signal.SIGINT  # the signal that stopped the run

    def install(self) -> "CtrlC":
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGTERM, self._handle)
        return self

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)

    @contextmanager
    def during_training(self):
        self.training = True
        errors.training_started()
        try:
            yield self
        finally:
            self.training = False

    def _handle(self, signum, frame):
        if self.training and not self.requested:
            self.requested, self.requested_at, self.signum = True, time.monotonic(), signum
            # os.write, not print: a signal handler may run in the middle of another write to stderr
            _say(_("Ctrl-C: saving a checkpoint after this step, then stopping (Ctrl-C again to stop at once)")
                 if signum == signal.SIGINT else
                 _("SIGTERM: saving a checkpoint after this step, then stopping (a second SIGTERM stops at once)"))
            return
        if self.requested and distributed.is_launched() and time.monotonic() - self.requested_at < FORWARDED_SIGINT_S:
            return  # the launcher passing on the same signal
        if not self.requested:
            self.signum = signum
        last = last_checkpoint(self.output_dir)
        by = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        if last is None:
            _say(_("stopped by {signal}; nothing saved").format(signal=by))
        else:
            _say(_("stopped by {signal} without saving; {command} continues from step {step}").format(
                signal=by, command=resume_command(), step=last.step))
        _show_cursor()
        os._exit(128 + int(signum))  # at once: no cleanup that could block, no traceback

    def exit_if_stopped(self, global_step: int, max_steps: int) -> None:
        """After trainer.train(): when Ctrl-C or SIGTERM stopped the run early, say how to continue and exit 130
        or 143 (every process of a multi-process run; the main one says it)."""
        if not self.requested or global_step >= max_steps:
            return
        if distributed.is_main_process():
            print(_("stopped at step {step} of {max_steps}; checkpoint saved; continue with: {command}").format(
                step=global_step, max_steps=max_steps, command=resume_command()), file=sys.stderr)
        distributed.finish(self.exit_code)
        sys.exit(self.exit_code)


def _say(line: str) -> None:
    if not distributed.is_main_process():  # every process of a launch gets the Ctrl-C; one says so
        return
    below_the_bar = "\n" if sys.stderr.isatty() else ""  # the progress bar's line has no newline yet
    os.write(sys.stderr.fileno(), (below_the_bar + line + "\n").encode())


def _show_cursor() -> None:
    # the progress bar hides the terminal's cursor while it draws; os._exit skips its cleanup
    if sys.stderr.isatty():
        os.write(sys.stderr.fileno(), b"\x1b[?25h")
