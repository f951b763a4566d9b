"""Sampling and scoring as a GRPO step does it, for what samples outside training: evaluate.py and `grpo-skill probe`.

TRL 1.14's GRPOTrainer (without vLLM) tokenizes the dataset's chat-rendered prompts with the tokenizer's defaults,
samples with a GenerationConfig built from ``[grpo]`` (temperature, top_p, top_k, min_p, repetition_penalty,
generation_kwargs over them, max_completion_length new tokens, the model's and the tokenizer's eos), cuts each
completion after its first eos, decodes it without special tokens, and calls each reward with ``prompts``,
``completions``, ``completion_ids``, every other dataset column, ``trainer_state``, ``log_extra`` and
``log_metric``. The same here, so that what evaluate.py and the probe report is what training sees. The prompts
themselves come from ``data.chat_dataset``, as train.py builds its dataset.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import fields

from ..core.project import ProjectConfig

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_completion_length")


def grpo_setting(config: ProjectConfig, name: str):
    """``[grpo] name``, or GRPOConfig's own default when config.toml leaves it out."""
    if name in config.grpo:
        return config.grpo[name]
    from trl import GRPOConfig

    return next(field.default for field in fields(GRPOConfig) if field.name == name)


def sampling_settings(config: ProjectConfig) -> dict:
    """The ``[grpo]`` settings a GRPO step samples with (GRPOConfig's defaults filling the gaps), as reported."""
    settings = {name: grpo_setting(config, name) for name in SAMPLING_FIELDS}
    if config.grpo.get("generation_kwargs"):
        settings["generation_kwargs"] = dict(config.grpo["generation_kwargs"])
    return settings


def eos_ids(model, tokenizer) -> list[int]:
    """The tokens that end a completion: the model's generation eos, and the tokenizer's first."""
    eos = model.generation_config.eos_token_id
    eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    return eos if tokenizer.eos_token_id in eos else [tokenizer.eos_token_id, *eos]


def generation_kwargs(config: ProjectConfig, model, tokenizer) -> dict:
    """GRPOTrainer's generation settings (``max_new_tokens`` included), for ``transformers.GenerationConfig``;
    ``[grpo] generation_kwargs`` over them, as TRL puts it. (``cache_implementation`` only makes it faster.)"""
    settings = sampling_settings(config)
    kwargs = {
        "max_new_tokens": settings.pop("max_completion_length"), "do_sample": True,
        "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": eos_ids(model, tokenizer),
    }
    extra = settings.pop("generation_kwargs", {})
    return {**kwargs, **settings, **extra}


def encode(tokenizer, prompts: list[str]) -> list[list[int]]:
    """The prompts' token ids as GRPOTrainer makes them from text prompts: the tokenizer's defaults (a BOS where it
    adds one)."""
    return tokenizer(text=prompts)["input_ids"]


def generate(model, tokenizer, prompt_ids: list[list[int]], kwargs: dict) -> list[list[int]]:
    """One completion per prompt, cut after its first eos, sampled in one batch left-padded as GRPOTrainer pads
    it. ``kwargs`` from ``generation_kwargs``."""
    import torch
    from transformers import GenerationConfig

    width = max(map(len, prompt_ids))
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(ids)) + list(ids) for ids in prompt_ids], device=model.device)
    attention_mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompt_ids],
                                  device=model.device)
    with torch.no_grad():
        output = model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                generation_config=GenerationConfig(**kwargs))
    eos = eos_ids(model, tokenizer)  # GRPOTrainer cuts at these, whatever generation_kwargs says
    return [cut_after_eos(row, eos) for row in output[:, width:].tolist()]


def cut_after_eos(row: list[int], eos: list[int]) -> list[int]:
    end = next((i for i, token in enumerate(row) if token in eos), None)
    return row if end is None else row[: end + 1]


def decode(tokenizer, completion_ids: list[list[int]]) -> list[str]:
    return tokenizer.batch_decode(completion_ids, skip_special_tokens=True)


def reward_columns(rows: list[dict]) -> dict[str, list]:
    """The dataset's other columns, one list each, as GRPOTrainer passes them to the rewards."""
    return {key: [row[key] for row in rows] for key in rows[0] if key not in ("prompt", "completion", "completion_ids")}


def call_reward(func, prompts, completions, completion_ids, columns: dict, log_extra=None, log_metric=None):
    """``func`` called with the keyword arguments GRPOTrainer passes (awaited when it is async); ``log_extra`` and
    ``log_metric`` receive what the reward logs (dropped when not given)."""
    from transformers import TrainerState

    kwargs = dict(prompts=prompts, completions=completions, completion_ids=completion_ids, **columns,
                  trainer_state=TrainerState(), log_extra=log_extra or _ignore, log_metric=log_metric or _ignore)
    if inspect.iscoroutinefunction(func):
        return asyncio.run(func(**kwargs))
    return func(**kwargs)


def _ignore(*args) -> None:
    """A reward's log_extra / log_metric call where nothing shows it."""


def score(config: ProjectConfig, reward_funcs: list, rows: list[dict], completions: list[str],
          completion_ids: list[list[int]]) -> tuple[dict[str, list], list[float]]:
    """({reward name: its scores}, the weighted totals): each completion ``i`` answers ``rows[i]`` (a row of
    ``data.chat_dataset``); a reward's None counts as 0 in the total, as GRPO's nansum does."""
    prompts = [row["prompt"] for row in rows]
    columns = reward_columns(rows)
    per_reward = {}
    for choice, func in zip(config.rewards, reward_funcs):
        per_reward[choice.name] = [None if s is None else float(s)
                                   for s in call_reward(func, prompts, completions, completion_ids, columns)]
    totals = [sum(choice.weight * (per_reward[choice.name][i] or 0.0) for choice in config.rewards)
              for i in range(len(completions))]
    return per_reward, totals
