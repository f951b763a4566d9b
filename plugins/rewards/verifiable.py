"""Rewards checked against the dataset's answers: accuracy, reasoning_accuracy, cosine_length and kimi_length.

All four read the final answer after ``</think>`` and compare it with the answer column through
``answers`` (math-verify for maths, a normalised text match otherwise). A gold answer that cannot be read
is reported once and its completions get ``None`` (TRL leaves them out), instead of zeroing the group.

TRL's ``accuracy_reward`` and ``reasoning_accuracy_reward`` are not wrapped: they read only LaTeX answers
(``\\boxed{}`` or ``$...$``), so "The answer is 42" scores 0 there. Nor is ``get_cosine_scaled_reward``, which
reads correctness the same way: ``cosine_length`` computes its cosine schedule here, on this correctness.
"""

from __future__ import annotations

import json
import math
import warnings

from grpo_skill import Reward, completion_text, hookimpl
from grpo_skill.errors import MissingColumn, UserError
from grpo_skill.i18n import N_, _

from . import answers

THINK_START = "<think>"


class UnreadableGoldWarning(UserWarning):
    """A gold answer math-verify cannot parse: its completions are left out (None)."""


def opens_think(context) -> bool:
    """The params' ``template_opens_think`` ("auto": the preset's chat template) as a bool."""
    setting = context.params.get("template_opens_think", "auto")
    if setting == "auto":
        return context.template_opens_think
    if isinstance(setting, bool):
        return setting
    raise UserError(_("template_opens_think = {value!r}: use \"auto\", true or false").format(value=setting))


def think_end_param(context) -> str:
    """params.think_end_token, refused when it holds no text: every text holds "" (str.split refuses it at the
    reward's first call), and a space or newline ends every sentence, so the thinking could not be told from the
    answer."""
    think_end = context.params["think_end_token"]
    if not think_end.strip():
        raise UserError(_("params.think_end_token {value} holds no text; give the text that ends the thinking, e.g. "
                          "\"</think>\"").format(value=json.dumps(think_end)))
    return think_end


def final_answer(text: str, think_end: str, thinking_opened: bool, must_close: bool = False) -> str | None:
    """The text after the last ``think_end``; None when the thinking was opened (by the template or the text)
    and never closed, or when ``must_close`` and there is no ``think_end``."""
    if think_end in text:
        return text.rsplit(think_end, 1)[1]
    if must_close or thinking_opened or THINK_START in text:
        return None
    return text


class Checker:
    """Scores final answers against gold answers; parses each gold once and reports an unreadable one once."""

    def __init__(self, reward_name: str, column: str):
        self.reward_name, self.column = reward_name, column
        self._golds: dict[str, answers.Gold | None] = {}

    def golds(self, kwargs) -> list:
        if self.column not in kwargs:
            columns = sorted(key for key in kwargs if key not in ("prompts", "completions", "completion_ids",
                                                                 "trainer_state", "log_extra", "log_metric"))
            raise MissingColumn(_("the dataset has no {column!r} column (it has: {columns}); set params.answer_column "
                                  "or add the column").format(column=self.column, columns=", ".join(columns) or _("none")),
                                self.column)
        return kwargs[self.column]

    def gold(self, value) -> answers.Gold | None:
        key = repr(value)
        if key not in self._golds:
            self._golds[key] = answers.parse_gold(value)
            if self._golds[key] is None:
                warnings.warn(UnreadableGoldWarning(
                    _("{reward}: the gold answer {gold} cannot be read; its completions are left out (None). Fix "
                      "the {column!r} column").format(reward=self.reward_name, gold=repr(value)[:80],
                                                      column=self.column)), stacklevel=2)
        return self._golds[key]

    def score(self, answer: str | None, gold_value) -> float | None:
        gold = self.gold(gold_value)
        if gold is None:
            return None
        if answer is None:
            return 0.0
        return 1.0 if answers.matches(answer, gold) else 0.0


def _accuracy(context, name: str, must_close: bool):
    think_end = think_end_param(context)
    opened = must_close or opens_think(context)
    checker = Checker(name, context.params["answer_column"])
    answers.require_answer_packages()  # after the params: `new` checks them where the packages are not installed

    def accuracy(completions, prompts=None, **kwargs):
        golds = checker.golds(kwargs)
        return [
            checker.score(final_answer(completion_text(completion), think_end, opened, must_close), gold)
            for completion, gold in zip(completions, golds)
        ]

    return accuracy


def accuracy_factory(context):
    return _accuracy(context, "accuracy", must_close=False)


def reasoning_accuracy_factory(context):
    return _accuracy(context, "reasoning_accuracy", must_close=True)


def max_tokens_param(context, key: str) -> int:
    """An int param where 0 means the run's max_completion_length: the project's [grpo] over the preset's."""
    value = context.params[key]
    if not value:
        value = context.grpo.get("max_completion_length", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(_("params.{key} must be a positive number of tokens (your max_completion_length); "
                          "0 takes the project's [grpo] max_completion_length, and there is none here").format(
            key=key))
    return value


def cosine_length_factory(context):
    params = context.params
    max_len = max_tokens_param(context, "max_len")
    think_end, opened = think_end_param(context), opens_think(context)
    checker = Checker("cosine_length", params["answer_column"])
    low_wrong, high_wrong = params["min_value_wrong"], params["max_value_wrong"]
    low_right, high_right = params["min_value_correct"], params["max_value_correct"]
    answers.require_answer_packages()

    def cosine_length(completions, prompts=None, completion_ids=None, **kwargs):
        golds = checker.golds(kwargs)
        texts = [completion_text(c) for c in completions]
        ids = completion_ids if completion_ids is not None else context.encode(texts)
        scores = []
        for text, token_ids, gold in zip(texts, ids, golds):
            correct = checker.score(final_answer(text, think_end, opened), gold)
            if correct is None:
                scores.append(None)
                continue
            # TRL's schedule (get_cosine_scaled_reward): short and right pays most, short and wrong costs most
            progress = min(len(token_ids) / max_len, 1.0)
            low, high = (low_right, high_right) if correct else (high_wrong, low_wrong)
            scores.append(low + 0.5 * (high - low) * (1.0 + math.cos(progress * math.pi)))
        return scores

    return cosine_length


def _group_keys(prompts, count: int) -> list[str]:
    """One key per completion: completions with the same prompt share it (TRL passes each prompt once per
    completion, G times for a group)."""
    if prompts is None:
        raise UserError(_("kimi_length compares the completions of one prompt: call it with prompts=..., as TRL does"))
    return [repr(prompt) for prompt in prompts][:count]


def kimi_length_factory(context):
    params = context.params
    think_end, opened = think_end_param(context), opens_think(context)
    checker = Checker("kimi_length", params["answer_column"])
    answers.require_answer_packages()

    def kimi_length(completions, prompts=None, completion_ids=None, **kwargs):
        golds = checker.golds(kwargs)
        texts = [completion_text(c) for c in completions]
        lengths = [len(ids) for ids in (completion_ids if completion_ids is not None else context.encode(texts))]
        correct = [checker.score(final_answer(text, think_end, opened), gold) for text, gold in zip(texts, golds)]
        groups: dict[str, list[int]] = {}
        for index, key in enumerate(_group_keys(prompts, len(completions))):
            groups.setdefault(key, []).append(index)
        scores: list[float | None] = [None] * len(completions)
        for members in groups.values():
            shortest = min(lengths[i] for i in members)
            longest = max(lengths[i] for i in members)
            for i in members:
                if correct[i] is None:
                    continue
                # Kimi k1.5: lambda = 0.5 - (len - min_len) / (max_len - min_len); 0 when all are as long
                spread = 0.5 - (lengths[i] - shortest) / (longest - shortest) if longest > shortest else 0.0
                scores[i] = spread if correct[i] else min(0.0, spread)
        return scores

    return kimi_length


ANSWER_PARAMS = {"answer_column": "answer", "think_end_token": "</think>", "template_opens_think": "auto"}
ANSWER_HELP = {
    "answer_column": N_("the dataset column with the gold answer"),
    "think_end_token": N_("the answer is read after the last one"),
    "template_opens_think": N_("\"auto\": whether the chat template opens <think>; true: a completion without "
                               "</think> never finished thinking and scores 0.0"),
}


@hookimpl
def register_rewards(register):
    register(Reward(
        "accuracy", accuracy_factory,
        N_("1.0 when the final answer after </think> equals the answer column (math-verify: LaTeX, \\boxed, "
           "fractions, 1,000, signs, %, units; text answers compared normalised), else 0.0; 0.0 when the thinking "
           "never closed; None for a gold answer that cannot be read."),
        params=ANSWER_PARAMS, param_help=ANSWER_HELP,
        example=("--completion", "6 x 7? 42.</think>The answer is \\boxed{42}.",
                 "--completion", "</think>It is 41.", "--column", "answer=42"),
    ))
    register(Reward(
        "reasoning_accuracy", reasoning_accuracy_factory,
        N_("Like accuracy, but 0.0 for any completion without </think>, whatever the template: the model must "
           "reason before it answers."),
        params={key: ANSWER_PARAMS[key] for key in ("answer_column", "think_end_token")},
        param_help={key: ANSWER_HELP[key] for key in ("answer_column", "think_end_token")},
        example=("--completion", "6 x 7 = 42.</think>42", "--completion", "42", "--column", "answer=42"),
    ))
    register(Reward(
        "cosine_length", cosine_length_factory,
        N_("Correctness scaled by length on a cosine (Demystifying Long CoT): right answers 1.0 (short) to 0.5 "
           "(max_len tokens), wrong ones -1.0 (short) to -0.5 (long); None for an unreadable gold."),
        params={**ANSWER_PARAMS, "max_len": 0, "min_value_wrong": -1.0, "max_value_wrong": -0.5,
                "min_value_correct": 0.5, "max_value_correct": 1.0},
        param_help={**ANSWER_HELP,
                    "max_len": N_("completion tokens at which the schedule ends; 0: the project's [grpo] "
                                  "max_completion_length"),
                    "min_value_wrong": N_("score of the shortest wrong completion"),
                    "max_value_wrong": N_("score of a wrong completion at max_len"),
                    "min_value_correct": N_("score of a right completion at max_len"),
                    "max_value_correct": N_("score of the shortest right completion")},
        example=("--completion", "</think>42", "--completion", "</think>41", "--column", "answer=42",
                 "--param", "cosine_length.max_len=64", "--tokenizer", "tiny"),
    ))
    register(Reward(
        "kimi_length", kimi_length_factory,
        N_("Kimi k1.5's length reward, relative to the completions of the same prompt: lambda = 0.5 - (len - "
           "min_len) / (max_len - min_len) over the group's token lengths; a right answer gets lambda (0.5 for the "
           "shortest, -0.5 for the longest), a wrong one min(0, lambda); 0.0 when all are as long; None for an "
           "unreadable gold."),
        params=ANSWER_PARAMS, param_help=ANSWER_HELP,
        example=("--prompt", "6 x 7?", "--completion", "</think>42", "--completion",
                 "</think>Six times seven: 6 + 6 + 6 + 6 + 6 + 6 + 6 = 42", "--completion", "</think>41",
                 "--column", "answer=42", "--tokenizer", "tiny"),
    ))
