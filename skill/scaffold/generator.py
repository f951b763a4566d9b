"""Renders a GRPO project from templates/project with copier, after validating every input."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jinja2 import pass_context
from jinja2.ext import InternationalizationExtension

from ..core.errors import UserError, home_expanded, shown_path
from ..core import __version__
from ..core import i18n, plugins
from . import copying, skillfiles
from .settings import SAMPLE_PROMPTS, sample_lang
from . import update as updates
from ..core import project as config
from ..core.i18n import LANGS, _
from ..core.registry import RegistryError

NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


class GenerateError(UserError):
    """Bad input for `grpo-skill new`; nothing has been written."""


class TemplateTranslations(InternationalizationExtension):
    """Jinja's i18n extension for the project template (copier.yml ``_jinja_extensions``): ``{{ _("...") }}``
    gives the text in the language of the ``lang`` answer, from the same gettext catalog as the CLI. It also
    adds the ``toml`` filter: a value as TOML writes it (settings given with --set may be tables), and keeps what
    jinja compiles (scaffold/copying.py)."""

    def __init__(self, environment):
        super().__init__(environment)
        environment.install_gettext_callables(_template_gettext, _template_ngettext, newstyle=False)
        from ..core.schema import toml_text

        environment.filters["toml"] = toml_text
        copying.keep_compiled(environment)


@pass_context
def _template_gettext(context, message: str) -> str:
    return i18n.template_translations(context.get("lang") or "en").gettext(message)


@pass_context
def _template_ngettext(context, singular: str, plural: str, n: int) -> str:
    return i18n.template_translations(context.get("lang") or "en").ngettext(singular, plural, n)


def template_dir() -> Path:
    from . import history

    return history.template_dir()


TEMPLATE_REWARDS = "rewards.py.jinja"  # the rewards.py every new project has
_template_plugin: list[str] = []  # its plugin's name while template_rewards() has it registered


@contextlib.contextmanager
def template_rewards():
    """The rewards of the rewards.py that `new` writes into the project, registered while `new` checks --reward and
    --param: the project will have them, so `new --reward no_repetition` is as valid as a built-in reward. They are
    read from the template's own file, rendered, so there is no second list of them to keep in step."""
    if _template_plugin and plugins.pm.has_plugin(_template_plugin[-1]):  # already inside: nothing more to do
        yield
        return
    from jinja2 import Environment, StrictUndefined

    environment = Environment(extensions=["jinja2.ext.i18n"], undefined=StrictUndefined, keep_trailing_newline=True)
    environment.install_null_translations()  # the comments' language changes no reward
    source = (template_dir() / TEMPLATE_REWARDS).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="grpo-skill-template-") as folder:
        (Path(folder) / "rewards.py").write_text(environment.from_string(source).render(), encoding="utf-8")
        name = plugins.register_project(folder)
        _template_plugin.append(name)
        try:
            yield
        finally:
            _template_plugin.remove(name)
            if plugins.pm.has_plugin(name):  # rendering the project registers its own rewards.py in its place
                plugins.unregister(name)


def template_reward_names() -> set[str]:
    """The names of the rewards that every new project's rewards.py registers."""
    with template_rewards():
        return {name for name, registered in plugins.rewards().items() if registered.plugin == _template_plugin[-1]}


def parse_reward(option: str) -> tuple[str, float]:
    """"name" or "name:weight"."""
    from ..core.schema import parse_reward_spec

    try:
        return parse_reward_spec(option)
    except UserError as error:
        raise GenerateError(_("--reward {error}").format(error=error)) from None


BACKUP_DIR = ".grpo-skill-backup"


def answers(name, preset_name, reward_options=(), backend="auto", model=None, lang="en", dataset=None,
            prompt_column="prompt", settings=None, answer_column=None, notes=None) -> dict:
    if not NAME_PATTERN.match(name):
        raise GenerateError(
            _("project name {name!r} (the last part of the path) is not allowed: use letters, digits, '-' and '_', "
              "starting with a letter (at most 64 characters)").format(name=name)
        )
    if backend not in config.BACKENDS:
        raise GenerateError(
            _("--backend {backend!r} is not one of {choices}").format(backend=backend, choices=", ".join(config.BACKENDS))
        )
    if lang not in LANGS:
        raise GenerateError(_("--lang {lang!r} is not one of {choices}").format(lang=lang, choices=", ".join(LANGS)))
    try:
        preset = plugins.get_preset(preset_name)
        rewards = [parse_reward(option) for option in reward_options] or list(preset.rewards)
        for reward_name, _weight in rewards:
            plugins.get_reward(reward_name)
    except RegistryError as error:
        raise GenerateError(str(error)) from None
    if len({reward_name for reward_name, _weight in rewards}) != len(rewards):
        raise GenerateError(_("a reward is given twice; give each --reward once, with its weight"))
    if model and home_expanded(model).exists():
        model = str(home_expanded(model).resolve())  # a local folder: keep it valid from anywhere
    elif model and config.looks_local(model):
        raise GenerateError(_("--model {model}: no such folder; give a model folder or a hub id").format(model=model))
    if dataset is not None:
        if not home_expanded(dataset).exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", dataset) \
                and Path(dataset).suffix not in config.LOCAL_DATA_SUFFIXES:
            raise GenerateError(_("--dataset {name}: no such file (--dataset copies a local file into the project); "
                                  "for a hub dataset give --set dataset.path={name} (its columns with --prompt-column "
                                  "and --answer-column)").format(name=dataset))
        dataset = home_expanded(dataset)
        if dataset.suffix in config.LOCAL_DATA_SUFFIXES and not dataset.exists():
            raise GenerateError(_("--dataset {path}: no such file").format(path=dataset))
        if dataset.suffix not in config.LOCAL_DATA_SUFFIXES or not dataset.is_file():
            raise GenerateError(
                _("--dataset {path}: not a .jsonl, .json, .csv or .parquet file; give your prompts file").format(
                    path=dataset)
            )
    lora = asdict(preset.lora)
    lora["target_modules"] = list(lora["target_modules"])
    data = {
        "project_name": name,
        "preset": preset.name,
        "model_name": model or preset.model_id,
        "backend": backend,
        "max_seq_length": preset.max_seq_length,
        "load_in_4bit": preset.load_in_4bit,
        "lora": lora,
        "grpo": dict(preset.grpo),
        "chat_template_kwargs": dict(preset.chat_template_kwargs),
        "rewards": [{"name": reward_name, "weight": weight} for reward_name, weight in rewards],
        "lang": lang,
        "sample_lang": sample_lang(lang, preset.name),
        "grpo_skill_version": __version__,
        "dataset_path": f"data/{dataset.name}" if dataset else SAMPLE_PROMPTS,
        "prompt_column": prompt_column,
    }
    from . import settings as given

    given.apply_command_line(data, settings, answer_column, dataset, defaults=not reward_options,
                             model_given=bool(model), notes=notes if notes is not None else [])
    return data


def target_of(path: str | Path, parent: str | Path = ".") -> tuple[Path, str]:
    """``new PATH``: the folder to create and the project's name, its last part (``new .`` names the
    project after the current folder)."""
    if not str(path).strip():  # an unset shell variable ("new $NAME"): Path("") would be the current folder
        raise GenerateError(_("the project's path is empty; give a folder name, e.g. grpo-skill new my-run (or . "
                              "for the current folder)"))
    target = home_expanded(parent) / home_expanded(path)
    if target.name in ("", ".", ".."):
        target = target.resolve()
    return target, target.name


@dataclass
class Rendered:
    target: Path
    files: list[str]  # every file of the project, relative to target
    backup_dir: Path | None = None  # where the files you had changed were saved (--force)
    backed_up: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what `new` chose or read for you (a reward it added, ...)
    warnings: list[str] = field(default_factory=list)  # values that run but are surely not what was meant


def render(path: str | Path, parent: str | Path = ".", *, force: bool = False, **options) -> tuple[Path, list[str]]:
    rendered = render_project(path, parent, force=force, **options)
    return rendered.target, rendered.files


def _writable_ancestor(target: Path) -> None:
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing != target and not existing.is_dir():
        raise GenerateError(_("cannot create {target}: {file} is a file, not a folder; choose another path").format(
            target=target, file=existing))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GenerateError(_("cannot create {target}: {folder} is not writable; choose a folder you can write to").format(
            target=target, folder=existing))


def render_project(path: str | Path, parent: str | Path = ".", *, force: bool = False, shown_as: Path | None = None,
                   given_options: frozenset[str] = frozenset(), command: str = "new", **options) -> Rendered:
    """Validate, render into a scratch folder, check the result's config, then copy it into place.

    With ``force`` into a folder that holds files: a file you changed since it was generated is copied to
    ``.grpo-skill-backup/<time>/`` before it is replaced, and listed; files the template does not make are
    left alone. ``shown_as``: the project's folder as a refusal names it (default: the target; ``Path()``
    names its files relative to the project, for a target in a temporary folder). ``given_options``: the options
    with a default that the command line gives all the same ("lang": ``lang`` is the command's --lang, not the CLI's
    language; "backend", "prompt_column"): over an earlier project, the values they give are not named as dropped,
    and the project records them as given (GIVEN_KEYS). ``command``: the command that renders it, as its refusals
    name it ("new", or "plan" for `plan --preset --set`)."""
    target, name = target_of(path, parent)
    notes: list[str] = []
    with template_rewards():
        data = answers(name, **options, notes=notes)
        given_now = _given_now(data, options, given_options)
        data[GIVEN_KEYS] = _given_keys(data, name, given_now)
    recorded = _recorded_answers(target) if target.is_dir() else None
    dataset = options.get("dataset")
    if target.exists() and not target.is_dir():
        raise GenerateError(_("{target} exists and is not a folder; choose another name").format(target=target))
    if target.is_dir() and any(target.iterdir()) and not force:
        raise GenerateError(
            _("{target} is not empty; choose another name, or pass --force to write into it (files you changed "
              "are backed up)").format(target=target)
        )
    _writable_ancestor(target)

    # Rendered beside the target where its folder exists, so that a new project is moved into place whole (one
    # rename) rather than copied and the copy deleted
    beside = target.parent if target.parent.is_dir() else None
    shown_folder = target if shown_as is None else shown_as
    with tempfile.TemporaryDirectory(dir=beside, prefix=".grpo-skill-new-") as scratch:
        rendered = Path(scratch) / name
        _copy_template(rendered, data)
        if dataset:  # the user's data goes into the project, beside (or over) the sample prompts
            shutil.copyfile(home_expanded(dataset), rendered / data["dataset_path"])
        skillfiles.add_to_project(rendered, data["lang"])  # the skill at this version, for assistants
        updates.record_origin(rendered)  # the template version that `grpo-skill update` merges from
        plugin_name = None
        from ..runtime import modelfiles
        from ..runtime.golds import gold_warnings

        try:
            plugin_name = plugins.register_project(rendered)
            given = options.get("settings")  # its values are named as given on the command line
            loaded = config.load(rendered / config.CONFIG_FILE, given.dotted() if given else None, by_new=True,
                                 model_flag=command == "new", derived=_derived(given, command),
                                 longest_prompt=modelfiles.longest_prompt,
                                 prompt_room=given.prompt_room if given else None)
            loaded.warnings.extend(_build_chosen_rewards(loaded, plugin_name))
            loaded.warnings.extend(gold_warnings(loaded))  # a gold answer no completion can match
        except UserError as error:
            raise GenerateError(_would_not_run(str(error), rendered, shown_folder, options.get("settings"))) from None
        finally:
            if plugin_name:
                plugins.unregister(plugin_name)
        if recorded is not None:  # new --force over a project: what this render leaves out of the earlier one, said
            # the earlier preset's defaults are needed only where the project does not record what its `new` was given
            defaults = _preset_defaults(recorded, name) if _recorded_given(recorded) is None else None
            notes.extend(_not_carried_over(recorded, data, _config_settings(target / config.CONFIG_FILE),
                                           _config_settings(rendered / config.CONFIG_FILE),
                                           written=_written_settings(recorded, Path(scratch) / ".earlier"),
                                           defaults=defaults, given_now=given_now, project=target))
        files = sorted(str(path.relative_to(rendered)) for path in rendered.rglob("*") if path.is_file())
        result = Rendered(target, files, notes=notes,
                          warnings=[_in_project(warning, rendered, shown_folder) for warning in loaded.warnings])
        if target.is_dir():
            _back_up_changed(result, rendered, Path(scratch))
        _put_in_place(rendered, target)
    return result


def _derived(settings, command: str) -> dict[str, str]:
    """What `new` (``command``) changed on its own, for the config check's messages (Source.derived): the
    model.max_seq_length it raised to fit the budget given."""
    if settings is None or settings.raised_max_seq_length is None:
        return {}
    return {"model.max_seq_length": _("raised to {length} by `grpo-skill {command}` to fit "
                                      "grpo.max_completion_length={completion}").format(
        length=settings.raised_max_seq_length, command=command,
        completion=settings.tables["grpo"]["max_completion_length"])}


def _build_chosen_rewards(loaded, plugin_name: str | None) -> list[str]:
    """Build the chosen rewards as `check` builds them, so that `new` refuses the params their factories refuse:
    the project's own rewards.py's and the built-in ones. Other plugins' are left to `check`: a factory of theirs may
    load a model or call a service. A built-in checks its params before it asks for its packages, which it imports
    at its first call: without the [train] extra the project is written, and `check` says what to install; and
    before a model or a server it reaches (language's model, llm_judge's judge), which it leaves to `check` here.
    Returns what the factories warned (code_tests: the network cannot be cut here), as `new` says it."""
    from ..core.contract import RewardPackageMissing, factory_warnings, params_only

    with factory_warnings() as said, params_only():
        for choice in loaded.rewards:
            reward = plugins.get_reward(choice.name)
            own = plugin_name and reward.source == plugin_name
            built_in = reward.source.startswith("builtin:")
            if own or built_in:
                with contextlib.suppress(RewardPackageMissing):  # ModelLeftUnloaded too
                    reward.build(tokenizer=None, preset=loaded.preset, params=choice.params, grpo=loaded.grpo)
    return said


def _in_project(message: str, rendered: Path, folder: Path) -> str:
    """``message`` with the scratch folder's paths named as the project's (relative to it where ``folder`` is
    ``Path()``)."""
    for scratch_path, shown in ((str(rendered), str(folder)), (shown_path(rendered), shown_path(folder))):
        if folder == Path():  # named relative to the project
            message = message.replace(scratch_path + os.sep, "").replace(scratch_path, ".")
        else:
            message = message.replace(scratch_path, shown)
    return message


def _would_not_run(message: str, rendered: Path, folder: Path, settings) -> str:
    """A refusal of the rendered project, its paths named as the project's (never the scratch folder's). One at
    a line of its config.toml, a file the user cannot open, says instead which --set settings went into it."""
    config_file = rendered / config.CONFIG_FILE
    positioned = False
    for name in (str(config_file), shown_path(config_file)):
        message, count = re.subn(re.escape(name) + r"(?::\d+)?: ", "", message)
        positioned = positioned or count > 0
    message = _in_project(message, rendered, folder)
    # the --set settings the refusal names (not every one given: a refusal of the preset's values names none)
    given = {key: value for key, value in (settings.dotted() if settings is not None else {}).items()
             if re.search(rf"\b{re.escape(key.rpartition('.')[2])}\b", message)}
    if given and positioned:
        from ..core.schema import toml_text

        items = ", ".join(f"--set {key}={toml_text(value)}" for key, value in given.items())
        return _("the project would not run with {settings}: {error}").format(settings=items, error=message)
    return _("the project would not run: {error}").format(error=message)


def _put_in_place(rendered: Path, target: Path) -> None:
    if not target.exists():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(rendered, target)
            return
        except OSError:  # another filesystem (the scratch folder in /tmp), or the folder appeared meanwhile
            pass
    shutil.copytree(rendered, target, dirs_exist_ok=True)


def _copy_template(destination: Path, data: dict, template: Path | None = None) -> None:
    # unsafe: the template is ours and its only "unsafe" feature is TemplateTranslations
    copying.copy_into_new_folder(template or template_dir(), destination, data=data, defaults=True, quiet=True,
                                 overwrite=True, unsafe=True)


def _recorded_answers(target: Path) -> dict | None:
    """The answers ``target``'s answers file records (``_commit`` and ``_src_path`` among them), if it can be read."""
    import yaml

    try:
        recorded = yaml.safe_load((target / updates.ANSWERS_FILE).read_text(encoding="utf-8"))
    except Exception:  # no answers file, or not YAML
        return None
    return recorded if isinstance(recorded, dict) else None


# The answers that config.toml writes as one key, by that key (the others: [lora], [grpo], rewards, settings).
ANSWER_KEYS = {"preset": "model.preset", "model_name": "model.name", "backend": "model.backend",
               "max_seq_length": "model.max_seq_length", "load_in_4bit": "model.load_in_4bit",
               "dataset_path": "dataset.path", "prompt_column": "dataset.prompt_column",
               "chat_template_kwargs": "dataset.chat_template_kwargs", "lang": "lang"}
NOT_CARRIED_SHOWN = 8  # settings named in new --force's note; the rest counted


def _rewards_text(rewards: list) -> str:
    """[[rewards]] as the note names them: "a:1, b:0.5 { max_len = 300 }"."""
    from ..core.schema import toml_text

    return ", ".join(f"{reward.get('name')}:{reward.get('weight', 1.0):g}" + (
        f" {toml_text(reward['params'])}" if reward.get("params") else "")
        for reward in rewards if isinstance(reward, dict))


def _settings_of(data: dict) -> dict:
    """A project's answers as the settings they make: {"model.name": ..., "grpo.beta": ..., "rewards": [...]}."""
    found = {key: data[answer] for answer, key in ANSWER_KEYS.items() if answer in data}
    for table in ("lora", "grpo"):
        found.update({f"{table}.{key}": value for key, value in (data.get(table) or {}).items()})
    for table, keys in (data.get("settings") or {}).items():
        found.update({f"{table}.{key}": value for key, value in (keys or {}).items()})
    if isinstance(data.get("rewards"), list):
        found["rewards"] = data["rewards"]
    return found


def _config_settings(path: Path) -> dict | None:
    """A config.toml's values as _settings_of names them (a `grpo-skill set` or a hand edit since `new` is there,
    not in the answers); None where it cannot be read."""
    import tomllib

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, not UTF-8, not TOML (a conflict left by update): the answers alone
        return None
    found = {f"{table}.{key}": value for table, keys in raw.items() if isinstance(keys, dict)
             for key, value in keys.items()}
    if isinstance(raw.get("rewards"), list):
        found["rewards"] = [{"weight": 1.0, **reward} for reward in raw["rewards"] if isinstance(reward, dict)]
    return found


PARAM = "params"  # the first part of a reward param's key in _flat's settings: (PARAM, "REWARD", "PARAM")
_ABSENT = object()


def _flat(settings: dict) -> dict:
    """``settings`` with its rewards as their names and weights ("rewards") and each param a key of its own, last:
    a reward's param is compared alone, as `set --param` changes it."""
    flat = {key: value for key, value in settings.items() if key != "rewards"}
    if isinstance(settings.get("rewards"), list):
        rewards = [reward for reward in settings["rewards"] if isinstance(reward, dict)]
        flat["rewards"] = [(reward.get("name"), reward.get("weight", 1.0)) for reward in rewards]
        flat.update({(PARAM, reward.get("name"), key): value for reward in rewards
                     for key, value in (reward.get("params") or {}).items()})
    return flat


def _written_settings(recorded: dict, scratch: Path) -> dict | None:
    """config.toml's values as the earlier `new` wrote them: its recorded answers rendered with the template version
    it records (this one where that is not in the shipped history); None where they do not render."""
    from . import history

    data = {key: value for key, value in recorded.items() if not key.startswith("_")}
    commit = recorded.get("_commit") if recorded.get("_src_path") == history.SOURCE else None
    earlier = scratch / "template"
    template = earlier if commit and history.checkout(str(commit), earlier) else None
    try:
        _copy_template(scratch / "project", data, template)
    except Exception:  # answers that template cannot use: the recorded answers stand in for it
        return None
    return _config_settings(scratch / "project" / config.CONFIG_FILE)


def _preset_defaults(recorded: dict, name: str) -> dict | None:
    """The answers the earlier project's preset gives with no option but its language (the CLI's, or --lang): what
    its `new` chose alone. None where that preset is not installed."""
    preset, lang = recorded.get("preset"), recorded.get("lang", "en")
    if not isinstance(preset, str):
        return None
    try:
        with template_rewards():
            return answers(name, preset, lang=lang if lang in LANGS else "en")
    except UserError:
        return None


# The answer that records which settings the project's `new` was given (copier.yml): their keys as _key_text writes
# them. A project made before it has none: its `new` --force tells the user's values from its preset's by this
# grpo-skill's preset.
GIVEN_KEYS = "given_keys"
# The options of `new` that give one setting, by the setting's key (--set, --param, --reward, --answer-column aside)
OPTION_KEYS = {"model": "model.name", "dataset": "dataset.path", "backend": "model.backend",
               "prompt_column": "dataset.prompt_column", "lang": "lang"}


def _given_now(data: dict, options: dict, given_options: frozenset[str]) -> frozenset:
    """The settings that this command's options give, keyed as _flat keys them: its --set keys, --param keys,
    "model.name" for --model, "dataset.path" for --dataset, "rewards" for --reward, the gold params (answer_column)
    of the rewards for --answer-column, and those of ``given_options`` (the options with a default that the command
    line gives all the same: "lang", "backend", "prompt_column")."""
    from .settings import GOLD_PARAMS

    settings = options.get("settings")
    keys = set(settings.dotted() if settings else ()) | {
        (PARAM, reward_name, key) for reward_name, params in (settings.params if settings else {}).items()
        for key in params}
    keys |= {key for option, key in OPTION_KEYS.items()
             if option in given_options or (option in ("model", "dataset") and options.get(option) is not None)}
    if options.get("reward_options"):
        keys.add("rewards")
    if options.get("answer_column") is not None:
        keys |= {(PARAM, reward["name"], param) for reward in data["rewards"] for param in GOLD_PARAMS
                 if param in (reward.get("params") or {})}
    return frozenset(keys)


def _key_text(key) -> str:
    """A _flat key as GIVEN_KEYS records it: "grpo.beta", "rewards", "rewards.REWARD.PARAM" for a reward's param."""
    return f"rewards.{key[1]}.{key[2]}" if isinstance(key, tuple) else key


def _key_of(text: str):
    """The _flat key that _key_text wrote as ``text``."""
    if text.startswith("rewards.") and text.count(".") >= 2:
        _rewards, reward_name, param = text.split(".", 2)
        return PARAM, reward_name, param
    return text


def _given_keys(data: dict, name: str, given_now: frozenset) -> list[str]:
    """What the project records as given to its `new` (GIVEN_KEYS): the settings its options give (``given_now``),
    and those its answers hold with another value than its preset gives alone (in its language), such as the
    correctness reward `new` adds for a dataset with gold answers or a max_seq_length it raised: values that follow
    from the options, and go with them."""
    keys = set(given_now)
    defaults = _preset_defaults(data, name)
    if defaults is not None:
        preset_gave = _flat(_settings_of(defaults))
        keys |= {key for key, value in _flat(_settings_of(data)).items() if preset_gave.get(key, _ABSENT) != value}
    return sorted(_key_text(key) for key in keys)


def _recorded_given(recorded: dict) -> frozenset | None:
    """The settings that an earlier project records as given to its `new`, keyed as _flat keys them; None where it
    records none (made before GIVEN_KEYS, or an answers file edited out of shape)."""
    keys = recorded.get(GIVEN_KEYS)
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        return None
    return frozenset(_key_of(key) for key in keys)


def _gold_options(rewards: list, earlier: dict, dropped: dict, project: Path | None) -> tuple[list[str], set]:
    """What `new` needs beside ``--reward`` to bring back ``rewards`` (the earlier ones) that read a gold answer:
    ``--answer-column COL`` (``--param REWARD.answer_column=COL`` each, where they read different columns), and the
    earlier dataset where it is not carried over (``dropped``), as `new` checks the column in the dataset it is given.
    Returns the options and the dropped keys they bring back."""
    from ..core.datafile import LOCAL_DATA_SUFFIXES
    from ..core.schema import toml_text
    from .settings import GOLD_PARAMS

    columns = {}  # reward -> (param, column): the gold column it reads, (None, None) where it reads the default
    for reward in rewards:
        if not isinstance(reward, dict) or not isinstance(reward.get("name"), str):
            continue
        params = reward.get("params") if isinstance(reward.get("params"), dict) else {}
        try:
            declared = plugins.get_reward(reward["name"]).params
        except RegistryError:  # not installed here: its params say
            declared = params
        gold = [param for param in GOLD_PARAMS if param in declared]
        if gold:
            columns[reward["name"]] = next(((param, params[param]) for param in gold if param in params), (None, None))
    if not columns:
        return [], set()
    options, covered = [], set()
    path = earlier.get("dataset.path")
    if "dataset.path" in dropped and isinstance(path, str):
        local = Path(path).suffix in LOCAL_DATA_SUFFIXES or (project is not None and (project / path).is_file())
        options += (["--dataset", shown_path(project / path if project is not None else path)] if local
                    else ["--set", f"dataset.path={toml_text(path)}"])
        covered.add("dataset.path")
        prompt_column = earlier.get("dataset.prompt_column")
        if isinstance(prompt_column, str) and prompt_column != "prompt":  # --prompt-column's default
            options += ["--prompt-column", prompt_column]
            covered.add("dataset.prompt_column")
    read = {column for _param, column in columns.values()}
    if len(read) == 1 and None not in read:
        options += ["--answer-column", str(read.pop())]
    else:
        options += [option for name, (param, column) in columns.items() if param is not None
                    for option in ("--param", f"{name}.{param}={toml_text(column)}")]
    return options, covered


def _not_carried_over(recorded: dict, data: dict, earlier_config: dict | None = None,
                      new_config: dict | None = None, *, written: dict | None = None,
                      defaults: dict | None = None, given_now: frozenset = frozenset(),
                      project: Path | None = None) -> list[str]:
    """A note naming the values the user chose for the earlier project that this render does not keep, and how each
    comes back; none where it keeps them all. The user's values: the settings its `new` was given, as the project
    records them (GIVEN_KEYS; in a project made before that record, its answers that differ from what its preset
    gives alone, ``defaults``), its language, and, where its config.toml can be read (``earlier_config``), the values
    there that differ from what that `new` wrote (``written``: a `grpo-skill set` or a hand edit since). A value the
    earlier preset or template chose is not named: another preset replaces those by design, nor one that this command
    gives itself (``given_now``, as _given_now keys them: with --reward, the params of the earlier rewards it does not
    choose too). Where another grpo-skill version made a project without that record, a second note says which named
    answers may be that version's defaults (its preset is not here to compare with). ``project``: the earlier
    project's folder, where the way back names its dataset file."""
    from ..core.schema import toml_value

    answered = _settings_of(recorded)
    earlier = _flat({**answered, **(earlier_config or {})})
    given = _flat({**_settings_of(data), **(new_config or {})})
    from_new, preset_gave = _flat(answered), _flat(_settings_of(defaults) if defaults is not None else {})
    in_config = _flat(earlier_config) if earlier_config is not None else {}
    as_written = _flat(written) if written is not None else from_new  # without it: the answers alone
    given_then = _recorded_given(recorded)
    kept_rewards = {reward_name for reward_name, _weight in given.get("rewards") or []}

    version = recorded.get("grpo_skill_version")

    def surely_chosen(key, value) -> bool:
        # the language is never the preset's (--lang, or the CLI's); a value changed since `new` is the user's, and so
        # is one the project records as given to its `new`
        return key == "lang" or (key in in_config and as_written.get(key, _ABSENT) != value) or (
            given_then is not None and key in given_then)

    def chosen(key, value) -> bool:
        return surely_chosen(key, value) or (given_then is None and key in from_new
                                             and from_new[key] != preset_gave.get(key, _ABSENT))

    def given_by_this_command(key) -> bool:  # a param of an earlier reward that this command's --reward leaves out
        return key in given_now or (isinstance(key, tuple) and "rewards" in given_now and key[1] not in kept_rewards)

    dropped = {key: value for key, value in earlier.items() if not given_by_this_command(key)
               and chosen(key, value) and given.get(key, _ABSENT) != value and value not in ({}, [], None)}
    # An option of the earlier `new` that the project does not record is told from its preset's default by this
    # grpo-skill's preset: the same where this version made the project. Another version's preset is nowhere here,
    # and its defaults may differ: a value its `new` wrote that differs from this preset's is named, and said to be
    # perhaps that version's default.
    sure = {key for key, value in dropped.items() if version == __version__ or surely_chosen(key, value)}
    # the earlier rewards named whole where they are the user's, or hold a param of the user's that this render's
    # rewards cannot take: `new --reward` brings them back, not `set --param`
    if "rewards" in dropped or any(isinstance(key, tuple) and key[1] not in kept_rewards for key in dropped):
        rewards_sure = any(key == "rewards" or isinstance(key, tuple) for key in sure)
        dropped = {key: value for key, value in dropped.items() if not isinstance(key, tuple)}
        dropped["rewards"] = {**answered, **(earlier_config or {})}.get("rewards") or []
        sure = {key for key in sure if not isinstance(key, tuple)} | ({"rewards"} if rewards_sure else set())
    if not dropped:
        return []
    params = [key for key in dropped if isinstance(key, tuple)]
    # a reward that read a gold column comes back with that column (and the dataset `new` checks it in)
    gold, covered = ([], set()) if "rewards" not in dropped else _gold_options(dropped["rewards"], earlier, dropped,
                                                                                project)
    named = {key: f"{key[1]}.{key[2]} = {toml_value(value)}" if isinstance(key, tuple) else
             f"{key} = {_rewards_text(value) if key == 'rewards' else toml_value(value)}"
             for key, value in dropped.items()}
    shown = _listed(list(named.values()))
    ways = []  # how each kind comes back: `set` cannot choose the language, nor copy a dataset in
    if set(dropped) - {"rewards", "lang"} - set(params) - covered:
        ways.append(_("`grpo-skill set SECTION.KEY=VALUE` changes one setting of a project without rendering it "
                      "again"))
    if params:
        ways.append(_("`grpo-skill set --param REWARD.PARAM=VALUE` changes a reward's param"))
    if "rewards" in dropped and gold:
        ways.append(_("the rewards and their weights come from `grpo-skill new --reward NAME:WEIGHT {options}`, with "
                      "the column of gold answers they read (and the dataset `new` copies in)").format(
            options=shlex.join(gold)))
    elif "rewards" in dropped:
        ways.append(_("the rewards and their weights come back with `grpo-skill set --reward NAME:WEIGHT`"))
    if "lang" in dropped:
        ways.append(_("the language comes from `grpo-skill new --lang`, else the CLI's language (`set` cannot change "
                      "it)"))
    # Translators: what separates the ways to bring settings back in new --force's note.
    notes = [i18n.ngettext(
        "the earlier project's {settings} is not carried over: this render takes the preset's values and this "
        "command's options; {ways}",
        "the earlier project's {settings} are not carried over: this render takes the preset's values and this "
        "command's options; {ways}", len(named)).format(settings=shown, ways=_("; ").join(ways))]
    perhaps = [text for key, text in named.items() if key not in sure]
    if perhaps:
        notes.append(i18n.ngettext(
            "the earlier project was made by grpo-skill {version}, whose defaults may differ from this version's: "
            "its {settings} may be such a default rather than a value chosen for it (the project does not record "
            "which values its `new` was given)",
            "the earlier project was made by grpo-skill {version}, whose defaults may differ from this version's: "
            "its {settings} may be such defaults rather than values chosen for it (the project does not record "
            "which values its `new` was given)", len(perhaps)).format(
            version="?" if version is None else version, settings=_listed(perhaps)))
    return notes


def _listed(named: list[str]) -> str:
    """Settings as new --force's notes name them: the first NOT_CARRIED_SHOWN, and how many more."""
    shown = ", ".join(named[:NOT_CARRIED_SHOWN])
    if len(named) > NOT_CARRIED_SHOWN:
        shown += _(" and {count} more").format(count=len(named) - NOT_CARRIED_SHOWN)
    return shown


def _in_preset_order(data: dict) -> dict | None:
    """``data`` with [grpo], [lora] and the chat template's kwargs in the preset's order, then the keys given
    with --set: as `new` rendered a project whose answers file sorted the keys (one made before the answers kept
    their order). None when that changes nothing, or the preset is not installed."""
    preset_name = data.get("preset")
    try:
        preset = plugins.get_preset(preset_name) if isinstance(preset_name, str) else None
    except RegistryError:
        preset = None
    if preset is None:
        return None
    defaults = {"grpo": preset.grpo, "lora": asdict(preset.lora), "chat_template_kwargs": preset.chat_template_kwargs}
    ordered = dict(data)
    for answer, default in defaults.items():
        given = data.get(answer)
        if isinstance(given, dict):
            ordered[answer] = {**{key: given[key] for key in default if key in given}, **given}
    return ordered if any(list(ordered[answer]) != list(data[answer]) for answer in defaults
                          if isinstance(data.get(answer), dict)) else None


def _previous_generation(recorded: dict, data: dict, scratch: Path) -> Path | None:
    """The project as `new` makes it (this template, this skill) from ``data``, the answers recorded in the
    project, with the template version it recorded: what the user got."""
    from . import history

    try:
        _copy_template(scratch, data)
    except Exception:  # answers this template cannot use: every differing file is backed up
        return None
    skillfiles.add_to_project(scratch, data.get("lang", "en"))
    commit = recorded.get("_commit") if recorded.get("_src_path") == history.SOURCE else None
    updates.write_origin(scratch, str(commit) if commit else None)
    return scratch


def _same(path: Path, other: Path) -> bool:
    return other.is_file() and path.read_bytes() == other.read_bytes()


def _back_up_changed(result: Rendered, rendered: Path, scratch: Path) -> None:
    changed = [relative for relative in result.files
               if (result.target / relative).is_file() and not _same(result.target / relative, rendered / relative)]
    recorded = _recorded_answers(result.target)
    if recorded is not None:
        data = {key: value for key, value in recorded.items() if not key.startswith("_")}
        # a file as either generation made it holds nothing of the user's; the second is rendered only when the
        # first leaves a file that differs (a project whose answers file sorted the keys)
        candidates = [answers for answers in (data, _in_preset_order(data)) if answers is not None]
        for number, answers in enumerate(candidates):
            previous = _previous_generation(recorded, answers, scratch / f".previous-{number}") if changed else None
            if previous is not None:
                changed = [relative for relative in changed if not _same(result.target / relative, previous / relative)]
    if not changed:
        return
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = result.target / BACKUP_DIR / stamp
    suffix = 1
    while backup.exists():
        suffix += 1
        backup = result.target / BACKUP_DIR / f"{stamp}-{suffix}"
    for relative in changed:
        (backup / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(result.target / relative, backup / relative)
    result.backup_dir, result.backed_up = backup, changed
