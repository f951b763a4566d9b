"""A run's metrics.jsonl: reading it, the reward trend, and the reward plot."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

METRICS_FILE = "metrics.jsonl"


def read_metrics(path: str | Path) -> list[dict]:
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def reward_trend(rows: list[dict], window: int = 10) -> dict:
    """Mean reward of the first and last ``window`` logged training steps."""
    rewards = [row["reward"] for row in rows if "reward" in row]
    if not rewards:
        return {"steps": 0}
    first, last = rewards[:window], rewards[-window:]
    return {
        "steps": len(rewards),
        "first_mean_reward": statistics.fmean(first),
        "last_mean_reward": statistics.fmean(last),
        "gain": statistics.fmean(last) - statistics.fmean(first),
    }


def plot_metrics(rows: list[dict], png: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps_logged = [row for row in rows if "reward" in row]  # training steps (not the final summary log)
    steps = [row["step"] for row in steps_logged]
    figure, (reward_axis, second_axis) = plt.subplots(1, 2, figsize=(10, 3.5))
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
    figure.savefig(png, dpi=100)
    plt.close(figure)
    return Path(png)
