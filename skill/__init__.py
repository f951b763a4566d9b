"""grpo-skill: GRPO training set-ups for TRL and Unsloth, with rewards and presets as plugins."""

from .hookspecs import hookimpl
from .plugins import derive_preset
from .registry import (
    Judge,
    JudgeRequest,
    LoraSettings,
    Preset,
    Reward,
    RewardContext,
    RewardError,
    completion_text,
    prompt_text,
)

__version__ = "0.1.0"
__all__ = [
    "hookimpl", "derive_preset", "Judge", "JudgeRequest", "LoraSettings", "Preset", "Reward", "RewardContext",
    "RewardError", "completion_text", "prompt_text", "__version__",
]
