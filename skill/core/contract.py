"""The reward contract: what every built reward is held to, whoever registered it.

One finite score or ``None`` per completion, strings and chat messages both accepted, the time of each call recorded,
and any breach or exception reported as a ``RewardError`` that names the reward, its plugin and the sample. A built
reward pickles as the recipe that built it (TRL's async trainer sends rewards to a spawned process).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import numbers
import threading
import time
import warnings
from typing import Any, Callable

from .completions import completion_text
from .errors import MissingPackage, UserError, where_raised
from .i18n import _

SAMPLE_CHARS = 120  # how much of a completion an error message shows


class RewardError(UserError):
    """A reward broke the contract (wrong number of scores, a score that is no finite number) or raised."""


class RewardPackageMissing(RewardError):
    """A reward's factory found a package it needs missing (errors.MissingPackage), once its params were checked."""


class RewardTiming:
    """Wall-clock seconds a reward spends per call; ``take()`` gives the mean since the last take, for the
    metrics (logged as ``rewards/<name>/seconds``). Thread-safe: TRL runs async rewards in another thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.seconds = 0.0
        self.last: float | None = None
        self._pending_calls = 0
        self._pending_seconds = 0.0

    def record(self, seconds: float) -> None:
        with self._lock:
            self.calls += 1
            self.seconds += seconds
            self.last = seconds
            self._pending_calls += 1
            self._pending_seconds += seconds

    def take(self) -> float | None:
        with self._lock:
            if not self._pending_calls:
                return None
            mean = self._pending_seconds / self._pending_calls
            self._pending_calls, self._pending_seconds = 0, 0.0
            return mean


def reward_seconds(reward_funcs) -> dict[str, float]:
    """``{"rewards/<name>/seconds": mean seconds per call since the last time}`` for built rewards."""
    found = {}
    for func in reward_funcs:
        timing = getattr(func, "timing", None)
        seconds = timing.take() if isinstance(timing, RewardTiming) else None
        if seconds is not None:
            found[f"rewards/{func.__name__}/seconds"] = seconds
    return found


def make(factory, context, where: str):
    """The function ``factory`` makes for ``context``; a factory that raises or returns no function is a RewardError
    naming the reward (``where``) and, for a bug in the factory, its file and line."""
    try:
        func = factory(context)
    except MissingPackage as error:
        raise RewardPackageMissing(f"{where}: {error}") from error
    except UserError as error:
        raise RewardError(f"{where}: {error}") from error
    except Exception as error:
        raise RewardError(_("{where} could not be built: {error}; check its params").format(
            where=where, error=where_raised(error))) from error
    if not callable(func):
        raise RewardError(_("{where}: its factory returned {value}, not a function").format(
            where=where, value=_short(repr(func))))
    return func


class ModelLeftUnloaded(MissingPackage):
    """A factory reached the model it loads while the rewards are built under :func:`params_only`: its params were
    checked, and `new` passes over it as over a package that is not installed."""


_params_only = contextvars.ContextVar("params_only", default=False)


@contextlib.contextmanager
def params_only():
    """Within: a factory stops at the model it would load (ModelLeftUnloaded), once its other params are checked:
    `new` checks them in a moment, and leaves the model to `check` and train.py."""
    token = _params_only.set(True)
    try:
        yield
    finally:
        _params_only.reset(token)


def checking_params_only() -> bool:
    return _params_only.get()


@contextlib.contextmanager
def factory_warnings():
    """Around building rewards (`new`; ``ProjectConfig.build_rewards``: `check`, train.py, evaluate.py): what their
    factories warn (code_tests: the network cannot be cut here), gathered into the list it yields, each once, to be
    said on `warning:` lines rather than as a Python warning naming this module."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            yield said
        finally:
            said.extend(dict.fromkeys(str(warning.message) for warning in caught
                                      if issubclass(warning.category, UserWarning)))
            others = [warning for warning in caught if not issubclass(warning.category, UserWarning)]
    for warning in others:  # not a factory's word to the user (a DeprecationWarning...): warned as it came
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


def describe_reward(name: str, plugin: str) -> str:
    if plugin:
        return _("reward {name!r} (plugin {plugin})").format(name=name, plugin=plugin)
    return _("reward {name!r}").format(name=name)


def _short(text: str, limit: int = SAMPLE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sample(completions, index: int) -> str:
    try:
        text = completion_text(completions[index])
    except Exception:  # the sample itself is what is wrong: show it raw
        return _short(repr(completions[index]))
    return repr(_short(text))


def _completions_finder(func, where: str) -> Callable[[tuple, dict], Any]:
    """How to find ``completions`` in a call: TRL passes it by keyword; people may pass it by position. A call
    without them is a RewardError."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        signature = None

    def find(args: tuple, kwargs: dict):
        completions = given(args, kwargs)
        if completions is None:
            raise RewardError(_("{where} was called without completions; call it as TRL does: "
                                "f(prompts=..., completions=..., completion_ids=..., **columns)").format(where=where))
        return completions

    def given(args: tuple, kwargs: dict):
        if "completions" in kwargs:
            return kwargs["completions"]
        if args and signature is not None:
            try:
                return signature.bind_partial(*args, **kwargs).arguments.get("completions")
            except TypeError:
                return None
        return None

    return find


def _checked(where: str, result, completions) -> list[float | None]:
    """The scores as a list of floats and Nones, or RewardError saying what is wrong and where."""
    if not isinstance(result, (list, tuple)) and hasattr(result, "tolist"):  # numpy / torch
        result = result.tolist()
    if not isinstance(result, (list, tuple)):
        raise RewardError(_("{where} returned {value}; return a list with one score per completion").format(
            where=where, value=_short(repr(result))))
    if len(result) != len(completions):
        raise RewardError(
            _("{where} returned {got} scores for {expected} completions; return one score (or None) per "
              "completion. First completion: {sample}").format(
                where=where, got=len(result), expected=len(completions),
                sample=_sample(completions, 0) if len(completions) else "-"))
    scores = []
    for index, value in enumerate(result):
        if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy / torch scalars
            try:
                value = value.item()
            except (TypeError, ValueError):
                pass
        if value is None:
            scores.append(None)
            continue
        if isinstance(value, numbers.Real) and math.isfinite(float(value)):
            scores.append(float(value))
            continue
        raise RewardError(
            _("{where} gave {value} for completion {index}: {sample}; a score is a finite number, or None to "
              "leave the completion out").format(
                where=where, value=_short(repr(value), 40), index=index, sample=_sample(completions, index)))
    return scores


def _raised(where: str, error: Exception, completions) -> RewardError:
    if isinstance(error, RewardError):
        return error
    if isinstance(error, UserError):
        return RewardError(f"{where}: {error}")
    sample = _sample(completions, 0) if completions else "-"
    # where_raised: the reward's own file:line, which a one-line message without a traceback would lose
    return RewardError(_("{where} raised on a batch starting with {sample}: {error}").format(
        where=where, error=where_raised(error), sample=sample))


class ContractedReward:
    """A built reward, as TRL gets it: ``func`` held to the contract (its scores checked, its time recorded) under the
    registered name (TRL logs rewards/<__name__>/mean).

    It pickles as the recipe that built it (the Reward, the tokenizer, the preset, the params, the run's [grpo]), not
    as ``func``:
    TRL's async trainer sends its rewards to a spawned process, and the functions factories return are closures,
    which pickle cannot carry. Unpickling builds the reward again, there, through the same factory.
    """

    def __init__(self, func, name: str, where: str, recipe: tuple):
        self.func, self.where, self.recipe = func, where, recipe
        self.__name__ = self.__qualname__ = name
        self.__doc__ = getattr(func, "__doc__", None)
        self.timing = RewardTiming()
        self._completions = _completions_finder(func, where)

    def __call__(self, *args, **kwargs):
        completions = self._completions(args, kwargs)
        started = time.perf_counter()
        try:
            result = self.func(*args, **kwargs)
        except Exception as error:
            raise _raised(self.where, error, completions) from error
        finally:
            self.timing.record(time.perf_counter() - started)
        return _checked(self.where, result, completions)

    def __reduce__(self):
        return _rebuild_reward, self.recipe

    def __repr__(self) -> str:
        return f"<reward {self.__name__!r}>"


def find_project_reward(name: str, project_dir: str):
    """A reward of a project's rewards.py, registered again: the plugin manager (plugins.py) puts its own here when it
    loads, before any project's rewards.py can be."""
    raise NotImplementedError("grpo_skill.core.plugins sets this")


def _rebuild_reward(reward, tokenizer, preset, params, grpo=None):
    """Unpickling a ContractedReward: build it again. A project's rewards.py is found again by its folder (its
    module cannot be imported by name), so that reward travels as (name, project folder)."""
    if isinstance(reward, tuple):
        find, name, project_dir = reward
        reward = find(name, project_dir)
    return reward.build(tokenizer=tokenizer, preset=preset, params=params, grpo=grpo)


def with_contract(func, name: str, where: str, recipe: tuple):
    """``func`` wrapped: its scores checked, its time recorded, its name the registered one."""
    # TRL awaits `async def` rewards (concurrently, in another thread), so an async reward stays an async function
    # (it does not pickle: TRL's async trainer needs a sync reward)
    if not (inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None))):
        return ContractedReward(func, name, where, recipe)
    timing = RewardTiming()
    find_completions = _completions_finder(func, where)

    async def reward(*args, **kwargs):
        completions = find_completions(args, kwargs)
        started = time.perf_counter()
        try:
            result = await func(*args, **kwargs)
        except Exception as error:
            raise _raised(where, error, completions) from error
        finally:
            timing.record(time.perf_counter() - started)
        return _checked(where, result, completions)

    functools.update_wrapper(reward, func)
    reward.__name__ = reward.__qualname__ = name
    reward.timing = timing
    return reward
