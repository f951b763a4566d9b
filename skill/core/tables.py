"""config.toml's tables as pydantic models: every key, its type and range. ``[grpo]``'s model is built from
GRPOConfig's fields (``grpofields``); ``project_schema()`` is the whole file's."""

from __future__ import annotations

import math
import typing
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from .errors import UserError
from .grpofields import grpo_fields, sft_fields
from .i18n import N_, _


# ---- the tables -----------------------------------------------------------------------------------------

class Table(BaseModel):
    # strict: "16" is not 16 and true is not 1; extra="forbid": a typo is an error, not a silently ignored key
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


NonEmptyStr = Annotated[str, Field(min_length=1)]


class ModelTable(Table):
    preset: NonEmptyStr
    name: NonEmptyStr
    backend: Literal["auto", "unsloth", "trl"] = "auto"
    max_seq_length: Annotated[int, Field(ge=16)]
    # "auto": 16-bit weights where the run samples on the fast path (its copy then decodes with them), else 4-bit
    load_in_4bit: bool | Literal["auto"] = False
    # TRL backend: a static KV cache and a compiled decode step (runtime/decoding.py)
    compile_decoding: bool = False
    # how completions are sampled: "fast" from a bf16 copy of the policy (runtime/generation_copy.py),
    # "plain" by the backend itself, "auto" fast on a CUDA GPU where `plan` says the copy fits
    generation: Literal["auto", "fast", "plain"] = "auto"
    # the policy's decoder layers through torch.compile for scoring and training (runtime/model.py); "auto" (what new
    # writes): on a GPU's fast path where the run is long enough to repay the compile
    # (planning.resolve_compiled_layers). Absent: off, as the train.py of a project made before the key runs.
    compile_layers: bool | Literal["auto"] = False
    # a LoRA adapter folder to continue from (e.g. what sft.py saved); checked for existence by project.py
    adapter: NonEmptyStr | None = None


class LoraTable(Table):
    r: Annotated[int, Field(ge=1)]
    alpha: Annotated[float, Field(gt=0)]
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.0
    target_modules: Annotated[list[NonEmptyStr], Field(min_length=1)] | Literal["all-linear"]
    gradient_checkpointing: bool | Literal["unsloth", "auto"] = "auto"


class DatasetTable(Table):
    path: NonEmptyStr
    split: NonEmptyStr = "train"
    prompt_column: NonEmptyStr = "prompt"
    system_prompt: str = ""
    # passed to the tokenizer's apply_chat_template, e.g. {enable_thinking = false}
    chat_template_kwargs: dict[str, Any] = {}


# GRPO normalises the weighted total within each group, so only the weights' ratios matter; beyond this size a
# weight is a typo, and near float's limit the total overflows to inf.
MAX_REWARD_WEIGHT = 1000.0
RewardWeight = Annotated[float, Field(ge=-MAX_REWARD_WEIGHT, le=MAX_REWARD_WEIGHT)]


def parse_reward_spec(spec: str) -> tuple[str, float]:
    """``NAME`` or ``NAME:WEIGHT`` (``-r`` of `new`, `rewards try`): the one parser, with config.toml's bounds."""
    name, colon, weight_text = spec.partition(":")
    try:
        weight = float(weight_text) if colon else 1.0
    except ValueError:
        weight = None
    if not name.strip() or weight is None or not math.isfinite(weight):
        raise UserError(_("{spec!r}: write a reward as NAME or NAME:WEIGHT, the weight a finite number, e.g. "
                          "accuracy:0.5").format(spec=spec))
    if abs(weight) > MAX_REWARD_WEIGHT:
        raise UserError(_("{spec!r}: a weight from -{max:g} to {max:g}; only the weights' ratios matter, as GRPO "
                          "normalises the total").format(spec=spec, max=MAX_REWARD_WEIGHT))
    return name, weight


class RewardEntry(Table):
    name: NonEmptyStr
    weight: RewardWeight = 1.0
    # checked against the reward's declared params by project.py (it needs the registry)
    params: dict[str, Any] = {}


class SftTable(Table):
    """[sft]: the supervised warm start (sft.py): where its examples are, and where it writes; its other keys are
    SFTConfig's fields (data/grpo_config.json), see sft_table()."""

    path: NonEmptyStr = "data/sft.jsonl"
    split: NonEmptyStr = "train"
    prompt_column: NonEmptyStr = "prompt"
    thinking_column: str = "thinking"  # "": the examples hold no thinking
    response_column: NonEmptyStr = "response"
    output_dir: NonEmptyStr = "outputs/sft"


class GrpoBase(Table):
    """[grpo]: the fields come from GRPOConfig (data/grpo_config.json), see grpo_table()."""


class ProjectSchema(Table):
    model: ModelTable
    lora: LoraTable
    dataset: DatasetTable
    rewards: Annotated[list[RewardEntry], Field(min_length=1)]
    grpo: GrpoBase  # replaced by the model built from GRPOConfig's fields, see project_schema()
    sft: SftTable | None = None  # likewise, with SFTConfig's


# Hints for a missing key: what to write.
HINTS = {
    "model.preset": N_("one of 'grpo-skill presets'"),
    "model.name": N_("a hub id or a local model folder"),
    "model.max_seq_length": N_("prompt + completion tokens, e.g. 1024"),
    "lora.r": N_("the LoRA rank, e.g. 16"),
    "lora.alpha": N_("usually equal to r"),
    "lora.target_modules": N_('e.g. ["q_proj", "k_proj", "v_proj", "o_proj"]'),
    "dataset.path": N_("a local .jsonl/.json/.csv/.parquet file or a hub dataset id"),
    "grpo.output_dir": N_('where checkpoints and metrics go, e.g. "outputs"'),
    "grpo.max_completion_length": N_("tokens generated per completion"),
    "grpo.num_generations": N_("completions per prompt, at least 2"),
    "rewards.name": N_("a reward from 'grpo-skill rewards'"),
}

# Ranges of GRPOConfig fields that TRL leaves unchecked until the model has loaded (or never checks).
GRPO_LIMITS: dict[str, dict[str, float]] = {
    "learning_rate": {"gt": 0},
    "max_steps": {"ge": 1},
    "num_train_epochs": {"gt": 0},
    "num_generations": {"ge": 2},
    "max_completion_length": {"ge": 1},
    "per_device_train_batch_size": {"ge": 1},
    "gradient_accumulation_steps": {"ge": 1},
    "generation_batch_size": {"ge": 1},
    "steps_per_generation": {"ge": 1},
    "num_iterations": {"ge": 1},
    "beta": {"ge": 0},
    "epsilon": {"ge": 0},
    "temperature": {"gt": 0},
    "top_p": {"gt": 0, "le": 1},
    "top_k": {"ge": 0},
    "min_p": {"ge": 0, "le": 1},
    "repetition_penalty": {"gt": 0},
    "warmup_steps": {"ge": 0},
    "weight_decay": {"ge": 0},
    "max_grad_norm": {"ge": 0},
    "adam_beta1": {"ge": 0, "lt": 1},
    "adam_beta2": {"ge": 0, "lt": 1},
    "adam_epsilon": {"gt": 0},
    "logging_steps": {"gt": 0},
    "save_steps": {"gt": 0},
    "save_total_limit": {"ge": 1},
    "eval_steps": {"gt": 0},
    "seed": {"ge": 0},
    "torch_empty_cache_steps": {"ge": 1},
    "dataloader_num_workers": {"ge": 0},
    "dataloader_prefetch_factor": {"ge": 1},
    "top_entropy_quantile": {"ge": 0, "le": 1},
}
REQUIRED_GRPO = ("output_dir", "max_completion_length", "num_generations")
# SFTConfig's fields share TrainingArguments' ranges with GRPOConfig's
SFT_LIMITS: dict[str, dict[str, float]] = {"max_length": {"ge": 1}}


_models: dict[str, Any] = {}
_SIMPLE_TYPES = {
    "bool": bool, "int": int, "float": float, "str": str, "dict": dict[str, Any],
    "list[str]": list[str], "list[int]": list[int], "list[float]": list[float], "list": list,
    "false": Literal[False],
}


def _field_annotation(entry: dict, limits: dict | None):
    members = []
    for type_name in entry["type"]:
        if type_name == "null":
            continue  # TOML has no null: leave the key out instead
        if type_name == "str" and entry.get("choices"):
            members.append(Literal[tuple(entry["choices"])])
        elif type_name in _SIMPLE_TYPES:
            members.append(_SIMPLE_TYPES[type_name])
    if not members:
        return None  # e.g. parallelism_config (an accelerate object): not settable from a TOML file
    annotation = members[0] if len(members) == 1 else Union[tuple(members)]
    return Annotated[annotation, Field(**limits)] if limits else annotation


def grpo_table() -> type[Table]:
    if "grpo_table" not in _models:
        definitions = {}
        for name, entry in grpo_fields().items():
            annotation = _field_annotation(entry, GRPO_LIMITS.get(name))
            if annotation is not None:
                definitions[name] = (annotation, ... if name in REQUIRED_GRPO else None)
        _models["grpo_table"] = create_model("GrpoTable", __base__=GrpoBase, **definitions)
    return _models["grpo_table"]


def sft_table() -> type[SftTable]:
    """[sft]: SftTable's own keys, and SFTConfig's fields (output_dir stays SftTable's, with its default)."""
    if "sft_table" not in _models:
        definitions = {}
        for name, entry in sft_fields().items():
            annotation = _field_annotation(entry, SFT_LIMITS.get(name, GRPO_LIMITS.get(name)))
            if annotation is not None and name not in SftTable.model_fields:
                definitions[name] = (annotation, None)
        _models["sft_table"] = create_model("SftConfigTable", __base__=SftTable, **definitions)
    return _models["sft_table"]


def project_schema() -> type[ProjectSchema]:
    if "schema" not in _models:
        _models["schema"] = create_model("Project", __base__=ProjectSchema, grpo=(grpo_table(), ...),
                                         sft=(Optional[sft_table()], None))
    return _models["schema"]


def table_keys() -> dict[str, list[str]]:
    """Every key config.toml accepts, by table."""
    schema = project_schema()
    keys = {}
    for table, info in schema.model_fields.items():
        model = model_of(info.annotation)
        keys[table] = list(model.model_fields) if model else []
    return keys


def model_of(annotation) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (ModelTable, list[RewardEntry], SftTable | None), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_of(arg)
        if found:
            return found
    return None
