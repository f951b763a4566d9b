"""How the CLI speaks: one-line errors (and --debug), text or --json, tables, help wrapped for Chinese, click's own
messages translated. cli.py holds the verbs."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import re
import sys

import click

from .core import i18n
from .core.i18n import LANGS, N_, _


def fail(message: str) -> None:
    raise click.ClickException(message)


def emit(data, as_json: bool, render_text) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))  # a TOML date param: its text
    else:
        render_text(data)


def warn_broken_plugins() -> None:
    from .core import plugins

    for line in plugins.warnings():
        click.echo(_("warning: {problem}").format(problem=line), err=True)


# Table headers: the JSON keys, translated for the text listings.
HEADERS = {
    "name": N_("name"), "model": N_("model"), "max_seq_length": N_("max_seq_length"), "rewards": N_("rewards"),
    "plugin": N_("plugin"), "description": N_("description"), "source": N_("source"), "version": N_("version"),
    "hooks": N_("hooks"), "error": N_("error"), "package": N_("package"), "installed": N_("installed"),
    "tested": N_("tested with"), "grpo_summary": N_("GRPO defaults"),
}


def table(rows: list[dict], columns: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    view = Table(show_lines=False)
    for column in columns:
        view.add_column(_(HEADERS.get(column, column)), overflow="fold")  # fold: CJK text has no spaces to wrap at
    for row in rows:
        view.add_row(*(str(row.get(column, "")) for column in columns))
    Console(width=max(100, Console().width)).print(view)


@contextlib.contextmanager
def _translated(*items):
    """Show ``items``' help (and a textual show_default) in the current language while a help page is drawn."""
    saved = [(item, getattr(item, "help", None), getattr(item, "show_default", None)) for item in items]
    try:
        for item, help_text, show_default in saved:
            if help_text:
                item.help = _(help_text)
            if isinstance(show_default, str):
                item.show_default = _(show_default)
        yield
    finally:
        for item, help_text, show_default in saved:
            if help_text:
                item.help = help_text
            if isinstance(show_default, str):
                item.show_default = show_default


# Wide (CJK) characters take two columns; click measures every character as one, so Chinese help would run
# past the terminal's edge. Such text is wrapped here, by display width, and handed to click unwrapped ("\b").
_WIDE = "\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"


def _has_wide(text: str) -> bool:
    return not text.isascii() and _wide_pattern().search(text) is not None


@functools.cache
def _wide_pattern() -> re.Pattern:  # compiled on first use: its character classes take milliseconds to compile
    return re.compile(f"[{_WIDE}]")


@functools.cache
def _tokens() -> re.Pattern:
    return re.compile(f"[{_WIDE}]| |[^ {_WIDE}]+")


_NO_LINE_START = set("，。、；：！？）】」』》〉,.;:!?)]")


def _width(text: str) -> int:
    import unicodedata  # only Chinese help gets here

    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _wrap_wide(text: str, width: int) -> str:
    """Each paragraph wrapped to ``width`` columns, breaking at spaces and between wide characters (never
    before a closing mark such as "，" or "）")."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        lines, line = [], []
        for token in _tokens().findall(" ".join(paragraph.split())):
            if line and token != " " and _width("".join(line) + token) > width:
                carry = [token]
                while carry[0] in _NO_LINE_START and len(line) > 1:
                    carry.insert(0, line.pop())
                lines.append("".join(line).rstrip())
                line = carry[1:] if carry[0] == " " else carry
            elif line or token != " ":
                line.append(token)
        paragraphs.append("\b\n" + "\n".join(lines + ["".join(line).rstrip()]))
    return "\n\n".join(paragraphs)


class _HelpFormatter(click.HelpFormatter):
    def write_text(self, text: str) -> None:
        if _has_wide(text):
            text = _wrap_wide(text, self.width - self.current_indent)
        super().write_text(text)

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max((click.formatting.term_len(first) for first, _second in rows), default=0), col_max)
        width = max(self.width - first_col - col_spacing - 2, 10)  # as click computes it
        rows = [(first, _wrap_wide(second, width) if second and _has_wide(second) else second)
                for first, second in rows]
        super().write_dl(rows, col_max, col_spacing)


class _Context(click.Context):
    formatter_class = _HelpFormatter


class _TranslatedHelp:
    """Commands whose help texts are msgids, translated when a help page or the command list is drawn."""

    context_class = _Context

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None and not getattr(option, "_msgid_help", False):
            # click makes it once and translates its help then: keep the msgid, translated when shown
            option.help, option._msgid_help = N_("Show this message and exit."), True
        return option

    def format_help_text(self, ctx, formatter):
        with _translated(self):
            super().format_help_text(ctx, formatter)

    def get_short_help_str(self, limit: int = 45) -> str:
        with _translated(self):
            return super().get_short_help_str(limit)

    def format_options(self, ctx, formatter):
        with _translated(*self.get_params(ctx)):
            super().format_options(ctx, formatter)


class Command(_TranslatedHelp, click.Command):
    pass


class Group(_TranslatedHelp, click.Group):
    command_class = Command
    group_class = type  # subgroups are Groups too

    def invoke(self, ctx):
        """A mistake the user can fix (UserError, a path they cannot write, a broken JSON file, Ctrl-C) ends in
        one line and a non-zero exit; --debug or GRPO_SKILL_DEBUG=1 shows the traceback instead."""
        from .core import errors

        try:
            return super().invoke(ctx)
        except click.UsageError as error:  # click's own would add the usage line: two lines are enough
            if _debug(ctx) or error.ctx is None:
                raise
            failure = click.ClickException(error.format_message() + "\n" + _("Try '{command} {option}' for help.").format(
                command=error.ctx.command_path, option="-h"))
            failure.exit_code = error.exit_code
            raise failure from None
        except (errors.UserError, OSError, json.JSONDecodeError, UnicodeDecodeError, ModuleNotFoundError,
                KeyboardInterrupt) as error:
            message = None if _debug(ctx) else errors.user_message(error)
            if message is None:
                raise
            failure = click.ClickException(message)
            failure.exit_code = errors.exit_code(error)
            raise failure from None

    def main(self, args=None, *rest, **kwargs):
        """Choose the language before parsing, so that `--help` and parse errors already speak it.

        Run as the program (arguments from sys.argv), the process ends with the command: what it built is freed
        by the exit, so it is frozen out of the interpreter's last garbage collections, which otherwise take
        about 70 ms of `new` (scripts/startup_time.py). Called with arguments (tests, other programs), nothing
        is frozen."""
        previous = i18n.chosen()
        lang = _lang_before_command(sys.argv[1:] if args is None else args)
        if lang:
            i18n.set_language(lang)
        try:
            return super().main(args, *rest, **kwargs)
        finally:
            i18n.set_language(previous)
            if args is None:
                gc.freeze()


def command(*args, **kwargs):
    """A verb of this CLI (``click.command`` with its translated, wrapped help)."""
    return click.command(*args, cls=Command, **kwargs)


def group(*args, **kwargs):
    """A verb with verbs of its own (``click.group``, the same way)."""
    return click.group(*args, cls=Group, **kwargs)


def _lang_before_command(args) -> str | None:
    """The group's --lang, if given before the command name (after it, options are the command's own)."""
    args = list(args)
    for index, arg in enumerate(args):
        if arg == "--lang" or arg.startswith("--lang="):
            value = arg.partition("=")[2] or (args[index + 1] if index + 1 < len(args) else "")
            return value if value in LANGS else None
        if arg == "--" or not arg.startswith("-"):
            return None
    return None


def _debug(ctx) -> bool:
    from .core.errors import debug_wanted

    return bool(ctx.find_root().meta.get("grpo_skill.debug")) or debug_wanted()


def _set_debug(ctx, param, value):
    if value:
        ctx.find_root().meta["grpo_skill.debug"] = True
    return value


class LanguageChoice(click.Choice):
    """--lang: en or zh-CN, written as a locale may write them too (zh-cn, zh_CN, zh, EN), as LANG is read."""

    def __init__(self):
        super().__init__(LANGS)

    def convert(self, value, param, ctx):
        return super().convert(i18n.normalize(value) or value if isinstance(value, str) else value, param, ctx)


def _set_language(ctx, param, value):
    if value:
        i18n.set_language(value)
    return value


def _translate_click() -> None:
    """Send click's own messages (Usage:, Options, Error: ...) through our catalog and language too."""
    import click.core
    import click.decorators
    import click.exceptions
    import click.formatting
    import click.parser
    import click.types

    for module in (click.core, click.decorators, click.exceptions, click.formatting, click.parser, click.types):
        if hasattr(module, "_"):
            module._ = _
        if hasattr(module, "ngettext"):
            module.ngettext = i18n.ngettext


def _click_messages():  # never called: marks the click messages our catalog translates (see tests/test_i18n.py)
    _("Usage:")
    _("Options")
    _("Commands")
    _("Error: {message}")
    _("Try '{command} {option}' for help.")
    _("Missing command.")
    _("Missing argument")
    _("Missing option")
    _("Missing parameter")
    _("Missing parameter: {param_name}")
    _("No such option {name!r}.")
    _("No such command {name!r}.")
    _("Invalid value: {message}")
    _("Invalid value for {param_hint}: {message}")
    _("Option {name!r} does not take a value.")
    _("{value!r} is not a valid {number_type}.")
    _("{name} {filename!r} does not exist.")
    _("{name} {filename!r} is a file.")
    _("{name} {filename!r} is a directory.")
    _("file")
    _("directory")
    _("path")
    _("default: {default}")
    _("required")
    _("Aborted!")
    i18n.ngettext("Got unexpected extra argument ({args})", "Got unexpected extra arguments ({args})", 1)
    i18n.ngettext("Did you mean {possibility}?", "(Did you mean one of: {possibilities}?)", 1)
    i18n.ngettext("Option {name!r} requires an argument.", "Option {name!r} requires {nargs} arguments.", 1)
    i18n.ngettext("{value!r} is not {choice}.", "{value!r} is not one of {choices}.", 1)


_translate_click()
