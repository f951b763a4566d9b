"""The seed's rewards score exactly as the seed guide documents them (the others: test_accuracy.py,
test_shaping.py, test_judge.py; the contract every reward keeps: test_reward_contract.py)."""

import pytest

from grpo_skill import RewardError, plugins
from grpo_skill.registry import QWEN3_THINK_END_ID, RegistryError

THINK_END = QWEN3_THINK_END_ID


def score(name, completions, completion_ids=None, tokenizer=None, **kwargs):
    reward = plugins.get_reward(name).build(tokenizer=tokenizer)
    return reward(prompts=[""] * len(completions), completions=completions, completion_ids=completion_ids, **kwargs)


def thinking_ids(thinking_tokens: int) -> list[int]:
    """Completion ids with `thinking_tokens` tokens before Qwen3's </think>, then an answer."""
    return list(range(100, 100 + thinking_tokens)) + [THINK_END, 7, 8]


@pytest.mark.parametrize(
    "words, expected",
    [(0, -1.0), (4, -1.0), (5, 1.0), (49, 1.0), (50, 0.5), (200, 0.5)],
)
def test_length(words, expected):
    assert score("length", [" ".join(["word"] * words)]) == [expected]


@pytest.mark.parametrize(
    "text, expected",
    [("Done.", 1.0), (" Done.", 0.5), ("Done", 0.5), (" Done", 0.0)],
)
def test_format(text, expected):
    assert score("format", [text]) == [expected]


@pytest.mark.parametrize(
    "thinking_tokens, question, expected",
    [
        (0, False, 0.3), (9, True, 0.3),  # under 10 tokens: 0.3, no bonus
        (10, False, 0.7), (29, False, 0.7), (15, True, 0.8),
        (30, False, 1.0), (80, True, 1.1),
    ],
)
def test_thinking_scores_by_token_count_before_think_end(thinking_tokens, question, expected):
    text = ("why is that?" if question else "let me see") + "</think>The answer."
    assert score("thinking", [text], [thinking_ids(thinking_tokens)]) == [pytest.approx(expected)]


def test_thinking_without_think_end_is_penalised():
    assert score("thinking", ["no closing tag?"], [[1, 2, 3]]) == [-1.0]


def test_thinking_ignores_a_think_end_string_that_is_not_the_token():
    # The text says "</think>" but the ids do not hold the token: token-based detection says it is missing.
    assert score("thinking", ["fake</think>answer"], [[5] * 40]) == [-1.0]


def test_thinking_learns_the_think_end_id_from_the_tokenizer(tiny_tokenizer):
    think_end = tiny_tokenizer.convert_tokens_to_ids("</think>")
    assert think_end != QWEN3_THINK_END_ID  # the tiny vocabulary is small: the id differs from Qwen3's
    text = "First I add the numbers, then I check the sum again, is it right? Yes it is right.</think>42"
    ids = tiny_tokenizer.encode(text, add_special_tokens=False)
    thinking_tokens = ids.index(think_end)
    expected = 1.1 if thinking_tokens >= 30 else 0.8 if thinking_tokens >= 10 else 0.3
    assert score("thinking", [text], [ids], tokenizer=tiny_tokenizer) == [pytest.approx(expected)]
    # Without completion_ids the reward tokenizes the text itself and agrees.
    assert score("thinking", [text], None, tokenizer=tiny_tokenizer) == [pytest.approx(expected)]


def test_thinking_needs_a_tokenizer_with_think_end():
    class NoThinkTokenizer:
        unk_token_id = 0

        def convert_tokens_to_ids(self, token):
            return 0

    with pytest.raises(RewardError, match="reward 'thinking' \\(plugin builtin:seed\\): the tokenizer has no "
                                          "'</think>' token"):
        score("thinking", ["x"], [[1]], tokenizer=NoThinkTokenizer())


@pytest.mark.parametrize(
    "thinking_tokens, thought, expected",
    [
        (25, "First, add. Then check! Is it right?", 0.3 + 0.3 + 0.2 + 0.1 + 0.1),
        (12, "hmm", 0.3 + 0.2),
        (5, "One. Two.", 0.3 + 0.2),
        (20, "next: why?", 0.3 + 0.3 + 0.1 + 0.1),
    ],
)
def test_thinking_comprehensive(thinking_tokens, thought, expected):
    text = thought + "</think>answer"
    assert score("thinking_comprehensive", [text], [thinking_ids(thinking_tokens)]) == [pytest.approx(expected)]


def test_thinking_comprehensive_without_think_end():
    assert score("thinking_comprehensive", ["First. Then."], [[1, 2]]) == [-0.5]


def test_rewards_read_chat_message_completions():
    chat = [[{"role": "assistant", "content": "Done."}]]
    assert score("format", chat) == [1.0]


def test_reward_functions_carry_their_registered_name():
    # TRL logs rewards/<function name>/mean
    assert plugins.get_reward("thinking").build().__name__ == "thinking"


def test_unknown_reward_param_is_refused():
    with pytest.raises(RegistryError, match="no parameter 'bogus'"):
        plugins.get_reward("length").build(params={"bogus": 1})


# The seed's rules count words at spaces and want a final "."; params fit them to Chinese (the defaults above stay
# the seed's)
@pytest.mark.parametrize(
    "text, count, expected",
    [
        ("递归是函数调用自身。", "words", -1.0),  # one "word" at spaces: the seed's rule calls it too short
        ("递归是函数调用自身。", "cjk", 1.0),  # 9 characters
        ("递归", "cjk", -1.0),
        ("递" * 50, "cjk", 0.5),
        ("Recursion is a function 调用 itself", "cjk", 1.0),  # 5 words + 2 characters
        ("Recursion is a function 调用 itself", "words", 1.0),
        ("Yes。", "cjk", -1.0),  # marks are no words
    ],
)
def test_length_counts_chinese_characters_as_words_with_count_cjk(text, count, expected):
    assert plugins.get_reward("length").build(params={"count": count})(completions=[text]) == [expected]


def test_length_counts_tokens_with_count_tokens():
    reward = plugins.get_reward("length").build(params={"count": "tokens"})
    assert reward(completions=["a", "b", "c"], completion_ids=[[1] * 4, [1] * 5, [1] * 50]) == [-1.0, 1.0, 0.5]


def test_length_refuses_an_unknown_count():
    with pytest.raises(RewardError, match="params.count = 'chars'"):
        plugins.get_reward("length").build(params={"count": "chars"})


@pytest.mark.parametrize(
    "text, expected, seed",
    [("完成。", 1.0, 0.5), ("完成！", 1.0, 0.5), ("完成？", 1.0, 0.5), ("Done.", 1.0, 1.0), ("完成", 0.5, 0.5),
     (" 完成。", 0.5, 0.0)],
)
def test_format_takes_chinese_sentence_ends_with_end_marks(text, expected, seed):
    assert plugins.get_reward("format").build(params={"end_marks": ".。！？!?"})(completions=[text]) == [expected]
    assert score("format", [text]) == [seed]  # the seed's rule: only "." ends a sentence


# Chinese thinking is read as it is written, whatever the params: a full-width ？ asks a question, 。 and ！ end
# sentences, and 首先/然后/最后/因此/所以 string the steps together (the English cases above score as before)
@pytest.mark.parametrize(
    "thinking_tokens, thought, expected",
    [(15, "5加3等于几？", 0.8), (15, "5加3等于8。", 0.7), (40, "这样对吗？", 1.1), (5, "对吗？", 0.3)],
)
def test_thinking_takes_a_full_width_question_mark(thinking_tokens, thought, expected):
    text = thought + "</think>答案是8。"
    assert score("thinking", [text], [thinking_ids(thinking_tokens)]) == [pytest.approx(expected)]


@pytest.mark.parametrize(
    "thinking_tokens, thought, expected",
    [
        (25, "首先，5加3等于8。然后检查一遍！对吗？", 0.3 + 0.3 + 0.2 + 0.1 + 0.1),
        (25, "五加三得八。再算一次，还是八。", 0.3 + 0.3 + 0.2),  # two sentences, no step word
        (25, "所以答案是8", 0.3 + 0.3 + 0.1),
        (12, "最后得到8！", 0.3 + 0.2 + 0.1),  # one sentence
        (20, "为什么是8？因此是8。", 0.3 + 0.3 + 0.1 + 0.1),
        (12, "嗯", 0.3 + 0.2),
    ],
)
def test_thinking_comprehensive_reads_chinese_thinking(thinking_tokens, thought, expected):
    text = thought + "</think>答案是8。"
    assert score("thinking_comprehensive", [text], [thinking_ids(thinking_tokens)]) == [pytest.approx(expected)]
