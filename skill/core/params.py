"""Reward params: the types one takes, read from its default, and a given value checked against them."""

from __future__ import annotations

import math
from typing import Mapping

from .i18n import N_


def param_kind(default) -> tuple[tuple[type, ...], str] | None:
    """The types a reward param takes, read from its default, and how to say it; None: anything."""
    if default is None:
        return None
    if default == "auto":  # "auto" or a setting of its own: template_opens_think = true, device = "cuda"
        return (str, bool), N_("\"auto\", true, false or a string")
    if isinstance(default, bool):
        return (bool,), N_("true or false")
    if isinstance(default, int):
        return (int,), N_("a whole number")
    if isinstance(default, float):
        return (int, float), N_("a finite number")
    if isinstance(default, str):
        return (str,), N_("a string")
    if isinstance(default, (list, tuple)):
        return (list, tuple), N_("a list")
    if isinstance(default, Mapping):
        return (dict,), N_("a table")
    return None


def fits_kind(value, expected) -> bool:
    types, _words = expected
    if isinstance(value, bool) and bool not in types:
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, types)


def mistyped(params: Mapping, defaults: Mapping) -> tuple[str, object, str] | None:
    """(key, value, the kind it must be) of the first of ``params`` that is not of its default's kind (the keys are
    known ones); None where all are."""
    for key, value in params.items():
        expected = param_kind(defaults[key])
        if expected and not fits_kind(value, expected):
            return key, value, expected[1]
    return None
