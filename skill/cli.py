"""The grpo-skill command line. Heavy libraries (torch, TRL, Unsloth) are imported only by the verbs that
need them, so `grpo-skill --help` and the listings start fast.

Every message is English in the source and translated through gettext (grpo_skill.i18n): help texts are
marked with N_() and translated when shown, in the language of `--lang` (before the command) or the locale.
"""

from __future__ import annotations

import sys

import click

from .core.i18n import N_
from .console import Group, LanguageChoice, _set_debug, _set_language
from .verbs import advice, catalog, projects, skill


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]},
             help=N_("Set up GRPO training of LLMs with TRL and Unsloth: scaffold projects, list presets and rewards."))
@click.version_option(package_name="grpo-skill", help=N_("Show the version and exit."))
@click.option("--lang", type=LanguageChoice(), is_eager=True, expose_value=False, callback=_set_language,
              help=N_("Language of messages; default: the locale's (LANG=zh_CN.UTF-8 gives zh-CN), else en."))
@click.option("--debug", is_flag=True, expose_value=False, callback=_set_debug,
              help=N_("Show the full traceback of an error (also: GRPO_SKILL_DEBUG=1)."))
def main():
    pass


for verb in (*projects.VERBS, *catalog.VERBS, *advice.VERBS, *skill.VERBS):
    main.add_command(verb)


if __name__ == "__main__":
    sys.exit(main())
