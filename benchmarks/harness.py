"""Runs one benchmark contender's script, timed, in its own process.

    python benchmarks/harness.py --result R.json [--progress P.json] -- SCRIPT [ARGS...]

The script runs as ``python SCRIPT ARGS`` would (runpy, ``__main__``). This file imports nothing heavy before it, so
the script's own import order (unsloth first) holds; import hooks act when the script loads transformers:

- the first model load (``PreTrainedModel.from_pretrained``) creates BENCH_READY (its imports are done) and waits for
  BENCH_GO (the GPU is free): the orchestrator lets one contender import while the previous one trains;
- each ``transformers.Trainer`` gets a timing callback, and its GRPO methods are wrapped to time where a step goes
  (CUDA synchronised around each phase);
- after BENCH_WARMUP_STEPS optimizer steps it waits for BENCH_QUIET (no other contender is importing), times
  BENCH_MEASURE_STEPS steps, writes R.json and stops the training; the script then ends as it would (not timed).

BENCH_ABLATE (comma-separated) changes one thing in the program, to measure what it costs:
  no_callbacks          grpo_skill.runtime.callbacks.install adds none of grpo-skill's callbacks (train.py's summary
                        then finds no metrics file: that failure after the measurement is expected)
  rich_manual_refresh   rich progress bars draw only when updated, without their 10-per-second refresh thread
  trl_default_gc        GRPOConfig.gradient_checkpointing left at TRL's default (True), as a hand-written loop has it
                        (the generated train.py passes False for Unsloth, which checkpoints in its own way, and on
                        TRL where gradient_checkpointing = "auto" resolves off)
  score_whole_generation  the old and reference log-probs of a generation computed in one batch each (TRL scores in
                        chunks of per_device_train_batch_size)
  no_cudnn_attention    torch.backends.cuda.enable_cudnn_sdp(False): SDPA takes flash or memory-efficient attention
                        (what the generated train.py does since 2026-12-05)
  cudnn_attention       torch.backends.cuda.enable_cudnn_sdp(True), after train.py turned it off
  compile_training      the model's forward in scoring and training through torch.compile (generation untouched):
                        inductor's fused kernels and fewer host calls, after a compilation per new shape until it
                        compiles them as dynamic
  projections_apart     the generation copy computes each adapter and each projection in matmuls of its own, as
                        before 2026-12-05 (generation_copy.install(fuse=False); the default fuses them:
                        runtime/fused_projections.py)
  whole_cache_reads     the generation copy's decode attention reads its whole static cache at each step
                        (generation_copy.install(window_step=0); the default reads it up to the tokens so far)
  lora_input_casts      peft's casts of LoRA inputs to fp32 kept while training (train.py skips them under autocast on
                        the fast path: model.lora_inputs_uncast)
  padded_rows           scoring and training on the batches as GRPOTrainer pads them, with the padding mask (train.py
                        moves each sequence to the start of its row and attends without one: runtime/aligned_rows.py)
  stop_check_each_token the generation copy's generate waits for the GPU at each token to learn whether every
                        sequence ended (generation_copy.install(defer_stop_check=False); the default reads it one step
                        late)
BENCH_PROFILE_STEPS=N: after the timed steps (measured unprofiled), N more optimizer steps run under torch's
profiler, each phase marked; R.json, written after them, gains ``profile``: each phase's wall time against its
kernels' time and count (benchmarks/kernel_profile.py). Training then stops. Generation's kernels are left out
unless BENCH_PROFILE_GENERATION=1.
BENCH_COMPILE_DECODE=1 lets transformers compile the static-cache decode step (TRL's GenerationConfig turns it off).
BENCH_GPU_GIB=24 runs as on a card of that size: `grpo-skill plan`'s view of the GPU (runtime.planning.gpu_memory_gib)
is that size, and from the first model load the process may reserve no more than that on the GPU (torch's
per-process memory fraction; the CUDA context, ~0.5 GiB on a real card, is not counted), so a run that needs more
fails with an out-of-memory error instead of borrowing the bigger card's memory.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.abc
import json
import os
import runpy
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path

import kernel_profile  # no torch: it imports torch's profiler only when it summarises

GIB = 2**30
STARTED = time.perf_counter()


def wait_for(path: str | None, limit_s: float = 900) -> float:
    """Seconds spent waiting for ``path`` to exist (none when no path is given)."""
    if not path:
        return 0.0
    began = time.perf_counter()
    while not os.path.exists(path) and time.perf_counter() - began < limit_s:
        time.sleep(0.1)
    return time.perf_counter() - began


def touch(path: str | None) -> None:
    if path:
        Path(path).write_text(f"{time.time()}\n")


def write_json(path: Path, data: dict) -> None:
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(json.dumps(data, indent=2))
    partial.replace(path)


class PostImportHooks(importlib.abc.MetaPathFinder):
    """Calls ``hooks[name](module)`` right after module ``name`` is first executed."""

    def __init__(self, hooks: dict):
        self.hooks = dict(hooks)

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.hooks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        hook, execute = self.hooks.pop(fullname), spec.loader.exec_module

        def exec_module(module):
            execute(module)
            hook(module)

        spec.loader.exec_module = exec_module
        return spec


class Bench:
    """The measurement of one run: phases, steps, tokens, memory."""

    def __init__(self, result: Path, progress: Path | None):
        self.result, self.progress = result, progress
        self.ablate = set(filter(None, os.environ.get("BENCH_ABLATE", "").split(",")))
        self.warmup = int(os.environ.get("BENCH_WARMUP_STEPS", "2"))
        self.measure = int(os.environ.get("BENCH_MEASURE_STEPS", "4"))
        self.profile_steps = int(os.environ.get("BENCH_PROFILE_STEPS", "0"))
        self.profile_generation = os.environ.get("BENCH_PROFILE_GENERATION") == "1"
        self.profiler = None  # torch.profiler.profile while the profiled steps run
        self.marks: dict = {}  # the optimizer's open phase mark, by optimizer
        self.info: dict = {"import_s": None, "gate_wait_s": 0.0}
        self.recordings = 0  # CUDA graphs recorded since the last generation ended
        self.phases = defaultdict(float)
        self.calls = defaultdict(int)
        self.stack: list[str] = []
        self.step_ends: list[float] = []  # perf_counter at each optimizer step's end
        self.window = None  # (start time, tokens and sequences at the start)
        self.step_phases: list[dict] = []  # each timed step's phases (seconds), to see where one slow step went
        self.phases_so_far: dict = {}
        self.tokens = {"completion": 0, "prompt": 0, "sequences": 0, "generations": 0, "prompt_width": 0}
        self.done = False
        self.cuda = False
        self.torch = None

    # -- phases ------------------------------------------------------------------------------------------------
    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def timed(self, name, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            label = name() if callable(name) else name
            if label in self.stack:  # re-entered (a backward inside a backward): timed once, outside
                return func(*args, **kwargs)
            self.sync()
            began = time.perf_counter()
            self.stack.append(label)
            mark = self.mark(label)
            try:
                with mark:
                    try:
                        return func(*args, **kwargs)
                    finally:
                        self.sync()  # inside the mark: the phase's kernels end within it
            finally:
                self.stack.pop()
                self.phases[label] += time.perf_counter() - began
                self.calls[label] += 1

        return wrapper

    def mark(self, label: str):
        """A profiler range around a phase while profiling; otherwise nothing. Generation is marked but, unless
        BENCH_PROFILE_GENERATION=1, not recorded inside: its hundreds of thousands of decode kernels take minutes to
        summarise, and benchmarks/decode_profile.py profiles decoding on its own."""
        if self.profiler is None:
            return contextlib.nullcontext()
        marked = self.torch.profiler.record_function(kernel_profile.PHASE_PREFIX + label)
        if label != "generation" or self.profile_generation:
            return marked
        return self.unrecorded(marked)

    @contextlib.contextmanager
    def unrecorded(self, marked):
        profiler, activities = self.profiler, self.profiler.activities
        with marked:
            try:
                profiler.toggle_collection_dynamic(False, activities)
            except Exception as error:  # noqa: BLE001 - then generation's kernels are recorded too, and said so
                self.profile_generation = True
                self.info["profile_toggle_error"] = repr(error)
                yield
                return
            try:
                yield
            finally:
                profiler.toggle_collection_dynamic(True, activities)

    def unchunked(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if not self.torch.is_grad_enabled():  # scoring; the policy's forward keeps its micro-batch
                kwargs["batch_size"] = None
            return func(*args, **kwargs)

        return wrapper

    def compiled(self, func):
        made = {}

        @functools.wraps(func)
        def wrapper(model, *args, **kwargs):  # the same module, called through torch.compile
            if id(model) not in made:
                made[id(model)] = self.torch.compile(model)
            return func(made[id(model)], *args, **kwargs)

        return wrapper

    def logps_phase(self):
        return "scoring_logps" if "generate_and_score" in self.stack else "policy_logps"

    def count_tokens(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            out = func(*args, **kwargs)
            mask = out.get("completion_mask") if isinstance(out, dict) else None
            if mask is not None:
                self.tokens["completion"] += int(mask.sum())
                self.tokens["sequences"] += int(mask.shape[0])
                self.tokens["generations"] += 1
                self.info.setdefault("cudagraph_recordings_by_generation", []).append(self.recordings)
                self.recordings = 0
            prompt_mask = out.get("prompt_mask") if isinstance(out, dict) else None
            if prompt_mask is not None:
                self.tokens["prompt"] += int(prompt_mask.sum())
                self.tokens["prompt_width"] = max(self.tokens["prompt_width"], int(prompt_mask.shape[1]))
            return out

        return wrapper

    def count_cudagraph_recordings(self) -> None:
        """How many CUDA graphs each generation records (torch.compile's reduce-overhead mode): after the first
        generations, a graph recorded again means one of its static inputs moved (a new KV cache at another
        address); torch 2.11 runs a graph re-recorded more than 128 times without CUDA graphs."""
        try:
            from torch._inductor import cudagraph_trees
        except ImportError:
            return
        record = cudagraph_trees.CUDAGraphTreeManager.record_function

        @functools.wraps(record)
        def counted(manager, *args, **kwargs):
            self.recordings += 1
            return record(manager, *args, **kwargs)

        cudagraph_trees.CUDAGraphTreeManager.record_function = counted

    def instrument(self, trainer) -> None:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        from transformers import TrainerCallback

        self.torch, self.cuda = torch, torch.cuda.is_available()
        self.info["trainer_class"] = type(trainer).__name__
        if self.cuda:
            self.count_cudagraph_recordings()
        if "trl_default_gc" in self.ablate:
            try:
                trainer.args.gradient_checkpointing = True
            except Exception as error:  # noqa: BLE001 - recorded: the row then measured no change
                self.info["ablation_error"] = repr(error)
        if "no_cudnn_attention" in self.ablate:
            torch.backends.cuda.enable_cudnn_sdp(False)
        if "cudnn_attention" in self.ablate:
            torch.backends.cuda.enable_cudnn_sdp(True)
        if "compile_training" in self.ablate:
            trainer._get_per_token_logps_and_entropies = self.compiled(trainer._get_per_token_logps_and_entropies)
        if "score_whole_generation" in self.ablate:
            trainer._get_per_token_logps_and_entropies = self.unchunked(trainer._get_per_token_logps_and_entropies)
        wrapped = []
        for method, label in (("_generate_and_score_completions", "generate_and_score"), ("_calculate_rewards",
                              "rewards"), ("compute_loss", "loss"),
                              ("_get_per_token_logps_and_entropies", self.logps_phase)):
            if hasattr(trainer, method):
                func = getattr(trainer, method)
                if method == "_generate_and_score_completions":
                    func = self.count_tokens(func)
                setattr(trainer, method, self.timed(label, func))
                wrapped.append(method)
        generate = "_generate" if hasattr(trainer, "_generate") else "_generate_single_turn"
        if hasattr(trainer, generate):
            setattr(trainer, generate, self.timed("generation", getattr(trainer, generate)))
            wrapped.append(generate)
        torch.Tensor.backward = self.timed("backward", torch.Tensor.backward)
        began = {}

        def before_step(optimizer, args, kwargs):
            self.sync()
            began[id(optimizer)] = time.perf_counter()
            self.marks[id(optimizer)] = self.mark("optimizer")
            self.marks[id(optimizer)].__enter__()

        def after_step(optimizer, args, kwargs):
            self.sync()
            mark = self.marks.pop(id(optimizer), None)
            if mark is not None:
                mark.__exit__(None, None, None)
            self.phases["optimizer"] += time.perf_counter() - began.pop(id(optimizer), time.perf_counter())
            self.calls["optimizer"] += 1

        register_optimizer_step_pre_hook(before_step)
        register_optimizer_step_post_hook(after_step)
        self.info["wrapped"] = wrapped
        print(f"bench: timing {type(trainer).__name__} ({', '.join(wrapped)}), {self.warmup} warm-up + "
              f"{self.measure} timed steps", file=sys.stderr, flush=True)
        bench = self

        class StepTimer(TrainerCallback):
            def on_train_begin(self, args, state, control, **kwargs):
                if os.environ.get("BENCH_COMPILE_DECODE") == "1" and hasattr(trainer, "generation_config"):
                    trainer.generation_config.disable_compile = False
                bench.sync()
                bench.info["train_begin_s"] = round(time.perf_counter() - STARTED, 2)
                bench.step_ends = [time.perf_counter()]

            def on_step_end(self, args, state, control, **kwargs):
                bench.on_step_end(state, control)

        trainer.add_callback(StepTimer())

    # -- steps -------------------------------------------------------------------------------------------------
    def on_step_end(self, state, control) -> None:
        # a checkpoint is no part of a step's time: the presets' save_steps (20) fell inside some timed windows
        control.should_save = False
        if self.profiler is not None:
            self.on_profiled_step_end(control)
        if self.done:
            return
        self.sync()
        self.step_ends.append(time.perf_counter())
        step = len(self.step_ends) - 1
        if step == self.warmup:
            self.info["quiet_wait_s"] = round(wait_for(os.environ.get("BENCH_QUIET"), 300), 2)
            self.sync()
            self.step_ends[-1] = time.perf_counter()  # the window starts after any wait
            self.phases.clear()
            self.calls.clear()
            if self.cuda:  # the peaks of loading and warm-up, before the window's own
                self.info["before_window_peaks"] = (self.torch.cuda.max_memory_allocated(),
                                                    self.torch.cuda.max_memory_reserved())
                self.torch.cuda.reset_peak_memory_stats()
            self.window = dict(self.tokens)
        elif step > self.warmup and self.window is not None:
            self.step_phases.append({name: round(total - self.phases_so_far.get(name, 0.0), 4)
                                     for name, total in self.phases.items()})
            self.phases_so_far = dict(self.phases)
        if self.progress:
            write_json(self.progress, self.report(partial=True))
        if step >= self.warmup + self.measure:
            self.done = True
            self.measured = self.report(partial=False)
            if self.profile_steps > 0:  # the result waits for the profile: the GPU is not free before
                self.start_profile()
            else:
                write_json(self.result, self.measured)
                self.stop(control)

    def stop(self, control) -> None:
        control.should_training_stop = True
        control.should_save = False

    # -- the profiled steps ------------------------------------------------------------------------------------
    def start_profile(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        self.sync()
        self.profiler = profile(activities=activities)
        self.profiled_steps = 0
        self.profiler.__enter__()

    def on_profiled_step_end(self, control) -> None:
        self.profiled_steps += 1
        if self.profiled_steps < self.profile_steps:
            return
        self.sync()
        profiler, self.profiler = self.profiler, None
        profiler.__exit__(None, None, None)
        began = time.perf_counter()
        try:
            summary = kernel_profile.training_profile(profiler, self.profile_steps, "cuda" if self.cuda else "cpu",
                                                      generation_recorded=self.profile_generation)
            summary["summary_s"] = round(time.perf_counter() - began, 1)
            if "profile_toggle_error" in self.info:
                summary["toggle_error"] = self.info["profile_toggle_error"]
            write_json(self.result, {**self.measured, "profile": summary})
        except Exception as error:  # noqa: BLE001 - the timed steps' result stands without it
            write_json(self.result, {**self.measured, "profile_error": repr(error)})
        self.stop(control)

    def memory(self) -> dict:
        """Peak allocated/reserved over the whole run (what must fit on the card) and within the timed window."""
        if not self.cuda:
            return {}
        cuda = self.torch.cuda
        window = cuda.max_memory_allocated(), cuda.max_memory_reserved()
        before = self.info.get("before_window_peaks", (0, 0))
        try:  # what the allocator really uses: it reads PYTORCH_ALLOC_CONF once, when CUDA starts
            expandable = cuda.memory._snapshot().get("allocator_settings", {}).get("expandable_segments")
        except Exception:  # noqa: BLE001 - a private API: absent in some versions
            expandable = None
        return {
            "peak_allocated_gib": round(max(before[0], window[0]) / GIB, 3),
            "peak_reserved_gib": round(max(before[1], window[1]) / GIB, 3),
            "window_peak_allocated_gib": round(window[0] / GIB, 3),
            "window_peak_reserved_gib": round(window[1] / GIB, 3),
            "expandable_segments": expandable,
        }

    def report(self, partial: bool) -> dict:
        ends = self.step_ends
        steps_done = len(ends) - 1
        info = {key: value for key, value in self.info.items() if key != "before_window_peaks"}
        out = {"partial": partial, "steps_done": max(steps_done, 0), "warmup_steps": self.warmup,
               "measure_steps": self.measure, **info,
               "step_s": [round(b - a, 3) for a, b in zip(ends, ends[1:])],
               "alloc_conf": os.environ.get("PYTORCH_ALLOC_CONF") or os.environ.get("PYTORCH_CUDA_ALLOC_CONF")}
        if self.window is None:
            return out
        measured = steps_done - self.warmup
        seconds = ends[-1] - ends[self.warmup]
        if measured <= 0 or seconds <= 0:
            return out
        tokens = {key: self.tokens[key] - self.window[key] for key in ("completion", "prompt", "sequences",
                                                                      "generations")}
        phases = {name: round(total / measured, 4) for name, total in self.phases.items()}
        accounted = sum(self.phases.get(name, 0.0) for name in ("generate_and_score", "loss", "backward", "optimizer"))
        phases["other"] = round((seconds - accounted) / measured, 4)
        out.update({
            "measured_steps": measured,
            "measured_s": round(seconds, 3),
            "s_per_step": round(seconds / measured, 4),
            "tokens_per_s": round(tokens["completion"] / seconds, 1),
            "completion_tokens_per_step": round(tokens["completion"] / measured, 1),
            "prompt_tokens_per_sequence": round(tokens["prompt"] / tokens["sequences"], 1) if tokens["sequences"]
            else None,
            "prompt_width": self.tokens["prompt_width"],
            "generations_in_window": tokens["generations"],
            "sequences_per_generation": round(tokens["sequences"] / tokens["generations"], 1)
            if tokens["generations"] else None,
            "phases_s_per_step": phases,
            "phases_s_by_step": self.step_phases,
            "phase_calls": dict(self.calls),
        })
        out.update(self.memory())
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--progress", type=Path)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    bench = Bench(options.result, options.progress)
    ablate = bench.ablate

    def on_modeling_utils(module):
        load = module.PreTrainedModel.from_pretrained.__func__

        @functools.wraps(load)
        def from_pretrained(cls, *args, **kwargs):
            trainer_module = sys.modules.get("transformers.trainer")
            if trainer_module is not None and not bench.info.get("trainer_hooked"):
                on_trainer(trainer_module)  # its import escaped the hook (another finder went first)
            if bench.info["import_s"] is None:
                hold_to_card_size()
                bench.info["import_s"] = round(time.perf_counter() - STARTED, 2)
                touch(os.environ.get("BENCH_READY"))
                bench.info["gate_wait_s"] = round(wait_for(os.environ.get("BENCH_GO")), 2)
                bench.info["load_began_s"] = round(time.perf_counter() - STARTED, 2)
            return load(cls, *args, **kwargs)

        module.PreTrainedModel.from_pretrained = classmethod(from_pretrained)

    card_gib = float(os.environ["BENCH_GPU_GIB"]) if os.environ.get("BENCH_GPU_GIB") else None

    def hold_to_card_size():
        bench.info["gpu_gib"] = card_gib
        import torch

        if card_gib is None or not torch.cuda.is_available():
            return
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, card_gib * GIB / total), 0)
        bench.info["gpu_total_gib"] = round(total / GIB, 1)

    def on_planning(module):
        module.gpu_memory_gib = lambda: card_gib

    def on_trainer(module):
        bench.info["trainer_hooked"] = True
        init = module.Trainer.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            if not getattr(self, "_bench_instrumented", False):
                self._bench_instrumented = True
                bench.instrument(self)

        module.Trainer.__init__ = __init__

    def on_callbacks(module):
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        def install(trainer, *args, **kwargs):  # the generated project's printing removed, nothing added
            trainer.remove_callback(PrinterCallback)
            trainer.remove_callback(ProgressCallback)

        module.install = install

    def on_rich_progress(module):
        init, update = module.Progress.__init__, module.Progress.update

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **{**kwargs, "auto_refresh": False})

        @functools.wraps(update)
        def update_and_draw(self, *args, **kwargs):
            update(self, *args, **kwargs)
            self.refresh()

        module.Progress.__init__, module.Progress.update = __init__, update_and_draw

    def on_generation_copy(module):
        undone = {"fuse": "projections_apart", "window_step": "whole_cache_reads",
                  "defer_stop_check": "stop_check_each_token"}
        changed = {key: 0 for key, name in undone.items() if name in ablate}
        if "decode_max_autotune" in ablate:
            changed["compile_mode"] = "max-autotune"
        install = module.install

        @functools.wraps(install)
        def install_changed(*args, **kwargs):  # over what train.py passes
            return install(*args, **{**kwargs, **changed})

        module.install = install_changed

    def on_aligned_rows(module):
        module.install = lambda policy: False

    def on_model(module):
        module.lora_inputs_uncast = lambda trainer, fast_generation: contextlib.nullcontext()

    hooks = {"transformers.modeling_utils": on_modeling_utils, "transformers.trainer": on_trainer}
    if card_gib is not None:
        hooks["grpo_skill.runtime.planning"] = on_planning
    if "no_callbacks" in ablate:
        hooks["grpo_skill.runtime.callbacks"] = on_callbacks
    if "rich_manual_refresh" in ablate:
        hooks["rich.progress"] = on_rich_progress
    if "lora_input_casts" in ablate:
        hooks["grpo_skill.runtime.model"] = on_model
    if "padded_rows" in ablate:
        hooks["grpo_skill.runtime.aligned_rows"] = on_aligned_rows
    if {"projections_apart", "whole_cache_reads", "stop_check_each_token", "decode_max_autotune"} & ablate:
        hooks["grpo_skill.runtime.generation_copy"] = on_generation_copy
    sys.meta_path.insert(0, PostImportHooks(hooks))

    sys.argv = [options.script, *options.args]
    sys.path.insert(0, str(Path(options.script).resolve().parent))
    try:
        runpy.run_path(options.script, run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if stop.code not in (None, 0) and not isinstance(stop.code, int):
            print(stop.code, file=sys.stderr)
        return code
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
