"""The verbs for a project's life: `new` makes it, `update` merges a newer template into it, `check` validates it
without loading a model."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from ..core import i18n
from ..core.i18n import N_, _
from ..console import LanguageChoice, command, emit, warn_broken_plugins


@command(help=N_("Create a runnable GRPO project at PATH (e.g. my-run or ~/runs/my-run) from a preset; "
                      "the last part of PATH is the project's name."))
@click.argument("path")
@click.option("--preset", "-p", default="standard", show_default=True, help=N_("See `grpo-skill presets`."))
@click.option("--reward", "-r", "rewards", multiple=True, metavar="NAME[:WEIGHT]",
              help=N_("A reward and its weight; repeat for several. Default: the preset's."))
@click.option("--backend", default="auto", show_default=True, type=click.Choice(["auto", "unsloth", "trl"]),
              help=N_("auto: Unsloth when a CUDA GPU and unsloth are there, else TRL + peft."))
@click.option("--model", help=N_("A hub id or a local model folder instead of the preset's model."))
@click.option("--dataset", type=click.Path(dir_okay=False),
              help=N_("Your prompts (.jsonl/.json/.csv/.parquet), copied into the project; default: sample prompts."))
@click.option("--prompt-column", default="prompt", show_default=True, help=N_("The dataset's column of prompts."))
@click.option("--answer-column", metavar="COL", help=N_(
    "The dataset's column of gold answers, read by every reward that checks answers (accuracy, cosine_length...); "
    "with the preset's rewards, a correctness reward is added on it."))
@click.option("--set", "set_items", multiple=True, metavar="SECTION.KEY=VALUE", help=N_(
    "Any config.toml setting, e.g. grpo.max_completion_length=1024 (a TOML value; repeat for several)."))
@click.option("--param", "param_items", multiple=True, metavar="REWARD.PARAM=VALUE", help=N_(
    "A reward's param, e.g. cosine_length.max_len=300 (a TOML value; repeat for several)."))
@click.option("--lang", type=LanguageChoice(), show_default=N_("the CLI's language"),
              help=N_("Language of the project's README, comments and sample data; zh-CN also sets the rewards' "
                      "params that read Chinese."))
@click.option("--output-dir", "-o", default=".", type=click.Path(file_okay=False),
              help=N_("The folder PATH is relative to."))
@click.option("--force", is_flag=True, help=N_("Write into a folder that is not empty; files you changed since "
                                               "they were generated are backed up first, other files are kept."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def new(path, preset, rewards, backend, model, dataset, prompt_column, answer_column, set_items, param_items, lang,
        output_dir, force, as_json):
    from ..scaffold import settings as given
    from ..scaffold.generator import render_project, template_rewards

    # the options with a default that this command line gives all the same: their values are chosen, not defaults
    context = click.get_current_context()
    given_options = frozenset(name for name in ("lang", "backend", "prompt_column")
                              if context.get_parameter_source(name) not in (None, ParameterSource.DEFAULT))
    lang = lang or i18n.current()
    warn_broken_plugins()
    with template_rewards():  # --reward and --param may name a reward of the project's own rewards.py
        rendered = render_project(path, output_dir, force=force, preset_name=preset, reward_options=rewards,
                                  backend=backend, model=model, lang=lang, dataset=dataset,
                                  prompt_column=prompt_column, settings=given.parse(set_items, param_items),
                                  answer_column=answer_column, given_options=given_options)
    target, files = rendered.target, rendered.files
    from ..scaffold.update import start_repository

    repository = start_repository(target, files)
    result = {"project": str(target.resolve()), "preset": preset, "lang": lang, "files": files,
              "backup_dir": str(rendered.backup_dir) if rendered.backup_dir else None,
              "backed_up": rendered.backed_up, "repository": repository, "notes": rendered.notes,
              "warnings": rendered.warnings}

    def text(data):
        click.echo(_("Created {project} ({count} files, preset {preset}).").format(
            project=data["project"], count=len(files), preset=preset))
        for note in rendered.notes:
            click.echo(_("note: {note}").format(note=note))
        for warning in rendered.warnings:
            click.echo(_("warning: {problem}").format(problem=warning), err=True)
        if rendered.backed_up:
            click.echo(_("Replaced files you had changed; your versions are in {folder}: {files}").format(
                folder=rendered.backup_dir, files=", ".join(rendered.backed_up)), err=True)
        click.echo(_("Next:  cd {project} && python train.py").format(project=shlex.quote(str(target))))
        if repository == "kept":
            click.echo(_("note: the project's git repository is kept; review the changes with git diff and commit "
                         "them before `grpo-skill update`"), err=True)
        elif repository == "inside":
            click.echo(_("note: the project is inside another git repository; commit it there before "
                         "`grpo-skill update`"), err=True)
        elif repository == "no-git":
            click.echo(_("note: git is not installed, so the project is not a git repository; "
                         "`grpo-skill update` will need one"), err=True)
        elif repository == "failed":
            click.echo(_("note: git could not commit the project; commit it yourself before `grpo-skill update`"),
                       err=True)

    emit(result, as_json, text)


@command(help=N_(
    "Bring PROJECT (default: the current folder) to this grpo-skill's template with a three-way merge: your "
    "edits stay, the template's changes come in, and what cannot be merged is marked inline. The project must "
    "be committed in git; review the result with git diff."))
@click.argument("project", default=".", type=click.Path(file_okay=False))
@click.option("--dry-run", is_flag=True, help=N_("Say what would change, and change nothing."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def update(project, dry_run, as_json):
    from ..scaffold.update import update as update_project

    result = update_project(project, dry_run=dry_run)
    data = {"project": str(result.project.resolve()), "from": result.old, "to": result.new, "status": result.status,
            "dry_run": dry_run, "changed": result.changed, "conflicts": result.conflicts,
            "first_conflict": result.first_conflict}

    def text(data):
        if data["status"] == "unchanged":
            click.echo(_("{project} is up to date (template {version}).").format(
                project=data["project"], version=data["to"]))
            return
        title = (N_("Would update {project} from template {old} to {new}:") if dry_run
                 else N_("Updated {project} from template {old} to {new}:"))
        click.echo(_(title).format(project=data["project"], old=data["from"], new=data["to"]))
        for path in data["changed"]:
            click.echo(f"  {'!' if path in data['conflicts'] else ' '} {path}")
        if data["conflicts"] and data["first_conflict"]:
            click.echo(_("{count} file(s) with conflicts (marked '!'), the first at {where}: resolve the <<<<<<< "
                         "lines, then commit.").format(count=len(data["conflicts"]), where=data["first_conflict"]),
                       err=True)
        elif data["conflicts"]:
            click.echo(_("{count} file(s) with conflicts (marked '!'): resolve the <<<<<<< lines, then commit.").format(
                count=len(data["conflicts"])), err=True)
        elif not dry_run:
            click.echo(_("Review with `git diff`, then commit."))

    emit(data, as_json, text)
    if result.conflicts and not dry_run:
        sys.exit(1)

def checked(project, run_rewards: bool = True, gpus: int | None = None, *, text: str | None = None,
            given: tuple[str, ...] = (), derived: dict[str, str] | None = None, prompt_room: int | None = None):
    """What `check` checks, for `check` and `set`: (the loaded project, `check --json`'s data). ``text``: config.toml
    as `set` would write it, checked in place of the file; ``given``: the keys `set` was given; ``derived``: those it
    changed on its own, with how; ``prompt_room``: the tokens the file left the prompts (project.load)."""
    from ..core import launch
    from ..core import project as projects
    from ..runtime import modelfiles

    loaded = projects.load(project, rewards=run_rewards, processes=gpus, text=text, given=given, derived=derived,
                           longest_prompt=modelfiles.longest_prompt, prompt_room=prompt_room)
    warn_broken_plugins()
    projects.check_hub_access(loaded, probe=False)
    if run_rewards:
        # each factory checks its params; token counts need no tokenizer yet. What they warn (code_tests where the
        # network cannot be cut) is among the warnings, as `new` says it
        loaded.build_rewards(tokenizer=None, warned=loaded.warnings)
        from ..runtime.golds import gold_warnings

        loaded.warnings.extend(gold_warnings(loaded))  # a gold answer no completion can match
    if loaded.sft is not None:
        from ..runtime import warmstart

        missing = warmstart.missing_examples(loaded)
        if missing:  # [sft] is optional: train.py runs without it
            loaded.warnings.append(loaded.said(("sft", "path"), _(
                "{path} does not exist: sft.py (the optional warm start) would stop there; train.py does not read "
                "it").format(path=missing)))
        else:
            warmstart.examples_file(loaded)  # sft.py's own check of its examples
    _refuse_others_output_folders(loaded)
    model_unchecked = modelfiles.check(loaded)  # what train.py checks with the tokenizer, and once the model has loaded
    # only what config.toml takes from the unrun rewards.py is left unchecked; nothing to say when it takes nothing
    unchecked = []
    if loaded.unchecked_rewards:
        unchecked.append(_("rewards.py names its rewards in code, so {names} could not be checked without running it; "
                           "`grpo-skill check` without --no-rewards runs it").format(
            names=", ".join(map(repr, loaded.unrun_rewards + loaded.unchecked_rewards))))
    elif loaded.unrun_rewards:
        unchecked.append(i18n.ngettext(
            "reward {names} is from rewards.py, which was not run, so its params were not checked; "
            "`grpo-skill check` without --no-rewards checks them",
            "rewards {names} are from rewards.py, which was not run, so their params were not checked; "
            "`grpo-skill check` without --no-rewards checks them", len(loaded.unrun_rewards)).format(
            names=", ".join(map(repr, loaded.unrun_rewards))))
    if model_unchecked:
        unchecked.append(model_unchecked)
    if projects.dataset_on_the_hub(loaded):  # check reads local files only; downloading one is train.py's job
        columns = dict.fromkeys(column for _needs, column in projects.wanted_columns(loaded))
        unchecked.append(_("dataset {path!r} is a hub dataset, so its rows and columns ({columns}) were not checked; "
                           "train.py checks them once it has downloaded it").format(
            path=loaded.dataset["path"], columns=", ".join(columns)))
    data = {"ok": True, "config": str(Path(loaded.path).resolve()), "preset": loaded.model["preset"],
            "model": loaded.model["name"], "backend": loaded.model.get("backend", "auto"),
            "processes": gpus or launch.world_size(),
            "rewards": [{"name": c.name, "weight": c.weight, "params": c.params} for c in loaded.rewards],
            "rewards_run": run_rewards, "unchecked": unchecked, "warnings": loaded.warnings}
    return loaded, data


def _refuse_others_output_folders(loaded) -> None:
    """train.py and sft.py refuse an output folder that holds files of the user's and no run: check and set too."""
    from ..core import schema
    from ..runtime import resume

    wanted = [(("grpo", "output_dir"), loaded.grpo.get("output_dir"), "train.py", "outputs")]
    if loaded.sft is not None:
        wanted.append((("sft", "output_dir"), loaded.sft.get("output_dir"), "sft.py", "outputs/sft"))
    for loc, value, script, example in wanted:
        if not isinstance(value, str):
            continue
        others = resume.others_files(loaded.project_dir / value)
        if others:
            raise loaded.error(loc, _(
                "= {value}: {names} there are not a run's; {script} would refuse the folder (a run writes README.md, "
                "adapter, ... over files of the same name): name a new or empty folder, like {example!r}").format(
                value=schema.toml_value(value), names=", ".join(others[:3]) + (", ..." if len(others) > 3 else ""),
                script=script, example=example))


@command(help=N_("Validate a project's config.toml, its dataset and model folder without loading any model."))
@click.argument("project", default=".", type=click.Path())  # a folder, or its config file as set takes it
@click.option("--rewards/--no-rewards", "run_rewards", default=True, show_default=True,
              help=N_("Run the project's rewards.py and build every reward, which checks their params as train.py "
                      "would (a local judge loads its model); --no-rewards only reads rewards.py."))
@click.option("--gpus", type=click.IntRange(min=1), metavar="N",
              help=N_("Check it for a launch on N GPUs (accelerate launch --num_processes N): TRL's generation "
                      "batch counts every process.  [default: WORLD_SIZE, else 1]"))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON (a config that fails is still one "
                                                         "line on stderr and exit status 1)."))
def check(project, run_rewards, gpus, as_json):
    from ..core.project import config_path
    from ..scaffold.update import refuse_conflicts

    refuse_conflicts(config_path(project).parent)  # before config.toml is read: a marker there is no TOML error to fix
    loaded, data = checked(project, run_rewards, gpus)

    def text(data):
        click.echo(_("{path}: OK (preset {preset}, rewards {rewards})").format(
            path=loaded.path, preset=data["preset"],
            rewards=", ".join(f"{r['name']}:{r['weight']:g}" for r in data["rewards"])))
        for line in data["unchecked"]:
            click.echo(line, err=True)
        for line in data["warnings"]:
            click.echo(_("warning: {problem}").format(problem=line), err=True)

    emit(data, as_json, text)


@command("set", help=N_(
    "Change settings of an existing project's config.toml in place, its comments and layout kept: SECTION.KEY=VALUE "
    "and --param REWARD.PARAM=VALUE as `new --set` and `new --param` take them; --reward and --remove-reward change "
    "its [[rewards]] tables. The whole project is checked as `grpo-skill check` checks it before anything is "
    "written; a refusal leaves the file as it was."))
@click.argument("items", nargs=-1, metavar="SECTION.KEY=VALUE...")
@click.option("--param", "param_items", multiple=True, metavar="REWARD.PARAM=VALUE", help=N_(
    "A reward's param, e.g. cosine_length.max_len=300 (a TOML value; repeat for several); the reward must be one of "
    "the project's, or one that --reward adds."))
@click.option("--reward", "reward_items", multiple=True, metavar="NAME[:WEIGHT]", help=N_(
    "A reward's weight, e.g. thinking:2, as `new --reward` takes it; a reward the project does not list is added as "
    "a [[rewards]] table (weight 1 where none is given). Repeat for several."))
@click.option("--remove-reward", "remove_items", multiple=True, metavar="NAME", help=N_(
    "Remove the project's [[rewards]] table of NAME, its params with it; repeat for several."))
@click.option("--project", default=".", show_default=True, type=click.Path(),
              help=N_("The project folder, or its config file."))
@click.option("--dry-run", is_flag=True, help=N_("Say what would change, and change nothing."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def set_(items, param_items, reward_items, remove_items, project, dry_run, as_json):
    from ..core.errors import UserError, shown_path
    from ..core.project import config_path
    from ..scaffold import configedit
    from ..scaffold.update import refuse_conflicts

    if not items and not param_items and not reward_items and not remove_items:
        raise click.UsageError(_("give at least one SECTION.KEY=VALUE, --param REWARD.PARAM=VALUE, --reward "
                                 "NAME[:WEIGHT] or --remove-reward NAME, e.g. grpo-skill set "
                                 "grpo.max_completion_length=1024"))
    refuse_conflicts(config_path(project).parent)  # a conflict marker is not a value to change
    edit = configedit.prepare(project, items, param_items, reward_items, remove_items)
    try:
        _loaded, checks = checked(edit.path, text=edit.text, given=edit.given, derived=edit.derived,
                                  prompt_room=edit.prompt_room)
    except UserError as error:
        raise configedit.refused(error, edit) from None
    written = edit.changed and not dry_run
    if written:
        configedit.write(edit)
    data = {"config": str(edit.path.resolve()), "dry_run": dry_run, "written": written,
            "changes": [{"key": change.key, "old": change.old, "new": change.new, "added": change.added,
                         "removed": change.removed} for change in edit.changes],
            "notes": edit.notes, "unchecked": checks["unchecked"], "warnings": checks["warnings"]}

    def text(data):
        path = shown_path(edit.path)
        if not edit.changed:
            click.echo(_("{path} already has these values; nothing to write.").format(path=path))
        elif dry_run:
            click.echo(_("Would change {path} (checked; nothing written):").format(path=path))
        else:
            click.echo(_("Changed {path} (checked as `grpo-skill check` checks it):").format(path=path))
        for change in edit.changes:
            click.echo("  " + configedit.shown_change(change))
        for note in edit.notes:
            click.echo(_("note: {note}").format(note=note))
        for line in data["unchecked"]:
            click.echo(line, err=True)
        for line in data["warnings"]:
            click.echo(_("warning: {problem}").format(problem=line), err=True)

    emit(data, as_json, text)


VERBS = (new, update, check, set_)
