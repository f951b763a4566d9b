"""The grpo-skill command line. Heavy libraries (torch, TRL, Unsloth) are imported only by the verbs that
need them, so `grpo-skill --help` and the listings start fast.

Every message is English in the source and translated through gettext (grpo_skill.i18n): help texts are
marked with N_() and translated when shown, in the language of `--lang` (before the command) or the locale.
"""

from __future__ import annotations

import sys

import click

from .core import i18n
from .core.i18n import LANGS, N_, _
from .console import Group, _set_debug, _set_language, emit, fail, table, warn_broken_plugins


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]},
             help=N_("Set up GRPO training of LLMs with TRL and Unsloth: scaffold projects, list presets and rewards."))
@click.version_option(package_name="grpo-skill", help=N_("Show the version and exit."))
@click.option("--lang", type=click.Choice(LANGS), is_eager=True, expose_value=False, callback=_set_language,
              help=N_("Language of messages; default: the locale's (LANG=zh_CN.UTF-8 gives zh-CN), else en."))
@click.option("--debug", is_flag=True, expose_value=False, callback=_set_debug,
              help=N_("Show the full traceback of an error (also: GRPO_SKILL_DEBUG=1)."))
def main():
    pass


@main.command(help=N_("Create a runnable GRPO project at PATH (e.g. my-run or ~/runs/my-run) from a preset; "
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
@click.option("--lang", type=click.Choice(LANGS), show_default=N_("the CLI's language"),
              help=N_("Language of the project's README and comments."))
@click.option("--output-dir", "-o", default=".", type=click.Path(file_okay=False),
              help=N_("The folder PATH is relative to."))
@click.option("--force", is_flag=True, help=N_("Write into a folder that is not empty; files you changed since "
                                               "they were generated are backed up first, other files are kept."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def new(path, preset, rewards, backend, model, dataset, prompt_column, answer_column, set_items, param_items, lang,
        output_dir, force, as_json):
    from .scaffold import settings as given
    from .scaffold.generator import render_project

    lang = lang or i18n.current()
    warn_broken_plugins()
    rendered = render_project(path, output_dir, force=force, preset_name=preset, reward_options=rewards,
                              backend=backend, model=model, lang=lang, dataset=dataset, prompt_column=prompt_column,
                              settings=given.parse(set_items, param_items), answer_column=answer_column)
    target, files = rendered.target, rendered.files
    from .scaffold.update import start_repository

    repository = start_repository(target, files)
    result = {"project": str(target.resolve()), "preset": preset, "lang": lang, "files": files,
              "backup_dir": str(rendered.backup_dir) if rendered.backup_dir else None,
              "backed_up": rendered.backed_up, "repository": repository, "notes": rendered.notes}

    def text(data):
        click.echo(_("Created {project} ({count} files, preset {preset}).").format(
            project=data["project"], count=len(files), preset=preset))
        for note in rendered.notes:
            click.echo(_("note: {note}").format(note=note))
        if rendered.backed_up:
            click.echo(_("Replaced files you had changed; your versions are in {folder}: {files}").format(
                folder=rendered.backup_dir, files=", ".join(rendered.backed_up)), err=True)
        click.echo(_("Next:  cd {project} && python train.py").format(project=target))
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


@main.command(help=N_(
    "Bring PROJECT (default: the current folder) to this grpo-skill's template with a three-way merge: your "
    "edits stay, the template's changes come in, and what cannot be merged is marked inline. The project must "
    "be committed in git; review the result with git diff."))
@click.argument("project", default=".", type=click.Path(file_okay=False))
@click.option("--dry-run", is_flag=True, help=N_("Say what would change, and change nothing."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def update(project, dry_run, as_json):
    from .scaffold.update import update as update_project

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


@main.command(help=N_("List the model presets."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def presets(as_json):
    from .core import plugins

    from dataclasses import asdict

    from .core.registry import grpo_summary

    rows = [
        {"name": name, "model": reg.item.model_id, "max_seq_length": reg.item.max_seq_length,
         "load_in_4bit": reg.item.load_in_4bit, "template_opens_think": reg.item.template_opens_think,
         "grpo_summary": grpo_summary(reg.item.grpo), "grpo": dict(reg.item.grpo),
         "lora": {**asdict(reg.item.lora), "target_modules": list(reg.item.lora.target_modules)},
         "chat_template_kwargs": dict(reg.item.chat_template_kwargs),
         "rewards": ", ".join(f"{n}:{w:g}" for n, w in reg.item.rewards), "plugin": reg.plugin,
         "description": reg.item.description}
        for name, reg in sorted(plugins.presets().items())
    ]
    warn_broken_plugins()
    emit(rows, as_json, lambda data: table(data, ["name", "model", "max_seq_length", "grpo_summary", "rewards",
                                                  "plugin"]))


@main.group("rewards", invoke_without_command=True, help=N_("List the reward functions."))
@click.option("--project", type=click.Path(exists=True, file_okay=False),
              help=N_("Also list this project's rewards.py."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
@click.pass_context
def rewards(ctx, project, as_json):
    ctx.obj = {"project": project}  # `rewards --project DIR try ...` works as `rewards try --project DIR ...`
    if ctx.invoked_subcommand is not None:
        return
    from .core import plugins

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


@rewards.command("try", help=N_(
    "Score completions with the real reward code: each reward's score, the weighted total and the group's "
    "advantages as GRPO computes them, so that reward hacking and zero spread show before any GPU hour."))
@click.argument("specs", nargs=-1, required=True, metavar="NAME[:WEIGHT]...")
@click.option("--completion", "-c", "completions", multiple=True, metavar="TEXT",
              help=N_("A completion to score; repeat it for a group."))
@click.option("--file", "samples_file", type=click.Path(dir_okay=False),
              help=N_("A JSONL file of samples: {\"completion\": ..., \"prompt\": ..., other columns} per line."))
@click.option("--column", "columns", multiple=True, metavar="KEY=VALUE",
              help=N_("A dataset column with the same text for every completion, e.g. answer=42."))
@click.option("--prompt", default="", help=N_("The prompt the completions answer."))
@click.option("--param", "params", multiple=True, metavar="NAME.KEY=VALUE",
              help=N_("A reward param, e.g. length.too_short=3 (a TOML value; text as is)."))
@click.option("--tokenizer", metavar="tiny|PATH",
              help=N_("Tokenizer for completion_ids (tiny: the locally built one); token-based rewards need one."))
@click.option("--preset", help=N_("Build the rewards for this preset (whether its template opens <think>, its "
                                  "max_completion_length)."))
@click.option("--project", type=click.Path(exists=True, file_okay=False),
              help=N_("Score as this project would: its rewards.py, its preset with its [grpo], its rewards' params "
                      "and, for a local model, its tokenizer."))
@click.option("--scale-rewards", default="group", show_default=True, type=click.Choice(["group", "batch", "none"]),
              help=N_("GRPOConfig.scale_rewards: divide advantages by the group's std, the batch's, or not at all."))
@click.option("--aggregation", default="sum_then_normalize", show_default=True,
              type=click.Choice(["sum_then_normalize", "normalize_then_sum"]),
              help=N_("GRPOConfig.multi_objective_aggregation."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
@click.pass_context
def rewards_try(ctx, specs, completions, samples_file, columns, prompt, params, tokenizer, preset, project,
                scale_rewards, aggregation, as_json):
    from .advisors import rewardtry

    samples = rewardtry.gather_samples(completions, samples_file, columns, prompt)
    result = rewardtry.try_rewards(
        specs, samples, params_items=params, tokenizer=tokenizer, preset=preset,
        project=project or (ctx.obj or {}).get("project"), scale_rewards=scale_rewards, aggregation=aggregation)
    emit(result, as_json, rewardtry.render_try)


@rewards.command("show", help=N_("A reward's description, params with their defaults, a config.toml snippet and an "
                                 "example to try."))
@click.argument("name")
@click.option("--project", type=click.Path(exists=True, file_okay=False),
              help=N_("Also look in this project's rewards.py."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
@click.pass_context
def rewards_show(ctx, name, project, as_json):
    from .advisors import rewardtry

    shown = rewardtry.show_reward(name, project=project or (ctx.obj or {}).get("project"))
    emit(shown, as_json, rewardtry.render_show)


@main.command("plugins", help=N_("List the loaded plugins and the hooks each implements."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def plugins_command(as_json):
    from dataclasses import asdict

    from .core import plugins

    warn_broken_plugins()
    rows = [asdict(info) for info in plugins.plugin_infos()]
    for row in rows:
        row["hooks"] = list(row["hooks"])
    emit(rows, as_json, lambda data: table(
        [{**row, "hooks": ", ".join(row["hooks"]), "error": row["error"] or ""} for row in data],
        ["name", "source", "version", "hooks", "error"],
    ))


@main.group("plugin", help=N_("Write your own plugins: grpo-skill plugin new NAME."))
def plugin_group():
    pass


@plugin_group.command("new", help=N_(
    "Create a reward-plugin package: pyproject with the grpo_skill entry point, the reward NAME with params, "
    "tests against the reward contract, README in English and Chinese. Install it with pip install -e ."))
@click.argument("name")
@click.option("--output-dir", "-o", default=".", type=click.Path(file_okay=False),
              help=N_("Where to create the package folder."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def plugin_new(name, output_dir, as_json):
    from .scaffold.plugin import new_plugin

    target, files = new_plugin(name, output_dir)
    result = {"package": str(target.resolve()), "files": files}

    def text(data):
        click.echo(_("Created {package} ({count} files).").format(package=data["package"], count=len(files)))
        click.echo(_("Next:  cd {package} && pip install -e '.[test]' && pytest").format(package=target))

    emit(result, as_json, text)


@main.command(help=N_("Validate a project's config.toml, its dataset and model folder without loading any model."))
@click.argument("project", default=".", type=click.Path(file_okay=False))
@click.option("--rewards/--no-rewards", "run_rewards", default=True, show_default=True,
              help=N_("Run the project's rewards.py and build every reward, which checks their params as train.py "
                      "would (a local judge loads its model); --no-rewards only reads rewards.py."))
def check(project, run_rewards):
    from .core import project as projects
    from .scaffold.update import refuse_conflicts

    refuse_conflicts(project)  # before config.toml is read: a marker there is not a TOML error to fix
    loaded = projects.load(project, rewards=run_rewards)
    warn_broken_plugins()
    projects.check_hub_access(loaded, probe=False)
    if run_rewards:
        loaded.build_rewards(tokenizer=None)  # each factory checks its params; token counts need no tokenizer yet
    click.echo(_("{path}: OK (preset {preset}, rewards {rewards})").format(
        path=loaded.path, preset=loaded.model["preset"],
        rewards=", ".join(f"{c.name}:{c.weight:g}" for c in loaded.rewards)))
    # only what config.toml takes from the unrun rewards.py is left unchecked; nothing to say when it takes nothing
    if loaded.unchecked_rewards:
        click.echo(_("rewards.py names its rewards in code, so {names} could not be checked without running it; "
                     "`grpo-skill check` without --no-rewards runs it").format(
            names=", ".join(map(repr, loaded.unrun_rewards + loaded.unchecked_rewards))), err=True)
    elif loaded.unrun_rewards:
        click.echo(i18n.ngettext(
            "reward {names} is from rewards.py, which was not run, so its params were not checked; "
            "`grpo-skill check` without --no-rewards checks them",
            "rewards {names} are from rewards.py, which was not run, so their params were not checked; "
            "`grpo-skill check` without --no-rewards checks them", len(loaded.unrun_rewards)).format(
            names=", ".join(map(repr, loaded.unrun_rewards))), err=True)


@main.command(help=N_("Before training: sample completions for a few of PROJECT's prompts with its model and "
                       "rewards, and say whether GRPO can learn from them (clipped and closed-thinking ratios, "
                       "reward spread, lengths, speed) and what to change. PROJECT: a project folder or its "
                       "config file."))
@click.argument("project", default=".", type=click.Path())
@click.option("--prompts", default=4, show_default=True, type=click.IntRange(min=1),
              help=N_("How many of the dataset's prompts to sample (num_generations completions each)."))
@click.option("--model", metavar="PATH_OR_ID", help=N_("Probe this model instead of model.name (a local folder or "
                                                        "a hub id), as train.py's --model."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def probe(project, prompts, model, as_json):
    from .advisors import probe as probing

    result = probing.run(project, prompts=prompts, model=model)
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
    except run_metrics.MetricsError as error:
        fail(str(error))
    summary = run_metrics.reward_trend(rows)
    if plot:
        summary["plot"] = str(run_metrics.plot_metrics(rows, plot))
    summary["health"] = health.warnings_in(rows)
    logged = summary["steps"] > 0  # completions of an earlier run may outlive an emptied metrics.jsonl
    summary["latest_completions"] = traces.latest(run_dir, show_completions) if show_completions and logged else []
    if not logged:
        click.echo(_("warning: {file} holds no training step yet").format(file=run_metrics.METRICS_FILE), err=True)
    elif summary.get("steps_without_reward"):
        click.echo(i18n.ngettext(
            "warning: {count} step logged no reward (NaN: every completion was left out, each reward gave None); "
            "the means leave it out",
            "warning: {count} steps logged no reward (NaN: every completion was left out, each reward gave None); "
            "the means leave them out", summary["steps_without_reward"]).format(
            count=summary["steps_without_reward"]), err=True)

    def signed(value) -> str:
        return f"{value:+.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"

    def text(data):
        click.echo("\n".join(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}"
                              for key, value in data.items() if key not in ("health", "latest_completions")))
        for warning in data["health"]:
            click.echo(_("warning (step {step}): {message} -> {advice}").format(**warning))
        if data["latest_completions"]:
            click.echo(_("latest completions (step {step}, from {file}):").format(
                step=data["latest_completions"][0]["step"], file=traces.TRACES_FILE))
        for trace in data["latest_completions"]:  # a field left out (a hand-edited file) shows as "-"
            rewards = trace.get("rewards")
            scores = ", ".join(f"{name} {signed(score)}"
                               for name, score in (rewards.items() if isinstance(rewards, dict) else ()))
            click.echo(_("- reward {reward} ({scores}), advantage {advantage}:").format(
                reward=signed(trace.get("reward")), scores=scores, advantage=signed(trace.get("advantage"))))
            click.echo("  " + " ".join(str(trace.get("completion", "")).split())[:300])

    emit(summary, as_json, text)


MAX_PLANNED_GPUS = 64  # more than one machine holds: the project's accelerate configs do not span machines


@main.command(help=N_("Estimate a run's peak GPU memory and seconds per step from its settings, without a GPU."))
@click.argument("project", required=False, type=click.Path(file_okay=False))
@click.option("--preset", help=N_("Plan a preset's settings instead of a project's."))
@click.option("--backend", type=click.Choice(["unsloth", "trl"]),
              help=N_("Default: the project's (auto counts as unsloth); unsloth for a preset."))
@click.option("--gpu-memory", type=click.FloatRange(min=0, min_open=True, max=1e6), metavar="GIB", help=N_("The GPU's memory; default: nvidia-smi's, if any."))
@click.option("--prompt-tokens", type=click.IntRange(min=1), help=N_("The longest prompt in tokens; default: guessed from the dataset."))
@click.option("--gpus", type=click.IntRange(min=1), metavar="N",
              help=N_("Data-parallel GPUs (accelerate launch --num_processes N); default 1."))
@click.option("--accelerate-config", type=click.Path(dir_okay=False), metavar="FILE",
              help=N_("Take the number of GPUs from an accelerate config file (e.g. accelerate/ddp.yaml)."))
@click.option("--set", "set_items", multiple=True, metavar="SECTION.KEY=VALUE", help=N_(
    "What if: plan with this config.toml setting instead (e.g. grpo.max_completion_length=4096); nothing is written."))
@click.option("--gpu", metavar="NAME", help=N_(
    "Scale the times (measured on an H200) to this card, e.g. 4090, L4, A10, A100-80; default: the detected GPU."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def plan(project, preset, backend, gpu_memory, prompt_tokens, gpus, accelerate_config, set_items, gpu, as_json):
    from .advisors import gpus as cards
    from .advisors import plan as planner
    from .scaffold import settings as given

    if project and preset:
        fail(_("give a project folder or --preset, not both"))
    if gpus and accelerate_config:
        fail(_("give --gpus or --accelerate-config, not both"))
    if gpu_memory is not None and gpu_memory != gpu_memory:  # NaN gets through FloatRange
        fail(_("--gpu-memory: give the GPU's memory in GiB, e.g. 80"))
    card = cards.card_for(gpu) if gpu else None
    detected = None if gpu else cards.detected_name()
    what_if = given.parse_sets(set_items)
    processes = planner.processes_from_accelerate_config(accelerate_config) if accelerate_config else gpus or 1
    if processes > MAX_PLANNED_GPUS:  # the project's accelerate configs launch on one machine
        fail(_("{count} GPUs: plan estimates data-parallel training on one machine, at most {most} GPUs").format(
            count=processes, most=MAX_PLANNED_GPUS))
    if preset and set_items:
        settings, about = planner.plan_preset(preset, what_if, backend, prompt_tokens, processes)
    elif preset:
        settings, about = planner.from_preset(preset, backend, prompt_tokens, processes)
    else:
        settings, about = planner.from_project(project or ".", backend, prompt_tokens, processes,
                                               what_if.dotted() or None)
        about["set"] = what_if.dotted()
    card = card or (cards.find(detected) if detected else None)
    if gpu_memory is None:
        gpu_memory = card.memory_gib if gpu else planner.gpu_memory_gib()
    result = planner.plan(settings, about, gpu_memory,
                          cards.scaled_calibration(card, planner.CALIBRATION) if card else None)
    if card:
        result["gpu"] = {**cards.describe(card), "detected": not gpu}
    elif detected:
        result["gpu"] = {"unknown": detected}
    emit(result, as_json, lambda data: click.echo(planner.render_text(data)))


@main.command("build-model",
              help=N_("Build a random-weight Qwen3 and its tokenizer locally (no download); print its folder."))
@click.option("--shape", default="tiny", show_default=True, type=click.Choice(["tiny", "qwen3-4b"]),
              help=N_("tiny: trains on a CPU; qwen3-4b: Qwen3-4B's exact shape, random weights."))
@click.option("--chat", is_flag=True,
              help=N_("A template that does not open <think> (like Qwen3-4B, not Thinking-2507)."))
@click.option("--out", type=click.Path(file_okay=False), help=N_("Folder to write; default: the cache."))
def build_model(shape, chat, out):
    from .runtime import modelbuild

    click.echo(modelbuild.build(shape, opens_think=not chat, dest=out))


@main.command(help=N_(
    "Check that this environment can train: Python, torch, CUDA and GPUs, the versions grpo-skill is tested "
    "with and known-bad combinations, the model cache, disk space, plugins, git. Exits 1 on a blocker. With "
    "PROJECT, the disk check is for that project's model: what downloading it takes, nothing when it is cached."))
@click.argument("project", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def doctor(project, as_json):
    from .advisors import doctor as checks

    facts = checks.collect(project)
    problems = checks.diagnose(facts)
    blockers = sum(problem["level"] == checks.BLOCKER for problem in problems)

    def text(data):
        facts = data["facts"]
        torch = facts["torch"]
        click.echo(_("grpo-skill {version}, Python {python} ({executable})").format(
            version=facts["grpo_skill"], python=facts["python"]["version"],
            executable=facts["python"]["executable"]))
        if torch["imported"]:
            click.echo(_("torch {version}: CUDA {cuda}").format(
                version=facts["packages"].get("torch"),
                cuda=torch["cuda_version"] if torch["cuda"] else _("not available")))
        for index, device in enumerate(torch["devices"]):
            click.echo(_("GPU {index}: {name}, {total} GiB ({free} GiB free), compute {capability}").format(
                index=index, **device))
        table([{"package": name, "installed": version or "-",
                "tested": facts["tested"].get(name, {}).get("spec", "")}
               for name, version in sorted(facts["packages"].items())], ["package", "installed", "tested"])
        hub = facts["hub"]
        click.echo(_("model cache: {cache} ({free} GiB free), offline {offline}, token {token}").format(
            cache=hub["cache"], free=facts["disk"]["hub_cache_free_gib"],
            offline=_("yes") if hub["offline"] else _("no"), token=_("yes") if hub["token"] else _("no")))
        click.echo(_("plugins: {list}").format(list=", ".join(p["name"] + (" (!)" if p["error"] else "")
                                                             for p in facts["plugins"])))
        click.echo(_("git: {version}").format(version=facts["git"] or _("not installed")))
        model = facts.get("model")
        if model:
            where = (_("local") if model["local"] else _("in the cache") if model["cached"] else
                     _("to download, ~{gib} GiB").format(gib=model["download_gib"]) if model["download_gib"] else
                     _("to download, size unknown"))
            click.echo(_("project model: {name} ({where})").format(name=model["name"], where=where))
        for problem in data["problems"]:
            mark = "✗" if problem["level"] == checks.BLOCKER else "!"
            click.echo(f"{mark} {problem['what']}")
            click.echo("  " + _("fix: {fix}").format(fix=problem["fix"]))
        summary = (N_("{blockers} blocker(s), {warnings} warning(s): fix the blockers before training.")
                   if blockers else N_("Ready to train ({warnings} warning(s))."))
        click.echo(_(summary).format(blockers=blockers, warnings=len(data["problems"]) - blockers))

    emit({"facts": facts, "problems": problems, "ok": not blockers}, as_json, text)
    if blockers:
        sys.exit(1)


@main.group("skill", help=N_("The grpo-skill skill for AI coding assistants: SKILL.md and its references. "
                              "`grpo-skill skill path` prints where this installation's SKILL.md is."))
def skill_group():
    pass


@skill_group.command("path", help=N_("Print the path of this installation's SKILL.md (read it, or point an assistant "
                                     "at it); its references/ folder is beside it."))
@click.option("--lang", type=click.Choice(LANGS), show_default=N_("the CLI's language"),
              help=N_("The English skill (grpo-skill) or its Chinese twin (grpo-skill-zh-cn)."))
def skill_path(lang):
    from .scaffold import skillfiles

    files = skillfiles.skill_files(lang or i18n.current())
    click.echo(str(files[skillfiles.SKILL_FILE]))


@skill_group.command("install", help=N_(
    "Link the skill into DEST/.claude/skills/ (Claude Code) and DEST/.agents/skills/ (other assistants), so that "
    "upgrading grpo-skill upgrades the skill. DEST is a project folder (default: the current one); "
    "--dest ~ makes it available in every project."))
@click.option("--dest", type=click.Path(file_okay=False), show_default=N_("the current folder"),
              help=N_("The folder that holds .claude/ and .agents/."))
@click.option("--lang", type=click.Choice(LANGS), show_default=N_("the CLI's language"),
              help=N_("Install the English skill (grpo-skill) or its Chinese twin (grpo-skill-zh-cn)."))
@click.option("--copy", is_flag=True, help=N_("Copy the files instead of linking (where links are not possible)."))
@click.option("--force", is_flag=True, help=N_("Replace a copy that differs from this one, or a link elsewhere."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def skill_install(dest, lang, copy, force, as_json):
    from .scaffold import skillfiles

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




if __name__ == "__main__":
    sys.exit(main())
