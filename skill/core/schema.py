"""The schema of a project's config.toml: every table and key, their types and ranges, checked with pydantic.

Pure: it reads TOML text and returns plain validated data; it runs no user code and imports nothing heavy
(no torch, transformers or TRL), so the CLI and train.py can use it before any model loads. Checks that need
files (the dataset, the model folder, the project's rewards.py) belong to ``grpo_skill.project``.

``[grpo]`` is checked against TRL's GRPOConfig through ``data/grpo_config.json``: its fields, types, defaults and
choices, derived from the installed TRL by

    python -m grpo_skill.schema --write     # after changing the pinned TRL; tests/test_schema.py checks it

Here: reading the TOML, validating it, and the checks that span keys. The tables are ``tables``'s, GRPOConfig's
fields ``grpofields``'s, the messages ``schemamessages``'s, lines and TOML values ``tomlsource``'s; adding a table is
one small class in ``tables`` and one line in ``ProjectSchema``.
"""

from __future__ import annotations

import json
import re
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
    import tomli as tomllib
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ValidationError

from .grpocontents import check_contents
from .grpofields import GRPO_FIELDS_FILE, derive_grpo_fields, grpo_fields_json, grpo_value
from .i18n import N_, _
from .schemamessages import describe
from .tables import SftTable, project_schema, table_keys
from .tomlsource import ConfigError, Source

# The names this module had before it was split by job, importable from here (``grpo_skill.schema.toml_text``, ...).
from .grpofields import grpo_fields, trl_version  # noqa: F401,E402
from .schemamessages import field_at, suggest, unknown_key_message  # noqa: F401,E402
from .tables import (HINTS, MAX_REWARD_WEIGHT, REQUIRED_GRPO, DatasetTable, GrpoBase, LoraTable,  # noqa: F401,E402
                     ModelTable, ProjectSchema, RewardEntry, SftTable, Table, grpo_table, parse_reward_spec)
from .tomlsource import dotted, locate, toml_text, toml_value  # noqa: F401,E402

CONFIG_FILE = "config.toml"
BACKENDS = ("auto", "unsloth", "trl")

# GRPOConfig fields that train.py derives itself; setting them in [grpo] too would clash.
SET_BY_TRAIN_PY = {
    "reward_weights": N_("from the weights of the [[rewards]]"),
    "bf16": N_("from what the GPU supports"),
    "fp16": N_("from what the GPU supports"),
    "gradient_checkpointing": N_("from lora.gradient_checkpointing"),
    "disable_tqdm": N_("it draws its own progress bar"),
}

# GRPOConfig fields that evaluate during training, with their "off" value: train.py gives the trainer no
# eval_dataset, so Trainer would refuse any other value after the model has loaded.
NEEDS_EVAL_DATASET = {"eval_strategy": "no", "eval_on_start": False, "load_best_model_at_end": False,
                      "bf16_full_eval": False, "fp16_full_eval": False}

# SFTConfig fields that sft.py sets itself: in [sft] too they would clash (a TypeError once the model has loaded)
SET_BY_SFT_PY = {
    "completion_only_loss": N_("it trains on the completions only"),
    "bf16": N_("from what the GPU supports"),
    "fp16": N_("from what the GPU supports"),
    "save_strategy": N_("it saves the adapter once, at the end"),
    "disable_tqdm": N_("it draws its own progress bar"),
}
# ... and those that cannot act in its run: it saves no checkpoint and resumes none
SAVES_NO_CHECKPOINT = ("save_steps", "save_total_limit", "resume_from_checkpoint")


# ---- validation -----------------------------------------------------------------------------------------

def parse(text: str, path: str | Path) -> dict:
    if text.startswith("\ufeff"):  # Windows editors may save one; tomllib reads it as an "Invalid statement"
        raise ConfigError(_("{path}: starts with a byte-order mark (BOM), which TOML does not allow; save it as UTF-8 "
                            "without BOM").format(path=path))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        where = f"{path}:{match.group(1)}" if match else str(path)
        raise ConfigError(_("{where}: not valid TOML: {reason}; fix that line").format(where=where, reason=reason)
                          ) from None


def validate(raw: dict, source: Source, processes: int = 1,
             fit: Callable[[dict], tuple[int | None, int | None, int | None]] | None = None) -> dict:
    """Check ``raw`` (config.toml parsed, overrides applied) against the schema for a run on ``processes``
    processes; return plain data: model/lora/dataset with their defaults filled in, rewards as a list of tables,
    and [grpo] with only the keys the file sets (GRPOConfig supplies the rest); "warnings": values that can run but
    are surely not what was meant, each a line naming its key. ``fit``: the model's positions, the longest prompt in
    tokens and the room the prompts had before the command, of the data validated (each None where not known), for
    the advice of a budget that leaves the prompt no room (schema reads no model: the caller that can passes it)."""
    try:
        checked = project_schema().model_validate(raw)
    except ValidationError as error:
        raise describe(error, source, raw) from None
    data = {
        "model": _plain(checked.model, raw["model"]),
        "lora": _plain(checked.lora, raw["lora"]),
        "dataset": _plain(checked.dataset, raw["dataset"]),
        "rewards": [_plain(entry, table) for entry, table in zip(checked.rewards, raw["rewards"])],
        "grpo": {key: raw["grpo"][key] for key in checked.grpo.model_fields_set},
        "sft": _sft_plain(checked.sft, raw["sft"]) if checked.sft is not None else None,
    }
    for key in JSON_STRING_TABLES + JSON_OR_PATH_TABLES:
        text = data["grpo"].get(key)
        if isinstance(text, str) and (key in JSON_STRING_TABLES or text.lstrip().startswith("{")):
            data["grpo"][key] = _json_table(text, key, source)
    _check_together(data, source, processes, fit)
    data["warnings"] = _surprises(data, source)
    return data


# [grpo] tables that GRPOConfig also takes as a JSON string: read as the table it stands for, so that a malformed one
# is refused here, not in GRPOConfig or the trainer, and grpo-skill's own readers of them see a table
JSON_STRING_TABLES = ("lr_scheduler_kwargs", "gradient_checkpointing_kwargs", "model_init_kwargs", "generation_kwargs",
                      "chat_template_kwargs", "transformers_continuous_batching_config")
# ... and those where a string is a path to a JSON file unless it opens with "{" (transformers reads both)
JSON_OR_PATH_TABLES = ("accelerator_config", "fsdp_config", "deepspeed")


def _json_table(text: str, key: str, source: Source) -> dict:
    try:
        table = json.loads(text)
    except ValueError as error:
        reason = str(error)
    else:
        if isinstance(table, dict):
            return table
        reason = _("a JSON {kind}, not an object").format(kind=type(table).__name__)
    raise source.error(("grpo", key), _("{text!r} is not a JSON object ({reason}); write it as a TOML table instead, "
                                        "e.g. {key} = {{ name = value }}").format(text=text, reason=reason, key=key))


def _plain(model: BaseModel, raw: dict) -> dict:
    # the values as written (16 stays an int where a float is allowed), defaults for what is not written
    return {**model.model_dump(), **{key: raw[key] for key in model.model_fields_set}}



def _sft_plain(checked: SftTable, raw: dict) -> dict:
    # where the examples are, with its defaults; of SFTConfig's fields only what the file sets (sft.py has defaults)
    return {**{key: getattr(checked, key) for key in SftTable.model_fields},
            **{key: raw[key] for key in checked.model_fields_set}}


# Above this a LoRA learning rate is surely a mistake: GRPO with LoRA trains at 1e-6 to 1e-4 (the 4B presets 1e-5),
# SFT at up to a few 1e-4; only the tiny preset's 64-wide model takes 5e-3 (at 1e-2 its runs collapsed).
HIGHEST_USUAL_LEARNING_RATE = 1e-2


def _surprises(data: dict, source: Source) -> list[str]:
    """Values that run, and are surely not what was meant: a line for each."""
    found = []
    for table, usual in (("grpo", N_("GRPO with LoRA trains at 1e-6 to 1e-4 (the Qwen3-4B presets at 1e-5)")),
                         ("sft", N_("SFT with LoRA trains at 1e-5 to 1e-3 (sft.py's default 2e-4)"))):
        rate = (data[table] or {}).get("learning_rate")
        if isinstance(rate, (int, float)) and rate > HIGHEST_USUAL_LEARNING_RATE:
            found.append(source.said((table, "learning_rate"), _(
                "= {rate}: far above what LoRA runs use, and likely to diverge (a NaN loss) within a few steps; {usual}"
            ).format(rate=toml_value(rate), usual=_(usual))))
    weights = [entry["weight"] for entry in data["rewards"]]
    if weights and all(weight <= 0 for weight in weights):  # all 0 is refused in _check_together
        found.append(source.said(("rewards", 0, "weight"), _(
            "every [[rewards]] weight is 0 or negative: the run learns to score low on each of them; give the rewards "
            "you want more of a positive weight")))
    return found


def _check_together(data: dict, source: Source, processes: int = 1,
                    fit: Callable[[dict], tuple[int | None, int | None, int | None]] | None = None) -> None:
    """Checks that span keys: what TRL would refuse only after the model has loaded."""
    model, grpo = data["model"], data["grpo"]
    if not any(entry["weight"] for entry in data["rewards"]):
        raise source.error(("rewards", 0, "weight"), _(
            "every [[rewards]] weight is 0, so every completion scores 0 and GRPO has nothing to learn from; give at "
            "least one reward a weight other than 0"))
    for key in grpo:
        if key in SET_BY_TRAIN_PY:
            raise source.error(("grpo", key), _("set by train.py ({why}); remove it from [grpo]").format(
                why=_(SET_BY_TRAIN_PY[key])))
    if grpo.get("resume_from_checkpoint") is not None:
        raise source.error(("grpo", "resume_from_checkpoint"), _(
            "remove it from [grpo]; to continue a run, use python train.py --resume (it takes the last checkpoint "
            "in grpo.output_dir)"))
    for key, off in NEEDS_EVAL_DATASET.items():
        if key in grpo and grpo[key] != off:
            raise source.error(("grpo", key), _(
                "train.py trains without an eval dataset, so there is nothing to evaluate; remove it from "
                "[grpo] (evaluate.py scores the trained adapter)"))
    _check_refused_late(grpo, source)
    if grpo.get("chat_template_kwargs"):  # TRL reads it only for prompts given as chat messages
        raise source.error(("grpo", "chat_template_kwargs"), _(
            "train.py gives TRL its prompts already rendered by the chat template, so TRL never reads these; move "
            "them to [dataset] chat_template_kwargs"))
    _check_epochs_and_steps("grpo", grpo, source)
    if data["sft"] is not None:
        _check_sft(data["sft"], source)
    _check_vllm(grpo, source)
    _check_generation_kwargs(grpo, source)
    check_contents(grpo, source, processes)
    if model["compile_decoding"]:
        _check_compile_decoding(model, grpo, source)
    if model["generation"] == "fast":
        _check_fast_generation(model, grpo, source)
    if model["compile_layers"] is True:
        _check_compile_layers(model, grpo, source)
    completion, max_seq = grpo["max_completion_length"], model["max_seq_length"]
    if completion >= max_seq:
        raise source.error(("grpo", "max_completion_length"), _no_room(
            completion, max_seq, fit(data) if fit else (None, None, None), source))
    if grpo.get("auto_find_batch_size"):
        raise source.error(("grpo", "auto_find_batch_size"), _(
            "GRPO needs whole groups of num_generations in a batch, which shrinking the batch breaks; remove it"))
    generations = grpo["num_generations"]
    per_device = grpo_value(grpo, "per_device_train_batch_size")
    if "generation_batch_size" in grpo and "steps_per_generation" in grpo:
        raise source.error(("grpo", "generation_batch_size"), _(
            "set generation_batch_size or steps_per_generation, not both"))
    if "generation_batch_size" in grpo:
        batch, names = grpo["generation_batch_size"], "generation_batch_size"
        if batch % per_device:
            raise source.error(("grpo", "generation_batch_size"), _(
                "{batch} is not a multiple of per_device_train_batch_size = {per_device}").format(
                batch=batch, per_device=per_device))
    else:  # TRL's generation batch counts every process of a launch
        steps_key = "steps_per_generation" if "steps_per_generation" in grpo else "gradient_accumulation_steps"
        batch = per_device * grpo_value(grpo, steps_key) * processes
        names = f"per_device_train_batch_size x {steps_key}" + (
            " x " + _("{processes} processes").format(processes=processes) if processes > 1 else "")
    if batch % generations:
        problem = _("{names} = {batch} is not divisible by num_generations = {generations}; make the batch a "
                    "multiple of {generations}").format(names=names, batch=batch, generations=generations)
        gpus = next((n for n in (2, 4, 8) if "generation_batch_size" not in grpo and processes == 1
                     and batch * n % generations == 0), None)
        if gpus:  # a layout meant for several GPUs, checked on one
            problem += _(" (on {gpus} GPUs it would be {batch}: check such a launch with grpo-skill check "
                         "--gpus {gpus})").format(gpus=gpus, batch=batch * gpus)
        raise source.error(("grpo", "num_generations"), problem)


def _no_room(completion: int, max_seq: int, fit: tuple[int | None, int | None, int | None], source: Source) -> str:
    """Why grpo.max_completion_length (``completion``) leaves the prompt no room in model.max_seq_length
    (``max_seq``), and what fits: within the model's positions (its max_position_embeddings) where they are known,
    sized by the longest prompt (in tokens) where it was counted, else by the room the prompts had before the command
    (``fit``: those three), each value as the command that checks the config takes it."""
    positions, longest, room = fit
    problem = _("{completion} leaves no room for the prompt in model.max_seq_length ({max_seq})").format(
        completion=completion, max_seq=max_seq)
    if longest is not None:
        need, why = longest, _("the longest prompt is {longest} tokens").format(longest=longest)
    elif room is not None and (positions is None or room < positions):
        need = room
        why = (_("leaving the prompts the {room} tokens they had") if source.by_set
               else _("leaving the prompts the preset's {room} tokens")).format(room=room)
    elif positions is None:
        return _("{completion} leaves no room for the prompt in model.max_seq_length ({max_seq}); lower it or "
                 "raise max_seq_length").format(completion=completion, max_seq=max_seq)
    elif completion < positions:
        return _("{problem}; lower it, or raise max_seq_length (to at most {positions}, the tokens the model "
                 "reads: its max_position_embeddings)").format(problem=problem, positions=positions)
    else:
        return _("{problem}, and the model reads at most {positions} tokens (its max_position_embeddings), the "
                 "prompt included; lower it").format(problem=problem, positions=positions)
    if positions is not None and need >= positions:  # a counted prompt alone fills the model
        return _("{problem}, and the longest prompt ({longest} tokens) alone fills the {positions} tokens the model "
                 "reads (its max_position_embeddings); shorten the prompts").format(
            problem=problem, longest=need, positions=positions)
    if positions is None or completion + need <= positions:  # max_seq_length can make the room
        choices = [{"model.max_seq_length": completion + need}]
        if max_seq > need:  # or the budget can give it back
            choices.append({"grpo.max_completion_length": max_seq - need})
        return _("{problem}; {fix} ({why})").format(problem=problem, fix=_fix(source, choices), why=why)
    # the model's positions stop max_seq_length before the budget and the prompt fit: the budget is to lower
    settings = {"grpo.max_completion_length": positions - need}
    if max_seq != positions:
        settings["model.max_seq_length"] = positions
    return _("{problem}, and the model reads at most {positions} tokens (its max_position_embeddings); {fix} "
             "({why})").format(problem=problem, positions=positions, fix=_fix(source, [settings]), why=why)


def _fix(source: Source, choices: list[dict[str, int]]) -> str:
    """A fix of ``choices`` (each one "table.key" -> value, any of them fits) as the command that checks the config
    takes it: `grpo-skill set` its SECTION.KEY=VALUE, `new` its --set, a file its keys."""
    if source.by_set:
        shown = [" ".join(f"{key}={value}" for key, value in settings.items()) for settings in choices]
    elif source.by_new:
        shown = [" ".join(f"--set {key}={value}" for key, value in settings.items()) for settings in choices]
    else:
        shown = [_joined([f"{key} = {value}" for key, value in settings.items()], _("{first} and {second}"))
                 for settings in choices]
    either = _joined(shown, _("{first} or {second}"))
    if source.by_set:
        return _("give {settings} in this `grpo-skill set` command").format(settings=either)
    if source.by_new:
        return _("give {settings}").format(settings=either)
    return _("set {settings}").format(settings=either)


def _joined(parts: list[str], pattern: str) -> str:
    """``parts`` joined pairwise by ``pattern`` ("{first} and {second}"), as the language words a list."""
    joined = parts[0]
    for part in parts[1:]:
        joined = pattern.format(first=joined, second=part)
    return joined


def _check_step_counts(table: str, values: dict, source: Source) -> None:
    for key in ("logging_steps", "save_steps"):  # transformers: a share of the run below 1, whole steps above
        value = values.get(key)
        if isinstance(value, float) and value > 1 and not value.is_integer():
            raise source.error((table, key), _(
                "{value:g} is neither a share of the run's steps (below 1) nor a whole number of steps").format(
                value=value))


def _check_epochs_and_steps(table: str, values: dict, source: Source) -> None:
    """transformers runs max_steps steps whatever num_train_epochs says: both given, the epochs are ignored (a
    --max-steps on the command line over the file's epochs is meant to win: a quick run)."""
    quick_run = f"{table}.max_steps" in source.overridden and f"{table}.num_train_epochs" not in source.overridden
    if "num_train_epochs" in values and "max_steps" in values and not quick_run:
        raise source.error((table, "num_train_epochs"), _(
            "max_steps (set too) decides the run's length and transformers ignores num_train_epochs; remove one of "
            "the two"))


def _check_sft(sft: dict, source: Source) -> None:
    """[sft] values that sft.py sets itself or that cannot act in its run (SFTConfig or the trainer would refuse them
    after the model has loaded, or ignore them)."""
    for key in sft:
        if key in SET_BY_SFT_PY:
            raise source.error(("sft", key), _("set by sft.py ({why}); remove it from [sft]").format(
                why=_(SET_BY_SFT_PY[key])))
        if key in SAVES_NO_CHECKPOINT:
            raise source.error(("sft", key), _(
                "sft.py saves no checkpoints (only the adapter, at the end) and resumes none; remove it from [sft]"))
        if key in NEEDS_EVAL_DATASET and sft[key] != NEEDS_EVAL_DATASET[key]:
            raise source.error(("sft", key), _(
                "sft.py trains without an eval dataset, so there is nothing to evaluate; remove it from [sft]"))
    if sft.get("lr_scheduler_type") in ("reduce_lr_on_plateau", "greedy"):
        raise source.error(("sft", "lr_scheduler_type"), _(
            "{name!r} follows evaluation results, and sft.py runs no evaluation; choose another schedule, e.g. "
            "'constant' or 'cosine'").format(name=sft["lr_scheduler_type"]))
    _check_step_counts("sft", sft, source)
    _check_epochs_and_steps("sft", sft, source)


def _check_refused_late(grpo: dict, source: Source) -> None:
    """[grpo] values that transformers or TRL refuse in GRPOConfig or GRPOTrainer (after the model has loaded), or
    that cannot act in train.py's run."""
    _check_step_counts("grpo", grpo, source)
    if grpo.get("dataloader_prefetch_factor") is not None and not grpo.get("dataloader_num_workers"):
        raise source.error(("grpo", "dataloader_prefetch_factor"), _(
            "only applies with dataloader_num_workers above 0; set that too, or remove it"))
    if grpo.get("save_strategy") == "best":
        raise source.error(("grpo", "save_strategy"), _(
            "'best' saves on the best evaluation metric, and train.py runs no evaluation; use 'steps' (every "
            "save_steps)"))
    if grpo.get("lr_scheduler_type") in ("reduce_lr_on_plateau", "greedy"):
        raise source.error(("grpo", "lr_scheduler_type"), _(
            "{name!r} follows evaluation results, and train.py runs no evaluation; choose another schedule, e.g. "
            "'constant' or 'cosine'").format(name=grpo["lr_scheduler_type"]))
    if grpo.get("sync_ref_model"):
        raise source.error(("grpo", "sync_ref_model"), _(
            "train.py trains a LoRA adapter, whose reference model is the base with the adapter off: TRL cannot "
            "sync it; remove sync_ref_model"))
    if grpo.get("log_completions_hub_repo") is not None and not grpo.get("log_completions"):
        raise source.error(("grpo", "log_completions_hub_repo"), _(
            "uploads the completions that log_completions logs; set log_completions = true too, or remove it"))


# generation_kwargs keys that GRPOConfig has a field for: TRL lets generation_kwargs win when it samples, while the
# rest of the run reads the field (TRL scores log-probs at [grpo] temperature; plan, the rewards and the fast path's
# cache read max_completion_length)
SAMPLING_FIELDS = {"max_new_tokens": "max_completion_length", "temperature": "temperature", "top_p": "top_p",
                   "top_k": "top_k", "min_p": "min_p", "repetition_penalty": "repetition_penalty",
                   "cache_implementation": "cache_implementation"}


def _check_generation_kwargs(grpo: dict, source: Source) -> None:
    given = grpo.get("generation_kwargs")
    if not isinstance(given, dict):
        return
    for key, field in SAMPLING_FIELDS.items():
        if key in given:
            raise source.error(("grpo", "generation_kwargs"), _(
                "{key} here would override grpo.{field} only where TRL samples, while the rest of the run reads "
                "grpo.{field}; set grpo.{field} instead").format(key=key, field=field))
    if given.get("do_sample") is False:
        raise source.error(("grpo", "generation_kwargs"), _(
            "do_sample = false samples every completion of a group alike, so GRPO has no reward spread to learn "
            "from; remove it"))


def _check_vllm(grpo: dict, source: Source) -> None:
    """GRPOConfig's vllm_* fields act only where vLLM generates; TRL checks their clip range only once the model
    has loaded (TOML has no null, so the clip max is always set: its default 3.0 where not written)."""
    if not grpo.get("use_vllm"):
        for key in grpo:
            if key.startswith("vllm_"):
                raise source.error(("grpo", key), _(
                    "acts only where vLLM generates the completions (use_vllm = true); remove it"))
        return
    low, high = (grpo_value(grpo, f"vllm_importance_sampling_clip_{end}") for end in ("min", "max"))
    if low is not None and high is not None and low >= high:
        raise source.error(("grpo", "vllm_importance_sampling_clip_min"), _(
            "{low} must be less than vllm_importance_sampling_clip_max ({high})").format(low=low, high=high))


def _check_compile_decoding(model: dict, grpo: dict, source: Source) -> None:
    where = ("model", "compile_decoding")
    if model["backend"] == "unsloth":
        raise source.error(where, _("Unsloth decodes with its own CUDA graphs; compile_decoding is for backend = "
                                    "'trl': remove it, or set backend = 'trl'"))
    if model["load_in_4bit"] is True:
        raise source.error(where, _("with 4-bit weights a compiled decode step was measured slower, not faster "
                                    "(docs/benchmarks.md); set load_in_4bit = false (bf16 weights) or remove "
                                    "compile_decoding"))
    if grpo.get("use_vllm"):
        raise source.error(where, _("vLLM generates the completions, so there is no transformers decode step to "
                                    "compile; remove compile_decoding or use_vllm"))
    if grpo.get("cache_implementation") not in (None, "static"):
        raise source.error(("grpo", "cache_implementation"), _(
            "compile_decoding decodes with a static KV cache; remove cache_implementation (or set it to "
            "'static')"))


def _check_compile_layers(model: dict, grpo: dict, source: Source) -> None:
    where = ("model", "compile_layers")
    if model["backend"] == "unsloth":
        raise source.error(where, _("Unsloth trains with its own kernels; compile_layers is for backend = 'trl' or "
                                    "'auto': remove it, or change backend"))
    if grpo.get("torch_compile"):
        raise source.error(where, _("[grpo] torch_compile already compiles the whole model; remove one of the two"))


# GRPOConfig switches for TRL's generate_batch path (transformers' continuous batching), which bypasses the policy's
# generate and with it the fast path's copy
CONTINUOUS_BATCHING = ("use_transformers_continuous_batching", "use_transformers_paged")


def asks_for_another_generation_path(model: dict, grpo: dict, backend: str | None = None) -> bool:
    """Whether the config generates another way than the fast path's copy: with Unsloth (``backend``, else
    [model] backend), vLLM, transformers' continuous batching, or the policy's own compiled decoding."""
    return ((backend or model.get("backend")) == "unsloth" or bool(grpo.get("use_vllm"))
            or bool(model.get("compile_decoding")) or any(grpo.get(key) for key in CONTINUOUS_BATCHING))


def _check_fast_generation(model: dict, grpo: dict, source: Source) -> None:
    where = ("model", "generation")
    if model["backend"] == "unsloth":
        raise source.error(where, _("'fast' samples from a copy of the policy with the TRL backend; Unsloth generates "
                                    "with its own: set backend = 'auto' or 'trl', or generation = 'plain'"))
    if grpo.get("use_vllm"):
        raise source.error(where, _("vLLM generates the completions; remove use_vllm or set generation = 'plain'"))
    for key in CONTINUOUS_BATCHING:
        if grpo.get(key):
            raise source.error(where, _("with {key}, transformers' continuous batching generates the completions, "
                                        "not the copy; remove it or set generation = 'plain'").format(key=key))
    if model["compile_decoding"]:
        raise source.error(("model", "compile_decoding"), _(
            "the fast generation path compiles its own decode step; remove compile_decoding"))


# ---- python -m grpo_skill.schema --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grpo_skill.schema", description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"derive data/{GRPO_FIELDS_FILE} from the installed TRL")
    action.add_argument("--check", action="store_true", help="exit 1 when it differs from the installed TRL")
    action.add_argument("--keys", action="store_true", help="print the keys each table accepts, as JSON")
    args = parser.parse_args(argv)
    if args.keys:
        print(json.dumps(table_keys(), indent=1))
        return 0
    text = grpo_fields_json(derive_grpo_fields())
    target = Path(__file__).resolve().parents[1] / "data" / GRPO_FIELDS_FILE
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            print(f"{target} is stale: run python -m grpo_skill.schema --write", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
