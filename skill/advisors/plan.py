"""`grpo-skill plan`: the peak GPU memory and the seconds per step of a GRPO run, what fits a GPU, what is faster.

The estimate itself is runtime/estimate.py (train.py's generation choice uses it too). Its constants are refitted with

    python -m grpo_skill.plan --calibrate docs/benchmarks.json    # prints CALIBRATION for runtime/estimate.py
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path

from ..core.i18n import N_, _
from ..runtime.estimate import (CALIBRATION, CUDA_CONTEXT_GIB, GIB, KNOWN_SHAPES, Estimate, ModelShape, PlanError,
                                Settings, estimate, known_shape, needed_gib)
from ..runtime.planning import (COMPILE_LAYERS_ON_UNSLOTH, change_text, checkpointing_on, decode_compile_mode,
                                from_benchmark_row, from_config, from_preset, from_project, generation_path,
                                gpu_memory_gib, larger_micro_batches,
                                processes_from_accelerate_config, ran_on_report_gpu, resolve_checkpointing,
                                resolve_compiled_layers, resolve_generation, resolved, unsloth_installed)

# The names above (besides what this module uses) stay here for `grpo_skill.plan`'s callers: the estimate and the
# settings reading moved to the runtime, which train.py's generation choice needs.
__all__ = ["CALIBRATION", "CUDA_CONTEXT_GIB", "GIB", "KNOWN_SHAPES", "Estimate", "ModelShape", "PlanError", "Settings",
           "estimate", "known_shape", "needed_gib", "from_config", "from_preset", "from_project", "gpu_memory_gib",
           "processes_from_accelerate_config", "resolve_generation", "unsloth_installed", "plan", "render_text",
           "calibrate", "main"]


# -- advice --------------------------------------------------------------------------------------------------------

def valid_generation_steps(settings: Settings, spg: int) -> bool:
    """TRL generates whole groups of completions: the generation batch of all processes together must be a multiple
    of num_generations, and its prompts no more than the dataset has (else it trains 0 steps: check refuses it)."""
    batch = settings.per_device_train_batch_size * settings.processes * spg
    return spg >= 1 and batch % settings.num_generations == 0 and (
        settings.dataset_rows is None or batch // settings.num_generations <= settings.dataset_rows)


def _option(change: dict, result: Estimate, same_step: bool = False) -> dict:
    """A setting plan offers, with its estimate; ``same_step``: each optimizer step learns what it did."""
    option = {"change": change, "peak_reserved_gib": round(result.peak_reserved_gib, 1),
              "s_per_step": round(result.s_per_step, 2)}
    return {**option, "same_step": True} if same_step else option


def changes_to_fit(settings: Settings, budget_gib: float, calibration: dict | None = None) -> list[dict]:
    """Single changes that bring the estimate under ``budget_gib``, most useful first, each with its estimate."""
    candidates = []
    spg = settings.generation_steps
    while spg > 1:
        spg //= 2
        if valid_generation_steps(settings, spg):
            candidates.append(({"steps_per_generation": spg}, dict(steps_per_generation=spg,
                                                                   generation_batch_size=None)))
    if settings.generation == "fast":
        candidates.append(({"model.generation": "plain"}, dict(generation="plain")))
    if not settings.holds_4bit:
        candidates.append(({"model.load_in_4bit": True}, dict(load_in_4bit=True)))
    if not settings.gradient_checkpointing:  # as the backend takes it on: "unsloth" on Unsloth, true on TRL
        on = checkpointing_on(settings.backend)
        candidates.append(({"lora.gradient_checkpointing": on}, dict(gradient_checkpointing=on)))
    if settings.backend == "trl" and not settings.use_liger_kernel and "lm_head" not in settings.lora_targets:
        candidates.append(({"use_liger_kernel": True}, dict(use_liger_kernel=True)))
    length = settings.max_completion_length
    while length > 64:
        length //= 2
        candidates.append(({"max_completion_length": length}, dict(max_completion_length=length)))
    if settings.per_device_train_batch_size > settings.num_generations:
        candidates.append(({"per_device_train_batch_size": settings.num_generations},
                           dict(per_device_train_batch_size=settings.num_generations)))
    found, seen = [], set()
    for change, fields in candidates:
        result = estimate(replace(settings, **fields), calibration)
        key = next(iter(change))
        if needed_gib(result) <= budget_gib and key not in seen:
            seen.add(key)
            found.append(_option(change, result))
    return found


def faster_that_fits(requested: Settings, budget_gib: float, calibration: dict | None = None) -> dict | None:
    """The fastest steps_per_generation (up to 16 micro-batches) that still fits, its "auto" settings resolved as
    train.py would: a larger one may only fit on a slower path, a smaller one may bring the run back onto the fast
    path (less KV cache). In the config's own units: where it sets generation_batch_size, the generation batch of
    that many micro-batches."""
    best = None
    for spg in (1, 2, 4, 8, 16):
        if (spg == requested.generation_steps or spg < requested.gradient_accumulation_steps
                or not valid_generation_steps(requested, spg)):
            continue
        change = ({"generation_batch_size": spg * requested.per_device_train_batch_size * requested.processes}
                  if requested.generation_batch_size else {"steps_per_generation": spg})
        chosen = resolved(replace(requested, steps_per_generation=spg, generation_batch_size=None), budget_gib,
                          calibration)
        result = estimate(chosen, calibration)
        if needed_gib(result) <= budget_gib and (best is None or result.s_per_step < best["s_per_step"]):
            # one generation serves more (fewer) optimizer steps: more (less) off-policy, which changes what is learned
            steps = [max(requested.generation_steps // requested.gradient_accumulation_steps, 1),
                     max(spg // requested.gradient_accumulation_steps, 1)]
            best = {**_option(change, result), "generation_path": generation_path(chosen),
                    "optimizer_steps_per_generation": steps}
    return best


def fewer_passes_that_fit(requested: Settings, budget_gib: float, calibration: dict | None = None) -> dict | None:
    """The fastest merge of the run's micro-batches into larger ones (planning.larger_micro_batches) that still fits,
    its "auto" settings resolved as train.py would, with its estimate."""
    best = None
    for merged, change in larger_micro_batches(requested):
        result = estimate(resolved(merged, budget_gib, calibration), calibration)
        if needed_gib(result) <= budget_gib and (best is None or result.s_per_step < best["s_per_step"]):
            best = _option(change, result, same_step=True)
    return best


FASTER_BY = 0.05  # a setting is offered as faster where the (rough) estimate gains at least this share of a step


def backend_why(settings: Settings, requested: str | None, option: str | None, unsloth: bool | None) -> str:
    """Why the run trains with ``settings.backend`` (its "auto" generation resolved): ``requested`` is the backend
    asked for (about's backend_requested), ``option`` plan's --backend, ``unsloth`` whether the unsloth package is
    installed on this machine (None: not asked)."""
    if option:
        return _("--backend {backend}").format(backend=option)
    if requested and requested != "auto":
        return _("backend = \"{backend}\" in config.toml").format(backend=requested)
    if settings.processes > 1:
        return _("backend = \"auto\": several processes train with TRL")
    if settings.generation == "fast":
        return _("backend = \"auto\": the fast path trains with TRL")
    if unsloth is None:
        return 'backend = "auto"'
    if unsloth:
        return _("backend = \"auto\": the unsloth package is installed on this machine")
    return _("backend = \"auto\": the unsloth package is not installed on this machine")


def auto_alternative(settings: Settings, other: Settings, unsloth: bool, gpu_gib: float | None,
                     calibration: dict | None = None) -> dict | None:
    """What backend = "auto" takes on a machine where the unsloth package is (``unsloth``: is not) installed, as
    this one's is not (is): ``other``, the run's settings planned so, resolved as train.py would; None where it
    takes the same backend and generation path as ``settings`` (resolved)."""
    other = resolved(other, gpu_gib, calibration)
    if other.backend == settings.backend and generation_path(other) == generation_path(settings):
        return None
    result = estimate(other, calibration)
    return {"unsloth_installed": not unsloth, "backend": other.backend, "generation_path": generation_path(other),
            "peak_reserved_gib": round(result.peak_reserved_gib, 2), "needed_gib": round(needed_gib(result), 2),
            "s_per_step": round(result.s_per_step, 2),
            "fits": None if gpu_gib is None else needed_gib(result) <= gpu_gib}


def plan(settings: Settings, about: dict, gpu_gib: float | None, calibration: dict | None = None,
         tunes_matmuls: bool = True, unsloth: bool | None = None, other: Settings | None = None,
         backend_option: str | None = None) -> dict:
    """``calibration``: constants for another GPU than the H200 they were fitted on (grpo_skill.gpus);
    ``tunes_matmuls``: whether torch.compile's max-autotune tunes matmuls on that GPU; ``unsloth``: whether the
    unsloth package is installed on this machine, as ``settings`` took backend = "auto" (None: not asked);
    ``other``: the settings planned as if it were not (were), said as ``auto_alternative`` where they differ;
    ``backend_option``: plan's --backend."""
    requested = settings
    settings, generation_why = resolve_generation(settings, gpu_gib)
    settings, checkpointing_why = resolve_checkpointing(settings, gpu_gib)
    settings, compiled_layers_why = resolve_compiled_layers(settings, calibration)
    if compiled_layers_why is None and settings.backend == "trl":  # true or false (a project without the key: off)
        compiled_layers_why = "compile_layers = " + ("true" if requested.compiled_layers is True else "false")
    result = estimate(settings, calibration)
    notes = list(about.get("notes") or [])
    if unsloth is False and settings.backend == "unsloth":  # asked for by name: train.py here would refuse it
        notes.append(_("the unsloth package is not installed on this machine, where train.py would refuse backend "
                       "unsloth (pip install 'grpo-skill[unsloth]'); this plans a machine that has it"))
    if requested.compiled_layers is True and settings.backend != "trl":  # train.py says the same and goes on
        notes.append(_(COMPILE_LAYERS_ON_UNSLOTH))
    compile_mode, compile_why = (decode_compile_mode(settings, calibration, tunes_matmuls) if settings.generation == "fast"
                                 else (None, None))
    out = {**about, "settings": {**asdict(settings), "shape": asdict(settings.shape), "holds_4bit": settings.holds_4bit,
                                  "generation_steps": settings.generation_steps,
                                  "generation_batch": settings.generation_batch},
           "peak_allocated_gib": round(result.peak_allocated_gib, 2),
           "peak_reserved_gib": round(result.peak_reserved_gib, 2),
           "needed_gib": round(needed_gib(result), 2),
           "eager_reserved_gib": round(result.eager_reserved_gib, 2),
           "parts_gib": {name: round(value, 2) for name, value in result.parts_gib.items()},
           "s_per_step": round(result.s_per_step, 2),
           "generation_s_per_cycle": round(result.generation_s_per_cycle, 2),
           "train_s_per_step": round(result.train_s_per_step, 2),
           "backend_why": backend_why(settings, about.get("backend_requested"), backend_option, unsloth),
           "unsloth_installed": unsloth,
           "auto_alternative": (auto_alternative(settings, other, unsloth, gpu_gib, calibration)
                                if other is not None and unsloth is not None else None),
           "notes": notes,
           "generation_path": generation_path(settings), "generation_why": generation_why,
           "decode_compile_mode": compile_mode, "decode_compile_why": compile_why,
           "gradient_checkpointing": bool(settings.gradient_checkpointing), "checkpointing_why": checkpointing_why,
           "compiled_layers": settings.compiled_layers, "compiled_layers_why": compiled_layers_why,
           "gpu_memory_gib": gpu_gib, "fits": None, "changes": []}
    if settings.processes > 1:  # against one GPU as train.py runs the project there (the fast path, where it fits)
        one_gpu = resolved(replace(requested, processes=1), gpu_gib, calibration)
        out["data_parallel"] = data_parallel(settings, result, calibration, one_gpu)
        if generation_path(one_gpu) != "fast":  # the config keeps one GPU off the fast path: what it would give there
            fast = resolved(replace(requested, processes=1, generation="auto", compiled_decoding=False), gpu_gib,
                            calibration)
            if generation_path(fast) == "fast":
                out["data_parallel"]["one_gpu_fast_path"] = {
                    "completions_per_s": round(fast.global_batch / estimate(fast, calibration).s_per_step, 2)}
    if gpu_gib is not None:
        out["fits"] = needed_gib(result) <= gpu_gib
        if out["fits"]:
            faster = min(filter(None, (faster_that_fits(requested, gpu_gib, calibration),
                                       fewer_passes_that_fit(requested, gpu_gib, calibration))),
                         key=lambda option: option["s_per_step"], default=None)
            out["faster"] = faster if faster and faster["s_per_step"] < result.s_per_step * (1 - FASTER_BY) else None
        else:
            out["changes"] = changes_to_fit(settings, gpu_gib, calibration)
    return out


def data_parallel(settings: Settings, result: Estimate, calibration: dict | None = None,
                  one_gpu: Settings | None = None) -> dict:
    """Several GPUs against one (``one_gpu``: the run on one GPU, by default these settings on one process): the global
    batch, completions per second, and the batch that keeps one GPU's."""
    one_gpu = one_gpu or replace(settings, processes=1)
    one = estimate(one_gpu, calibration)
    per_second = settings.global_batch / result.s_per_step
    out = {"processes": settings.processes, "global_batch": settings.global_batch,
           "communication_s_per_step": round(result.communication_s_per_step, 3),
           "completions_per_s": round(per_second, 2),
           "speedup": round(per_second / (one_gpu.global_batch / one.s_per_step), 2),
           "one_gpu_path": generation_path(one_gpu), "same_global_batch": None}
    if settings.per_device_train_batch_size % settings.processes == 0:
        smaller = replace(settings, per_device_train_batch_size=settings.per_device_train_batch_size // settings.processes)
        if valid_generation_steps(smaller, smaller.generation_steps):
            out["same_global_batch"] = {"per_device_train_batch_size": smaller.per_device_train_batch_size,
                                        "s_per_step": round(estimate(smaller, calibration).s_per_step, 2)}
    return out


PART_NAMES = {"weights": N_("weights"), "generation_copy": N_("generation copy"), "lora_and_optimizer": N_("LoRA + optimizer"),
              "training_activations": N_("training activations"), "training_logits": N_("logits"),
              "generation_kv_cache": N_("generation KV cache"), "generation_scoring": N_("generation scoring"),
              "other": N_("other")}


def _gpu_lines(result: dict) -> list[str]:
    """What the times are for: the H200 they were measured on, or another card they were scaled to."""
    gpu = result.get("gpu")
    if not gpu:
        return []
    if gpu.get("unknown"):
        return [_("  the GPU {name} is not in plan's table: these are an H200's times; --gpu NAME scales them to a "
                  "card it knows").format(name=gpu["unknown"])]
    return [_("  scaled to {name} ({given}) from spec sheets: decoding x{decode:.1f} by memory bandwidth ({bandwidth:g} "
              "GB/s), training x{train:.1f} by bf16 compute ({tflops:g} TFLOP/s); a rough guide, not a measurement").format(
        name=gpu["name"], given=_("detected") if gpu.get("detected") else "--gpu", decode=gpu["decode_slower"],
        bandwidth=gpu["bandwidth_gb_s"], train=gpu["train_slower"], tflops=gpu["bf16_tflops"])]


def render_text(result: dict) -> str:
    """The plan in a few lines, for people."""
    settings = result["settings"]
    what = result.get("project") or _("preset {preset}").format(preset=result["preset"])
    if result.get("set"):  # plan --set: what if
        what += " " + _("with {settings}").format(settings=", ".join(
            f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in result["set"].items()))
    lines = [_("{what}: {model} ({source}), backend {backend}, {weights}").format(
        what=what, model=result["model"], source=result["shape_source"], backend=settings["backend"],
        weights=(_("4-bit") if settings["holds_4bit"] else _("16-bit weights")) + (
            _(" (load_in_4bit = \"auto\")") if settings["load_in_4bit"] == "auto" else ""))]
    if result.get("backend_why"):
        lines.append(_("backend: {backend} ({why})").format(backend=settings["backend"], why=result["backend_why"]))
    other = result.get("auto_alternative")
    if other:
        said = (_("where the unsloth package is installed, \"auto\" takes instead: backend {backend}, generation "
                  "{path}, ~{needed:.1f} GiB, ~{step:.1f} s/step") if other["unsloth_installed"] else
                _("without the unsloth package, \"auto\" takes instead: backend {backend}, generation {path}, "
                  "~{needed:.1f} GiB, ~{step:.1f} s/step")).format(
            backend=other["backend"], path=other["generation_path"], needed=other["needed_gib"],
            step=other["s_per_step"])
        if other["fits"] is False:
            said += _("; does not fit")
        if other["backend"] == "unsloth" or not other["unsloth_installed"]:  # what --backend gives alike
            said += _("; --backend {backend} plans it").format(backend=other["backend"])
        lines.append("  " + said)
    lines.append(_("generation: {path} ({why})").format(path=result["generation_path"], why=result["generation_why"]))
    if result.get("decode_compile_mode"):
        lines.append(_("decode step: torch.compile {mode}: {why}").format(mode=result["decode_compile_mode"],
                                                                        why=result["decode_compile_why"]))
    lines.append(_("gradient checkpointing: {state} ({why})").format(
        state=_("on") if result["gradient_checkpointing"] else _("off"), why=result["checkpointing_why"]))
    if result["compiled_layers"] or result.get("compiled_layers_why"):
        lines.append(_("decoder layers compiled for training: {state} ({why})").format(
            state=_("yes") if result["compiled_layers"] else _("no"),
            why=result["compiled_layers_why"]))
    lines += [_("note: {note}").format(note=note) for note in result.get("notes", [])]
    per_step = (_("per optimizer step, on each GPU: {completions} completions of {length} tokens (batch {batch} x "
                  "{accumulation} accumulation), prompts up to ~{prompt} tokens; {sequences} sequences generated at a "
                  "time, for {every} micro-step(s)") if result.get("data_parallel") else
                _("per optimizer step: {completions} completions of {length} tokens (batch {batch} x {accumulation} "
                  "accumulation), prompts up to ~{prompt} tokens; {sequences} sequences generated at a time, for "
                  "{every} micro-step(s)"))
    lines.append(per_step.format(
        completions=settings["per_device_train_batch_size"] * settings["gradient_accumulation_steps"],
        length=settings["max_completion_length"], batch=settings["per_device_train_batch_size"],
        accumulation=settings["gradient_accumulation_steps"], prompt=settings["prompt_tokens"],
        sequences=settings["generation_batch"], every=settings["generation_steps"]))
    memory = {"allocated": result["peak_allocated_gib"], "reserved": result["peak_reserved_gib"],
              "needed": result["needed_gib"]}
    if result["compiled_layers"] and result["eager_reserved_gib"] > result["peak_reserved_gib"]:
        lines.append(_("peak GPU memory: ~{allocated:.1f} GiB allocated, ~{reserved:.1f} GiB reserved with the decoder "
                       "layers compiled; fitted to the GPU as if uncompiled, ~{needed:.1f} GiB with the CUDA context "
                       "(past torch's recompile limit they run uncompiled)").format(**memory))
    else:
        lines.append(_("peak GPU memory: ~{allocated:.1f} GiB allocated, ~{reserved:.1f} GiB reserved, ~{needed:.1f} "
                       "GiB with the CUDA context").format(**memory))
    lines.append("  " + " | ".join(f"{_(PART_NAMES[name])} {value:.1f}" for name, value in result["parts_gib"].items()))
    if result.get("prompt_tokens_source"):
        lines.append(_("prompt length: {how}").format(how=result["prompt_tokens_source"]))
    lines.append(_("time (rough; calibrated on an H200): ~{step:.1f} s per optimizer step (generation {generation:.1f} s "
                   "per cycle, training {train:.1f} s per step)").format(
        step=result["s_per_step"], generation=result["generation_s_per_cycle"], train=result["train_s_per_step"]))
    lines += _gpu_lines(result)
    if result.get("data_parallel"):
        parallel = result["data_parallel"]
        lines.append(_("on {n} GPUs (data-parallel; memory is per GPU): {batch} completions per step ({n} x the "
                       "per-device batch), ~{comm:.2f} s of it exchanging gradients and results; ~{rate:.1f} "
                       "completions/s, ~{speedup:.1f}x one GPU as train.py runs it there (generation {path}; the "
                       "exchange is guessed, not yet measured)").format(
            n=parallel["processes"], batch=parallel["global_batch"], comm=parallel["communication_s_per_step"],
            rate=parallel["completions_per_s"], speedup=parallel["speedup"], path=parallel["one_gpu_path"]))
        fast = parallel.get("one_gpu_fast_path")
        if fast:
            lines.append(_("one GPU on the fast path instead ([model] generation = \"auto\", without compile_decoding): "
                           "~{rate:.1f} completions/s").format(rate=fast["completions_per_s"]))
        same = parallel["same_global_batch"]
        if same:
            lines.append(_("one GPU's {batch} completions per step instead: per_device_train_batch_size = {size}, "
                           "~{step:.1f} s/step").format(
                batch=parallel["global_batch"] // parallel["processes"], size=same["per_device_train_batch_size"],
                step=same["s_per_step"]))
    if result["fits"] is None:
        lines.append(_("give --gpu-memory GIB to check that it fits"))
    elif result["fits"]:
        lines.append(_("fits in {gpu:.1f} GiB").format(gpu=result["gpu_memory_gib"]))
        if result.get("faster"):
            faster = result["faster"]
            lines.append(_("faster and still fitting: {change} (~{reserved:.1f} GiB reserved, ~{step:.1f} s/step)").format(
                change=change_text(faster["change"]), reserved=faster["peak_reserved_gib"], step=faster["s_per_step"]))
            if faster.get("command"):  # a project's: the command that writes it
                lines.append("  " + faster["command"])
            if faster.get("generation_path") not in (None, result["generation_path"]):
                lines.append(_("  generation then takes the {path} path (now {current})").format(
                    path=faster["generation_path"], current=result["generation_path"]))
            if faster.get("same_step"):
                lines.append(_("  the same completions and loss in each optimizer step, as many in each generation: "
                               "only the micro-batches differ"))
            if faster.get("optimizer_steps_per_generation"):
                before, after = faster["optimizer_steps_per_generation"]
                if after > before:
                    lines.append(_("  one generation for {after} optimizer steps instead of {before}: more off-policy "
                                   "(the later steps train on completions an older policy sampled), which changes what "
                                   "is learned").format(before=before, after=after))
                elif after < before:
                    lines.append(_("  one generation for {after} optimizer steps instead of {before}: closer to "
                                   "on-policy (fewer steps train on completions an older policy sampled), which changes "
                                   "what is learned").format(before=before, after=after))
    else:
        lines.append(_("does not fit in {gpu:.1f} GiB (needs ~{needed:.1f} GiB)").format(
            gpu=result["gpu_memory_gib"], needed=result["needed_gib"]))
        if result["changes"]:
            lines.append(_("changes that make it fit, one at a time:"))
            for item in result["changes"]:
                lines.append("  " + _("{change}: ~{reserved:.1f} GiB reserved, ~{step:.1f} s/step").format(
                    change=change_text(item["change"]), reserved=item["peak_reserved_gib"], step=item["s_per_step"]))
                if item.get("command"):
                    lines.append("    " + item["command"])
        else:
            lines.append(_("no single change makes it fit: use a smaller model, or a GPU with more memory"))
    return "\n".join(lines)


def plan_preset(preset: str, settings, backend: str | None, prompt_tokens: int | None, processes: int,
                unsloth: bool = True):
    """`plan --preset P --set ...`: the project `new` would write with these settings, rendered in a temporary folder
    and planned; nothing of the user's is written. Returns from_project's (settings, about)."""
    import tempfile

    from ..scaffold import generator

    with tempfile.TemporaryDirectory() as scratch:
        rendered = generator.render_project("what-if", scratch, preset_name=preset, settings=settings,
                                            shown_as=Path(), command="plan")  # files named as the project's
        planned, about = from_project(rendered.target, backend, prompt_tokens, processes, unsloth=unsloth)
    about.pop("project", None)
    about["set"] = settings.dotted()
    about["notes"] = rendered.notes
    return planned, about


# -- calibration ---------------------------------------------------------------------------------------------------

MEMORY_CONSTANTS = ("fixed_gib", "activation_factor", "logit_bytes_unsloth", "logit_bytes_trl", "logit_bytes_liger",
                    "generation_logit_bytes_unsloth", "kv_factor", "reserved_ratio_unsloth", "reserved_ratio_trl")
TIME_CONSTANTS = ("decode_base_s_unsloth", "decode_per_sequence_s_unsloth", "decode_base_s_trl",
                  "decode_per_sequence_s_trl", "decode_base_s_trl_4bit", "decode_per_sequence_s_trl_4bit",
                  "decode_base_s_trl_compiled", "decode_per_sequence_s_trl_compiled",
                  "decode_base_s_copy", "decode_per_sequence_s_copy",
                  "train_flops_per_s_unsloth", "train_flops_per_s_trl", "train_flops_per_s_trl_4bit",
                  "train_flops_per_s_copy", "host_s_per_layer_pass", "step_overhead_s", "step_overhead_s_copy")


def measured_rows(report: dict) -> list[tuple[dict, Settings]]:
    """(row, settings) for every row of a benchmark report that measured its peak memory, except rows whose program
    the benchmark changed (``ablate``, e.g. scoring a generation in one batch): no config.toml can ask for those, so
    the estimate has no setting for what they change. Each row says whether it ran on the report's own GPU
    (``on_report_gpu``): the times are fitted on that card; a row merged from another counts for memory only, its
    "auto" settings resolved against its own card's memory."""
    shape = ModelShape.from_config(report["model"]["shape"])
    environment = report.get("environment") or {}
    return [({**row, "on_report_gpu": ran_on_report_gpu(row, report)},
             from_benchmark_row(row, shape, row.get("run_gpu_gib") or environment.get("gpu_memory_gib")))
            for row in report.get("rows", [])
            if row.get("peak_allocated_gib") and row.get("settings") and not row["settings"].get("ablate")]


# The decode-step table of docs/benchmarks.json (benchmarks/decode_profile.py) measures the fast path's decode step
# at several batch sizes, which the training rows (one batch size per case) cannot tell apart into base and per
# sequence: its rows of the path train.py takes are fitted too.
# The path train.py's fast generation takes (its default levers, GRPOTrainer's stop tokens); only the rows measured
# on the report's own GPU, whose times the fit is for.
COPY_DECODE_PATH = ("copy with adapters apart in bf16, grouped decode, fused projections, cache of 1024, "
                    "windows of 128, stop tokens, stop check deferred")


def decode_errors(report: dict, calibration: dict) -> list[float]:
    """log(estimate / measured) of the fast path's decode step at each batch size of the decode table."""
    k, table = {**CALIBRATION, **calibration}, report.get("decode") or {}
    gpu = (report.get("environment") or {}).get("gpu")
    return [math.log((k["decode_base_s_copy"] + k["decode_per_sequence_s_copy"] * row["batch"])
                     / (row["decode_ms"] / 1000))
            for row in table.get("rows", [])
            if row.get("path") == COPY_DECODE_PATH and row.get("decode_ms")
            and row.get("device", table.get("device")) == gpu]


def errors(rows, calibration: dict) -> list[float]:
    """log(estimate / measured) of every measured quantity of every row: memory, and on the report's GPU the time
    (the fast path's generation and training apart where the row measured its phases), except where the row says
    its time is ``superseded`` (the code it measured has changed since)."""
    out = []
    for row, settings in rows:
        result = estimate(settings, calibration)
        out.append(math.log(result.peak_allocated_gib / row["peak_allocated_gib"]))
        if row.get("peak_reserved_gib"):
            out.append(math.log(result.peak_reserved_gib / row["peak_reserved_gib"]))
        # 4-bit with compiled decoding: measured (slower), but refused in a project, so not a time to fit
        if row.get("s_per_step") and row["on_report_gpu"] and not row.get("superseded") and not (
                settings.compiled_decoding and settings.holds_4bit):
            # the fast path's split into generating and training, where the row measured its phases; the other
            # paths' decode step has no term for the cache's length, so their split is left to the total
            phases = row.get("phases_s_per_step") or {}
            generation = phases.get("generation") if settings.generation == "fast" else None
            if generation and generation < row["s_per_step"]:
                out.append(0.5 * math.log((result.s_per_step - result.train_s_per_step) / generation))
                out.append(0.5 * math.log(result.train_s_per_step / (row["s_per_step"] - generation)))
            else:
                out.append(0.5 * math.log(result.s_per_step / row["s_per_step"]))  # time counts less than memory
    return out


# A pull of each constant towards its current value, in squared log units: a constant moved 2x costs what a 2%
# error of one row does. The rows leave some constants free (one row of a backend fixes its time, not how it splits
# into decoding and training); without the pull the search drifts along such directions.
PRIOR_WEIGHT = 1e-3


def _rows_to_fit(report: dict, leave_out: str | None):
    rows = [(row, settings) for row, settings in measured_rows(report) if row["case"] != leave_out]
    if not rows:
        raise PlanError(_("no row with a measured peak memory to calibrate on"))
    return rows


def _data_loss(report: dict, rows, candidate: dict) -> float:
    return sum(error * error for error in (*errors(rows, candidate), *decode_errors(report, candidate)))


def constants_without_rows(report: dict, leave_out: str | None = None) -> list[str]:
    """The constants that no measured row (and no decode-table row) depends on: a fit keeps them as they are."""
    rows = _rows_to_fit(report, leave_out)
    base = _data_loss(report, rows, CALIBRATION)
    return [name for name in (*MEMORY_CONSTANTS, *TIME_CONSTANTS)
            if _data_loss(report, rows, {**CALIBRATION, name: CALIBRATION[name] * 1.5}) == base]


def calibrate(report: dict, rounds: int = 60, leave_out: str | None = None) -> dict[str, float]:
    """Constants that minimise the squared log errors (coordinate search in log space, constants stay positive),
    each pulled weakly towards its current value, so that those no row depends on stay as they are. With
    ``leave_out``, fitted without that case's rows, so that they can check the fit."""
    rows = _rows_to_fit(report, leave_out)
    fitted = dict(CALIBRATION)

    def loss(candidate):
        pull = sum(math.log(candidate[name] / CALIBRATION[name]) ** 2 for name in (*MEMORY_CONSTANTS, *TIME_CONSTANTS)
                   if CALIBRATION[name] > 0)
        return _data_loss(report, rows, candidate) + PRIOR_WEIGHT * pull

    best = loss(fitted)
    for round_index in range(rounds):
        step = 1.5 if round_index < rounds // 2 else 1.1
        improved = False
        for name in (*MEMORY_CONSTANTS, *TIME_CONSTANTS):
            for factor in (step, 1 / step):
                candidate = {**fitted, name: fitted[name] * factor}
                if name.startswith("reserved_ratio") and candidate[name] < 1.0:
                    continue
                value = loss(candidate)
                if value < best - 1e-12:
                    fitted, best, improved = candidate, value, True
        if not improved and step == 1.1:
            break
    return fitted


def main(argv=None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m grpo_skill.plan", description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", type=Path, required=True, metavar="BENCHMARKS_JSON")
    parser.add_argument("--leave-out", metavar="CASE", help="fit without this case's rows (e.g. thinking) and mark "
                        "them 'held out' in the comparison: how the fit does on rows it never saw")
    args = parser.parse_args(argv)
    report = json.loads(args.calibrate.read_text())
    fitted = calibrate(report, leave_out=args.leave_out)
    kept = constants_without_rows(report, args.leave_out)
    if kept:
        print(f"kept as they are (no row depends on them): {', '.join(kept)}", file=sys.stderr)
    rows = measured_rows(report)
    for row, settings in rows:
        result = estimate(settings, fitted)
        held_out = "held out " if row["case"] == args.leave_out else "fitted on"
        print(f"{held_out} {row['case']:9} {row['name'][:40]:40} allocated {result.peak_allocated_gib:6.2f} / "
              f"{row['peak_allocated_gib']:6.2f} GiB  reserved {result.peak_reserved_gib:6.2f} / "
              f"{row.get('peak_reserved_gib') or float('nan'):6.2f}  s/step {result.s_per_step:6.2f} / "
              f"{row.get('s_per_step') or float('nan'):6.2f}", file=sys.stderr)
    print("CALIBRATION: dict[str, float] = {")
    for name, value in fitted.items():
        print(f"    {name!r}: {value:.3g},")
    print("}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
