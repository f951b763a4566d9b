"""A pydantic error on config.toml said in one line: the file, line and key, what it must be, and the fix (a
suggestion for a typo, the table a key belongs in, the missing key's hint)."""

from __future__ import annotations

import difflib
import typing
from typing import Annotated, Any, Literal, Union
import types

from pydantic import BaseModel, ValidationError

from .grpofields import grpo_fields, sft_fields, trl_version
from .i18n import N_, _
from .tables import HINTS, SftTable, model_of, project_schema, table_keys
from .tomlsource import ConfigError, Source, root_key, toml_value


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


def field_at(loc: tuple) -> tuple[tuple, Any, type[BaseModel] | None]:
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
            model = model_of(annotation)
        elif typing.get_origin(annotation) is dict:
            clean.append(part)  # a key inside a table-valued field
        # else: a union member's tag (e.g. 'bool', "literal['unsloth']"): not part of the key's path
    return tuple(clean), annotation, holder


def suggest(key: str, choices) -> str | None:
    found = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key_message(loc: tuple) -> str:
    key = str(loc[-1])
    keys = table_keys()
    if len(loc) == 1:  # a table (or a key outside any table)
        owner = next((table for table, names in keys.items() if key in names), None)
        if owner:
            return _("is outside any table; put it under [{table}]").format(table=owner)
        suggestion = suggest(key, keys)
        tables = ", ".join(f"[{name}]" for name in keys)
        if suggestion:
            return _("unknown table; did you mean [{suggestion}]? (tables: {tables})").format(
                suggestion=suggestion, tables=tables)
        return _("unknown table; the tables are {tables}").format(tables=tables)
    table = str(loc[0])
    valid = keys.get(table, [])
    suggestion = suggest(key, valid)
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
    if table == "sft" and key in sft_fields():
        return _("cannot be set in config.toml (SFTConfig takes a Python object for it)")
    if table == "sft":
        return _("unknown key in [sft]: neither one of its own ({keys}) nor a field of SFTConfig (TRL {version}); "
                 "see references/grpo-config.md").format(keys=", ".join(SftTable.model_fields), version=trl_version())
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
    loc, annotation, _holder = field_at(first["loc"])
    kind, value = first["type"], first.get("input")
    siblings = [error for error in errors if field_at(error["loc"])[0] == loc]
    if kind == "extra_forbidden":
        return loc, unknown_key_message(loc), value
    if kind == "missing":
        if len(loc) == 1:
            return loc, _("table [{table}] is missing; copy it from a project made by 'grpo-skill new'").format(
                table=loc[0]), None
        hint = HINTS.get(root_key(tuple(p for p in loc if isinstance(p, str))))
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
        suggestion = suggest(value, [str(choice) for choice in choices])
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
        suggestion = suggest(value, _literal_choices(annotation)) if isinstance(value, str) else None
        if suggestion:  # a typo of a choice that sits beside another type (scale_rewards: "group" ... or true)
            text += _("; did you mean {suggestion}?").format(suggestion=toml_value(suggestion))
        return loc, text, value
    return loc, first["msg"], value


def _literal_choices(annotation) -> list[str]:
    """The string choices of a Literal, also one inside a union."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return [arg for arg in args if isinstance(arg, str)]
    if origin in (Annotated, Union, types.UnionType):
        return [choice for arg in args for choice in _literal_choices(arg)]
    return []


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
        found["loc"] = _field_loc(field_at(found["loc"])[0])
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
