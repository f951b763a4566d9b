"""What the skill docs say about the Python API and the CLI is what the code has: every field of Reward,
RewardContext, Preset and LoraSettings in references/plugins.md, and every command and option in
references/cli.md (both ways), in English and in the zh-CN twin."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import click
import pytest

from grpo_skill import LoraSettings, Preset, Reward, RewardContext
from grpo_skill.cli import main

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"en": REPO, "zh-CN": REPO / "i18n" / "zh-CN"}
OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def tables(path: Path) -> list[list[list[str]]]:
    """The markdown tables outside code blocks: rows of cells, header and separator left out."""
    found, rows, fenced = [], [], False
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
        elif rows:
            found.append([row for row in rows[2:]])
            rows = []
    return found


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def table_with(path: Path, marker: str) -> list[list[str]]:
    matches = [table for table in tables(path) if any(marker in row[0] for row in table)]
    assert len(matches) == 1, f"{path}: expected one table with {marker!r} in its first column"
    return matches[0]


def names(dataclass) -> set[str]:
    return {field.name for field in dataclasses.fields(dataclass)}


@pytest.mark.parametrize("lang", list(ROOTS))
def test_every_reward_field_is_documented_and_nothing_else(lang):
    table = table_with(ROOTS[lang] / "references" / "plugins.md", "`factory`")
    assert {name for row in table for name in code_spans(row[0])} == names(Reward)


@pytest.mark.parametrize("lang", list(ROOTS))
def test_every_reward_context_attribute_is_documented_and_nothing_else(lang):
    table = table_with(ROOTS[lang] / "references" / "plugins.md", "`context.")
    documented = {match for row in table for match in re.findall(r"`context\.(\w+)", row[0])}
    methods = {name for name, value in vars(RewardContext).items() if callable(value) and not name.startswith("_")}
    assert documented == names(RewardContext) | methods


@pytest.mark.parametrize("lang", list(ROOTS))
def test_every_preset_and_lora_field_is_documented_and_nothing_else(lang):
    table = table_with(ROOTS[lang] / "references" / "plugins.md", "`model_id`")
    assert {name for row in table for name in code_spans(row[0])} == names(Preset)
    lora = next(row[1] for row in table if code_spans(row[0]) == ["lora"])
    [arguments] = re.findall(r"`LoraSettings\(([^)]*)\)`", lora)
    assert {name.strip() for name in arguments.split(",")} == names(LoraSettings)


def cli_commands(group: click.Group = main, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    found = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # a command of its own too: `rewards` lists, `rewards try` scores
                found[prefix + (name,)] = command
            found.update(cli_commands(command, prefix + (name,)))
        else:
            found[prefix + (name,)] = command
    return found


def options_of(command: click.Command) -> set[str]:
    return {opt for param in command.params if isinstance(param, click.Option)
            for opt in param.opts + param.secondary_opts} - {"-h", "--help"}


def command_path(cell: str) -> tuple[str, ...]:
    """"`plugin new NAME`" -> ("plugin", "new"): the words before the first argument."""
    words = code_spans(cell)[0].split()
    return tuple(word for word in words if re.fullmatch(r"[a-z][a-z-]*", word))


@pytest.mark.parametrize("lang", list(ROOTS))
def test_the_command_table_lists_every_command_with_exactly_its_options(lang):
    table = table_with(ROOTS[lang] / "references" / "cli.md", "`presets`")
    commands = cli_commands()
    documented = {}
    for row in table:
        path = command_path(row[0])
        assert path in commands, f"{lang}: the table documents `{' '.join(path)}`, which the CLI does not have"
        documented[path] = {opt for span in code_spans(row[2]) for opt in OPTION.findall(span)}
    assert set(documented) == set(commands), f"{lang}: commands missing from the table"
    for path, options in documented.items():
        assert options == options_of(commands[path]), f"{lang}: `{' '.join(path)}` options"


@pytest.mark.parametrize("lang", list(ROOTS))
def test_options_named_with_a_command_in_the_prose_exist(lang):
    """`skill install --lang zh-CN`, `new --lang zh-CN` and the like, anywhere in the skill docs."""
    commands = cli_commands()
    root = ROOTS[lang]
    for path in [root / "SKILL.md", *sorted((root / "references").glob("*.md"))]:
        prose = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
        for span in code_spans(prose):
            words = span.removeprefix("grpo-skill ").split()
            for length in (2, 1):
                if tuple(words[:length]) in commands and OPTION.search(span):
                    unknown = {opt for opt in OPTION.findall(" ".join(words[length:]))
                               if not opt.startswith("---")} - options_of(commands[tuple(words[:length])])
                    assert not unknown, f"{path.relative_to(REPO)}: `{span}` names {sorted(unknown)}"
                    break
