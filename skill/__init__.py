"""grpo-skill: GRPO training set-ups for TRL and Unsloth, with rewards and presets as plugins."""

from .hookspecs import hookimpl
from .registry import LoraSettings, Preset, Reward, RewardContext

__version__ = "0.1.0"
__all__ = ["hookimpl", "LoraSettings", "Preset", "Reward", "RewardContext", "__version__"]
