"""`grpo-skill set`: change keys of an existing project's config.toml in place, its comments and layout kept.

The items are parsed as `new --set` and `--param` parse theirs (settings.py), the edit is made with tomlkit (only the
lines of the keys given change; a key the file does not have goes after the last key of its table, in place of a
commented-out line of it where there is one, such as the template's ``# adapter = "outputs/sft/adapter"``), and the
verb writes the file only once the whole project, as edited, passes `grpo-skill check`. ``--reward NAME[:WEIGHT]``
(read as `new --reward` reads it) changes a listed reward's weight or adds a [[rewards]] table after the last one;
``--remove-reward NAME`` takes one out, with the comment lines right above its header; the blank lines and comments
that end a table stay where they were.

Only config.toml changes: the project's ``.copier-answers.yml`` keeps the answers `new` was given (how the project was
made), so `grpo-skill update` takes the values set here as the user's edits and keeps them, as it keeps a hand edit.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import schema
from ..core.errors import UserError, shown_path
from ..core.i18n import _
from . import settings as given_settings
from .settings import SET_COMMAND, SettingError


@dataclass
class Change:
    key: str  # as given: "grpo.max_completion_length", or "accuracy.answer_column" for a --param
    old: Any  # None where config.toml does not set it
    new: Any
    added: bool = False  # config.toml did not set it (a commented-out line of it became the key's)
    removed: bool = False  # a [[rewards]] table taken out (--remove-reward): ``old`` is that table, ``new`` None


@dataclass
class Edit:
    path: Path  # the config file
    old_text: str
    text: str  # config.toml as `set` writes it
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    given: tuple[str, ...] = ()  # the "table.key"s given, which messages name as given on the command line
    derived: dict[str, str] = field(default_factory=dict)  # those `set` changed on its own -> how, for messages
    prompt_room: int | None = None  # the tokens the file left the prompts, for advice where they cannot be counted
    # "accuracy reward's answer_column" (as `check` names a column a reward reads) -> (reward, param, how), for the
    # column params of the rewards this edit adds ("added") and of those --param gives ("given")
    column_params: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    prompt_column: str = "prompt"  # dataset.prompt_column as edited

    @property
    def changed(self) -> bool:
        return self.text != self.old_text


def _tomlkit():
    try:
        import tomlkit
    except ImportError:  # an environment installed before grpo-skill needed it
        raise UserError(_("tomlkit is not installed; pip install 'tomlkit>=0.12'")) from None
    return tomlkit


def prepare(project: str | Path, set_items=(), param_items=(), reward_items=(), remove_items=()) -> Edit:
    """The edit of ``project``'s config.toml (a folder or the file itself) that the items ask for, nothing written;
    a SettingError for an item that cannot work. ``reward_items``: --reward NAME[:WEIGHT] (a listed reward's weight
    changed, another added); ``remove_items``: --remove-reward NAME."""
    from ..core import plugins
    from ..core.project import config_path, read_config, refuse_what_is_no_config

    path = config_path(project)
    shown = shown_path(path)
    if not path.is_file():
        raise SettingError(_("{path}: no such config file; run this inside a project made by 'grpo-skill new', or "
                             "give --project DIR").format(path=shown))
    refuse_what_is_no_config(path, shown)
    sets = given_settings.parse_sets(set_items, option=SET_COMMAND)
    plugins.register_project(path.parent)  # its rewards.py's rewards may take a --param, or be added
    specs = _reward_specs(reward_items)
    removed = [name.strip() for name in remove_items]
    twice = next((name for index, name in enumerate(removed) if name in removed[:index]), None)
    if twice is not None:
        raise SettingError(_("--remove-reward {name} is given twice; give it once").format(name=twice))
    both = next((name for name in specs if name in removed), None)
    if both is not None:
        raise SettingError(_("--reward {name} and --remove-reward {name}: give one of them").format(name=both))
    parsed = given_settings.parse_params(param_items, sets)
    old_text = read_config(path, shown)  # as it is: its line endings kept; not UTF-8 refused as `check` refuses it
    raw = schema.parse(old_text, shown)  # a file that is not TOML is named at its line, as `check` names it
    listed = raw.get("rewards") if isinstance(raw.get("rewards"), list) else []
    rewards = [entry.get("name") if isinstance(entry, dict) else None for entry in listed]
    added = _check_rewards(listed, rewards, specs, removed, parsed)
    edit = Edit(path, old_text, old_text, notes=list(parsed.notes),
                given=tuple(f"{table}.{key}" for table, keys in parsed.tables.items() for key in keys))
    param_paths = _param_paths(param_items)
    param_paths += _project_gold(listed, added, parsed, edit.notes)
    _raise_max_seq_length(raw, parsed, edit)
    tomlkit = _tomlkit()
    document = tomlkit.parse(old_text)
    texts = _value_texts(set_items)
    for table, keys in parsed.tables.items():
        for key, value in keys.items():
            old = raw.get(table, {}).get(key) if isinstance(raw.get(table), dict) else None
            item = _item(texts.get(f"{table}.{key}"), value)
            added_key = _set_key(document, table, key, item)
            edit.changes.append(Change(f"{table}.{key}", old, value, added_key))
    _edit_rewards(document, listed, rewards, specs, removed, edit)
    _one_length_setting(document, raw, parsed, edit)
    for names in param_paths:
        index = rewards.index(names[0]) if names[0] in rewards else None
        value, old = parsed.params[names[0]], listed[index].get("params") if index is not None else None
        for name in names[1:]:
            value = value[name]
            old = old.get(name) if isinstance(old, dict) else None
        added_param = _set_param(_reward_table(document, names[0]), names[1:], value)
        edit.changes.append(Change(".".join(names), old, value, added_param))
    _name_column_params(edit, added, param_paths, parsed, raw)
    edit.text = tomlkit.dumps(document)
    return edit


def _one_length_setting(document, raw: dict, parsed, edit: Edit) -> None:
    """max_steps or num_train_epochs given, where the file sets the other (transformers lets max_steps decide and
    ignores the epochs; the check refuses both): the other taken out, and said, as `new` leaves the preset's
    max_steps out for num_train_epochs."""
    for table in ("grpo", "sft"):
        given = parsed.tables.get(table, {})
        written = raw.get(table) if isinstance(raw.get(table), dict) else {}
        for key, other in (("num_train_epochs", "max_steps"), ("max_steps", "num_train_epochs")):
            if key not in given or other in given or written.get(other) is None:
                continue
            del document[table][other]
            edit.changes.append(Change(f"{table}.{other}", written[other], None, removed=True))
            edit.notes.append((_("grpo.{other} ({value}) taken out: grpo.{key} decides the run's length")
                               if table == "grpo" else
                               _("sft.{other} ({value}) taken out: sft.{key} decides sft.py's length"))
                              .format(other=other, key=key, value=written[other]))


def _reward_specs(items) -> dict[str, float | None]:
    """--reward NAME[:WEIGHT] items, parsed as `new --reward` parses them: {name: weight, None where none was
    given}; a reward the registry does not have is refused as `new` refuses it."""
    from ..core import plugins
    from ..core.registry import RegistryError
    from ..core.schema import parse_reward_spec

    specs: dict[str, float | None] = {}
    for item in items:
        try:
            name, weight = parse_reward_spec(item)
            plugins.get_reward(name)
        except RegistryError as error:
            raise SettingError(str(error)) from None
        except UserError as error:
            raise SettingError(_("--reward {error}").format(error=error)) from None
        if name in specs:
            raise SettingError(_("a reward is given twice; give each --reward once, with its weight"))
        specs[name] = weight if ":" in item else None
    return specs


def _check_rewards(listed: list, rewards: list, specs: dict[str, float | None], removed: list[str],
                   parsed) -> list[str]:
    """The rewards that --reward adds (those config.toml does not list), after refusing what cannot work: a listed
    reward without a weight, a reward to remove that is not listed, no reward left, a --param of a reward that is
    not listed or is removed."""
    names = ", ".join(map(str, rewards)) or _("none")
    for name in removed:
        if name not in rewards:
            raise SettingError(_("--remove-reward {name}: {name!r} is not one of the project's rewards "
                                 "({names})").format(name=name, names=names))
    for name, weight in specs.items():
        if name in rewards and weight is None:
            weight_now = listed[rewards.index(name)].get("weight", 1.0)
            raise SettingError(_("--reward {name}: the project has this reward already; give the weight it should "
                                 "have, e.g. --reward {name}:{example}").format(
                name=name, example=1 if weight_now == 2 else 2))
    added = [name for name in specs if name not in rewards]
    if not added and removed and all(name in removed for name in rewards):
        raise SettingError(_("--remove-reward: a run needs at least one reward, and this would leave [[rewards]] "
                             "empty; add one in the same command with --reward NAME[:WEIGHT]"))
    for name in parsed.params:
        if name in removed:
            raise SettingError(_("--param {name}.*: --remove-reward {name} removes that reward; give one of "
                                 "them").format(name=name))
        if name not in rewards and name not in added:
            raise SettingError(_("--param {name}.*: {name!r} is not one of the project's rewards ({names}); add "
                                 "--reward {name}").format(name=name, names=names))
    return added


def _project_gold(listed: list, added: list[str], parsed, notes: list[str]) -> list[list[str]]:
    """Give each gold-answer reward that --reward adds (``answer_column``, as `new --answer-column` sets it) the
    column the listed rewards read their gold answers from, unless --param gives it, as `rewards try --project`
    does; said in a note. The [REWARD, PARAM] paths so given; refused where they read several columns."""
    from ..core import plugins
    from .settings import GOLD_PARAMS, gold_columns

    listed_params = [(entry["name"], entry["params"] if isinstance(entry.get("params"), dict) else {})
                     for entry in listed if isinstance(entry, dict) and isinstance(entry.get("name"), str)]
    paths = []
    for param in GOLD_PARAMS:
        readers = gold_columns(listed_params, param)  # column: the listed rewards that read it
        for name in added:
            declared = plugins.get_reward(name).params
            if param not in declared or param in parsed.params.get(name, {}) or not readers:
                continue
            if len(readers) > 1:
                raise SettingError(_("--reward {name}: the project's rewards read gold answers from several columns "
                                     "({columns}); say which with --param {name}.{param}=COL").format(
                    name=name, param=param, columns=", ".join(
                        f"{column} ({', '.join(names)})" for column, names in readers.items())))
            [(column, names)] = readers.items()
            if column == str(declared[param]):
                continue  # its own default: nothing to give or say
            parsed.params.setdefault(name, {})[param] = column
            paths.append([name, param])
            notes.append(_("{name} reads its gold answers from the column {column!r}, the one config.toml gives "
                           "{rewards} ({param}; --param {name}.{param}=COL for another)").format(
                name=name, column=column, rewards=", ".join(names), param=param))
    return paths


def _name_column_params(edit: Edit, added: list[str], param_paths: list[list[str]], parsed, raw: dict) -> None:
    """Edit.column_params and Edit.prompt_column: what a refusal of a missing column says to give instead."""
    from ..core import plugins

    def label(name: str, key: str) -> str:  # as project.wanted_columns names it
        return _("{name} reward's {key}").format(name=name, key=key)

    for name in added:
        for key in {**plugins.get_reward(name).params, **parsed.params.get(name, {})}:
            if key.endswith("_column"):
                edit.column_params[label(name, key)] = (name, key, "added")
    for names in param_paths:
        if len(names) == 2 and names[1].endswith("_column") and names[0] not in added:
            edit.column_params[label(names[0], names[1])] = (names[0], names[1], "given")
    dataset = raw.get("dataset") if isinstance(raw.get("dataset"), dict) else {}
    edit.prompt_column = str(parsed.tables.get("dataset", {}).get("prompt_column",
                                                                  dataset.get("prompt_column", "prompt")))


# --- [[rewards]] tables ---------------------------------------------------------------------------------------


def _edit_rewards(document, listed: list, rewards: list, specs: dict[str, float | None], removed: list[str],
                  edit: Edit) -> None:
    """The weights --reward gives the listed rewards, the [[rewards]] tables it adds (after the last one, at the
    weight `new -r NAME` gives where none is given) and those --remove-reward takes out, each a Change."""
    tomlkit = _tomlkit()
    from ..core.schema import parse_reward_spec

    default_weight = parse_reward_spec("reward")[1]  # what `new --reward NAME` writes
    for name, weight in specs.items():
        if name in rewards:
            old = listed[rewards.index(name)].get("weight")
            _put(_reward_table(document, name), "weight", tomlkit.item(float(weight)))
            edit.changes.append(Change(f"rewards.{name}.weight", old, float(weight), added=old is None))
        else:
            table = {"name": name, "weight": float(weight if weight is not None else default_weight)}
            _append_table(document, table)
            edit.changes.append(Change(f"rewards.{name}", None, table, added=True))
    for name in removed:  # after the tables added: a table before or after the one removed is left
        edit.changes.append(Change(f"rewards.{name}", listed[rewards.index(name)], None, removed=True))
        _remove_table(document, name)


def _reward_tables(document) -> list:
    rewards = document.get("rewards")
    return list(rewards) if rewards is not None else []


def _reward_table(document, name: str):
    """The [[rewards]] table of the reward ``name``."""
    return next(table for table in _reward_tables(document) if table.get("name") == name)


def _ending(table):
    """The table whose lines end ``table``'s: its [rewards.params] sub-table where that comes last."""
    from tomlkit.items import Table

    keyed = [entry for name, entry in table.value.body if name is not None]
    return _ending(keyed[-1]) if keyed and isinstance(keyed[-1], Table) else table


def _tail(table) -> list:
    """The blank lines and comments that end a [[rewards]] table, after its last key: they belong to what follows
    (the next table, or a commented-out example reward)."""
    body = _ending(table).value.body
    last = max((index for index, (name, _entry) in enumerate(body) if name is not None), default=-1)
    return body[last + 1:]


def _set_tail(table, tail: list) -> None:
    body = _ending(table).value.body
    del body[len(body) - len(_tail(table)):]
    body.extend(tail)


def _blank(tail: list) -> bool:
    from tomlkit.items import Whitespace

    return all(isinstance(entry, Whitespace) for _name, entry in tail)


def _append_table(document, values: dict) -> None:
    """A [[rewards]] table of ``values`` after the last one: before the blank lines and comments that end it, which
    then end the new one (a commented-out table of the same reward, such as the template's example, is taken out)."""
    tomlkit = _tomlkit()
    from tomlkit.items import AoT, Whitespace

    newline = _newline(document.as_string())
    table = tomlkit.table()
    table.trivia.trail = newline
    for key, value in values.items():
        item = tomlkit.item(value)
        item.trivia.trail = newline
        table.add(key, item)
    rewards = document.get("rewards")
    if rewards is not None and not isinstance(rewards, AoT):  # rewards = [{ ... }]: one more inline table
        rewards.append(_inline(values))
        return
    if rewards is None:  # no [[rewards]] to follow: after the file's last line
        text = document.as_string()
        table.trivia.indent = "" if not text else newline if text.endswith("\n") else newline * 2
        document.append("rewards", tomlkit.aot())
        document["rewards"].append(table)
        return
    last = rewards[-1]
    tail = _tail(last)
    # spaced from the last table by the blank lines that space the tables before it (the template writes them one
    # after another), not by the comments above the last one's header
    between = []
    for entry in _tail(rewards[-2]) if len(rewards) > 1 else []:
        if not _blank([entry]):
            break
        between.append(entry)
    _set_tail(last, [(None, Whitespace(entry.as_string())) for _key, entry in between])
    table.trivia.indent = last.trivia.indent if len(rewards) > 1 else ""
    if not last.as_string().endswith("\n"):  # a last line without its newline
        table.trivia.indent = newline + table.trivia.indent
    rewards.append(table)
    _set_tail(table, _without_commented_table(tail, values["name"]))


def _without_commented_table(tail: list, name: str) -> list:
    """``tail`` without a commented-out [[rewards]] table of the reward ``name`` (``# [[rewards]]``, ``# name =
    "..."`` and its other ``# key = value`` lines), and the comment just above it that mentions rewards.py (the
    template's "uncomment to use it")."""
    from tomlkit.items import Comment

    lines = [entry.as_string().strip() if isinstance(entry, Comment) else None for _key, entry in tail]
    for start, line in enumerate(lines):
        if line is None or not re.fullmatch(r"#\s*\[\[\s*rewards\s*\]\]", line):
            continue
        end = start + 1
        while end < len(lines) and lines[end] is not None and re.match(r"#\s*[A-Za-z_]\w*\s*=", lines[end]):
            end += 1
        commented = "\n".join(line[1:] for line in lines[start + 1:end])
        try:
            names = _tomlkit().parse(commented).get("name")
        except Exception:  # comments that only look like keys
            continue
        if names != name:
            continue
        if start > 0 and lines[start - 1] is not None and "rewards.py" in lines[start - 1]:
            start -= 1
        if 0 < start and end < len(tail) and _blank(tail[start - 1:start]) and _blank(tail[end:end + 1]):
            start -= 1  # one blank line, not the two around the table
        return tail[:start] + tail[end:]
    return tail


def _remove_table(document, name: str) -> None:
    """The [[rewards]] table of ``name`` taken out, with its [rewards.params] and the comment lines right above its
    header (its own); the blank lines and comments that end it, which belong to what follows, stay."""
    from tomlkit.items import AoT, Table

    rewards = document["rewards"]
    index = next(index for index, table in enumerate(rewards) if table.get("name") == name)
    if not isinstance(rewards, AoT):  # rewards = [{ ... }]
        del rewards[index]
        return
    table, tail = rewards[index], _tail(rewards[index])
    if index > 0:
        before = rewards[index - 1]
        kept = _without_header_comments(_tail(before))
        _set_tail(before, tail if _blank(kept) else kept + tail)
    else:
        entries = [entry for key, entry in document.body if key is not None]
        above = entries[entries.index(rewards) - 1] if entries.index(rewards) > 0 else None
        if isinstance(above, Table):  # [dataset], say: the comments at its end above this header go with it
            _set_tail(above, _without_header_comments(_tail(above)))
        if len(rewards) > 1:  # the next table becomes the first; the comments above it kept, the blank lines not
            start = next((at for at, (_key, entry) in enumerate(tail) if not _blank([(None, entry)])), len(tail))
            rewards[1].trivia.indent = table.trivia.indent + "".join(entry.as_string() for _key, entry in
                                                                     tail[start:])
    del rewards[index]


def _without_header_comments(tail: list) -> list:
    """``tail`` without the comment lines at its end, which stand right above the next header (no blank line
    between): they are that table's."""
    from tomlkit.items import Comment

    end = len(tail)
    while end and isinstance(tail[end - 1][1], Comment):
        end -= 1
    return tail[:end]


def _value_texts(set_items) -> dict[str, str]:
    """Each --set item's value as written (``1e-5`` stays ``1e-5`` in the file)."""
    texts = {}
    for item in set_items:
        dotted, _sep, text = item.partition("=")
        texts[dotted.strip()] = text.strip()
    return texts


def _param_paths(param_items) -> list[list[str]]:
    """[REWARD, PARAM, (KEY...)] of each --param item (parse_params checked them)."""
    return [item.partition("=")[0].strip().split(".") for item in param_items]


def _item(text: str | None, value):
    """The tomlkit item for a value: as the user wrote it where it is TOML (its form kept), else ``value``'s own; an
    inline table as the template writes one, however it was spaced."""
    tomlkit = _tomlkit()
    if isinstance(value, dict):
        return _inline(value)
    if text is not None:
        try:
            return tomlkit.parse(f"v = {text}").item("v")
        except Exception:  # bare text, taken as a string (settings.parse_value said so)
            pass
    if isinstance(value, list):
        array = tomlkit.array()
        array.extend(_item(None, inner) for inner in value)
        return array
    return tomlkit.item(value)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _set_key(document, table_name: str, key: str, item) -> bool:
    """``key = item`` in ``[table_name]``: in place of its value where the table has it; else in place of a
    commented-out line of it in that table, else after the table's last key. True where the key was added."""
    tomlkit = _tomlkit()
    from tomlkit.items import Comment, Null, Table

    table = document.get(table_name)
    if table is None:  # a table the file lacks (an older project's [sft]): a new one at the end
        text = document.as_string()
        newline = _newline(text)  # tomlkit writes a new table's lines with "\n" and no final newline
        table = tomlkit.table()
        table.trivia.indent = "" if not text else newline if text.endswith("\n") else newline * 2  # a blank line
        table.trivia.trail = newline
        item.trivia.trail = newline
        table.add(key, item)
        document.add(table_name, table)
        return True
    if key in table or not isinstance(table, Table):
        return _put(table, key, item)
    container = table.value
    body = container.body
    newline = _newline(document.as_string())
    commented = re.compile(rf"#\s*{re.escape(key)}\s*=")
    for index, (name, entry) in enumerate(body):
        if name is None and isinstance(entry, Comment) and commented.match(entry.as_string().strip()):
            line = entry.as_string().strip()[1:].strip()
            try:
                example = tomlkit.parse(line)
            except Exception:  # a comment that only looks like a key: the key goes after the last one
                break
            if list(example) != [key]:
                break
            trivia = example.item(key).trivia
            item.trivia.comment_ws, item.trivia.comment = trivia.comment_ws, trivia.comment  # its explanation
            item.trivia.indent, item.trivia.trail = entry.trivia.indent, newline
            container._insert_at(index, key, item)  # tomlkit has no public insert at a place
            body[index + 1] = (None, Null())  # the comment, now the key's line, gone (as tomlkit drops an item)
            return True
    _after_last_key(table, key, item)
    return True


def _set_param(entry, names: list[str], value) -> bool:
    """A reward's param (``names``: PARAM or TABLE.KEY...) in its [[rewards]] table's ``params``, an inline table
    written again as the template writes one; True where it was not set."""
    from tomlkit.items import Table

    params = entry.get("params")
    if isinstance(params, Table):  # a [rewards.params] table of its own: its first key in place
        first, rest = names[0], names[1:]
        inner = params.unwrap().get(first, {})
        added = first not in params or not _has_path(inner, rest)
        _put(params, first, _inline(_with_path(inner, rest, value)) if rest else _item(None, value))
        return added
    merged = params.unwrap() if params is not None else {}
    added = not _has_path(merged, names)
    item = _inline(_with_path(merged, names, value))
    if params is None:
        _after_last_key(entry, "params", item)
    else:
        entry["params"] = item  # its trailing comment stays
    return added


def _has_path(table, names: list[str]) -> bool:
    for name in names:
        if not isinstance(table, dict) or name not in table:
            return False
        table = table[name]
    return True


def _with_path(table, names: list[str], value):
    """``table`` (a dict) with ``value`` at ``names`` (through tables made where missing); ``value`` where
    ``names`` is empty."""
    if not names:
        return value
    table = dict(table) if isinstance(table, dict) else {}
    table[names[0]] = _with_path(table.get(names[0], {}), names[1:], value)
    return table


def _inline(table: dict):
    """An inline table as the template writes one (``{ a = 1, b = "x" }``; tomlkit's own insertion into one spaces
    it unevenly)."""
    return _tomlkit().parse(f"v = {schema.toml_text(table)}").item("v")


def _put(table, key: str, item) -> bool:
    """``key = item`` in ``table``: in place of its value, else after its last key; True where it was added."""
    if key in table:
        table[key] = item  # its trailing comment and the lines around it stay
        return False
    _after_last_key(table, key, item)
    return True


def _after_last_key(table, key: str, item) -> None:
    """``key = item`` after the last key of ``table``, before the blank lines and comments that end it (they
    belong to what follows)."""
    from tomlkit.items import Table

    if not isinstance(table, Table):  # an inline table: tomlkit places the key
        table[key] = item
        return
    container = table.value
    body = container.body
    last = max((index for index, (name, _entry) in enumerate(body) if name is not None), default=-1)
    item.trivia.trail = _newline(table.as_string())
    if last + 1 >= len(body):
        table.add(key, item)
    else:
        container._insert_at(last + 1, key, item)  # tomlkit has no public insert at a place


def _raise_max_seq_length(raw: dict, parsed, edit: Edit) -> None:
    """A completion budget set up to or past model.max_seq_length (and max_seq_length not given): raised by the room
    the prompt had, as `new --set` does, and said (a note; a refusal that names it says it was raised); not past the
    positions of the model, as the edit names it. That room is kept for a refusal's advice (Edit.prompt_room)."""
    from ..core.project import positions_of

    model, grpo = raw.get("model"), raw.get("grpo")
    if not isinstance(model, dict) or not isinstance(grpo, dict):
        return
    seq, completion = model.get("max_seq_length"), grpo.get("max_completion_length")
    if not isinstance(seq, int) or not isinstance(completion, int):
        return
    if seq > completion:
        edit.prompt_room = seq - completion
    name = parsed.tables.get("model", {}).get("name", model.get("name"))  # as the edit leaves them
    preset = parsed.tables.get("model", {}).get("preset", model.get("preset"))
    raised = given_settings.raised_max_seq_length(parsed, seq, seq - completion,
                                                  lambda: positions_of(name, preset, edit.path.parent))
    if raised is None:
        return
    parsed.tables.setdefault("model", {})["max_seq_length"] = raised
    edit.derived["model.max_seq_length"] = _("raised to {length} by `grpo-skill set` to fit "
                                             "grpo.max_completion_length={completion}").format(
        length=raised, completion=parsed.tables["grpo"]["max_completion_length"])
    edit.notes.append(_("model.max_seq_length raised to {length}: grpo.max_completion_length ({completion}) plus the "
                        "{room} tokens the prompt had (model.max_seq_length=N sets it)").format(
        length=raised, completion=parsed.tables["grpo"]["max_completion_length"], room=seq - completion))


# --- after the check --------------------------------------------------------------------------------------------


def refused(error: UserError, edit: Edit) -> UserError:
    """The check's refusal of the edited config, its line numbers those of the file as it still is, saying that
    the file is unchanged."""
    message = _missing_column(error, edit) or _at_file_lines(str(error), edit)
    failure = SettingError(_("{error} ({path} is unchanged)").format(error=message, path=shown_path(edit.path)))
    failure.exit_code = getattr(error, "exit_code", 1)
    return failure


def _missing_column(error: UserError, edit: Edit) -> str | None:
    """A column the dataset lacks, read by a reward this edit adds or by a column param --param gives: the
    --param to give in this command (the one column besides the prompts where there is one); None for another
    refusal."""
    from ..core.datafile import MissingColumn

    if not isinstance(error, MissingColumn) or error.parts[1] not in edit.column_params:
        return None
    file, what, column, columns = error.parts
    name, key, how = edit.column_params[what]
    others = [other for other in columns if other not in (edit.prompt_column, column)]
    where = (_("{what} (the reward added by this command)") if how == "added"
             else _("{key} (given on the command line)")).format(what=what, key=what)
    return _("{what}: column {column!r} is not in {file} (it has: {columns}); give {fix} in this `grpo-skill set` "
             "command, or add the column to the file").format(
        what=where, column=column, file=Path(file).name, columns=", ".join(sorted(columns)) or _("nothing"),
        fix=f"--param {name}.{key}={others[0] if len(others) == 1 else 'COL'}")


def _at_file_lines(message: str, edit: Edit) -> str:
    """``FILE:LINE`` of the edited text as the line of the file on disk (where the key was added, no line)."""
    if edit.text.count("\n") == edit.old_text.count("\n"):
        return message
    lines = {}
    matcher = difflib.SequenceMatcher(None, edit.old_text.splitlines(), edit.text.splitlines(), autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and old_end - old_start == new_end - new_start):
            lines.update({new_start + offset + 1: old_start + offset + 1 for offset in range(new_end - new_start)})
    shown = re.escape(shown_path(edit.path))

    def placed(match: re.Match) -> str:
        line = lines.get(int(match.group(1)))
        return f"{match.group(0).rsplit(':', 1)[0]}:{line}" if line else match.group(0).rsplit(":", 1)[0]

    return re.sub(rf"{shown}:(\d+)", placed, message)


def write(edit: Edit) -> None:
    """config.toml replaced by the edited text in one step (a file beside it renamed over it): a reader never sees
    half of it, and an interrupted write leaves the old file. A symlinked config.toml is written through to its
    target, the link kept."""
    path = edit.path.resolve()
    mode = path.stat().st_mode & 0o7777
    handle = tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            handle.write(edit.text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, mode)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def shown_change(change: Change) -> str:
    """A change as `set` lists it: ``key: old → new``, a reward added or removed as ``rewards: + name (weight w)``
    and ``rewards: - name``."""
    if change.removed and isinstance(change.old, dict):
        return f"rewards: - {change.old.get('name')}"
    if change.key.startswith("rewards.") and isinstance(change.new, dict) and change.added:
        return _("rewards: + {name} (weight {weight})").format(name=change.new["name"],
                                                               weight=shown_value(change.new["weight"]))
    old, new = shown_value(change.old), shown_value(change.new)
    return f"{change.key}: {old} → {new}" if old != new else _("{key}: {value} (unchanged)").format(
        key=change.key, value=new)


def shown_value(value) -> str:
    """A value as the change list shows it: TOML (a long one cut short), "(not set)" for none."""
    if value is None:
        return _("(not set)")
    text = schema.toml_text(value)
    return text if len(text) <= 80 else text[:77] + "..."
