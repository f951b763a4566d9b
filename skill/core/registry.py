"""What plugins register: rewards, presets and judges, and the registry that collects them.

Every reward, whoever registered it (built-in, installed plugin, a project's rewards.py), is built by
``Reward.build``, which holds it to the reward contract (``contract``): one finite score or ``None`` per completion,
strings and chat messages both accepted, the time of each call recorded, and any breach or exception reported as a
``RewardError`` that names the reward, its plugin and the sample. The contract, a completion's text
(``completions``), the param rules (``params``) and a preset's one-line summary (``summary``) live in modules of
their own; their names stay importable from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from . import contract
from .completions import completion_text, prompt_text  # noqa: F401  (the package face: grpo_skill.completion_text)
from .contract import (SAMPLE_CHARS, ContractedReward, RewardError, RewardTiming,  # noqa: F401  (importable here)
                       reward_seconds)
from .errors import UserError
from .i18n import _
from .params import mistyped
from .summary import grpo_summary  # noqa: F401  (importable from here, as before)

# TRL calls reward functions as f(prompts=..., completions=..., completion_ids=..., **dataset_columns).
RewardFunc = Callable[..., "list[float | None]"]
# A judge backend grades answers: f(requests) -> one grade in [0, 1] (or None) per JudgeRequest.
JudgeFunc = Callable[[Sequence["JudgeRequest"]], "list[float | None]"]

# A project's rewards.py registers as this prefix + its folder (core/plugins.py)
PROJECT_PLUGIN_PREFIX = "project:"

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
    # "auto" (off on the TRL backend where plan says the run fits without it, else on), "unsloth" (Unsloth's offloaded
    # variant; plain gradient checkpointing under TRL), True or False
    gradient_checkpointing: str | bool = "auto"


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    model_id: str
    max_seq_length: int
    load_in_4bit: bool | str  # True, False or "auto" (as [model] load_in_4bit)
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
    # How many positions model_id reads (max_position_embeddings in its config.json): before it is downloaded, checks
    # hold model.max_seq_length to it (None: unchecked until train.py has the model)
    max_position_embeddings: int | None = None


@dataclass(frozen=True)
class RewardContext:
    """What a reward factory gets: the run's tokenizer, preset and settings, and the params from the config.

    ``grpo`` is the run's GRPOConfig settings: the project's [grpo] over the preset's (e.g.
    ``context.grpo["max_completion_length"]``). Plugins written before it read them from ``context.preset.grpo``:
    that stays the same mapping.
    """

    tokenizer: Any = None
    preset: Preset | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    grpo: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.preset is not None:
            settings = {**self.preset.grpo, **self.grpo}
            object.__setattr__(self, "grpo", settings)
            if settings != dict(self.preset.grpo):  # context.preset.grpo, as older plugins read the run's settings
                object.__setattr__(self, "preset", dataclasses.replace(self.preset, grpo=settings))

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

    def build(self, tokenizer=None, preset: Preset | None = None, params: Mapping[str, Any] | None = None,
              grpo: Mapping[str, Any] | None = None):
        """The TRL reward function, held to the reward contract (see the module's docstring). ``grpo``: the run's
        [grpo] settings, over the preset's (``RewardContext.grpo``)."""
        self._check_params(params or {})
        context = RewardContext(tokenizer=tokenizer, preset=preset, params={**self.params, **(params or {})},
                                grpo=dict(grpo or {}))
        where = contract.describe_reward(self.name, self.plugin)
        func = contract.make(self.factory, context, where)
        # a project's rewards.py is no importable module: its rewards travel by name and folder, with the function
        # that registers that rewards.py again (the plugin manager's, which sits above: pickled by its name)
        project = self.source.startswith(PROJECT_PLUGIN_PREFIX)
        reward = ((contract.find_project_reward, self.name, self.source[len(PROJECT_PLUGIN_PREFIX):]) if project
                  else self)
        recipe = (reward, tokenizer, preset, dict(params or {}), dict(grpo or {}))
        return contract.with_contract(func, self.name, where, recipe)

    def _check_params(self, params: Mapping[str, Any]) -> None:
        """Params this reward takes, of the type of their defaults (config.toml's are checked with their line)."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise RegistryError(
                _("reward {name!r} has no parameter {param!r}; it takes: {params}").format(
                    name=self.name, param=sorted(unknown)[0], params=", ".join(sorted(self.params)) or _("none")
                )
            )
        wrong = mistyped(params, self.params)
        if wrong:
            key, value, expected = wrong
            raise RegistryError(_("reward {name!r}: {key} = {value!r} must be {expected}, like its default "
                                  "{default!r}").format(name=self.name, key=key, value=value, expected=_(expected),
                                                        default=self.params[key]))


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
