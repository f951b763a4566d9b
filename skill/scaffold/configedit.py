"""`grpo-skill set`: change keys of an existing project's config.toml in place, its comments and layout kept.

The items are parsed as `new --set` and `--param` parse theirs (settings.py), the edit is made with tomlkit (only the
lines of the keys given change; a key the file does not have goes after the last key of its table, in place of a
commented-out line of it where there is one, such as the template's ``# adapter = "outputs/sft/adapter"``), and the
verb writes the file only once the whole project, as edited, passes `grpo-skill check`.

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

    @property
    def changed(self) -> bool:
        return self.text != self.old_text


def _tomlkit():
    try:
        import tomlkit
    except ImportError:  # an environment installed before grpo-skill needed it
        raise UserError(_("tomlkit is not installed; pip install 'tomlkit>=0.12'")) from None
    return tomlkit


def prepare(project: str | Path, set_items=(), param_items=()) -> Edit:
    """The edit of ``project``'s config.toml (a folder or the file itself) that the items ask for, nothing written;
    a SettingError for an item that cannot work."""
    from ..core import plugins
    from ..core.project import config_path, read_config, refuse_what_is_no_config

    path = config_path(project)
    shown = shown_path(path)
    if not path.is_file():
        raise SettingError(_("{path}: no such config file; run this inside a project made by 'grpo-skill new', or "
                             "give --project DIR").format(path=shown))
    refuse_what_is_no_config(path, shown)
    sets = given_settings.parse_sets(set_items, option=SET_COMMAND)
    plugins.register_project(path.parent)  # its rewards.py's rewards may take a --param
    parsed = given_settings.parse_params(param_items, sets)
    old_text = read_config(path, shown)  # as it is: its line endings kept; not UTF-8 refused as `check` refuses it
    raw = schema.parse(old_text, shown)  # a file that is not TOML is named at its line, as `check` names it
    listed = raw.get("rewards") if isinstance(raw.get("rewards"), list) else []
    rewards = [entry.get("name") if isinstance(entry, dict) else None for entry in listed]
    for name in parsed.params:
        if name not in rewards:
            raise SettingError(_("--param {name}.*: {name!r} is not one of the project's rewards ({names}); a reward "
                                 "is added as a [[rewards]] table in config.toml").format(
                name=name, names=", ".join(map(str, rewards)) or _("none")))
    edit = Edit(path, old_text, old_text, notes=list(parsed.notes),
                given=tuple(f"{table}.{key}" for table, keys in parsed.tables.items() for key in keys))
    _raise_max_seq_length(raw, parsed, edit)
    tomlkit = _tomlkit()
    document = tomlkit.parse(old_text)
    texts = _value_texts(set_items)
    for table, keys in parsed.tables.items():
        for key, value in keys.items():
            old = raw.get(table, {}).get(key) if isinstance(raw.get(table), dict) else None
            item = _item(texts.get(f"{table}.{key}"), value)
            added = _set_key(document, table, key, item)
            edit.changes.append(Change(f"{table}.{key}", old, value, added))
    for names in _param_paths(param_items):
        value, old = parsed.params[names[0]], raw["rewards"][rewards.index(names[0])].get("params")
        for name in names[1:]:
            value = value[name]
            old = old.get(name) if isinstance(old, dict) else None
        added = _set_param(document["rewards"][rewards.index(names[0])], names[1:], value)
        edit.changes.append(Change(".".join(names), old, value, added))
    edit.text = tomlkit.dumps(document)
    return edit


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
    message = _at_file_lines(str(error), edit)
    failure = SettingError(_("{error} ({path} is unchanged)").format(error=message, path=shown_path(edit.path)))
    failure.exit_code = getattr(error, "exit_code", 1)
    return failure


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


def shown_value(value) -> str:
    """A value as the change list shows it: TOML (a long one cut short), "(not set)" for none."""
    if value is None:
        return _("(not set)")
    text = schema.toml_text(value)
    return text if len(text) <= 80 else text[:77] + "..."
