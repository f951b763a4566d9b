"""How a run samples its completions: ``[model] generation`` (the fast path or the backend's own) and
``[model] compile_decoding`` (the TRL backend decodes with a static KV cache and a compiled decode step).

TRL builds its GenerationConfig with ``disable_compile=True``, so ``cache_implementation = "static"`` alone still
decodes step by step in eager mode. Measured with plain TRL on an H200, Qwen3-4B's shape in bf16, generation batched
over 8 steps: 3.0 s per step (2026-12-01), 1.8 with compilation back on (docs/benchmarks.md); with 4-bit bitsandbytes
weights it made the step slower (6.1 s), which is why the schema asks for ``load_in_4bit = false`` beside it.
Imports nothing heavy: the trainer is passed in.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field

from ..core.i18n import _
from ..core.schema import asks_for_another_generation_path
from . import distributed, gpus
from .estimate import auto_holds_4bit, with_static_cache  # noqa: F401  (train.py calls decoding.with_static_cache)


@dataclass(frozen=True)
class Generation:
    backend: str  # "unsloth" or "trl": what trains
    fast: bool  # sample from a bf16 copy of the policy (runtime/generation_copy.py)
    why: str
    load_in_4bit: bool = False  # [model] load_in_4bit made concrete ("auto" resolved for this path)
    weights_why: str | None = None  # why, when it was "auto"
    gradient_checkpointing: str | bool = "unsloth"  # [lora] gradient_checkpointing made concrete
    checkpointing_why: str | None = None  # why, when it was "auto"
    checkpoint_every_n_layers: int = 1  # with checkpointing on the TRL backend: transformers' every_n_layers
    micro_batches: dict = field(default_factory=dict)  # [grpo] changes "auto" made for the fast path to fit
    compile_mode: str | None = None  # the fast path's decode step on a GPU: torch.compile's mode
    compile_why: str | None = None
    compiled_layers: bool = False  # [model] compile_layers made concrete: the policy's decoder layers compiled
    compiled_layers_why: str | None = None

    def describe(self) -> str:
        path = _("fast (a bf16 copy of the policy, decoding compiled on a GPU)") if self.fast else _(
            "the {backend} backend's own").format(backend=self.backend)
        said = _("generation: {path}: {why}").format(path=path, why=self.why)
        if self.weights_why:
            said += "\n" + _("weights: {bits} (load_in_4bit = \"auto\"): {why}").format(
                bits=_("4-bit") if self.load_in_4bit else _("16-bit"), why=self.weights_why)
        if self.compile_why:
            said += "\n" + _("decode step: torch.compile {mode}: {why}").format(mode=self.compile_mode,
                                                                           why=self.compile_why)
        if self.checkpointing_why:
            said += "\n" + _("gradient checkpointing: {state} (gradient_checkpointing = \"auto\"): {why}").format(
                state=_("on") if self.gradient_checkpointing else _("off"), why=self.checkpointing_why)
        if self.compiled_layers_why:
            said += "\n" + _("decoder layers compiled for training: {state} (compile_layers = \"auto\"): {why}").format(
                state=_("yes") if self.compiled_layers else _("no"), why=self.compiled_layers_why)
        elif self.compiled_layers:
            said += "\n" + _("decoder layers compiled for training (compile_layers = true)")
        return said


def choose(config, backend: str, cuda: bool, steps_done: int = 0) -> Generation:
    """``[model] generation`` made concrete for this machine, and with it ``load_in_4bit = "auto"``. ``backend`` is
    what ``machine.choose_backend`` took; "auto" takes the fast path (training with TRL) on a CUDA GPU where
    `grpo-skill plan` says it fits. Before the model loads, it also refuses [grpo] values this machine cannot train
    with (``refuse_what_this_machine_lacks``). ``steps_done``: the step a resumed run continues from; what a compile
    costs is weighed against the steps left."""
    refuse_what_this_machine_lacks(config, cuda)
    planned = _Planned(config, steps_done)
    backend, fast, why, micro_batches = _path(config, backend, cuda, planned)
    load_in_4bit, weights_why = _weights(config.model, backend, fast, cuda)
    checkpointing, checkpointing_why, every = _checkpointing(config, backend, fast, load_in_4bit, cuda, planned,
                                                             micro_batches)
    compile_mode, compile_why = _compile_mode(config, fast, cuda, planned, load_in_4bit, micro_batches)
    compiled_layers, compiled_layers_why = _compiled_layers(config, backend, fast, cuda, planned, load_in_4bit,
                                                            micro_batches, checkpointing, every)
    return Generation(backend, fast, why, load_in_4bit, weights_why, checkpointing, checkpointing_why, every,
                      micro_batches, compile_mode, compile_why, compiled_layers, compiled_layers_why)


def held_4bit(config, backend: str, cuda: bool) -> bool:
    """``[model] load_in_4bit`` as ``choose`` resolves it, for a script that loads the model without training it
    (evaluate.py, sft.py, the probe): nothing else of the run is decided or refused."""
    backend, fast, _why, _micro_batches = _path(config, backend, cuda, _Planned(config))
    return _weights(config.model, backend, fast, cuda)[0]


def refuse_what_this_machine_lacks(config, cuda: bool) -> None:
    """[grpo] values that `grpo-skill check` takes (a config may be written on a laptop for a GPU machine) and that
    GRPOConfig refuses on this machine only after the model has loaded: ``tf32 = true`` without an Ampere or newer
    CUDA GPU (transformers: "--tf32 requires Ampere or a newer GPU arch")."""
    if config.grpo.get("tf32") and not (cuda and _has_tf32()):
        raise config.error(("grpo", "tf32"), _(
            "needs an Ampere or newer NVIDIA GPU (compute capability 8.0 or more), which this machine does not have; "
            "remove it to train here"))


def _has_tf32() -> bool:
    """transformers' is_torch_tf32_available on CUDA, without importing transformers (unsloth must come first): a
    CUDA build of torch (not ROCm) and this process's GPU of compute capability 8 or more. Asked of nvidia-smi where
    it answers, like the GPU's memory (planning.gpu_memory_gib): torch would start CUDA before distributed.bind_device
    has given this process its own GPU."""
    import torch

    if torch.version.cuda is None:
        return False
    major = _this_gpu_major()
    if major is not None:
        return major >= 8
    return torch.cuda.get_device_capability(distributed.local_rank() % torch.cuda.device_count())[0] >= 8


def _this_gpu_major() -> int | None:
    """The compute capability major of the GPU this process will train on, from nvidia-smi ("8.0" -> 8); None where
    nvidia-smi cannot say which GPU that is, or its capability."""
    found = gpus.this_process_gpu("compute_cap")
    try:
        return int(found[0].split(".")[0]) if found else None
    except ValueError:  # a field it cannot answer ("[N/A]")
        return None


def _compile_mode(config, fast: bool, cuda: bool, planned: "_Planned", load_in_4bit: bool,
                  micro_batches: dict) -> tuple[str | None, str | None]:
    """(torch.compile's mode for the fast path's decode step, why): max-autotune where the run's generations repay
    its longer first compile (planning.decode_compile_mode); None off the fast path or without a GPU."""
    from . import planning as plan

    if not (fast and cuda):
        return None, None
    try:
        settings = planned.taken(fast, load_in_4bit, micro_batches)
    except plan.PlanError:
        return "reduce-overhead", _("no model shape known to plan the run's generations")
    return plan.decode_compile_mode(settings, planned.calibration, tunes_matmuls=_tunes_matmuls(planned.card))


def _compiled_layers(config, backend: str, fast: bool, cuda: bool, planned: "_Planned", load_in_4bit: bool,
                     micro_batches: dict, checkpointing: str | bool, every: int) -> tuple[bool, str | None]:
    """(whether train.py compiles the policy's decoder layers, why where compile_layers was "auto"): "auto" compiles
    them on a GPU where the run's steps repay the compile (planning.resolve_compiled_layers); Unsloth trains with its
    own kernels."""
    from dataclasses import replace

    from . import planning as plan

    value = config.model.get("compile_layers", False)  # absent: off (tables.ModelTable)
    if value != "auto" or backend != "trl":
        if value is True and backend != "trl" and distributed.is_main_process():
            print(_("note: {note}").format(note=_(plan.COMPILE_LAYERS_ON_UNSLOTH)), file=sys.stderr)
        return value is True and backend == "trl", None
    if not cuda:
        return False, None
    try:  # this run's processes: plan's settings are one GPU's
        settings = replace(planned.taken(fast, load_in_4bit, micro_batches), gradient_checkpointing=checkpointing,
                           checkpoint_every_n_layers=every, processes=distributed.world_size())
    except plan.PlanError:
        return False, _("no model shape known to plan the run's training time")
    settings, why = plan.resolve_compiled_layers(settings, planned.calibration)
    return settings.compiled_layers, why


def _tunes_matmuls(card: "gpus.Card | None") -> bool:
    """Whether inductor's max-autotune tunes matmuls on this GPU: it skips them on GPUs with few SMs (an L4's 58).
    A card the table knows (``card``, from nvidia-smi's name) answers without starting CUDA; another asks torch."""
    if card is not None:
        return card.tunes_matmuls
    import torch

    try:
        from torch._inductor.utils import is_big_gpu
    except ImportError:  # another torch: assume it does
        return True
    return not torch.cuda.is_available() or bool(is_big_gpu(0))


def with_micro_batches(grpo: dict, generation: Generation) -> dict:
    """[grpo] in the micro-batches "auto" generation chose to let the fast path fit: each optimizer step the same
    completions and loss, each generation as many (planning.smaller_micro_batches)."""
    return {**grpo, **generation.micro_batches}


def with_checkpointed_layers(grpo: dict, generation: Generation) -> dict:
    """[grpo] with the layers "auto" checkpointing chose (transformers' every_n_layers in
    gradient_checkpointing_kwargs), the user's other options kept."""
    from .planning import checkpointing_kwargs

    if generation.checkpoint_every_n_layers == 1 or not generation.gradient_checkpointing:
        return grpo
    return {**grpo, "gradient_checkpointing_kwargs": {**checkpointing_kwargs(grpo),
                                                      "every_n_layers": generation.checkpoint_every_n_layers}}


class _Planned:
    """What ``choose`` asks `grpo-skill plan`, read once and only when asked: the project's settings as plan sees them
    on the TRL backend (it reads the dataset and the tokenizer), the GPU's memory and its name (nvidia-smi)."""

    def __init__(self, config, steps_done: int = 0):
        self.config = config
        self.steps_done = steps_done

    @property
    def steps_left(self) -> int | None:
        """max_steps less the steps a resumed run has done; None for a fresh run or one without max_steps."""
        max_steps = self.config.grpo.get("max_steps")
        if not (self.steps_done and isinstance(max_steps, int) and max_steps > 0):
            return None
        return max(max_steps - self.steps_done, 1)

    @functools.cached_property
    def settings(self):
        from . import planning  # reads the project's model shape and presets: only when asked

        return planning.from_config(self.config, backend="trl")[0]  # PlanError without a known shape

    @functools.cached_property
    def gpu_gib(self) -> float | None:
        from . import planning

        return planning.gpu_memory_gib()

    @functools.cached_property
    def card(self) -> "gpus.Card | None":
        """The GPU nvidia-smi names, where the card table knows it."""
        name = gpus.detected_name()
        return gpus.find(name) if name else None

    @functools.cached_property
    def calibration(self) -> dict | None:
        """plan's constants for the GPU nvidia-smi names, as `grpo-skill plan` scales them (None: the H200's)."""
        from .estimate import CALIBRATION

        return gpus.scaled_calibration(self.card, CALIBRATION) if self.card else None

    def taken(self, fast: bool, load_in_4bit: bool, micro_batches: dict):
        """The settings as this run takes them: its generation path, weights and micro-batches."""
        from dataclasses import replace

        left = {"max_steps": self.steps_left, "steps_done": self.steps_done} if self.steps_left is not None else {}
        return replace(self.settings, generation="fast" if fast else "plain", load_in_4bit=load_in_4bit,
                       **micro_batches, **left)


def _checkpointing(config, backend: str, fast: bool, load_in_4bit: bool, cuda: bool, planned: _Planned,
                   micro_batches: dict) -> tuple[str | bool, str | None, int]:
    """(gradient_checkpointing, why when it was "auto", every_n_layers): off where `grpo-skill plan` says the run
    fits without it, else on for the fewest layers that fit."""
    from . import planning as plan

    value = config.lora.get("gradient_checkpointing", "auto")
    given = plan.every_n_layers(config.grpo)
    if value != "auto":
        return value, None, given
    # settled before the plan where it can be: the plan reads the tokenizer, importing transformers before unsloth
    # plan sizes one GPU, this process's; several processes keep it on
    settled = plan.checkpointing_without_estimate(backend, cuda, distributed.world_size() if distributed.is_launched()
                                                  else 1)
    if settled:
        return (*settled, given)
    try:
        settings = planned.taken(fast, load_in_4bit, micro_batches)
    except plan.PlanError:
        return plan.checkpointing_on(backend), _("no model shape known to plan its memory: on"), given
    settings, why = plan.resolve_checkpointing(settings, planned.gpu_gib, cuda)
    return settings.gradient_checkpointing, why, settings.checkpoint_every_n_layers


def _weights(model: dict, backend: str, fast: bool, cuda: bool) -> tuple[bool, str | None]:
    """(load_in_4bit, why when it was "auto"). "auto": 16-bit where the fast path's copy decodes with the base's own
    weights (less memory than 4-bit plus the copy's 16-bit layers, and faster training steps; a checkpoint stored in
    4 bits gives the same values), 4-bit on the backends' own generation."""
    value = model.get("load_in_4bit", False)
    if value != "auto":
        return bool(value), None
    if not cuda:
        return False, _("no CUDA GPU: full precision")
    if distributed.shards_weights():
        return False, _("FSDP and ZeRO-3 shard 16-bit weights")
    if backend != "trl" or auto_holds_4bit(fast, bool(model.get("compile_decoding"))):
        return True, _("the {backend} backend's own generation").format(backend=backend)
    if fast:
        return False, _("the fast path's copy decodes with the base's own 16-bit weights: less memory than a 4-bit "
                        "base plus the copy's 16-bit layers, and faster training steps")
    return False, _("compile_decoding: with 4-bit weights a compiled decode step was measured slower")


def _path(config, backend: str, cuda: bool, planned: _Planned) -> tuple[str, bool, str, dict]:
    """(backend, fast, why, [grpo] micro-batch changes): ``[model] generation`` made concrete."""
    from dataclasses import replace

    from . import planning as plan  # reads the project's model shape and presets: only when asked

    requested = config.model.get("generation", "auto")
    if requested == "plain":
        return backend, False, _("[model] generation = 'plain'"), {}
    if requested == "fast" and distributed.shards_weights():
        from ..core.project import ConfigError

        raise ConfigError(_("model.generation = 'fast': its copy reads the policy's weights whole, which FSDP and ZeRO-3 "
                            "shard; set generation = 'plain', or launch with accelerate/ddp.yaml"))
    if requested == "fast":
        if not cuda:
            return "trl", True, _("[model] generation = 'fast'; without a GPU it decodes uncompiled"), {}
        return "trl", True, _("[model] generation = 'fast'"), {}
    if not cuda:
        return backend, False, _("no CUDA GPU"), {}
    if distributed.is_launched():
        return backend, False, plan.several_processes_generation(), {}
    if asks_for_another_generation_path(config.model, config.grpo):
        return backend, False, _("the config asks for another path"), {}
    try:
        settings = planned.settings
    except plan.PlanError:
        why = _("no model shape known to plan its memory; set generation = 'fast' to take it anyway")
        return backend, False, why, {}
    # the fallback is the backend this machine took (its estimate decides whether smaller micro-batches pay)
    resolved, why = plan.resolve_generation(replace(settings, backend=backend), planned.gpu_gib, cuda=True)
    if resolved.generation == "fast":
        return "trl", True, why, plan.micro_batch_change(settings, resolved)
    return backend, False, why, {}


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
