"""Rewards for the form of a completion: soft_overlong, repetition, think_format, answer_format, tag_count,
reasoning_steps and language.

soft_overlong, repetition and think_format wrap TRL's ``trl.rewards`` (DAPO's overlong punishment, the n-gram
repetition penalty, the think-format check); TRL is imported at a reward's first call, never by the CLI: building
one (`new`, `check`) checks only that TRL is installed.
"""

from __future__ import annotations

import importlib
import re
import threading
import unicodedata

from grpo_skill import Reward, completion_text, hookimpl
from grpo_skill.errors import MissingPackage, UserError
from grpo_skill.i18n import N_, _

from .needs import model, on_first_call, require
from .verifiable import max_tokens_param, opens_think, think_end_param

THINK_START, THINK_END = "<think>", "</think>"
OPENS_THINK_HELP = N_("\"auto\": true when the run's chat template (else the preset) opens <think> in the prompt")


def _ids(context, completions, completion_ids):
    """The completion token ids TRL passes, or the tokenizer's when the reward is called without them."""
    if completion_ids is not None:
        return [list(ids) for ids in completion_ids]
    return context.encode([completion_text(c) for c in completions])


def from_trl(make):
    """The function ``make(trl.rewards)`` returns, made at its first call; refused now when TRL is not installed."""
    require("trl", _("{module} is not installed; this needs the training packages: pip install "
                     "'grpo-skill[train]'").format(module="trl"))
    return on_first_call(lambda: make(importlib.import_module("trl.rewards")))


def soft_overlong_factory(context):
    max_len = max_tokens_param(context, "max_completion_len")
    cache = context.params["soft_punish_cache"] or max(1, max_len // 5)
    if not 0 < cache <= max_len:
        raise UserError(_("params.soft_punish_cache = {cache} must be between 1 and max_completion_len "
                          "({max_len})").format(cache=cache, max_len=max_len))
    punish = from_trl(lambda trl: trl.get_soft_overlong_punishment(max_completion_len=max_len,
                                                                  soft_punish_cache=cache))

    def soft_overlong(completions, completion_ids=None, **kwargs):
        return punish(completion_ids=_ids(context, completions, completion_ids))

    return soft_overlong


def repetition_factory(context):
    size, penalty = context.params["ngram_size"], context.params["max_penalty"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 1 or penalty > 0:
        raise UserError(_("params: ngram_size must be a whole number from 1 up and max_penalty 0 or below "
                          "(got {size}, {penalty})").format(size=size, penalty=penalty))
    penalise = from_trl(lambda trl: trl.get_repetition_penalty_reward(ngram_size=size, max_penalty=float(penalty)))

    def repetition(completions, completion_ids=None, **kwargs):
        return penalise(completion_ids=_ids(context, completions, completion_ids))

    return repetition


def think_format_factory(context):
    opened = opens_think(context)
    think_format_reward = from_trl(lambda trl: trl.think_format_reward)

    def think_format(completions, **kwargs):
        # TRL's check wants "<think>...</think>" from the start: put back the <think> the prompt holds
        texts = [(THINK_START if opened else "") + completion_text(c) for c in completions]
        scores = think_format_reward([[{"role": "assistant", "content": text}] for text in texts])
        # TRL's pattern lets a second </think> through; one thinking block means one
        return [score if text.count(THINK_END) == 1 else 0.0 for score, text in zip(scores, texts)]

    return think_format


ANSWER_START, ANSWER_END = "<answer>", "</answer>"


def answer_format_factory(context):
    opened = opens_think(context)
    # <think> first unless the prompt opened it (then a completion may still repeat it), one </think>, then
    # <answer>non-empty</answer> and nothing after it
    think_start = r"(?:<think>)?" if opened else r"<think>"
    pattern = re.compile(rf"\s*{think_start}(?:(?!<think>).)*?</think>\s*<answer>(?=.*\S.*</answer>)"
                         rf"(?:(?!<answer>).)*?</answer>\s*", re.DOTALL)

    def answer_format(completions, **kwargs):
        scores = []
        for completion in completions:
            text = completion_text(completion)
            once = all(text.count(tag) == 1 for tag in (THINK_END, ANSWER_START, ANSWER_END))
            scores.append(1.0 if once and pattern.fullmatch(text) else 0.0)
        return scores

    return answer_format


def tag_count_factory(context):
    opened, answer_tags = opens_think(context), context.params["answer_tags"]
    # each tag and how often it must appear: <think> not at all when the prompt already opened it
    expected = {THINK_START: 0 if opened else 1, THINK_END: 1}
    if answer_tags:
        expected.update({"<answer>": 1, "</answer>": 1})

    def tag_count(completions, **kwargs):
        scores = []
        for completion in completions:
            text = completion_text(completion)
            right = sum(text.count(tag) == count for tag, count in expected.items())
            if opened and THINK_END not in text and THINK_START not in text:
                right -= 1  # no <think> earns nothing until the thinking is closed: else "" scores
            scores.append(right / len(expected))
        return scores

    return tag_count


# open-r1's reasoning_steps pattern: "Step 1:", numbered lines, bullets, and ordinal words
STEP = re.compile(r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)", re.MULTILINE)
# and its Chinese: 第一步 / 第2步 / 步骤1 / 步骤一 (Step 1), lines numbered 1、 一、 1． （1） (1) ①, the words that order
# steps, 首先 / 其次 / 然后 / 接着 / 接下来 (First, Second, Next) and 最后， (Finally,: without its comma 最后 is also "the
# last", 最后答案) or before a calculation (最后加), and 先 / 再 before one (先算…再算…: alone they are "before", "again")
CHINESE_STEP = re.compile(r"第[一二三四五六七八九十百\d]+步|步骤\s*(?:\d+|[一二三四五六七八九十]+)|"
                          r"^(?:\d+|[一二三四五六七八九十]+)[、．]|^[（(]\d+[）)]|^[\u2460-\u2473]|"
                          r"首先|其次|然后|接着|接下来|最后(?=[，,]|[算求加减乘除]|计算)|(?<!首)[先再](?=算|求|计算)", re.MULTILINE)


def step_count(text: str) -> int:
    return len(STEP.findall(text)) + len(CHINESE_STEP.findall(text))


def reasoning_steps_factory(context):
    enough = context.params["min_steps"]
    if isinstance(enough, bool) or not isinstance(enough, int) or enough < 1:
        raise UserError(_("params.min_steps must be a whole number from 1 up (got {value})").format(value=enough))

    def reasoning_steps(completions, **kwargs):
        return [min(1.0, step_count(completion_text(c)) / enough) for c in completions]

    return reasoning_steps


_identifier = None
_identifier_lock = threading.Lock()
# py3langid reads UTF-8 bytes: on fewer than 40 its guess is noise ("Yes." reads as Kabyle); 40 is a short English
# sentence or about 13 Chinese characters. Sentences are joined into pieces at least that long.
CHUNK_BYTES = 40


def language_identifier():
    """py3langid's identifier (offline: its model ships in the wheel), loaded once."""
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            try:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier
            except ImportError:
                raise MissingPackage(_("the language reward needs py3langid: pip install py3langid "
                                       "(or pip install 'grpo-skill[train]')")) from None
            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
        return _identifier


def _chunks(text: str) -> list[str]:
    """Sentences joined into pieces of at least CHUNK_BYTES (a short last sentence joins the piece before it);
    none for a text shorter than that, too short to tell its language. Pieces without letters are dropped."""
    pieces, current = [], ""
    for sentence in re.split(r"(?<=[.!?;。！？；\n])\s*", text):
        current = f"{current} {sentence}".strip() if current else sentence.strip()
        if len(current.encode("utf-8")) >= CHUNK_BYTES:
            pieces.append(current)
            current = ""
    if current and pieces:
        pieces[-1] = f"{pieces[-1]} {current}"
    return [piece for piece in pieces if any(char.isalpha() for char in piece)]


# The script a language is written in, for texts too short for py3langid: "CJK" is Han. A script of one language
# decides it; a script several languages share (Latin: en or fr?) decides only when the text is not in it at all.
SCRIPTS = {"zh": ("CJK",), "ja": ("CJK", "HIRAGANA", "KATAKANA"), "ko": ("HANGUL",), "el": ("GREEK",),
           "he": ("HEBREW",), "th": ("THAI",), "ka": ("GEORGIAN",), "hy": ("ARMENIAN",),
           "ru": ("CYRILLIC",), "uk": ("CYRILLIC",), "bg": ("CYRILLIC",), "sr": ("CYRILLIC",), "mk": ("CYRILLIC",),
           "be": ("CYRILLIC",), "kk": ("CYRILLIC",), "mn": ("CYRILLIC",), "ar": ("ARABIC",), "fa": ("ARABIC",),
           "ur": ("ARABIC",), "hi": ("DEVANAGARI",), "mr": ("DEVANAGARI",), "ne": ("DEVANAGARI",)}
OWN_SCRIPT = {"zh", "ko", "el", "he", "th", "ka", "hy"}  # ja too, once kana shows it is no Chinese


# Maths is written in no language: LaTeX (math-mode spans and commands such as \times, \boxed), a lone letter (a
# variable: x, n), a unit right after a number (12cm, 3 kg; not "12 an hour"), points and figures in capitals (AB,
# △ABC), the usual function names (sin, log) and Greek letters (π; not for Greek) are left out before a text's
# language is judged, or a right Chinese answer with a \boxed{} or an x reads as part English. Inline $...$ is maths
# only as Markdown reads it: on one line, no space inside either $ and no digit after the closing one, so "$12 an hour
# ... earned $10" is prose.
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"  # accented letters are letters too
_FUNCTIONS = "sin|cos|tan|cot|sec|csc|arcsin|arccos|arctan|sinh|cosh|tanh|log|ln|lg|exp|max|min|lim|gcd|lcm|mod|det"
_MATHS = re.compile("|".join((
    r"\$\$.*?\$\$", r"\$(?=\S)[^$\n]{1,80}?(?<=\S)\$(?!\d)", r"\\\(.*?\\\)", r"\\\[.*?\\\]",  # math mode
    r"\\[A-Za-z]+",  # a LaTeX command
    rf"(?<=\d)\s?[A-Za-z]{{1,3}}(?![{_LATIN}])(?!\s+[{_LATIN}])",  # a unit after a number
    rf"(?<![{_LATIN}])(?:[A-Za-z]|[A-Z]{{2,4}}|{_FUNCTIONS})(?![{_LATIN}])",  # a variable, points, a function
)), re.S)
_GREEK = re.compile(r"[\u0391-\u03a9\u03b1-\u03c9]")
# a tag such as <think> or <answer>: read as English, it made a Chinese answer after an empty <think></think> 0.6
_TAG = re.compile(r"</?[A-Za-z][\w-]*>")


def without_maths(text: str, language: str = "") -> str:
    text = _MATHS.sub(" ", text)
    return text if language == "el" else _GREEK.sub(" ", text)


def _script(char: str) -> str:
    return unicodedata.name(char, "?").split(" ")[0]


def script_share(text: str, language: str) -> float | None:
    """A short text's share of letters in the language's script; None when the script cannot tell (no letters, or
    a script other languages write too and the text uses it)."""
    scripts = [_script(char) for char in text if char.isalpha()]
    if not scripts:
        return None
    own = SCRIPTS.get(language, ("LATIN",))
    share = sum(script in own for script in scripts) / len(scripts)
    if share == 0.0:
        return 0.0  # not one letter in the language's script: certainly another language
    if language in OWN_SCRIPT or (language == "ja" and any(s in ("HIRAGANA", "KATAKANA") for s in scripts)):
        return share
    return None


def language_factory(context):
    language, part = context.params["language"], context.params["part"]
    think_end = think_end_param(context)
    if part not in ("all", "thinking", "answer"):
        raise UserError(_("params.part = {part!r}: use \"all\", \"thinking\" or \"answer\"").format(part=part))
    identifier = model(language_identifier)  # its model (a second to load) knows the language codes
    if language not in identifier.labels:
        raise UserError(_("params.language = {language!r} is no language code py3langid knows; use an ISO 639-1 "
                          "code such as en, zh, fr, de, ja").format(language=language))

    def share_in_language(*parts: str) -> float | None:
        parts = tuple(without_maths(part, language) for part in parts)
        if language in OWN_SCRIPT:  # py3langid reads much plain Chinese as Wu or Cantonese; the script cannot err
            return script_share(" ".join(parts), language)
        chunks = [chunk for part in parts for chunk in _chunks(part)]
        if not chunks:  # too short for py3langid: its script may still tell
            return script_share(" ".join(parts), language)
        chars = sum(len(chunk) for chunk in chunks)
        return sum(len(chunk) for chunk in chunks if identifier.classify(chunk)[0] == language) / chars

    opened = opens_think(context)

    def language_reward(completions, **kwargs):
        scores = []
        for completion in completions:
            text = completion_text(completion)
            if think_end in text:
                thinking, _end, answer = text.partition(think_end)
            else:  # unfinished thinking, or no thinking at all
                thinking, answer = (text, "") if opened or THINK_START in text else ("", text)
            thinking, answer = (_TAG.sub(" ", part) for part in (thinking, answer))  # markup, in no language
            scores.append(share_in_language(*{"all": (thinking, answer), "thinking": (thinking,),
                                              "answer": (answer,)}[part]))
        return scores

    return language_reward


@hookimpl
def register_rewards(register):
    register(Reward(
        "soft_overlong", soft_overlong_factory,
        N_("DAPO's soft overlong punishment on completion tokens: 0.0 up to max_completion_len - "
           "soft_punish_cache, then falling linearly to -1.0 at max_completion_len, -1.0 beyond."),
        params={"max_completion_len": 0, "soft_punish_cache": 0},
        param_help={"max_completion_len": N_("L_max in tokens; 0: the project's [grpo] max_completion_length"),
                    "soft_punish_cache": N_("length of the falling stretch in tokens; 0: a fifth of L_max")},
        example=("--completion", "A short answer.", "--completion", "A much longer answer that runs on and on.",
                 "--param", "soft_overlong.max_completion_len=20", "--param", "soft_overlong.soft_punish_cache=10",
                 "--tokenizer", "tiny"),
    ))
    register(Reward(
        "repetition", repetition_factory,
        N_("N-gram repetition penalty on completion tokens: 0.0 when no n-gram repeats, down to max_penalty for "
           "a loop (share of repeated n-grams x max_penalty)."),
        params={"ngram_size": 3, "max_penalty": -1.0},
        param_help={"ngram_size": N_("tokens per n-gram"), "max_penalty": N_("the score of a fully repetitive "
                                                                             "completion (0 or below)")},
        example=("--completion", "The sum is 42 because 6 times 7 is 42.",
                 "--completion", "again again again again again again", "--tokenizer", "tiny"),
    ))
    register(Reward(
        "think_format", think_format_factory,
        N_("1.0 when the completion is <think>reasoning</think>answer (one thinking block, first), else 0.0; "
           "with a template that opens <think> the completion starts inside the thinking."),
        params={"template_opens_think": "auto"},
        param_help={"template_opens_think": OPENS_THINK_HELP},
        example=("--completion", "<think>6 x 7 = 42</think>42", "--completion", "42",
                 "--param", "think_format.template_opens_think=false"),
    ))
    register(Reward(
        "answer_format", answer_format_factory,
        N_("1.0 when the completion is <think>reasoning</think><answer>answer</answer> (each tag once, a "
           "non-empty answer, nothing after </answer>), else 0.0; when the chat template opens <think> (Qwen3 "
           "Thinking-2507) the completion may start inside the thinking, with or without <think>."),
        params={"template_opens_think": "auto"},
        param_help={"template_opens_think": OPENS_THINK_HELP},
        example=("--completion", "<think>6 x 7 = 42</think><answer>42</answer>", "--completion",
                 "<think>6 x 7 = 42</think>42", "--param", "answer_format.template_opens_think=false"),
    ))
    register(Reward(
        "tag_count", tag_count_factory,
        N_("Share of tags used exactly as expected: </think> once, <think> once (or never when the template "
           "opens it, which counts only once </think> is there), and with answer_tags <answer> and </answer> once "
           "each."),
        params={"template_opens_think": "auto", "answer_tags": False},
        param_help={"template_opens_think": OPENS_THINK_HELP,
                    "answer_tags": N_("also expect <answer>...</answer> after the thinking")},
        example=("--completion", "<think>6 x 7</think>42", "--completion", "<think>6 x 7<think>42",
                 "--param", "tag_count.template_opens_think=false"),
    ))
    register(Reward(
        "reasoning_steps", reasoning_steps_factory,
        N_("Counts step markers (\"Step 1:\", numbered lines, bullets, First/Second/Next/Finally, and their "
           "Chinese forms): min(1.0, steps / min_steps)."),
        params={"min_steps": 3},
        param_help={"min_steps": N_("steps that earn the full 1.0")},
        example=("--completion", "First, add 6 and 7. Next, check the sum. Finally, answer 13.",
                 "--completion", "13"),
    ))
    register(Reward(
        "language", language_factory,
        N_("Share of the text (thinking and answer, or one of them) written in the target language: 0.0 to 1.0. "
           "A language with a script of its own (zh, ko, el, he, th, ka, hy) is scored by the share of letters in "
           "that script, at any length. Others by py3langid on pieces of at least 40 bytes; a shorter text by its "
           "script: its share of letters in the script when kana show Japanese, 0.0 when no letter is in it, "
           "None when the script cannot tell (\"Oui.\" for en: Latin, like English) or there are no letters."),
        params={"language": "en", "part": "all", "think_end_token": "</think>"},
        param_help={"language": N_("ISO 639-1 code: en, zh, fr, de, ja, ..."),
                    "part": N_("\"all\", \"thinking\" (before </think>) or \"answer\" (after it)"),
                    "think_end_token": N_("where the thinking ends")},
        # answers of 40 bytes or more: a shorter one is judged by its script only
        example=("--completion", "Let me add the two numbers first, then check the sum.</think>"
                 "The answer is 42, because 19 and 23 make 42.",
                 "--completion", "我先把两个数相加，然后检查一下结果是否正确。</think>"
                 "The answer is 42, because 19 and 23 make 42.",
                 "--param", "language.language=en"),
    ))
