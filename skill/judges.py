"""The judge backends plugins register (hook ``register_judges``) for the llm_judge reward, by name."""

from __future__ import annotations

from typing import Any, Mapping

from . import plugins
from .i18n import _
from .registry import Judge, Registered, RegistryError, collect


def judges() -> dict[str, Registered]:
    return collect(plugins.manager().hook.register_judges, Judge)


def get_judge(name: str) -> Judge:
    found = judges()
    if name not in found:
        raise RegistryError(
            _("unknown judge backend {name!r}; choose one of: {choices}").format(
                name=name, choices=", ".join(sorted(found)) or _("none"))
        )
    return found[name].item


def judge_params(judge: Judge, params: Mapping[str, Any]) -> dict[str, Any]:
    """The backend's defaults with ``params`` over them; an unknown key is refused with the known ones."""
    unknown = set(params) - set(judge.params)
    if unknown:
        raise RegistryError(
            _("judge backend {name!r} has no setting {key!r}; it takes: {keys}").format(
                name=judge.name, key=sorted(unknown)[0], keys=", ".join(sorted(judge.params)) or _("none"))
        )
    return {**judge.params, **params}
