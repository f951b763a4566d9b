"""What a built-in reward needs beyond grpo-skill (TRL, math-verify...): its factory checks that the package is
installed without importing it, and the reward imports it at its first call. Building a reward (`new`, `check`)
so checks its params and its packages in a moment, loading none of them. A factory that needs a model to check a
param (language: py3langid's knows the language codes) loads it through :func:`model`, after its other params:
`new` builds the rewards under ``contract.params_only()``, and stops there."""

from __future__ import annotations

import importlib.util
import threading

from grpo_skill.core.contract import ModelLeftUnloaded, checking_params_only
from grpo_skill.errors import MissingPackage


def installed(module: str) -> bool:
    """Whether the top-level ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package, or a module left without a spec
        return False


def require(module: str, message: str) -> None:
    """Refuse to build the reward (``message``: what to install) when ``module`` is not installed; called once the
    params are checked (MissingPackage)."""
    if not installed(module):
        raise MissingPackage(message)


def model(load):
    """``load()``: a model the factory needs now (a param is checked against it); within
    ``contract.params_only()``, ModelLeftUnloaded instead. Called once the params that need no model are checked."""
    if checking_params_only():
        raise ModelLeftUnloaded("left to `grpo-skill check`: this reward loads a model")
    return load()


def on_first_call(load):
    """A function that calls the one ``load()`` returns, ``load`` run once, at the first call (TRL may call rewards
    from several threads)."""
    loaded, lock = [], threading.Lock()

    def call(*args, **kwargs):
        if not loaded:
            with lock:
                if not loaded:
                    loaded.append(load())
        return loaded[0](*args, **kwargs)

    return call
