"""A local data file read through once: its rows, its columns, and the first bad row named by its line.

JSON lines, CSV, JSON and Parquet, as train.py reads them (``datasets``); ``jsonl_lines`` is the one JSON-lines reader
of the package (`rewards try --file` reads its samples with it).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .i18n import _
from .schema import ConfigError

LOCAL_DATA_SUFFIXES = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
# Suffixes that name a file (not a hub id) that train.py cannot read.
OTHER_FILE_SUFFIXES = {".txt", ".tsv", ".xlsx", ".xls", ".arrow", ".zip", ".gz", ".tar", ".yaml", ".yml", ".md",
                       ".pkl", ".pt", ".xml", ".html"}


@dataclass
class DatasetInfo:
    local: bool
    rows: int | None = None
    columns: list[str] = field(default_factory=list)
    # the share of the prompts written in Chinese (Parquet: of its first row group), read for scan(..., chinese=True);
    # None where none were read
    chinese_share: float | None = None


# Chinese characters, and the kana that tell Japanese written with them
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")


def is_chinese(text: str) -> bool:
    """Whether a prompt is written in Chinese: it has Chinese characters and no kana."""
    return bool(_HAN.search(text)) and not _KANA.search(text)


def _share(chinese: int, rows: int) -> float | None:
    return chinese / rows if rows else None



def jsonl_lines(path: Path, shown: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON-lines file; a line that is no JSON is a ConfigError
    naming it. Reading may raise OSError or UnicodeDecodeError, for the caller to say in its words."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as error:
                raise ConfigError(_("{file}:{line}: not valid JSON ({reason}, column {column}); fix or remove "
                                    "that line").format(file=shown, line=number, reason=error.msg,
                                                        column=error.colno)) from None


def read_jsonl(path: str | Path) -> list[Any]:
    """Every value of a JSON-lines file (``jsonl_lines``), for files this package wrote."""
    path = Path(path)
    return [row for _number, row in jsonl_lines(path, str(path))]


def write_jsonl(rows: list[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


class MissingColumn(ConfigError):
    """A column the data file lacks; ``parts``: missing_column's arguments, to say it again as given."""

    def __init__(self, message: str, parts: tuple):
        super().__init__(message)
        self.parts = parts


def missing_column(file: str, what: str, column: str, columns, given: bool = False) -> ConfigError:
    """``given``: ``what`` (a "table.key") was given on the command line, and is named so, as other keys are."""
    key = _("{key} (given on the command line)").format(key=what) if given else what
    return MissingColumn(_("{what}: column {column!r} is not in {file} (it has: {columns}); fix the name or the "
                           "file").format(what=key, column=column, file=Path(file).name,
                                          columns=", ".join(sorted(columns)) or _("nothing")),
                         (file, what, column, columns))


def _check_row(file: str, line: int, row: dict, wanted, first: bool) -> None:
    for what, column in wanted:
        if column not in row:
            if first:
                raise missing_column(file, what, column, row)
            raise ConfigError(_("{file}:{line}: this row has no {column!r} ({what}); every row needs it").format(
                file=file, line=line, column=column, what=what))
    prompt_column = wanted[0][1]
    if not isinstance(row[prompt_column], str):
        raise ConfigError(_("{file}:{line}: {column!r} must be text, not {value}").format(
            file=file, line=line, column=prompt_column, value=json.dumps(row[prompt_column])[:40]))
    if not row[prompt_column].strip():
        raise ConfigError(_("{file}:{line}: {column!r} is empty; give every row a prompt, or remove the row").format(
            file=file, line=line, column=prompt_column))


def scan(data_file: Path, shown: str, wanted, chinese: bool = False, given=()) -> DatasetInfo:
    """Rows and columns of a local data file; every row has the ``wanted`` (what needs it, column) columns and a
    prompt as text, else a ConfigError naming the first bad row by its line. ``chinese``: also the share of its
    prompts written in Chinese. ``given``: the "table.key"s given on the command line; a missing column one of
    them names is said to be given there."""
    try:
        return _scan(data_file, shown, wanted, chinese)
    except MissingColumn as error:
        if error.parts[1] not in given:
            raise
        raise missing_column(*error.parts, given=True) from None


def _scan(data_file: Path, shown: str, wanted, chinese: bool) -> DatasetInfo:
    suffix = data_file.suffix
    prompt_column = wanted[0][1]
    if suffix == ".jsonl":
        rows, columns, chinese_rows = 0, [], 0
        for number, row in jsonl_lines(data_file, shown):
            if not isinstance(row, dict):
                raise ConfigError(_("{file}:{line}: each line must be one JSON object, like "
                                    "{{\"prompt\": \"...\"}}").format(file=shown, line=number))
            _check_row(shown, number, row, wanted, first=rows == 0)
            columns = columns or list(row)
            rows += 1
            if chinese and is_chinese(row[prompt_column]):
                chinese_rows += 1
        return DatasetInfo(True, rows, columns, _share(chinese_rows, rows) if chinese else None)
    if suffix == ".csv":
        with data_file.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, strict=True)
            try:
                header = next(reader, None)
                if header is None:
                    return DatasetInfo(True, 0, [])
                rows, chinese_rows = 0, 0
                for values in reader:
                    if not any(values):
                        continue
                    if len(values) != len(header):
                        raise ConfigError(_("{file}:{line}: {count} fields where the header has {expected}; quote "
                                            "fields that hold commas").format(
                            file=shown, line=reader.line_num, count=len(values), expected=len(header)))
                    row = dict(zip(header, values))
                    _check_row(shown, reader.line_num, row, wanted, first=rows == 0)
                    rows += 1
                    if chinese and is_chinese(row[prompt_column]):
                        chinese_rows += 1
            except csv.Error as error:
                raise ConfigError(_("{file}:{line}: not valid CSV ({reason})").format(
                    file=shown, line=reader.line_num, reason=error)) from None
        if rows == 0:
            for what, column in wanted:
                if column not in header:
                    raise missing_column(shown, what, column, header)
        return DatasetInfo(True, rows, header, _share(chinese_rows, rows) if chinese else None)
    if suffix == ".json":
        try:
            loaded = json.loads(data_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ConfigError(_("{file}:{line}: not valid JSON ({reason}, column {column})").format(
                file=shown, line=error.lineno, reason=error.msg, column=error.colno)) from None
        if isinstance(loaded, dict) and loaded and all(isinstance(v, list) for v in loaded.values()):
            loaded = [dict(zip(loaded, values)) for values in zip(*loaded.values())]  # columns -> rows
        if not isinstance(loaded, list) or not all(isinstance(row, dict) for row in loaded):
            raise ConfigError(_("{file}: must hold a list of objects, like [{{\"prompt\": \"...\"}}]").format(
                file=shown))
        for number, row in enumerate(loaded, start=1):
            _check_row(f"{shown} row", number, row, wanted, first=number == 1)
        share = _share(sum(is_chinese(row[prompt_column]) for row in loaded), len(loaded)) if chinese else None
        return DatasetInfo(True, len(loaded), list(loaded[0]) if loaded else [], share)
    return _scan_parquet(data_file, shown, wanted, chinese)


def _scan_parquet(data_file: Path, shown: str, wanted, chinese: bool) -> DatasetInfo:
    try:
        import pyarrow.parquet as parquet
    except ImportError:  # datasets brings pyarrow; without it train.py cannot read the file either
        return DatasetInfo(True)
    try:
        opened = parquet.ParquetFile(data_file)
        metadata = opened.metadata
    except Exception as error:  # pyarrow raises its own ArrowInvalid for a file that is not Parquet
        raise ConfigError(_("{file}: not a Parquet file ({reason})").format(file=shown, reason=error)) from None
    columns = list(metadata.schema.names)
    for what, column in wanted:
        if column not in columns:
            raise missing_column(shown, what, column, columns)
    share = _parquet_chinese_share(opened, wanted[0][1]) if chinese else None
    return DatasetInfo(True, metadata.num_rows, columns, share)


def _parquet_chinese_share(opened, prompt_column: str) -> float | None:
    """The share of Chinese prompts in a Parquet file's first row group (a file may be larger than memory); None
    where it cannot be read here (train.py then says why)."""
    if opened.metadata.num_row_groups == 0:
        return None
    try:
        prompts = opened.read_row_group(0, columns=[prompt_column]).column(0).to_pylist()
    except Exception:  # a column pyarrow cannot read: train.py reads it through datasets, and says
        return None
    texts = [prompt for prompt in prompts if isinstance(prompt, str)]
    return _share(sum(is_chinese(text) for text in texts), len(texts))
