"""Times of day and durations as answers: a gold of ``8点05分`` is 8 hours and 5 minutes, never the number 8.

A gold that is, as a whole, one of these forms is compared as a time (hours and minutes together):

- a time of day: 8点05分, 8点5分, 8时5分, 8点半 (8:30), 8点一刻 / 三刻 (8:15 / 8:45), 8点整, 8点钟, 上午/下午 8点,
  八点零五分; 8:05, 8：05, 8:05 am, 8 pm, 8 o'clock;
- a duration: 2小时30分(钟), 2个半小时, 半小时, 45分钟; 2 hours 30 minutes, 2 h 30 min, 45 minutes.

The answer's time is the last one stated in its ``\\boxed{}``, else after its last anchor (答案是 / 答 / answer is),
else in the whole text. It must be the gold's kind (a time of day for a time gold, a duration for a duration; ``H:MM``
serves both; a box or an anchor stating only the other kind is a wrong answer) and equal in hours and minutes.
A time without a half of the day (上午/下午, am/pm) is compared on a 12-hour clock with one that has it: 8点05分
equals 晚上8点05分, but 8:05 am never equals 8:05 pm. A duration is compared in minutes: 2小时30分 equals 150分钟.

A duration in one unit ("45分钟", "2 hours") stays a number with a unit, as before: "答案：45" answers it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FULL_WIDTH = str.maketrans({**{chr(0xFF10 + digit): str(digit) for digit in range(10)}, "：": ":"})
_NUMERAL = r"[零〇一二两三四五六七八九十]{1,3}"
_HOUR = rf"(\d{{1,2}}|{_NUMERAL})"
_MORNING, _EVENING = ("凌晨", "早上", "早晨", "上午", "清晨"), ("中午", "下午", "傍晚", "晚上", "夜里", "夜间")
_HALF_OF_DAY = "|".join(_MORNING + _EVENING)
_QUARTERS = {"半": 30, "一刻": 15, "三刻": 45, "整": 0, "钟": 0}
_MERIDIEM = r"(a\.?m\.?|p\.?m\.?)(?![A-Za-z])"

# A time of day: ([half of day]) hour 点/时 (minutes 分 | 半 | 一刻 | 三刻 | 整 | 钟 | two-digit minutes)
_TIME_ZH = re.compile(rf"({_HALF_OF_DAY})?\s*{_HOUR}\s*[点时]\s*(?:(\d{{1,2}}|{_NUMERAL})\s*分(?!钟)|(半|一刻|三刻|整|钟)"
                      rf"|(\d{{2}})(?![\d分.]))?")
_TIME_COLON = re.compile(rf"(?<![\d:.])({_HALF_OF_DAY})?\s*(\d{{1,2}}):(\d{{2}})(?::\d{{2}})?(?![\d:])\s*"
                         rf"(?:{_MERIDIEM})?", re.IGNORECASE)
_TIME_EN = re.compile(rf"(?<![\d:.])(\d{{1,2}})\s*(?:{_MERIDIEM}|(o'?clock))", re.IGNORECASE)
_DURATION_ZH = re.compile(r"(?:(\d+(?:\.\d+)?)\s*个?(半)?\s*(?:小时|钟头)|(半)\s*(?:个)?\s*小时)\s*(?:(\d{1,2})\s*分钟?)?"
                          r"|(\d+)\s*分钟")
_DURATION_EN = re.compile(r"(?<![\d.])(?:(\d+(?:\.\d+)?)\s*(?:hours?|hrs?|h)\b\s*(?:and\s*)?(?:(\d{1,2})\s*"
                          r"(?:minutes?|mins?|m)\b)?|(\d+)\s*(?:minutes?|mins?)\b)", re.IGNORECASE)
_ANCHOR = re.compile(r"(?:最终答案|正确答案|答案|答|final answer|answer)\s*(?:应该是|应为|是|为|is|[:：=])?",
                     re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")


@dataclass(frozen=True)
class Clock:
    kind: str  # "time" (of day) or "duration"
    minutes: float  # since midnight for a time, in all for a duration
    half_of_day: bool = False  # a time that says which half of the day it is (下午, pm)
    either: bool = False  # H:MM with no half of the day: a time or a duration

    def equals(self, other: Clock) -> bool:
        if self.kind == "duration" or other.kind == "duration":
            return abs(self.minutes - other.minutes) < 1e-9
        if self.half_of_day and other.half_of_day:
            return self.minutes == other.minutes
        return self.minutes % 720 == other.minutes % 720  # one of them left the half of the day unsaid


def _number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    import cn2an  # the accuracy rewards check it is there when they are built

    try:
        return int(cn2an.cn2an(text, "smart"))
    except (ValueError, KeyError, TypeError):
        return None


def _time_of_day(hour: int | None, minute: int | None, period: str | None) -> Clock | None:
    if hour is None or minute is None or not (0 <= hour <= 24 and 0 <= minute < 60):
        return None
    if period:
        period = period.lower().replace(".", "")
        evening = period in _EVENING or period == "pm"
        if hour > 12 or (period in ("am", "pm") and hour == 0):
            return None
        if evening and hour < 12 and not (period == "中午" and hour < 3):
            hour += 12
        elif not evening and hour == 12:
            hour = 0
    return Clock("time", hour * 60 + minute, half_of_day=bool(period) or hour > 12)


def _times(text: str) -> list[tuple[int, Clock]]:
    """(position, time) of every time of day and duration in ``text``."""
    found: list[tuple[int, Clock]] = []
    for match in _TIME_ZH.finditer(text):
        period, hour, minute, word, two_digits = match.groups()
        minutes = _QUARTERS[word] if word else _number(minute or two_digits or "0")
        clock = _time_of_day(_number(hour), minutes, period)
        if clock:
            found.append((match.start(), clock))
    for match in _TIME_COLON.finditer(text):
        period, hour, minute, meridiem = match.groups()
        clock = _time_of_day(int(hour), int(minute), period or meridiem)
        if clock:
            either = not (period or meridiem)
            found.append((match.start(), Clock("time", clock.minutes, clock.half_of_day, either=either)))
    for match in _TIME_EN.finditer(text):
        clock = _time_of_day(int(match.group(1)), 0, match.group(2))
        if clock:
            found.append((match.start(), clock))
    for pattern in (_DURATION_ZH, _DURATION_EN):
        for match in pattern.finditer(text):
            found.append((match.start(), _duration(pattern, match)))
    return sorted(found, key=lambda item: item[0])


def _duration(pattern: re.Pattern, match: re.Match) -> Clock:
    if pattern is _DURATION_EN:
        hours, minutes, only_minutes = match.groups()
        return Clock("duration", float(hours or 0) * 60 + int(minutes or only_minutes or 0))
    hours, and_a_half, half_hour, minutes, only_minutes = match.groups()
    total = float(hours or 0) * 60 + (30 if and_a_half or half_hour else 0)
    return Clock("duration", total + int(minutes or only_minutes or 0))


def read_gold(text: str) -> Clock | None:
    """The time or duration a gold answer is as a whole ("8点05分", "2小时30分", "8:05 am"); None for any other gold."""
    stripped = text.translate(_FULL_WIDTH).strip().rstrip("。.")
    for pattern in (_TIME_ZH, _TIME_COLON, _TIME_EN):
        if pattern.fullmatch(stripped):
            times = _times(stripped)
            return times[0][1] if times else None
    for pattern in (_DURATION_ZH, _DURATION_EN):
        match = pattern.fullmatch(stripped)
        if match and _two_parts(pattern, match):
            return _duration(pattern, match)
    return None


def _two_parts(pattern: re.Pattern, match: re.Match) -> bool:
    """Hours and minutes (2小时30分, 2个半小时), not one unit (45分钟: a number with a unit, like 24元)."""
    if pattern is _DURATION_EN:
        return bool(match.group(1) and match.group(2))
    hours, and_a_half, half_hour, minutes, _only_minutes = match.groups()
    return bool(hours and (minutes or and_a_half))


def _fits(found: Clock, gold: Clock) -> bool:
    return found.either or found.kind == gold.kind


def stated(answer: str, gold: Clock) -> Clock | None:
    """The last time of ``gold``'s kind that the answer states (see the module's docstring)."""
    text = answer.translate(_FULL_WIDTH)
    boxed = _BOXED.findall(text)
    anchors = list(_ANCHOR.finditer(text))
    for part in boxed[-1:] + ([text[anchors[-1].end():]] if anchors else []) + [text]:
        stated_here = [clock for _position, clock in _times(part)]
        fitting = [clock for clock in stated_here if _fits(clock, gold)]
        if fitting or stated_here:  # a box or an anchor that states only the other kind answers wrongly
            return fitting[-1] if fitting else None
    return None


def matches(answer: str, gold: Clock) -> bool:
    found = stated(answer, gold)
    return found is not None and found.equals(gold)
