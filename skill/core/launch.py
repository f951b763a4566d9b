"""Which process of a launch this is (``accelerate launch``, ``torchrun``), from the launcher's environment variables.

The core's errors need it (the first process of a machine reports a mistake they all hit) and sit below the runtime,
so it lives here; ``runtime.distributed`` builds the run's decisions on it.
"""

from __future__ import annotations

import os


def world_size() -> int:
    """How many processes train together (1 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def local_rank() -> int:
    """The process's index on its machine: its GPU."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def is_main_process() -> bool:
    """Rank 0 of a multi-process launch, or a single process: the one that writes the output folder."""
    return rank() == 0


def is_launched() -> bool:
    return world_size() > 1
