"""Run-time helpers for a generated project's train.py, light enough to use before unsloth is imported."""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

from .config import LOCAL_DATA_SUFFIXES, ConfigError, ProjectConfig
from .i18n import _

METRICS_FILE = "metrics.jsonl"


def cuda_available() -> bool:
    import torch  # torch before unsloth is fine; transformers/TRL/peft are not

    return torch.cuda.is_available()


def bf16_supported() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def choose_backend(requested: str) -> str:
    """"unsloth" or "trl": auto takes Unsloth when a CUDA GPU and the unsloth package are both there."""
    has_unsloth = importlib.util.find_spec("unsloth") is not None
    if requested == "trl":
        return "trl"
    if requested == "unsloth":
        if not cuda_available():
            raise ConfigError(_("model.backend = 'unsloth' needs a CUDA GPU; set backend = 'trl' (or 'auto') here"))
        if not has_unsloth:
            raise ConfigError(
                _("model.backend = 'unsloth' but unsloth is not installed; pip install 'grpo-skill[unsloth]'")
            )
        return "unsloth"
    return "unsloth" if has_unsloth and cuda_available() else "trl"


def check_prompt_lengths(prompt_lengths: list[int], config: ProjectConfig) -> None:
    """TRL does not truncate prompts: the longest prompt plus a full completion must fit the model."""
    longest = max(prompt_lengths)
    completion = config.grpo["max_completion_length"]
    limit = config.model["max_seq_length"]
    if longest + completion > limit:
        raise ConfigError(
            _("model.max_seq_length ({limit}) is below the longest prompt ({longest} tokens) + "
              "grpo.max_completion_length ({completion}); raise max_seq_length to {needed} "
              "or shorten the prompts").format(limit=limit, longest=longest, completion=completion,
                                               needed=longest + completion)
        )


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


def has_bitsandbytes() -> bool:
    return importlib.util.find_spec("bitsandbytes") is not None


def load_dataset(config: ProjectConfig):
    """The configured split of ``dataset.path``: a local file, or a hub dataset. Imports datasets: call it
    after unsloth."""
    import datasets

    data_file = config.dataset_file()
    if data_file:
        loaded = datasets.load_dataset(LOCAL_DATA_SUFFIXES[data_file.suffix], data_files=str(data_file))
    else:
        loaded = datasets.load_dataset(config.dataset["path"])
    return loaded[config.dataset.get("split", "train")]


def quantization_config(config: ProjectConfig, dtype):
    """bitsandbytes 4-bit settings when ``model.load_in_4bit`` and a CUDA GPU; else None (full precision)."""
    if not (config.model["load_in_4bit"] and cuda_available()):
        return None
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
