"""What a peft LoRA layer holds, read as the generation copy computes it: which adapters are active, and their
matrices. Imports torch only when asked."""

from __future__ import annotations


def has_adapter(module) -> bool:
    """Whether ``module`` is a peft layer with adapters (a LoRA layer wrapping its base layer)."""
    return hasattr(module, "base_layer") and hasattr(module, "get_delta_weight")


def separable_adapters(layer) -> list[str] | None:
    """The active adapters of a peft LoRA layer when each is a plain ``B @ A`` the copy can keep beside the layer
    (no DoRA or other variant, weights not transposed); None otherwise."""
    if not has_adapter(layer) or getattr(layer, "fan_in_fan_out", False):
        return None
    active = [name for name in layer.active_adapters if name in getattr(layer, "lora_A", {})]
    variants = getattr(layer, "lora_variant", {})
    if not active or any(variants.get(name) is not None or layer.use_dora.get(name) for name in active):
        return None
    return active


def adapter_matrices(layer):
    """A peft LoRA layer's active adapters as the copy computes them, ``(x A) B * scale``: (A, B, scale), the A
    matrices of several adapters stacked and their B matrices side by side, each times its own scale (then 1.0);
    None while the adapters are merged into the layer or disabled."""
    import torch

    if getattr(layer, "merged", False) or getattr(layer, "disable_adapters", False):
        return None
    active = separable_adapters(layer)
    down = torch.cat([layer.lora_A[name].weight.detach() for name in active])
    if len(active) == 1:  # B as it is and its scale after, as peft computes it (the same rounding)
        return down, layer.lora_B[active[0]].weight.detach(), float(layer.scaling[active[0]])
    return down, torch.cat([layer.lora_B[name].weight.detach() * layer.scaling[name] for name in active], dim=1), 1.0
