"""The shaping rewards and cosine_length on crafted inputs, with the scores their definitions give."""

import math

import pytest

from grpo_skill import Reward, RewardError, hookimpl, plugins


def score(name, completions, completion_ids=None, preset=None, **params):
    reward = plugins.get_reward(name).build(preset=plugins.get_preset(preset) if preset else None, params=params)
    return reward(prompts=[""] * len(completions), completions=completions, completion_ids=completion_ids)


def ids(*lengths):
    return [[7] * n for n in lengths]


def test_soft_overlong_follows_dapo():
    # L_max 100, cache 20: nothing up to 80 tokens, then (80 - length) / 20, -1 beyond 100
    scores = score("soft_overlong", ["x"] * 6, ids(10, 80, 85, 90, 100, 101), max_completion_len=100,
                   soft_punish_cache=20)
    assert scores == [0.0, 0.0, -0.25, -0.5, -1.0, -1.0]


def test_soft_overlong_defaults_to_a_fifth_of_the_preset_length():
    # the tiny preset generates 32 tokens: the penalty starts after 32 - 32 // 5 = 26
    assert score("soft_overlong", ["x"] * 3, ids(26, 29, 32), preset="tiny") == [0.0, -0.5, -1.0]


def test_a_project_builds_length_rewards_from_its_own_max_completion_length(tmp_path):
    from grpo_skill import generator, project

    generator.render("proj", tmp_path, preset_name="tiny")
    config = tmp_path / "proj" / "config.toml"
    text = config.read_text()
    assert 'name = "thinking"' in text and "max_completion_length = 32" in text
    config.write_text(text.replace('name = "thinking"', 'name = "soft_overlong"')
                      .replace("max_completion_length = 32", "max_completion_length = 20"))
    [reward] = project.load(config).build_rewards(tokenizer=None)
    # L_max 20 (not the preset's 32), cache 20 // 5 = 4: the penalty starts after 16 tokens
    assert reward(completions=["x"] * 3, completion_ids=ids(16, 18, 20)) == [0.0, -0.5, -1.0]


def test_soft_overlong_without_a_length_says_which_param():
    with pytest.raises(RewardError, match="max_completion_len must be a positive number of tokens"):
        plugins.get_reward("soft_overlong").build()


def test_token_rewards_count_the_tokenizers_tokens_without_ids(tiny_tokenizer):
    reward = plugins.get_reward("soft_overlong").build(tokenizer=tiny_tokenizer,
                                                       params={"max_completion_len": 4, "soft_punish_cache": 1})
    long_text = "First, let me think about what is being asked."
    assert len(tiny_tokenizer.encode(long_text, add_special_tokens=False)) > 4
    assert reward(completions=[long_text]) == [-1.0]


def test_repetition_penalises_repeated_token_ngrams():
    completion_ids = [[1, 2, 3, 4], [5, 5, 5, 5, 5], [1, 2, 1, 2, 1, 2], [1, 2]]
    # 2-grams of 5 5 5 5 5: four, one distinct -> 1 - 1/4 = 0.75 repeated
    assert score("repetition", ["x"] * 4, completion_ids, ngram_size=2) == [0.0, -0.75, -0.6, 0.0]
    # 3-grams: 5 5 5 5 5 has three, one distinct; 1 2 1 2 1 2 four, two distinct; [1, 2] is too short for one
    assert score("repetition", ["x"] * 4, completion_ids, max_penalty=-0.5) == pytest.approx(
        [0.0, -0.5 * 2 / 3, -0.25, 0.0])


def test_repetition_refuses_a_positive_penalty():
    with pytest.raises(RewardError, match="max_penalty 0 or below"):
        plugins.get_reward("repetition").build(params={"max_penalty": 1.0})


@pytest.mark.parametrize("name", ["soft_overlong", "repetition", "think_format"])
def test_a_trl_reward_without_trl_says_what_to_install_when_it_is_built(monkeypatch, name):
    # TRL is imported at the first call; its absence is told when the reward is built (check), not mid-training
    monkeypatch.setitem(__import__("sys").modules, "trl", None)
    with pytest.raises(RewardError, match=rf"reward '{name}' \(plugin builtin:shaping\): trl is not installed; this "
                                          r"needs the training packages: pip install 'grpo-skill\[train\]'$"):
        plugins.get_reward(name).build(preset=plugins.get_preset("tiny"))


def test_think_format_with_and_without_a_template_that_opens_think():
    completions = ["reasoning</think>answer", "<think>reasoning</think>answer", "<think>reasoning", "answer"]
    assert score("think_format", completions, template_opens_think=True) == [1.0, 0.0, 0.0, 0.0]
    assert score("think_format", completions, template_opens_think=False) == [0.0, 1.0, 0.0, 0.0]
    # one thinking block: a second </think> is not one
    assert score("think_format", ["r</think>a</think>b"], template_opens_think=True) == [0.0]
    assert score("think_format", ["<think>r</think>a</think>b"], template_opens_think=False) == [0.0]
    # "auto" reads the preset: the thinking preset's template opens <think>, the standard one's does not
    assert score("think_format", completions, preset="thinking") == [1.0, 0.0, 0.0, 0.0]
    assert score("think_format", completions, preset="standard") == [0.0, 1.0, 0.0, 0.0]


def test_tag_count():
    completions = ["r</think>a", "<think>r</think>a", "r", "<think>r</think>a</think>"]
    # with the template's <think>, leaving it out counts only beside a </think>: "" and "r" earn nothing
    assert score("tag_count", completions + ["", "r</think>a</think>"], template_opens_think=True) == \
        [1.0, 0.5, 0.0, 0.0, 0.0, 0.5]
    assert score("tag_count", completions, template_opens_think=False) == [0.5, 1.0, 0.0, 0.5]
    tagged = ["<think>r</think><answer>a</answer>", "<think>r</think>a", "<answer>a</answer>"]
    assert score("tag_count", tagged, template_opens_think=False, answer_tags=True) == [1.0, 0.5, 0.5]


def test_reasoning_steps():
    completions = [
        "Step 1: add.\nStep 2: check.\nStep 3: answer.",
        "First, add. Next, check.",
        "1. add\n2. check\n3. answer\n4. done",
        "42",
    ]
    assert score("reasoning_steps", completions) == [1.0, pytest.approx(2 / 3), 1.0, 0.0]
    assert score("reasoning_steps", ["First, add."], min_steps=2) == [0.5]


def test_reasoning_steps_counts_chinese_step_markers():
    completions = [
        "第一步：5加3等于8。\n第二步：检查。\n第三步：答案是8。",
        "首先，5加3等于8。其次，检查一遍。最后，答案是8。",
        "首先算5加3，然后检查。",
        "1、相加\n2、检查\n3、作答",
        "一、相加\n二、检查",
        "（1）相加\n（2）检查\n（3）作答",
        "最后答案是8。",  # 最后 without its comma is "the last", no step
        "答案是8。",
        "步骤1：每箱4个\n步骤2：3箱12个\n步骤3：加5得17",
        "(1) 每箱4个\n(2) 3箱12个\n(3) 加5得17",
        "① 每箱4个\n② 3箱12个\n③ 加5得17",
        "先算每箱4个，再算3箱12个，最后加5得17。",
        "我再说一遍，先生，答案是8。",  # 再 and 先 without a calculation after them: "again", "Mr."
    ]
    assert score("reasoning_steps", completions) == [1.0, 1.0, pytest.approx(2 / 3), 1.0, pytest.approx(2 / 3), 1.0,
                                                     0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]


ENGLISH = "Let me add the two numbers first, then check the sum."
CHINESE = "我先把两个数相加，然后检查一下结果是否正确。"
ENGLISH_ANSWER = "The answer is forty-two, I am quite sure of it."


def test_language_share_of_the_target_language():
    completions = [ENGLISH + "</think>" + ENGLISH_ANSWER, CHINESE + "</think>" + ENGLISH_ANSWER, "42"]
    english = score("language", completions, language="en")
    # the second: 47 English characters of 69 with letters; the third has no text to judge
    assert english == [1.0, pytest.approx(len(ENGLISH_ANSWER) / (len(CHINESE) + len(ENGLISH_ANSWER))), None]
    assert score("language", completions[:2], language="zh", part="thinking") == [0.0, 1.0]
    assert score("language", completions[:2], language="zh", part="answer") == [0.0, 0.0]


def test_language_scores_text_too_short_for_py3langid_by_its_script():
    # "Yes." reads as Kabyle and "Paris." as Afrikaans: they once scored 0.0 as English; in Latin letters a short
    # text could be English, French or German: no opinion
    assert score("language", ["</think>Yes.", "</think>Paris.", "</think>42"], language="en",
                 part="answer") == [None, None, None]
    # but a short answer with no Latin letter is no English, and one in Han characters is Chinese
    assert score("language", ["</think>答案是四十二。", "</think>Да."], language="en", part="answer") == [0.0, 0.0]
    assert score("language", ["</think>答案是20", "</think>The answer is 20", "</think>答案是20 apples"],
                 language="zh", part="answer") == [1.0, 0.0, pytest.approx(3 / 9)]
    # Japanese shares Han with Chinese: kana decide it, Han alone does not
    assert score("language", ["</think>答えは20です", "</think>答案是20"], language="ja",
                 part="answer") == [1.0, None]
    # beside thinking long enough to judge, a short answer is left out, not counted against it
    assert score("language", [ENGLISH + "</think>Oui."], language="en") == [1.0]
    # the limit is 40 bytes: 14 Chinese characters are enough
    assert score("language", ["</think>所以答案是四十二，计算正确。"], language="zh",
                 part="answer") == [1.0]


def test_language_refuses_an_unknown_code():
    with pytest.raises(RewardError, match="'klingon' is no language code"):
        plugins.get_reward("language").build(params={"language": "klingon"})


THINK_END_READERS = sorted(name for name, registered in plugins.rewards().items()
                           if registered.plugin.startswith("builtin:") and "think_end_token" in registered.item.params)


@pytest.mark.parametrize("name", THINK_END_READERS)
def test_an_empty_think_end_token_is_refused_when_the_reward_is_built(name):
    """Every text holds "": the thinking would never be told from the answer (str.split refuses it at the first
    call: cosine_length and kimi_length passed `new` and `check`, and failed at training's first step)."""
    assert {"cosine_length", "kimi_length", "accuracy", "language", "thinking"} <= set(THINK_END_READERS)
    with pytest.raises(RewardError, match=rf"reward '{name}' .*: params.think_end_token \"\" holds no text"):
        plugins.get_reward(name).build(params={"think_end_token": ""}, grpo={"max_completion_length": 64})
    with pytest.raises(RewardError, match=r'params.think_end_token " \\n" holds no text'):  # a space ends each word
        plugins.get_reward(name).build(params={"think_end_token": " \n"}, grpo={"max_completion_length": 64})


def test_cosine_length_scales_correctness_by_length():
    right, wrong = "</think>42", "</think>41"
    completions = [right, right, right, wrong, wrong, wrong]
    scores = plugins.get_reward("cosine_length").build(params={"max_len": 10})(
        completions=completions, completion_ids=ids(0, 5, 12, 0, 5, 10), answer=["42"] * 6)
    # right: 1.0 at 0 tokens, 0.75 halfway (cos = 0), 0.5 from max_len on; wrong: -1.0, -0.75, -0.5
    assert scores == [1.0, pytest.approx(0.75), 0.5, -1.0, pytest.approx(-0.75), -0.5]
    assert all(math.isfinite(s) for s in scores)


def test_cosine_length_is_trls_cosine_schedule():
    # the docs say cosine_length computes TRL's schedule itself: on LaTeX answers, which TRL reads, the two agree
    from trl.rewards import get_cosine_scaled_reward

    texts = [r"</think>\boxed{42}"] * 4 + [r"</think>\boxed{41}"] * 4
    lengths = ids(1, 3, 7, 15) + ids(1, 3, 7, 15)
    ours = plugins.get_reward("cosine_length").build(params={"max_len": 10})(
        completions=texts, completion_ids=lengths, answer=["42"] * 8)
    trls = get_cosine_scaled_reward(max_len=10)(
        [[{"role": "assistant", "content": text}] for text in texts], solution=["$42$"] * 8, completion_ids=lengths)
    assert ours == pytest.approx(trls) and len(set(trls)) == 8


def test_check_takes_true_or_false_for_a_param_whose_default_is_auto(cli, tmp_path):
    cli("new", "proj", "--preset", "tiny", "-r", "think_format", "-o", str(tmp_path))
    config = tmp_path / "proj" / "config.toml"
    config.write_text(config.read_text().replace('name = "think_format"\n',
                                                 'name = "think_format"\nparams = { template_opens_think = true }\n'))
    assert "OK" in cli("check", str(tmp_path / "proj")).stdout  # its help says: "auto", true or false


@pytest.mark.parametrize("text, opened, expected", [
    ("<think>6 x 7 = 42</think><answer>42</answer>", False, 1.0),
    ("<think>\n6 x 7 = 42\n</think>\n<answer>\n42\n</answer>\n", False, 1.0),
    ("6 x 7 = 42</think><answer>42</answer>", False, 0.0),  # no <think>, and the prompt did not open it
    ("6 x 7 = 42</think><answer>42</answer>", True, 1.0),  # Qwen3 Thinking-2507: the prompt opened it
    ("<think>6 x 7 = 42</think><answer>42</answer>", True, 1.0),  # a model that repeats it anyway
    ("<think>6 x 7 = 42</think>42", False, 0.0),  # no answer tags
    ("<think>6 x 7</think><answer> </answer>", False, 0.0),  # an empty answer
    ("<think>6 x 7</think><answer>42</answer> and more", False, 0.0),  # text after the answer
    ("<think>a</think><think>b</think><answer>42</answer>", False, 0.0),  # two thinking blocks
    ("<think>a</think><answer>4</answer><answer>2</answer>", False, 0.0),  # two answers
    ("<answer>42</answer><think>a</think>", False, 0.0),  # answer before the thinking
    ("6 x 7 = 42", True, 0.0),  # unfinished thinking
])
def test_answer_format(text, opened, expected):
    assert score("answer_format", [text], template_opens_think=opened) == [expected]


def test_answer_format_asks_the_preset_whether_the_template_opens_think():
    text = "6 x 7 = 42</think><answer>42</answer>"
    assert score("answer_format", [text], preset="thinking") == [1.0]
    assert score("answer_format", [text], preset="standard") == [0.0]


def kimi(completions, prompts, lengths, golds):
    reward = plugins.get_reward("kimi_length").build()
    return reward(prompts=prompts, completions=completions, completion_ids=ids(*lengths), answer=golds)


def test_kimi_length_follows_kimi_k15_within_each_prompts_group():
    # one group: lengths 10..30, lambda = 0.5 - (len - 10) / 20: 0.5, 0.0, -0.5
    right, wrong = "</think>42", "</think>41"
    completions = [right, right, right, wrong, wrong]
    scores = kimi(completions, ["p"] * 5, (10, 20, 30, 10, 30), ["42"] * 5)
    # right: lambda; wrong: min(0, lambda): the short wrong one earns nothing for being short
    assert scores == [0.5, 0.0, -0.5, 0.0, -0.5]


def test_kimi_length_groups_by_prompt():
    # two prompts in one batch, as TRL passes G completions per prompt: min and max are the group's own
    prompts = ["a", "a", "b", "b"]
    completions, golds = ["</think>1", "</think>1", "</think>2", "</think>2"], ["1", "1", "2", "2"]
    scores = kimi(completions, prompts, (5, 15, 100, 300), golds)
    assert scores == [0.5, -0.5, 0.5, -0.5]
    # chat prompts group the same way
    chat = [[{"role": "user", "content": "a"}]] * 2 + [[{"role": "user", "content": "b"}]] * 2
    assert kimi(["</think>1"] * 4, chat, (5, 15, 100, 300), ["1"] * 4) == scores


def test_kimi_length_is_zero_when_a_group_is_all_as_long_and_none_for_unreadable_golds():
    import warnings

    assert kimi(["</think>42", "</think>41"], ["p", "p"], (8, 8), ["42", "42"]) == [0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert kimi(["</think>42", "</think>41"], ["p", "p"], (8, 16), [r"\frac{1}{", r"\frac{1}{"]) == [None, None]


def test_kimi_length_reads_chinese_answers():
    assert kimi(["</think>答案是42。", "</think>所以一共有41个。"], ["p", "p"], (10, 20), ["42", "42"]) == [0.5, -0.5]


def test_language_reads_plain_chinese_as_chinese_at_any_length():
    # py3langid labels this right answer Wu Chinese ("wuu"): it once scored 0.0 for zh, level with an English answer
    right = "原有12张，再买8张，合起来是12+8=20（张）。答案：20张。"
    long_right = "小明原来有12张邮票，又买了8张，12+8=20，所以现在一共有20张。" * 3
    assert score("language", [right, long_right, "The answer is 20 stamps, twelve plus eight."],
                 language="zh") == [1.0, 1.0, 0.0]
    # letters count, digits do not: 3 Han characters of 9 letters
    assert score("language", ["答案是20 apples"], language="zh") == [pytest.approx(3 / 9)]



def test_language_leaves_maths_out_of_a_chinese_answer():
    # LaTeX, a variable and a unit are no English: these right Chinese answers scored 0.33 and 0.77 for zh, so that in
    # a group where every answer was right, std scaling made the difference a full-size signal against \boxed and x
    right = [r"先算 3 \times 4 = 12，答案：\boxed{12}个", "设苹果有 x 个，x + 3 = 15，所以 x = 12。答案：12个",
             "绳子长 $3 \\times 4$ 米，剪去 2cm 后还剩多少？答案：1198cm"]
    assert score("language", right, language="zh") == [1.0, 1.0, 1.0]
    # points, functions and Greek letters of plain-text maths too
    assert score("language", ["在△ABC中，AB = 5，BC = 12，所以 sin A = 12/13，面积为 30。",
                              "设 f(x) = log x，则 f(100) = 2，所以答案是 2。", "圆的面积是 πr²，答案：约 3.14"],
                 language="zh") == [1.0, 1.0, 1.0]
    # words stay words: English around the maths still counts against Chinese
    assert score("language", [r"The answer is \boxed{12}, so x = 12.", r"答案是\boxed{12} apples"],
                 language="zh") == [0.0, pytest.approx(3 / 9)]
    # dollars are money, not $...$ maths: the prose between two amounts is kept (it once scored None for en, and
    # English wrapped in $ signs counted as Chinese)
    money = "Weng earns $12 an hour for babysitting. Yesterday she did 50 minutes of it, so she earned $10."
    assert score("language", [money], language="en") == [1.0]
    assert score("language", ["The pen costs $5, and the book costs more because it is big, so it costs $12. 答案是17。"],
                 language="zh")[0] < 0.1


SEEN_SETTINGS = []


def _reads_settings(context):
    """A factory as plugins wrote them before RewardContext.grpo (context.preset.grpo) and as they write them now."""
    SEEN_SETTINGS.append((context.grpo["max_completion_length"], context.preset.grpo["max_completion_length"]))
    return lambda completions, **kwargs: [0.0] * len(completions)


class _SettingsPlugin:
    @hookimpl
    def register_rewards(self, register):
        register(Reward("reads_settings", _reads_settings, "Reads the run's max_completion_length."))


def test_rewards_read_the_run_settings_from_their_context_and_old_plugins_from_the_preset(tmp_path):
    import pickle

    from grpo_skill import generator, project

    generator.render("proj", tmp_path, preset_name="tiny")
    config = tmp_path / "proj" / "config.toml"
    config.write_text(config.read_text().replace('name = "thinking"', 'name = "reads_settings"')
                      .replace("max_completion_length = 32", "max_completion_length = 20"))
    plugins.register(_SettingsPlugin(), "settings-plugin")
    try:
        SEEN_SETTINGS.clear()
        [reward] = project.load(config).build_rewards(tokenizer=None)
        pickle.loads(pickle.dumps(reward))  # TRL's async trainer rebuilds it in another process: the same settings
        assert SEEN_SETTINGS == [(20, 20), (20, 20)]  # the project's 20, not the tiny preset's 32
        assert plugins.get_preset("tiny").grpo["max_completion_length"] == 32
    finally:
        plugins.unregister("settings-plugin")


def test_language_reads_tags_as_markup_not_english():
    # a Qwen3 hybrid with thinking off writes an empty <think></think> first: its five Latin letters made this right
    # Chinese answer 0.62 for zh, the shorter the answer the lower
    completions = ["<think>\n\n</think>\n\n小明一共有 17 个苹果。",
                   "<think>\n好的，先算 3 箱：3×4=12，再加 5 个，得 17。\n</think>\n\n小明一共有 17 个苹果。",
                   "<answer>一共有17个</answer>"]
    assert score("language", completions, language="zh") == [1.0, 1.0, 1.0]
    assert score("language", ["<think>\n\n</think>\n\n" + ENGLISH_ANSWER], language="zh") == [0.0]
