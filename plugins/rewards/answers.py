"""Is a final answer the gold answer? math-verify for mathematics, a normalised text match for the rest.

Used by the verifiable rewards (accuracy, reasoning_accuracy, cosine_length, kimi_length). Before math-verify reads
a text, the forms it misses are rewritten: a Unicode minus or full-width digits, scientific notation (``1e3``), a
currency sign (``$18``, ``\\$18``) and remarks in parentheses after the answer (``5 (pages 4-5)``). In a text with
Chinese characters the last stated answer is found first (``cjk.stated_answer``: 答案是 / 共 / 有 N 个, 3万).

A gold answer that is a number in words is read as that number, its words still accepted as text: English words
by text2num ("forty two", "one hundred and five"), Chinese numerals by cn2an ("二十", "3万"). A gold sentence
("Answer is forty two.") stays text. A gold that is a time of day or a duration ("8点05分", "8:05 am", "2小时30分")
is compared in hours and minutes (``clock``), never as its first number.

math-verify bounds its work with ``signal.alarm``, which works only in the main thread; TRL runs async rewards
in another thread, so there the timeouts are off (as TRL's own accuracy reward does).
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from . import cjk, clock

TIMEOUT_SECONDS = 5

_FULL_WIDTH = {**{0xFF10 + digit: str(digit) for digit in range(10)},
               0xFF0E: ".", 0xFF0C: ",", 0xFF05: "%", 0xFF0B: "+", 0xFF08: "(", 0xFF09: ")", 0xFF04: "$",
               0xFFE5: "¥"}  # ￥, as ¥
_MINUS_SIGNS = re.compile(r"[\u2212\ufe63\uff0d]")  # always a minus
_DASH_BEFORE_NUMBER = re.compile(r"(?<![\w)\]}])[\u2012\u2013\u2014](?=\s?[\d.])")  # "–5", but not "4–5"
_SCIENTIFIC = re.compile(r"(?<![\w.^{}])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])")
_TIMES_TEN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:×|\\times|\\cdot|\*)\s*10\s*\^\s*\{?([+-]?\d+)\}?")
# × and ÷ between numbers, which math-verify does not read (it took "2×5" for 2): as LaTeX, which it does
_TIMES_OR_DIVIDED = re.compile(r"(?<=\d)\s*([×÷])\s*(?=\d)")
_ESCAPED_DOLLAR = re.compile(r"\\\$")
# A remark in parentheses: holds a word of 3+ letters and no LaTeX ("(found in 3 steps)", "(pages 4-5)").
_ASIDE = re.compile(r"\s*\((?=[^()\\]*[A-Za-z]{3})[^()\\]*\)")
_LATEX_MARKUP = re.compile(r"[\\^_{}]|^\s*[\[(].*,.*[\])]\s*$")
_MATHS = re.compile(r"[\d\\^{}$=<>]")
_ANSWER_ANCHOR = re.compile(r"(?:final answer|answer)\s*(?:is|:)\s*(.+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{2,}")
_NEGATION = re.compile(r"\b(?:not|no|isn't|never)\s+$")
_NEGATION_CJK = re.compile(r"(?:不是|不|并非|没有|非)\s*$")


ANSWER_PACKAGES = {"math_verify": "math-verify", "text_to_num": "text2num", "cn2an": "cn2an"}  # module: package


def require_answer_packages() -> None:
    """Fail when the reward is built, with the install line, rather than at its first call; without importing them
    (math-verify brings sympy: a second), which the reward does when it first reads an answer."""
    from grpo_skill.i18n import _

    from .needs import require

    for module, package in ANSWER_PACKAGES.items():
        require(module, _("this reward needs {package}: pip install {package} (or pip install "
                          "'grpo-skill[train]')").format(package=package))


def _timeouts() -> int | None:
    """math-verify's timeout here: seconds in the main thread, None elsewhere (signal.alarm would raise)."""
    if threading.current_thread() is threading.main_thread():
        return TIMEOUT_SECONDS
    for name in ("math_verify.parser", "math_verify.grader"):  # "timeout is disabled", once per call otherwise
        logging.getLogger(name).setLevel(logging.ERROR)
    return None


def _decimal(mantissa: str, exponent: str) -> str:
    try:
        value = Decimal(mantissa).scaleb(int(exponent))
    except (InvalidOperation, ValueError):
        return f"{mantissa}e{exponent}"
    text = format(value.normalize(), "f")
    return text


def _currency(text: str) -> str:
    """Drop a "$" that opens no maths span: a "$" before a digit with no other "$" later on its line."""
    out, index = [], 0
    for match in re.finditer(r"\$(?=\d)", text):
        line_rest = text[match.end():].split("\n", 1)[0]
        if "$" not in line_rest:
            out.append(text[index:match.start()])
            index = match.end()
    out.append(text[index:])
    return "".join(out)


# Markdown bold around an answer (**1/4**): math-verify reads "1/4**" as 1
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")


def normalise(text: str) -> str:
    """The answer forms math-verify misses, rewritten into ones it reads."""
    text = _BOLD.sub(r"\2", text.translate(_FULL_WIDTH))
    text = _MINUS_SIGNS.sub("-", text)
    text = _DASH_BEFORE_NUMBER.sub("-", text)
    text = _TIMES_TEN.sub(lambda m: _decimal(m.group(1), m.group(2)), text)
    text = _SCIENTIFIC.sub(lambda m: _decimal(m.group(1), m.group(2)), text)
    text = _TIMES_OR_DIVIDED.sub(lambda m: r" \times " if m.group(1) == "×" else r" \div ", text)
    text = _ESCAPED_DOLLAR.sub("", text)
    text = _currency(text)
    return _ASIDE.sub("", text)


def _normalise_words(text: str) -> str:
    text = _TEXT_WRAPPER.sub(r"\1", text)
    text = re.sub(r"[\s\u3000]+", " ", text.casefold())
    return text.strip(" \t\n.,;:!?。，；：！？\"'`()[]*").strip()


@dataclass(frozen=True)
class Gold:
    text: str
    parsed: Any = None  # math-verify's parse of a maths gold; None for a text gold
    words: bool = False  # a number written in words: its text matches too
    when: clock.Clock | None = None  # a time of day or a duration: compared in hours and minutes

    @property
    def is_maths(self) -> bool:
        return self.parsed is not None


def _number_in_words(text: str) -> str | None:
    """The digits of a gold that is one number in words ("forty two", "二十", "3万"); None otherwise."""
    chinese = cjk.gold_number(text)
    if chinese is not None:
        return chinese
    if not re.fullmatch(r"[A-Za-z][A-Za-z\s-]*[.]?", text.strip()):
        return None
    from text_to_num import text2num

    try:
        return str(text2num(text.strip().rstrip(".").replace("-", " ").lower(), "en"))
    except ValueError:  # not a number ("Paris", "B")
        return None


def parse_gold(gold) -> Gold | None:
    """The gold answer, ready to compare; None when it cannot be read (empty, or maths math-verify cannot parse)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    if gold is None or isinstance(gold, bool):
        return None
    if isinstance(gold, float) and gold != gold:  # NaN: a missing value in a CSV or parquet column
        return None
    text = normalise(str(gold)).strip()
    if not text:
        return None
    when = clock.read_gold(text)
    if when is not None:
        return Gold(text, None, when=when)
    if cjk.is_range(text):  # "3~5天": no one number stands for it (math-verify reads its first)
        return Gold(text, None)
    in_words = _number_in_words(text)
    if in_words is not None:
        if "\\" in in_words:  # 正负3 -> \pm 3: LaTeX, which the expression reader takes for 3
            parsed = parse(f"${in_words}$", [LatexExtractionConfig()], parsing_timeout=_timeouts(),
                           fallback_mode="no_fallback")
        else:
            parsed = parse(in_words, [ExprExtractionConfig()], parsing_timeout=_timeouts(), fallback_mode="no_fallback")
        if parsed:
            return Gold(text, parsed, words=True)
    if not _MATHS.search(_TEXT_WRAPPER.sub(r"\1", text)):  # "Paris", "\text{Monday}": a text answer
        words = _normalise_words(text)
        return Gold(text, None) if words else None
    # no_fallback: a gold that does not parse is unreadable, never compared as a raw string
    strict = {"parsing_timeout": _timeouts(), "fallback_mode": "no_fallback"}
    if "$" in text or "\\boxed" in text:
        parsed = parse(text, **strict)
    elif _LATEX_MARKUP.search(text):
        parsed = parse(f"${text}$", [LatexExtractionConfig()], **strict)
    else:
        parsed = parse(text, [ExprExtractionConfig(), LatexExtractionConfig()], **strict)
        if not parsed:
            parsed = parse(f"${text}$", [LatexExtractionConfig()], **strict)
    return Gold(text, parsed) if parsed else None


def _bare_latex(answer: str) -> str | None:
    """LaTeX written without $...$ at the end of the answer ("so it is 2\\sqrt{2}."), which math-verify
    would read as plain numbers (2): the trailing run of tokens that are no words, when it holds markup."""
    if _DELIMITED.search(answer):
        return None
    lines = [line for line in answer.strip().splitlines() if line.strip()]
    if not lines:
        return None
    tokens = lines[-1].rstrip(" .").split()
    tail: list[str] = []
    while tokens and not _WORD.search(_COMMAND.sub("", tokens[-1])):
        tail.insert(0, tokens.pop())
    expression = " ".join(tail)
    return expression if _LATEX_MARKUP.search(expression) else None


def _parse_answer(answer: str):
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    timeout = _timeouts()
    bare = _bare_latex(answer)
    if bare:
        parsed = parse(f"${bare}$", [LatexExtractionConfig()], parsing_timeout=timeout)
        if parsed:
            return parsed
    latex = LatexExtractionConfig(boxed_match_priority=0)  # a \boxed{} answer wins over every other number
    return parse(answer, [latex, ExprExtractionConfig()], parsing_timeout=timeout)


def _text_candidates(answer: str) -> list[str]:
    candidates = [match.group(1) for match in _BOXED.finditer(answer)]
    candidates += [match.group(1) for match in _ANSWER_ANCHOR.finditer(answer)]
    lines = [line for line in answer.strip().splitlines() if line.strip()]
    if lines:
        candidates.append(lines[-1])
    candidates.append(answer)
    return [_normalise_words(candidate) for candidate in candidates]


def _sum_still_to_do(answer, gold) -> bool:
    """A sum or product of plain numbers left unworked ("2 + 8", "2 \\times 5") for a gold that is a number:
    math-verify would evaluate it and call it right, so that restating "What is 2 + 8?" scored as answering it (seen
    training a real chat model). A fraction (3/4: 3 times 4 to the -1) and a power of ten (2 \\times 10^3) are
    numbers as written, not sums to do."""
    import sympy

    return (isinstance(gold, sympy.Number) and isinstance(answer, (sympy.Add, sympy.Mul))
            and all(isinstance(term, sympy.Number) or (-term).is_Number for term in answer.args))


def matches(answer: str, gold: Gold) -> bool:
    """True when the final answer in ``answer`` (the text after the thinking) is the gold answer."""
    if gold.when is not None:
        return clock.matches(answer, gold.when)
    if gold.is_maths:
        from math_verify import verify

        stated = cjk.stated_answer(answer)
        text = normalise(stated if stated is not None else answer)
        parsed = _parse_answer(text)
        if parsed and _sum_still_to_do(parsed[0], gold.parsed[0]):
            # "...: 2 + 8 equals 10." - the result, if any, comes after the sum
            rest = text.rpartition(parsed[1])[2]
            parsed = _parse_answer(rest) if rest.strip() else []
            if parsed and _sum_still_to_do(parsed[0], gold.parsed[0]):
                parsed = []
        if parsed and verify(gold.parsed, parsed, timeout_seconds=_timeouts()):
            return True
        return gold.words and _text_matches(answer, gold.text)
    return _text_matches(answer, gold.text)


def _text_matches(answer: str, gold_text: str) -> bool:
    anchored = cjk.anchored_text(answer)
    answer = normalise(answer)
    wanted = _normalise_words(gold_text)
    candidates = _text_candidates(answer) + ([_normalise_words(anchored)] if anchored else [])
    if wanted in candidates:
        return True
    # "The capital of France is Paris." ends with the gold answer (but "not Paris" does not count); Chinese has no
    # spaces between words: "首都是巴黎。" ends with 巴黎 (but "不是巴黎" does not count)
    last = re.split(r"(?<=[.!?])\s+|(?<=[。！？])", answer.strip().rstrip("。！？"))[-1] if answer.strip() else ""
    last = _normalise_words(last)
    if not last.endswith(wanted):
        return False
    before = last[: -len(wanted)]
    if cjk.has_cjk(wanted[:1]) or cjk.has_cjk(before[-1:]):  # no spaces between Chinese words: "需要3~5天" ends with 3~5天
        return not _NEGATION_CJK.search(before)
    if len(last) == len(wanted) or not last[-len(wanted) - 1].isalnum():
        return not _NEGATION.search(before)
    return False
