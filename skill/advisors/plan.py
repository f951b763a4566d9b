"""`grpo-skill plan`: the peak GPU memory and the seconds per step of a GRPO run, estimated from its settings.

No GPU and no torch: a first-principles sum (4-bit or 16-bit weights, LoRA weights with their gradients and optimizer
state, training activations with or without gradient checkpointing, the logits of the ~151k-token vocabulary over
the completion tokens, the KV cache of generation), each term scaled by a constant in CALIBRATION. The constants
are fitted to measured runs (benchmarks/run.py writes docs/benchmarks.json):

    python -m grpo_skill.plan --calibrate docs/benchmarks.json    # fits them and prints CALIBRATION to paste here

tests/test_plan.py checks every measured row of docs/benchmarks.json against the estimate (within 25%).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..core.errors import UserError
from ..core.i18n import N_, _
from ..runtime import decoding

GIB = 2**30

# Fitted by `python -m grpo_skill.plan --calibrate docs/benchmarks.json` (the side-by-side benchmark: H200s,
# 2026-12-01 and 02). Memory terms multiply bytes; time terms are seconds (or FLOP/s).
CALIBRATION: dict[str, float] = {
    "fixed_gib": 0.279,  # CUDA workspaces, buffers, the allocator's rounding
    "activation_factor": 1.15,  # x 2 bytes x (10 hidden + 4 intermediate) per token per layer held at once
    "logit_bytes_unsloth": 0.6,  # per completion token x vocabulary entry in a training micro-batch
    "logit_bytes_trl": 6.01,
    "logit_bytes_liger": 0.1,
    "generation_logit_bytes_unsloth": 0.334,  # per generated token x vocabulary entry, held for the whole generation batch
    "generation_logit_bytes_trl": 0,
    "kv_factor": 1.1,
    "reserved_ratio_unsloth": 1.2,  # reserved / allocated at the peak
    "reserved_ratio_trl": 1.15,
    "decode_base_s_unsloth": 0.00676,  # one decoding step for the whole generation batch: base + per sequence
    "decode_per_sequence_s_unsloth": 0.0007,
    "decode_base_s_trl": 0.107,
    "decode_per_sequence_s_trl": 6.29e-06,
    "train_flops_per_s_unsloth": 7.27e+13,  # effective, gradient checkpointing and 4-bit dequantization included
    "train_flops_per_s_trl": 1.24e+15,
    # TRL with bitsandbytes 4-bit weights (the generated project's trl backend): one row, "standard/generated trl"
    "decode_base_s_trl_4bit": 0.09,
    "decode_per_sequence_s_trl_4bit": 2.49e-05,
    "train_flops_per_s_trl_4bit": 2.2e+14,
    # TRL in bf16 with compile_decoding: one row, "standard/plain trl, spg 8, static compiled" (a decoding step of 64
    # sequences in 24.7 ms), so how that splits into base and per sequence is not known yet
    "decode_base_s_trl_compiled": 0.0446,
    "decode_per_sequence_s_trl_compiled": 9.43e-06,
    # The fast generation path (a merged bf16 copy, compiled static-cache decoding): from the decode-step table in
    # docs/benchmarks.md (2026-12-02: 6.6 ms at 8 sequences, 13.4 at 64), until a full-run row re-fits it
    "decode_base_s_copy": 0.00563,
    "decode_per_sequence_s_copy": 0.000121,
    "step_overhead_s": 0.328,
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
CHARS_PER_TOKEN = 4.0  # English text with Qwen3's tokenizer, roughly
CHAT_TEMPLATE_TOKENS = 12  # <|im_start|>user ... <|im_end|> <|im_start|>assistant (and <think>)


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


@dataclass(frozen=True)
class Settings:
    """What the estimate depends on."""

    shape: ModelShape
    backend: str = "unsloth"  # "unsloth" or "trl"
    load_in_4bit: bool = True
    lora_r: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    gradient_checkpointing: str | bool = "unsloth"
    num_generations: int = 8
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    steps_per_generation: int | None = None
    generation_batch_size: int | None = None
    max_completion_length: int = 256
    prompt_tokens: int = 40
    beta: float = 0.0
    optim: str = "adamw_8bit"
    use_liger_kernel: bool = False
    static_cache_tokens: int | None = None  # cache_implementation="static": the cache's length, allocated up front
    compiled_decoding: bool = False  # [model] compile_decoding (TRL): the decode step compiled by transformers
    generation: str = "plain"  # [model] generation: "fast" (a merged bf16 copy), "plain", or "auto" (not resolved)
    max_seq_length: int = 512  # the fast path's static cache holds this many tokens per sequence
    processes: int = 1  # data-parallel GPUs (accelerate launch --num_processes), each with the whole model

    @property
    def generation_steps(self) -> int:
        """Optimizer micro-steps one generation serves."""
        if self.steps_per_generation:
            return self.steps_per_generation
        if self.generation_batch_size:
            return max(self.generation_batch_size // self.per_device_train_batch_size, 1)
        return self.gradient_accumulation_steps

    @property
    def generation_batch(self) -> int:
        return self.generation_batch_size or self.per_device_train_batch_size * self.generation_steps

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
    if backend == "trl" and settings.load_in_4bit:
        return "trl_4bit"
    return "trl_compiled" if backend == "trl" and settings.compiled_decoding else backend


def estimate(settings: Settings, calibration: dict[str, float] | None = None) -> Estimate:
    k = {**CALIBRATION, **(calibration or {})}
    shape, backend = settings.shape, _backend(settings)
    if settings.load_in_4bit:
        weights = shape.linear_params * (0.5 + QUANT_OVERHEAD_BYTES[backend]) + shape.embedding_params * 2
    else:
        weights = shape.params * 2
    lora = _lora_params(settings) * (4 + 4 + OPTIMIZER_BYTES.get(settings.optim, DEFAULT_OPTIMIZER_BYTES))

    # Training one micro-batch: activations (all layers, or one layer being recomputed plus the checkpoints).
    tokens = settings.per_device_train_batch_size * settings.sequence_tokens
    per_token_layer = 2 * (10 * shape.hidden_size + 4 * shape.intermediate_size) * k["activation_factor"]
    if settings.gradient_checkpointing:
        activations = tokens * per_token_layer
        if backend == "trl":  # plain gradient checkpointing keeps each layer's input on the GPU; Unsloth's offloads it
            activations += tokens * shape.hidden_size * 2 * shape.num_hidden_layers
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
    if settings.generation == "fast":  # every weight again in bf16, and a static cache of max_seq_length tokens
        copy = shape.params * 2
        kv *= max(settings.max_seq_length, settings.sequence_tokens) / kv_tokens
    fixed = k["fixed_gib"] * GIB
    peak = fixed + weights + copy + lora + max(activations + logits, kv + generation_logits)
    parts = {"weights": weights, "generation_copy": copy, "lora_and_optimizer": lora,
             "training_activations": activations, "training_logits": logits, "generation_kv_cache": kv,
             "generation_scoring": generation_logits, "other": fixed}

    # Time: decoding steps for the generation batch, amortized over the steps it serves, plus training FLOPs.
    timing = _time_backend(settings)
    decode_step = k[f"decode_base_s_{timing}"] + k[f"decode_per_sequence_s_{timing}"] * settings.generation_batch
    generation_cycle = settings.max_completion_length * decode_step
    step_tokens = tokens * settings.gradient_accumulation_steps
    passes = 3 + (1 if settings.beta else 0) + (1 if settings.generation_steps > settings.gradient_accumulation_steps
                                                else 0)  # forward + backward (2) + reference + old log-probs
    training = timing if timing not in ("trl_compiled", "copy") else (  # these change decoding only
        "trl_4bit" if settings.load_in_4bit else "trl")
    train = 2 * shape.params * step_tokens * passes / k[f"train_flops_per_s_{training}"] + k["step_overhead_s"]
    per_step = generation_cycle / settings.generation_steps * settings.gradient_accumulation_steps + train
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
        parts_gib={name: value / GIB for name, value in parts.items()},
        s_per_step=per_step,
        generation_s_per_cycle=generation_cycle,
        train_s_per_step=train,
        communication_s_per_step=communication,
    )


# -- settings from a project, a preset or a benchmark row ---------------------------------------------------------

def prompt_tokens_of(dataset_file: Path | None, column: str = "prompt") -> int:
    """The longest prompt, in tokens, guessed from its characters (no tokenizer here)."""
    longest = 0
    if dataset_file and dataset_file.suffix == ".jsonl" and dataset_file.is_file():
        for line in dataset_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                value = json.loads(line).get(column, "")
                longest = max(longest, len(value if isinstance(value, str) else json.dumps(value)))
    else:
        longest = 160
    return math.ceil(longest / CHARS_PER_TOKEN) + CHAT_TEMPLATE_TOKENS


def shape_for(model_name: str) -> tuple[ModelShape, str]:
    """(shape, where it came from): a local folder's config.json, else the table of known shapes."""
    folder = Path(model_name).expanduser()
    if (folder / "config.json").is_file():
        return ModelShape.from_config(json.loads((folder / "config.json").read_text())), str(folder / "config.json")
    found = known_shape(model_name)
    if found is None:
        raise PlanError(_("no shape known for model {model!r}; point model.name at a local folder with its "
                          "config.json, or plan a preset: {known}").format(
            model=model_name, known=", ".join(sorted(KNOWN_SHAPES))))
    return found[1], _("known shape {name}").format(name=found[0])


def backend_for(backend: str, processes: int) -> str:
    """The backend train.py takes: auto is Unsloth on one GPU, TRL on several (Unsloth trains on one GPU only)."""
    if processes > 1:
        if backend == "unsloth":
            raise PlanError(_("backend unsloth trains on one GPU only; plan {n} GPUs with --backend trl").format(
                n=processes))
        return "trl"
    return "unsloth" if backend in ("unsloth", "auto") else "trl"


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
                   processes: int = 1) -> Settings:
    gradient_checkpointing = lora.get("gradient_checkpointing", "unsloth")
    generation = model.get("generation", "auto")
    if backend == "unsloth" or grpo.get("use_vllm") or model.get("compile_decoding"):
        generation = "plain"
    backend = "trl" if generation == "fast" else backend_for(backend, processes)
    compiled = bool(model.get("compile_decoding")) and backend == "trl"
    if compiled:  # what train.py sets for it
        grpo = decoding.with_static_cache(grpo, model)
    return Settings(
        shape=shape, backend=backend, processes=processes, compiled_decoding=compiled, generation=generation,
        max_seq_length=int(model.get("max_seq_length", 512)),
        load_in_4bit=bool(model.get("load_in_4bit", True)), lora_r=int(lora.get("r", 16)),
        lora_targets=tuple(lora.get("target_modules", Settings.lora_targets)),
        gradient_checkpointing=gradient_checkpointing,
        num_generations=int(grpo.get("num_generations", 8)),
        per_device_train_batch_size=int(grpo.get("per_device_train_batch_size", 8)),
        gradient_accumulation_steps=int(grpo.get("gradient_accumulation_steps", 1)),
        steps_per_generation=grpo.get("steps_per_generation"), generation_batch_size=grpo.get("generation_batch_size"),
        max_completion_length=int(grpo.get("max_completion_length", 256)), prompt_tokens=prompt_tokens,
        beta=float(grpo.get("beta", 0.0)), optim=str(grpo.get("optim", "adamw_torch")),
        use_liger_kernel=bool(grpo.get("use_liger_kernel", False)),
        static_cache_tokens=(((grpo.get("generation_kwargs") or {}).get("max_cache_len") or 0)
                             if grpo.get("cache_implementation") == "static" else None),
    )


def from_project(path: str | Path, backend: str | None = None, prompt_tokens: int | None = None,
                 processes: int = 1, overrides: dict | None = None) -> tuple[Settings, dict]:
    from ..core import project

    return from_config(project.load(path, overrides), backend, prompt_tokens, processes)  # overrides: `plan --set`


def from_config(config, backend: str | None = None, prompt_tokens: int | None = None,
                processes: int = 1) -> tuple[Settings, dict]:
    """Settings of a loaded project (``project.ProjectConfig``)."""
    local = config.local_model_dir()
    shape, source = shape_for(str(local) if local is not None else config.model["name"])
    tokens, how = _prompt_length(prompt_tokens, config.dataset_file(), config.dataset, config.model["name"],
                                 config.model_path() if config.builds_its_model() or local else None)
    settings = _grpo_settings(config.grpo, config.lora, config.model, backend or config.model.get("backend", "auto"),
                              shape, tokens, processes)
    return settings, {"project": str(config.project_dir), "preset": config.model["preset"],
                      "model": config.model["name"], "shape_source": source,
                      "max_seq_length": config.model["max_seq_length"], "prompt_tokens_source": how}


def _prompt_length(given: int | None, data_file: Path | None, dataset: dict, model: str,
                   tokenizer_folder: str | None) -> tuple[int, str]:
    """(the longest prompt in tokens, how that was found): given, measured with the model's tokenizer, or guessed."""
    from . import promptlength

    if given:
        return given, _("given with --prompt-tokens")
    found = promptlength.longest(data_file, dataset.get("prompt_column", "prompt"), dataset.get("system_prompt", ""),
                                 dataset.get("chat_template_kwargs"), tokenizer_folder or model, model)
    return found.tokens, found.how


def from_preset(name: str, backend: str | None = None, prompt_tokens: int | None = None,
                processes: int = 1) -> tuple[Settings, dict]:
    from dataclasses import asdict as as_dict
    from importlib import resources

    from ..core import plugins

    preset = plugins.get_preset(name)
    shape, source = shape_for(preset.model_id)
    sample = Path(str(resources.files("grpo_skill.templates").joinpath("project/data/prompts.jsonl")))
    tokens, how = _prompt_length(prompt_tokens, sample, {"chat_template_kwargs": dict(preset.chat_template_kwargs)},
                                 preset.model_id, preset.build_model() if preset.build_model else None)
    model = {"load_in_4bit": preset.load_in_4bit, "max_seq_length": preset.max_seq_length}
    settings = _grpo_settings(dict(preset.grpo), as_dict(preset.lora), model, backend or "auto", shape, tokens,
                              processes)
    return settings, {"preset": preset.name, "model": preset.model_id, "shape_source": source,
                      "max_seq_length": preset.max_seq_length, "prompt_tokens_source": how}


def from_benchmark_row(row: dict, shape: ModelShape) -> Settings:
    settings = row["settings"]
    prompt = row.get("prompt_tokens_per_sequence") or settings.get("prompt_tokens") or 40
    model = {**settings["model"], "compile_decoding": bool(settings.get("compile_decode"))}
    return _grpo_settings(settings["grpo"], settings["lora"], model, settings["backend"], shape,
                          int(round(prompt)), int(settings.get("processes", 1)))


# -- advice --------------------------------------------------------------------------------------------------------

def gpu_memory_gib() -> float | None:
    """The first GPU's memory from nvidia-smi, if there is one (no torch)."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
        return float(done.stdout.split()[0]) / 1024 if done.returncode == 0 and done.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def needed_gib(result: Estimate) -> float:
    return result.peak_reserved_gib + CUDA_CONTEXT_GIB


def valid_generation_steps(settings: Settings, spg: int) -> bool:
    """TRL generates whole groups of completions: the generation batch of all processes together must be a multiple
    of num_generations."""
    return spg >= 1 and (settings.per_device_train_batch_size * settings.processes * spg) % settings.num_generations == 0


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
    if not settings.load_in_4bit:
        candidates.append(({"model.load_in_4bit": True}, dict(load_in_4bit=True)))
    if not settings.gradient_checkpointing:
        candidates.append(({"lora.gradient_checkpointing": "unsloth"}, dict(gradient_checkpointing="unsloth")))
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
            found.append({"change": change, "peak_reserved_gib": round(result.peak_reserved_gib, 1),
                          "s_per_step": round(result.s_per_step, 2)})
    return found


def faster_that_fits(settings: Settings, budget_gib: float, calibration: dict | None = None) -> dict | None:
    """The largest steps_per_generation (up to 16) that still fits, when it beats the current one."""
    best = None
    for spg in (2, 4, 8, 16):
        if spg <= settings.generation_steps or not valid_generation_steps(settings, spg):
            continue
        result = estimate(replace(settings, steps_per_generation=spg, generation_batch_size=None), calibration)
        if needed_gib(result) <= budget_gib:
            best = {"change": {"steps_per_generation": spg}, "peak_reserved_gib": round(result.peak_reserved_gib, 1),
                    "s_per_step": round(result.s_per_step, 2)}
    return best


FAST_GENERATION_MARGIN = 0.9  # the fast path is chosen when its estimate leaves a tenth of the GPU's memory free


def generation_path(settings: Settings) -> str:
    """How completions are sampled: "fast" (a merged bf16 copy), "unsloth", "trl" or "trl compiled"."""
    if settings.generation == "fast":
        return "fast"
    if settings.backend == "unsloth":
        return "unsloth"
    return "trl compiled" if settings.compiled_decoding else "trl"


def resolve_generation(settings: Settings, gpu_gib: float | None, cuda: bool = True) -> tuple[Settings, str]:
    """([model] generation = "auto" made concrete, why): the fast path on a CUDA GPU where its estimate fits,
    otherwise the backend's own generation. Without a known GPU size, the fast path, with what it needs said."""
    if settings.generation != "auto":
        return settings, _("set in config.toml")
    plain = replace(settings, generation="plain")
    if not cuda:
        return plain, _("no CUDA GPU: the fast path compiles on a GPU only")
    fast = replace(settings, generation="fast", backend="trl", compiled_decoding=False)
    need = needed_gib(estimate(fast))
    if gpu_gib is None:
        return fast, _("needs about {need:.1f} GiB of GPU memory").format(need=need)
    if need <= gpu_gib * FAST_GENERATION_MARGIN:
        return fast, _("plan: {need:.1f} GiB of {gpu:.0f} GiB").format(need=need, gpu=gpu_gib)
    return plain, _("the fast path needs about {need:.1f} GiB, more than nine tenths of this GPU's {gpu:.0f} GiB").format(
        need=need, gpu=gpu_gib)


def plan(settings: Settings, about: dict, gpu_gib: float | None, calibration: dict | None = None) -> dict:
    """``calibration``: constants for another GPU than the H200 they were fitted on (grpo_skill.gpus)."""
    settings, generation_why = resolve_generation(settings, gpu_gib)
    result = estimate(settings, calibration)
    out = {**about, "settings": {**asdict(settings), "shape": asdict(settings.shape),
                                  "generation_steps": settings.generation_steps,
                                  "generation_batch": settings.generation_batch},
           "peak_allocated_gib": round(result.peak_allocated_gib, 2),
           "peak_reserved_gib": round(result.peak_reserved_gib, 2),
           "needed_gib": round(needed_gib(result), 2),
           "parts_gib": {name: round(value, 2) for name, value in result.parts_gib.items()},
           "s_per_step": round(result.s_per_step, 2),
           "generation_s_per_cycle": round(result.generation_s_per_cycle, 2),
           "train_s_per_step": round(result.train_s_per_step, 2),
           "generation_path": generation_path(settings), "generation_why": generation_why,
           "gpu_memory_gib": gpu_gib, "fits": None, "changes": []}
    if settings.processes > 1:
        out["data_parallel"] = data_parallel(settings, result, calibration)
    if gpu_gib is not None:
        out["fits"] = needed_gib(result) <= gpu_gib
        if out["fits"]:
            faster = faster_that_fits(settings, gpu_gib, calibration)
            out["faster"] = faster if faster and faster["s_per_step"] < result.s_per_step else None
        else:
            out["changes"] = changes_to_fit(settings, gpu_gib, calibration)
    return out


def data_parallel(settings: Settings, result: Estimate, calibration: dict | None = None) -> dict:
    """Several GPUs against one: the global batch, completions per second, and the batch that keeps one GPU's."""
    one = estimate(replace(settings, processes=1), calibration)
    per_second = settings.global_batch / result.s_per_step
    out = {"processes": settings.processes, "global_batch": settings.global_batch,
           "communication_s_per_step": round(result.communication_s_per_step, 3),
           "completions_per_s": round(per_second, 2),
           "speedup": round(per_second / (replace(settings, processes=1).global_batch / one.s_per_step), 2),
           "same_global_batch": None}
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


def _change_text(change: dict) -> str:
    return ", ".join(f"{key} = {json.dumps(value)}" for key, value in change.items())


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
        weights=_("4-bit") if settings["load_in_4bit"] else _("16-bit weights"))]
    lines.append(_("generation: {path} ({why})").format(path=result["generation_path"], why=result["generation_why"]))
    lines += [_("note: {note}").format(note=note) for note in result.get("notes", [])]
    lines.append(_("per optimizer step: {completions} completions of {length} tokens (batch {batch} x {accumulation} "
                   "accumulation), prompts up to ~{prompt} tokens; {sequences} sequences generated at a time, for "
                   "{every} micro-step(s)").format(
        completions=settings["per_device_train_batch_size"] * settings["gradient_accumulation_steps"],
        length=settings["max_completion_length"], batch=settings["per_device_train_batch_size"],
        accumulation=settings["gradient_accumulation_steps"], prompt=settings["prompt_tokens"],
        sequences=settings["generation_batch"], every=settings["generation_steps"]))
    lines.append(_("peak GPU memory: ~{allocated:.1f} GiB allocated, ~{reserved:.1f} GiB reserved, ~{needed:.1f} GiB "
                   "with the CUDA context").format(allocated=result["peak_allocated_gib"],
                                                   reserved=result["peak_reserved_gib"], needed=result["needed_gib"]))
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
                       "completions/s, ~{speedup:.1f}x TRL on one GPU (the exchange is guessed, not yet measured)").format(
            n=parallel["processes"], batch=parallel["global_batch"], comm=parallel["communication_s_per_step"],
            rate=parallel["completions_per_s"], speedup=parallel["speedup"]))
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
                change=_change_text(faster["change"]), reserved=faster["peak_reserved_gib"], step=faster["s_per_step"]))
    else:
        lines.append(_("does not fit in {gpu:.1f} GiB (needs ~{needed:.1f} GiB)").format(
            gpu=result["gpu_memory_gib"], needed=result["needed_gib"]))
        if result["changes"]:
            lines.append(_("changes that make it fit, one at a time:"))
            lines += ["  " + _("{change}: ~{reserved:.1f} GiB reserved, ~{step:.1f} s/step").format(
                change=_change_text(item["change"]), reserved=item["peak_reserved_gib"], step=item["s_per_step"])
                for item in result["changes"]]
        else:
            lines.append(_("no single change makes it fit: use a smaller model, or a GPU with more memory"))
    return "\n".join(lines)


# -- calibration ---------------------------------------------------------------------------------------------------

MEMORY_CONSTANTS = ("fixed_gib", "activation_factor", "logit_bytes_unsloth", "logit_bytes_trl", "logit_bytes_liger",
                    "generation_logit_bytes_unsloth", "kv_factor", "reserved_ratio_unsloth", "reserved_ratio_trl")
TIME_CONSTANTS = ("decode_base_s_unsloth", "decode_per_sequence_s_unsloth", "decode_base_s_trl",
                  "decode_per_sequence_s_trl", "decode_base_s_trl_4bit", "decode_per_sequence_s_trl_4bit",
                  "decode_base_s_trl_compiled", "decode_per_sequence_s_trl_compiled",
                  "train_flops_per_s_unsloth", "train_flops_per_s_trl", "train_flops_per_s_trl_4bit",
                  "step_overhead_s")


def measured_rows(report: dict) -> list[tuple[dict, Settings]]:
    """(row, settings) for every row of a benchmark report that measured its peak memory."""
    shape = ModelShape.from_config(report["model"]["shape"])
    return [(row, from_benchmark_row(row, shape)) for row in report.get("rows", [])
            if row.get("peak_allocated_gib") and row.get("settings")]


def errors(rows, calibration: dict) -> list[float]:
    """log(estimate / measured) of every measured quantity of every row."""
    out = []
    for row, settings in rows:
        result = estimate(settings, calibration)
        out.append(math.log(result.peak_allocated_gib / row["peak_allocated_gib"]))
        if row.get("peak_reserved_gib"):
            out.append(math.log(result.peak_reserved_gib / row["peak_reserved_gib"]))
        # 4-bit with compiled decoding: measured (slower), but refused in a project, so not a time to fit
        if row.get("s_per_step") and not (settings.compiled_decoding and settings.load_in_4bit):
            out.append(0.5 * math.log(result.s_per_step / row["s_per_step"]))  # time counts less than memory
    return out


def calibrate(report: dict, rounds: int = 60) -> dict[str, float]:
    """Constants that minimise the squared log errors (coordinate search in log space, constants stay positive)."""
    rows = measured_rows(report)
    if not rows:
        raise PlanError(_("no row with a measured peak memory to calibrate on"))
    fitted = dict(CALIBRATION)

    def loss(candidate):
        return sum(error * error for error in errors(rows, candidate))

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
    args = parser.parse_args(argv)
    report = json.loads(args.calibrate.read_text())
    fitted = calibrate(report)
    rows = measured_rows(report)
    for row, settings in rows:
        result = estimate(settings, fitted)
        print(f"{row['case']:9} {row['name'][:40]:40} allocated {result.peak_allocated_gib:6.2f} / "
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
