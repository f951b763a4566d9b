"""`grpo-skill rewards try` and `rewards show`: score completions with the real reward code, before any GPU hour.

Each reward is built from the registry (as train.py builds it) and called, and its scores combined into totals and
advantages, the way TRL 1.14's GRPOTrainer does it (``grposcoring``). A group whose totals do not differ has zero
advantages and teaches nothing: that is shown loudly (``rewardtext``). What is scored comes from ``rewardinput``, the
tokenizer from ``rewardtokenizer``.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import plugins
from ..core.completions import completion_text
from ..core.contract import RewardError
from ..core.errors import MissingColumn
from ..core.i18n import _
from ..core.registry import RegistryError, Reward, RewardContext
from ..core.schema import toml_text
from .grposcoring import TrainerLog, advantages, call_like_trl
from .rewardinput import Sample, TryError, parse_params, parse_specs
from .rewardtokenizer import chat_prompts, load_tokenizer, run_tokenizer

# The names this module had before it was split by job, importable from here (cli.py, testing.py, the docs).
from .grposcoring import STD_EPSILON  # noqa: F401,E402
from .rewardinput import gather_samples, literal, load_samples, parse_columns  # noqa: F401,E402
from .rewardtext import render_show, render_try  # noqa: F401,E402


def find_reward(name: str, project: str | None) -> Reward:
    """The registered reward ``name``. Unknown while the current folder's rewards.py is not loaded, the error
    says how to load it: rewards.py is code, so it runs only when asked (--project). The rewards of the rewards.py
    that every new project has are named or suggested as such, not mistaken for an installed one."""
    try:
        return plugins.get_reward(name)
    except RegistryError:
        if project is not None:
            raise
    from ..scaffold.generator import template_reward_names

    template = template_reward_names()
    meant = name if name in template else plugins.closest(name, [*plugins.rewards(), *template])
    meant = meant if meant in template else None  # a reward of every project's rewards.py, named or misspelt
    lines = []
    if name not in template:  # the registry's "did you mean" would name another reward than the one meant
        try:
            plugins.get_reward(name, suggest=template)
        except RegistryError as error:
            lines.append(str(error))
    if Path("rewards.py").is_file():
        lines.append(_("the rewards.py here is not loaded: if it registers {name!r}, add --project .").format(
            name=meant or name))
    elif meant:  # not installed: every new project defines it
        lines.append(_("{name!r} is a reward of the rewards.py that `grpo-skill new` writes into every project: "
                       "`grpo-skill new PATH --reward {name}` chooses it, and --project PATH finds it in a "
                       "project").format(name=meant))
    raise RegistryError("\n".join(lines))


def _group_key(prompt) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False, sort_keys=True)


def try_rewards(specs, samples: list[Sample], *, params_items=(), tokenizer: str | None = None,
                preset: str | None = None, project: str | None = None, scale_rewards: str = "group",
                aggregation: str = "sum_then_normalize") -> dict:
    """Score ``samples`` with the rewards ``specs`` (NAME[:WEIGHT]); returns what `rewards try --json` prints."""
    run = _run(specs, params_items, preset, project)
    tokenizer, tokenizer_how = run_tokenizer(tokenizer, run.preset, run.config, preset)
    token_source = load_tokenizer(tokenizer)
    batch = _batch(samples, token_source, run)
    rewards, scores_by_reward, log, notes = _score(run, batch, token_source)

    scores = [list(row) for row in zip(*scores_by_reward)]
    keys = [_group_key(sample.prompt) for sample in samples]
    group_ids = [list(dict.fromkeys(keys)).index(key) for key in keys]
    computed = advantages(scores, [w for _n, w in run.chosen], group_ids, scale_rewards, aggregation)
    constant = [entry["name"] for entry, column in zip(rewards, scores_by_reward)
                if len({score for score in column if score is not None}) <= 1]
    names = [name for name, _weight in run.chosen]
    opens = RewardContext(tokenizer=token_source, preset=run.preset).template_opens_think
    return {
        "tokenizer": {"name": tokenizer, "how": tokenizer_how, "template_opens_think": opens},
        "rewards": rewards,
        "scale_rewards": scale_rewards,
        "aggregation": aggregation,
        "samples": [
            {"completion": sample.completion, "prompt": sample.prompt, "group": group,
             "scores": dict(zip(names, row)), "total": total, "advantage": advantage}
            for sample, group, row, total, advantage in zip(samples, group_ids, scores, computed["totals"],
                                                            computed["advantages"])
        ],
        "groups": [{"group": group, "prompt": samples[group_ids.index(group)].prompt, **stats}
                   for group, stats in computed["groups"].items()],
        "constant_rewards": constant,
        "logged": {"extra": log.extra, "metrics": log.metrics},
        "warnings": notes,
        "notes": run.notes,
    }


@dataclass
class _Run:
    """What `rewards try` scores as: the rewards (name, weight) and their params, the project or preset."""

    chosen: list[tuple[str, float]]
    found: dict[str, Reward]
    params: dict[str, dict[str, Any]]
    config: Any = None  # the loaded project, with --project
    preset: Any = None  # the Preset rewards are built for
    grpo: dict[str, Any] = field(default_factory=dict)  # the project's [grpo], over the preset's
    notes: list[str] = field(default_factory=list)  # what the project gave the rewards config.toml does not list


def _run(specs, params_items, preset: str | None, project: str | None) -> _Run:
    config, notes = None, []
    if project and preset:  # the project's preset, [grpo] and tokenizer would be mixed with another's
        raise TryError(_("--project and --preset: a project scores as its own preset (model.preset in its "
                         "config.toml); give one of them"))
    if project:
        from ..core import project as projects

        config = projects.load(project)  # its config.toml, with its rewards.py registered
    chosen = _chosen(specs, config)
    names = [name for name, _weight in chosen]
    if len(set(names)) != len(names):
        raise TryError(_("a reward is named twice; give each once, with its weight"))
    found = {name: find_reward(name, project) for name in names}  # before any tokenizer loads
    params = parse_params(params_items, names)
    if preset:
        preset_item = plugins.get_preset(preset)
    elif config is not None:  # the project's preset with its [grpo], and its rewards' params, as train.py builds them
        preset_item = config.preset
        configured = {choice.name: choice.params for choice in config.rewards}
        params = {name: {**configured.get(name, {}), **given} for name, given in params.items()}
        notes = _project_gold(config, found, params, [name for name in names if name not in configured])
    else:
        preset_item = None
    grpo = dict(config.grpo) if config is not None and not preset else {}
    return _Run(chosen, found, params, config, preset_item, grpo, notes)


def _chosen(specs, config) -> list[tuple[str, float]]:
    """(name, weight) of each reward to try: as given; with a project, its [[rewards]] when none are named, and its
    weight for a listed reward named without one, so that totals and advantages are the run's."""
    if not specs:
        if config is None:
            raise TryError(_("name the rewards to try (NAME[:WEIGHT] ...), or give --project DIR to try a project's "
                             "own, with their weights"))
        return [(choice.name, choice.weight) for choice in config.rewards]
    chosen = parse_specs(specs)
    if config is None:
        return chosen
    weights = {choice.name: choice.weight for choice in config.rewards}
    return [(name, weights[name]) if ":" not in spec and name in weights else (name, weight)
            for spec, (name, weight) in zip(specs, chosen)]


def _project_gold(config, found: dict[str, Reward], params: dict[str, dict], unlisted: list[str]) -> list[str]:
    """Give each reward tried that config.toml does not list the project's gold-answer column (``answer_column``,
    as `new --answer-column` set it on the listed rewards that read one), unless --param gave it: the column the
    project's dataset holds its gold answers in. Returns what to say of it; refuses where the listed rewards read
    their gold answers from several columns."""
    from ..scaffold.settings import GOLD_PARAMS, gold_columns

    notes = []
    for param in GOLD_PARAMS:
        readers = gold_columns([(choice.name, choice.params) for choice in config.rewards], param)
        for name in unlisted:
            if param not in found[name].params or param in params[name] or not readers:
                continue
            if len(readers) > 1:
                raise TryError(_("{name!r} is not in config.toml, and its rewards read gold answers from several "
                                 "columns ({columns}); say which with --param {name}.{param}=COLUMN").format(
                    name=name, param=param, columns=", ".join(
                        f"{column} ({', '.join(names)})" for column, names in readers.items())))
            [(column, names)] = readers.items()
            if column == str(found[name].params[param]):
                continue  # its own default: nothing to give or say
            params[name][param] = column
            notes.append(_("{name} is not in config.toml: it reads the gold answers from the column {column!r}, "
                           "the one config.toml gives {rewards} ({param}; --param {name}.{param}=COLUMN for "
                           "another)").format(name=name, column=column, rewards=", ".join(names), param=param))
    return notes


@dataclass
class _Batch:
    """The samples as TRL passes them to rewards."""

    prompts: list
    completions: list
    completion_ids: list | None
    columns: dict[str, list]


def _batch(samples: list[Sample], token_source, run: _Run) -> _Batch:
    texts = [completion_text(sample.completion) for sample in samples]
    completion_ids = [sample.completion_ids for sample in samples]
    if any(ids is None for ids in completion_ids):
        completion_ids = ([list(ids) if ids is not None else token_source.encode(text, add_special_tokens=False)
                           for ids, text in zip(completion_ids, texts)] if token_source is not None else None)
    column_names = sorted({key for sample in samples for key in sample.columns})
    missing = [(i, key) for i, sample in enumerate(samples) for key in column_names if key not in sample.columns]
    if missing:
        raise TryError(_("sample {index} has no {column!r} column, which others have; give every sample the same "
                         "columns").format(index=missing[0][0] + 1, column=missing[0][1]))
    columns = {key: [sample.columns[key] for sample in samples] for key in column_names}
    prompts = [sample.prompt for sample in samples]
    if run.config is not None or run.preset is not None:  # as training renders them, when scoring as a run would
        prompts = chat_prompts(prompts, token_source, run.config)
    return _Batch(prompts, [sample.completion for sample in samples], completion_ids, columns)


def _score(run: _Run, batch: _Batch, token_source) -> tuple[list[dict], list[list], TrainerLog, list[str]]:
    """Each reward built and called as TRL calls it: (what to say of each, its scores, what they logged, the
    warnings they raised)."""
    rewards, scores_by_reward, log = [], [], TrainerLog()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, weight in run.chosen:
            reward = run.found[name]
            func = reward.build(tokenizer=token_source, preset=run.preset, params=run.params[name], grpo=run.grpo)
            try:
                scores_by_reward.append(call_like_trl(func, batch.prompts, batch.completions, batch.completion_ids,
                                                      batch.columns, log))
            except RewardError as error:
                if not isinstance(error.__cause__, MissingColumn):
                    raise
                column = error.__cause__.column  # the reward's own message speaks of a dataset, which is not here
                raise TryError(_("reward {name!r} reads the {column!r} column, which these samples lack (they have: "
                                 "{columns}); give it with --column {column}=VALUE (in --file: the key {column!r} on "
                                 "each line)").format(
                    name=name, column=column, columns=", ".join(batch.columns) or _("none"))) from None
            rewards.append({"name": name, "weight": weight, "plugin": reward.plugin,
                            "params": {**reward.params, **run.params[name]}, "seconds": func.timing.last})
    return rewards, scores_by_reward, log, list(dict.fromkeys(str(warning.message) for warning in caught))


def show_reward(name: str, project: str | None = None) -> dict:
    """What `rewards show NAME` prints: description, params with defaults, a config snippet, an example."""
    import shlex

    if project:
        plugins.register_project(project)
    registered = plugins.rewards()
    reward = find_reward(name, project)
    config = ["[[rewards]]", f"name = {toml_text(name)}", "weight = 1.0  # " + _("0: monitor only (computed and logged, not trained on)")]
    if reward.params:
        config.append(f"params = {toml_text(dict(reward.params))}")
    shown = {
        "name": name,
        "plugin": registered[name].plugin,
        "description": reward.description,
        "params": [{"name": key, "default": value, "help": reward.param_help.get(key, "")}
                   for key, value in reward.params.items()],
        "config": "\n".join(config),
        "example": shlex.join(["grpo-skill", "rewards", "try", name, *reward.example]) if reward.example else None,
    }
    if name == "llm_judge":
        from ..core.judges import judges

        shown["judges"] = [
            {"name": judge_name, "plugin": reg.plugin, "description": reg.item.description,
             "params": [{"name": key, "default": value, "help": reg.item.param_help.get(key, "")}
                        for key, value in reg.item.params.items()]}
            for judge_name, reg in sorted(judges().items())
        ]
    return shown
