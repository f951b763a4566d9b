"""The fast generation path: sampling from a bf16 copy of the policy that decodes with a static cache, compiled.

A policy with a 4-bit base dequantizes every weight on every token, and transformers decodes it step by step
uncompiled under TRL. The copy holds each linear layer's base weight once in bf16 and, beside it, the layer's LoRA
adapters computed as the trainer computes them (``x W + ((x A) B) s``; under a bf16 run's autocast the adapter's
matmuls run in bf16, so the copy's do too), copied in before each generation and never written back: the policy's own
weights stay exactly as trained. That is what vLLM's colocate mode does with its own copy, without vLLM. The copy
decodes with a static KV cache of one size, so transformers compiles the decode step once (on a GPU). Its decode
attention (runtime/grouped_decode.py) reads the grouped K/V heads in place: on an H200, Qwen3-4B's shape, batch 64, a
decode step took 8.4 ms against 14.5 with transformers' SDPA, and 6.7 against 6.9 at batch 8 (docs/benchmarks.md,
2026-12-03).

Why the adapters stay apart, in the trainer's dtype: GRPOTrainer scores the samples with its own forward and corrects
nothing for a sampler that differs from it. On an H200 (docs/sampler-mismatch.md, benchmarks/sampler_mismatch.py) the
copy with bf16 adapters sampled 1.9e-3 to 2.4e-3 nats a token from the trainer, the closest of all samplers by a small
margin, TRL's own ``generate`` included; ``adapters="merged"`` (each adapter folded into its layer's bf16 weight:
no adapter matmuls per token) was as close while the update was small and 1.0e-2 away once it was large. Keeping them
apart costs time: a decode step of 8.4 ms against 5.7 merged at batch 8, 10.4 against 7.5 at 64 (2026-12-04).
"""

from __future__ import annotations

import contextlib
import copy as copying
import functools
import sys
import time

from ..core.i18n import _
from . import distributed, grouped_decode
from .decode_loop import DecodeLoop, prepared, supports
from .grouped_decode import NAME as GROUPED
from .lora_layers import adapter_matrices, has_adapter, separable_adapters


def torch_no_grad(function):
    """``torch.no_grad`` as a decorator without importing torch when this module loads."""

    def wrapped(*args, **kwargs):
        import torch

        with torch.no_grad():
            return function(*args, **kwargs)

    wrapped.__doc__ = function.__doc__
    return wrapped


class GenerationCopy:
    """A model of the policy's architecture (in the policy's own float dtype, or ``dtype``) whose weights follow the
    policy's: each adapted layer merged (``adapters="merged"``) or with its adapters beside it (``"apart"``),
    computed in ``adapter_dtype``: the trainer's autocast dtype when it trains under autocast (what the policy's
    forward then computes), or None for the adapters' own (fp32, as peft computes them without autocast).
    ``fuse``: each adapter's A inside its layer's base matmul, and the projections that read the same input in one
    matmul (runtime/fused_projections.py; fewer kernels per token; a 16-bit policy's frozen weights become views of
    the fused ones, held once).
    ``window_step``: each decode step's attention reads the cache up to the tokens so far, rounded up to this many
    (runtime/grouped_decode.py; a compiled graph per length met). ``defer_stop_check``: on a CUDA GPU, generate
    learns that every sequence has ended one step late instead of waiting for the GPU at each token
    (``deferred_stop_checks``). ``compile_mode``: torch.compile's mode for the decode step (None: transformers'
    reduce-overhead; "max-autotune" also tries Triton matmuls for each shape, a longer first compile)."""

    def __init__(self, policy, max_cache_len: int, compile_decode: bool, attn_implementation: str = GROUPED,
                 loop: str = "transformers", adapters: str = "apart", dtype=None, adapter_dtype=None,
                 cache_step: int | None = None, fuse: bool = False, window_step: int | None = None,
                 defer_stop_check: bool = False, compile_mode: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM

        from . import fused_projections

        if attn_implementation == GROUPED:
            grouped_decode.register()

        base = policy.get_base_model()
        self.policy = policy
        self.max_cache_len = max_cache_len
        self.cache_step = cache_step
        self.defer_stop_check = defer_stop_check
        self.compile_decode = compile_decode
        self.compile_mode = compile_mode
        config = copying.deepcopy(base.config)
        for attribute in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(config, attribute):
                delattr(config, attribute)
        untie = _output_layer_diverges(base)
        if untie:  # an adapter on lm_head (the tiny preset) moves it away from the input embeddings
            config.tie_word_embeddings = False
        device = next(p.device for p in base.parameters() if p.device.type != "meta")
        self.device = device
        with torch.device("meta"):  # no memory yet: each weight is the policy's own or made below
            self.model = AutoModelForCausalLM.from_config(
                config, dtype=dtype or _policy_dtype(base),
                attn_implementation=attn_implementation,
            )
        self.model.eval().requires_grad_(False)
        self.model.generation_config = copying.deepcopy(base.generation_config)
        self._kept_cache = None  # ((batch, length), StaticCache): one cache, its tensors at one address, all run
        self._switched = False  # whether a generation has asked for another cache than the kept one (said once)
        self.model._prepare_static_cache = self._keep_static_cache(self.model._prepare_static_cache)
        if adapters not in ("merged", "apart"):
            raise ValueError(f"adapters must be 'merged' or 'apart', not {adapters!r}")
        if window_step:  # the decode attention reads the cache up to the tokens so far (runtime/grouped_decode.py)
            if attn_implementation != GROUPED or loop != "transformers":
                raise ValueError(f"window_step needs attn_implementation={GROUPED!r} and transformers' generate "
                                 "(loop='transformers')")
            self.model.prepare_inputs_for_generation = grouped_decode.with_decode_window(
                self.model.prepare_inputs_for_generation, window_step, lambda: self.window_limit)
        self.window_step = window_step
        self.window_limit = max_cache_len  # the tokens this generation's cache holds (cache_step makes it vary)
        if fuse and adapters != "apart":
            raise ValueError("fuse needs the adapters apart: merged ones change the base weights at each refresh")
        self.adapted = _keep_adapters_apart(self.model, base, adapter_dtype, device) if adapters == "apart" else []
        self._sources = _materialize(self.model, base, device)
        self.fused = []
        self.refresh(everything=True)
        if fuse:  # after the first refresh: the fused weights start from the layers' own
            self.fused = fused_projections.fuse(self.model, base, self.adapted)
            held = {id(param) for param in self.model.parameters()}
            self._sources = [source for source in self._sources if id(source[0]) in held]
            modules = {id(module) for module in self.model.modules()}
            self.adapted = [pair for pair in self.adapted if id(pair[0]) in modules]
        self.shared_bytes = _shared_bytes(self.model, base)
        self.refresh_seconds = 0.0
        self.timings: list[tuple[float, int, int]] = []  # each generation's (seconds, decode steps, sequences)
        # "own": runtime/decode_loop.py samples (no per-token generate() bookkeeping); opt-in until measured on a GPU
        self.loop = DecodeLoop(self.model, max_cache_len, compile_decode) if loop == "own" else None

    @torch_no_grad
    def refresh(self, everything: bool = False) -> None:
        """Copy the policy's current weights in: each adapted linear layer's adapters (merged into its weight, or
        beside it with its base weight copied on the first call only); the rest (embeddings, norms) only where
        they train, or on the first call."""
        for copied, source in self.adapted:
            copied.follow(source)
        for fused in self.fused:
            fused.follow()
        for param, source, leaf, base_only in self._sources:
            if base_only:  # an adapted layer's base weight: copied once, unless it trains (peft's bias="all")
                if everything or getattr(source.base_layer, leaf).requires_grad:
                    param.copy_(_base_weight(source, leaf))
            elif has_adapter(source):
                param.copy_(_merged_weight(source, leaf))
            else:
                module = _active_module(source)
                tensor = getattr(module, leaf)
                if everything or tensor.requires_grad:
                    param.copy_(_plain_weight(module, leaf))

    def generate(self, *args, generation_config=None, **kwargs):
        """What ``policy.generate`` is asked for, answered by the copy: refreshed first, static cache, compiled."""
        import torch

        started = time.perf_counter()
        self.refresh()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.refresh_seconds += time.perf_counter() - started
        config = copying.deepcopy(generation_config or self.model.generation_config)
        config.cache_implementation = "static"
        config.disable_compile = not self.compile_decode
        if self.compile_mode:  # torch.compile's mode for the decode step (transformers' default: reduce-overhead)
            from transformers import CompileConfig

            config.compile_config = copying.deepcopy(config.compile_config) or CompileConfig()
            if config.compile_config.options is None:  # torch.compile takes a mode or options, not both
                config.compile_config.mode = self.compile_mode
        config.max_cache_len = self.max_cache_len  # one cache size for every generation: one compiled graph
        # from embeddings alone there is no prompt here, and generate returns the new tokens only
        prompt = kwargs.get("input_ids", args[0] if args else None)
        if self.cache_step:
            width = (prompt if prompt is not None else kwargs["inputs_embeds"]).shape[1]
            config.max_cache_len = self.cache_length(width, config.max_new_tokens)
            self.model._previous_max_cache_length = -1  # transformers would keep the longest cache it has made
        if self.window_step:
            # one position more than any window reaches: the decode step always reads a slice of the cache (a
            # window as long as the cache took another compiled graph, late in a run's first long generation)
            self.window_limit = config.max_cache_len
            config.max_cache_len += 1
        if self.compile_decode and not self.timings and distributed.is_main_process():
            if self.compile_mode == "max-autotune":
                print(_("generation: the first one compiles the decode step and times its matmuls (max-autotune), so "
                        "it takes longer than the others (about two minutes on an H100); summary.json gives its time"),
                      file=sys.stderr)
            else:
                print(_("generation: the first one compiles the decode step, so it takes longer than the others (a "
                        "minute or two on an H100); summary.json gives its time"), file=sys.stderr)
        started = time.perf_counter()
        with torch.no_grad():
            if self.loop is not None and not args and supports(complete := prepared(self.model, config), kwargs):
                out = self.loop.generate(kwargs["input_ids"], kwargs.get("attention_mask"), complete)
            else:
                with (deferred_stop_checks() if self.defer_stop_check else contextlib.nullcontext(),
                      grouped_decode.windows_compiled_once() if self.window_step else contextlib.nullcontext()):
                    out = self.model.generate(*args, generation_config=config, **kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        sequences = out if isinstance(out, torch.Tensor) else out.sequences
        new_tokens = sequences.shape[-1] - (prompt.shape[-1] if prompt is not None else 0)
        self.timings.append((time.perf_counter() - started, new_tokens, sequences.shape[0]))
        return out

    def _keep_static_cache(self, make_static_cache):
        """transformers makes a new static cache at each ``generate``; the compiled decode step's CUDA graphs read
        its K/V at the addresses they were recorded with, so a new cache recorded every graph again at every
        generation (on an H100, the thinking preset: 9 graphs recorded in each generation), and torch stops using
        CUDA graphs for a graph recorded again more than 128 times. The copy keeps one cache and empties it: the
        same tensors, generation after generation, while the batch size and the cache's length stay the same. It
        holds the cache's memory through training (``plan`` counts it). One cache only: generations that alternate
        between batch sizes or lengths (an evaluation's batch, ``cache_step``) make a new one, and record the graphs
        again, at each switch. A cache that ``generate`` hands back (``return_dict_in_generate``) is emptied and
        written over by the next generation.
        Decode windows stop one position short of the cache asked for; where a generation needs a longer one
        (transformers then makes it as long as the generation's tokens less one), its windows reach its end."""

        def kept_static_cache(cache_implementation, batch_size, max_cache_len, prefill_chunk_size, model_kwargs):
            length = max(max_cache_len, getattr(self.model, "_previous_max_cache_length", -1))
            if length > self.window_limit + 1:  # longer than asked for: the windows reach its end
                self.window_limit = length
            if self._kept_cache is not None and self._kept_cache[0] == (batch_size, length):
                cache = self._kept_cache[1]
                cache.reset()
                return cache
            if self._kept_cache is not None and not self._switched and distributed.is_main_process():
                self._switched = True
                (kept_batch, kept_length), _cache = self._kept_cache
                print(_("note: this generation needs a KV cache of {batch} x {length} tokens, the last one "
                        "{kept_batch} x {kept_length}: the copy makes a new one, and on a GPU records its decode "
                        "step again, at each such switch (said once)").format(
                    batch=batch_size, length=length, kept_batch=kept_batch, kept_length=kept_length), file=sys.stderr)
            self._kept_cache = None  # the old cache's memory goes before the new one is made
            cache = make_static_cache(cache_implementation, batch_size, max_cache_len, prefill_chunk_size,
                                      model_kwargs)
            self._kept_cache = ((batch_size, length), cache)
            return cache

        return kept_static_cache

    def speed(self) -> dict:
        """How fast the copy sampled, for the run's summary: a generation's wall time (refresh excluded) and that
        time per new token position (prefill included), the first generation apart (on a GPU it compiles)."""
        if not self.timings:
            return {}
        first, *rest = self.timings
        speed = {"generations": len(self.timings), "first_generation_s": round(first[0], 2)}
        if rest:
            seconds = sum(timing[0] for timing in rest)
            speed.update(generation_s=round(seconds / len(rest), 3),
                         ms_per_step=round(1000 * seconds / max(1, sum(timing[1] for timing in rest)), 2),
                         sequences_per_generation=round(sum(timing[2] for timing in rest) / len(rest), 1))
        return speed

    def cache_length(self, prompt_width: int, new_tokens: int | None) -> int:
        """The static KV cache's length for one generation. Without ``cache_step``: ``max_cache_len`` always, one
        compiled graph. With it: what this generation can fill, rounded up to a multiple of ``cache_step`` (a few
        lengths, a graph each) and at most ``max_cache_len``; the decode step's attention reads the whole cache,
        empty positions too, so a shorter one is read faster."""
        if not self.cache_step or new_tokens is None:
            return self.max_cache_len
        needed = prompt_width + new_tokens
        return min(self.max_cache_len, -(-needed // self.cache_step) * self.cache_step)


@contextlib.contextmanager
def deferred_stop_checks():
    """While it lasts, transformers' ``generate`` defers its stop check on CUDA too: reading whether every sequence
    has ended (``unfinished_sequences.max() == 0``) makes the host wait for the GPU at each token, so the GPU idles
    while the host prepares the next step (about 1.4 ms a step at batch 8 on an H200, docs/benchmarks.md). Its
    ``DeferredStopCheck`` reads the flag one step late, from a pinned copy, and undoes the one extra step; transformers
    5.17 enables it on Apple's MPS only ("we should enable it for cuda if we observe perf gains")."""
    from transformers.generation import utils

    if not hasattr(utils, "DeferredStopCheck"):  # an older transformers: every step checks, as before
        yield
        return
    original = utils.DeferredStopCheck.__dict__["is_supported"]

    def is_supported(device, cache, cache_is_returned, is_assistant=False):
        if device.type == "cuda" and not is_assistant:
            return cache is None or cache.is_croppable or not cache_is_returned
        return original.__func__(device, cache, cache_is_returned, is_assistant=is_assistant)

    utils.DeferredStopCheck.is_supported = staticmethod(is_supported)
    try:
        yield
    finally:
        utils.DeferredStopCheck.is_supported = original


# The decode attention's window grows in steps of this many tokens: one compiled graph per step met (a 2560-token
# cache: at most 20), each reading at most this many empty positions.
WINDOW_STEP = 128


def install(trainer, max_cache_len: int, compile_decode: bool, attn_implementation: str = GROUPED,
            adapters: str = "apart", fuse: bool | None = None, window_step: int | None = None,
            defer_stop_check: bool = True, compile_mode: str | None = None) -> GenerationCopy:
    """Make the trainer sample from a generation copy: TRL calls ``generate`` on the unwrapped policy, so the policy's
    ``generate`` is answered by the copy (on this instance only; training calls ``forward``, untouched).
    By default (None) the projections are fused where the adapters are apart, and the decode attention reads the
    cache in windows of ``WINDOW_STEP`` tokens with grouped decode; 0 / False turns either off."""
    from peft import PeftModel

    policy = trainer.accelerator.unwrap_model(trainer.model)
    if not isinstance(policy, PeftModel):
        raise TypeError("the generation copy needs a peft (LoRA) policy")
    if fuse is None:
        fuse = adapters == "apart"
    if window_step is None:
        window_step = WINDOW_STEP if attn_implementation == GROUPED else 0
    copy = GenerationCopy(policy, max_cache_len, compile_decode, attn_implementation, adapters=adapters,
                          adapter_dtype=autocast_dtype(trainer.accelerator), fuse=fuse, window_step=window_step,
                          defer_stop_check=defer_stop_check, compile_mode=compile_mode)
    policy.generate = copy.generate
    if distributed.is_main_process():
        held_bytes = sum(p.numel() * p.element_size() for p in copy.model.parameters())
        own = (held_bytes - copy.shared_bytes) / 2**30
        dtype = str(next(copy.model.parameters()).dtype).removeprefix("torch.")
        adapter_buffers = [fused.up for fused in copy.fused] + [copied.down for copied, _layer in copy.adapted]
        if fuse and not copy.fused:
            print(_("note: the generation copy fused none of its layers (it fuses Qwen3's, with adapters in the "
                    "weights' dtype)"), file=sys.stderr)
        if copy.fused:
            held = _("its LoRA beside each layer in {dtype}, as the trainer computes it, in {fused} fused matmuls "
                     "(A with the base weight, q/k/v and gate/up together)").format(
                dtype=str(adapter_buffers[0].dtype).removeprefix("torch."), fused=len(copy.fused))
        elif copy.adapted:
            held = _("its LoRA beside each layer in {dtype}, as the trainer computes it").format(
                dtype=str(adapter_buffers[0].dtype).removeprefix("torch."))
        else:
            held = _("its LoRA merged")
        decode = [_("compiled") if compile_decode else _("not compiled")]
        if window_step:
            decode.append(_("its attention reading the cache up to the tokens so far, in steps of {step}").format(
                step=window_step))
        if defer_stop_check and copy.device.type == "cuda":
            decode.append(_("the end of generation read one step late (no wait for the GPU at each token)"))
        print(_("generation: a {dtype} copy of the policy, {held} ({own:.1f} GiB of its own, {shared:.1f} GiB the "
                "policy's frozen weights themselves), static KV cache of {tokens} tokens, decode step {compiled}").format(
            dtype=dtype, held=held, own=own, shared=copy.shared_bytes / 2**30, tokens=max_cache_len,
            compiled=", ".join(decode)), file=sys.stderr)
    return copy


def autocast_dtype(accelerator):
    """The dtype the trainer's forward autocasts to (accelerate's bf16 or fp16 mixed precision), or None: under
    autocast a LoRA's matmuls run in that dtype, not in the adapters' own fp32."""
    import torch

    if not getattr(accelerator, "native_amp", False):
        return None
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(str(accelerator.mixed_precision))


def _materialize(model, base, device) -> list:
    """Give the copy (built on the meta device) its weights: a weight the policy holds frozen, in the copy's dtype
    (a 16-bit base's, its embeddings and norms), is that very tensor, never copied; any other is allocated here and
    filled by ``refresh``. Returns what ``refresh`` copies in, as (parameter, policy module, name, whether it is an
    adapted layer's base weight)."""
    import torch

    made, to_refresh = {}, []
    for module_name, leaf, param in _parameters(model):
        owner_name, _dot, child = module_name.rpartition(".")
        base_only = child == "linear" and isinstance(model.get_submodule(owner_name), adapted_linear_class())
        source = base.get_submodule(owner_name if base_only else module_name)
        if id(param) not in made:  # tied parameters (embeddings and output layer) stay one
            frozen = _frozen_source(source, leaf, base_only)
            if frozen is not None and (frozen.dtype, frozen.shape, frozen.device) == (param.dtype, param.shape, device):
                made[id(param)] = torch.nn.Parameter(frozen, requires_grad=False)
            else:
                made[id(param)] = torch.nn.Parameter(torch.empty_like(param, device=device), requires_grad=False)
                to_refresh.append((made[id(param)], source, leaf, base_only))
        model.get_submodule(module_name)._parameters[leaf] = made[id(param)]
    for name, buffer in list(model.named_buffers()):
        if buffer.is_meta:  # computed when the model is made (rotary frequencies): the policy's are the same
            module_name, _dot, leaf = name.rpartition(".")
            model.get_submodule(module_name)._buffers[leaf] = base.get_buffer(name).detach().clone().to(device)
    return to_refresh


def _shared_bytes(model, base) -> int:
    """Bytes of the copy's weights that lie in the policy's own tensors (no memory of the copy's): a copy's tensor
    that is a policy's, or a fused one whose rows the policy's weights are."""
    policy = sorted((param.data_ptr(), param.data_ptr() + param.numel() * param.element_size())
                    for param in base.parameters())
    shared = 0
    for param in model.parameters():
        start = param.data_ptr()
        end = start + param.numel() * param.element_size()
        shared += sum(max(0, min(end, stop) - max(start, begin)) for begin, stop in policy if begin < end)
    return shared


def _policy_dtype(base):
    """The dtype the policy holds its float weights in (its input embeddings'): bf16, or fp16 on a GPU without bf16,
    fp32 on a CPU. The copy computes in it, and can then share those weights."""
    weight = getattr(base.get_input_embeddings(), "weight", None)
    if weight is not None and weight.is_floating_point():
        return weight.dtype
    return next(param.dtype for param in base.parameters() if param.is_floating_point())


def _frozen_source(source, leaf: str, base_only: bool):
    """The policy's tensor that a copy's parameter can be, as it is: a weight that does not train and that the copy
    uses unchanged; None when the copy computes its own (4-bit, merged with adapters, or training)."""
    import torch

    if base_only:
        tensor = getattr(source.base_layer, leaf)
    elif has_adapter(source):
        return None
    else:
        tensor = getattr(_active_module(source), leaf)
    if tensor is None or tensor.requires_grad or type(tensor) not in (torch.nn.Parameter, torch.Tensor):
        return None  # bitsandbytes' 4-bit weights are a Parameter subclass holding packed bytes
    return tensor.detach()


@functools.lru_cache(maxsize=None)
def adapted_linear_class():
    """The copy's linear layer with adapters beside it (a class made on first use: torch loads with the copy)."""
    import torch
    from torch.nn import functional

    class AdaptedLinear(torch.nn.Module):
        """A linear layer of the copy with its adapters beside it, added to its output in the order peft adds
        them: ``base(x) + up(down(x)) * scale``, the adapters in ``dtype``. ``down`` holds the active adapters'
        A matrices stacked, ``up`` their B matrices (times their scales when there are several)."""

        def __init__(self, linear, rank: int, dtype, device):
            super().__init__()
            self.linear = linear
            # fp32 (the adapters' own) matches a policy computed without autocast; under bf16 autocast the
            # policy's adapter matmuls run in bf16, and a copy in fp32 would round otherwise
            self.register_buffer("down", torch.zeros(rank, linear.in_features, device=device, dtype=dtype),
                                 persistent=False)
            self.register_buffer("up", torch.zeros(linear.out_features, rank, device=device, dtype=dtype),
                                 persistent=False)
            self.scale = 1.0

        def forward(self, x):
            adapted = functional.linear(functional.linear(x.to(self.down.dtype), self.down), self.up) * self.scale
            return (self.linear(x) + adapted).to(x.dtype)

        def follow(self, layer) -> None:
            """Take ``layer``'s (a peft LoRA layer's) adapters as they are now. Merged into the layer's weight, they
            are in the copy's base weight only where that is the policy's own tensor (not a copy of it)."""
            shares_base = self.linear.weight.data_ptr() == layer.base_layer.weight.data_ptr()
            found = adapter_matrices(layer, base_shows_merge=shares_base)
            if found is None:
                self.down.zero_()
                self.up.zero_()
                return
            down, up, self.scale = found
            self.down.copy_(down)
            self.up.copy_(up)

    return AdaptedLinear






def _keep_adapters_apart(model, base, adapter_dtype, device) -> list:
    """Put an AdaptedLinear in place of each linear layer of the copy whose policy layer has plain LoRA adapters,
    computing them in ``adapter_dtype`` (None: the adapters' own); returns (adapted layer, policy layer) pairs.
    Layers it cannot keep apart stay merged."""
    import torch

    adapted_class, adapted = adapted_linear_class(), []
    for name, layer in base.named_modules():
        active = separable_adapters(layer)
        if not active:
            continue
        linear = model.get_submodule(name)
        if type(linear) is not torch.nn.Linear:
            continue
        rank = sum(layer.lora_A[adapter].weight.shape[0] for adapter in active)
        owner_name, _dot, child = name.rpartition(".")
        replacement = adapted_class(linear, rank, adapter_dtype or layer.lora_A[active[0]].weight.dtype, device)
        setattr(model.get_submodule(owner_name) if owner_name else model, child, replacement)
        adapted.append((replacement, layer))
    return adapted


def _base_weight(layer, leaf: str):
    """``leaf`` of a LoRA layer's base layer (dequantized when 4-bit), without its adapters."""
    from peft.utils.integrations import dequantize_module_weight

    base = layer.base_layer
    if leaf != "weight":
        return getattr(base, leaf).detach()
    return dequantize_module_weight(base).detach()


def _parameters(model):
    """(module name, parameter name, parameter) for each of the copy's parameters (tied ones under each name)."""
    for name, param in model.named_parameters(remove_duplicate=False):
        module_name, _dot, leaf = name.rpartition(".")
        yield module_name, leaf, param




def _active_module(module):
    """A module that peft wrapped to train it whole (``modules_to_save``): its trained copy."""
    wrapped = getattr(module, "modules_to_save", None)
    if wrapped is not None and hasattr(module, "active_adapters"):
        active = [name for name in module.active_adapters if name in wrapped]
        if active:
            return wrapped[active[0]]
    return getattr(module, "original_module", module)


def _plain_weight(module, leaf: str):
    """``leaf`` of a layer without adapters, as the copy holds it: dequantized when the policy holds it in 4 bits (a
    linear layer that LoRA leaves out, on a 4-bit base)."""
    import torch

    tensor = getattr(module, leaf)
    if type(tensor) not in (torch.nn.Parameter, torch.Tensor):  # bitsandbytes' packed 4-bit bytes
        from peft.utils.integrations import dequantize_module_weight

        return dequantize_module_weight(module).detach()
    return tensor.detach()


def _merged_weight(layer, leaf: str):
    """``leaf`` of a LoRA layer as the copy holds it: the base weight (dequantized when 4-bit) plus each active,
    unmerged adapter's delta, summed in fp32."""
    if leaf != "weight":
        return _base_weight(layer, leaf)
    weight = _base_weight(layer, leaf).float()
    if getattr(layer, "merged", False) or getattr(layer, "disable_adapters", False):
        return weight
    for adapter in layer.active_adapters:
        if adapter in getattr(layer, "lora_A", {}):
            weight = weight + layer.get_delta_weight(adapter).float()
    return weight


def _output_layer_diverges(base) -> bool:
    """Whether the policy's output layer is tied to its input embeddings but trains apart from them."""
    if not getattr(base.config, "tie_word_embeddings", False):
        return False
    output = base.get_output_embeddings()
    return has_adapter(output) or hasattr(output, "modules_to_save")
