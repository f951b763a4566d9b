"""The reward contract, enforced for every reward by Reward.build: misbehaving rewards fail with one clear line."""

import asyncio
import inspect
import json
import math
import warnings

import numpy
import pytest

from grpo_skill import Reward, RewardError, completion_text, hookimpl, plugins, prompt_text
from grpo_skill.errors import UserError
from grpo_skill.registry import reward_seconds
from grpo_skill.testing import TokenizerWarning, check_reward


def reward_returning(value_or_func, name="bad"):
    func = value_or_func if callable(value_or_func) else (lambda completions, **kwargs: value_or_func)
    return Reward(name, lambda context: func, "a test reward").build()


COMPLETIONS = ["first completion", [{"role": "assistant", "content": "second, as chat messages"}]]


@pytest.mark.parametrize("result, message", [
    ([1.0], r"returned 1 scores for 2 completions.*First completion: 'first completion'"),
    ([1.0, 2.0, 3.0], "returned 3 scores for 2 completions"),
    ([1.0, "high"], r"gave 'high' for completion 1: 'second, as chat messages'; a score is a finite number"),
    ([1.0, math.nan], "gave nan for completion 1"),
    ([math.inf, 1.0], "gave inf for completion 0: 'first completion'"),
    ([1.0, [0.5]], r"gave \[0.5\] for completion 1"),
    (0.5, "returned 0.5; return a list with one score per completion"),
    ({"a": 1.0}, "return a list"),
    (None, "returned None"),
])
def test_a_broken_result_names_the_reward_and_the_sample(result, message):
    reward = reward_returning(result)
    with pytest.raises(RewardError, match=message) as raised:
        reward(prompts=["p", "p"], completions=COMPLETIONS)
    assert str(raised.value).startswith("reward 'bad'")
    assert isinstance(raised.value, UserError) and "\n" not in str(raised.value)


def test_an_exception_names_the_reward_its_plugin_the_sample_and_the_line_that_raised():
    def crashes(completions, **kwargs):
        return [len(completion_text(c)) / 0 for c in completions]

    class Plugin:
        @hookimpl
        def register_rewards(self, register):
            register(Reward("crashes", lambda context: crashes, "divides by zero"))

    plugins.register(Plugin(), name="crashing-plugin")
    try:
        reward = plugins.get_reward("crashes").build()
        with pytest.raises(RewardError) as raised:
            reward(completions=COMPLETIONS)
    finally:
        plugins.unregister("crashing-plugin")
    line = crashes.__code__.co_firstlineno + 1  # the division
    message = str(raised.value)
    assert message.startswith("reward 'crashes' (plugin crashing-plugin) raised on a batch starting with "
                              "'first completion': ")
    assert message.endswith(f"test_reward_contract.py:{line}: ZeroDivisionError: division by zero")


def test_a_long_sample_is_truncated():
    reward = reward_returning(lambda completions, **kwargs: ["x"] * len(completions))
    with pytest.raises(RewardError) as raised:
        reward(completions=["word " * 1000])
    assert len(str(raised.value)) < 400 and "…" in str(raised.value)


def test_numbers_of_any_kind_become_floats_and_none_stays():
    reward = reward_returning(lambda completions, **kwargs: [1, True, numpy.float32(0.5), None])
    scores = reward(completions=["a", "b", "c", "d"])
    assert scores == [1.0, 1.0, 0.5, None] and all(type(s) is float for s in scores[:3])
    assert reward_returning(lambda completions, **kwargs: numpy.array([0.25, 1]))(completions=["a", "b"]) == [0.25, 1.0]


def test_a_factory_that_fails_says_which_reward_could_not_be_built():
    def factory(context):
        raise ValueError("params.words is empty")

    with pytest.raises(RewardError, match=r"reward 'picky' could not be built: \S*test_reward_contract.py:\d+: "
                                          "ValueError: params.words is empty"):
        Reward("picky", factory, "x").build()
    with pytest.raises(RewardError, match="its factory returned 42, not a function"):
        Reward("odd", lambda context: 42, "x").build()


def test_a_call_without_completions_says_how_trl_calls():
    with pytest.raises(RewardError, match="called without completions"):
        reward_returning([1.0])(prompts=["p"])


def test_completions_by_position_are_found():
    reward = reward_returning(lambda completions, prompts=None, **kwargs: [1.0] * len(completions))
    assert reward(["a", "b"]) == [1.0, 1.0]


def test_async_rewards_stay_async_and_are_checked():
    async def judge(completions, **kwargs):
        await asyncio.sleep(0)
        return [float(len(completion_text(c))) for c in completions]

    reward = Reward("judge", lambda context: judge, "async").build()
    assert inspect.iscoroutinefunction(reward) and reward.__name__ == "judge"
    assert asyncio.run(reward(completions=["ab", [{"role": "assistant", "content": "abc"}]])) == [2.0, 3.0]

    async def short(completions, **kwargs):
        return [1.0]

    with pytest.raises(RewardError, match="returned 1 scores for 2 completions"):
        asyncio.run(Reward("short", lambda context: short, "async").build()(completions=["a", "b"]))


def test_each_call_is_timed_for_the_metrics():
    reward = plugins.get_reward("length").build()
    assert reward_seconds([reward]) == {}  # not called yet: nothing to log
    reward(completions=["a b c"])
    reward(completions=["a b c d e f"])
    assert reward.timing.calls == 2 and reward.timing.seconds >= 0
    logged = reward_seconds([reward])
    assert list(logged) == ["rewards/length/seconds"] and 0 <= logged["rewards/length/seconds"] < 5
    assert reward_seconds([reward]) == {}  # taken: the next log starts afresh


def test_completion_and_prompt_text_read_strings_and_messages():
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": "chat"}]) == "chat"
    # a tool-using turn: the assistant's messages, not the tool's
    turn = [{"role": "assistant", "content": "call"}, {"role": "tool", "content": "result"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    assert completion_text(turn) == "call\ndone"
    assert prompt_text([{"role": "system", "content": "be brief"}, {"role": "user", "content": "6 x 7?"}]) == "6 x 7?"
    assert prompt_text("6 x 7?") == "6 x 7?"


# --- grpo_skill.testing.check_reward -------------------------------------------------------------------------


def test_check_reward_passes_a_good_reward_and_returns_its_scores():
    assert check_reward("length", completions=["one two three four five", "one"], tokenizer=None) == [1.0, -1.0]
    assert check_reward("accuracy", completions=["</think>42", "</think>41"], answer="42") == [1.0, 0.0]


def test_check_reward_catches_a_reward_that_cannot_read_chat_messages():
    def factory(context):
        def shouting(completions, **kwargs):
            return [1.0 if str(c).isupper() else 0.0 for c in completions]  # str() of a message list is no text
        return shouting

    with pytest.raises(RewardError, match=r"completion 0 scores 1.0 as a string but 0.0 as chat messages"):
        check_reward(Reward("shouting", factory, "caps"), completions=["HELLO"], tokenizer=None)


def test_check_reward_catches_a_crash_on_awkward_completions():
    def factory(context):
        def first_word(completions, **kwargs):
            return [float(len(completion_text(c).split()[0])) for c in completions]  # "" has no first word
        return first_word

    with pytest.raises(RewardError, match=r"raised on a batch starting with .*: .*test_reward_contract\.py:\d+: "
                                          r"IndexError"):
        check_reward(Reward("first_word", factory, "x"), tokenizer=None)


def test_check_reward_gives_token_ids_from_the_tiny_tokenizer():
    # thinking reads completion_ids: with the tiny tokenizer the </think> token is found in them
    scores = check_reward("thinking", completions=["Let me see.</think>42", "no end"], tokenizer="tiny")
    assert scores[0] > 0 and scores[1] == -1.0


# check_reward scores as the project trains (its preset's template): the json and zh assistants' tests failed on a
# thinking-off project because the tiny tokenizer's template opens <think>
ZH_ROWS = '{"题目": "小丽早上7点40分出门，走了25分钟到学校，几点几分到校？", "答案": "8点05分"}\n'
INVOICE = {"vendor": "Nordlicht GmbH", "invoice_number": "INV-2026-1040", "date": "2026-01-01", "total": 75.0}


@pytest.fixture
def projects(cli, tmp_path, english):
    # 8 rows: the standard preset draws 8 prompts a generation, and `new` refuses a dataset smaller than that
    (tmp_path / "zh.jsonl").write_text(ZH_ROWS * 8, encoding="utf-8")
    (tmp_path / "invoices.jsonl").write_text(
        (json.dumps({"email": "Invoice INV-2026-1040 ...", "expected": INVOICE}) + "\n") * 8)
    made = {}
    for name, preset, data, prompt, gold, reward in (
            ("zh", "standard", "zh.jsonl", "题目", "答案", "accuracy:1"),
            ("thinking", "tiny", "zh.jsonl", "题目", "答案", "accuracy:1"),
            ("invoice", "standard", "invoices.jsonl", "email", "expected", "json_match:1")):
        cli("new", name, "--preset", preset, "--dataset", str(tmp_path / data), "--prompt-column", prompt,
            "--answer-column", gold, "--reward", reward, cwd=tmp_path)
        made[name] = tmp_path / name
    return made


def test_check_reward_with_project_reads_completions_as_the_projects_template_does(projects):
    answers = ["7点40分+25分=8点05分\n答案：8点05分", "答案：8点30分", "The answer is 8:05."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: this is how the project scores
        # the project's own answer_column: no params needed
        assert check_reward("accuracy", completions=answers, project=projects["zh"], 答案="8点05分") == [1.0, 0.0, 1.0]
        assert check_reward("accuracy", completions=answers, preset="standard", params={"answer_column": "答案"},
                            答案="8点05分") == [1.0, 0.0, 1.0]
    # a project whose template opens <think> (tiny): an answer needs the </think> that ends the thinking
    thinking = check_reward("accuracy", completions=answers + ["想一想。</think>答案：8点05分"],
                            project=projects["thinking"], 答案="8点05分")
    assert thinking == [0.0, 0.0, 0.0, 1.0]
    bare = json.dumps(INVOICE)
    assert check_reward("json_match", completions=[bare, bare.replace("1040", "1041")], project=projects["invoice"],
                        expected=INVOICE) == [1.0, 0.75]


def test_check_reward_without_a_project_says_when_the_tiny_template_changes_the_reading():
    with pytest.warns(TokenizerWarning, match=r"the tiny tokenizer .*opens <think>: completions 0, 2 have no "
                                              r"</think>.*Pass project=PATH"):
        scores = check_reward("accuracy", completions=["答案：20张", "好。</think>答案：20张", "20"], answer="20张")
    assert scores == [0.0, 1.0, 0.0]


def test_check_reward_names_the_tokenizer_when_a_reward_needs_one_it_lacks(projects):
    # the standard preset's model is not on this machine: no completion_ids, and the error says why
    with pytest.raises(RewardError, match=r"this reward counts tokens.*\(scored with no tokenizer: "
                                          r"unsloth/Qwen3-.* is not on this machine.*pass tokenizer=PATH"):
        check_reward("thinking", completions=["a</think>b"], project=projects["zh"])


def test_building_rewards_gathers_their_words_to_the_user_and_lets_other_warnings_through():
    """`new` and `check` say what a factory warns on their `warning:` lines (each once); a deprecation or runtime
    warning from a factory or a package it imports is not the factory's word to the user: it is warned as it came."""
    from grpo_skill.core.contract import factory_warnings

    with pytest.warns(DeprecationWarning, match="old call"):
        with factory_warnings() as said:
            warnings.warn("code_tests: the network stays open", UserWarning)
            warnings.warn("code_tests: the network stays open", UserWarning)
            warnings.warn("old call", DeprecationWarning)
    assert said == ["code_tests: the network stays open"]
