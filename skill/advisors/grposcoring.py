"""Rewards called and their scores combined the way TRL 1.14's GRPOTrainer does it.

Each reward is called with keyword arguments ``prompts``, ``completions``, ``completion_ids``, every dataset column,
``trainer_state``, ``log_extra`` and ``log_metric``. The weighted total and the advantages follow GRPOTrainer's
``_generate_and_score_completions``: per-reward ``None`` becomes NaN, weighted ``nansum`` (``NaN`` where every
reward abstained), group mean and Bessel-corrected std in float32, ``(total - mean) / (std + 1e-4)`` unless
``scale_rewards = "none"``, NaN advantages set to 0.
"""

from __future__ import annotations

import math

STD_EPSILON = 1e-4  # GRPOTrainer: advantages / (std + 1e-4)


class TrainerLog:
    """What rewards log through TRL's log_extra / log_metric callbacks, kept to be shown."""

    def __init__(self) -> None:
        self.extra: dict[str, list] = {}
        self.metrics: dict[str, float] = {}

    def log_extra(self, column: str, values: list) -> None:
        self.extra[column] = list(values)

    def log_metric(self, name: str, value: float) -> None:
        self.metrics[name] = float(value)


def call_like_trl(func, prompts, completions, completion_ids, columns, log: TrainerLog | None = None):
    """``func`` called with the keyword arguments GRPOTrainer passes (awaited when it is async)."""
    from ..runtime.rollouts import call_reward

    log = log or TrainerLog()
    return call_reward(func, prompts, completions, completion_ids, columns, log.log_extra, log.log_metric)


def _nanstd(tensor):
    """trl.trainer.utils.nanstd: the std ignoring NaNs, with Bessel's correction (NaN for fewer than 2). Its own
    copy because importing TRL's adds 1.2 to 2.2 s and 622 modules to `rewards try` (measured beside torch and
    transformers' TrainerState, which it imports anyway); tests/test_rewards_try.py checks it against TRL's."""
    import torch

    mean = torch.nanmean(tensor, dim=0, keepdim=True)
    variance = torch.nanmean((tensor - mean) ** 2, dim=0, keepdim=True)
    count = torch.sum(~torch.isnan(tensor), dim=0, keepdim=True)
    correction = torch.where(count > 1, count / (count - 1), torch.full_like(count, float("nan"), dtype=torch.float))
    return torch.sqrt(variance * correction).squeeze(0)


def advantages(scores: list[list[float | None]], weights: list[float], groups: list[int],
               scale_rewards: str = "group", aggregation: str = "sum_then_normalize") -> dict:
    """Totals, advantages and per-group mean/std as GRPOTrainer computes them. ``scores[i][k]``: completion i,
    reward k; ``groups[i]``: the group (prompt) of completion i."""
    import torch

    per_func = torch.tensor([[math.nan if s is None else s for s in row] for row in scores], dtype=torch.float32)
    weight = torch.tensor(weights, dtype=torch.float32)
    unscorable = torch.isnan(per_func).all(dim=1)
    members = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    index_of = {group: torch.tensor(rows) for group, rows in members.items()}

    if aggregation == "sum_then_normalize":
        totals = (per_func * weight.unsqueeze(0)).nansum(dim=1)
        totals[unscorable] = math.nan
        mean, std = torch.zeros_like(totals), torch.zeros_like(totals)
        for rows in index_of.values():
            mean[rows] = torch.nanmean(totals[rows])
            if scale_rewards in ("group", "none"):
                std[rows] = _nanstd(totals[rows]) if len(rows) > 1 else 0.0
        if scale_rewards == "batch":
            std[:] = _nanstd(totals) if totals.numel() > 1 else 0.0
        advantage = totals - mean
        if scale_rewards != "none":
            advantage = advantage / (std + STD_EPSILON)
    else:  # normalize_then_sum: each reward normalised in its group, then weighted and normalised over the batch
        normalised = torch.zeros_like(per_func)
        for rows in index_of.values():
            group = per_func[rows]
            group_mean = torch.nanmean(group, dim=0, keepdim=True)
            group_std = _nanstd(group) if len(rows) > 1 else torch.zeros(group.shape[1])
            normalised[rows] = (group - group_mean) / (group_std + STD_EPSILON)
        totals = (normalised * weight.unsqueeze(0)).nansum(dim=1)
        totals[unscorable] = math.nan
        std = (_nanstd(totals) if totals.numel() > 1 else torch.tensor(0.0)).expand_as(totals).clone()
        mean = torch.nanmean(totals).expand_as(totals).clone()
        advantage = (totals - mean) / (std + STD_EPSILON)
    advantage = torch.nan_to_num(advantage, nan=0.0)

    def no_spread(rows) -> bool:  # equal totals in the group: advantages 0, whatever the scaling
        spread = float(_nanstd(totals[rows])) if len(rows) > 1 else math.nan
        return not math.isfinite(spread) or math.isclose(spread, 0.0, abs_tol=1e-8)

    def number(value):
        value = float(f"{float(value):.7g}")  # a float32's digits, not 0.30000001192092896
        return value if math.isfinite(value) else None

    return {
        "totals": [number(v) for v in totals],
        "advantages": [number(v) for v in advantage],
        "groups": {group: {"mean": number(mean[rows[0]]), "std": number(std[rows[0]]),
                           "zero_spread": no_spread(index_of[group])}
                   for group, rows in members.items()},
    }
