"""The seed guide's rewards: length and format (rule-based), thinking and thinking_comprehensive (token-based).

Their scores are the seed's, exactly, with their default params, for English text. Two params make length and format
fit text without spaces between words (Chinese, Japanese): ``length.count = "cjk"`` counts each CJK character as a
word, and ``"tokens"`` counts tokens; ``format.end_marks = ".。！？!?"`` accepts any of those marks as the end of a
sentence (`grpo-skill new` writes both for a Chinese project). thinking and thinking_comprehensive read Chinese
thinking by themselves: ？ is a question, 。 and ！ end sentences, 首先/然后/最后... are step words.
Completions arrive as strings, or as chat messages when the dataset's prompts are conversations;
``completion_text`` reads both.
"""

from __future__ import annotations

import re

from grpo_skill import Reward, completion_text, hookimpl
from grpo_skill.errors import UserError
from grpo_skill.i18n import _
from grpo_skill.i18n import N_  # descriptions are translated where they are shown (grpo-skill rewards)
from grpo_skill.registry import QWEN3_THINK_END_ID

from .verifiable import think_end_param


# a CJK character (Han, kana, Hangul) is a word of its own; any other run without spaces is one word
CJK_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|"
                      r"[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                      r"\u3000-\u303f\uff00-\uffef]+")
COUNTS = ("words", "cjk", "tokens")


def length_factory(context):
    too_short, long_from, count = context.params["too_short"], context.params["long_from"], context.params["count"]
    if count not in COUNTS:
        raise UserError(_("params.count = {count!r}: use \"words\" (split at spaces), \"cjk\" (each CJK character "
                          "a word) or \"tokens\"").format(count=count))
    for key in ("too_short", "long_from"):  # a completion never has fewer than 0 words or tokens
        if context.params[key] < 0:
            raise UserError(_("params.{key} = {value} is below 0, and no completion is shorter than 0; give 0 or "
                              "more").format(key=key, value=context.params[key]))
    if long_from <= too_short:
        raise UserError(_("params: long_from = {long} is not above too_short = {short}, so no completion scores 1.0 "
                          "(the band from too_short to long_from); give long_from above too_short").format(
            short=too_short, long=long_from))

    def length(completions, prompts=None, completion_ids=None, **kwargs):
        texts = [completion_text(completion) for completion in completions]
        if count == "tokens":
            ids = completion_ids if completion_ids is not None else context.encode(texts)
            sizes = [len(token_ids) for token_ids in ids]
        elif count == "cjk":
            sizes = [len(CJK_WORD.findall(text)) for text in texts]
        else:
            sizes = [len(text.split()) for text in texts]
        return [-1.0 if words < too_short else 1.0 if words < long_from else 0.5 for words in sizes]

    return length


def format_factory(context):
    end_marks = context.params["end_marks"]
    if not end_marks:
        raise UserError(_("params.end_marks is empty; give the characters that end a sentence, e.g. \".。！？\""))

    def format(completions, prompts=None, **kwargs):
        scores = []
        for completion in completions:
            text = completion_text(completion)
            scores.append(0.5 * text.endswith(tuple(end_marks)) + 0.5 * (not text.startswith(" ")))
        return scores

    return format


def _thinking_parts(context, completions, completion_ids):
    """(thinking token count or None when </think> is missing, thinking text) per completion."""
    think_end = context.params["think_end_token"]
    end_id = context.token_id(think_end, qwen3_default=QWEN3_THINK_END_ID)
    texts = [completion_text(c) for c in completions]
    ids = completion_ids if completion_ids is not None else context.encode(texts)
    for text, token_ids in zip(texts, ids):
        token_ids = list(token_ids)
        if end_id in token_ids:
            # tokens before </think>; the thinking-2507 template opens <think> in the prompt
            yield token_ids.index(end_id), text.split(think_end)[0]
        else:
            yield None, text


QUESTION_MARKS = ("?", "？")  # the full-width one ends a Chinese question
SENTENCE_ENDS = (".", "!", "。", "！")


def _asks(thought: str) -> bool:
    return any(mark in thought for mark in QUESTION_MARKS)


def thinking_factory(context):
    think_end_param(context)  # read at each call (_thinking_parts)

    def thinking(completions, prompts=None, completion_ids=None, **kwargs):
        scores = []
        for length, thought in _thinking_parts(context, completions, completion_ids):
            if length is None:
                scores.append(-1.0)
                continue
            asks_itself = 0.1 if _asks(thought) else 0.0
            if length < 10:
                scores.append(0.3)
            elif length < 30:
                scores.append(0.7 + asks_itself)
            else:
                scores.append(1.0 + asks_itself)
        return scores

    return thinking


STEP_WORDS = ("first", "then", "next", "finally")
# the same in Chinese (first, second, then, next, next, finally), and the words that draw a conclusion from a step
# (therefore, so): Chinese reasoning strings its steps together with them
CHINESE_STEP_WORDS = ("首先", "其次", "然后", "接着", "接下来", "最后", "因此", "所以")


def thinking_comprehensive_factory(context):
    think_end_param(context)  # read at each call (_thinking_parts)

    def thinking_comprehensive(completions, prompts=None, completion_ids=None, **kwargs):
        scores = []
        for length, thought in _thinking_parts(context, completions, completion_ids):
            if length is None:
                scores.append(-0.5)
                continue
            score = 0.3  # closed its thinking
            score += 0.3 if length >= 20 else 0.2 if length >= 10 else 0.0
            score += 0.2 if sum(thought.count(mark) for mark in SENTENCE_ENDS) >= 2 else 0.0
            score += 0.1 if _asks(thought) else 0.0
            lowered = thought.lower()
            score += 0.1 if any(word in lowered for word in STEP_WORDS + CHINESE_STEP_WORDS) else 0.0
            scores.append(score)
        return scores

    return thinking_comprehensive


THINK_END_HELP = N_("the token that closes the thinking; its id comes from the tokenizer (Qwen3's 151668 "
                    "without one)")


@hookimpl
def register_rewards(register):
    register(Reward(
        "length", length_factory,
        N_("Word count: -1.0 under 5 words, 1.0 under 50, 0.5 from 50 on."),
        params={"too_short": 5, "long_from": 50, "count": "words"},
        param_help={"too_short": N_("fewer words than this score -1.0"),
                    "long_from": N_("from this many words on the score is 0.5"),
                    "count": N_("\"words\": split at spaces (the seed's); \"cjk\": each Chinese, Japanese or Korean "
                                "character is a word, other text split at spaces; \"tokens\": completion tokens")},
        example=("--completion", "Recursion is a function calling itself.", "--completion", "Yes."),
    ))
    register(Reward(
        "format", format_factory,
        N_("+0.5 when the completion ends with '.', +0.5 when it does not start with a space."),
        params={"end_marks": "."},
        param_help={"end_marks": N_("characters any of which may end the completion (the seed's: \".\"; for "
                                    "Chinese: \".。！？!?\")")},
        example=("--completion", "Done.", "--completion", " done"),
    ))
    register(Reward(
        "thinking", thinking_factory,
        N_("Token-based: -1.0 without </think>; else 0.3 under 10 thinking tokens, 0.7 under 30, 1.0 from 30 "
           "(+0.1 when the thinking asks a '?' or '？', from 10 tokens on)."),
        params={"think_end_token": "</think>"},
        param_help={"think_end_token": THINK_END_HELP},
        example=("--completion", "Is 91 prime? 7 x 13 = 91, so no.</think>No.", "--completion", "No.",
                 "--tokenizer", "tiny"),
    ))
    register(Reward(
        "thinking_comprehensive", thinking_comprehensive_factory,
        N_("Token-based: -0.5 without </think>; else 0.3 + depth (0.3 from 20 tokens, 0.2 from 10) + 0.2 for two "
           "sentences + 0.1 for a '?' + 0.1 for step words (first/then/next/finally); Chinese counts too (。！ end "
           "sentences, ？ asks, and the Chinese step words)."),
        params={"think_end_token": "</think>"},
        param_help={"think_end_token": THINK_END_HELP},
        example=("--completion", "First, 91 is odd. Then try 7? 7 x 13 = 91.</think>Not prime.",
                 "--completion", "Prime.</think>Yes.", "--tokenizer", "tiny"),
    ))
