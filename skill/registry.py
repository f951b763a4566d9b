"""What plugins register: rewards and presets, and the registry that collects them."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .errors import UserError
from .i18n import _

# TRL calls reward functions as f(prompts=..., completions=..., completion_ids=..., **dataset_columns).
RewardFunc = Callable[..., "list[float | None]"]

# Qwen3's id for </think>: used only when a reward is built without a tokenizer to ask.
QWEN3_THINK_END_ID = 151668

QWEN3_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class RegistryError(UserError):
    """A plugin registered something inconsistent, or something asked for is not registered."""


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
            raise RegistryError(_("completion_ids were not given and there is no tokenizer to make them"))
        return [self.tokenizer.encode(text, add_special_tokens=False) for text in texts]


@dataclass(frozen=True)
class Reward:
    name: str
    factory: Callable[[RewardContext], RewardFunc]
    description: str
    params: Mapping[str, Any] = field(default_factory=dict)  # defaults, overridable per project

    def build(self, tokenizer=None, preset: Preset | None = None, params: Mapping[str, Any] | None = None):
        unknown = set(params or {}) - set(self.params)
        if unknown:
            raise RegistryError(
                _("reward {name!r} has no parameter {param!r}; it takes: {params}").format(
                    name=self.name, param=sorted(unknown)[0], params=", ".join(sorted(self.params)) or _("none")
                )
            )
        context = RewardContext(tokenizer=tokenizer, preset=preset, params={**self.params, **(params or {})})
        func = self.factory(context)

        # TRL logs each reward as rewards/<__name__>/mean: give it the registered name. TRL awaits
        # `async def` rewards (concurrently), so an async reward stays async.
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def reward(*args, **kwargs):
                return await func(*args, **kwargs)
        else:
            @functools.wraps(func)
            def reward(*args, **kwargs):
                return func(*args, **kwargs)

        reward.__name__ = reward.__qualname__ = self.name
        return reward


@dataclass(frozen=True)
class Registered:
    item: Reward | Preset
    plugin: str


def collect(hook, kind: type) -> dict[str, Registered]:
    """Call every implementation of ``hook`` with a register callback; names must be unique."""
    found: dict[str, Registered] = {}
    for impl in reversed(hook.get_hookimpls()):  # pluggy keeps them last-registered first

        def register(item, _plugin=impl.plugin_name):
            if not isinstance(item, kind):
                raise RegistryError(
                    _("plugin {plugin!r} registered {item!r}, expected a {kind}").format(
                        plugin=_plugin, item=item, kind=kind.__name__
                    )
                )
            if item.name in found:
                raise RegistryError(
                    _("{kind} {name!r} is registered by both {first!r} and {second!r}; rename one").format(
                        kind=kind.__name__.lower(), name=item.name, first=found[item.name].plugin, second=_plugin
                    )
                )
            found[item.name] = Registered(item, _plugin)

        impl.function(register=register)
    return found
