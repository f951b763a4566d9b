"""Gold answers that a reward which checks answers cannot use, found before a run: each gold of a local dataset is
given to that reward as the answer itself (after a closed thinking block), as the project's own test does. A gold
it cannot read scores None for every completion of its prompt (left out of the reward); a sentence is read as the
number or text found in it, not as what a reader would call its answer."""

from __future__ import annotations

import json
import warnings

from ..core.i18n import _

GRADED = ("accuracy", "reasoning_accuracy", "json_match")  # the rewards that score a final answer against a gold
MAX_ROWS = 256  # every gold of a small dataset; ~3 ms each
SENTENCE_WORDS = 7  # a gold of this many words or more is a sentence, not a final answer
SENTENCE_CJK_CHARACTERS = 16


def gold_warnings(config) -> list[str]:
    """Lines naming the local golds a graded reward cannot use: unreadable ones, and sentences."""
    from ..core import plugins
    from ..core.contract import RewardPackageMissing
    from .promptlength import column_values

    lines = []
    for choice in config.rewards:
        if choice.name not in GRADED:
            continue
        column = {**plugins.get_reward(choice.name).params, **choice.params}["answer_column"]
        values = (column_values(config.dataset_file(), column) or [])[:MAX_ROWS]  # as train.py's rewards get them
        if not values:
            continue  # a hub dataset, or no such column: train.py and `check` say so elsewhere
        golds = [value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) for value in values]
        try:
            reward = plugins.get_reward(choice.name).build(tokenizer=None, preset=config.preset, params=choice.params,
                                                           grpo=config.grpo)  # as train.py builds it, without token ids
        except RewardPackageMissing:
            continue  # `new` without the [train] extra: no gold can be read here; `check` says what to install
        completions = ["</think>" + gold for gold in golds]
        with warnings.catch_warnings():  # each unreadable gold is named below, once
            warnings.simplefilter("ignore")
            scores = reward(prompts=[""] * len(golds), completions=completions, **{column: values})
        unreadable = [row for row, score in enumerate(scores) if score is None]
        sentences = [row for row, gold in enumerate(golds) if row not in unreadable and _is_sentence(gold)]
        said = {"reward": choice.name, "column": column, "total": len(golds)}
        if unreadable:
            lines.append(_("{reward}: {count} of the first {total} gold answers in {column!r} cannot be read "
                           "({example}): their completions would score None, left out of the reward; write each as a "
                           "number, an expression or a short text").format(
                count=len(unreadable), example=_example(golds, unreadable[0]), **said))
        if sentences and choice.name != "json_match":
            lines.append(_("{reward}: {count} of the first {total} gold answers in {column!r} are sentences "
                           "({example}); a sentence is read as the number (or the text) found in it, not as its "
                           "meaning: give the final answer alone, e.g. 42").format(
                count=len(sentences), example=_example(golds, sentences[0]), **said))
    return lines


def _is_sentence(gold: str) -> bool:
    from .promptlength import WIDE

    return len(gold.split()) >= SENTENCE_WORDS or len(WIDE.findall(gold)) >= SENTENCE_CJK_CHARACTERS


def _example(golds: list[str], row: int) -> str:
    text = golds[row]
    shown = text if len(text) <= 40 else text[:37] + "..."
    return _("row {row}: {gold}").format(row=row + 1, gold=json.dumps(shown, ensure_ascii=False))
