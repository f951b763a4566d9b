"""The schema of a project's config.toml: every table and key, their types and ranges, checked with pydantic.

Pure: it reads TOML text and returns plain validated data; it runs no user code and imports nothing heavy
(no torch, transformers or TRL), so the CLI and train.py can use it before any model loads. Checks that need
files (the dataset, the model folder, the project's rewards.py) belong to ``grpo_skill.project``.

``[grpo]`` is checked against TRL's GRPOConfig through ``data/grpo_config.json``: its fields, types, defaults and
choices, derived from the installed TRL by

    python -m grpo_skill.schema --write     # after changing the pinned TRL; tests/test_schema.py checks it

Adding a table is one small class below and one line in ``ProjectSchema``.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import json
import math
import re
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
    import tomli as tomllib
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .errors import UserError
from .i18n import N_, _

CONFIG_FILE = "config.toml"
BACKENDS = ("auto", "unsloth", "trl")
GRPO_FIELDS_FILE = "grpo_config.json"

# GRPOConfig fields that train.py derives itself; setting them in [grpo] too would clash.
SET_BY_TRAIN_PY = {
    "reward_weights": N_("from the weights of the [[rewards]]"),
    "bf16": N_("from what the GPU supports"),
    "fp16": N_("from what the GPU supports"),
    "gradient_checkpointing": N_("from lora.gradient_checkpointing"),
    "disable_tqdm": N_("it draws its own progress bar"),
}

# GRPOConfig fields that evaluate during training, with their "off" value: train.py gives the trainer no
# eval_dataset, so Trainer would refuse any other value after the model has loaded.
NEEDS_EVAL_DATASET = {"eval_strategy": "no", "eval_on_start": False, "load_best_model_at_end": False}


class ConfigError(UserError):
    """A config that cannot run; the message names the file, line, key and the fix."""


# ---- the tables -----------------------------------------------------------------------------------------

class Table(BaseModel):
    # strict: "16" is not 16 and true is not 1; extra="forbid": a typo is an error, not a silently ignored key
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


NonEmptyStr = Annotated[str, Field(min_length=1)]


class ModelTable(Table):
    preset: NonEmptyStr
    name: NonEmptyStr
    backend: Literal["auto", "unsloth", "trl"] = "auto"
    max_seq_length: Annotated[int, Field(ge=16)]
    load_in_4bit: bool = False
    # TRL backend: a static KV cache and a compiled decode step (runtime/decoding.py)
    compile_decoding: bool = False
    # how completions are sampled: "fast" from a merged bf16 copy of the policy (runtime/generation_copy.py),
    # "plain" by the backend itself, "auto" fast on a CUDA GPU where `plan` says the copy fits
    generation: Literal["auto", "fast", "plain"] = "auto"
    # a LoRA adapter folder to continue from (e.g. what sft.py saved); checked for existence by project.py
    adapter: NonEmptyStr | None = None


class LoraTable(Table):
    r: Annotated[int, Field(ge=1)]
    alpha: Annotated[float, Field(gt=0)]
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.0
    target_modules: Annotated[list[NonEmptyStr], Field(min_length=1)] | Literal["all-linear"]
    gradient_checkpointing: bool | Literal["unsloth"] = "unsloth"


class DatasetTable(Table):
    path: NonEmptyStr
    split: NonEmptyStr = "train"
    prompt_column: NonEmptyStr = "prompt"
    system_prompt: str = ""
    # passed to the tokenizer's apply_chat_template, e.g. {enable_thinking = false}
    chat_template_kwargs: dict[str, Any] = {}


# GRPO normalises the weighted total within each group, so only the weights' ratios matter; beyond this size a
# weight is a typo, and near float's limit the total overflows to inf.
MAX_REWARD_WEIGHT = 1000.0
RewardWeight = Annotated[float, Field(ge=-MAX_REWARD_WEIGHT, le=MAX_REWARD_WEIGHT)]


def parse_reward_spec(spec: str) -> tuple[str, float]:
    """``NAME`` or ``NAME:WEIGHT`` (``-r`` of `new`, `rewards try`): the one parser, with config.toml's bounds."""
    name, colon, weight_text = spec.partition(":")
    try:
        weight = float(weight_text) if colon else 1.0
    except ValueError:
        weight = None
    if not name.strip() or weight is None or not math.isfinite(weight):
        raise UserError(_("{spec!r}: write a reward as NAME or NAME:WEIGHT, the weight a finite number, e.g. "
                          "accuracy:0.5").format(spec=spec))
    if abs(weight) > MAX_REWARD_WEIGHT:
        raise UserError(_("{spec!r}: a weight from -{max:g} to {max:g}; only the weights' ratios matter, as GRPO "
                          "normalises the total").format(spec=spec, max=MAX_REWARD_WEIGHT))
    return name, weight


class RewardEntry(Table):
    name: NonEmptyStr
    weight: RewardWeight = 1.0
    # checked against the reward's declared params by project.py (it needs the registry)
    params: dict[str, Any] = {}


class SftTable(Table):
    """[sft]: the supervised warm start (sft.py): its examples, and the SFTConfig values it may change."""

    path: NonEmptyStr = "data/sft.jsonl"
    split: NonEmptyStr = "train"
    prompt_column: NonEmptyStr = "prompt"
    thinking_column: str = "thinking"  # "": the examples hold no thinking
    response_column: NonEmptyStr = "response"
    output_dir: NonEmptyStr = "outputs/sft"
    max_steps: Annotated[int, Field(ge=1)] = 60
    learning_rate: Annotated[float, Field(gt=0)] = 2e-4
    per_device_train_batch_size: Annotated[int, Field(ge=1)] = 4
    logging_steps: Annotated[int, Field(ge=1)] = 5


class GrpoBase(Table):
    """[grpo]: the fields come from GRPOConfig (data/grpo_config.json), see grpo_table()."""


class ProjectSchema(Table):
    model: ModelTable
    lora: LoraTable
    dataset: DatasetTable
    rewards: Annotated[list[RewardEntry], Field(min_length=1)]
    grpo: GrpoBase  # replaced by the model built from GRPOConfig's fields, see project_schema()
    sft: SftTable | None = None


# Hints for a missing key: what to write.
HINTS = {
    "model.preset": N_("one of 'grpo-skill presets'"),
    "model.name": N_("a hub id or a local model folder"),
    "model.max_seq_length": N_("prompt + completion tokens, e.g. 1024"),
    "lora.r": N_("the LoRA rank, e.g. 16"),
    "lora.alpha": N_("usually equal to r"),
    "lora.target_modules": N_('e.g. ["q_proj", "k_proj", "v_proj", "o_proj"]'),
    "dataset.path": N_("a local .jsonl/.json/.csv/.parquet file or a hub dataset id"),
    "grpo.output_dir": N_('where checkpoints and metrics go, e.g. "outputs"'),
    "grpo.max_completion_length": N_("tokens generated per completion"),
    "grpo.num_generations": N_("completions per prompt, at least 2"),
    "rewards.name": N_("a reward from 'grpo-skill rewards'"),
}

# Ranges of GRPOConfig fields that TRL leaves unchecked until the model has loaded (or never checks).
GRPO_LIMITS: dict[str, dict[str, float]] = {
    "learning_rate": {"gt": 0},
    "max_steps": {"ge": 1},
    "num_train_epochs": {"gt": 0},
    "num_generations": {"ge": 2},
    "max_completion_length": {"ge": 1},
    "per_device_train_batch_size": {"ge": 1},
    "gradient_accumulation_steps": {"ge": 1},
    "generation_batch_size": {"ge": 1},
    "steps_per_generation": {"ge": 1},
    "num_iterations": {"ge": 1},
    "beta": {"ge": 0},
    "epsilon": {"ge": 0},
    "temperature": {"gt": 0},
    "top_p": {"gt": 0, "le": 1},
    "top_k": {"ge": 0},
    "min_p": {"ge": 0, "le": 1},
    "repetition_penalty": {"gt": 0},
    "warmup_steps": {"ge": 0},
    "weight_decay": {"ge": 0},
    "max_grad_norm": {"ge": 0},
    "adam_beta1": {"ge": 0, "lt": 1},
    "adam_beta2": {"ge": 0, "lt": 1},
    "adam_epsilon": {"gt": 0},
    "logging_steps": {"gt": 0},
    "save_steps": {"gt": 0},
    "save_total_limit": {"ge": 1},
    "eval_steps": {"gt": 0},
    "seed": {"ge": 0},
    "top_entropy_quantile": {"ge": 0, "le": 1},
}
REQUIRED_GRPO = ("output_dir", "max_completion_length", "num_generations")


# ---- [grpo] from GRPOConfig -----------------------------------------------------------------------------

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


def derive_grpo_fields() -> dict:
    """GRPOConfig's init fields from the installed TRL: name -> type names, default, choices. Imports TRL."""
    import importlib.metadata

    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    fields = {}
    for spec in dataclasses.fields(GRPOConfig):
        if not spec.init:
            continue
        names, choices = _describe_type(hints[spec.name])
        choices = list(spec.metadata["choices"]) if "choices" in spec.metadata else choices
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


_SIMPLE_TYPES = {
    "bool": bool, "int": int, "float": float, "str": str, "dict": dict[str, Any],
    "list[str]": list[str], "list[int]": list[int], "list[float]": list[float], "list": list,
    "false": Literal[False],
}


def _grpo_annotation(name: str, entry: dict):
    members = []
    for type_name in entry["type"]:
        if type_name == "null":
            continue  # TOML has no null: leave the key out instead
        if type_name == "str" and entry.get("choices"):
            members.append(Literal[tuple(entry["choices"])])
        elif type_name in _SIMPLE_TYPES:
            members.append(_SIMPLE_TYPES[type_name])
    if not members:
        return None  # e.g. parallelism_config (an accelerate object): not settable from a TOML file
    annotation = members[0] if len(members) == 1 else Union[tuple(members)]
    limits = GRPO_LIMITS.get(name)
    return Annotated[annotation, Field(**limits)] if limits else annotation


def grpo_table() -> type[Table]:
    if "grpo_table" not in _cache:
        definitions = {}
        for name, entry in grpo_fields().items():
            annotation = _grpo_annotation(name, entry)
            if annotation is not None:
                definitions[name] = (annotation, ... if name in REQUIRED_GRPO else None)
        _cache["grpo_table"] = create_model("GrpoTable", __base__=GrpoBase, **definitions)
    return _cache["grpo_table"]


def project_schema() -> type[ProjectSchema]:
    if "schema" not in _cache:
        _cache["schema"] = create_model("Project", __base__=ProjectSchema, grpo=(grpo_table(), ...))
    return _cache["schema"]


def table_keys() -> dict[str, list[str]]:
    """Every key config.toml accepts, by table."""
    schema = project_schema()
    keys = {}
    for table, info in schema.model_fields.items():
        model = _model_of(info.annotation)
        keys[table] = list(model.model_fields) if model else []
    return keys


def _model_of(annotation) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (ModelTable, list[RewardEntry], SftTable | None), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found:
            return found
    return None


# ---- where a key is written -----------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r'^\s*("[^"]+"|\'[^\']+\'|[A-Za-z0-9_-]+)\s*[.=]')


def _unquote(name: str) -> str:
    return name.strip().strip("\"'")


def locate(text: str, loc: tuple) -> int | None:
    """The 1-based line where the key at ``loc`` is written (("grpo", "learning_rate"), ("rewards", 0, "weight")),
    else the line of the closest table header above it; None when neither is in the text. tomllib gives no
    positions: a small scan of headers and ``key =`` lines does."""
    want = tuple(loc)
    section: tuple = ()
    arrays: dict[tuple, int] = {}  # [[name]] -> index of its current entry
    header_line = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            names = tuple(_unquote(name) for name in header.group(2).split("."))
            if header.group(1) == "[[":
                arrays[names] = arrays.get(names, -1) + 1
            path: list = []
            for depth in range(len(names)):
                path.append(names[depth])
                if names[: depth + 1] in arrays:
                    path.append(arrays[names[: depth + 1]])
            section = tuple(path)
            if section and want[: len(section)] == section:
                if len(section) == len(want):
                    return number
                header_line = number
            continue
        key = _KEY.match(line)
        if key:
            full = section + (_unquote(key.group(1)),)
            if want[: len(full)] == full:
                return number
    return header_line


# ---- messages -------------------------------------------------------------------------------------------

@dataclass
class Source:
    """Where a config came from: for messages that name the file, line, table and key."""

    path: Path
    text: str = ""
    overridden: set[str] = field(default_factory=set)  # dotted keys set on the command line

    def error(self, loc: tuple, message: str) -> ConfigError:
        where = dotted(loc)
        if _root_key(loc) in self.overridden:
            if message.startswith("= "):
                value, message = message[2:].split(": ", 1)
                where = f"{where} = {value}"
            return ConfigError(_("{where} (given on the command line): {message}").format(where=where, message=message))
        line = locate(self.text, loc)
        prefix = f"{self.path}:{line}" if line else str(self.path)
        return ConfigError(f"{prefix}: {where}{' ' if message.startswith('= ') else ': '}{message}")


def _root_key(loc: tuple) -> str:
    names = [str(part) for part in loc if isinstance(part, str)]
    return ".".join(names[:2])


def dotted(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def toml_text(value) -> str:
    """``value`` as a TOML value (the template's ``toml`` filter): inline tables for dicts."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_text(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        keys = [key if re.fullmatch(r"[A-Za-z0-9_-]+", str(key)) else json.dumps(str(key)) for key in value]
        return "{ " + ", ".join(f"{key} = {toml_text(item)}" for key, item in zip(keys, value.values())) + " }"
    return repr(value) if isinstance(value, float) else str(value)


def toml_value(value) -> str:
    """``value`` as a message shows it: TOML, a table as {...}, a long array cut short."""
    if isinstance(value, dict):
        return "{...}"
    if isinstance(value, list):
        text = "[" + ", ".join(toml_value(item) for item in value) + "]"
        return text if len(text) <= 60 else text[:57] + "...]"
    return toml_text(value)


def _describe_expected(annotation) -> str:
    """What a value of ``annotation`` looks like, in words, for 'must be ...'."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _describe_expected(args[0])
    if origin in (Union, types.UnionType):
        parts = [_describe_expected(arg) for arg in args if arg is not type(None)]
        return _(" or ").join(dict.fromkeys(parts))
    if origin is Literal:
        return _("one of {choices}").format(choices=", ".join(toml_value(arg) for arg in args)) if len(args) > 1 \
            else toml_value(args[0])
    if origin is list:
        return _("a list of {items}").format(items=_plural(args[0] if args else Any))
    if annotation is dict or origin is dict:
        return _("a table, e.g. { key = value }")
    return {
        bool: _("true or false"), int: _("a whole number"), float: _("a number"), str: _("a string in quotes"),
    }.get(annotation, _("a value of another type"))


def _plural(annotation) -> str:
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return {str: _("strings"), int: _("whole numbers"), float: _("numbers")}.get(annotation, _("values"))


def _field_at(loc: tuple) -> tuple[tuple, Any, type[BaseModel] | None]:
    """(loc without pydantic's union tags, the leaf field's annotation, the model holding it)."""
    model: type[BaseModel] | None = project_schema()
    clean, annotation, holder = [], None, None
    for part in loc:
        if isinstance(part, int):
            clean.append(part)
        elif model is not None:
            clean.append(part)
            if part not in model.model_fields:
                return tuple(clean), None, model  # an unknown key
            holder, annotation = model, model.model_fields[part].annotation
            model = _model_of(annotation)
        elif typing.get_origin(annotation) is dict:
            clean.append(part)  # a key inside a table-valued field
        # else: a union member's tag (e.g. 'bool', "literal['unsloth']"): not part of the key's path
    return tuple(clean), annotation, holder


def _suggest(key: str, choices) -> str | None:
    found = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def _unknown_key_message(loc: tuple) -> str:
    key = str(loc[-1])
    keys = table_keys()
    if len(loc) == 1:  # a table (or a key outside any table)
        owner = next((table for table, names in keys.items() if key in names), None)
        if owner:
            return _("is outside any table; put it under [{table}]").format(table=owner)
        suggestion = _suggest(key, keys)
        tables = ", ".join(f"[{name}]" for name in keys)
        if suggestion:
            return _("unknown table; did you mean [{suggestion}]? (tables: {tables})").format(
                suggestion=suggestion, tables=tables)
        return _("unknown table; the tables are {tables}").format(tables=tables)
    table = str(loc[0])
    valid = keys.get(table, [])
    suggestion = _suggest(key, valid)
    if suggestion:
        return _("unknown key in [{table}]; did you mean `{suggestion}`?").format(table=table, suggestion=suggestion)
    owner = next((other for other, names in keys.items() if key in names and other != table), None)
    if owner:
        return _("not a [{table}] key: it belongs in [{owner}]").format(table=table, owner=owner)
    if table == "grpo" and key in grpo_fields():
        return _("cannot be set in config.toml (GRPOConfig takes a Python object for it)")
    if table == "grpo":
        return _("unknown key in [grpo]: GRPOConfig (TRL {version}) has no such field; see references/grpo-config.md"
                 ).format(version=trl_version())
    if not valid:
        return _("unknown key: [{table}] takes no keys yet").format(table=table)
    return _("unknown key in [{table}]; the keys are: {keys}").format(table=table, keys=", ".join(valid))


_LIMIT_MESSAGES = {
    "greater_than": N_("must be greater than {gt}"),
    "greater_than_equal": N_("must be at least {ge}"),
    "less_than": N_("must be below {lt}"),
    "less_than_equal": N_("must be at most {le}"),
}


def _message(errors: list[dict]) -> tuple[tuple, str, Any]:
    """One pydantic error (with its union siblings) -> (loc, message, offending value)."""
    first = errors[0]
    loc, annotation, _holder = _field_at(first["loc"])
    kind, value = first["type"], first.get("input")
    siblings = [error for error in errors if _field_at(error["loc"])[0] == loc]
    if kind == "extra_forbidden":
        return loc, _unknown_key_message(loc), value
    if kind == "missing":
        if len(loc) == 1:
            return loc, _("table [{table}] is missing; copy it from a project made by 'grpo-skill new'").format(
                table=loc[0]), None
        hint = HINTS.get(_root_key(tuple(p for p in loc if isinstance(p, str))))
        text = _("is missing; add it to [{table}]").format(table=loc[0])
        return loc, text + (f" ({_(hint)})" if hint else ""), None
    if kind in _LIMIT_MESSAGES:
        limits = {key: f"{limit:g}" for key, limit in first.get("ctx", {}).items()}
        return loc, _(_LIMIT_MESSAGES[kind]).format(**limits), value
    if kind == "finite_number":
        return loc, _("must be a finite number, not nan or inf"), value
    if kind == "too_short":
        return loc, _("must not be empty"), value
    if kind == "string_too_short":
        return loc, _("must not be an empty string"), value
    if loc == ("rewards",) and kind == "list_type":
        return loc, _('write each reward as a [[rewards]] table (double brackets) with name = "..."'), None
    if kind == "literal_error" and len(siblings) == 1 and isinstance(value, str):
        choices = list(typing.get_args(_strip_annotated(annotation)))
        suggestion = _suggest(value, [str(choice) for choice in choices])
        if len(choices) > 8:
            text = _("not one of the {count} values TRL accepts (e.g. {some})").format(
                count=len(choices), some=", ".join(toml_value(choice) for choice in choices[:3]))
        else:
            text = _("must be one of {choices}").format(choices=", ".join(toml_value(choice) for choice in choices))
        return loc, text + (_("; did you mean {suggestion}?").format(suggestion=toml_value(suggestion))
                            if suggestion else ""), value
    expected = _describe_expected(annotation) if annotation is not None else None
    if expected:
        text = _("must be {expected}").format(expected=expected)
        if isinstance(value, str) and kind in ("int_type", "float_type", "bool_type") and _unquoted_fits(value):
            text += _(" (no quotes)")
        return loc, text, value
    return loc, first["msg"], value


def _strip_annotated(annotation):
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is Annotated else annotation


def _unquoted_fits(value: str) -> bool:
    """ "16", "1e-5", "true": a number or a boolean written in quotes."""
    if value.strip().lower() in ("true", "false"):
        return True
    try:
        float(value)
        return True
    except ValueError:
        return False


def _field_loc(loc: tuple) -> tuple:
    """A list item's error is reported for the whole list: `target_modules = [1, 2]`."""
    keep = 2 if loc[:1] == ("rewards",) else 1  # ("rewards", 0) names an entry, not an item
    while len(loc) > keep and isinstance(loc[-1], int):
        loc = loc[:-1]
    return loc


def _value_at(raw, loc: tuple):
    for part in loc:
        try:
            raw = raw[part]
        except (KeyError, IndexError, TypeError):
            return None
    return raw


def describe(error: ValidationError, source: Source, raw: dict) -> ConfigError:
    errors = error.errors(include_url=False)
    for found in errors:
        found["loc"] = _field_loc(_field_at(found["loc"])[0])
        if found["type"] not in ("extra_forbidden", "missing"):
            found["input"] = _value_at(raw, found["loc"])
    # an unknown key first: a typo is usually also why a key looks missing
    errors.sort(key=lambda found: found["type"] != "extra_forbidden")
    loc, message, value = _message(errors)
    problems = len({found["loc"] for found in errors})
    if value is not None and not isinstance(value, dict):
        message = f"= {toml_value(value)}: {message}"
    text = str(source.error(loc, message))
    if problems > 1:
        text += _(" ({count} more after this one)").format(count=problems - 1)
    return ConfigError(text)


# ---- validation -----------------------------------------------------------------------------------------

def parse(text: str, path: str | Path) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        where = f"{path}:{match.group(1)}" if match else str(path)
        raise ConfigError(_("{where}: not valid TOML: {reason}; fix that line").format(where=where, reason=reason)
                          ) from None


def validate(raw: dict, source: Source) -> dict:
    """Check ``raw`` (config.toml parsed, overrides applied) against the schema; return plain data:
    model/lora/dataset with their defaults filled in, rewards as a list of tables, and [grpo] with only the
    keys the file sets (GRPOConfig supplies the rest)."""
    try:
        checked = project_schema().model_validate(raw)
    except ValidationError as error:
        raise describe(error, source, raw) from None
    data = {
        "model": _plain(checked.model, raw["model"]),
        "lora": _plain(checked.lora, raw["lora"]),
        "dataset": _plain(checked.dataset, raw["dataset"]),
        "rewards": [_plain(entry, table) for entry, table in zip(checked.rewards, raw["rewards"])],
        "grpo": {key: raw["grpo"][key] for key in checked.grpo.model_fields_set},
        "sft": _plain(checked.sft, raw["sft"]) if checked.sft is not None else None,
    }
    _check_together(data, source)
    return data


def _plain(model: BaseModel, raw: dict) -> dict:
    # the values as written (16 stays an int where a float is allowed), defaults for what is not written
    return {**model.model_dump(), **{key: raw[key] for key in model.model_fields_set}}


def grpo_value(grpo: dict, key: str):
    """A [grpo] value, or GRPOConfig's default when the file leaves it out."""
    return grpo[key] if key in grpo else grpo_fields()[key].get("default")


def _check_together(data: dict, source: Source) -> None:
    """Checks that span keys: what TRL would refuse only after the model has loaded."""
    model, grpo = data["model"], data["grpo"]
    for key in grpo:
        if key in SET_BY_TRAIN_PY:
            raise source.error(("grpo", key), _("set by train.py ({why}); remove it from [grpo]").format(
                why=_(SET_BY_TRAIN_PY[key])))
    if grpo.get("resume_from_checkpoint") is not None:
        raise source.error(("grpo", "resume_from_checkpoint"), _(
            "remove it from [grpo]; to continue a run, use python train.py --resume (it takes the last checkpoint "
            "in grpo.output_dir)"))
    for key, off in NEEDS_EVAL_DATASET.items():
        if key in grpo and grpo[key] != off:
            raise source.error(("grpo", key), _(
                "train.py trains without an eval dataset, so there is nothing to evaluate; remove it from "
                "[grpo] (evaluate.py scores the trained adapter)"))
    if model["compile_decoding"]:
        _check_compile_decoding(model, grpo, source)
    if model["generation"] == "fast":
        _check_fast_generation(model, grpo, source)
    completion, max_seq = grpo["max_completion_length"], model["max_seq_length"]
    if completion >= max_seq:
        raise source.error(("grpo", "max_completion_length"), _(
            "{completion} leaves no room for the prompt in model.max_seq_length ({max_seq}); lower it or raise "
            "max_seq_length").format(completion=completion, max_seq=max_seq))
    if grpo.get("auto_find_batch_size"):
        raise source.error(("grpo", "auto_find_batch_size"), _(
            "GRPO needs whole groups of num_generations in a batch, which shrinking the batch breaks; remove it"))
    generations = grpo["num_generations"]
    per_device = grpo_value(grpo, "per_device_train_batch_size")
    if "generation_batch_size" in grpo and "steps_per_generation" in grpo:
        raise source.error(("grpo", "generation_batch_size"), _(
            "set generation_batch_size or steps_per_generation, not both"))
    if "generation_batch_size" in grpo:
        batch, names = grpo["generation_batch_size"], "generation_batch_size"
        if batch % per_device:
            raise source.error(("grpo", "generation_batch_size"), _(
                "{batch} is not a multiple of per_device_train_batch_size = {per_device}").format(
                batch=batch, per_device=per_device))
    else:
        steps_key = "steps_per_generation" if "steps_per_generation" in grpo else "gradient_accumulation_steps"
        batch = per_device * grpo_value(grpo, steps_key)
        names = f"per_device_train_batch_size x {steps_key}"
    if batch % generations:
        raise source.error(("grpo", "num_generations"), _(
            "{names} = {batch} is not divisible by num_generations = {generations}; make the batch a multiple of "
            "{generations}").format(names=names, batch=batch, generations=generations))


def _check_compile_decoding(model: dict, grpo: dict, source: Source) -> None:
    where = ("model", "compile_decoding")
    if model["backend"] == "unsloth":
        raise source.error(where, _("Unsloth decodes with its own CUDA graphs; compile_decoding is for backend = "
                                    "'trl': remove it, or set backend = 'trl'"))
    if model["load_in_4bit"]:
        raise source.error(where, _("with 4-bit weights a compiled decode step was measured slower, not faster "
                                    "(docs/benchmarks.md); set load_in_4bit = false (bf16 weights) or remove "
                                    "compile_decoding"))
    if grpo.get("use_vllm"):
        raise source.error(where, _("vLLM generates the completions, so there is no transformers decode step to "
                                    "compile; remove compile_decoding or use_vllm"))
    if grpo.get("cache_implementation") not in (None, "static"):
        raise source.error(("grpo", "cache_implementation"), _(
            "compile_decoding decodes with a static KV cache; remove cache_implementation (or set it to "
            "'static')"))


def _check_fast_generation(model: dict, grpo: dict, source: Source) -> None:
    where = ("model", "generation")
    if model["backend"] == "unsloth":
        raise source.error(where, _("'fast' samples from a merged copy with the TRL backend; Unsloth generates "
                                    "with its own: set backend = 'auto' or 'trl', or generation = 'plain'"))
    if grpo.get("use_vllm"):
        raise source.error(where, _("vLLM generates the completions; remove use_vllm or set generation = 'plain'"))
    if model["compile_decoding"]:
        raise source.error(("model", "compile_decoding"), _(
            "the fast generation path compiles its own decode step; remove compile_decoding"))


# ---- python -m grpo_skill.schema --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grpo_skill.schema", description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"derive data/{GRPO_FIELDS_FILE} from the installed TRL")
    action.add_argument("--check", action="store_true", help="exit 1 when it differs from the installed TRL")
    action.add_argument("--keys", action="store_true", help="print the keys each table accepts, as JSON")
    args = parser.parse_args(argv)
    if args.keys:
        print(json.dumps(table_keys(), indent=1))
        return 0
    text = grpo_fields_json(derive_grpo_fields())
    target = Path(__file__).resolve().parents[1] / "data" / GRPO_FIELDS_FILE
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            print(f"{target} is stale: run python -m grpo_skill.schema --write", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
