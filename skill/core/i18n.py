"""Translations of what grpo-skill says to people: CLI help and output, errors, generated projects' comments.

Standard gettext: messages are marked with ``_()`` (or ``N_()`` where the text must stay untranslated
until it is shown), extracted with Babel into ``i18n/locale/grpo_skill.pot``, translated in
``i18n/locale/zh_CN/LC_MESSAGES/grpo_skill.po`` and compiled to the ``.mo`` next to it, which is
committed (tests/test_i18n.py fails when it is stale). English is the source language. To regenerate,
from the repository root::

    pybabel extract -F i18n/babel.cfg -o i18n/locale/grpo_skill.pot --project grpo-skill --no-wrap \\
        --sort-by-file --add-location=file --add-comments "Translators:" .
    pybabel update -i i18n/locale/grpo_skill.pot -d i18n/locale -D grpo_skill -l zh_CN --no-wrap --ignore-obsolete
    # translate the new or fuzzy entries in the .po, then
    pybabel compile -d i18n/locale -D grpo_skill --statistics
    python scripts/retire_template_messages.py  # where a template message changed: its old one, for `update`

The language is the one given to :func:`set_language` (the CLI's ``--lang``), else the locale's, read
the way gettext reads it: the first non-empty of LANGUAGE, LC_ALL, LC_MESSAGES and LANG. Nothing heavy
is imported here: this module is loaded by ``grpo-skill --help`` and by a project's train.py.
"""

from __future__ import annotations

import gettext
import os
from functools import lru_cache
from pathlib import Path

DOMAIN = "grpo_skill"
LANGS = ("en", "zh-CN")
# Our language tags -> gettext's catalog folder names.
CATALOG_NAMES = {"zh-CN": "zh_CN"}
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
PROJECT_LANG_VARIABLE = "GRPO_SKILL_LANG"  # a project's scripts: another language than the project's

_chosen: str | None = None


def N_(message: str) -> str:
    """Marks ``message`` for extraction without translating it now; ``_()`` translates it when shown."""
    return message


def locale_dir() -> Path:
    """The compiled catalogs: in a wheel, grpo_skill/_bundle/i18n/locale (pyproject.toml maps the package
    ``grpo_skill._bundle`` to the repository root); in a checkout or an editable install, i18n/locale itself."""
    here = Path(__file__).resolve().parents[1]  # the package: grpo_skill/
    packaged = here / "_bundle" / "i18n" / "locale"
    return packaged if packaged.is_dir() else here.parent / "i18n" / "locale"


def normalize(name: str) -> str | None:
    """A locale or language name ("zh_CN.UTF-8", "zh-CN", "en_US", "C") -> one of LANGS, or None if unsupported."""
    base = name.strip().split(".")[0].split("@")[0].replace("-", "_").lower()
    if base in ("c", "posix", "en") or base.startswith("en_"):
        return "en"
    if base in ("zh", "zh_cn", "zh_sg", "zh_hans", "zh_hans_cn"):
        return "zh-CN"
    return None


def from_locale(environ=None) -> str:
    """The language the locale asks for: like gettext, only the first non-empty variable counts."""
    environ = os.environ if environ is None else environ
    for variable in LOCALE_VARIABLES:
        value = environ.get(variable)
        if value:
            for entry in value.split(":"):  # LANGUAGE may list several, in order of preference
                lang = normalize(entry) if entry else None
                if lang:
                    return lang
            return "en"
    return "en"


def set_language(lang: str | None) -> None:
    """Use ``lang`` from now on; None goes back to the locale's language."""
    global _chosen
    if lang is not None and lang not in LANGS:
        raise ValueError(f"language {lang!r} is not one of {', '.join(LANGS)}")
    _chosen = lang


def use_project_language(lang: str) -> None:
    """A generated project's scripts speak the project's language (``new --lang``), whatever the locale;
    GRPO_SKILL_LANG=en (or zh-CN) overrides it."""
    set_language(normalize(os.environ.get(PROJECT_LANG_VARIABLE, "")) or normalize(lang) or "en")


def chosen() -> str | None:
    """The language given to set_language(), or None when the locale decides."""
    return _chosen


def current() -> str:
    return _chosen or from_locale()


@lru_cache(maxsize=None)
def translations(lang: str) -> gettext.NullTranslations:
    """The catalog for ``lang``; English (the source language) and a missing catalog translate nothing."""
    if lang not in CATALOG_NAMES:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, locale_dir(), languages=[CATALOG_NAMES[lang]], fallback=True)


RETIRED_DOMAIN = "grpo_skill_retired"  # template messages earlier template versions used (see template_translations)


@lru_cache(maxsize=None)
def template_translations(lang: str) -> gettext.NullTranslations:
    """The catalog the project template renders with: ``lang``'s, then the messages that earlier template versions
    used and the current one no longer does. `grpo-skill update` renders the project's old template version as the
    base of its merge; without them that base came out in English, and every changed message of an untouched zh-CN
    project was a conflict."""
    if lang not in CATALOG_NAMES:
        return gettext.NullTranslations()
    catalog = gettext.translation(DOMAIN, locale_dir(), languages=[CATALOG_NAMES[lang]], fallback=True)
    catalog.add_fallback(gettext.translation(RETIRED_DOMAIN, locale_dir(), languages=[CATALOG_NAMES[lang]],
                                             fallback=True))
    return catalog


def _(message: str) -> str:
    return translations(current()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(current()).ngettext(singular, plural, n)


def gettext_for(lang: str):
    """``_`` bound to one language, whatever the current one is (used to render projects and docs)."""
    return translations(lang).gettext
