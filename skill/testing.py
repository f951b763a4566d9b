"""Helpers for plugin authors' tests: check a reward against the reward contract in one call.

    from grpo_skill.testing import check_reward

    def test_my_reward():
        scores = check_reward("my_reward", completions=["</think>42", "no idea"], answer="42")
        assert scores == [1.0, 0.0]

``check_reward`` builds the reward from the registry (or takes a ``Reward``), calls it the way TRL's
GRPOTrainer does, once with the completions as strings and once as chat messages, and raises
``RewardError`` when it breaks the contract: a score count that differs from the completions', a score that is
no finite number or ``None``, an exception, or different scores for the same text in the two forms.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .core.i18n import _
from .core.registry import Reward, RewardError, completion_text

# Completions that trip careless rewards: empty, whitespace, unclosed thinking, unicode, very long.
DEFAULT_COMPLETIONS = (
    "Let me think. 6 x 7 = 42.</think>The answer is 42.",
    "",
    "   ",
    "I am still thinking about it",
    "</think>",
    "Réponse : 四十二 ✓</think>42",
    "word " * 300,
)


def _as_messages(completion) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": completion_text(completion)}]


def check_reward(reward: str | Reward, completions: Sequence[Any] | None = None, *, prompts=None,
                 completion_ids=None, tokenizer: Any = "tiny", params: Mapping[str, Any] | None = None,
                 preset=None, both_forms: bool = True, **columns) -> list[float | None]:
    """Score ``completions`` (default: a set of awkward ones) with ``reward`` (a registered name or a Reward);
    returns the scores, as floats and Nones, or raises RewardError naming what breaks the contract.

    ``columns`` are dataset columns: a list (one value per completion) or one value for all. ``tokenizer``:
    "tiny" (the locally built one, the default), a path, a tokenizer object, or None (no completion_ids then,
    unless given). ``both_forms``: also call with chat-message completions and require the same scores.
    """
    from .core import plugins
    from .advisors.rewardtry import TrainerLog, call_like_trl, load_tokenizer

    if isinstance(reward, str):
        reward = plugins.get_reward(reward)
    if isinstance(preset, str):
        preset = plugins.get_preset(preset)
    if isinstance(tokenizer, str):
        tokenizer = load_tokenizer(tokenizer)
    completions = list(DEFAULT_COMPLETIONS if completions is None else completions)
    texts = [completion_text(c) for c in completions]
    if completion_ids is None and tokenizer is not None:
        completion_ids = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    prompts = list(prompts) if prompts is not None else [""] * len(completions)
    given = {key: list(value) if isinstance(value, (list, tuple)) else [value] * len(completions)
             for key, value in columns.items()}
    for key, values in given.items():
        if len(values) != len(completions):
            raise ValueError(_("column {key!r} has {count} values for {total} completions").format(
                key=key, count=len(values), total=len(completions)))

    func = reward.build(tokenizer=tokenizer, preset=preset, params=params)
    log = TrainerLog()
    scores = call_like_trl(func, prompts, completions, completion_ids, given, log)
    if both_forms and any(isinstance(c, str) for c in completions):
        as_messages = [_as_messages(c) for c in completions]
        again = call_like_trl(func, prompts, as_messages, completion_ids, given, log)
        for index, (first, second) in enumerate(zip(scores, again)):
            if first != second:
                raise RewardError(_(
                    "reward {name!r}: completion {index} scores {first!r} as a string but {second!r} as chat "
                    "messages; read completions with grpo_skill.completion_text. Completion: {text!r}").format(
                        name=reward.name, index=index, first=first, second=second, text=texts[index][:80]))
    return scores
