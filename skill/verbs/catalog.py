"""The verbs that list what is installed: presets, rewards (with `rewards try` and `rewards show`), plugins, and
`plugin new`, which writes a new one."""

from __future__ import annotations

import shlex

import click

from ..core.i18n import N_, _
from ..console import command, emit, fail, group, table, warn_broken_plugins


@command(help=N_("List the model presets."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def presets(as_json):
    from ..core import plugins

    from dataclasses import asdict

    from ..core.registry import grpo_summary

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


@group("rewards", invoke_without_command=True, help=N_("List the reward functions."))
@click.option("--project", type=click.Path(exists=True, file_okay=False),
              help=N_("Also list this project's rewards.py."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
@click.pass_context
def rewards(ctx, project, as_json):
    ctx.obj = {"project": project}  # `rewards --project DIR try ...` works as `rewards try --project DIR ...`
    if ctx.invoked_subcommand is not None:
        return
    from ..core import plugins

    if project and plugins.register_project(project) is None:
        fail(_("{project} has no rewards.py, so it adds no rewards of its own; leave out --project to list the "
               "installed ones").format(project=project))
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
    "advantages as GRPO computes them, so that reward hacking and zero spread show before any GPU hour. With "
    "--project and no NAME, the project's own rewards with their weights; a listed NAME without a WEIGHT takes the "
    "project's."))
@click.argument("specs", nargs=-1, metavar="[NAME[:WEIGHT]]...")
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
    from ..advisors import rewardtry

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
    from ..advisors import rewardtry

    shown = rewardtry.show_reward(name, project=project or (ctx.obj or {}).get("project"))
    emit(shown, as_json, rewardtry.render_show)


@command("plugins", help=N_("List the loaded plugins and the hooks each implements."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def plugins_command(as_json):
    from dataclasses import asdict

    from ..core import plugins

    warn_broken_plugins()
    rows = [asdict(info) for info in plugins.plugin_infos()]
    for row in rows:
        row["hooks"] = list(row["hooks"])
    emit(rows, as_json, lambda data: table(
        [{**row, "hooks": ", ".join(row["hooks"]), "error": row["error"] or ""} for row in data],
        ["name", "source", "version", "hooks", "error"],
    ))


@group("plugin", help=N_("Write your own plugins: grpo-skill plugin new NAME."))
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
    from ..scaffold.plugin import new_plugin

    target, files = new_plugin(name, output_dir)
    result = {"package": str(target.resolve()), "files": files}

    def text(data):
        click.echo(_("Created {package} ({count} files).").format(package=data["package"], count=len(files)))
        click.echo(_("Next:  cd {package} && pip install -e '.[test]' && pytest").format(
            package=shlex.quote(str(target))))

    emit(result, as_json, text)


VERBS = (presets, rewards, plugins_command, plugin_group)
