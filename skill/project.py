"""A generated project's config.toml: loading and validation, before anything heavy is imported.

Every error names the field and says how to fix it, on one line.
"""

from __future__ import annotations

import csv
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UserError
from . import plugins
from .i18n import N_, _
from .registry import Preset, RegistryError

CONFIG_FILE = "config.toml"
BACKENDS = ("auto", "unsloth", "trl")
LOCAL_DATA_SUFFIXES = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


# GRPOConfig fields that train.py derives itself; setting them in [grpo] too would clash.
SET_BY_TRAIN_PY = {
    "reward_weights": N_("from the weights of the [[rewards]]"),
    "bf16": N_("from what the GPU supports"),
    "fp16": N_("from what the GPU supports"),
    "gradient_checkpointing": N_("from lora.gradient_checkpointing"),
    "disable_tqdm": N_("it draws its own progress bar"),
}


class ConfigError(UserError):
    """A config that cannot run; the message names the field and the fix."""


@dataclass
class RewardChoice:
    name: str
    weight: float = 1.0
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProjectConfig:
    path: Path
    model: dict[str, Any]
    lora: dict[str, Any]
    dataset: dict[str, Any]
    rewards: list[RewardChoice]
    grpo: dict[str, Any]

    @property
    def project_dir(self) -> Path:
        return self.path.parent

    @property
    def preset(self) -> Preset:
        return plugins.get_preset(self.model["preset"])

    @property
    def reward_weights(self) -> list[float]:
        return [choice.weight for choice in self.rewards]

    def dataset_file(self) -> Path | None:
        """The local data file, or None when ``dataset.path`` names a hub dataset."""
        candidate = self.project_dir / self.dataset["path"]
        return candidate if candidate.suffix in LOCAL_DATA_SUFFIXES else None

    def model_path(self) -> str:
        """``model.name``, or the local build of a preset that makes its model on this machine (tiny)."""
        name, preset = self.model["name"], self.preset
        return preset.build_model() if preset.build_model and name == preset.model_id else name

    def chat_messages(self, question: str) -> list[dict[str, str]]:
        """One prompt as chat messages, with ``dataset.system_prompt`` first when it is set."""
        system = [{"role": "system", "content": self.dataset["system_prompt"]}] if self.dataset.get("system_prompt") else []
        return system + [{"role": "user", "content": question}]

    def build_rewards(self, tokenizer) -> list:
        """The configured rewards as TRL reward functions, from the registry, in [[rewards]] order."""
        return [
            plugins.get_reward(choice.name).build(tokenizer=tokenizer, preset=self.preset, params=choice.params)
            for choice in self.rewards
        ]


def _require(table: dict, section: str, key: str, kind: type | tuple[type, ...], hint: str):
    hint = _(hint)
    if key not in table:
        raise ConfigError(
            _("{section}.{key} is missing; add it to [{section}] ({hint})").format(section=section, key=key, hint=hint)
        )
    value = table[key]
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ConfigError(
            _("{section}.{key} = {value!r} must be a number ({hint})").format(
                section=section, key=key, value=value, hint=hint
            )
        )
    if not isinstance(value, kind):
        raise ConfigError(
            _("{section}.{key} = {value!r} has the wrong type ({hint})").format(
                section=section, key=key, value=value, hint=hint
            )
        )
    return value


def load(path: str | Path, overrides: dict[str, Any] | None = None) -> ProjectConfig:
    """Read and validate a project's config; ``overrides`` maps "section.key" to a value (CLI flags)."""
    path = Path(path)
    if path.is_dir():
        path = path / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(
            _("{path}: no such config file; run this inside a project made by 'grpo-skill new'").format(path=path)
        )
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(_("{path}: not valid TOML ({error}); fix that line").format(path=path, error=error)) from None
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".", 1)
        raw.setdefault(section, {})[key] = value

    for section in ("model", "lora", "dataset", "grpo"):
        if not isinstance(raw.get(section), dict):
            raise ConfigError(
                _("{path}: section [{section}] is missing; copy it from a freshly generated project").format(
                    path=path, section=section
                )
            )
    if not isinstance(raw.get("rewards"), list) or not raw["rewards"]:
        raise ConfigError(
            _("{path}: no [[rewards]] given; add at least one, e.g. [[rewards]] name = \"thinking\"").format(path=path)
        )

    plugins.register_project(path.parent)
    config = ProjectConfig(
        path=path,
        model=raw["model"],
        lora=raw["lora"],
        dataset=raw["dataset"],
        rewards=[_reward_choice(i, table) for i, table in enumerate(raw["rewards"])],
        grpo=raw["grpo"],
    )
    validate(config)
    return config


def _reward_choice(index: int, table: Any) -> RewardChoice:
    where = f"rewards[{index}]"
    if not isinstance(table, dict):
        raise ConfigError(_("{where} must be a table: [[rewards]] name = \"...\" weight = 1.0").format(where=where))
    name = _require(table, where, "name", str, N_("a reward from 'grpo-skill rewards'"))
    weight = table.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ConfigError(
            _("{where}.weight = {weight!r} must be a number, e.g. weight = 0.5").format(where=where, weight=weight)
        )
    params = table.get("params", {})
    if not isinstance(params, dict):
        raise ConfigError(_("{where}.params must be a table: [rewards.params] key = value").format(where=where))
    unknown = set(table) - {"name", "weight", "params"}
    if unknown:
        raise ConfigError(
            _("{where}.{key} is not a reward setting; use name, weight and params").format(
                where=where, key=sorted(unknown)[0]
            )
        )
    return RewardChoice(name, float(weight), params)


def validate(config: ProjectConfig) -> None:
    model, grpo = config.model, config.grpo
    _require(model, "model", "name", str, N_("a hub id or a local path"))
    _require(model, "model", "preset", str, N_("one of 'grpo-skill presets'"))
    backend = model.get("backend", "auto")
    if backend not in BACKENDS:
        raise ConfigError(
            _("model.backend = {backend!r} is not one of {choices}; pick one").format(
                backend=backend, choices=", ".join(BACKENDS)
            )
        )
    try:
        config.preset
    except RegistryError as error:
        raise ConfigError(f"model.preset: {error}") from None
    try:
        for index, choice in enumerate(config.rewards):
            _check_params(index, choice)
    except RegistryError as error:
        raise ConfigError(f"rewards: {error}") from None

    max_seq = _require(model, "model", "max_seq_length", int, N_("prompt + completion tokens"))
    completion = _require(grpo, "grpo", "max_completion_length", int, N_("tokens generated per completion"))
    if completion >= max_seq:
        raise ConfigError(
            _("grpo.max_completion_length ({completion}) leaves no room for the prompt in model.max_seq_length "
              "({max_seq}); lower it or raise max_seq_length").format(completion=completion, max_seq=max_seq)
        )
    generations = _require(grpo, "grpo", "num_generations", int, N_("completions per prompt, at least 2"))
    if generations < 2:
        raise ConfigError(
            _("grpo.num_generations = {generations}: GRPO compares completions, use at least 2").format(
                generations=generations
            )
        )
    batch = grpo.get("per_device_train_batch_size", 8) * grpo.get("gradient_accumulation_steps", 1)
    if batch % generations:
        raise ConfigError(
            _("grpo: per_device_train_batch_size x gradient_accumulation_steps = {batch} is not divisible by "
              "num_generations = {generations}; make the batch a multiple of {generations}").format(
                batch=batch, generations=generations
            )
        )
    if "reward_weights" in grpo and len(grpo["reward_weights"]) != len(config.rewards):
        raise ConfigError(
            _("grpo.reward_weights has {weights} weights for {rewards} rewards; "
              "remove it and set weight in each [[rewards]] instead").format(
                weights=len(grpo["reward_weights"]), rewards=len(config.rewards)
            )
        )
    for key in sorted(set(grpo) & set(SET_BY_TRAIN_PY)):
        raise ConfigError(
            _("grpo.{key} is set by train.py ({why}); remove it from [grpo]").format(
                key=key, why=_(SET_BY_TRAIN_PY[key])
            )
        )
    _require(config.dataset, "dataset", "path", str,
             N_("a local .jsonl/.json/.csv/.parquet file or a hub dataset id"))
    _require(config.dataset, "dataset", "prompt_column", str, N_("the column that holds the prompts"))
    check_dataset_columns(config)


def _check_params(index: int, choice: RewardChoice) -> None:
    reward = plugins.get_reward(choice.name)
    unknown = set(choice.params) - set(reward.params)
    if unknown:
        raise ConfigError(
            _("rewards[{index}].params.{param}: reward {name!r} takes {params}").format(
                index=index, param=sorted(unknown)[0], name=choice.name,
                params=", ".join(sorted(reward.params)) or _("no params"),
            )
        )


def check_dataset_columns(config: ProjectConfig) -> None:
    """For a local file, check that the prompt column (and the reward's columns) are there."""
    data_file = config.dataset_file()
    if data_file is None:
        return  # hub datasets are checked after loading, in train.py
    if not data_file.is_file():
        raise ConfigError(
            _("dataset.path: {path} does not exist; point it at your prompts file").format(path=data_file)
        )
    columns = _first_row_columns(data_file)
    if columns is None:
        return
    wanted = [("dataset.prompt_column", config.dataset["prompt_column"])]
    for choice in config.rewards:
        if "answer_column" in choice.params or choice.name == "accuracy":
            column = choice.params.get("answer_column", plugins.get_reward(choice.name).params.get("answer_column"))
            wanted.append((_("{name} reward's answer_column").format(name=choice.name), column))
    for what, column in wanted:
        if column not in columns:
            raise ConfigError(
                _("{what}: column {column!r} is not in {file} (it has: {columns}); fix the name or the file").format(
                    what=what, column=column, file=data_file.name, columns=", ".join(sorted(columns))
                )
            )


def _first_row_columns(data_file: Path) -> set[str] | None:
    with data_file.open(encoding="utf-8") as handle:
        if data_file.suffix == ".jsonl":
            first = next((line for line in handle if line.strip()), None)
            return set(json.loads(first)) if first else set()
        if data_file.suffix == ".csv":
            return set(next(csv.reader(handle), []))
        if data_file.suffix == ".json":
            rows = json.load(handle)
            return set(rows[0]) if isinstance(rows, list) and rows else None
    return None  # parquet: checked after loading
