"""``[model] compile_decoding``: the TRL backend decodes with a static KV cache and a compiled decode step.

TRL builds its GenerationConfig with ``disable_compile=True``, so ``cache_implementation = "static"`` alone still
decodes step by step in eager mode. Measured with plain TRL on an H200, Qwen3-4B's shape in bf16, generation batched
over 8 steps: 3.0 s per step (2026-12-01), 1.8 with compilation back on (docs/benchmarks.md); with 4-bit bitsandbytes
weights it made the step slower (6.1 s), which is why the schema asks for ``load_in_4bit = false`` beside it.
Imports nothing heavy: the trainer is passed in.
"""

from __future__ import annotations

import sys

from ..i18n import _
from . import distributed


def with_static_cache(grpo: dict, model: dict) -> dict:
    """[grpo] with a static KV cache of one size for every generation (the compiled graph is then built once):
    ``max_cache_len`` is ``model.max_seq_length`` unless ``generation_kwargs`` sets it."""
    generation_kwargs = {"max_cache_len": model["max_seq_length"], **(grpo.get("generation_kwargs") or {})}
    return {**grpo, "cache_implementation": "static", "generation_kwargs": generation_kwargs}


def wanted(model: dict, backend: str, cuda: bool) -> bool:
    """Whether this run sets up compiled decoding (the TRL backend only); says so when it cannot compile here."""
    if not model.get("compile_decoding"):
        return False
    note = None
    if backend != "trl":
        note = _("note: compile_decoding applies to the TRL backend; Unsloth decodes with its own CUDA graphs")
    elif not cuda:  # transformers compiles on accelerators only; the static cache still works
        note = _("note: transformers compiles the decode step on a GPU only; here it decodes with the static KV "
                 "cache, uncompiled")
    if note and distributed.is_main_process():
        print(note, file=sys.stderr)
    return backend == "trl"


def enable_compile(trainer) -> None:
    """Let transformers compile the decode step that the trainer's GenerationConfig keeps from compiling."""
    trainer.generation_config.disable_compile = False
