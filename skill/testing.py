"""Helpers for plugin authors' tests: check a reward against the reward contract in one call.

    from grpo_skill.testing import check_reward

    def test_my_reward():
        scores = check_reward("my_reward", completions=["</think>42", "no idea"], answer="42")
        assert scores == [1.0, 0.0]

``check_reward`` builds the reward from the registry (or takes a ``Reward``), calls it the way TRL's
GRPOTrainer does, once with the completions as strings and once as chat messages, and raises
``RewardError`` when it breaks the contract: a score count that differs from the completions', a score that is
no finite number or ``None``, an exception, or different scores for the same text in the two forms.

A completion is read differently when the chat template opens the thinking block (a completion without
``</think>`` then has no answer yet), so scores depend on the tokenizer. ``project=PATH`` scores as that project
trains: its rewards.py, its [[rewards]] params, its preset with its [grpo], and its model's tokenizer and chat
template (the preset's template when the model is not on this machine); ``preset=NAME`` does the same for a preset.
With neither, the tiny tokenizer is used, whose template opens ``<think>``: a ``TokenizerWarning`` says so when
completions without ``</think>`` are scored that way.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

from .core.i18n import _
from .core.completions import completion_text
from .core.contract import RewardError
from .core.registry import Reward

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


class TokenizerWarning(UserWarning):
    """check_reward scored with a tokenizer that may not read completions as the user's run does."""


def check_reward(reward: str | Reward, completions: Sequence[Any] | None = None, *, prompts=None,
                 completion_ids=None, tokenizer: Any = "auto", params: Mapping[str, Any] | None = None,
                 preset=None, project=None, both_forms: bool = True, **columns) -> list[float | None]:
    """Score ``completions`` (default: a set of awkward ones) with ``reward`` (a registered name or a Reward);
    returns the scores, as floats and Nones, or raises RewardError naming what breaks the contract.

    ``columns`` are dataset columns: a list (one value per completion) or one value for all. ``project``: a
    project folder (or its config.toml) to score as it trains; ``preset``: a preset name or object. ``tokenizer``:
    "auto" (the project's or preset's model's when given, else "tiny", the locally built one), "tiny", a path, a
    tokenizer object, or None (no completion_ids then, unless given). ``both_forms``: also call with chat-message
    completions and require the same scores.
    """
    from .advisors.rewardtokenizer import load_tokenizer
    from .core import plugins

    config = None
    if project is not None:
        from .core import project as projects

        config = projects.load(project)  # registers its rewards.py
    if isinstance(reward, str):
        reward = plugins.get_reward(reward)
    if isinstance(preset, str):
        preset = plugins.get_preset(preset)
    grpo = {}  # the project's [grpo], over its preset's, as the run's rewards see them
    if config is not None:
        grpo = {} if preset else dict(config.grpo)
        preset = preset or config.preset
        configured = next((dict(choice.params) for choice in config.rewards if choice.name == reward.name), {})
        params = {**configured, **(params or {})}
    how = None  # what to say about the tokenizer when it was chosen here ("auto")
    if isinstance(tokenizer, str) and tokenizer == "auto":
        tokenizer, how = _run_tokenizer(preset, config)
    if isinstance(tokenizer, str):
        tokenizer = load_tokenizer(tokenizer)
    chosen = completions is not None  # the awkward defaults lack </think> on purpose
    completions = list(DEFAULT_COMPLETIONS if completions is None else completions)
    texts = [completion_text(c) for c in completions]
    if completion_ids is None and tokenizer is not None:
        completion_ids = [tokenizer.encode(text, add_special_tokens=False) for text in texts]
    prompts = list(prompts) if prompts is not None else [""] * len(completions)
    given = {key: list(value) if _per_completion(value) else [value] * len(completions)
             for key, value in columns.items()}
    for key, values in given.items():
        if len(values) != len(completions):
            raise ValueError(_("column {key!r} has {count} values for {total} completions").format(
                key=key, count=len(values), total=len(completions)))
    if chosen and how is not None and config is None and preset is None:
        _warn_unfinished_thinking(texts, tokenizer, how)
    try:
        return _score(reward, tokenizer, preset, params, prompts, completions, completion_ids, given, both_forms,
                      texts, grpo)
    except RewardError as error:
        if how is None:
            raise
        raise RewardError(_("{error} (scored with {tokenizer})").format(error=error, tokenizer=how)) from error


def _run_tokenizer(preset, config) -> tuple[str | None, str]:
    """(what to load, what to say about it): the run's model's tokenizer when a project or preset is given and the
    model is on this machine, None (the preset's template) when it is not; the tiny one when neither is given."""
    from .advisors.rewardtokenizer import run_tokenizer

    if config is None and preset is None:
        return "tiny", _("the tiny tokenizer (no project= or preset= given)")
    spec, how = run_tokenizer(None, preset, config, preset.name)
    if spec is None:
        how = _("no tokenizer: {model} is not on this machine, so no completion_ids are made and the chat "
                "template is the preset's ({opens}); pass tokenizer=PATH for a local copy's").format(
            model=config.model["name"] if config is not None else preset.model_id,
            opens=_("opens <think>") if preset.template_opens_think else _("no <think>"))
    return spec, how


def _per_completion(value) -> bool:
    """A list, tuple or dataset column (one value per completion); a string or an object is one value for all."""
    return (hasattr(value, "__len__") and hasattr(value, "__iter__")
            and not isinstance(value, (str, bytes, Mapping)))


def _warn_unfinished_thinking(texts: list[str], tokenizer, how: str) -> None:
    """The default tiny tokenizer opens the thinking block: say so when that changes how completions are read."""
    from .core.registry import RewardContext

    unfinished = [index for index, text in enumerate(texts) if "</think>" not in text]
    if unfinished and RewardContext(tokenizer=tokenizer).template_opens_think:
        warnings.warn(TokenizerWarning(_(
            "check_reward scored with {tokenizer}, whose chat template opens <think>: completions {indexes} have no "
            "</think>, so rewards read them as unfinished thinking. Pass project=PATH (or preset=NAME) to score as "
            "your run does").format(tokenizer=how, indexes=", ".join(map(str, unfinished)))), stacklevel=3)


def _score(reward, tokenizer, preset, params, prompts, completions, completion_ids, given, both_forms, texts,
           grpo):
    from .advisors.grposcoring import TrainerLog, call_like_trl

    func = reward.build(tokenizer=tokenizer, preset=preset, params=params, grpo=grpo)
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
