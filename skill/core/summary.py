"""A preset's settings said in one line, for the presets listing and SKILL.md's table."""

from __future__ import annotations

from typing import Any, Mapping


def grpo_summary(grpo: Mapping[str, Any], quote=str) -> str:
    """A preset's main GRPOConfig values in one line ("lr 1e-05, beta 0.1, G 4, 512 tokens, ..."), for the
    presets listing and SKILL.md's table."""
    def number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)

    parts = [
        f"lr {number(grpo['learning_rate'])}" if "learning_rate" in grpo else None,
        f"beta {number(grpo['beta'])}" if "beta" in grpo else None,
        f"G {grpo['num_generations']}" if "num_generations" in grpo else None,
        f"{grpo['max_completion_length']} tokens" if "max_completion_length" in grpo else None,
        (f"batch {grpo['per_device_train_batch_size']}×{grpo.get('gradient_accumulation_steps', 1)}"
         if "per_device_train_batch_size" in grpo else None),
        f"{grpo['max_steps']} steps" if "max_steps" in grpo else None,
        quote(grpo["optim"]) if "optim" in grpo else None,
        # steps_per_generation counts micro-batches; said as optimizer steps per generation
        (f"1 generation per {grpo['steps_per_generation'] // grpo.get('gradient_accumulation_steps', 1)} steps"
         if grpo.get("steps_per_generation", 0) > grpo.get("gradient_accumulation_steps", 1) else None),
    ]
    return ", ".join(part for part in parts if part)
