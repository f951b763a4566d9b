"""json_match: one JSON object in the final answer, scored key by key against a gold object (its type rules are in
plugins/rewards/structured.py's docstring and references/rewards.md)."""

import json
import warnings

import pytest

from grpo_skill import RewardError, plugins

GOLD = {"name": "Ada", "age": 36, "langs": ["en", "fr"], "admin": False}


def json_match(completions, gold=GOLD, **params):
    reward = plugins.get_reward("json_match").build(params=params)
    return reward(prompts=[""] * len(completions), completions=completions, answer=[gold] * len(completions))


def answer(obj, before="", after=""):
    return "Let me fill it in.</think>" + before + json.dumps(obj) + after


CASES = [
    (answer(GOLD), 1.0),
    (answer({**GOLD, "extra": 1}), 1.0),  # an extra key costs nothing
    (answer({"name": "Ada", "age": 36}), 0.5),  # two of four keys: partial credit
    (answer({**GOLD, "age": 36.0}), 1.0),  # 36 == 36.0
    (answer({**GOLD, "age": "36"}), 0.75),  # a number in a string is no number
    (answer({**GOLD, "admin": 0}), 0.75),  # 0 is no false
    (answer({**GOLD, "name": " Ada "}), 1.0),  # strings are stripped
    (answer({**GOLD, "name": "ada"}), 0.75),  # but case counts
    (answer({**GOLD, "langs": ["fr", "en"]}), 0.75),  # lists in order
    (answer(GOLD, before="Here it is:\n```json\n", after="\n```\nDone."), 1.0),  # a fence
    (answer(GOLD, before="The record is ", after=", as asked."), 1.0),  # text around one object
    (answer(GOLD, after=' or {"name": "Bob"}'), 0.0),  # two objects: which one?
    ("</think>{'name': 'Ada'}", 0.0),  # Python, not JSON
    ("</think>" + json.dumps(GOLD)[:-1], 0.0),  # cut off
    ("</think>[1, 2]", 0.0),  # no object
    ("</think>", 0.0),
]


@pytest.mark.parametrize("completion, expected", CASES)
def test_json_match_scores_keys_by_the_type_rules(completion, expected):
    assert json_match([completion]) == [expected]


def test_only_the_object_after_the_thinking_counts():
    thinking = "Draft: " + json.dumps(GOLD) + "</think>"
    assert json_match([thinking + '{"name": "Bob"}']) == [0.0]
    assert json_match([json.dumps(GOLD)], template_opens_think=True) == [0.0]  # never closed its thinking
    assert json_match([json.dumps(GOLD)], template_opens_think=False) == [1.0]  # no thinking at all


def test_the_gold_may_be_a_json_string_and_keys_may_be_chosen():
    as_text = json.dumps(GOLD)
    reward = plugins.get_reward("json_match").build(params={"keys": ["name", "age"]})
    assert reward(completions=[answer({"name": "Ada", "age": 1})], answer=[as_text]) == [0.5]
    assert json_match([answer({**GOLD, "name": "ada"})], ignore_case=True) == [1.0]


def test_strict_wants_the_object_alone():
    assert json_match([answer(GOLD, before="The record is ")], strict=True) == [0.0]
    assert json_match([answer(GOLD, before="```json\n", after="\n```")], strict=True) == [1.0]
    assert json_match([answer(GOLD, before="\n  ", after="\n")], strict=True) == [1.0]


def test_nested_objects_are_all_or_nothing():
    gold = {"user": {"name": "Ada", "age": 36}, "ok": True}
    assert json_match([answer({"user": {"name": "Ada", "age": 36, "x": 1}, "ok": True})], gold=gold) == [1.0]
    assert json_match([answer({"user": {"name": "Ada"}, "ok": True})], gold=gold) == [0.5]


def test_chinese_values_and_text():
    gold = {"城市": "北京", "人口": 21893095}
    assert json_match(["</think>结果如下：" + json.dumps(gold, ensure_ascii=False) + "。"], gold=gold) == [1.0]


def test_a_gold_that_is_no_object_is_left_out_and_reported_once():
    reward = plugins.get_reward("json_match").build()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = reward(completions=["</think>{}", "</think>{}", answer(GOLD)], answer=["not json", "not json", GOLD])
    assert scores == [None, None, 1.0]
    assert len(caught) == 1 and "'answer' column" in str(caught[0].message)


def test_a_missing_column_and_bad_keys_are_refused():
    with pytest.raises(RewardError, match="no 'record' column"):
        plugins.get_reward("json_match").build(params={"answer_column": "record"})(completions=["{}"], answer=["{}"])
    with pytest.raises(RewardError, match="params.keys must be a list of key names"):
        plugins.get_reward("json_match").build(params={"keys": [1, 2]})


def test_a_gold_string_and_a_gold_object_score_alike():
    completions = [answer(GOLD), answer({**GOLD, "age": 37}), "</think>没有"]
    as_object = json_match(completions, gold=GOLD)
    assert as_object == [1.0, 0.75, 0.0]
    assert json_match(completions, gold=json.dumps(GOLD, ensure_ascii=False)) == as_object
    assert json_match(completions, gold="  " + json.dumps(GOLD, indent=2) + "\n") == as_object
    assert json_match(completions, gold="```json\n" + json.dumps(GOLD) + "\n```") == as_object


def test_a_gold_typed_as_a_date_equals_its_iso_text():
    import datetime

    # a Parquet or hub column typed as a date or timestamp; JSON answers can only write it as text
    for date in (datetime.date(2024, 3, 5), datetime.datetime(2024, 3, 5)):
        gold = {"vendor": "Nordlicht GmbH", "date": date}
        scores = json_match(["</think>" + json.dumps({"vendor": "Nordlicht GmbH", "date": text})
                             for text in ("2024-03-05", "2024-03-06", "05.03.2024")], gold=gold)
        assert scores == [1.0, 0.5, 0.5]
    at_noon = {"date": datetime.datetime(2024, 3, 5, 12, 30)}
    assert json_match(['</think>{"date": "2024-03-05T12:30:00"}', '</think>{"date": "2024-03-05"}'],
                      gold=at_noon) == [1.0, 0.0]


def json_format(completions, gold=GOLD, **params):
    reward = plugins.get_reward("json_format").build(params=params)
    return reward(prompts=[""] * len(completions), completions=completions, answer=[gold] * len(completions))


WRONG_VALUES = {"name": "Bo", "age": 41, "langs": [], "admin": True}


@pytest.mark.parametrize("completion,expected", [
    (answer(WRONG_VALUES), 1.0),  # the form is right whatever the values: json_match scores those
    (answer(GOLD, before="```json\n", after="\n```"), 2 / 3),  # fenced: not bare
    (answer(GOLD, before="Here it is: "), 2 / 3),  # text around it
    (answer({**GOLD, "id": 7}), 2 / 3),  # a key the task did not ask for
    (answer({"name": "Ada", "age": 36}), (1 + 0 + 0.5) / 3),  # two keys missing: half the types, keys not exact
    (answer({**GOLD, "age": "36", "admin": "no"}), (1 + 1 + 0.5) / 3),  # two values of the wrong JSON type
    ("Let me fill it in.</think>Ada, 36", 0.0),  # no object
    (answer(GOLD, after=json.dumps(GOLD)), 0.0),  # two objects: which one?
])
def test_json_format_scores_the_form_of_the_answer(completion, expected):
    assert json_format([completion]) == [pytest.approx(expected)]


def test_json_format_reads_a_gold_in_a_string_and_chosen_keys():
    completion = answer({"name": "Ada", "age": 36})
    assert json_format([completion], gold=json.dumps(GOLD), keys=["name", "age"]) == [1.0]
