"""The grpo-skill command line. Heavy libraries (torch, TRL, Unsloth) are imported only by the verbs that
need them, so `grpo-skill --help` and the listings start fast.

Every message is English in the source and translated through gettext (grpo_skill.i18n): help texts are
marked with N_() and translated when shown, in the language of `--lang` (before the command) or the locale.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import unicodedata

import click

from . import i18n
from .i18n import LANGS, N_, _
from .skillfiles import DEFAULT_SKILLS_DIR


def fail(message: str) -> None:
    raise click.ClickException(message)


def emit(data, as_json: bool, render_text) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render_text(data)


def warn_broken_plugins() -> None:
    from . import plugins

    for info in plugins.failures():
        click.echo(_("warning: plugin {name!r} failed to load: {error}").format(name=info.name, error=info.error),
                   err=True)


# Table headers: the JSON keys, translated for the text listings.
HEADERS = {
    "name": N_("name"), "model": N_("model"), "max_seq_length": N_("max_seq_length"), "rewards": N_("rewards"),
    "plugin": N_("plugin"), "description": N_("description"), "source": N_("source"), "version": N_("version"),
    "hooks": N_("hooks"), "error": N_("error"),
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
_HAS_WIDE = re.compile(f"[{_WIDE}]")
_TOKENS = re.compile(f"[{_WIDE}]| |[^ {_WIDE}]+")
_NO_LINE_START = set("，。、；：！？）】」』》〉,.;:!?)]")


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _wrap_wide(text: str, width: int) -> str:
    """Each paragraph wrapped to ``width`` columns, breaking at spaces and between wide characters (never
    before a closing mark such as "，" or "）")."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        lines, line = [], []
        for token in _TOKENS.findall(" ".join(paragraph.split())):
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
        if _HAS_WIDE.search(text):
            text = _wrap_wide(text, self.width - self.current_indent)
        super().write_text(text)

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max((click.formatting.term_len(first) for first, _second in rows), default=0), col_max)
        width = max(self.width - first_col - col_spacing - 2, 10)  # as click computes it
        rows = [(first, _wrap_wide(second, width) if second and _HAS_WIDE.search(second) else second)
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

    def main(self, args=None, *rest, **kwargs):
        """Choose the language before parsing, so that `--help` and parse errors already speak it."""
        previous = i18n.chosen()
        lang = _lang_before_command(sys.argv[1:] if args is None else args)
        if lang:
            i18n.set_language(lang)
        try:
            return super().main(args, *rest, **kwargs)
        finally:
            i18n.set_language(previous)


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


def _set_language(ctx, param, value):
    if value:
        i18n.set_language(value)
    return value


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]},
             help=N_("Set up GRPO training of LLMs with TRL and Unsloth: scaffold projects, list presets and rewards."))
@click.version_option(package_name="grpo-skill", help=N_("Show the version and exit."))
@click.option("--lang", type=click.Choice(LANGS), is_eager=True, expose_value=False, callback=_set_language,
              help=N_("Language of messages; default: the locale's (LANG=zh_CN.UTF-8 gives zh-CN), else en."))
def main():
    pass


@main.command(help=N_("Create a runnable GRPO project NAME from a preset."))
@click.argument("name")
@click.option("--preset", "-p", default="standard", show_default=True, help=N_("See `grpo-skill presets`."))
@click.option("--reward", "-r", "rewards", multiple=True, metavar="NAME[:WEIGHT]",
              help=N_("A reward and its weight; repeat for several. Default: the preset's."))
@click.option("--backend", default="auto", show_default=True, type=click.Choice(["auto", "unsloth", "trl"]),
              help=N_("auto: Unsloth when a CUDA GPU and unsloth are there, else TRL + peft."))
@click.option("--model", help=N_("A hub id or a local model folder instead of the preset's model."))
@click.option("--dataset", type=click.Path(dir_okay=False),
              help=N_("Your prompts (.jsonl/.json/.csv/.parquet), copied into the project; default: sample prompts."))
@click.option("--prompt-column", default="prompt", show_default=True, help=N_("The dataset's column of prompts."))
@click.option("--lang", type=click.Choice(LANGS), show_default=N_("the CLI's language"),
              help=N_("Language of the project's README and comments."))
@click.option("--output-dir", "-o", default=".", type=click.Path(file_okay=False), help=N_("Where to create NAME."))
@click.option("--force", is_flag=True, help=N_("Write into a folder that is not empty, overwriting same-named files."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def new(name, preset, rewards, backend, model, dataset, prompt_column, lang, output_dir, force, as_json):
    from .generator import GenerateError, render

    lang = lang or i18n.current()
    try:
        target, files = render(name, output_dir, force=force, preset_name=preset, reward_options=rewards,
                               backend=backend, model=model, lang=lang, dataset=dataset,
                               prompt_column=prompt_column)
    except GenerateError as error:
        fail(str(error))
    result = {"project": str(target.resolve()), "preset": preset, "lang": lang, "files": files}

    def text(data):
        click.echo(_("Created {project} ({count} files, preset {preset}).").format(
            project=data["project"], count=len(files), preset=preset))
        click.echo(_("Next:  cd {project} && python train.py").format(project=target))

    emit(result, as_json, text)


@main.command(help=N_("List the model presets."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def presets(as_json):
    from . import plugins

    rows = [
        {"name": name, "model": reg.item.model_id, "max_seq_length": reg.item.max_seq_length,
         "load_in_4bit": reg.item.load_in_4bit, "template_opens_think": reg.item.template_opens_think,
         "rewards": ", ".join(f"{n}:{w:g}" for n, w in reg.item.rewards), "plugin": reg.plugin,
         "description": reg.item.description}
        for name, reg in sorted(plugins.presets().items())
    ]
    warn_broken_plugins()
    emit(rows, as_json, lambda data: table(data, ["name", "model", "max_seq_length", "rewards", "plugin"]))


@main.command(help=N_("List the reward functions."))
@click.option("--project", type=click.Path(exists=True, file_okay=False),
              help=N_("Also list this project's rewards.py."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def rewards(project, as_json):
    from . import plugins

    if project:
        plugins.register_project(project)
    rows = [
        {"name": name, "plugin": reg.plugin, "params": dict(reg.item.params), "description": reg.item.description}
        for name, reg in sorted(plugins.rewards().items())
    ]
    warn_broken_plugins()
    # Built-in descriptions are in the catalog; a third-party plugin's pass through unchanged.
    emit(rows, as_json, lambda data: table(
        [{**row, "description": _(row["description"]) if row["description"] else ""} for row in data],
        ["name", "plugin", "description"],
    ))


@main.command("plugins", help=N_("List the loaded plugins and the hooks each implements."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def plugins_command(as_json):
    from dataclasses import asdict

    from . import plugins

    rows = [asdict(info) for info in plugins.plugin_infos()]
    for row in rows:
        row["hooks"] = list(row["hooks"])
    emit(rows, as_json, lambda data: table(
        [{**row, "hooks": ", ".join(row["hooks"]), "error": row["error"] or ""} for row in data],
        ["name", "source", "version", "hooks", "error"],
    ))


@main.command(help=N_("Validate a project's config.toml without loading any model."))
@click.argument("project", default=".", type=click.Path(file_okay=False))
def check(project):
    from . import project as projects

    try:
        loaded = projects.load(project)
    except projects.ConfigError as error:
        fail(str(error))
    click.echo(_("{path}: OK (preset {preset}, rewards {rewards})").format(
        path=loaded.path, preset=loaded.model["preset"],
        rewards=", ".join(f"{c.name}:{c.weight:g}" for c in loaded.rewards)))


@main.command(help=N_("Before training: sample completions for a few of PROJECT's prompts with its model and "
                       "rewards, and say whether GRPO can learn from them (clipped and closed-thinking ratios, "
                       "reward spread, lengths, speed) and what to change. PROJECT: a project folder or its "
                       "config file."))
@click.argument("project", default=".", type=click.Path())
@click.option("--prompts", default=4, show_default=True, type=click.IntRange(min=1),
              help=N_("How many of the dataset's prompts to sample (num_generations completions each)."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def probe(project, prompts, as_json):
    from . import probe as probing
    from .errors import UserError

    try:
        result = probing.run(project, prompts=prompts)
    except UserError as error:
        fail(str(error))
    emit(result, as_json, lambda data: click.echo("\n".join(probing.report_lines(data))))


@main.command(help=N_("Summarise a run's metrics.jsonl: reward at the start and the end, training-health "
                       "warnings, and the latest completions from completions.jsonl."))
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--plot", type=click.Path(dir_okay=False), help=N_("Also draw reward and KL to this PNG."))
@click.option("--completions", "show_completions", default=3, show_default=True, type=click.IntRange(min=0),
              help=N_("How many of the latest step's completions to show (0: none)."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def metrics(run_dir, plot, show_completions, as_json):
    from .runtime import health, traces
    from .runtime import metrics as run_metrics

    try:
        rows = run_metrics.read_metrics(run_dir)
    except FileNotFoundError:
        fail(_("{run_dir} has no {file}; pass the run's output folder (e.g. outputs)").format(
            run_dir=run_dir, file=run_metrics.METRICS_FILE))
    summary = run_metrics.reward_trend(rows)
    if plot:
        summary["plot"] = str(run_metrics.plot_metrics(rows, plot))
    summary["health"] = health.warnings_in(rows)
    summary["latest_completions"] = traces.latest(run_dir, show_completions) if show_completions else []

    def text(data):
        click.echo("\n".join(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}"
                              for key, value in data.items() if key not in ("health", "latest_completions")))
        for warning in data["health"]:
            click.echo(_("warning (step {step}): {message} -> {advice}").format(**warning))
        if data["latest_completions"]:
            click.echo(_("latest completions (step {step}, from {file}):").format(
                step=data["latest_completions"][0]["step"], file=traces.TRACES_FILE))
        for trace in data["latest_completions"]:
            scores = ", ".join(f"{name} {score:+.2f}" if score is not None else f"{name} -"
                               for name, score in trace["rewards"].items())
            click.echo(_("- reward {reward:+.2f} ({scores}), advantage {advantage}:").format(
                reward=trace["reward"], scores=scores,
                advantage="-" if trace["advantage"] is None else f"{trace['advantage']:+.2f}"))
            click.echo("  " + " ".join(trace["completion"].split())[:300])

    emit(summary, as_json, text)


@main.command("build-model",
              help=N_("Build a random-weight Qwen3 and its tokenizer locally (no download); print its folder."))
@click.option("--shape", default="tiny", show_default=True, type=click.Choice(["tiny", "qwen3-4b"]),
              help=N_("tiny: trains on a CPU; qwen3-4b: Qwen3-4B's exact shape, random weights."))
@click.option("--chat", is_flag=True,
              help=N_("A template that does not open <think> (like Qwen3-4B, not Thinking-2507)."))
@click.option("--out", type=click.Path(file_okay=False), help=N_("Folder to write; default: the cache."))
def build_model(shape, chat, out):
    from . import modelbuild

    click.echo(modelbuild.build(shape, opens_think=not chat, dest=out))


@main.group("skill", help=N_("The grpo-skill skill for AI coding assistants: SKILL.md and its references."))
def skill_group():
    pass


@skill_group.command("install", help=N_(
    "Copy the skill (SKILL.md + references/) into DEST/grpo-skill/, where an assistant looks for skills. "
    "The default DEST, ~/.claude/skills, is Claude Code's folder for personal skills; "
    "use --dest .claude/skills for one project, or your assistant's skills folder."))
@click.option("--dest", type=click.Path(file_okay=False), show_default=True, default=DEFAULT_SKILLS_DIR,
              help=N_("The skills folder to install into."))
@click.option("--lang", type=click.Choice(LANGS), show_default=N_("the CLI's language"),
              help=N_("Install the English SKILL.md or its Chinese twin."))
@click.option("--force", is_flag=True, help=N_("Replace an existing copy that differs from this one."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def skill_install(dest, lang, force, as_json):
    from . import skillfiles

    try:
        installed = skillfiles.install(dest, lang or i18n.current(), force=force)
    except skillfiles.InstallError as error:
        fail(str(error))
    result = {"path": str(installed.path), "lang": installed.lang, "status": installed.status,
              "files": installed.files}
    messages = {
        "installed": N_("Installed the skill ({lang}, {count} files) in {path}"),
        "replaced": N_("Replaced the skill in {path} ({lang}, {count} files)"),
        "unchanged": N_("{path} already holds this skill ({lang}); nothing to do"),
    }
    emit(result, as_json, lambda data: click.echo(_(messages[data["status"]]).format(
        path=data["path"], lang=data["lang"], count=len(data["files"]))))


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


if __name__ == "__main__":
    sys.exit(main())
