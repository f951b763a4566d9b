"""The peak GPU memory and the seconds per step of a GRPO run, estimated from its settings (`grpo-skill plan` shows
them; train.py's ``[model] generation = "auto"`` decides by them).

No GPU and no torch: a first-principles sum (4-bit or 16-bit weights, LoRA weights with their gradients and optimizer
state, training activations with or without gradient checkpointing, the logits of the ~151k-token vocabulary over
the completion tokens, the KV cache of generation), each term scaled by a constant in CALIBRATION. The constants
are fitted to measured runs (benchmarks/run.py writes docs/benchmarks.json):

    python -m grpo_skill.plan --calibrate docs/benchmarks.json    # fits them and prints CALIBRATION to paste here

tests/test_plan.py checks every measured row of docs/benchmarks.json against the estimate (within 25%).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.errors import UserError
from ..core.i18n import _

GIB = 2**30

# Fitted by `python -m grpo_skill.plan --calibrate docs/benchmarks.json` (the side-by-side benchmark on H200s,
# 2026-12-01 to 06, and its decode-step table); `--leave-out thinking` shows how a fit without a case does on it.
# The memory terms were fitted again on 2026-12-05 with an H100's rows, the first whose copy kept its KV cache
# through training; times are fitted on the H200's rows only (the H100's count for memory), each row's generation
# and training phases apart where it measured them, and again on 2026-12-06 with the H200 rows of the default path.
# Memory terms multiply bytes; time terms are seconds (or FLOP/s).
CALIBRATION: dict[str, float] = {
    "fixed_gib": 0.254,  # CUDA workspaces, buffers, the allocator's rounding
    "activation_factor": 1.26,  # x 2 bytes x (10 hidden + 4 intermediate) per token per layer held at once
    "logit_bytes_unsloth": 0.6,  # per completion token x vocabulary entry in a training micro-batch
    "logit_bytes_trl": 7.27,
    "logit_bytes_liger": 0.1,
    "generation_logit_bytes_unsloth": 0.367,  # per generated token x vocabulary entry, held for the whole generation batch
    "generation_logit_bytes_trl": 0,
    "kv_factor": 1.1,
    "reserved_ratio_unsloth": 1.2,  # reserved / allocated at the peak
    "reserved_ratio_trl": 1.05,
    "decode_base_s_unsloth": 0.00763,  # one decoding step for the whole generation batch: base + per sequence
    "decode_per_sequence_s_unsloth": 0.00077,
    "decode_base_s_trl": 0.107,
    "decode_per_sequence_s_trl": 3.32e-12,
    "train_flops_per_s_unsloth": 1.6e+14,  # effective, gradient checkpointing and 4-bit dequantization included
    "train_flops_per_s_trl": 1.97e+14,
    # TRL with bitsandbytes 4-bit weights (the generated project's trl backend): one row, "standard/generated trl"
    "decode_base_s_trl_4bit": 0.09,
    "decode_per_sequence_s_trl_4bit": 3.46e-12,
    "train_flops_per_s_trl_4bit": 4.18e+14,
    # TRL in bf16 with compile_decoding: one row, "standard/plain trl, spg 8, static compiled" (a decoding step of 64
    # sequences in 24.7 ms), so how that splits into base and per sequence is not known yet
    "decode_base_s_trl_compiled": 0.0164,
    "decode_per_sequence_s_trl_compiled": 1.41e-05,
    # The fast generation path (a bf16 copy, each LoRA beside its layer in bf16, compiled static-cache decoding with
    # grouped K/V heads, fused projections, decode windows): the 'generated default' rows and the decode-step table's
    # row of that path (2026-12-06, H200: 4.88 ms at 8 sequences, 7.80 at 64)
    "decode_base_s_copy": 0.00511,
    "decode_per_sequence_s_copy": 4.77e-05,
    "step_overhead_s": 0.72,  # per optimizer step: the optimizer, logging, the trainer's own work
    # The fast path's training in bf16 (train.py's TRL settings: cuDNN attention off, "auto" checkpointing) apart
    # from plain TRL's: its own rows (2026-12-06) train ~2x as fast as plain TRL's of 2026-12-01/02
    "train_flops_per_s_copy": 3.33e+14,
    "step_overhead_s_copy": 0.271,
    # [model] compile_layers: the passes of training and scoring with each decoder layer compiled, against uncompiled
    # (an H100, 2026-12-06, the thinking case on the fast path, bf16: 1.07 s a step against 1.61; measured, not fitted;
    # a later call with both runs in it: 1.08 against 1.58, x0.684)
    "compiled_layers_pass_factor": 0.663,
    # ... and the activations those layers keep for the backward (inductor's partitioner saves fewer of their
    # intermediates): the same run's peak allocated 53.4 GiB against 63.1 uncompiled in two calls (2026-12-06), a
    # saving of 9.7 GiB on the 40.6 GiB this estimate gives its layers' activations (one layer in 8 checkpointed;
    # not fitted by --calibrate). needed_gib still counts them eager.
    "compiled_layers_activation_factor": 0.76,
    # A pass (forward, backward counted twice, reference or old log-probs) over one micro-batch takes at least what
    # the host needs to launch its kernels (peft's adapters, Python): per decoder layer. From the H100 rows of
    # 2026-12-06, micro-batches of one completion against one of 8: 2.06 s of training phases in 8 x 5 passes of one
    # short sequence (standard), 2.05 in 8 x 5 of one 1,100-token sequence (thinking); refitted with the H200 rows.
    # Not scaled to other cards.
    "host_s_per_layer_pass": 1.15e-3,
    # Several GPUs (DDP, one process each): not measured yet, guessed; tests/gpu/test_gpu_multi_gpu.py measures the
    # speed-up on 2 GPUs. Per optimizer step: gathering rewards and completions, waiting for the slowest process...
    "ddp_step_overhead_s": 0.1,
    # ...and the all-reduce of the LoRA gradients (bytes per second through NVLink, ring all-reduce).
    "allreduce_bytes_per_s": 5e+10,
}
# Unsloth sizes its decode buffers in multiples of this many tokens when it replays CUDA graphs (unsloth 2026.10).
UNSLOTH_KV_BUCKET = 256
# bitsandbytes NF4: 4 bits a weight plus its block scales (Unsloth double-quantizes them; transformers' default not).
QUANT_OVERHEAD_BYTES = {"unsloth": 1 / 64 + 4 / (64 * 256), "trl": 4 / 64}
OPTIMIZER_BYTES = {"adamw_8bit": 2, "paged_adamw_8bit": 2, "adamw_bnb_8bit": 2, "sgd": 0, "adafactor": 4}
DEFAULT_OPTIMIZER_BYTES = 8  # two fp32 moments
CUDA_CONTEXT_GIB = 0.6  # what the driver takes besides PyTorch's allocations


class PlanError(UserError):
    """Settings that cannot be planned; the message says what to give instead."""


@dataclass(frozen=True)
class ModelShape:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    tie_word_embeddings: bool = True

    @classmethod
    def from_config(cls, config: dict) -> "ModelShape":
        config = config.get("text_config", config)
        try:
            heads = config["num_attention_heads"]
            return cls(
                vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
                intermediate_size=config["intermediate_size"], num_hidden_layers=config["num_hidden_layers"],
                num_attention_heads=heads, num_key_value_heads=config.get("num_key_value_heads") or heads,
                head_dim=config.get("head_dim") or config["hidden_size"] // heads,
                tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            )
        except KeyError as missing:
            raise PlanError(_("the model's config.json has no {key}; it is not a decoder model this planner knows").format(
                key=missing)) from None

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each projection of one decoder layer."""
        h, i, q, kv = self.hidden_size, self.intermediate_size, self.num_attention_heads * self.head_dim, \
            self.num_key_value_heads * self.head_dim
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h), "gate_proj": (h, i),
                "up_proj": (h, i), "down_proj": (i, h)}

    @property
    def linear_params(self) -> int:
        return self.num_hidden_layers * sum(a * b for a, b in self.linear_shapes().values())

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def params(self) -> int:
        return self.linear_params + self.embedding_params


# Shapes of the models the presets name (their Hugging Face config.json), keyed by a name found in the model id.
KNOWN_SHAPES = {
    "qwen3-0.6b": ModelShape(151936, 1024, 3072, 28, 16, 8, 128, True),
    "qwen3-1.7b": ModelShape(151936, 2048, 6144, 28, 16, 8, 128, True),
    "qwen3-4b": ModelShape(151936, 2560, 9728, 36, 32, 8, 128, True),
    "qwen3-8b": ModelShape(151936, 4096, 12288, 36, 32, 8, 128, False),
    "qwen3-14b": ModelShape(151936, 5120, 17408, 40, 40, 8, 128, False),
    "tiny-qwen3": ModelShape(154, 64, 128, 2, 4, 2, 16, True),  # grpo_skill.modelbuild's "tiny"
}


def known_shape(model_id: str) -> tuple[str, ModelShape] | None:
    name = model_id.lower()
    for key in sorted(KNOWN_SHAPES, key=len, reverse=True):
        if re.search(rf"(^|[/_-]){re.escape(key)}($|[/_-])", name):
            return key, KNOWN_SHAPES[key]
    return None


def auto_holds_4bit(fast_generation: bool, compiled_decoding: bool) -> bool:
    """``load_in_4bit = "auto"`` on a CUDA GPU with the TRL backend: 16 bits where the fast path's copy decodes with
    the base's own weights, or where decoding compiles (4-bit compiled decoding was measured slower); else 4 bits."""
    return not (fast_generation or compiled_decoding)


@dataclass(frozen=True)
class Settings:
    """What the estimate depends on."""

    shape: ModelShape
    backend: str = "unsloth"  # "unsloth" or "trl"
    load_in_4bit: bool | str = True  # [model] load_in_4bit: True, False or "auto" (``holds_4bit`` resolves it)
    lora_r: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    gradient_checkpointing: str | bool = "unsloth"  # "auto" counts as on until planning.resolve_checkpointing
    # with checkpointing on the TRL backend, transformers' every_n_layers: only every n-th layer recomputes its
    # activations in the backward, the others keep them ([grpo] gradient_checkpointing_kwargs)
    checkpoint_every_n_layers: int = 1
    num_generations: int = 8
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    steps_per_generation: int | None = None
    generation_batch_size: int | None = None
    max_completion_length: int = 256
    prompt_tokens: int = 40
    beta: float = 0.0
    loss_type: str = "dapo"  # TRL's default
    # [grpo] entropy terms TRL computes over each micro-batch (top_entropy_quantile < 1, entropy_coef, adaptive
    # entropy): with them the optimizer step changes with the micro-batch split
    entropy_per_micro_batch: bool = False
    optim: str = "adamw_8bit"
    use_liger_kernel: bool = False
    static_cache_tokens: int | None = None  # cache_implementation="static": the cache's length, allocated up front
    compiled_decoding: bool = False  # [model] compile_decoding (TRL): the decode step compiled by transformers
    generation: str = "plain"  # [model] generation: "fast" (a bf16 copy), "plain", or "auto" (not resolved)
    max_seq_length: int = 512  # the fast path's static cache holds this many tokens per sequence
    # the fast path's copy decodes with the policy's frozen 16-bit tensors (embeddings, norms, a 16-bit base) instead
    # of copies of them; False for benchmark rows measured before it did (2026-12-05)
    copy_shares_frozen: bool = True
    # the fast path's copy keeps its static KV cache from one generation to the next, through training; False for
    # benchmark rows measured before it did (2026-12-05)
    copy_keeps_cache: bool = True
    processes: int = 1  # data-parallel GPUs (accelerate launch --num_processes), each with the whole model
    max_steps: int | None = None  # the run's optimizer steps ([grpo] max_steps); None: its epochs decide
    steps_done: int = 0  # a resumed run's steps already done (train.py --resume): max_steps is then the steps left
    num_iterations: int = 1  # [grpo] num_iterations: each generation trained on this many times (TRL's mu)
    # [model] compile_layers: the decoder layers compiled for training and scoring; "auto" (counted as off) until
    # planning.resolve_compiled_layers
    compiled_layers: bool | str = False
    whole_model_compiled: bool = False  # [grpo] torch_compile: the trainer compiles the whole model (not planned)
    dataset_rows: int | None = None  # a local dataset's rows: one generation draws no more prompts (None: unknown)

    @property
    def holds_4bit(self) -> bool:
        """Whether the base weights are 4-bit: "auto" holds them in 16 bits where the copy decodes with them (the
        fast path) or decoding compiles, and in 4 bits on the backends' own generation."""
        if self.load_in_4bit == "auto":
            return auto_holds_4bit(self.generation == "fast", self.compiled_decoding)
        return bool(self.load_in_4bit)

    @property
    def generation_steps(self) -> int:
        """Optimizer micro-steps one generation serves."""
        if self.steps_per_generation:
            return self.steps_per_generation
        if self.generation_batch_size:  # over all processes, as GRPOConfig divides it
            return max(self.generation_batch_size // (self.per_device_train_batch_size * self.processes), 1)
        return self.gradient_accumulation_steps

    @property
    def micro_steps_per_generation(self) -> int:
        """Micro-steps between two generations: TRL generates every steps_per_generation x num_iterations."""
        return self.generation_steps * self.num_iterations

    @property
    def generation_batch(self) -> int:
        """Sequences each process generates at a time."""
        return self.per_device_train_batch_size * self.generation_steps

    @property
    def sequence_tokens(self) -> int:
        return self.prompt_tokens + self.max_completion_length

    @property
    def global_batch(self) -> int:
        """Completions trained on per optimizer step, over all processes."""
        return self.per_device_train_batch_size * self.gradient_accumulation_steps * self.processes


@dataclass
class Estimate:
    peak_allocated_gib: float
    peak_reserved_gib: float
    eager_reserved_gib: float  # the reserved peak with the decoder layers uncompiled (needed_gib)
    parts_gib: dict[str, float]
    s_per_step: float
    generation_s_per_cycle: float
    train_s_per_step: float
    communication_s_per_step: float = 0.0


def _lora_params(settings: Settings) -> int:
    shapes = settings.shape.linear_shapes()
    per_layer = sum(settings.lora_r * sum(shapes[name]) for name in settings.lora_targets if name in shapes)
    if "lm_head" in settings.lora_targets:
        return settings.shape.num_hidden_layers * per_layer + settings.lora_r * (
            settings.shape.hidden_size + settings.shape.vocab_size)
    return settings.shape.num_hidden_layers * per_layer


def _backend(settings: Settings) -> str:
    return "unsloth" if settings.backend == "unsloth" else "trl"


def _time_backend(settings: Settings) -> str:
    backend = _backend(settings)
    if settings.generation == "fast":
        return "copy"
    if backend == "trl" and settings.holds_4bit:
        return "trl_4bit"
    return "trl_compiled" if backend == "trl" and settings.compiled_decoding else backend


def estimate(settings: Settings, calibration: dict[str, float] | None = None) -> Estimate:
    k = {**CALIBRATION, **(calibration or {})}
    shape, backend = settings.shape, _backend(settings)
    if settings.holds_4bit:
        weights = shape.linear_params * (0.5 + QUANT_OVERHEAD_BYTES[backend]) + shape.embedding_params * 2
    else:
        weights = shape.params * 2
    lora = _lora_params(settings) * (4 + 4 + OPTIMIZER_BYTES.get(settings.optim, DEFAULT_OPTIMIZER_BYTES))

    # Training one micro-batch: activations (all layers, or one layer being recomputed plus the checkpoints).
    tokens = settings.per_device_train_batch_size * settings.sequence_tokens
    per_token_layer = 2 * (10 * shape.hidden_size + 4 * shape.intermediate_size) * k["activation_factor"]
    compiled = settings.compiled_layers is True and backend == "trl"  # "auto" is not resolved yet: uncompiled
    if settings.gradient_checkpointing:
        checkpointed = checkpointed_layers(settings)
        # the layers left out keep their activations; one checkpointed layer at a time holds its own, recomputed
        activations = tokens * per_token_layer * (shape.num_hidden_layers - checkpointed + 1)
        if backend == "trl":  # plain gradient checkpointing keeps each layer's input on the GPU; Unsloth's offloads it
            activations += tokens * shape.hidden_size * 2 * checkpointed
    else:
        activations = tokens * per_token_layer * shape.num_hidden_layers
    completion_logits = settings.per_device_train_batch_size * settings.max_completion_length * shape.vocab_size
    logit_key = "logit_bytes_liger" if settings.use_liger_kernel and backend == "trl" else f"logit_bytes_{backend}"
    logits = completion_logits * k[logit_key]

    # Generating: the KV cache of the whole generation batch, and what scoring it holds.
    kv_tokens = max(settings.sequence_tokens, settings.static_cache_tokens or 0)
    if backend == "unsloth":
        kv_tokens = math.ceil(kv_tokens / UNSLOTH_KV_BUCKET) * UNSLOTH_KV_BUCKET
    kv = (settings.generation_batch * kv_tokens * shape.num_hidden_layers * 2 * shape.num_key_value_heads
          * shape.head_dim * 2 * k["kv_factor"])
    generation_logits = (settings.generation_batch * settings.max_completion_length * shape.vocab_size
                         * k[f"generation_logit_bytes_{backend}"])

    copy = 0.0
    if settings.generation == "fast":  # what the copy holds of its own, and a static cache of max_seq_length tokens
        if not settings.copy_shares_frozen:
            copy = shape.params * 2
        elif settings.holds_4bit:  # the linear layers in bf16; embeddings and norms are the policy's own
            copy = shape.linear_params * 2
        kv *= max(settings.max_seq_length, settings.sequence_tokens) / kv_tokens
    fixed = k["fixed_gib"] * GIB
    # the copy keeps its cache through training (its CUDA graphs read it in place); other paths free it after use
    kept_kv = kv if settings.generation == "fast" and settings.copy_keeps_cache else 0.0
    # compiled layers keep fewer intermediates for the backward, but a run is fitted to the GPU on its eager layers'
    # memory (eager_peak): they fall back to eager past torch's recompile limit, and the saving was measured with
    # gradient checkpointing on, never off
    eager_activations = activations
    if compiled:
        activations *= k["compiled_layers_activation_factor"]
    resident = fixed + weights + copy + lora + kept_kv
    peak = resident + max(activations + logits, kv - kept_kv + generation_logits)
    eager_peak = resident + max(eager_activations + logits, kv - kept_kv + generation_logits)
    parts = {"weights": weights, "generation_copy": copy, "lora_and_optimizer": lora,
             "training_activations": activations, "training_logits": logits, "generation_kv_cache": kv,
             "generation_scoring": generation_logits, "other": fixed}

    # Time: decoding steps for the generation batch, amortized over the steps it serves, plus training FLOPs.
    timing = _time_backend(settings)
    decode_step = k[f"decode_base_s_{timing}"] + k[f"decode_per_sequence_s_{timing}"] * settings.generation_batch
    generation_cycle = settings.max_completion_length * decode_step
    # forward + backward (2) + reference + old log-probs (TRL scores those where a generation is not used up within
    # one optimizer step)
    passes = 3 + (1 if settings.beta else 0) + (
        1 if settings.gradient_accumulation_steps % settings.micro_steps_per_generation else 0)
    if settings.gradient_checkpointing and backend == "trl":  # the backward recomputes the checkpointed layers
        passes += checkpointed_layers(settings) / shape.num_hidden_layers
    if timing == "copy" and not settings.holds_4bit:
        training = "copy"
    else:
        training = timing if timing not in ("trl_compiled", "copy") else (  # these change decoding only
            "trl_4bit" if settings.holds_4bit else "trl")
    # each micro-batch's passes take their FLOPs' time, or the host's time to launch them where that is longer
    pass_s = max(2 * shape.params * tokens / k[f"train_flops_per_s_{training}"],
                 k["host_s_per_layer_pass"] * shape.num_hidden_layers)
    if compiled:  # fused kernels: fewer launches and fewer trips through memory
        pass_s *= k["compiled_layers_pass_factor"]
    train = pass_s * passes * settings.gradient_accumulation_steps + k[
        "step_overhead_s_copy" if training == "copy" else "step_overhead_s"]
    per_step = generation_cycle / settings.micro_steps_per_generation * settings.gradient_accumulation_steps + train
    # Several processes work at once, each on its own per-device batch (memory per GPU is the same): a step costs
    # what it costs on one GPU, plus the exchange at its end (DDP syncs the gradients once per optimizer step).
    communication = 0.0
    if settings.processes > 1:
        ring = 2 * (settings.processes - 1) / settings.processes
        communication = k["ddp_step_overhead_s"] + ring * _lora_params(settings) * 4 / k["allreduce_bytes_per_s"]
    per_step += communication
    return Estimate(
        peak_allocated_gib=peak / GIB,
        peak_reserved_gib=peak * k[f"reserved_ratio_{backend}"] / GIB,
        eager_reserved_gib=eager_peak * k[f"reserved_ratio_{backend}"] / GIB,
        parts_gib={name: value / GIB for name, value in parts.items()},
        s_per_step=per_step,
        generation_s_per_cycle=generation_cycle,
        train_s_per_step=train,
        communication_s_per_step=communication,
    )


def checkpointed_layers(settings: Settings) -> int:
    """How many layers gradient checkpointing recomputes: every n-th of them counted from the first (transformers'
    every_n_layers, the TRL backend only), all of them on Unsloth."""
    layers, every = settings.shape.num_hidden_layers, settings.checkpoint_every_n_layers
    return math.ceil(layers / every) if _backend(settings) == "trl" and every > 1 else layers


def needed_gib(result: Estimate) -> float:
    """What a run must find free on its GPU: its reserved peak with the decoder layers eager (the same as the peak
    where they are not compiled), and CUDA's context."""
    return max(result.peak_reserved_gib, result.eager_reserved_gib) + CUDA_CONTEXT_GIB


def with_static_cache(grpo: dict, model: dict) -> dict:
    """[grpo] with a static KV cache of one size for every generation (the compiled graph is then built once):
    ``max_cache_len`` is ``model.max_seq_length`` unless ``generation_kwargs`` sets it."""
    generation_kwargs = {"max_cache_len": model["max_seq_length"], **(grpo.get("generation_kwargs") or {})}
    return {**grpo, "cache_implementation": "static", "generation_kwargs": generation_kwargs}
