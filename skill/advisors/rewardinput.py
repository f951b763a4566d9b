"""What `rewards try` scores: the rewards asked for (``NAME[:WEIGHT]``, ``--param``), and the samples (``--completion``
with ``--prompt`` and ``--column``, or a ``--file`` of JSON lines)."""

from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
    import tomli as tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UserError
from ..core.i18n import _


class TryError(UserError):
    """Bad input to `rewards try`: a reward spec, a --column or --param, the samples file."""


@dataclass
class Sample:
    completion: Any  # a string, or chat messages
    prompt: Any = ""
    columns: dict[str, Any] = field(default_factory=dict)
    completion_ids: list[int] | None = None


def literal(text: str):
    """A command-line value as TOML reads it (42, 0.5, true, "x", [1, 2]), else the text itself."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def parse_specs(specs) -> list[tuple[str, float]]:
    """``NAME[:WEIGHT]`` -> (name, weight), as config.toml bounds a weight."""
    from ..core.schema import parse_reward_spec

    parsed = []
    for spec in specs:
        try:
            parsed.append(parse_reward_spec(spec))
        except UserError as error:
            raise TryError(str(error)) from None
    return parsed


def parse_columns(items) -> dict[str, str]:
    """``KEY=VALUE`` -> {KEY: VALUE}: the value is text, as typed ("1,000", "1/2"); --file gives other types."""
    columns = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TryError(_("--column {item!r}: write KEY=VALUE, e.g. --column answer=42").format(item=item))
        if key in columns:
            raise TryError(_("--column {item!r}: {key} is given twice; give each column once").format(
                item=item, key=key))
        columns[key] = value
    return columns


def parse_params(items, names) -> dict[str, dict[str, Any]]:
    """``NAME.KEY=VALUE`` (``NAME.KEY.SUB=VALUE`` for a table such as llm_judge's judge) per reward name."""
    params: dict[str, dict[str, Any]] = {name: {} for name in names}
    for item in items:
        path, sep, value = item.partition("=")
        keys = path.split(".")
        if not sep or len(keys) < 2 or not all(keys):
            raise TryError(_("--param {item!r}: write REWARD.KEY=VALUE, e.g. --param length.too_short=3").format(
                item=item))
        if keys[0] not in params:
            raise TryError(_("--param {item!r}: {name!r} is not one of the rewards tried ({names})").format(
                item=item, name=keys[0], names=", ".join(names)))
        table = params[keys[0]]
        for key in keys[1:-1]:
            table = table.setdefault(key, {})
            if not isinstance(table, dict):
                raise TryError(_("--param {item!r}: {key!r} is not a table").format(item=item, key=key))
        table[keys[-1]] = literal(value)
    return params


def load_samples(path: str | Path) -> list[Sample]:
    """A JSONL file: one object per line with "completion" (text or chat messages), optionally "prompt" and
    "completion_ids"; every other key is a dataset column (e.g. "answer")."""
    from ..core.datafile import jsonl_lines

    path = Path(path)
    samples = []
    try:
        for number, row in jsonl_lines(path, str(path)):
            if not isinstance(row, dict) or "completion" not in row:
                raise TryError(_("{path}:{line}: each line is an object with a \"completion\" key, e.g. "
                                 "{{\"completion\": \"</think>42\", \"answer\": \"42\"}}").format(
                    path=path, line=number))
            completion = row.pop("completion")
            prompt = row.pop("prompt", "")
            ids = row.pop("completion_ids", None)
            samples.append(Sample(completion, prompt, row, ids))
    except OSError as error:
        raise TryError(_("cannot read {path}: {error}").format(path=path, error=error.strerror or error)) from None
    except UnicodeDecodeError as error:
        raise TryError(_("{path}: not UTF-8 text (byte {position}); give a JSON-lines file saved as UTF-8").format(
            path=path, position=error.start)) from None
    if not samples:
        raise TryError(_("{path} holds no samples; write one JSON object per line").format(path=path))
    return samples


def gather_samples(completions, samples_file, columns, prompt: str = "") -> list[Sample]:
    """The samples of `rewards try`: --completion texts (with --prompt), or a --file; --column adds to each."""
    if completions and samples_file:
        raise TryError(_("--completion and --file: give the completions one way, not both"))
    if not completions and not samples_file:
        raise TryError(_("give the completions with --completion TEXT (repeat it) or with --file samples.jsonl"))
    given = parse_columns(columns)
    if not samples_file:
        return [Sample(text, prompt, dict(given)) for text in completions]
    samples = load_samples(samples_file)
    for number, sample in enumerate(samples, 1):
        clash = next((key for key in given if key in sample.columns), None)
        if clash is not None:  # which one the rewards should read cannot be guessed
            raise TryError(_("--column {key}: sample {number} of {path} has its own {key!r}; drop --column {key}, or "
                             "the column from the file").format(key=clash, number=number, path=samples_file))
        sample.columns = {**given, **sample.columns}
    return samples
