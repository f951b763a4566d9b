"""[grpo]'s keys from TRL's GRPOConfig (and [sft]'s from its SFTConfig): their init fields, types, defaults and
choices, derived from the installed TRL into ``data/grpo_config.json`` (``python -m grpo_skill.schema --write``) and
read back from there, so that checking a config imports no TRL."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
import types
import typing
from importlib import resources
from typing import Any, Literal, Union

GRPO_FIELDS_FILE = "grpo_config.json"


def _describe_type(annotation) -> tuple[list[str], list | None]:
    """A GRPOConfig field's annotation as JSON: type names, and the choices of an Enum/Literal (or None)."""
    if annotation is type(None):
        return ["null"], None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        names, choices = [], None
        for member in args:
            member_names, member_choices = _describe_type(member)
            names += [name for name in member_names if name not in names]
            if member_choices is not None:
                choices = (choices or []) + [c for c in member_choices if c not in (choices or [])]
        if choices and not all(isinstance(c, str) for c in choices):
            choices = None  # Literal[False] beside str: a type, not a choice
        return names, choices  # Enum | str: TRL turns the str into the Enum, so only its values pass
    if origin is Literal:
        if all(value is False for value in args):
            return ["false"], None
        return ["str"], list(args)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return ["str"], [member.value for member in annotation]
    if annotation in (bool, int, float, str):
        return [annotation.__name__], None
    if annotation is dict or origin is dict:
        return ["dict"], None
    if origin is list:
        item = args[0] if args else Any
        if isinstance(item, type) and issubclass(item, enum.Enum):
            item = str
        return [f"list[{item.__name__}]" if item in (str, int, float) else "list"], None
    return [f"object:{getattr(annotation, '__name__', str(annotation))}"], None


# A str field whose values TRL lists only in its help, as one sentence of quoted names (loss_type: "Supported values
# are 'grpo', 'dr_grpo', ..., and 'vespo'."); TRL itself refuses another only at the first training step.
_SUPPORTED_VALUES = re.compile(r"Supported values are ((?:'\w+', )+and '\w+')\.")


def _choices_in_help(help_text: str) -> list[str] | None:
    found = _SUPPORTED_VALUES.search(help_text)
    return re.findall(r"'(\w+)'", found.group(1)) if found else None


def _json_default(value):
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple, type({}.keys()))):
        return [_json_default(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_default(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


# Values TRL checks only once training runs, in the trainer ("Invalid value for scale_rewards: {...}. Must be one of
# 'batch', 'group', or 'none'."), and bools GRPOConfig maps to a value ({True: "group", False: "none"}): read from
# TRL's source so that check refuses a typo before a model loads.
_TRAINER_CHOICES = re.compile(r"\{self\.(\w+)\}\.\s*(?:Must be(?: one of)?|Possible values are)\s*([^\"]*)\"")
_BOOL_ALIASES = re.compile(r"self\.(\w+) = \{True: \"\w+\", False: \"\w+\"\}\.get\(")


def _choices_in_trainer_errors() -> dict[str, list[str]]:
    import inspect

    from trl.trainer import grpo_trainer

    source = re.sub(r'"\s*\n\s*f?"', "", inspect.getsource(grpo_trainer))  # one literal per message
    return {name: re.findall(r"'(\w+)'", values) for name, values in _TRAINER_CHOICES.findall(source)}


def _bool_aliased_fields() -> set[str]:
    import inspect

    from trl.trainer import grpo_config

    return set(_BOOL_ALIASES.findall(inspect.getsource(grpo_config)))


def _cache_implementations() -> list[str]:
    """What transformers' GenerationConfig accepts as cache_implementation (it checks when the trainer builds it)."""
    from transformers.generation.configuration_utils import ALL_CACHE_IMPLEMENTATIONS

    return list(ALL_CACHE_IMPLEMENTATIONS)


def _compile_choices() -> dict[str, list[str]]:
    """torch_compile_mode: the modes torch.compile knows (it refuses another when train.py's trainer compiles the
    model); torch_compile_backend: accelerate's backends (it refuses another at GRPOTrainer init) that torch registers."""
    import torch._dynamo
    import torch._inductor
    from accelerate.utils import DynamoBackend

    registered = set(torch._dynamo.list_backends(exclude_tags=()))
    return {"torch_compile_mode": list(torch._inductor.list_mode_options()),
            "torch_compile_backend": [backend.value.lower() for backend in DynamoBackend
                                      if backend.value.lower() in registered]}


_SCHEDULER_OWN_ARGS = {"optimizer", "num_warmup_steps", "num_training_steps", "last_epoch"}


# A schedule function's check that one of its arguments stays below the optimizer's learning rate (polynomial:
# "if not (lr_init > lr_end): raise ValueError(...)"), which it makes at the first training step
_BELOW_LR = re.compile(r"if not \(lr_init > (\w+)\)")
# ... and its check that a named argument is one of a list (warmup_stable_decay: "if warmup_type not in ["linear",
# "cosine", "1-sqrt"]: raise ValueError(...)"), also made at the first step
_ONE_OF = re.compile(r"if (\w+) not in \[([^\]]+)\]")


def _lr_schedulers() -> dict[str, dict]:
    """What each lr_scheduler_type does with lr_scheduler_kwargs, read from transformers' get_scheduler: the keyword
    arguments its function takes and needs, or that it drops them; and the arguments it refuses at or above
    learning_rate, with their defaults ("below_lr"), and the names a str argument takes ("choices"). transformers
    raises on any of them only at the first training step."""
    import inspect

    from transformers import optimization

    source = inspect.getsource(optimization.get_scheduler)
    # branches that call the function without scheduler_specific_kwargs (constant, constant_with_warmup)
    dropping = {name.lower() for name, call in re.findall(
        r"if name == SchedulerType\.(\w+):\s*return schedule_func\(([^)]*)\)", source)
        if "scheduler_specific_kwargs" not in call}
    schedulers = {}
    for kind, function in optimization.TYPE_TO_SCHEDULER_FUNCTION.items():
        if kind.value in dropping:
            schedulers[kind.value] = {"drops_kwargs": True}
            continue
        parameters = [p for p in inspect.signature(function).parameters.values() if p.name not in _SCHEDULER_OWN_ARGS]
        schedulers[kind.value] = {"takes": [p.name for p in parameters],
                                  "needs": [p.name for p in parameters if p.default is inspect.Parameter.empty]}
        code = inspect.getsource(function)
        below = {p.name: p.default for p in parameters if p.name in _BELOW_LR.findall(code)}
        if below:
            schedulers[kind.value]["below_lr"] = below
        names = {p.name for p in parameters}
        choices = {name: re.findall(r"[\"']([^\"']+)[\"']", listed) for name, listed in _ONE_OF.findall(code)
                   if name in names}
        if choices:
            schedulers[kind.value]["choices"] = choices
    return schedulers


def _dataclass_fields(cls) -> dict[str, list[str]]:
    hints = typing.get_type_hints(cls)
    return {spec.name: _describe_type(hints[spec.name])[0] for spec in dataclasses.fields(cls) if spec.init}


def _dataclass_tables(name: str, cls) -> dict[str, type]:
    """``name`` -> ``cls``, and ``name.field`` -> the settings class of each field that takes one, which ``cls``
    builds from a dict (ContinuousBatchingConfig its varlen_compile_config and decode_compile_config)."""
    hints = typing.get_type_hints(cls)
    tables = {name: cls}
    for spec in dataclasses.fields(cls):
        inner = [member for member in typing.get_args(hints[spec.name]) or (hints[spec.name],)
                 if isinstance(member, type) and dataclasses.is_dataclass(member)]
        if spec.init and inner:
            tables.update(_dataclass_tables(f"{name}.{spec.name}", inner[0]))
    return tables


def _settings_tables() -> dict[str, type]:
    """The [grpo] values that are tables of a library's settings, and the class each becomes."""
    from accelerate.utils import GradientAccumulationPlugin
    from transformers.generation.configuration_utils import ContinuousBatchingConfig
    from transformers.trainer_pt_utils import AcceleratorConfig

    return {"accelerator_config": AcceleratorConfig,
            "accelerator_config.gradient_accumulation_kwargs": GradientAccumulationPlugin,
            **_dataclass_tables("transformers_continuous_batching_config", ContinuousBatchingConfig)}


def _table_fields() -> dict[str, dict[str, list[str]]]:
    """The keys (and their types) of the [grpo] values that are tables of a library's settings: a key they do not
    know raises a TypeError at GRPOConfig (after the model has loaded) or GRPOTrainer init. A key that takes a
    table of its own (``name.key`` here) takes a dict."""
    tables = _settings_tables()
    fields = {name: _dataclass_fields(cls) for name, cls in tables.items()}
    for name in tables:
        table, _dot, key = name.rpartition(".")
        if table in fields:
            fields[table][key] = ["dict", *(["null"] if "null" in fields[table][key] else [])]
    return fields


def _table_choices() -> dict[str, dict[str, list[str]]]:
    """The names a settings table's str keys take: ContinuousBatchingConfig's scheduler_type (transformers takes
    another as FIFO, with only a log line) and its compile configs' mode (torch.compile's modes)."""
    import torch._inductor
    from transformers.generation.configuration_utils import CompileConfig, ContinuousBatchingConfig
    from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

    by_class = {ContinuousBatchingConfig: {"scheduler_type": list(SCHEDULER_MAPPING)},
                CompileConfig: {"mode": list(torch._inductor.list_mode_options())}}
    return {name: by_class[cls] for name, cls in _settings_tables().items() if cls in by_class}


def _item_choices(annotation) -> list[str] | None:
    """The values of a list[Enum] member (debug: str | list[DebugOption]); its str form is the same words."""
    for member in typing.get_args(annotation) or (annotation,):
        if typing.get_origin(member) is list:
            item = typing.get_args(member)[0]
            if isinstance(item, type) and issubclass(item, enum.Enum):
                return [option.value for option in item]
    return None


def _init_fields(cls, checked_late: dict[str, list[str]], bool_aliased: set[str]) -> dict[str, dict]:
    """A TRL config class's init fields: name -> type names, default, choices (``checked_late``: choices its
    trainer or another library checks only while training; ``bool_aliased``: str fields it also takes as a bool)."""
    hints = typing.get_type_hints(cls)
    fields = {}
    for spec in dataclasses.fields(cls):
        if not spec.init:
            continue
        names, choices = _describe_type(hints[spec.name])
        choices = list(spec.metadata["choices"]) if "choices" in spec.metadata else choices
        if choices is None and names == ["str"]:
            choices = _choices_in_help(spec.metadata.get("help", ""))
        if choices is None and "str" in names:
            choices = checked_late.get(spec.name)
        if spec.name in bool_aliased and "bool" not in names:
            names = [*names, "bool"]
        entry: dict[str, Any] = {"type": names}
        if spec.default is not dataclasses.MISSING:
            entry["default"] = _json_default(spec.default)
        elif spec.default_factory is not dataclasses.MISSING:
            entry["default"] = _json_default(spec.default_factory())
        if choices is not None:
            entry["choices"] = [_json_default(choice) for choice in choices]
        item_choices = _item_choices(hints[spec.name])
        if item_choices is not None:
            entry["item_choices"] = item_choices
        fields[spec.name] = entry
    return fields


def derive_grpo_fields() -> dict:
    """GRPOConfig's init fields from the installed TRL: name -> type names, default, choices; and what the
    libraries it hands tables to accept in them; and SFTConfig's fields, for [sft]. Imports TRL, transformers,
    accelerate and torch."""
    import importlib.metadata

    from trl import GRPOConfig, SFTConfig

    compile_choices = _compile_choices()
    checked_late = {**_choices_in_trainer_errors(), "cache_implementation": _cache_implementations(),
                    **compile_choices}
    return {"trl": importlib.metadata.version("trl"),
            "fields": _init_fields(GRPOConfig, checked_late, _bool_aliased_fields()),
            "lr_schedulers": _lr_schedulers(), "tables": _table_fields(), "table_choices": _table_choices(),
            "sft_fields": _init_fields(SFTConfig, compile_choices, set())}


def grpo_fields_json(derived: dict) -> str:
    """The committed file's text: one field, scheduler or table per line, so that an upgrade shows as a readable
    diff."""
    def block(name: str) -> str:
        lines = [f'  "{key}": {json.dumps(entry)}' for key, entry in derived[name].items()]
        return f'"{name}": {{\n' + ",\n".join(lines) + "\n}"

    return ('{\n"trl": ' + json.dumps(derived["trl"]) + ",\n"
            + ",\n".join(block(name) for name in ("fields", "lr_schedulers", "tables", "table_choices", "sft_fields"))
            + "}\n")


def grpo_fields() -> dict[str, dict]:
    return _grpo_data()["fields"]


def sft_fields() -> dict[str, dict]:
    """SFTConfig's init fields, as ``grpo_fields`` GRPOConfig's: what [sft] takes besides where its examples are."""
    return _grpo_data()["sft_fields"]


def lr_schedulers() -> dict[str, dict]:
    """lr_scheduler_type -> {"takes": [...], "needs": [...], "below_lr": {key: default}?, "choices": {key: [...]}?} or
    {"drops_kwargs": true}."""
    return _grpo_data()["lr_schedulers"]


def table_fields(name: str) -> dict[str, list[str]]:
    """The keys of a library's settings table ("accelerator_config", ...) with their type names."""
    return _grpo_data()["tables"][name]


def table_names() -> list[str]:
    """The settings tables: "accelerator_config", and "accelerator_config.gradient_accumulation_kwargs" for a
    table inside one."""
    return list(_grpo_data()["tables"])


def table_choices(name: str) -> dict[str, list[str]]:
    """The names a settings table's str keys take, where the library names them (scheduler_type, ...)."""
    return _grpo_data()["table_choices"].get(name, {})


def trl_version() -> str:
    return _grpo_data()["trl"]


_cache: dict[str, Any] = {}


def _grpo_data() -> dict:
    if "grpo" not in _cache:
        text = resources.files("grpo_skill").joinpath("data", GRPO_FIELDS_FILE).read_text(encoding="utf-8")
        _cache["grpo"] = json.loads(text)
    return _cache["grpo"]


def grpo_value(grpo: dict, key: str):
    """A [grpo] value, or GRPOConfig's default when the file leaves it out."""
    return grpo[key] if key in grpo else grpo_fields()[key].get("default")
