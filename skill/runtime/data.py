"""The project's prompts: loading the dataset and checking that prompts fit the model.

A local file reaches the rewards as it is written: datasets' own readers guess types (pyarrow reads "2024-03-05" in
a JSON file as a timestamp, pandas reads 007 in a CSV file as 7, and objects in a column get one another's keys),
so a gold answer would no longer equal the text or object the user wrote. Here JSON is parsed by ``json`` (a column
of objects or lists, or of mixed kinds, is a ``datasets.Json`` column), CSV cells stay text, Parquet keeps its own
types. train.py, evaluate.py, sft.py and the probe all load through ``load_file``, and train.py, evaluate.py and
the probe render the prompts through ``chat_dataset``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..core.i18n import _
from ..core.datafile import LOCAL_DATA_SUFFIXES, read_jsonl
from ..core.project import ConfigError, ProjectConfig
from ..core.schemamessages import suggest


def check_prompt_lengths(prompt_lengths: list[int], config: ProjectConfig) -> None:
    """TRL does not truncate prompts: the longest prompt plus a full completion must fit the model, and
    max_seq_length the model's positions (a built model's are known only now, as its config.json is)."""
    from ..core.project import check_against_model, check_positions, model_config_json, model_positions

    longest, limit = max(prompt_lengths), config.model["max_seq_length"]
    model_config = model_config_json(config, config.model_path() if config.builds_its_model() else None)
    positions = model_positions(config, model_config=model_config)
    if config.builds_its_model():
        check_positions(config, positions, lambda _config: longest)
        check_against_model(config, model_config)
    completion = config.grpo["max_completion_length"]
    problem = prompt_room_problem(longest, completion, limit, positions)
    no_setting_fits = positions is not None and longest >= positions  # the prompts alone fill the model
    if problem and config.by_set and not no_setting_fits:  # the fix is keys of the same command
        given = "model.max_seq_length" in config.source.overridden
        derived = "model.max_seq_length" in config.source.derived
        needed = longest + completion
        if positions is not None and needed > positions:  # the budget as far as it fits beside the prompts
            keys = {"grpo.max_completion_length": positions - longest}
            # and max_seq_length at the positions, unless it is there already and not raised by `set` (which would
            # raise it past them again for the lower budget)
            if limit != positions or derived:
                keys["model.max_seq_length"] = positions
            fix = _("give {settings} in this `grpo-skill set` command (the model reads at most {positions} "
                    "tokens)").format(settings=" ".join(f"{key}={value}" for key, value in keys.items()),
                                      positions=positions)
        elif given:
            fix = _("give model.max_seq_length={needed} instead of {limit} in this `grpo-skill set` "
                    "command").format(needed=needed, limit=limit)
        else:
            fix = _("add model.max_seq_length={needed} to this `grpo-skill set` command").format(needed=needed)
        problem = _("model.max_seq_length ({limit}) is below the longest prompt ({longest} tokens) + "
                    "grpo.max_completion_length ({completion}); {fix}, or shorten the prompts").format(
            limit=config.source.derived.get("model.max_seq_length", limit),  # a value `set` raised says so
            longest=longest, completion=completion, fix=fix)
    if problem:
        raise ConfigError(problem)


def prompt_room_problem(longest: int, completion: int, limit: int, positions: int | None = None) -> str | None:
    """What is wrong when a prompt of ``longest`` tokens and a full completion do not fit ``limit`` (train.py
    refuses such a run; `plan` too); its fix within the model's ``positions`` (max_position_embeddings) where
    they are known."""
    needed = longest + completion
    if needed <= limit:
        return None
    if positions is not None and longest >= positions:
        return _("the longest prompt ({longest} tokens) leaves no room for a completion in the {positions} tokens "
                 "the model reads (its max_position_embeddings); shorten the prompts").format(
            longest=longest, positions=positions)
    if positions is not None and needed > positions:  # max_seq_length cannot go that far: the budget is to lower
        fix = (_("lower max_completion_length to {most} and raise max_seq_length to {positions}") if limit < positions
               else _("lower max_completion_length to {most}")).format(most=positions - longest, positions=positions)
        return _("model.max_seq_length ({limit}) is below the longest prompt ({longest} tokens) + "
                 "grpo.max_completion_length ({completion}), and the model reads at most {positions} tokens (its "
                 "max_position_embeddings); {fix}, or shorten the prompts").format(
            limit=limit, longest=longest, completion=completion, positions=positions, fix=fix)
    return _("model.max_seq_length ({limit}) is below the longest prompt ({longest} tokens) + "
             "grpo.max_completion_length ({completion}); raise max_seq_length to {needed} "
             "or shorten the prompts").format(limit=limit, longest=longest, completion=completion,
                                              needed=needed)


# apply_chat_template's own arguments that chat_prompt passes: in chat_template_kwargs too they would clash
RENDER_ARGUMENTS = ("conversation", "tokenize", "add_generation_prompt")
# what transformers itself gives every chat template besides the messages and the special tokens
TEMPLATE_GLOBALS = ("messages", "tools", "documents", "add_generation_prompt", "raise_exception", "strftime_now")


def template_variables(template: str) -> set[str] | None:
    """The names a chat template (Jinja) reads from outside itself; None where it cannot be parsed here."""
    import jinja2
    from jinja2 import meta, nodes
    from jinja2.ext import Extension, loopcontrols

    class Generation(Extension):  # transformers' {% generation %} block (assistant masks)
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body, lineno=lineno)

    try:
        return set(meta.find_undeclared_variables(jinja2.Environment(extensions=[loopcontrols, Generation]).parse(
            template)))
    except jinja2.TemplateError:
        return None


def unread_chat_template_kwargs(config: ProjectConfig, tokenizer) -> list[str]:
    """``dataset.chat_template_kwargs`` go to the chat template as variables: one it never reads changes nothing (a
    typo such as enable_thinkin would leave thinking on without a word; a preset's enable_thinking with another
    model's template), so each is named, with the names it reads. A render argument of grpo-skill's is refused."""
    given = config.dataset.get("chat_template_kwargs") or {}
    template = getattr(tokenizer, "chat_template", None)
    if not given or not template:
        return []
    where = ("dataset", "chat_template_kwargs")
    for key in given:
        if key in RENDER_ARGUMENTS:
            raise config.error(where, _("{key} is set by grpo-skill when it renders each prompt; remove it").format(
                key=key))
    if "chat_template" in given:  # another template than the tokenizer's: its names are not known here
        return []
    templates = template.values() if isinstance(template, dict) else [template]  # named templates: any of them
    read: set[str] = set()
    for text in templates:
        names = template_variables(text)
        if names is None:
            return []  # a template this Jinja cannot parse: transformers says so when it renders
        read |= names
    settings = sorted(read - set(TEMPLATE_GLOBALS) - set(getattr(tokenizer, "special_tokens_map", {})))
    unread = []
    for key in given:
        if key not in read:
            close, names = suggest(key, settings), ", ".join(settings) or _("no such settings")
            reads = (_("did you mean {close!r}? It reads: {names}") if close else _("it reads: {names}")).format(
                close=close, names=names)
            unread.append(config.said(where, _("the model's chat template never reads {key!r}, so it changes "
                                               "nothing; {reads}").format(key=key, reads=reads)))
    return unread


def check_chat_template_kwargs(config: ProjectConfig, tokenizer) -> None:
    """The kwargs the template never reads, a "warning:" line each (the first process of a launch speaks)."""
    import os
    import sys

    if os.environ.get("RANK", "0") == "0":
        for problem in unread_chat_template_kwargs(config, tokenizer):
            print(_("warning: {problem}").format(problem=problem), file=sys.stderr)


def load_dataset(config: ProjectConfig):
    """The configured split of ``dataset.path``: a local file, or a hub dataset. Imports datasets: call it
    after unsloth."""
    import datasets

    data_file = config.dataset_file()
    if data_file:
        return load_file(data_file)
    return datasets.load_dataset(config.dataset["path"])[config.dataset.get("split", "train")]


def load_file(path: Path):
    """A local .jsonl, .json, .csv or .parquet file as a datasets.Dataset, every value as the file has it."""
    import datasets

    path = Path(path)
    if path.suffix == ".parquet":
        return datasets.load_dataset(LOCAL_DATA_SUFFIXES[path.suffix], data_files=str(path))["train"]
    if path.suffix == ".csv":  # every cell as text, an empty one "" (pandas would read 007 as 7, NA as missing)
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, strict=True)
            rows = [row for row in reader if any(row.values())]
            columns = reader.fieldnames or []
        return datasets.Dataset.from_list(rows, features=datasets.Features(
            {column: datasets.Value("string") for column in columns}))
    rows = json_rows(path)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    features = datasets.Features({column: _feature([row.get(column) for row in rows]) for column in columns})
    if any(isinstance(feature, _JsonText) for feature in features.values()):  # datasets without Json: JSON text
        rows = [{key: json.dumps(value, ensure_ascii=False) if isinstance(features[key], _JsonText) else value
                 for key, value in row.items()} for row in rows]
        features = datasets.Features({key: datasets.Value("string") if isinstance(feature, _JsonText) else feature
                                      for key, feature in features.items()})
    return datasets.Dataset.from_list([{column: row.get(column) for column in columns} for row in rows],
                                      features=features)


class _JsonText:
    """A column of objects for a datasets release without the Json feature: each value goes as its JSON text."""


def json_rows(path: Path) -> list[dict]:
    """The rows of a JSON Lines file, or of a JSON file holding a list of objects or a mapping of columns."""
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(loaded, dict):  # {"column": [values], ...}
        return [dict(zip(loaded, values)) for values in zip(*loaded.values())]
    return loaded


def _feature(values: list):
    """The column's type, from Python's values: a plain Value when they are all one scalar kind, else Json (objects,
    lists, or a mix: 5 and "five") so that each arrives as written."""
    import datasets

    kinds = {type(value) for value in values if value is not None}
    if kinds and not kinds & {dict, list} and (len(kinds) == 1 or kinds == {int, float}):
        kind = kinds.pop() if len(kinds) == 1 else float
        return datasets.Value({str: "string", bool: "bool", int: "int64", float: "float64"}[kind])
    if not kinds:
        return datasets.Value("null")
    return datasets.Json() if hasattr(datasets, "Json") else _JsonText()


def chat_prompt(config: ProjectConfig, tokenizer, question: str) -> str:
    """One prompt in the model's chat template, as GRPO sees it: ``dataset.system_prompt`` first when set, and
    ``dataset.chat_template_kwargs`` passed to the template (e.g. ``{enable_thinking = false}`` for Qwen3)."""
    return tokenizer.apply_chat_template(
        config.chat_messages(question), tokenize=False, add_generation_prompt=True,
        **(config.dataset.get("chat_template_kwargs") or {}),
    )


def chat_dataset(config: ProjectConfig, tokenizer, dataset):
    """``dataset`` as GRPOTrainer gets it: the prompt column rendered by ``chat_prompt`` as ``prompt``, every other
    column as it is (the rewards receive them)."""
    check_chat_template_kwargs(config, tokenizer)
    column = config.dataset["prompt_column"]
    if column not in dataset.column_names:  # a hub dataset: its columns are known only now
        raise ConfigError(_("dataset.prompt_column: no column {prompt_column!r} (columns: {columns})").format(
            prompt_column=column, columns=", ".join(dataset.column_names)))
    return dataset.map(lambda row: {"prompt": chat_prompt(config, tokenizer, row[column])},
                       remove_columns=[column] if column != "prompt" else None)
