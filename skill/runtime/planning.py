"""A run's settings for the estimate (runtime/estimate.py), read from a project, a preset or a benchmark row; and
``[model] generation = "auto"`` made concrete by it."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

from ..core import sampling
from ..core.errors import home_expanded
from ..core.i18n import N_, _
from ..core.schema import asks_for_another_generation_path
from . import gpus
from .estimate import (KNOWN_SHAPES, ModelShape, PlanError, Settings, checkpointed_layers, estimate, known_shape,
                       needed_gib, with_static_cache)


# -- settings from a project, a preset or a benchmark row ---------------------------------------------------------

def shape_for(model_name: str) -> tuple[ModelShape, str]:
    """(shape, where it came from): a local folder's config.json, else the table of known shapes."""
    folder = home_expanded(model_name)
    if (folder / "config.json").is_file():
        return ModelShape.from_config(json.loads((folder / "config.json").read_text())), str(folder / "config.json")
    found = known_shape(model_name)
    if found is None:
        raise PlanError(_("no shape known for model {model!r}; point model.name at a local folder with its "
                          "config.json, or at a model of a known shape ({known}), e.g. grpo-skill plan --set "
                          "model.name=Qwen/Qwen3-8B").format(model=model_name, known=", ".join(sorted(KNOWN_SHAPES))))
    return found[1], _("known shape {name}").format(name=found[0])


def unsloth_installed() -> bool:
    """Whether the unsloth package is installed on this machine, which train.py's backend = "auto" asks
    (machine.choose_backend): found, not imported (plan imports no torch)."""
    return importlib.util.find_spec("unsloth") is not None


def backend_for(backend: str, processes: int, unsloth: bool = True) -> str:
    """The backend train.py takes (machine.choose_backend, on a CUDA GPU): auto is Unsloth on one GPU where the
    unsloth package is installed (``unsloth``), else TRL; TRL on several (Unsloth trains on one GPU only)."""
    if processes > 1:
        if backend == "unsloth":
            raise PlanError(_("backend unsloth trains on one GPU only; plan {n} GPUs with --backend trl").format(
                n=processes))
        return "trl"
    return "unsloth" if backend == "unsloth" or (backend == "auto" and unsloth) else "trl"


def processes_from_accelerate_config(path: str | Path) -> int:
    """How many processes (GPUs) an accelerate config file launches; only data-parallel (DDP) runs are planned."""
    import yaml

    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise PlanError(_("cannot read the accelerate config {path}: {reason}").format(
            path=path, reason=getattr(error, "strerror", None) or str(error).splitlines()[0])) from None
    if not isinstance(config, dict):
        raise PlanError(_("{path} is not an accelerate config file (a YAML mapping)").format(path=path))
    kind = str(config.get("distributed_type", "NO"))
    if kind == "NO":
        return 1
    if kind != "MULTI_GPU":
        raise PlanError(_("{path}: distributed_type {kind} shards the model's memory, which plan does not estimate; "
                          "plan data-parallel runs (accelerate/ddp.yaml) or give --gpus N").format(path=path, kind=kind))
    processes = config.get("num_processes")
    if not isinstance(processes, int) or processes < 1:
        raise PlanError(_("{path}: num_processes must be a whole number of GPUs; give --gpus N").format(path=path))
    return processes


def _grpo_settings(grpo: dict, lora: dict, model: dict, backend: str, shape: ModelShape, prompt_tokens: int,
                   processes: int = 1, unsloth: bool = True) -> Settings:
    split = sampling.split_problem(grpo, processes)
    if split:
        raise PlanError(split)
    gradient_checkpointing = lora.get("gradient_checkpointing", "unsloth")
    generation = model.get("generation", "auto")
    if asks_for_another_generation_path(model, grpo, backend):
        generation = "plain"
    backend = "trl" if generation == "fast" else backend_for(backend, processes, unsloth)
    compiled = bool(model.get("compile_decoding")) and backend == "trl"
    if compiled:  # what train.py sets for it
        grpo = with_static_cache(grpo, model)
    return Settings(
        shape=shape, backend=backend, processes=processes, compiled_decoding=compiled, generation=generation,
        max_seq_length=int(model.get("max_seq_length", 512)),
        load_in_4bit=_load_in_4bit(model.get("load_in_4bit", True)), lora_r=int(lora.get("r", 16)),
        lora_targets=_lora_targets(lora.get("target_modules", Settings.lora_targets)),
        gradient_checkpointing=gradient_checkpointing,
        checkpoint_every_n_layers=every_n_layers(grpo),
        num_generations=int(grpo.get("num_generations", 8)),
        per_device_train_batch_size=int(grpo.get("per_device_train_batch_size", 8)),
        gradient_accumulation_steps=int(grpo.get("gradient_accumulation_steps", 1)),
        steps_per_generation=grpo.get("steps_per_generation"), generation_batch_size=grpo.get("generation_batch_size"),
        max_completion_length=int(grpo.get("max_completion_length", 256)), prompt_tokens=prompt_tokens,
        beta=float(grpo.get("beta", 0.0)), loss_type=str(grpo.get("loss_type", Settings.loss_type)),
        entropy_per_micro_batch=(float(grpo.get("top_entropy_quantile", 1.0)) < 1
                                 or float(grpo.get("entropy_coef", 0.0) or 0.0) != 0
                                 or bool(grpo.get("use_adaptive_entropy"))),
        optim=str(grpo.get("optim", "adamw_torch")),
        use_liger_kernel=bool(grpo.get("use_liger_kernel", False)),
        static_cache_tokens=(((grpo.get("generation_kwargs") or {}).get("max_cache_len") or 0)
                             if grpo.get("cache_implementation") == "static" else None),
        max_steps=int(grpo["max_steps"]) if grpo.get("max_steps") and int(grpo["max_steps"]) > 0 else None,
        num_iterations=int(grpo.get("num_iterations") or 1),
        compiled_layers=model.get("compile_layers", "auto"), whole_model_compiled=bool(grpo.get("torch_compile")),
    )


def _lora_targets(targets) -> tuple[str, ...]:
    """[lora] target_modules as names; "all-linear" is peft's every linear layer but lm_head: the decoder's seven."""
    return Settings.lora_targets if targets == "all-linear" else tuple(targets)


def checkpointing_kwargs(grpo: dict) -> dict:
    """[grpo] gradient_checkpointing_kwargs as a dict (GRPOConfig takes a JSON string too)."""
    kwargs = grpo.get("gradient_checkpointing_kwargs") or {}
    return json.loads(kwargs) if isinstance(kwargs, str) else dict(kwargs)


def every_n_layers(grpo: dict) -> int:
    """[grpo] gradient_checkpointing_kwargs' every_n_layers (transformers' option), 1 where it is not given."""
    return int(checkpointing_kwargs(grpo).get("every_n_layers", 1))


def _load_in_4bit(value) -> bool | str:
    return "auto" if value == "auto" else bool(value)


def from_project(path: str | Path, backend: str | None = None, prompt_tokens: int | None = None,
                 processes: int = 1, overrides: dict | None = None, unsloth: bool = True,
                 longest_prompt=None) -> tuple[Settings, dict]:
    """``overrides``: `plan --set`; ``longest_prompt``: counts the prompts, for the advice of a budget that leaves
    them no room (project.load)."""
    from ..core import project

    config = project.load(path, overrides, processes=processes, longest_prompt=longest_prompt)
    return from_config(config, backend, prompt_tokens, processes, unsloth)


def from_config(config, backend: str | None = None, prompt_tokens: int | None = None,
                processes: int = 1, unsloth: bool = True) -> tuple[Settings, dict]:
    """Settings of a loaded project (``project.ProjectConfig``); ``unsloth``: whether backend = "auto" finds the
    unsloth package (machine.choose_backend), see unsloth_installed. ``about["backend_requested"]``: the backend
    asked for (``backend``, else the config's)."""
    from ..core.project import model_positions

    local = config.local_model_dir()
    shape, source = shape_for(str(local) if local is not None else config.model["name"])
    found = _prompt_length(prompt_tokens, config.dataset_file(), config.dataset, config.model["name"],
                           config.model_path() if config.builds_its_model() or local else None)
    model_dir = config.model_path() if config.builds_its_model() else None
    notes = _prompt_room(found, config.grpo["max_completion_length"], config.model["max_seq_length"],
                         model_positions(config, model_dir))
    requested = backend or config.model.get("backend", "auto")
    settings = replace(_grpo_settings(config.grpo, config.lora, config.model, requested, shape, found.tokens,
                                      processes, unsloth), dataset_rows=config.dataset_rows)
    return settings, {"project": str(config.project_dir), "preset": config.model["preset"],
                      "model": config.model["name"], "shape_source": source,
                      "max_seq_length": config.model["max_seq_length"], "prompt_tokens_source": found.how,
                      "backend_requested": requested, "notes": notes}


def _prompt_length(given: int | None, data_file: Path | None, dataset: dict, model: str,
                   tokenizer_folder: str | None):
    """The longest prompt in tokens (promptlength.PromptLength), and how that was found: given, measured with the
    model's tokenizer, or guessed."""
    from . import promptlength

    if given:
        return promptlength.PromptLength(given, _("given with --prompt-tokens"), measured=True)
    return promptlength.longest(data_file, dataset.get("prompt_column", "prompt"), dataset.get("system_prompt", ""),
                                dataset.get("chat_template_kwargs"), tokenizer_folder or model, model)


def _prompt_room(found, completion: int, limit: int, positions: int | None = None) -> list[str]:
    """A run whose longest prompt (given or measured) and a full completion pass max_seq_length is one train.py
    refuses: so is its plan (its fix within the model's ``positions``, where known). A guessed length that passes it
    is a note."""
    from .data import prompt_room_problem

    problem = prompt_room_problem(found.tokens, completion, limit, positions)
    if problem and found.measured:
        raise PlanError(problem)
    if problem:
        return [_("prompts guessed at up to ~{longest} tokens and a full completion ({completion}) pass "
                  "max_seq_length ({limit}): train.py refuses prompts that long; --prompt-tokens N plans their real "
                  "length").format(longest=found.tokens, completion=completion, limit=limit)]
    return []


def from_preset(name: str, backend: str | None = None, prompt_tokens: int | None = None,
                processes: int = 1, unsloth: bool = True) -> tuple[Settings, dict]:
    """Settings of a preset, as `new` writes its project (backend = "auto"); ``unsloth`` as from_config's."""
    from dataclasses import asdict as as_dict
    from importlib import resources

    from ..core import plugins

    preset = plugins.get_preset(name)
    shape, source = shape_for(preset.model_id)
    sample = Path(str(resources.files("grpo_skill.templates").joinpath("project/_i18n/data/prompts.en.jsonl")))
    found = _prompt_length(prompt_tokens, sample, {"chat_template_kwargs": dict(preset.chat_template_kwargs)},
                           preset.model_id, preset.build_model() if preset.build_model else None)
    notes = _prompt_room(found, int(preset.grpo.get("max_completion_length", 256)), preset.max_seq_length)
    model = {"load_in_4bit": preset.load_in_4bit, "max_seq_length": preset.max_seq_length}
    settings = _grpo_settings(dict(preset.grpo), as_dict(preset.lora), model, backend or "auto", shape, found.tokens,
                              processes, unsloth)
    return settings, {"preset": preset.name, "model": preset.model_id, "shape_source": source,
                      "max_seq_length": preset.max_seq_length, "prompt_tokens_source": found.how,
                      "backend_requested": backend or "auto", "notes": notes}


def ran_on_report_gpu(row: dict, report: dict) -> bool:
    """Whether a benchmark row ran on the GPU its report's header names (a row merged from another card says so
    in ``run_gpu``): timings of two cards are not one measurement."""
    return row.get("run_gpu") in (None, (report.get("environment") or {}).get("gpu"))


def from_benchmark_row(row: dict, shape: ModelShape, gpu_gib: float | None = None) -> Settings:
    """A benchmark row's settings; a row that left the path to ``backend = "auto"`` is resolved as train.py said it
    took it (``took``), or else as it would resolve it on the benchmark's GPU (or the smaller card it ran as)."""
    settings = row["settings"]
    prompt = row.get("prompt_tokens_per_sequence") or settings.get("prompt_tokens") or 40
    model = {**settings["model"], "compile_decoding": bool(settings.get("compile_decode"))}
    resolved = _grpo_settings(settings["grpo"], settings["lora"], model, settings["backend"], shape,
                              int(round(prompt)), int(settings.get("processes", 1)))
    gpu_gib = row.get("gpu_gib") or gpu_gib  # a row run as on a smaller card (the benchmark's BENCH_GPU_GIB)
    requested = resolved
    if settings["backend"] == "auto" and gpu_gib:
        resolved, _why = resolve_generation(resolved, gpu_gib)
    if gpu_gib:
        resolved, _why = resolve_checkpointing(resolved, gpu_gib)
    took = row.get("took") or {}  # what train.py said it took: the run itself, over any re-resolution
    resolved = replace(resolved, **{key: took[key] for key in ("backend", "generation", "load_in_4bit",
                                                               "gradient_checkpointing") if key in took})
    if took:  # its micro-batches as it ran them (rows from before "auto" split them ran the row's own)
        given = {key: getattr(requested, key) for key in MICRO_BATCH_KEYS}
        resolved = replace(resolved, **{**given, **took.get("micro_batches", {})})
    if "gradient_checkpointing" in took:  # rows from before partial checkpointing checkpointed every layer
        resolved = replace(resolved, checkpoint_every_n_layers=took.get("checkpoint_every_n_layers", 1))
    return replace(resolved, copy_shares_frozen=bool(settings.get("copy_shares_frozen")),
                   copy_keeps_cache=bool(settings.get("copy_keeps_cache")),
                   compiled_layers=bool(took.get("compiled_layers")))  # rows from before it: uncompiled


def gpu_memory_gib() -> float | None:
    """The memory of this process's GPU from nvidia-smi (the first GPU's where it cannot say which), if there is one
    (no torch)."""
    found = gpus.this_process_gpu("memory.total", or_first=True)
    try:
        return float(found[0]) / 1024 if found else None
    except ValueError:
        return None


FAST_GENERATION_MARGIN = 0.9  # the fast path is chosen when its estimate leaves a tenth of the GPU's memory free
# transformers' every_n_layers tried by "auto" checkpointing where the run does not fit without it, fewest
# checkpointed layers first (Qwen3-4B's 36 layers: 5, 6, 9, 12, 18 of them)
PARTIAL_CHECKPOINTING = (8, 6, 4, 3, 2)


def generation_path(settings: Settings) -> str:
    """How completions are sampled: "fast" (a bf16 copy of the policy), "unsloth", "trl" or "trl compiled"."""
    if settings.generation == "fast":
        return "fast"
    if settings.backend == "unsloth":
        return "unsloth"
    return "trl compiled" if settings.compiled_decoding else "trl"


def checkpointing_on(backend: str) -> str | bool:
    """Gradient checkpointing on, as ``backend`` takes it: Unsloth's own ("unsloth") on Unsloth, transformers' (true)
    on TRL, where train.py passes GRPOConfig gradient_checkpointing = true."""
    return "unsloth" if backend == "unsloth" else True


def checkpointing_without_estimate(backend: str, cuda: bool, processes: int = 1) -> tuple[str | bool, str] | None:
    """(on, as the backend takes it, why) where "auto" gradient checkpointing needs no estimate: on the Unsloth
    backend (its own), without a CUDA GPU, or under several processes; else None."""
    if backend == "unsloth":
        return "unsloth", _("Unsloth's own, which keeps the activations in CPU memory")
    if not cuda:
        return checkpointing_on(backend), _("no CUDA GPU: less memory")
    if processes > 1:
        return checkpointing_on(backend), _("several processes: on, as plan does not size each one's GPU here")
    return None


def several_processes_generation() -> str:
    """Why "auto" generation keeps the backend's own under several processes (train.py and plan say the same)."""
    return _("several processes: the fast path runs in a single process")


def resolve_checkpointing(settings: Settings, gpu_gib: float | None, cuda: bool = True) -> tuple[Settings, str]:
    """([lora] gradient_checkpointing = "auto" made concrete, why): off on the TRL backend on a CUDA GPU where the run's
    estimate without it fits (the backward then runs no second forward: on an H200, 2026-12-05, the standard
    preset's backward took 0.24 s a step instead of 0.39), otherwise on (checkpointing_on: Unsloth's own on the
    Unsloth backend, transformers' on TRL). A value set in config.toml is kept, except that on the TRL backend any
    "on" is transformers' own (true), as train.py passes it."""
    value = settings.gradient_checkpointing
    if value != "auto":
        said = _("gradient_checkpointing = {value}").format(value=json.dumps(value))
        if value and settings.backend != "unsloth" and value is not True:
            return replace(settings, gradient_checkpointing=True), said + _(": transformers' own on the TRL backend")
        return settings, said
    on = replace(settings, gradient_checkpointing=checkpointing_on(settings.backend))
    settled = checkpointing_without_estimate(settings.backend, cuda, settings.processes)
    if settled:
        return on, settled[1]
    if gpu_gib is None:
        return on, _("the GPU's memory is not known")
    off = replace(settings, gradient_checkpointing=False)
    need = needed_gib(estimate(off))
    if need <= gpu_gib * FAST_GENERATION_MARGIN:
        return off, _("plan without it: {need:.1f} GiB of {gpu:.0f} GiB").format(need=need, gpu=gpu_gib)
    why = _("without it the run needs about {need:.1f} GiB, more than nine tenths of this GPU's {gpu:.0f} GiB").format(
        need=need, gpu=gpu_gib)
    if on.checkpoint_every_n_layers == 1 and on.backend == "trl":  # the fewest checkpointed layers that fit
        for every in PARTIAL_CHECKPOINTING:
            partial = replace(on, checkpoint_every_n_layers=every)
            if needed_gib(estimate(partial)) <= gpu_gib * FAST_GENERATION_MARGIN:
                return partial, why + _("; on for one layer in {every} ({layers} of {total}), the fewest that fit: "
                                        "the others keep their activations, not recomputed in the backward").format(
                    every=every, layers=checkpointed_layers(partial), total=settings.shape.num_hidden_layers)
    return on, why


# TRL's losses whose optimizer step is the same however its completions are split into micro-batches: each divides
# by the whole step's sequences or tokens ("bnpo" divides each micro-batch by its own tokens).
SPLIT_INVARIANT_LOSSES = ("dapo", "grpo", "dr_grpo", "cispo", "sapo", "vespo")


def split_keeps_the_step(settings: Settings) -> bool:
    """Whether the optimizer step is the same however its completions are split into micro-batches: a loss of
    SPLIT_INVARIANT_LOSSES and no entropy term computed per micro-batch (TRL 1.14's top_entropy_quantile threshold
    and entropy bonus)."""
    return settings.loss_type in SPLIT_INVARIANT_LOSSES and not settings.entropy_per_micro_batch


def resolve_generation(settings: Settings, gpu_gib: float | None, cuda: bool = True) -> tuple[Settings, str]:
    """([model] generation = "auto" made concrete, why): the fast path on a CUDA GPU where its estimate fits; where
    it fits only in smaller micro-batches (the same completions and loss in each optimizer step), the fast path in
    those when plan estimates it faster than the backend's own generation; otherwise the backend's own. Without a
    known GPU size, the fast path, with what it needs said."""
    if settings.generation != "auto":  # asked for, or another way of generating asked for (schema's
        # asks_for_another_generation_path): say which
        if settings.backend == "unsloth":
            return settings, _("the unsloth backend generates with its own")
        if settings.compiled_decoding:
            return settings, _("compile_decoding = true: the policy decodes, compiled")
        return settings, _("set in config.toml")
    plain = replace(settings, generation="plain")
    if not cuda:
        return plain, _("no CUDA GPU: the fast path compiles on a GPU only")
    if settings.processes > 1:
        return plain, several_processes_generation()
    fast = replace(settings, generation="fast", backend="trl", compiled_decoding=False)
    need = needed_gib(estimate(fast))
    if gpu_gib is None:
        return fast, _("needs about {need:.1f} GiB of GPU memory").format(need=need)
    if need <= gpu_gib * FAST_GENERATION_MARGIN:
        return fast, _("plan: {need:.1f} GiB of {gpu:.0f} GiB").format(need=need, gpu=gpu_gib)
    why = _("the fast path needs about {need:.1f} GiB, more than nine tenths of this GPU's {gpu:.0f} GiB").format(
        need=need, gpu=gpu_gib)
    split = smaller_micro_batches(fast, gpu_gib)
    if split and _step_s(split[0], gpu_gib) < _step_s(plain, gpu_gib):
        smaller, change, parts = split
        return smaller, why + _("; in {parts} micro-batches it fits ({need:.1f} GiB), [grpo] {change}: the same "
                                "completions and loss in each optimizer step, as many in each generation").format(
            parts=parts, need=needed_gib(estimate(smaller)), change=change_text(change))
    return plain, why


# torch.compile's "max-autotune" for the fast path's decode step times Triton matmuls against cuBLAS for each of its
# shapes. On an H100 (2026-12-06, docs/benchmarks.md) the decode step took 6.16 ms against 7.72 at batch 32 and
# 7.29 against 8.71 at batch 64; in training one generation took 10.3 s against 11.7 (the thinking case, -12%; 7.4
# against 8.7 in a later call) and 3.46 against 3.66 (standard, -5%), and the first one 35, 73 and 59 s longer. It
# is taken where the run's generations surely repay that: plan's generation time for the whole run times the
# smaller gain, against the longest first compile measured.
AUTOTUNE_GENERATION_GAIN = 0.05
AUTOTUNE_EXTRA_COMPILE_S = 75.0


def _resumed(settings: Settings) -> str:
    """What a reason that counts the run's steps adds for a resumed run: the step it resumed at, the steps left."""
    if not settings.steps_done:
        return ""
    return " (" + _("resumed at step {done}: {left} steps left").format(done=settings.steps_done,
                                                                        left=settings.max_steps) + ")"


def decode_compile_mode(settings: Settings, calibration: dict | None = None,
                        tunes_matmuls: bool = True) -> tuple[str, str]:
    """(torch.compile's mode for the fast path's decode step, why): "max-autotune" where the run (its
    ``max_steps``) is long enough to repay its longer first compile, "reduce-overhead" (transformers' own) where it
    is not, where its length is not known, or on a GPU whose matmuls inductor does not tune (``tunes_matmuls``).
    ``calibration``: the GPU's (grpo_skill.gpus), as plan uses it."""
    if not settings.max_steps:
        return "reduce-overhead", _("max_steps not set (the run's epochs decide its length): transformers' own; set "
                                    "max_steps to let a long run take max-autotune")
    generations = -(-settings.max_steps * settings.gradient_accumulation_steps // settings.micro_steps_per_generation)
    seconds = generations * estimate(settings, calibration).generation_s_per_cycle
    if seconds * AUTOTUNE_GENERATION_GAIN > AUTOTUNE_EXTRA_COMPILE_S:
        if not tunes_matmuls:
            return "reduce-overhead", _("this GPU has too few streaming multiprocessors for inductor to tune matmuls")
        return "max-autotune", _("{generations} generations, ~{minutes:.0f} min by plan: max-autotune (faster matmuls, "
                                 "up to ~{extra:.0f} s more to compile the first)").format(
            generations=generations, minutes=seconds / 60, extra=AUTOTUNE_EXTRA_COMPILE_S) + _resumed(settings)
    return "reduce-overhead", _("{generations} generations, ~{minutes:.1f} min by plan: too few to repay "
                                "max-autotune's longer first compile (up to ~{extra:.0f} s)").format(
        generations=generations, minutes=seconds / 60, extra=AUTOTUNE_EXTRA_COMPILE_S) + _resumed(settings)


# [model] compile_layers = "auto": the first step's extra seconds to compile the decoder layers (the variants a step
# meets: with and without grad, with and without the adapters), on an H100 (2026-12-06, the thinking case: a first
# step of 111 s against ~25 with the decode step's compile cached)
COMPILED_LAYERS_COMPILE_S = 90.0
COMPILE_LAYERS_ON_UNSLOTH = N_("compile_layers applies to the TRL backend; Unsloth trains with its own kernels")


def resolve_compiled_layers(settings: Settings, calibration: dict | None = None) -> tuple[Settings, str | None]:
    """(settings with ``[model] compile_layers`` made concrete, why where it was "auto"): on where the run's steps
    save more training time than compiling the layers costs, on the paths it was measured on (the fast path, bf16
    layers, one process). Call it with generation and checkpointing resolved."""
    if settings.compiled_layers != "auto" or settings.backend != "trl":  # Unsloth trains with its own kernels
        return replace(settings, compiled_layers=settings.compiled_layers is True and settings.backend == "trl"), None

    def off(why: str) -> tuple[Settings, str]:
        return replace(settings, compiled_layers=False), why

    if settings.whole_model_compiled:
        return off(_("[grpo] torch_compile: the trainer compiles the whole model"))
    if settings.processes > 1:
        return off(_("several processes: compiled layers were measured on one GPU"))
    if settings.generation != "fast":
        return off(_("off the fast path the policy's layers decode too, which compiled layers were not measured on"))
    if settings.holds_4bit:
        return off(_("4-bit layers: compiled layers were measured with 16-bit ones"))
    if not settings.max_steps:
        return off(_("max_steps not set (the run's epochs decide its length); set it to let a long run compile"))
    saved = settings.max_steps * (estimate(replace(settings, compiled_layers=False), calibration).train_s_per_step
                                  - estimate(replace(settings, compiled_layers=True), calibration).train_s_per_step)
    said = {"steps": settings.max_steps, "saved": int(saved), "compile": COMPILED_LAYERS_COMPILE_S}  # 89.6: "89"
    if saved > COMPILED_LAYERS_COMPILE_S:
        return replace(settings, compiled_layers=True), _(
            "{steps} steps save ~{saved} s of training by plan, for ~{compile:.0f} s of compiling in the first "
            "step").format(**said) + _resumed(settings)
    return off(_("{steps} steps would save ~{saved} s of training by plan: too few to repay ~{compile:.0f} s of "
                 "compiling in the first step").format(**said) + _resumed(settings))


def resolved(settings: Settings, gpu_gib: float | None, calibration: dict | None = None) -> Settings:
    """``settings`` with "auto" generation, checkpointing and compiled layers made concrete as train.py makes them
    on a CUDA GPU of ``gpu_gib``."""
    settings, _why = resolve_generation(settings, gpu_gib)
    settings = resolve_checkpointing(settings, gpu_gib)[0]
    return resolve_compiled_layers(settings, calibration)[0]


def _step_s(settings: Settings, gpu_gib: float) -> float:
    """plan's s/step of ``settings`` with "auto" checkpointing resolved as train.py would."""
    return estimate(resolve_checkpointing(settings, gpu_gib)[0]).s_per_step


def smaller_micro_batches(settings: Settings, gpu_gib: float) -> tuple[Settings, dict, int] | None:
    """(settings, [grpo] changes, passes): the run's micro-batch split into as few smaller ones as make ``settings``
    fit the GPU, each optimizer step accumulating the same completions and each generation sampling as many; None
    where the loss would change with the split (split_keeps_the_step), the micro-batch cannot be split or no split
    fits."""
    if not split_keeps_the_step(settings):
        return None
    batch = settings.per_device_train_batch_size
    for parts in (2, 4, 8, 16, 32):
        if parts > batch or batch % parts:
            continue
        change = regrouped(settings, batch // parts)
        smaller = replace(settings, **change)
        if needed_gib(estimate(smaller)) <= gpu_gib * FAST_GENERATION_MARGIN:
            return smaller, change, parts
    return None


MICRO_BATCH_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation")


def micro_batch_change(requested: Settings, resolved: Settings) -> dict:
    """The [grpo] micro-batch settings that resolving "auto" changed (empty where none)."""
    return {key: getattr(resolved, key) for key in MICRO_BATCH_KEYS
            if getattr(resolved, key) != getattr(requested, key)}


def regrouped(settings: Settings, per_device: int) -> dict:
    """[grpo] changes that pass each optimizer step's completions, and each generation's, in micro-batches of
    ``per_device`` (which divides the step's; steps_per_generation counts micro-batches)."""
    batch = settings.per_device_train_batch_size
    change = {"per_device_train_batch_size": per_device,
              "gradient_accumulation_steps": batch * settings.gradient_accumulation_steps // per_device}
    if settings.steps_per_generation:
        change["steps_per_generation"] = settings.steps_per_generation * batch // per_device
    return change


def larger_micro_batches(settings: Settings) -> list[tuple[Settings, dict]]:
    """(settings, [grpo] changes) for each way of merging the run's accumulated micro-batches into fewer, larger ones,
    fewest passes first: each optimizer step the same completions and the same loss, each generation as many. None
    where the loss would change with the split (an empty list). Each pass costs the host a launch of every kernel, whatever its
    size: a micro-batch of one short completion is bound by that (docs/benchmarks.md, 2026-12-06)."""
    if not split_keeps_the_step(settings):
        return []
    accumulation, merges = settings.gradient_accumulation_steps, []
    for parts in range(accumulation, 1, -1):
        if accumulation % parts or (settings.steps_per_generation and settings.steps_per_generation % parts):
            continue
        merged_global = settings.per_device_train_batch_size * parts * settings.processes
        if settings.generation_batch_size and settings.generation_batch_size % merged_global:
            continue  # TRL: the generation batch must be a whole number of the processes' micro-batches
        change = regrouped(settings, settings.per_device_train_batch_size * parts)
        merges.append((replace(settings, **change), change))
    return merges


def change_text(change: dict) -> str:
    return ", ".join(f"{key} = {json.dumps(value)}" for key, value in change.items())
