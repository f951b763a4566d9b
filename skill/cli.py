"""The grpo-skill command line. Heavy libraries (torch, TRL, Unsloth) are imported only by the verbs that
need them, so `grpo-skill --help` and the listings start fast."""

from __future__ import annotations

import json
import sys

import click


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
        click.echo(f"warning: plugin {info.name!r} failed to load: {info.error}", err=True)


def table(rows: list[dict], columns: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    view = Table(*columns, show_lines=False)
    for row in rows:
        view.add_row(*(str(row.get(column, "")) for column in columns))
    Console(width=max(100, Console().width)).print(view)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="grpo-skill")
def main():
    """Set up GRPO training of LLMs with TRL and Unsloth: scaffold projects, list presets and rewards."""


@main.command()
@click.argument("name")
@click.option("--preset", "-p", default="standard", show_default=True, help="See `grpo-skill presets`.")
@click.option("--reward", "-r", "rewards", multiple=True, metavar="NAME[:WEIGHT]",
              help="A reward and its weight; repeat for several. Default: the preset's.")
@click.option("--backend", default="auto", show_default=True, type=click.Choice(["auto", "unsloth", "trl"]))
@click.option("--model", help="A hub id or a local model folder instead of the preset's model.")
@click.option("--lang", default="en", show_default=True, type=click.Choice(["en", "zh-CN"]),
              help="Language of the project's README and comments.")
@click.option("--output-dir", "-o", default=".", type=click.Path(file_okay=False), help="Where to create NAME.")
@click.option("--force", is_flag=True, help="Write into a folder that is not empty, overwriting same-named files.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def new(name, preset, rewards, backend, model, lang, output_dir, force, as_json):
    """Create a runnable GRPO project NAME from a preset."""
    from .generator import GenerateError, render

    try:
        target, files = render(name, output_dir, force=force, preset_name=preset, reward_options=rewards,
                               backend=backend, model=model, lang=lang)
    except GenerateError as error:
        fail(str(error))
    result = {"project": str(target.resolve()), "preset": preset, "files": files}

    def text(data):
        click.echo(f"Created {data['project']} ({len(files)} files, preset {preset}).")
        click.echo(f"Next:  cd {target} && python train.py")

    emit(result, as_json, text)


@main.command()
@click.option("--json", "as_json", is_flag=True)
def presets(as_json):
    """List the model presets."""
    from . import plugins

    rows = [
        {"name": name, "model": reg.item.model_id, "max_seq_length": reg.item.max_seq_length,
         "load_in_4bit": reg.item.load_in_4bit,
         "rewards": ", ".join(f"{n}:{w:g}" for n, w in reg.item.rewards), "plugin": reg.plugin,
         "description": reg.item.description}
        for name, reg in sorted(plugins.presets().items())
    ]
    warn_broken_plugins()
    emit(rows, as_json, lambda data: table(data, ["name", "model", "max_seq_length", "rewards", "plugin"]))


@main.command()
@click.option("--project", type=click.Path(exists=True, file_okay=False), help="Also list this project's rewards.py.")
@click.option("--json", "as_json", is_flag=True)
def rewards(project, as_json):
    """List the reward functions."""
    from . import plugins

    if project:
        plugins.register_project(project)
    rows = [
        {"name": name, "plugin": reg.plugin, "params": dict(reg.item.params), "description": reg.item.description}
        for name, reg in sorted(plugins.rewards().items())
    ]
    warn_broken_plugins()
    emit(rows, as_json, lambda data: table(data, ["name", "plugin", "description"]))


@main.command("plugins")
@click.option("--json", "as_json", is_flag=True)
def plugins_command(as_json):
    """List the loaded plugins and the hooks each implements."""
    from dataclasses import asdict

    from . import plugins

    rows = [asdict(info) for info in plugins.plugin_infos()]
    for row in rows:
        row["hooks"] = list(row["hooks"])
    emit(rows, as_json, lambda data: table(
        [{**row, "hooks": ", ".join(row["hooks"]), "error": row["error"] or ""} for row in data],
        ["name", "source", "version", "hooks", "error"],
    ))


@main.command()
@click.argument("project", default=".", type=click.Path(file_okay=False))
def check(project):
    """Validate a project's config.toml without loading any model."""
    from . import config

    try:
        loaded = config.load(project)
    except config.ConfigError as error:
        fail(str(error))
    click.echo(f"{loaded.path}: OK (preset {loaded.model['preset']}, rewards "
               f"{', '.join(f'{c.name}:{c.weight:g}' for c in loaded.rewards)})")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--plot", type=click.Path(dir_okay=False), help="Also draw reward and KL to this PNG.")
@click.option("--json", "as_json", is_flag=True)
def metrics(run_dir, plot, as_json):
    """Summarise a run's metrics.jsonl: reward at the start and the end."""
    from . import runtime

    try:
        rows = runtime.read_metrics(run_dir)
    except FileNotFoundError:
        fail(f"{run_dir} has no {runtime.METRICS_FILE}; pass the run's output folder (e.g. outputs)")
    summary = runtime.reward_trend(rows)
    if plot:
        summary["plot"] = str(runtime.plot_metrics(rows, plot))
    emit(summary, as_json, lambda data: click.echo(
        "\n".join(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}" for key, value in data.items())
    ))


@main.command("build-model")
@click.option("--shape", default="tiny", show_default=True, type=click.Choice(["tiny", "qwen3-4b"]))
@click.option("--chat", is_flag=True, help="A template that does not open <think> (like Qwen3-4B, not Thinking-2507).")
@click.option("--out", type=click.Path(file_okay=False), help="Folder to write; default: the cache.")
def build_model(shape, chat, out):
    """Build a random-weight Qwen3 and its tokenizer locally (no download); print its folder."""
    from . import modelbuild

    click.echo(modelbuild.build(shape, opens_think=not chat, dest=out))


if __name__ == "__main__":
    sys.exit(main())
