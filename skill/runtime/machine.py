"""What this machine offers a run: CUDA, bf16, Unsloth or TRL, 4-bit. Imports torch only inside functions."""

from __future__ import annotations

import importlib.util
import sys

from ..core.i18n import _
from ..core.project import ConfigError, ProjectConfig
from . import distributed


def cuda_available() -> bool:
    import torch  # torch before unsloth is fine; transformers/TRL/peft are not

    return torch.cuda.is_available()


def bf16_supported() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def trainer_defaults(cuda: bool) -> dict:
    """Trainer fields whose library default does not suit this machine (a project's own values win): without an
    accelerator, pinned memory does nothing and torch warns about it at every pass over the data."""
    return {} if cuda else {"dataloader_pin_memory": False}


def attention_without_cudnn() -> None:
    """PyTorch's attention (SDPA) without its cuDNN kernels, on a CUDA GPU: cuDNN builds a graph for each new
    sequence length, and GRPO's batches change length with every generation. On an H200 (2026-12-05, the standard
    preset's shape) the steps that met a new length took 3-4 s longer with cuDNN, and the run's mean step 0.89 s
    without it against 1.23 s with it; the other kernels (flash, memory-efficient) compute the same attention."""
    import torch

    if torch.cuda.is_available():
        torch.backends.cuda.enable_cudnn_sdp(False)


def choose_backend(requested: str, from_flag: bool = False) -> str:
    """"unsloth" or "trl": auto takes Unsloth when a CUDA GPU and the unsloth package are both there, and the run
    is one process; several processes (accelerate launch) train with TRL. ``from_flag``: ``requested`` came from
    --backend, not config.toml, and a refusal says so."""
    from .planning import unsloth_installed  # the same answer plan gives

    has_unsloth = unsloth_installed()
    if requested == "trl":
        return "trl"
    if distributed.is_launched():
        if requested == "unsloth":
            # Unsloth documents DDP through accelerate, but its GRPO under several processes is reported to hang
            # (unslothai/unsloth#4559) and is not tested here: refused before anything loads.
            raise ConfigError((_("--backend unsloth trains on one GPU only; to train on {n} processes, use --backend "
                                 "trl, or run python train.py on one GPU") if from_flag else
                               _("model.backend = 'unsloth' trains on one GPU only; to train on {n} processes, add "
                                 "--backend trl (or set backend = 'trl'), or run python train.py on one GPU")).format(
                n=distributed.world_size()))
        return "trl"
    if requested == "unsloth":
        if not cuda_available():
            raise ConfigError(_("--backend unsloth needs a CUDA GPU; use --backend trl (or auto) on this machine")
                              if from_flag else
                              _("model.backend = 'unsloth' needs a CUDA GPU; set backend = 'trl' (or 'auto') here"))
        if not has_unsloth:
            raise ConfigError(_("--backend unsloth but unsloth is not installed; pip install 'grpo-skill[unsloth]', "
                                "or use --backend trl") if from_flag else
                              _("model.backend = 'unsloth' but unsloth is not installed; pip install "
                                "'grpo-skill[unsloth]'"))
        return "unsloth"
    return "unsloth" if has_unsloth and cuda_available() else "trl"


def has_bitsandbytes() -> bool:
    return importlib.util.find_spec("bitsandbytes") is not None


def quantization_config(config: ProjectConfig, dtype, load_in_4bit: bool | None = None):
    """bitsandbytes 4-bit settings when ``load_in_4bit`` (``model.load_in_4bit`` as this run resolved it) and a CUDA
    GPU; else None (full precision)."""
    if not (config.model["load_in_4bit"] is True if load_in_4bit is None else load_in_4bit):
        return None
    if not cuda_available():  # bitsandbytes' 4-bit layers run on CUDA only
        if distributed.is_main_process():
            print(_("note: load_in_4bit needs a CUDA GPU; loading the model in full precision"), file=sys.stderr)
        return None
    if distributed.shards_weights():
        raise ConfigError(_("model.load_in_4bit: FSDP and ZeRO-3 do not shard 4-bit weights here; set load_in_4bit = "
                            "false (with a 16-bit model), or launch with accelerate/ddp.yaml"))
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
