"""The judge backends plugins register (hook ``register_judges``) for the llm_judge reward, by name."""

from __future__ import annotations

from typing import Any, Mapping

from . import plugins
from .i18n import _
from .params import mistyped
from .registry import Judge, Registered, RegistryError


def judges() -> dict[str, Registered]:
    return plugins.judge_collection().items


def get_judge(name: str) -> Judge:
    return plugins.get_from(plugins.judge_collection(), _("judge backend"), name)


def judge_params(judge: Judge, params: Mapping[str, Any]) -> dict[str, Any]:
    """The backend's defaults with ``params`` over them; an unknown key is refused with the known ones, a value of
    another kind than its default's (a string for a number) with that kind, as a reward's params are."""
    unknown = set(params) - set(judge.params)
    if unknown:
        raise RegistryError(
            _("judge backend {name!r} has no setting {key!r}; it takes: {keys}").format(
                name=judge.name, key=sorted(unknown)[0], keys=", ".join(sorted(judge.params)) or _("none"))
        )
    wrong = mistyped(params, judge.params)
    if wrong:
        key, value, expected = wrong
        raise RegistryError(_("judge backend {name!r}: judge.{key} = {value!r} must be {expected}, like its default "
                              "{default!r}").format(name=judge.name, key=key, value=value, expected=_(expected),
                                                    default=judge.params[key]))
    return {**judge.params, **params}
