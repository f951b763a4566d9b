"""What a peft LoRA layer holds, read as the generation copy computes it: which adapters are active, and their
matrices. Imports torch only when asked."""

from __future__ import annotations


def has_adapter(module) -> bool:
    """Whether ``module`` is a peft layer with adapters (a LoRA layer wrapping its base layer)."""
    return hasattr(module, "base_layer") and hasattr(module, "get_delta_weight")


def separable_adapters(layer) -> list[str] | None:
    """The active adapters of a peft LoRA layer when each is a plain ``B @ A`` the copy can keep beside the layer
    (no DoRA or other variant, no bias on B, weights not transposed); None otherwise."""
    if not has_adapter(layer) or getattr(layer, "fan_in_fan_out", False):
        return None
    active = [name for name in layer.active_adapters if name in getattr(layer, "lora_A", {})]
    variants, biases = getattr(layer, "lora_variant", {}), getattr(layer, "lora_bias", {})
    if not active or any(variants.get(name) is not None or layer.use_dora.get(name) or biases.get(name)
                         for name in active):
        return None
    return active


def adapter_matrices(layer, base_shows_merge: bool = True):
    """A peft LoRA layer's active adapters as the copy computes them, ``(x A) B * scale``: (A, B, scale), the A
    matrices of several adapters stacked and their B matrices side by side, each times its own scale (then 1.0);
    None while they are disabled, or merged into the layer where the caller's base weight is the layer's own
    (``base_shows_merge``; a copy taken before the merge does not show it)."""
    import torch

    if getattr(layer, "disable_adapters", False) or (base_shows_merge and getattr(layer, "merged", False)):
        return None
    active = separable_adapters(layer)
    if active is None:
        raise ValueError("the policy's active adapters changed to ones the generation copy cannot keep beside their "
                         "layer; make a new GenerationCopy")
    down = torch.cat([layer.lora_A[name].weight.detach() for name in active])
    if len(active) == 1:  # B as it is and its scale after, as peft computes it (the same rounding)
        return down, layer.lora_B[active[0]].weight.detach(), float(layer.scaling[active[0]])
    return down, torch.cat([layer.lora_B[name].weight.detach() * layer.scaling[name] for name in active], dim=1), 1.0
