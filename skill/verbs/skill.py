"""The verbs for the skill itself and its tools: `skill path`, `skill install`, and `build-model` (the tiny preset's
model)."""

from __future__ import annotations

import click

from ..core import i18n
from ..core.i18n import N_, _
from ..console import LanguageChoice, command, emit, group


@command("build-model",
         help=N_("Build a random-weight Qwen3 and its tokenizer locally (no download); print its folder."))
@click.option("--shape", default="tiny", show_default=True, type=click.Choice(["tiny", "qwen3-4b"]),
              help=N_("tiny: trains on a CPU; qwen3-4b: Qwen3-4B's exact shape, random weights."))
@click.option("--chat", is_flag=True,
              help=N_("A template that does not open <think> (like Qwen3-4B, not Thinking-2507)."))
@click.option("--out", type=click.Path(file_okay=False), help=N_("Folder to write; default: the cache."))
def build_model(shape, chat, out):
    from ..runtime import modelbuild

    click.echo(modelbuild.build(shape, opens_think=not chat, dest=out))

@group("skill", help=N_("The grpo-skill skill for AI coding assistants: SKILL.md and its references. "
                              "`grpo-skill skill path` prints where this installation's SKILL.md is."))
def skill_group():
    pass


@skill_group.command("path", help=N_("Print the path of this installation's SKILL.md (read it, or point an assistant "
                                     "at it); its references/ folder is beside it."))
@click.option("--lang", type=LanguageChoice(), show_default=N_("the CLI's language"),
              help=N_("The English skill (grpo-skill) or its Chinese twin (grpo-skill-zh-cn)."))
def skill_path(lang):
    from ..scaffold import skillfiles

    files = skillfiles.skill_files(lang or i18n.current())
    click.echo(str(files[skillfiles.SKILL_FILE]))


@skill_group.command("install", help=N_(
    "Link the skill into DEST/.claude/skills/ (Claude Code) and DEST/.agents/skills/ (other assistants), so that "
    "upgrading grpo-skill upgrades the skill. DEST is a project folder (default: the current one); "
    "--dest ~ makes it available in every project."))
@click.option("--dest", type=click.Path(file_okay=False), show_default=N_("the current folder"),
              help=N_("The folder that holds .claude/ and .agents/."))
@click.option("--lang", type=LanguageChoice(), show_default=N_("the CLI's language"),
              help=N_("Install the English skill (grpo-skill) or its Chinese twin (grpo-skill-zh-cn)."))
@click.option("--copy", is_flag=True, help=N_("Copy the files instead of linking (where links are not possible)."))
@click.option("--force", is_flag=True, help=N_("Replace a copy that differs from this one, or a link elsewhere."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def skill_install(dest, lang, copy, force, as_json):
    from ..scaffold import skillfiles

    installed = skillfiles.install(dest, lang or i18n.current(), copy=copy, force=force)
    result = {"name": installed.name, "lang": installed.lang, "source": str(installed.source),
              "files": installed.files,
              "places": [{"path": str(p.path), "mode": p.mode, "status": p.status} for p in installed.places],
              "removed": [str(path) for path in installed.removed], "note": installed.note}
    messages = {
        ("installed", "link"): N_("{path}: linked to {source}"),
        ("replaced", "link"): N_("{path}: replaced by a link to {source}"),
        ("unchanged", "link"): N_("{path}: already links to {source}"),
        ("installed", "copy"): N_("{path}: copied ({count} files)"),
        ("replaced", "copy"): N_("{path}: replaced by a copy ({count} files)"),
        ("unchanged", "copy"): N_("{path}: already holds this version ({count} files)"),
    }

    def text(data):
        for place in data["places"]:
            click.echo(_(messages[place["status"], place["mode"]]).format(
                path=place["path"], source=data["source"], count=len(data["files"])))
        for path in data["removed"]:
            click.echo(_("{path}: removed (the other language's skill)").format(path=path))
        if data["note"]:
            click.echo(_("note: {note}").format(note=data["note"]), err=True)

    emit(result, as_json, text)


VERBS = (build_model, skill_group)
