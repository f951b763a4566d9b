"""The verbs that advise before or after a run and write none of the user's files: probe, metrics, plan, doctor."""

from __future__ import annotations

import sys

import click

from ..core import i18n
from ..core.i18n import N_, _
from ..console import command, emit, fail, table


@command(help=N_("Before training: sample completions for a few of PROJECT's prompts with its model and "
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
    from ..advisors import probe as probing

    result = probing.run(project, prompts=prompts, model=model)
    emit(result, as_json, lambda data: click.echo("\n".join(probing.report_lines(data))))


@command(help=N_("Summarise a run's metrics.jsonl: reward at the start and the end, training-health "
                       "warnings, and the latest completions from completions.jsonl."))
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--plot", type=click.Path(dir_okay=False),
              help=N_("Also draw reward and KL to this PNG (a .png name; a file already there is redrawn only if "
                      "this command drew it)."))
@click.option("--completions", "show_completions", default=3, show_default=True, type=click.IntRange(min=0),
              help=N_("How many of the latest step's completions to show (0: none)."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def metrics(run_dir, plot, show_completions, as_json):
    from ..runtime import health, traces
    from ..runtime import metrics as run_metrics

    plot_path = run_metrics.plot_target(plot) if plot else None
    try:
        rows = run_metrics.read_metrics(run_dir)
    except FileNotFoundError:
        fail(_("{run_dir} has no {file}; pass the run's output folder (e.g. outputs)").format(
            run_dir=run_dir, file=run_metrics.METRICS_FILE))
    summary = run_metrics.reward_trend(rows)
    if plot_path:
        summary["plot"] = str(run_metrics.plot_metrics(rows, plot_path))
    summary["health"] = health.warnings_in(rows, run_dir)
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


@command(help=N_("Estimate a run's peak GPU memory and seconds per step from its settings, without a GPU."))
@click.argument("project", required=False, type=click.Path())  # a folder, or its config file as set takes it
@click.option("--preset", help=N_("Plan a preset's settings instead of a project's."))
@click.option("--backend", type=click.Choice(["unsloth", "trl"]),
              help=N_("Default: the project's; \"auto\" (a preset's) as train.py takes it: unsloth where the unsloth "
                      "package is installed on this machine, else trl. Give it to plan another machine."))
@click.option("--gpu-memory", type=click.FloatRange(min=0, min_open=True, max=1e6), metavar="GIB",
              help=N_("The GPU's memory; default: nvidia-smi's, if any."))
@click.option("--prompt-tokens", type=click.IntRange(min=1),
              help=N_("The longest prompt in tokens; default: guessed from the dataset."))
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
    from ..runtime import gpus as cards
    from ..runtime import modelfiles
    from ..advisors import plan as planner
    from ..scaffold import settings as given

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

    def planned(unsloth: bool, tokens: int | None):
        """(settings, about), backend = "auto" taken as train.py takes it where unsloth is (is not) installed."""
        if preset and set_items:
            return planner.plan_preset(preset, what_if, backend, tokens, processes, unsloth)
        if preset:
            return planner.from_preset(preset, backend, tokens, processes, unsloth)
        settings, about = planner.from_project(project or ".", backend, tokens, processes, what_if.dotted() or None,
                                               unsloth, longest_prompt=modelfiles.longest_prompt)
        return settings, {**about, "set": what_if.dotted()}

    unsloth = planner.unsloth_installed()  # what train.py's backend = "auto" asks on this machine
    settings, about = planned(unsloth, prompt_tokens)
    # the same run where the unsloth package is (is not) installed: plan often runs on another machine than train.py
    # (its prompts measured again: a guessed length given as --prompt-tokens would be refused, not noted, there)
    other = (planned(not unsloth, prompt_tokens)[0]
             if about.get("backend_requested") == "auto" and processes == 1 else None)
    card = card or (cards.find(detected) if detected else None)
    if gpu_memory is None:
        gpu_memory = card.memory_gib if gpu else planner.gpu_memory_gib()
    result = planner.plan(settings, about, gpu_memory,
                          cards.scaled_calibration(card, planner.CALIBRATION) if card else None,
                          tunes_matmuls=card.tunes_matmuls if card else True, unsloth=unsloth, other=other,
                          backend_option=backend)
    if not preset:  # each setting offered as the command that writes it (with the what-if ones it was planned with)
        from ..core.commands import set_command

        for option in ([result["faster"]] if result.get("faster") else []) + result["changes"]:
            change = {key if "." in key else f"grpo.{key}": value for key, value in option["change"].items()}
            option["command"] = set_command({**what_if.dotted(), **change}, project or ".")
    if card:
        result["gpu"] = {**cards.describe(card), "detected": not gpu}
    elif detected:
        result["gpu"] = {"unknown": detected}
    emit(result, as_json, lambda data: click.echo(planner.render_text(data)))

@command(help=N_(
    "Check that this environment can train: Python, torch, CUDA and GPUs, the versions grpo-skill is tested "
    "with and known-bad combinations, the model cache, disk space, plugins, git. Exits 1 on a blocker. With "
    "PROJECT, the disk check is for that project's model: what downloading it takes, nothing when it is cached."))
@click.argument("project", required=False, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help=N_("Print the result as JSON."))
def doctor(project, as_json):
    from ..advisors import doctor as checks

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


VERBS = (probe, metrics, plan, doctor)
