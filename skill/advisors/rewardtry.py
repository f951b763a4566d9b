"""`grpo-skill rewards try` and `rewards show`: score completions with the real reward code, before any GPU hour.

Each reward is built from the registry (as train.py builds it) and called the way TRL 1.14's GRPOTrainer calls
it: keyword arguments ``prompts``, ``completions``, ``completion_ids``, every dataset column, ``trainer_state``,
``log_extra`` and ``log_metric``. The weighted total and the advantages follow GRPOTrainer's
``_generate_and_score_completions``: per-reward ``None`` becomes NaN, weighted ``nansum`` (``NaN`` where every
reward abstained), group mean and Bessel-corrected std in float32, ``(total - mean) / (std + 1e-4)`` unless
``scale_rewards = "none"``, NaN advantages set to 0. A group whose totals do not differ has zero advantages and
teaches nothing: that is shown loudly.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
    import tomli as tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import plugins
from ..core.errors import MissingColumn, UserError, one_line
from ..core.i18n import _
from ..core.completions import completion_text
from ..core.contract import RewardError
from ..core.registry import RegistryError, Reward
from ..core.schema import toml_text

STD_EPSILON = 1e-4  # GRPOTrainer: advantages / (std + 1e-4)


class TryError(UserError):
    """Bad input to `rewards try`: a reward spec, a --column or --param, the samples file."""


@dataclass
class Sample:
    completion: Any  # a string, or chat messages
    prompt: Any = ""
    columns: dict[str, Any] = field(default_factory=dict)
    completion_ids: list[int] | None = None


def literal(text: str):
    """A command-line value as TOML reads it (42, 0.5, true, "x", [1, 2]), else the text itself."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def parse_specs(specs) -> list[tuple[str, float]]:
    """``NAME[:WEIGHT]`` -> (name, weight), as config.toml bounds a weight."""
    from ..core.schema import parse_reward_spec

    parsed = []
    for spec in specs:
        try:
            parsed.append(parse_reward_spec(spec))
        except UserError as error:
            raise TryError(str(error)) from None
    return parsed


def parse_columns(items) -> dict[str, str]:
    """``KEY=VALUE`` -> {KEY: VALUE}: the value is text, as typed ("1,000", "1/2"); --file gives other types."""
    columns = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TryError(_("--column {item!r}: write KEY=VALUE, e.g. --column answer=42").format(item=item))
        columns[key] = value
    return columns


def parse_params(items, names) -> dict[str, dict[str, Any]]:
    """``NAME.KEY=VALUE`` (``NAME.KEY.SUB=VALUE`` for a table such as llm_judge's judge) per reward name."""
    params: dict[str, dict[str, Any]] = {name: {} for name in names}
    for item in items:
        path, sep, value = item.partition("=")
        keys = path.split(".")
        if not sep or len(keys) < 2 or not all(keys):
            raise TryError(_("--param {item!r}: write REWARD.KEY=VALUE, e.g. --param length.too_short=3").format(
                item=item))
        if keys[0] not in params:
            raise TryError(_("--param {item!r}: {name!r} is not one of the rewards tried ({names})").format(
                item=item, name=keys[0], names=", ".join(names)))
        table = params[keys[0]]
        for key in keys[1:-1]:
            table = table.setdefault(key, {})
            if not isinstance(table, dict):
                raise TryError(_("--param {item!r}: {key!r} is not a table").format(item=item, key=key))
        table[keys[-1]] = literal(value)
    return params


def load_samples(path: str | Path) -> list[Sample]:
    """A JSONL file: one object per line with "completion" (text or chat messages), optionally "prompt" and
    "completion_ids"; every other key is a dataset column (e.g. "answer")."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise TryError(_("cannot read {path}: {error}").format(path=path, error=error.strerror or error)) from None
    except UnicodeDecodeError as error:
        raise TryError(_("{path}: not UTF-8 text (byte {position}); give a JSON-lines file saved as UTF-8").format(
            path=path, position=error.start)) from None
    samples = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise TryError(_("{path}:{line}: not valid JSON ({error})").format(path=path, line=number,
                                                                              error=error.msg)) from None
        if not isinstance(row, dict) or "completion" not in row:
            raise TryError(_("{path}:{line}: each line is an object with a \"completion\" key, e.g. "
                             "{{\"completion\": \"</think>42\", \"answer\": \"42\"}}").format(path=path, line=number))
        completion = row.pop("completion")
        prompt = row.pop("prompt", "")
        ids = row.pop("completion_ids", None)
        samples.append(Sample(completion, prompt, row, ids))
    if not samples:
        raise TryError(_("{path} holds no samples; write one JSON object per line").format(path=path))
    return samples


def gather_samples(completions, samples_file, columns, prompt: str = "") -> list[Sample]:
    """The samples of `rewards try`: --completion texts (with --prompt), or a --file; --column adds to each."""
    if completions and samples_file:
        raise TryError(_("--completion and --file: give the completions one way, not both"))
    if not completions and not samples_file:
        raise TryError(_("give the completions with --completion TEXT (repeat it) or with --file samples.jsonl"))
    given = parse_columns(columns)
    if not samples_file:
        return [Sample(text, prompt, dict(given)) for text in completions]
    samples = load_samples(samples_file)
    for sample in samples:
        sample.columns = {**given, **sample.columns}
    return samples


def load_tokenizer(spec: str | None):
    if not spec:
        return None
    from transformers import AutoTokenizer

    if spec == "tiny":
        from ..runtime import modelbuild

        spec = str(modelbuild.build("tiny"))
    if not Path(spec).is_dir() and _cached(spec):  # a hub id in the Hugging Face cache: no download
        try:
            return AutoTokenizer.from_pretrained(spec, local_files_only=True)
        except (OSError, ValueError) as error:
            raise TryError(_("--tokenizer {spec}: cannot load a tokenizer there ({error})").format(
                spec=spec, error=one_line(error))) from None
    if not Path(spec).is_dir():
        raise TryError(_("--tokenizer {spec!r}: no such folder; give a model or tokenizer folder, or tiny").format(
            spec=spec))
    try:
        return AutoTokenizer.from_pretrained(spec)
    except (OSError, ValueError) as error:
        raise TryError(_("--tokenizer {spec}: cannot load a tokenizer there ({error})").format(
            spec=spec, error=one_line(error))) from None


def _cached(model_id: str) -> bool:
    try:
        import huggingface_hub
    except ImportError:
        return False
    try:
        return isinstance(huggingface_hub.try_to_load_from_cache(model_id, "tokenizer_config.json"), str)
    except ValueError:  # not a repo id
        return False


def run_tokenizer(tokenizer: str | None, preset, config, preset_name: str | None) -> tuple[str | None, str]:
    """(what to load, what to say about it): --tokenizer, else the tokenizer of the model the project or preset
    trains when it is on this machine (local, built, or cached), else none."""
    from ..core.i18n import N_

    if tokenizer:
        run_model = config.model["name"] if config is not None else preset.model_id if preset is not None else None
        if tokenizer == "tiny" and run_model and not (preset is not None and preset.build_model and (
                config is None or config.builds_its_model())):
            return tokenizer, _("tiny (--tokenizer): not {model}'s; the tiny tokenizer's template opens the thinking "
                                "block and it has no Chinese, so token counts and template_opens_think may differ "
                                "from training's").format(model=run_model)
        return tokenizer, _("{spec} (--tokenizer)").format(spec=tokenizer)
    if config is not None:
        if config.builds_its_model() or config.local_model_dir():
            return config.model_path(), _("{model}'s, as the project trains it").format(model=config.model["name"])
        model, whose = config.model["name"], N_("the project's model")
    elif preset is not None:
        if preset.build_model is not None:
            return "tiny", _("{model}'s (preset {preset})").format(model=preset.model_id, preset=preset.name)
        model, whose = preset.model_id, N_("the preset's model")
    else:
        return None, _("none (give --project, --preset or --tokenizer to score as a run would)")
    if _cached(model):
        return model, _("{model}'s, from the Hugging Face cache").format(model=model)
    return None, _("none: {whose} {model} is not on this machine, so completion_ids are not made and the chat template "
                   "is the preset's ({opens}); --tokenizer PATH gives a local copy's").format(
        whose=_(whose), model=model, opens=_("opens <think>") if preset is not None and preset.template_opens_think
        else _("no <think>"))


def chat_prompts(prompts: list, tokenizer, config) -> list:
    """The prompts as training gives them to rewards: through the chat template, with [dataset] system_prompt and
    chat_template_kwargs when a project is given; chat messages and empty prompts as they are."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return prompts
    system = config.dataset.get("system_prompt", "") if config is not None else ""
    kwargs = dict(config.dataset.get("chat_template_kwargs") or {}) if config is not None else {}
    rendered = []
    for prompt in prompts:
        if not isinstance(prompt, str) or not prompt:
            rendered.append(prompt)
            continue
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        rendered.append(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs))
    return rendered


class TrainerLog:
    """What rewards log through TRL's log_extra / log_metric callbacks, kept to be shown."""

    def __init__(self) -> None:
        self.extra: dict[str, list] = {}
        self.metrics: dict[str, float] = {}

    def log_extra(self, column: str, values: list) -> None:
        self.extra[column] = list(values)

    def log_metric(self, name: str, value: float) -> None:
        self.metrics[name] = float(value)


def call_like_trl(func, prompts, completions, completion_ids, columns, log: TrainerLog | None = None):
    """``func`` called with the keyword arguments GRPOTrainer passes (awaited when it is async)."""
    from transformers import TrainerState

    log = log or TrainerLog()
    kwargs = dict(prompts=prompts, completions=completions, completion_ids=completion_ids, **columns,
                  trainer_state=TrainerState(), log_extra=log.log_extra, log_metric=log.log_metric)
    if inspect.iscoroutinefunction(func):
        return asyncio.run(func(**kwargs))
    return func(**kwargs)


def _nanstd(tensor):
    """trl.trainer.utils.nanstd: the std ignoring NaNs, with Bessel's correction (NaN for fewer than 2)."""
    import torch

    mean = torch.nanmean(tensor, dim=0, keepdim=True)
    variance = torch.nanmean((tensor - mean) ** 2, dim=0, keepdim=True)
    count = torch.sum(~torch.isnan(tensor), dim=0, keepdim=True)
    correction = torch.where(count > 1, count / (count - 1), torch.full_like(count, float("nan"), dtype=torch.float))
    return torch.sqrt(variance * correction).squeeze(0)


def advantages(scores: list[list[float | None]], weights: list[float], groups: list[int],
               scale_rewards: str = "group", aggregation: str = "sum_then_normalize") -> dict:
    """Totals, advantages and per-group mean/std as GRPOTrainer computes them. ``scores[i][k]``: completion i,
    reward k; ``groups[i]``: the group (prompt) of completion i."""
    import torch

    per_func = torch.tensor([[math.nan if s is None else s for s in row] for row in scores], dtype=torch.float32)
    weight = torch.tensor(weights, dtype=torch.float32)
    unscorable = torch.isnan(per_func).all(dim=1)
    members = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    index_of = {group: torch.tensor(rows) for group, rows in members.items()}

    if aggregation == "sum_then_normalize":
        totals = (per_func * weight.unsqueeze(0)).nansum(dim=1)
        totals[unscorable] = math.nan
        mean, std = torch.zeros_like(totals), torch.zeros_like(totals)
        for rows in index_of.values():
            mean[rows] = torch.nanmean(totals[rows])
            if scale_rewards in ("group", "none"):
                std[rows] = _nanstd(totals[rows]) if len(rows) > 1 else 0.0
        if scale_rewards == "batch":
            std[:] = _nanstd(totals) if totals.numel() > 1 else 0.0
        advantage = totals - mean
        if scale_rewards != "none":
            advantage = advantage / (std + STD_EPSILON)
    else:  # normalize_then_sum: each reward normalised in its group, then weighted and normalised over the batch
        normalised = torch.zeros_like(per_func)
        for rows in index_of.values():
            group = per_func[rows]
            group_mean = torch.nanmean(group, dim=0, keepdim=True)
            group_std = _nanstd(group) if len(rows) > 1 else torch.zeros(group.shape[1])
            normalised[rows] = (group - group_mean) / (group_std + STD_EPSILON)
        totals = (normalised * weight.unsqueeze(0)).nansum(dim=1)
        totals[unscorable] = math.nan
        std = (_nanstd(totals) if totals.numel() > 1 else torch.tensor(0.0)).expand_as(totals).clone()
        mean = torch.nanmean(totals).expand_as(totals).clone()
        advantage = (totals - mean) / (std + STD_EPSILON)
    advantage = torch.nan_to_num(advantage, nan=0.0)

    def no_spread(rows) -> bool:  # equal totals in the group: advantages 0, whatever the scaling
        spread = float(_nanstd(totals[rows])) if len(rows) > 1 else math.nan
        return not math.isfinite(spread) or math.isclose(spread, 0.0, abs_tol=1e-8)

    def number(value):
        value = float(f"{float(value):.7g}")  # a float32's digits, not 0.30000001192092896
        return value if math.isfinite(value) else None

    return {
        "totals": [number(v) for v in totals],
        "advantages": [number(v) for v in advantage],
        "groups": {group: {"mean": number(mean[rows[0]]), "std": number(std[rows[0]]),
                           "zero_spread": no_spread(index_of[group])}
                   for group, rows in members.items()},
    }


def find_reward(name: str, project: str | None) -> Reward:
    """The registered reward ``name``. Unknown while the current folder's rewards.py is not loaded, the error
    says how to load it: rewards.py is code, so it runs only when asked (--project)."""
    try:
        return plugins.get_reward(name)
    except RegistryError as error:
        if project is None and Path("rewards.py").is_file():
            raise RegistryError(str(error) + "\n" + _(
                "the rewards.py here is not loaded: if it registers {name!r}, add --project .").format(
                name=name)) from None
        raise


def _group_key(prompt) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False, sort_keys=True)


def try_rewards(specs, samples: list[Sample], *, params_items=(), tokenizer: str | None = None,
                preset: str | None = None, project: str | None = None, scale_rewards: str = "group",
                aggregation: str = "sum_then_normalize") -> dict:
    """Score ``samples`` with the rewards ``specs`` (NAME[:WEIGHT]); returns what `rewards try --json` prints."""
    config = None
    if project:
        from ..core import project as projects

        config = projects.load(project)  # its config.toml, with its rewards.py registered
    chosen = parse_specs(specs)
    names = [name for name, _weight in chosen]
    if len(set(names)) != len(names):
        raise TryError(_("a reward is named twice; give each once, with its weight"))
    found = {name: find_reward(name, project) for name in names}  # before any tokenizer loads
    params = parse_params(params_items, names)
    if preset:
        preset_item = plugins.get_preset(preset)
    elif config is not None:  # the project's preset with its [grpo], and its rewards' params, as train.py builds them
        preset_item = config.run_preset()
        configured = {choice.name: choice.params for choice in config.rewards}
        params = {name: {**configured.get(name, {}), **given} for name, given in params.items()}
    else:
        preset_item = None
    tokenizer, tokenizer_how = run_tokenizer(tokenizer, preset_item, config, preset)
    token_source = load_tokenizer(tokenizer)

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
    if config is not None or preset_item is not None:  # as training renders them, when scoring as a run would
        prompts = chat_prompts(prompts, token_source, config)
    completions = [sample.completion for sample in samples]

    rewards, scores_by_reward, log, caught = [], [], TrainerLog(), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, weight in chosen:
            reward = found[name]
            func = reward.build(tokenizer=token_source, preset=preset_item, params=params[name])
            try:
                scores_by_reward.append(call_like_trl(func, prompts, completions, completion_ids, columns, log))
            except RewardError as error:
                if not isinstance(error.__cause__, MissingColumn):
                    raise
                column = error.__cause__.column  # the reward's own message speaks of a dataset, which is not here
                raise TryError(_("reward {name!r} reads the {column!r} column, which these samples lack (they have: "
                                 "{columns}); give it with --column {column}=VALUE (in --file: the key {column!r} on "
                                 "each line)").format(
                    name=name, column=column, columns=", ".join(column_names) or _("none"))) from None
            rewards.append({"name": name, "weight": weight, "plugin": reward.plugin,
                            "params": {**reward.params, **params[name]}, "seconds": func.timing.last})
    notes = list(dict.fromkeys(str(warning.message) for warning in caught))

    scores = [list(row) for row in zip(*scores_by_reward)]
    keys = [_group_key(sample.prompt) for sample in samples]
    group_ids = [list(dict.fromkeys(keys)).index(key) for key in keys]
    computed = advantages(scores, [w for _n, w in chosen], group_ids, scale_rewards, aggregation)
    constant = [entry["name"] for entry, column in zip(rewards, scores_by_reward)
                if len({score for score in column if score is not None}) <= 1]
    from ..core.registry import RewardContext

    opens = RewardContext(tokenizer=token_source, preset=preset_item).template_opens_think
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
    }


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


# --- text output ------------------------------------------------------------------------------------------------


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
