"""A run launched as several processes (``accelerate launch``, ``torchrun``): which process this is, its GPU, and
the decisions every process must take together. Data-parallel (DDP): each process holds the whole model on its own
GPU, generates and scores its share of the completions, and the gradients are averaged at each step.

Light: reads the launcher's environment variables; imports torch only inside functions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..core.launch import is_launched, is_main_process, local_rank, rank, world_size  # noqa: F401  (the run's face)

# Launchers as a user types them: a program (the parent process of a worker), or python -m MODULE.
LAUNCHER_PROGRAMS = {"accelerate": ["accelerate"], "torchrun": ["torchrun"]}
LAUNCHER_MODULES = {
    "accelerate.commands.launch": ["accelerate", "launch"],
    "accelerate.commands.accelerate_cli": ["accelerate"],
    "torch.distributed.run": ["torchrun"],
}


def bind_device() -> None:
    """Bind this process to its device before anything starts CUDA: its own GPU (otherwise every process opens a
    context on GPU 0, and a 4-bit model, which the loader places on the current device, lands there too); or the
    CPU, when there is no GPU."""
    if not is_launched():
        return
    import torch

    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank() % torch.cuda.device_count())
    else:
        _read_indexed_cpu_tensors()


def _read_indexed_cpu_tensors() -> None:
    # Trainer resumes a multi-process CPU run with torch.load(map_location=args.device), and that device is "cpu:0"
    # (transformers 5.17, accelerate 1.15), a location torch.load does not know: read it as the CPU.
    import torch.serialization

    def on_the_cpu(storage, location):
        return storage if location.startswith("cpu:") else None

    torch.serialization.register_package(100, lambda obj: None, on_the_cpu)


def shards_weights() -> bool:
    """Launched with FSDP or DeepSpeed ZeRO-3 (accelerate passes its config file on in these variables; the ZeRO stage
    either as zero_stage or inside the DeepSpeed JSON that deepspeed_config_file names)."""
    fsdp = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
    deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true"
    return fsdp or (deepspeed and deepspeed_stage() == 3)


def deepspeed_stage() -> int | None:
    """The ZeRO stage of a DeepSpeed launch: accelerate's zero_stage, else the stage in the JSON its
    deepspeed_config_file names (accelerate reads it so), else accelerate's default, 2."""
    stage = os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE")
    file = os.environ.get("ACCELERATE_DEEPSPEED_CONFIG_FILE", "none")
    if stage is None and file != "none":
        import json

        try:
            stage = json.loads(Path(file).read_text(encoding="utf-8"))["zero_optimization"]["stage"]
        except (OSError, ValueError, KeyError, TypeError):
            return None  # no file (accelerate refuses it), no zero_optimization (accelerate too) or no stage (0)
    try:
        return int(stage) if stage is not None else 2
    except ValueError:
        return None


def trainer_settings(cuda: bool) -> dict:
    """GRPOConfig fields a multi-process run needs (a project's own [grpo] values win)."""
    if not is_launched():
        return {}
    # Every LoRA weight takes part in each forward pass: looking for unused ones costs a pass over the graph at
    # every step, and with (reentrant) gradient checkpointing DDP would fail on it.
    settings = {"ddp_find_unused_parameters": False}
    if not cuda:
        settings["use_cpu"] = True  # no GPU: the processes train on the CPU and talk over gloo
    return settings


def any_process(flag: bool, device=None) -> bool:
    """True on every process when ``flag`` is True on at least one (an all-reduce; gloo and NCCL alike)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    import torch

    shared = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.all_reduce(shared, op=dist.ReduceOp.MAX)
    return bool(shared.item())


def finish(exit_code: int = 0) -> None:
    """The end of a launched run: end the process group (NCCL warns at exit about one left open), then, on every
    process but the main one, exit with ``exit_code`` at once, past Python's own clean-up: a worker whose interpreter
    tore down while the main process was still writing the summary aborted now and then ("terminate called without
    an active exception": 3 of 84 two-process CPU launches, 0 of 70 since), and the launcher then killed the main
    process. The main process returns and ends as usual."""
    if not is_launched():
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    if not is_main_process():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)


def launch_command(script_argv: list[str], parent_argv: list[str] | None = None) -> list[str] | None:
    """The command line the user typed to launch this run (``accelerate launch ... train.py ...``), read from the
    parent process (the launcher) unless ``parent_argv`` is given, with the script's own arguments replaced by
    ``script_argv``; None when this process was not started by a known launcher."""
    if parent_argv is None:
        if not is_launched():
            return None
        try:
            parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        parent_argv = parent.split("\0")
    argv = [arg for arg in parent_argv if arg]
    script = Path(script_argv[0]).name
    at = next((i for i, arg in enumerate(argv) if Path(arg).name == script), None)
    for i, arg in enumerate(argv[:at] if at is not None else []):
        if Path(arg).name in LAUNCHER_PROGRAMS:
            launcher = LAUNCHER_PROGRAMS[Path(arg).name]
        elif arg in LAUNCHER_MODULES and i > 0 and argv[i - 1] == "-m":
            launcher = LAUNCHER_MODULES[arg]
        else:
            continue
        return [*launcher, *argv[i + 1:at], argv[at], *script_argv[1:]]
    return None
