"""What plugins register: rewards, presets and judges, and the registry that collects them.

Every reward, whoever registered it (built-in, installed plugin, a project's rewards.py), is built by
``Reward.build``, whose wrapper holds the reward contract: one finite score or ``None`` per completion, strings
and chat messages both accepted, the time of each call recorded, and any breach or exception reported as a
``RewardError`` that names the reward, its plugin and the sample.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .errors import UserError, where_raised
from .i18n import N_, _

# TRL calls reward functions as f(prompts=..., completions=..., completion_ids=..., **dataset_columns).
RewardFunc = Callable[..., "list[float | None]"]
# A judge backend grades answers: f(requests) -> one grade in [0, 1] (or None) per JudgeRequest.
JudgeFunc = Callable[[Sequence["JudgeRequest"]], "list[float | None]"]

# A project's rewards.py registers as this prefix + its folder (core/plugins.py)
PROJECT_PLUGIN_PREFIX = "project:"

# Qwen3's id for </think>: used only when a reward is built without a tokenizer to ask.
QWEN3_THINK_END_ID = 151668

QWEN3_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

SAMPLE_CHARS = 120  # how much of a completion an error message shows


class RegistryError(UserError):
    """A plugin registered something inconsistent, or something asked for is not registered."""


class RewardError(UserError):
    """A reward broke the contract (wrong number of scores, a score that is no finite number) or raised."""


def _content_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal parts: [{"type": "text", "text": ...}, ...]
        return "".join(part.get("text") or "" if isinstance(part, Mapping) else str(part) for part in content)
    return str(content)


def completion_text(completion) -> str:
    """The text of one completion, as TRL passes it: a string, or chat messages
    ``[{"role": "assistant", "content": ...}]`` when the dataset's prompts are conversations (the assistant
    messages' text, joined by newlines, when a tool-using run gives several)."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else completion
    if not isinstance(messages, Sequence):
        raise TypeError(f"a completion is a string or a list of chat messages, not {type(completion).__name__}")
    texts = [
        _content_text(message.get("content")) if isinstance(message, Mapping) else _content_text(message)
        for message in messages
        if not isinstance(message, Mapping) or message.get("role", "assistant") == "assistant"
    ]
    return "\n".join(texts)


def prompt_text(prompt) -> str:
    """The text of one prompt: a string, or the last user message of a conversation."""
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    users = [m for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
    return _content_text((users or list(prompt) or [{}])[-1].get("content"))


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


def grpo_summary(grpo: Mapping[str, Any], quote=str) -> str:
    """A preset's main GRPOConfig values in one line ("lr 1e-05, beta 0.1, G 4, 512 tokens, ..."), for the
    presets listing and SKILL.md's table."""
    def number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)

    parts = [
        f"lr {number(grpo['learning_rate'])}" if "learning_rate" in grpo else None,
        f"beta {number(grpo['beta'])}" if "beta" in grpo else None,
        f"G {grpo['num_generations']}" if "num_generations" in grpo else None,
        f"{grpo['max_completion_length']} tokens" if "max_completion_length" in grpo else None,
        (f"batch {grpo['per_device_train_batch_size']}×{grpo.get('gradient_accumulation_steps', 1)}"
         if "per_device_train_batch_size" in grpo else None),
        f"{grpo['max_steps']} steps" if "max_steps" in grpo else None,
        quote(grpo["optim"]) if "optim" in grpo else None,
        # steps_per_generation counts micro-batches; said as optimizer steps per generation
        (f"1 generation per {grpo['steps_per_generation'] // grpo.get('gradient_accumulation_steps', 1)} steps"
         if grpo.get("steps_per_generation", 0) > grpo.get("gradient_accumulation_steps", 1) else None),
    ]
    return ", ".join(part for part in parts if part)


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


def reward_seconds(reward_funcs) -> dict[str, float]:
    """``{"rewards/<name>/seconds": mean seconds per call since the last time}`` for built rewards."""
    found = {}
    for func in reward_funcs:
        timing = getattr(func, "timing", None)
        seconds = timing.take() if isinstance(timing, RewardTiming) else None
        if seconds is not None:
            found[f"rewards/{func.__name__}/seconds"] = seconds
    return found


@dataclass(frozen=True)
class LoraSettings:
    r: int = 16
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = QWEN3_LORA_TARGETS
    # "unsloth" (Unsloth's offloaded variant; plain gradient checkpointing under TRL), True or False
    gradient_checkpointing: str | bool = "unsloth"


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    model_id: str
    max_seq_length: int
    load_in_4bit: bool
    grpo: Mapping[str, Any]
    rewards: tuple[tuple[str, float], ...]
    lora: LoraSettings = LoraSettings()
    # True when the chat template already opens <think> in the prompt (Qwen3-Thinking-2507):
    # completions then hold only the closing </think>.
    template_opens_think: bool = False
    # Passed to the chat template with every prompt ([dataset] chat_template_kwargs), e.g. Qwen3's
    # {"enable_thinking": False} to render prompts with the thinking switched off.
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    # For presets whose model is made on this machine instead of downloaded: returns its local path.
    build_model: Callable[[], str] | None = None


@dataclass(frozen=True)
class RewardContext:
    """What a reward factory gets: the run's tokenizer and preset, and the params from the config."""

    tokenizer: Any = None
    preset: Preset | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def token_id(self, token: str, qwen3_default: int | None = None) -> int:
        """The id of a single token, asked of the tokenizer; ``qwen3_default`` when there is no tokenizer."""
        if self.tokenizer is None:
            if qwen3_default is None:
                raise RegistryError(_("this reward needs a tokenizer to find the id of {token!r}").format(token=token))
            return qwen3_default
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        if token_id is None or token_id == getattr(self.tokenizer, "unk_token_id", None):
            raise RegistryError(
                _("the tokenizer has no {token!r} token; use a thinking model (Qwen3) or another reward").format(
                    token=token
                )
            )
        return token_id

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        if self.tokenizer is None:
            raise RegistryError(_("this reward counts tokens: completion_ids were not given and there is no "
                                  "tokenizer to make them (grpo-skill rewards try: add --tokenizer tiny or PATH)"))
        return [self.tokenizer.encode(text, add_special_tokens=False) for text in texts]

    @property
    def template_opens_think(self) -> bool:
        """True when the chat template opens <think> in the prompt, so that completions hold only </think>:
        asked of the run's tokenizer (the model may not be the preset's: `--model PATH`), else the preset."""
        template = getattr(self.tokenizer, "chat_template", None)
        if template:
            try:
                prompt = self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": "?"}], tokenize=False, add_generation_prompt=True)
                return prompt.rstrip().endswith("<think>")
            except Exception:  # a template that needs more than one user message: trust the preset
                pass
        return bool(self.preset and self.preset.template_opens_think)


@dataclass(frozen=True)
class Reward:
    name: str
    factory: Callable[[RewardContext], RewardFunc]
    description: str
    params: Mapping[str, Any] = field(default_factory=dict)  # defaults, overridable per project
    param_help: Mapping[str, str] = field(default_factory=dict)  # one line per param (grpo-skill rewards show)
    # Arguments of `grpo-skill rewards try NAME ...` that show the reward at work (grpo-skill rewards show).
    example: Sequence[str] = ()
    plugin: str = field(default="", compare=False)  # set by the registry: who registered it, as messages say it
    source: str = field(default="", compare=False)  # set by the registry: the plugin's registered name

    def build(self, tokenizer=None, preset: Preset | None = None, params: Mapping[str, Any] | None = None):
        """The TRL reward function, held to the reward contract (see the module's docstring)."""
        unknown = set(params or {}) - set(self.params)
        if unknown:
            raise RegistryError(
                _("reward {name!r} has no parameter {param!r}; it takes: {params}").format(
                    name=self.name, param=sorted(unknown)[0], params=", ".join(sorted(self.params)) or _("none")
                )
            )
        for key, value in (params or {}).items():  # config.toml's are checked with their line; this is for the rest
            expected = param_kind(self.params[key])
            if expected and not fits_kind(value, expected):
                raise RegistryError(_("reward {name!r}: {key} = {value!r} must be {expected}, like its default "
                                      "{default!r}").format(name=self.name, key=key, value=value,
                                                            expected=_(expected[1]), default=self.params[key]))
        context = RewardContext(tokenizer=tokenizer, preset=preset, params={**self.params, **(params or {})})
        where = _describe(self.name, self.plugin)
        try:
            func = self.factory(context)
        except UserError as error:
            raise RewardError(f"{where}: {error}") from error
        except Exception as error:
            raise RewardError(_("{where} could not be built: {error}; check its params").format(
                where=where, error=where_raised(error))) from error
        if not callable(func):
            raise RewardError(_("{where}: its factory returned {value}, not a function").format(
                where=where, value=_short(repr(func))))
        # a project's rewards.py is no importable module: its rewards travel by name and folder, with the function
        # that registers that rewards.py again (the plugin manager's, which sits above: pickled by its name)
        project = self.source.startswith(PROJECT_PLUGIN_PREFIX)
        reward = (find_project_reward, self.name, self.source[len(PROJECT_PLUGIN_PREFIX):]) if project else self
        return _with_contract(func, self.name, where, (reward, tokenizer, preset, dict(params or {})))


def _describe(name: str, plugin: str) -> str:
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


def _completions_finder(func) -> Callable[[tuple, dict], Any]:
    """How to find ``completions`` in a call: TRL passes it by keyword; people may pass it by position."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        signature = None

    def find(args: tuple, kwargs: dict):
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

    It pickles as the recipe that built it (the Reward, the tokenizer, the preset, the params), not as ``func``:
    TRL's async trainer sends its rewards to a spawned process, and the functions factories return are closures,
    which pickle cannot carry. Unpickling builds the reward again, there, through the same factory.
    """

    def __init__(self, func, name: str, where: str, recipe: tuple):
        self.func, self.where, self.recipe = func, where, recipe
        self.__name__ = self.__qualname__ = name
        self.__doc__ = getattr(func, "__doc__", None)
        self.timing = RewardTiming()
        self._find_completions = _completions_finder(func)

    def _completions(self, args, kwargs):
        completions = self._find_completions(args, kwargs)
        if completions is None:
            raise RewardError(_("{where} was called without completions; call it as TRL does: "
                                "f(prompts=..., completions=..., completion_ids=..., **columns)").format(
                where=self.where))
        return completions

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


def find_project_reward(name: str, project_dir: str) -> Reward:
    """A reward of a project's rewards.py, registered again: the plugin manager (plugins.py) puts its own here when it
    loads, before any project's rewards.py can be."""
    raise NotImplementedError("grpo_skill.core.plugins sets this")


def _rebuild_reward(reward, tokenizer, preset, params):
    """Unpickling a ContractedReward: build it again. A project's rewards.py is found again by its folder (its
    module cannot be imported by name), so that reward travels as (name, project folder)."""
    if isinstance(reward, tuple):
        find, name, project_dir = reward
        reward = find(name, project_dir)
    return reward.build(tokenizer=tokenizer, preset=preset, params=params)


def _with_contract(func, name: str, where: str, recipe: tuple):
    """``func`` wrapped: its scores checked, its time recorded, its name the registered one."""
    # TRL awaits `async def` rewards (concurrently, in another thread), so an async reward stays an async function
    # (it does not pickle: TRL's async trainer needs a sync reward)
    if not (inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(getattr(func, "__call__", None))):
        return ContractedReward(func, name, where, recipe)
    timing = RewardTiming()
    find_completions = _completions_finder(func)

    async def reward(*args, **kwargs):
        completions = find_completions(args, kwargs)
        if completions is None:
            raise RewardError(_("{where} was called without completions; call it as TRL does: "
                                "f(prompts=..., completions=..., completion_ids=..., **columns)").format(where=where))
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


@dataclass(frozen=True)
class JudgeRequest:
    """One answer for a judge to grade."""

    question: str  # the prompt's text (its last user message)
    answer: str  # the completion's final answer (after </think>)
    criteria: str  # what a good answer is, from llm_judge's params
    reference: str | None = None  # a reference answer from the dataset, when llm_judge names a column


@dataclass(frozen=True)
class Judge:
    """A judge backend for the llm_judge reward: ``factory(params)`` returns a JudgeFunc."""

    name: str
    factory: Callable[[Mapping[str, Any]], JudgeFunc]
    description: str
    params: Mapping[str, Any] = field(default_factory=dict)  # defaults, set per project in llm_judge's `judge`
    param_help: Mapping[str, str] = field(default_factory=dict)
    plugin: str = field(default="", compare=False)


@dataclass(frozen=True)
class Registered:
    item: Reward | Preset | Judge
    plugin: str


@dataclass
class Collection:
    """What one hook gathered from every plugin."""

    items: dict[str, Registered] = field(default_factory=dict)
    clashes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> the plugins that registered it
    errors: dict[str, str] = field(default_factory=dict)  # plugin -> what its hook raised, in one line


def collect(hook, kind: type | tuple[type, ...], describe_error: Callable[[BaseException], str] = str,
            shown_plugin: Callable[[str], str] = str) -> Collection:
    """Call every implementation of ``hook`` with a register callback.

    A hook that raises is set aside (its error recorded, nothing it registered kept); a name registered by two
    plugins is kept out of ``items`` and listed in ``clashes``, so that only what uses it fails. A reward's or
    judge's ``plugin`` is its plugin's name as messages show it (``shown_plugin``).
    """
    collection = Collection()
    owners: dict[str, list[str]] = {}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for impl in hook.get_hookimpls():  # in the order the plugins were registered (pluggy calls them reversed)
        plugin, registered = impl.plugin_name, []

        def register(item, _registered=registered):
            if not isinstance(item, kinds):
                raise RegistryError(
                    _("register() got {item!r}, expected a {kind}").format(item=item, kind=kinds[0].__name__)
                )
            _registered.append(item)

        try:
            impl.function(register=register)
        except Exception as error:  # a broken plugin is reported, never fatal to the others
            collection.errors[plugin] = describe_error(error)
            continue
        for item in registered:
            owners.setdefault(item.name, []).append(plugin)
            if isinstance(item, (Reward, Judge)):
                item = dataclasses.replace(item, plugin=shown_plugin(plugin))  # so that its errors can name it
                if isinstance(item, Reward):
                    item = dataclasses.replace(item, source=plugin)
            collection.items.setdefault(item.name, Registered(item, plugin))
    for name, plugins in owners.items():
        if len(plugins) > 1:
            collection.clashes[name] = tuple(plugins)
            collection.items.pop(name, None)
    return collection
