"""[grpo]'s keys from TRL's GRPOConfig: its init fields, types, defaults and choices, derived from the installed TRL
into ``data/grpo_config.json`` (``python -m grpo_skill.schema --write``) and read back from there, so that checking a
config imports no TRL."""

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


def derive_grpo_fields() -> dict:
    """GRPOConfig's init fields from the installed TRL: name -> type names, default, choices. Imports TRL."""
    import importlib.metadata

    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    checked_late = {**_choices_in_trainer_errors(), "cache_implementation": _cache_implementations()}
    bool_aliased = _bool_aliased_fields()
    fields = {}
    for spec in dataclasses.fields(GRPOConfig):
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
        fields[spec.name] = entry
    return {"trl": importlib.metadata.version("trl"), "fields": fields}


def grpo_fields_json(derived: dict) -> str:
    """The committed file's text: one field per line, so that a TRL upgrade shows as a readable diff."""
    lines = [f'  "{name}": {json.dumps(entry)}' for name, entry in derived["fields"].items()]
    return '{\n"trl": ' + json.dumps(derived["trl"]) + ',\n"fields": {\n' + ",\n".join(lines) + "\n}}\n"


def grpo_fields() -> dict[str, dict]:
    return _grpo_data()["fields"]


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
