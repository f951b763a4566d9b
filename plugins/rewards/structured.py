"""json_match: structured output, one JSON object scored key by key against a gold object; json_format: its form.

How the object is found in the final answer (after ``</think>``): the last fenced block (```json ... ``` or
``` ... ```) when there is one, else the whole answer; in that text every top-level ``{...}`` that ``json`` decodes
is a candidate. Exactly one object must be there: none, or two (which one was meant?), scores 0.0. With
``strict = true`` the text must be that object alone (whitespace around it allowed).

The gold comes from the answer column: an object (a JSONL dataset loads one as a dict) or a string holding one.
The expected keys are ``keys`` when given, else every key of the gold. The score is the share of expected keys whose
value equals the gold's; a missing key earns nothing, an extra key costs nothing. Equality (type rules):

- numbers: 1 == 1.0, floats within a relative 1e-6; a bool is no number (true != 1); "42" (a string) != 42;
- strings: equal after stripping surrounding spaces; ``ignore_case = true`` also ignores case;
- null equals only null; lists are equal item by item, in order; nested objects are equal when every key of the
  gold's is there and equal (all or nothing: partial credit is for the top-level keys);
- a gold date, time or datetime (a Parquet or hub column typed as one) equals its ISO text ("2024-03-05"; a datetime
  at midnight also its date alone), since JSON has no dates.

A gold string is read as JSON only when it holds an object (after spaces and a ```json fence around it).
"""

from __future__ import annotations

import datetime
import json
import math
import re
import warnings
from collections.abc import Mapping

from grpo_skill import Reward, completion_text, hookimpl
from grpo_skill.errors import UserError
from grpo_skill.i18n import N_, _

from .verifiable import ANSWER_HELP, ANSWER_PARAMS, Checker, final_answer, opens_think, think_end_param

FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


class UnreadableGoldObjectWarning(UserWarning):
    """A gold that is no JSON object: its completions are left out (None)."""


def json_objects(text: str) -> list[dict]:
    """Every top-level JSON object in ``text``, in order."""
    found, index = [], 0
    while (start := text.find("{", index)) != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)
        index = end
    return found


def extract_object(answer: str, strict: bool) -> dict | None:
    """The one JSON object of the answer (see the module's docstring); None when there is none, or more than one."""
    fences = FENCE.findall(answer)
    text = (fences[-1] if fences else answer).strip()
    if strict:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    objects = json_objects(text)
    return objects[0] if len(objects) == 1 else None


def _iso_texts(gold: datetime.date | datetime.time) -> set[str]:
    texts = {gold.isoformat()}
    if isinstance(gold, datetime.datetime):
        texts.add(gold.isoformat(sep=" "))
        if gold.time() == datetime.time(0) and gold.tzinfo is None:
            texts.add(gold.date().isoformat())
    return texts


def equal(value, gold, ignore_case: bool) -> bool:
    """The type rules of the module's docstring."""
    if isinstance(gold, (datetime.date, datetime.time)):
        return isinstance(value, str) and value.strip() in _iso_texts(gold)
    if isinstance(gold, bool) or isinstance(value, bool):
        return isinstance(gold, bool) and isinstance(value, bool) and value == gold
    if isinstance(gold, (int, float)):
        return isinstance(value, (int, float)) and math.isclose(value, gold, rel_tol=1e-6, abs_tol=1e-12)
    if isinstance(gold, str):
        if not isinstance(value, str):
            return False
        value, gold = value.strip(), gold.strip()
        return value.casefold() == gold.casefold() if ignore_case else value == gold
    if gold is None:
        return value is None
    if isinstance(gold, list):
        return (isinstance(value, list) and len(value) == len(gold)
                and all(equal(v, g, ignore_case) for v, g in zip(value, gold)))
    if isinstance(gold, Mapping):
        return isinstance(value, Mapping) and all(key in value and equal(value[key], item, ignore_case)
                                                  for key, item in gold.items())
    return value == gold


class GoldObjects:
    """Reads each gold once; an unreadable one is reported once and its completions left out."""

    def __init__(self, column: str):
        self.column = column
        self._read: dict[str, dict | None] = {}

    def read(self, gold) -> dict | None:
        key = repr(gold)
        if key not in self._read:
            value = gold
            if isinstance(gold, str):
                fenced = FENCE.findall(gold)
                try:
                    value = json.loads(fenced[-1] if fenced else gold)
                except json.JSONDecodeError:
                    value = None
            self._read[key] = dict(value) if isinstance(value, Mapping) else None
            if self._read[key] is None:
                warnings.warn(UnreadableGoldObjectWarning(
                    _("json_match: the gold {gold} is no JSON object; its completions are left out (None). Fix the "
                      "{column!r} column").format(gold=repr(gold)[:80], column=self.column)), stacklevel=2)
        return self._read[key]


def json_match_factory(context):
    params = context.params
    keys, strict, ignore_case = params["keys"], params["strict"], params["ignore_case"]
    if not all(isinstance(key, str) for key in keys):
        raise UserError(_("params.keys must be a list of key names, e.g. [\"name\", \"age\"]"))
    think_end, opened = think_end_param(context), opens_think(context)
    columns = Checker("json_match", params["answer_column"])  # finds the column, or says which ones there are
    golds = GoldObjects(params["answer_column"])

    def json_match(completions, prompts=None, **kwargs):
        scores: list[float | None] = []
        for completion, gold_value in zip(completions, columns.golds(kwargs)):
            gold = golds.read(gold_value)
            if gold is None:
                scores.append(None)
                continue
            expected = list(keys) or list(gold)
            if not expected:
                scores.append(None)  # an empty gold object asks for nothing
                continue
            answer = final_answer(completion_text(completion), think_end, opened)
            found = extract_object(answer, strict) if answer is not None else None
            if found is None:
                scores.append(0.0)
                continue
            right = sum(key in found and key in gold and equal(found[key], gold[key], ignore_case) for key in expected)
            scores.append(right / len(expected))
        return scores

    return json_match


def json_type(value) -> str:
    """A value's JSON type; a gold date or time is text in JSON."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (str, datetime.date, datetime.time)):
        return "string"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object" if isinstance(value, Mapping) else type(value).__name__


def json_format_factory(context):
    """The form json_match leaves alone: the object bare, its keys exactly the expected ones, each value of the
    gold's JSON type; each a third of the score, whatever the values."""
    params = context.params
    keys = params["keys"]
    if not all(isinstance(key, str) for key in keys):
        raise UserError(_("params.keys must be a list of key names, e.g. [\"name\", \"age\"]"))
    think_end, opened = think_end_param(context), opens_think(context)
    columns = Checker("json_format", params["answer_column"])
    golds = GoldObjects(params["answer_column"])

    def json_format(completions, prompts=None, **kwargs):
        scores: list[float | None] = []
        for completion, gold_value in zip(completions, columns.golds(kwargs)):
            gold = golds.read(gold_value)
            expected = list(keys) or list(gold or ())
            if gold is None or not expected:
                scores.append(None)
                continue
            answer = final_answer(completion_text(completion), think_end, opened)
            found = extract_object(answer, strict=False) if answer is not None else None
            if found is None:
                scores.append(0.0)
                continue
            bare = extract_object(answer.strip(), strict=True) == found and not FENCE.search(answer)
            exact_keys = set(found) == set(expected)
            typed = sum(key in found and key in gold and json_type(found[key]) == json_type(gold[key])
                        for key in expected) / len(expected)
            scores.append((bare + exact_keys + typed) / 3)
        return scores

    return json_format


@hookimpl
def register_rewards(register):
    register(Reward(
        "json_match", json_match_factory,
        N_("Structured output: the one JSON object of the final answer (the last ``` fence, else the answer; two "
           "objects or none: 0.0) scored against the gold object of the answer column (an object or a JSON "
           "string): the share of expected keys whose value equals the gold's (1 == 1.0, true != 1, \"42\" != "
           "42, strings stripped, lists in order); None for a gold that is no object."),
        params={**ANSWER_PARAMS, "keys": [], "strict": False, "ignore_case": False},
        param_help={**ANSWER_HELP,
                    "answer_column": N_("the dataset column with the gold object (a JSON object or a string holding "
                                        "one)"),
                    "keys": N_("the keys that count; empty: every key of the gold object"),
                    "strict": N_("true: the answer (or its fence) must be the JSON object alone"),
                    "ignore_case": N_("compare strings without regard to case")},
        example=("--completion", "</think>{\"name\": \"Ada\", \"age\": 36}",
                 "--completion", "</think>{\"name\": \"Ada\", \"age\": \"36\"}",
                 "--column", "answer={\"name\": \"Ada\", \"age\": 36}"),
    ))
    register(Reward(
        "json_format", json_format_factory,
        N_("The form of a structured answer, whatever its values (pair it with json_match): a third each for the "
           "answer being one JSON object alone (no ``` fence, no text around it), for its keys being exactly the "
           "expected ones, and for the share of expected keys whose value has the gold's JSON type (number, string, "
           "boolean, null, array, object); 0.0 without one object; None for a gold that is no object."),
        params={**ANSWER_PARAMS, "keys": []},
        param_help={**ANSWER_HELP,
                    "answer_column": N_("the dataset column with the gold object (a JSON object or a string holding "
                                        "one)"),
                    "keys": N_("the keys that count; empty: every key of the gold object")},
        example=("--completion", "</think>{\"name\": \"Ada\", \"age\": 36}",
                 "--completion", "</think>Here it is: {\"name\": \"Ada\", \"age\": \"36\", \"id\": 7}",
                 "--column", "answer={\"name\": \"Bo\", \"age\": 41}"),
    ))
