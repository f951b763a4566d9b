"""Renders a GRPO project from templates/project with copier, after validating every input."""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import asdict
from importlib import resources
from pathlib import Path

from jinja2 import pass_context
from jinja2.ext import InternationalizationExtension

from .errors import UserError
from . import __version__, i18n, plugins
from . import project as config
from .i18n import LANGS, _
from .registry import RegistryError

NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


class GenerateError(UserError):
    """Bad input for `grpo-skill new`; nothing has been written."""


class TemplateTranslations(InternationalizationExtension):
    """Jinja's i18n extension for the project template (copier.yml ``_jinja_extensions``): ``{{ _("...") }}``
    gives the text in the language of the ``lang`` answer, from the same gettext catalog as the CLI."""

    def __init__(self, environment):
        super().__init__(environment)
        environment.install_gettext_callables(_template_gettext, _template_ngettext, newstyle=False)


@pass_context
def _template_gettext(context, message: str) -> str:
    return i18n.translations(context.get("lang") or "en").gettext(message)


@pass_context
def _template_ngettext(context, singular: str, plural: str, n: int) -> str:
    return i18n.translations(context.get("lang") or "en").ngettext(singular, plural, n)


def template_dir() -> Path:
    return Path(str(resources.files("grpo_skill.templates").joinpath("project")))


def parse_reward(option: str) -> tuple[str, float]:
    """"name" or "name:weight"."""
    name, _colon, weight = option.partition(":")
    if not weight:
        return name, 1.0
    try:
        return name, float(weight)
    except ValueError:
        raise GenerateError(
            _("--reward {option!r}: weight {weight!r} is not a number; write NAME:0.5").format(option=option, weight=weight)
        ) from None


SAMPLE_PROMPTS = "data/prompts.jsonl"


def answers(name, preset_name, reward_options=(), backend="auto", model=None, lang="en", dataset=None,
            prompt_column="prompt") -> dict:
    if not NAME_PATTERN.match(name):
        raise GenerateError(
            _("project name {name!r} is not allowed: use letters, digits, '-' and '_', starting with a letter "
              "(at most 64 characters)").format(name=name)
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
    if model and Path(model).expanduser().exists():
        model = str(Path(model).expanduser().resolve())  # a local folder: keep it valid from anywhere
    if dataset is not None:
        dataset = Path(dataset).expanduser()
        if dataset.suffix not in config.LOCAL_DATA_SUFFIXES or not dataset.is_file():
            raise GenerateError(
                _("--dataset {path}: not a .jsonl, .json, .csv or .parquet file; give your prompts file").format(
                    path=dataset)
            )
    lora = asdict(preset.lora)
    lora["target_modules"] = list(lora["target_modules"])
    return {
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
        "grpo_skill_version": __version__,
        "dataset_path": f"data/{dataset.name}" if dataset else SAMPLE_PROMPTS,
        "prompt_column": prompt_column,
    }


def render(name: str, parent: str | Path = ".", *, force: bool = False, **options) -> tuple[Path, list[str]]:
    """Validate, render into a scratch folder, check the result's config, then copy it into place."""
    import copier

    data = answers(name, **options)
    dataset = options.get("dataset")
    target = Path(parent) / name
    if target.exists() and not target.is_dir():
        raise GenerateError(_("{target} exists and is not a folder; choose another name").format(target=target))
    if target.is_dir() and any(target.iterdir()) and not force:
        raise GenerateError(
            _("{target} is not empty; choose another name, or pass --force to write into it").format(target=target)
        )

    with tempfile.TemporaryDirectory() as scratch:
        rendered = Path(scratch) / name
        # unsafe: the template is ours and its only "unsafe" feature is TemplateTranslations
        copier.run_copy(str(template_dir()), rendered, data=data, defaults=True, quiet=True, overwrite=True,
                        unsafe=True)
        if dataset:  # the user's data goes into the project, beside (or over) the sample prompts
            shutil.copyfile(dataset, rendered / data["dataset_path"])
        plugin_name = None
        try:
            plugin_name = plugins.register_project(rendered)
            config.load(rendered / config.CONFIG_FILE)
        except config.ConfigError as error:
            raise GenerateError(
                _("the project would not run: {error}").format(error=error)
            ) from None
        finally:
            if plugin_name:
                plugins.unregister(plugin_name)
        files = sorted(str(path.relative_to(rendered)) for path in rendered.rglob("*") if path.is_file())
        shutil.copytree(rendered, target, dirs_exist_ok=True)
    return target, files
