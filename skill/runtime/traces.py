"""Completion traces: what the model actually wrote, at every logging step, in outputs/completions.jsonl.

The numbers in metrics.jsonl say that the reward rose; the completions say why (a real answer, or a trick that
games a reward). At each logging step ``CompletionTraces`` writes one group of the latest generation batch
(every completion of one prompt, so that the spread GRPO learns from is visible): prompt, completion, each
reward's score, the weighted reward and the advantage. It reads them where GRPOTrainer keeps them for its own
``log_completions`` (TRL 1.14.2: ``trainer._logs``, the last generation batch).

``latest`` reads the file back for ``grpo-skill metrics``. Only ``CompletionTraces`` imports transformers (on
first use), so reading stays light.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .metrics import read_metrics, warn

TRACES_FILE = "completions.jsonl"


def group_rows(trainer, step: int, count: int) -> list[dict]:
    """The first ``count`` completions of the trainer's latest generation batch, one dict each ([] when the
    trainer keeps none: another TRL version)."""
    logs = getattr(trainer, "_logs", None)
    if not isinstance(logs, dict) or not {"prompt", "completion", "rewards", "advantages"} <= set(logs):
        return []
    prompts, completions = list(logs["prompt"]), list(logs["completion"])
    rewards = {name: list(values) for name, values in logs["rewards"].items()}
    advantages = list(logs["advantages"])
    weights = [float(w) for w in trainer.reward_weights.tolist()]
    names = list(trainer.reward_func_names)
    rows = []
    for i in range(min(count, len(completions))):
        scores = {name: _number(rewards[name][i]) if i < len(rewards.get(name, ())) else None for name in names}
        total = sum(w * (scores[name] or 0.0) for w, name in zip(weights, names))
        rows.append({
            "step": step,
            "prompt": prompts[i] if i < len(prompts) else None,
            "completion": completions[i],
            "rewards": scores,
            "reward": total,
            "advantage": _number(advantages[i]) if i < len(advantages) else None,
        })
    return rows


def _number(value) -> float | None:
    """A JSON-safe score: TRL marks a reward's "no opinion" (None) as NaN."""
    value = float(value)
    return value if math.isfinite(value) else None


def _make_class():
    from transformers import TrainerCallback

    class CompletionTraces(TrainerCallback):
        """Appends one group of completions per logging step to ``path``, which resume.prepare has removed for a
        fresh run or rewound to the checkpoint a resumed one starts from."""

        def __init__(self, trainer, path: str | Path, per_step: int | None = None):
            self.trainer = trainer
            self.path = Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.per_step = per_step or trainer.args.num_generations  # one whole group
            self.last_written = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs or "reward" not in logs:
                return
            rows = group_rows(self.trainer, state.global_step, self.per_step)
            batch = tuple(row["completion"] for row in rows)
            if not rows or batch == self.last_written:  # nothing generated since the last log
                return
            self.last_written = batch
            with self.path.open("a", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")

    return CompletionTraces


def __getattr__(name):  # CompletionTraces is made on first use: reading traces needs no transformers
    if name == "CompletionTraces":
        globals()[name] = _make_class()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def latest(run_dir: str | Path, count: int = 3, on_warning=warn) -> list[dict]:
    """The last ``count`` traces of the latest step in ``run_dir``/completions.jsonl; [] when there are none."""
    path = Path(run_dir)
    path = path / TRACES_FILE if path.is_dir() else path
    if not path.is_file():
        return []
    rows = read_metrics(path, on_warning)  # the same reader: a line cut off by a kill is skipped with a warning
    if not rows:
        return []
    last_step = rows[-1].get("step")
    return [row for row in rows if row.get("step") == last_step][:count]
