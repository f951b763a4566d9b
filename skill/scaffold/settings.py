"""Settings given on the command line (`new` and `plan`): ``--set SECTION.KEY=VALUE``, ``--param REWARD.PARAM=VALUE``
and ``--answer-column COL``, parsed as TOML values and checked against config.toml's schema before anything is
written.

A value is read as TOML (``64``, ``1e-5``, ``true``, ``"text"``, ``[1, 2]``, ``{ a = 1 }``); only where the key takes a
string may it be written bare (``--set grpo.optim=adamw_torch``), and that is said in a note.
"""

from __future__ import annotations

from ..core.schema import tomllib  # tomli on Python 3.10
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from ..core import schema, schemamessages
from ..core.errors import UserError, home_expanded
from ..core.i18n import _

# Keys that have an option of their own; --set would give two ways to say one thing.
OWN_OPTIONS = {"model.preset": "--preset", "dataset.prompt_column": "--prompt-column"}
# The params through which a reward reads the dataset's gold answer (--answer-column sets them all).
GOLD_PARAMS = ("answer_column",)
# The reward `new` adds to a preset's defaults when the dataset has a gold column.
CORRECTNESS_REWARD = ("accuracy", 1.0)
DEFAULT_GOLD_COLUMN = "answer"
# The template's sample prompts: the dataset of a project made without --dataset.
SAMPLE_PROMPTS = "data/prompts.jsonl"
# Where the template keeps them, and sft.py's worked examples, in each language (data/*.jsonl.jinja include one).
SAMPLES = "_i18n/data"
# Params that fit a reward to Chinese text, which the defaults (the seed's) do not read: a Chinese answer has no
# spaces, so length counts it as one word, and it ends with 。, so format finds no end. `new` writes them for a
# Chinese project (--lang zh-CN, or a dataset whose prompts are mostly Chinese) unless --param gives them.
CHINESE_PARAMS = {"length": {"count": "cjk"}, "format": {"end_marks": ".。！？!?"}}
# The language reward's target: Chinese where the prompts are (or, where they cannot be read here, where the project
# is): a language that is no superset of English, so --lang zh-CN alone does not choose it over English prompts.
CHINESE_TARGET = {"language": {"language": "zh"}}


def gold_columns(rewards, param: str) -> dict[str, list[str]]:
    """column -> the rewards of ``rewards`` ((name, params) pairs) that read their gold answers (``param``, e.g.
    answer_column) from it, their defaults counted; a reward the registry lacks is left for `check` to name."""
    from ..core import plugins
    from ..core.registry import RegistryError

    readers: dict[str, list[str]] = {}
    for name, params in rewards:
        try:
            declared = plugins.get_reward(name).params
        except RegistryError:
            continue
        if param in declared:
            readers.setdefault(str(params.get(param, declared[param])), []).append(name)
    return readers


class SettingError(UserError):
    """A --set, --param or --answer-column that cannot work; nothing has been written."""


@dataclass
class CliSettings:
    """What --set and --param said: {"grpo": {"max_completion_length": 64}, ...} and {"cosine_length": {...}}."""

    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # values taken as bare text
    # model.max_seq_length as `new` raised it to fit the grpo.max_completion_length given (_room_for_the_prompt)
    raised_max_seq_length: int | None = None
    # the tokens the preset leaves the prompts, for advice where they cannot be counted (apply_to_answers)
    prompt_room: int | None = None

    def dotted(self) -> dict[str, Any]:
        """{"grpo.max_completion_length": 64, ...}: the form project.load takes as overrides."""
        return {f"{table}.{key}": value for table, keys in self.tables.items() for key, value in keys.items()}


def _accepts_text(annotation) -> bool:
    """Whether a schema annotation takes a string (str, a Literal of strings, an optional or union with one)."""
    if annotation is str:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return any(isinstance(arg, str) for arg in args)
    return any(_accepts_text(arg) for arg in args) if origin is not None and origin not in (list, dict) else False


def _toml(text: str):
    return tomllib.loads(f"v = {text}")["v"]


def parse_value(option: str, item: str, text: str, takes_text: bool, notes: list[str]):
    """``text`` as a TOML value; bare text only where the key takes a string (and then a note says so)."""
    try:
        return _toml(text)
    except tomllib.TOMLDecodeError:
        if not takes_text:
            raise SettingError(_("{option} {item!r}: {value!r} is not a TOML value; write a number, true/false, "
                                 "\"text\" in quotes or [a, list]").format(option=option, item=item, value=text)
                               ) from None
        notes.append(_("{option} {item!r}: taken as the text {value} (not a TOML value)").format(
            option=option, item=item, value=schema.toml_value(text)))
        return text


# How `grpo-skill set` names its KEY=VALUE arguments in a message (`new` and `plan` name their --set option).
SET_COMMAND = "grpo-skill set"


def parse_sets(items, option: str = "--set") -> CliSettings:
    """``--set SECTION.KEY=VALUE`` items, each key checked against the schema's tables and keys. ``option``: how a
    message names them; SET_COMMAND's items (an existing project's) may also set the keys `new` has options for."""
    found = CliSettings()
    keys = schema.table_keys()
    given: dict[str, str] = {}  # TABLE.KEY -> its item
    for item in items:
        dotted, sep, text = item.partition("=")
        table, dot, key = dotted.strip().partition(".")
        if option == SET_COMMAND and re.match(r"rewards\s*(\[|\.|$)", dotted.strip()):
            raise _a_reward_setting(item, dotted.strip(), text.strip())
        if not sep or not dot or not key or "." in key:
            raise SettingError(_("{option} {item!r}: write SECTION.KEY=VALUE, e.g. {option} "
                                 "grpo.max_completion_length=1024").format(option=option, item=item))
        if table == "rewards":
            raise SettingError(_("--set {item!r}: rewards are chosen with --reward NAME:WEIGHT and their params with "
                                 "--param NAME.PARAM=VALUE").format(item=item))
        if f"{table}.{key}" in OWN_OPTIONS and option != SET_COMMAND:
            raise SettingError(_("--set {item!r}: use {option} for it").format(
                item=item, option=OWN_OPTIONS[f"{table}.{key}"]))
        if table not in keys or key not in keys[table]:
            loc = (table,) if table not in keys else (table, key)
            raise SettingError(f"{option} {item!r}: " + schemamessages.unknown_key_message(loc))
        if f"{table}.{key}" in given:
            raise _given_twice(option, item, f"{table}.{key}", given[f"{table}.{key}"])
        given[f"{table}.{key}"] = item
        annotation = schemamessages.field_at((table, key))[1]
        value = parse_value(option, item, text.strip(), _accepts_text(annotation), found.notes)
        found.tables.setdefault(table, {})[key] = value
    return found


def _a_reward_setting(item: str, dotted: str, text: str) -> SettingError:
    """`grpo-skill set rewards...=VALUE` (``rewards[0].weight=2``, ``rewards.weight=2``): the [[rewards]] tables
    are changed with --reward NAME:WEIGHT and --param NAME.PARAM=VALUE; where the item names the reward
    (``rewards.thinking.weight=2``), the option to give."""
    names = [name.strip() for name in dotted.split(".")]
    reward, rest = (names[1], names[2:]) if len(names) >= 3 else (None, [])
    fix = None
    if reward is not None and re.fullmatch(r"[A-Za-z_][\w-]*", reward) and all(rest) and text:
        params = rest[1:] if rest[0] == "params" else rest
        if rest == ["weight"]:
            fix = f"--reward {reward}:{text}"
        elif params and params[0] not in ("name", "weight", "params"):
            fix = f"--param {'.'.join([reward, *params])}={text}"
    if fix:
        return SettingError(_("{option} {item!r}: give {fix} (a reward's weight is set with --reward NAME:WEIGHT, "
                              "its params with --param NAME.PARAM=VALUE)").format(
            option=SET_COMMAND, item=item, fix=fix))
    return SettingError(_("{option} {item!r}: a reward's weight is set with --reward NAME:WEIGHT (e.g. --reward "
                          "thinking:2), its params with --param NAME.PARAM=VALUE").format(
        option=SET_COMMAND, item=item))


def _given_twice(option: str, item: str, key: str, other: str) -> SettingError:
    """A key given twice: the last would win silently."""
    return SettingError(_("{option} {item!r}: {key} is given twice (also {option} {other!r}); give it once").format(
        option=option, item=item, key=key, other=other))


def parse_params(items, settings: CliSettings) -> CliSettings:
    """``--param REWARD.PARAM=VALUE`` items (``REWARD.TABLE.KEY=VALUE`` inside a table param)."""
    from ..core import plugins
    from ..core.registry import RegistryError

    given: dict[tuple[str, ...], str] = {}  # REWARD.PARAM(.KEY...) -> its item
    for item in items:
        path, sep, text = item.partition("=")
        names = path.strip().split(".")
        if not sep or len(names) < 2 or not all(names):
            raise SettingError(_("--param {item!r}: write REWARD.PARAM=VALUE, e.g. --param cosine_length.max_len=300"
                                 ).format(item=item))
        # the same param, or a table param and a key inside it: one would replace the other
        other = next((earlier for path_given, earlier in given.items()
                      if path_given[:len(names)] == tuple(names)[:len(path_given)]), None)
        if other is not None:
            raise _given_twice("--param", item, ".".join(names), other)
        given[tuple(names)] = item
        try:
            declared = plugins.get_reward(names[0]).params
        except RegistryError as error:
            raise SettingError(f"--param {item!r}: {error}") from None
        if names[1] not in declared:
            close = schemamessages.suggest(names[1], declared)
            raise SettingError(_("--param {item!r}: reward {name!r} has no param {key!r}; {hint}it takes: {params}"
                                 ).format(item=item, name=names[0], key=names[1],
                                          hint=_("did you mean `{suggestion}`? ").format(suggestion=close)
                                          if close else "", params=", ".join(sorted(declared)) or _("none")))
        default = declared[names[1]]
        takes_text = len(names) > 2 or isinstance(default, str)
        value = parse_value("--param", item, text.strip(), takes_text, settings.notes)
        table = settings.params.setdefault(names[0], {})
        for key in names[1:-1]:
            table = table.setdefault(key, {})
            if not isinstance(table, dict):
                raise SettingError(_("--param {item!r}: {key!r} is not a table").format(item=item, key=key))
        table[names[-1]] = value
        if len(names) == 2:
            _check_param_kind(item, names[0], names[1], value, default)
    return settings


def _check_param_kind(item: str, reward: str, key: str, value, default) -> None:
    from ..core.params import fits_kind, param_kind

    expected = param_kind(default)
    if expected and not fits_kind(value, expected):
        raise SettingError(_("--param {item!r}: {key} of reward {name!r} must be {expected}, like its default "
                             "{default}").format(item=item, key=key, name=reward, expected=_(expected[1]),
                                                 default=schema.toml_value(default)))


def gold_rewards(rewards: list[dict]) -> list[str]:
    """The chosen rewards that read a gold answer from a dataset column."""
    from ..core import plugins

    return [reward["name"] for reward in rewards
            if any(param in plugins.get_reward(reward["name"]).params for param in GOLD_PARAMS)]


def wire_rewards(rewards: list[dict], settings: CliSettings, answer_column: str | None) -> None:
    """Give each reward its --param values and, for a gold-answer reward, the --answer-column; refuse a --param of
    a reward that is not chosen and an --answer-column that no reward reads."""
    from ..core import plugins

    chosen = [reward["name"] for reward in rewards]
    for name in settings.params:
        if name not in chosen:
            raise SettingError(_("--param {name}.*: {name!r} is not one of the project's rewards ({names}); add "
                                 "--reward {name}").format(name=name, names=", ".join(chosen)))
    for reward in rewards:
        params = dict(reward.get("params") or {})
        declared = plugins.get_reward(reward["name"]).params
        if answer_column is not None:
            for param in GOLD_PARAMS:
                if param in declared and param not in settings.params.get(reward["name"], {}):
                    params[param] = answer_column
        params.update(settings.params.get(reward["name"], {}))
        if params:
            reward["params"] = params
    if answer_column is not None and not gold_rewards(rewards):
        raise SettingError(_("--answer-column {column}: none of the rewards ({names}) reads a gold answer; add one, "
                             "e.g. --reward accuracy").format(column=answer_column, names=", ".join(chosen)))


def _model_accepts(key: str, value) -> bool:
    """Whether config.toml's [model] takes ``value`` for ``key`` (copier's own check of it would end in a
    traceback)."""
    from pydantic import ValidationError

    from ..core.tables import ModelTable

    try:  # the one field, with its constraints, as the config check takes it
        ModelTable.__pydantic_validator__.validate_assignment(ModelTable.model_construct(), key, value)
    except ValidationError:
        return False
    return True


def apply_to_answers(data: dict, settings: CliSettings, *, model_given: bool, dataset_given: bool,
                     notes: list[str]) -> None:
    """Merge --set values into the answers copier renders, where config.toml writes each key."""
    extra = data.setdefault("settings", {})
    prompt_room = data["max_seq_length"] - data["grpo"].get("max_completion_length", 0)
    settings.prompt_room = prompt_room if prompt_room > 0 else None
    for table, keys in settings.tables.items():
        for key, value in keys.items():
            if table == "model" and key == "name":
                if model_given:
                    raise SettingError(_("--set model.name and --model: give the model once"))
                local = home_expanded(str(value))
                data["model_name"] = str(local.resolve()) if local.exists() else value
            elif table == "model" and key in ("backend", "max_seq_length", "load_in_4bit"):
                if _model_accepts(key, value):  # else the preset's stays, and the config check names the given value
                    data[key] = value
            elif table == "dataset" and key == "path":
                if dataset_given:
                    raise SettingError(_("--set dataset.path and --dataset: give the dataset once"))
                data["dataset_path"] = value
            elif table == "dataset" and key == "chat_template_kwargs":
                data["chat_template_kwargs"] = value
            elif table in ("lora", "grpo"):
                data[table] = {**data[table], key: value}
            else:  # keys the template writes literally (model.compile_decoding, dataset.system_prompt, [sft])
                extra.setdefault(table, {})[key] = value
    _room_for_the_prompt(data, settings, prompt_room, notes)
    _epochs_over_default_steps(data, settings, notes)


def _epochs_over_default_steps(data: dict, settings: CliSettings, notes: list[str]) -> None:
    """num_train_epochs given without max_steps: the default max_steps (the preset's in [grpo], the template's in
    [sft]) left out, else it would decide the run's length (transformers ignores the epochs beside it, and the config
    check refuses both), and said."""
    given = settings.tables.get("grpo", {})
    if "num_train_epochs" in given and "max_steps" not in given and "max_steps" in data["grpo"]:
        steps = data["grpo"]["max_steps"]
        data["grpo"] = {key: value for key, value in data["grpo"].items() if key != "max_steps"}
        notes.append(_("grpo.max_steps ({steps}, the preset's) left out: grpo.num_train_epochs decides the run's "
                       "length").format(steps=steps))
    given = settings.tables.get("sft", {})
    if "num_train_epochs" in given and "max_steps" not in given:  # config.toml.jinja leaves its own out
        notes.append(_("sft.max_steps (the template's) left out: sft.num_train_epochs decides sft.py's length"))


def raised_max_seq_length(settings: CliSettings, max_seq_length, prompt_room,
                          positions: Callable[[], int | None] = lambda: None) -> int | None:
    """model.max_seq_length for a completion budget set up to or past it (and max_seq_length not set): the budget
    plus the room the prompt had; None where nothing needs raising, or where that passes the model's ``positions``
    (its max_position_embeddings, asked only here; None: not known), which no max_seq_length may: the config check
    then refuses the budget as given, with what fits."""
    completion = settings.tables.get("grpo", {}).get("max_completion_length")
    numbers = (completion, max_seq_length, prompt_room)
    if not all(isinstance(number, int) and not isinstance(number, bool) for number in numbers) or (
            "max_seq_length" in settings.tables.get("model", {}) or completion < max_seq_length or prompt_room <= 0):
        return None
    limit = positions()
    if limit is not None and completion + prompt_room > limit:
        return None
    return completion + prompt_room


def _room_for_the_prompt(data: dict, settings: CliSettings, prompt_room: int, notes: list[str]) -> None:
    """A completion budget set past model.max_seq_length (and max_seq_length not set): raised to keep the preset's
    room for the prompt, and said; not past the positions of the model (a relative folder from here, as `new` takes
    --model)."""
    from pathlib import Path

    from ..core.project import positions_of

    raised = raised_max_seq_length(settings, data["max_seq_length"], prompt_room,
                                   lambda: positions_of(data["model_name"], data["preset"], Path.cwd()))
    if raised is None:
        return
    completion = settings.tables["grpo"]["max_completion_length"]
    data["max_seq_length"] = settings.raised_max_seq_length = raised
    notes.append(_("model.max_seq_length raised to {length}: grpo.max_completion_length ({completion}) plus the "
                   "preset's {room} tokens for the prompt (--set model.max_seq_length=N sets it)").format(
        length=data["max_seq_length"], completion=completion, room=prompt_room))


def fit_to_chinese(rewards: list[dict], settings: CliSettings, lang: str, chinese_prompts: bool | None,
                   notes: list[str]) -> None:
    """The params that read Chinese text (CHINESE_PARAMS, CHINESE_TARGET) in the rewards of a Chinese project, where
    --param did not give them, and a note naming them. ``chinese_prompts``: whether most of the dataset's prompts
    are Chinese; None where it cannot be read here (a hub dataset)."""
    if lang != "zh-CN" and not chinese_prompts:
        return
    target_is_chinese = chinese_prompts or (chinese_prompts is None and lang == "zh-CN")
    written = []
    for reward in rewards:
        wanted = {**CHINESE_PARAMS.get(reward["name"], {}),
                  **(CHINESE_TARGET.get(reward["name"], {}) if target_is_chinese else {})}
        given = settings.params.get(reward["name"], {})
        for key, value in wanted.items():
            if key not in given:
                reward["params"] = {**reward.get("params", {}), key: value}
                written.append(f"{reward['name']}.{key} = {schema.toml_value(value)}")
    if written:
        why = _("--lang zh-CN") if lang == "zh-CN" else _("the dataset's prompts are mostly Chinese")
        notes.append(_("rewards fitted to Chinese text ({why}): {params} (the defaults are for English); "
                       "--param REWARD.PARAM=VALUE gives another value").format(why=why, params=", ".join(written)))


def parse(set_items=(), param_items=()) -> CliSettings:
    """--set and --param items, checked; a --param's reward must exist (whether it is chosen is checked later)."""
    return parse_params(param_items, parse_sets(set_items))


def dataset_info(path, prompt_column: str, answer_column: str | None, shown: str | None = None):
    """The columns of a local data file and its share of Chinese prompts (a DatasetInfo), after checking that it has
    the prompt and answer columns; None for a hub dataset (its columns are known only when it loads). ``shown``:
    the file as a refusal names it (default: its path)."""
    from ..core import datafile
    from ..core.errors import shown_path

    path = home_expanded(path)
    if path.suffix not in datafile.LOCAL_DATA_SUFFIXES or not path.is_file():
        return None
    wanted = [("--prompt-column", prompt_column)] + ([("--answer-column", answer_column)] if answer_column else [])
    info = datafile.scan(path, shown or shown_path(path), wanted, chinese=True)
    if info.rows == 0:  # named here, as given: the project's check would name its copy, which is never written
        raise schema.ConfigError(_("{file}: no rows; add prompts (dataset.path)").format(
            file=shown or shown_path(path)))
    return info


def sample_lang(lang: str, preset: str) -> str:
    """The language of the template's sample data (the ``sample_lang`` answer): the project's, but English for the
    tiny preset, whose tokenizer is built from the English samples. A project made before there were Chinese samples
    has no such answer, and `update` keeps its English ones (copier.yml's default)."""
    return "en" if preset == "tiny" else lang


def sample_prompts(lang: str, preset: str):
    """The template's sample prompts that a project made without --dataset gets (data/prompts.jsonl.jinja)."""
    from . import history

    return history.template_dir() / SAMPLES / f"prompts.{sample_lang(lang, preset)}.jsonl"


def apply_command_line(data: dict, settings: CliSettings | None, answer_column: str | None, dataset, *,
                       defaults: bool, model_given: bool, notes: list[str]) -> None:
    """The answers of `new`, completed with what the command line said: a correctness reward when the dataset has
    a gold column and the preset's rewards are taken, --param and --answer-column in the rewards, --set values."""
    settings = settings or CliSettings()
    if answer_column is not None and not answer_column.strip():
        raise SettingError(_("--answer-column: give the name of the dataset's column of gold answers"))
    source = dataset if dataset is not None else sample_prompts(data["lang"], data["preset"])
    if "dataset" in settings.tables and "path" in settings.tables["dataset"]:
        source = None  # a hub dataset (or a file the project names itself): checked when it loads
    shown = None if dataset is not None else SAMPLE_PROMPTS  # the sample prompts as the project has them
    info = dataset_info(source, data["prompt_column"], answer_column, shown) if source is not None else None
    columns = info.columns if info is not None else None
    # not the prompt column: prompted with its gold answer, a model learns to copy it
    gold = answer_column or (DEFAULT_GOLD_COLUMN if columns and DEFAULT_GOLD_COLUMN in columns
                             and DEFAULT_GOLD_COLUMN != data["prompt_column"] else None)
    if defaults and gold and not gold_rewards(data["rewards"]):
        name, weight = CORRECTNESS_REWARD
        data["rewards"].append({"name": name, "weight": weight})
        notes.append(_("added the reward {name}:{weight:g}, which scores each completion against the dataset's "
                       "{column!r} column (gold answers); --reward chooses the rewards yourself").format(
            name=name, weight=weight, column=gold))
    wire_rewards(data["rewards"], settings, answer_column)
    chinese_prompts = None if info is None or info.chinese_share is None else info.chinese_share > 0.5
    fit_to_chinese(data["rewards"], settings, data["lang"], chinese_prompts, notes)
    apply_to_answers(data, settings, model_given=model_given, dataset_given=dataset is not None, notes=notes)
    notes.extend(settings.notes)
