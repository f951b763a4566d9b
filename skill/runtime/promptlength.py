"""The longest prompt of a dataset in tokens, as GRPO sees it: the system prompt and the chat template included.

With the model's tokenizer when it is on this machine (a local folder, the tiny preset's build, or the Hugging Face
cache), else a guess from characters that says it is one. Only the longest prompts by characters are tokenized.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.datafile import jsonl_lines
from ..core.errors import UserError, home_expanded
from ..core.i18n import _

CHARS_PER_TOKEN = 4.0  # English text with Qwen3's tokenizer, roughly
CHAT_TEMPLATE_TOKENS = 12  # <|im_start|>user ... <|im_end|> <|im_start|>assistant (and <think>)
SYSTEM_TURN_TOKENS = 5  # <|im_start|>system ... <|im_end|>
WIDE = re.compile("[\u2e80-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff00-\uffef]")  # CJK: about a token each
MEASURED_ROWS = 32  # the longest prompts by characters; the longest in tokens is among them
FALLBACK_CHARS = 160  # a prompt file that cannot be read here (parquet without pyarrow, a hub dataset)


@dataclass
class PromptLength:
    tokens: int
    how: str  # said in `plan`'s output
    # counted with the model's tokenizer: the longest prompt has at least these tokens (only the longest by characters
    # are counted), so a run they do not fit is refused; else a guess
    measured: bool = False


def prompts(data_file: Path | None, column: str) -> list[str] | None:
    """The prompt column of a local .jsonl/.json/.csv/.parquet file as text; None when it cannot be read here."""
    values = column_values(data_file, column)
    if values is None:
        return None
    return [value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) for value in values]


def column_values(data_file: Path | None, column: str) -> list | None:
    """A column of a local .jsonl/.json/.csv/.parquet file as its values are (None for a null, "" for a row without
    it); None when the file cannot be read here."""
    if data_file is None or not data_file.is_file():
        return None
    suffix = data_file.suffix
    try:
        if suffix == ".jsonl":
            rows = [row for _number, row in jsonl_lines(data_file, str(data_file))]
        elif suffix == ".json":
            rows = json.loads(data_file.read_text(encoding="utf-8"))
            if isinstance(rows, dict):
                rows = [dict(zip(rows, values)) for values in zip(*rows.values())]
        elif suffix == ".csv":
            with data_file.open(encoding="utf-8", newline="") as handle:
                rows = list(csv.DictReader(handle))
        elif suffix == ".parquet":
            import pyarrow.parquet as parquet

            return parquet.read_table(data_file, columns=[column]).column(column).to_pylist()
        else:
            return None
    except (UserError, ValueError, OSError, ImportError, KeyError):  # a bad line is for `check` to name
        return None
    return [row.get(column, "") for row in rows if isinstance(row, dict)]


def guessed_tokens(text: str) -> int:
    wide = len(WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / CHARS_PER_TOKEN)


def local_tokenizer(source: str | None):
    """A tokenizer for ``source`` (a folder, or a hub id in the cache) without any download; None if there is none."""
    if not source:
        return None
    folder = home_expanded(source)
    try:
        if not folder.is_dir():  # a hub id: only from the cache, asked before transformers is imported (seconds)
            import huggingface_hub

            if not isinstance(huggingface_hub.try_to_load_from_cache(source, "tokenizer_config.json"), str):
                return None
        from transformers import AutoTokenizer

        if folder.is_dir():
            return AutoTokenizer.from_pretrained(str(folder))
        return AutoTokenizer.from_pretrained(source, local_files_only=True)
    except Exception:  # a folder without a tokenizer, a cache entry half there: fall back to the guess
        return None


def longest_by_characters(texts: list[str]) -> list[str]:
    """The prompts to count in tokens for the longest: the MEASURED_ROWS longest in characters (a whole dataset
    through a chat template and a tokenizer takes minutes and gigabytes for a large one)."""
    return sorted(texts, key=len, reverse=True)[:MEASURED_ROWS]


def longest(data_file: Path | None, column: str, system_prompt: str = "", chat_template_kwargs: dict | None = None,
            tokenizer_source: str | None = None, shown_model: str | None = None) -> PromptLength:
    """The longest prompt of ``data_file`` in tokens, the system prompt and the chat template counted."""
    texts = prompts(data_file, column)
    candidates = longest_by_characters(texts) if texts else None
    tokenizer = local_tokenizer(tokenizer_source) if candidates else None
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        system = [{"role": "system", "content": system_prompt}] if system_prompt else []

        def length(text: str) -> int:
            rendered = tokenizer.apply_chat_template(system + [{"role": "user", "content": text}], tokenize=False,
                                                     add_generation_prompt=True, **(chat_template_kwargs or {}))
            return len(tokenizer(rendered, add_special_tokens=False).input_ids)

        try:
            tokens = max(length(text) for text in candidates)
            return PromptLength(tokens, _("measured with {model}'s tokenizer and chat template{system}").format(
                model=shown_model or tokenizer_source,
                system=_(", system prompt included") if system_prompt else ""), measured=True)
        except Exception:  # a template this prompt cannot go through: the guess below
            pass
    chars = max((len(text) for text in candidates), default=0) if candidates else FALLBACK_CHARS
    user = max((guessed_tokens(text) for text in candidates), default=0) if candidates else \
        math.ceil(FALLBACK_CHARS / CHARS_PER_TOKEN)
    system_tokens = guessed_tokens(system_prompt) + SYSTEM_TURN_TOKENS if system_prompt else 0
    why = (_("no tokenizer for {model} on this machine").format(model=shown_model or tokenizer_source)
           if tokenizer_source else _("no tokenizer"))
    if not candidates:
        why = _("the prompts cannot be read here ({chars} characters assumed)").format(chars=chars)
    return PromptLength(user + system_tokens + CHAT_TEMPLATE_TOKENS, _(
        "guessed: ~4 characters a token (1 per CJK character) + {template} for the chat template{system}; {why}"
    ).format(template=CHAT_TEMPLATE_TOKENS, system=_(" + the system prompt") if system_prompt else "", why=why))
