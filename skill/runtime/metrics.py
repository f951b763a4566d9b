"""A run's metrics.jsonl: reading it, rewinding it to a checkpoint, the reward trend, and the reward plot."""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from pathlib import Path

from ..core.errors import UserError
from ..core.i18n import _

METRICS_FILE = "metrics.jsonl"
# Trainer's last log of a train() call (train_runtime, train_loss, ...): not a training step.
END_OF_TRAINING_KEY = "train_runtime"
# Values that must be numbers wherever a row has them (metrics.jsonl and completions.jsonl).
NUMBER_KEYS = ("step", "reward", "reward_std", "kl")


class MetricsError(UserError):
    """A metrics.jsonl that cannot be read: the message names the line."""


def warn(message: str) -> None:
    print(_("warning: {message}").format(message=message), file=sys.stderr)


def metrics_file(path: str | Path) -> Path:
    path = Path(path)
    return path / METRICS_FILE if path.is_dir() else path


def read_metrics(path: str | Path, on_warning=warn) -> list[dict]:
    """The rows of a run folder's (or a file's) metrics.jsonl. A last line cut off by a killed run (bad JSON, or
    a character cut in half) is skipped with a warning; a broken line before it is an error that names the line,
    and so is a row whose step or reward is not a number."""
    path = metrics_file(path)
    # bytes, split on newlines only: a line is decoded alone (a kill can cut a character in half), and a
    # completion's U+2028 (json.dumps leaves it as it is) does not split a row
    lines = path.read_bytes().splitlines()
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    rows = []
    for index, (number, line) in enumerate(numbered):
        last = index == len(numbered) - 1
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            if not last:
                raise MetricsError(_("{path} line {line} is not UTF-8 text (byte {position}); delete that line, or "
                                     "the file").format(path=path, line=number, position=error.start)) from None
            text = None
        try:
            row = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            _check_numbers(path, number, row)
            rows.append(row)
        elif last:
            on_warning(_("{path} line {line} is cut off (the run was killed while writing it); skipped").format(
                path=path, line=number))
        else:
            raise MetricsError(
                _("{path} line {line} is not a JSON object: {text!r}; delete that line, or the file").format(
                    path=path, line=number, text=text[:60])
            )
    return rows


def _check_numbers(path: Path, number: int, row: dict) -> None:
    # what the summary, the plot and rewinding compute with: a hand-edited row fails here, not in fmean
    for key in NUMBER_KEYS:
        value = row.get(key)
        if key in row and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise MetricsError(_("{path} line {line}: {key!r} is {value}, not a number; fix or delete that "
                                 "line").format(path=path, line=number, key=key, value=json.dumps(value)[:40]))


def rewind(path: str | Path, step: int, on_warning=warn) -> int:
    """Keep only the rows of steps up to ``step`` (a checkpoint's), so that a resumed run logs each later step
    once; also drops the end-of-training rows of earlier train() calls. Returns the rows kept."""
    path = metrics_file(path)
    if not path.is_file():
        return 0
    kept = [row for row in read_metrics(path, on_warning)
            if row.get("step", 0) <= step and END_OF_TRAINING_KEY not in row]
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text("".join(json.dumps(row) + "\n" for row in kept), encoding="utf-8")
    os.replace(scratch, path)  # all or nothing: a kill now leaves the old file or the new one
    return len(kept)


def reward_trend(rows: list[dict], window: int = 10) -> dict:
    """Mean reward of the first and last ``window`` logged rewards (one per step, or one per generation with
    steps_per_generation); a run with fewer than 2 x ``window`` compares its halves (overlapping windows would hide
    what a short run did). ``steps``: how many rewards were logged."""
    logged = [row["reward"] for row in rows if "reward" in row]
    # NaN: a step in which every completion was left out (each reward gave None); it has no mean to compare
    rewards = [reward for reward in logged if math.isfinite(reward)]
    without = {"steps_without_reward": len(logged) - len(rewards)} if len(rewards) < len(logged) else {}
    if not rewards:
        return {"steps": len(logged), **without}
    window = max(1, min(window, len(rewards) // 2))
    first, last = rewards[:window], rewards[-window:]
    return {
        "steps": len(logged),
        **without,
        "first_mean_reward": statistics.fmean(first),
        "last_mean_reward": statistics.fmean(last),
        "gain": statistics.fmean(last) - statistics.fmean(first),
    }


PLOT_SOFTWARE = "grpo-skill metrics"  # in the PNG's Software text: a plot this command drew may be redrawn
PLOT_INCHES, PLOT_DPI = (10, 3.5), 100
PLOT_SIZE = (1000, 350)  # pixels: PLOT_INCHES at PLOT_DPI


def plot_target(png: str | Path) -> Path:
    """``--plot``'s file, refused before anything is read: not a .png name, or a file there that this command
    did not draw (the user's own, never overwritten)."""
    path = Path(png)
    if path.suffix.lower() != ".png":
        raise UserError(_("--plot {path}: the plot is a PNG; give a file name ending in .png").format(path=png))
    if path.exists() and not drawn_by_metrics(path):
        raise UserError(_("--plot {path}: that file exists and is not a plot grpo-skill metrics drew; give another "
                          "name, or delete it to draw there").format(path=png))
    return path


def drawn_by_metrics(path: Path) -> bool:
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:  # no matplotlib either: nothing could have drawn it here
        return False
    try:
        with Image.open(path) as image:
            software, size = str(image.info.get("Software", "")), image.size
    except (UnidentifiedImageError, OSError):
        return False
    # grpo-skill before the tag: matplotlib's own tag on a plot of PLOT_SIZE, this plot's size
    return software == PLOT_SOFTWARE or (software.startswith("Matplotlib") and size == PLOT_SIZE)


def plot_metrics(rows: list[dict], png: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps_logged = [row for row in rows if "reward" in row]  # training steps (not the final summary log)
    steps = [row["step"] for row in steps_logged]
    figure, (reward_axis, second_axis) = plt.subplots(1, 2, figsize=PLOT_INCHES)
    reward_axis.plot(steps, [row["reward"] for row in steps_logged], label="mean reward")
    reward_axis.fill_between(
        steps,
        [row["reward"] - row.get("reward_std", 0) for row in steps_logged],
        [row["reward"] + row.get("reward_std", 0) for row in steps_logged],
        alpha=0.2,
    )
    reward_axis.set(xlabel="step", ylabel="reward", title="Reward")
    # TRL logs the KL only when beta > 0; without it, show how long the completions are instead.
    second, title = ("kl", "KL to the reference") if any("kl" in row for row in rows) else (
        "completions/mean_length", "Mean completion length (tokens)")
    second_axis.plot(steps, [row.get(second, float("nan")) for row in steps_logged], color="tab:red")
    second_axis.set(xlabel="step", ylabel=second.split("/")[-1], title=title)
    figure.tight_layout()
    figure.savefig(png, dpi=PLOT_DPI, metadata={"Software": PLOT_SOFTWARE})
    plt.close(figure)
    return Path(png)
