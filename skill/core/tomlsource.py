"""config.toml as text: where a key is written (tomllib gives no positions), so that a message names the file and
line; and a value written back as TOML, in the file or in a message."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError
from .i18n import _


class ConfigError(UserError):
    """A config that cannot run; the message names the file, line, key and the fix."""



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



@dataclass
class Source:
    """Where a config came from: for messages that name the file, line, table and key."""

    path: Path
    text: str = ""
    overridden: set[str] = field(default_factory=set)  # dotted keys set on the command line
    # the text is what `grpo-skill set` would write: a fix is a key to set, not a flag of train.py's
    by_set: bool = False
    # keys `grpo-skill set` (or `new`) changed on its own, not given ("model.max_seq_length" -> how, as messages
    # name it)
    derived: dict[str, str] = field(default_factory=dict)
    # the text is what `grpo-skill new` (or `plan --preset --set`) rendered: a fix is a --set of that command
    by_new: bool = False
    # the command that reads it takes --model PATH (new, train.py, evaluate.py, probe): a fix may name the flag
    model_flag: bool = False

    def error(self, loc: tuple, message: str) -> ConfigError:
        return ConfigError(self.said(loc, message))

    def said(self, loc: tuple, message: str) -> str:
        """``message`` about the key at ``loc``, after its file and line (or "given on the command line")."""
        where, key = dotted(loc), root_key(loc)
        if key in self.overridden or key in self.derived:
            if message.startswith("= "):
                value, message = message[2:].split(": ", 1)
                where = f"{where} = {value}"
            if key in self.derived:  # not the file's value, nor one the user typed
                return _("{where} ({how}): {message}").format(where=where, how=self.derived[key], message=message)
            return _("{where} (given on the command line): {message}").format(where=where, message=message)
        line = locate(self.text, loc)
        prefix = f"{self.path}:{line}" if line else str(self.path)
        return f"{prefix}: {where}{' ' if message.startswith('= ') else ': '}{message}"


def root_key(loc: tuple) -> str:
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
