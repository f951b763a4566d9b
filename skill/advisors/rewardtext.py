"""How `rewards try` and `rewards show` print: a table of scores, totals and advantages with the warnings that
matter (a group with zero spread), and a reward's params, config snippet and example."""

from __future__ import annotations

from ..core.completions import completion_text
from ..core.i18n import _
from ..core.schema import toml_text


def _console(soft_wrap: bool = False):
    from rich.console import Console

    return Console(width=max(100, Console().width), highlight=False, soft_wrap=soft_wrap)


def _number(value) -> str:
    return "None" if value is None else f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3e}"


def _one_line(value, limit: int = 60) -> str:
    text = value if isinstance(value, str) else completion_text(value)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_try(result: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    names = [reward["name"] for reward in result["rewards"]]
    table = Table(show_lines=False)
    table.add_column("#", justify="right")
    table.add_column(_("completion"), overflow="fold")
    for reward in result["rewards"]:
        table.add_column(f"{reward['name']} ×{reward['weight']:g}", justify="right")
    table.add_column(_("total"), justify="right")
    table.add_column(_("advantage"), justify="right")
    for index, sample in enumerate(result["samples"], start=1):
        table.add_row(str(index), escape(_one_line(sample["completion"])),
                      *(_number(sample["scores"][name]) for name in names),
                      _number(sample["total"]), _number(sample["advantage"]))
    console.print(table)
    for group in result["groups"]:
        where = _("group {number}").format(number=group["group"] + 1) if len(result["groups"]) > 1 else _("group")
        prompt = _one_line(group["prompt"], 40) if group["prompt"] else ""
        console.print(escape(_("{where}{prompt}: mean {mean}, std {std} (scale_rewards = {scale})").format(
            where=where, prompt=f" ({prompt!r})" if prompt else "", mean=_number(group["mean"]),
            std=_number(group["std"]), scale=result["scale_rewards"])))
        if group["zero_spread"]:
            console.print("[bold red]" + escape(_(
                "ZERO SPREAD: every completion of this group gets the same total, so every advantage is 0 and the "
                "group teaches nothing. Make the rewards tell these completions apart (partial credit, another "
                "reward), or the model needs to sometimes succeed first.")) + "[/]")
    if result["constant_rewards"] and len(result["samples"]) > 1:
        console.print("[yellow]" + escape(_("same score for every completion (adds nothing to the spread): "
                                            "{names}").format(names=", ".join(result["constant_rewards"]))) + "[/]")
    for note in result.get("notes", []):
        console.print(escape(_("note: {note}").format(note=note)))
    for note in result["warnings"]:
        console.print("[yellow]" + escape(_("warning: {note}").format(note=note)) + "[/]")
    for column, values in result["logged"]["extra"].items():
        console.print(escape(_("logged column {column}: {values}").format(column=column, values=values)))
    for metric, value in result["logged"]["metrics"].items():
        console.print(escape(_("logged metric {metric}: {value:g}").format(metric=metric, value=value)))
    if result.get("tokenizer"):
        console.print(escape(_("tokenizer: {how}; the chat template {opens}").format(
            how=result["tokenizer"]["how"], opens=_("opens <think> (completions hold only </think>)")
            if result["tokenizer"]["template_opens_think"] else _("does not open <think>"))))
    console.print(escape(_("seconds per call: {times}").format(times=", ".join(
        f"{reward['name']} {reward['seconds']:.3f}" for reward in result["rewards"]))))


def render_show(shown: dict) -> None:
    from rich.markup import escape

    console = _console(soft_wrap=True)  # long lines stay whole: a command or a snippet to copy
    console.print(f"[bold]{escape(shown['name'])}[/]  " + escape(_("(plugin {plugin})").format(plugin=shown["plugin"])))
    console.print(escape(_(shown["description"])) if shown["description"] else "")

    def params_block(params) -> None:
        if not params:
            console.print("  " + escape(_("no params")))
        for param in params:
            help_text = f"  {_(param['help'])}" if param["help"] else ""
            console.print(escape(f"  {param['name']} = {toml_text(param['default'])}{help_text}"))

    console.print()
    console.print(escape(_("Params (defaults):")))
    params_block(shown["params"])
    for judge in shown.get("judges", []):
        console.print()
        console.print(escape(_("Judge backend {name} (plugin {plugin}): {description}").format(
            name=judge["name"], plugin=judge["plugin"], description=_(judge["description"]))))
        params_block(judge["params"])
    console.print()
    console.print(escape(_("In config.toml:")))
    console.print(escape("\n".join("  " + line for line in shown["config"].splitlines())))
    console.print(escape(_("weight = 0 makes it monitor-only: it is computed and logged (rewards/{name}/mean, "
                           "completions.jsonl) but adds nothing to the total the model is trained on.").format(
        name=shown["name"])))
    if shown["example"]:
        console.print()
        console.print(escape(_("Try it:")))
        console.print(escape("  " + shown["example"]))
