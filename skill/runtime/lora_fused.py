"""A peft LoRA layer's training forward and backward in fewer kernels: ``base(x) + up(down(x)) * scale`` computed as
the base matmul, the down matmul and one ``addmm`` that adds the scaled up matmul into the base output, instead of
peft's separate up matmul, scale and add (two elementwise passes over the layer's whole output, forward and back).
The same sum with one rounding to 16 bits instead of three; the backward is written out in the same matmuls.

Only the plain case: one active adapter, no dropout, DoRA or other variant, no bias on B, a ``torch.nn.Linear``
base (16-bit or fp32, not 4-bit) whose weight does not train, and either every tensor in one dtype or the trainer's
autocast on (its 16-bit dtype is what peft's matmuls would run in). Anything else, and the reference pass with the
adapters disabled, goes through peft's own forward. Imports torch only when asked.
"""

from __future__ import annotations

from types import MethodType

_FUNCTION = None


def _lora_linear():
    """The autograd function, made once (torch imported on first use)."""
    global _FUNCTION
    if _FUNCTION is not None:
        return _FUNCTION
    import torch
    from torch.nn import functional

    class LoRALinear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, down, up, scale):
            flat = x.reshape(-1, x.shape[-1])
            low = flat @ down.t()  # [tokens, rank]: small, kept for the backward
            out = functional.linear(flat, weight, bias)
            out.addmm_(low, up.t(), alpha=scale)
            ctx.save_for_backward(flat, low, weight, down, up)
            ctx.scale, ctx.x_shape = scale, x.shape
            return out.reshape(*x.shape[:-1], out.shape[-1])

        @staticmethod
        def backward(ctx, grad_out):
            flat, low, weight, down, up = ctx.saved_tensors
            grad = grad_out.reshape(-1, grad_out.shape[-1])
            grad_low = (grad @ up).mul_(ctx.scale)  # [tokens, rank]
            grad_x = grad_down = grad_up = None
            if ctx.needs_input_grad[0]:
                grad_x = (grad @ weight).addmm_(grad_low, down).reshape(ctx.x_shape)
            if ctx.needs_input_grad[3]:
                grad_down = grad_low.t() @ flat
            if ctx.needs_input_grad[4]:
                grad_up = (grad.t() @ low).mul_(ctx.scale)
            return grad_x, None, None, grad_down, grad_up, None

    _FUNCTION = LoRALinear
    return _FUNCTION


def _plain_adapter(layer) -> str | None:
    """The one active adapter of a peft LoRA layer when the fused path computes it as peft does, else None."""
    import torch

    active = [name for name in layer.active_adapters if name in layer.lora_A]
    if len(active) != 1:
        return None
    name = active[0]
    if (name in getattr(layer, "lora_variant", {}) or layer.use_dora.get(name) or getattr(layer, "lora_bias", {}).get(name)
            or not isinstance(layer.lora_dropout[name], torch.nn.Identity)):
        return None
    return name


def _fused_forward(layer, original):
    def forward(self, x, *args, **kwargs):
        if args or kwargs or self.disable_adapters or self.merged:
            return original(x, *args, **kwargs)
        name = _plain_adapter(self)
        if name is None:
            return original(x, *args, **kwargs)
        import torch

        base, down, up = self.base_layer, self.lora_A[name].weight, self.lora_B[name].weight
        device = x.device.type
        if torch.is_autocast_enabled(device):  # what autocast would run each matmul in
            dtype = torch.get_autocast_dtype(device)
            x, down, up = x.to(dtype), down.to(dtype), up.to(dtype)
            weight = base.weight.to(dtype)
            bias = base.bias.to(dtype) if base.bias is not None else None
            with torch.autocast(device, enabled=False):
                return _lora_linear().apply(x, weight, bias, down, up, float(self.scaling[name]))
        if not (x.dtype == base.weight.dtype == down.dtype == up.dtype):  # peft's mixed-dtype rounding: its own path
            return original(x, *args, **kwargs)
        return _lora_linear().apply(x, base.weight, base.bias, down, up, float(self.scaling[name]))

    return MethodType(forward, layer)


def fuse(policy) -> int:
    """Give each plain peft LoRA layer of ``policy`` the fused forward (in place; peft's own stays the fallback).
    Returns how many layers took it."""
    import torch
    from peft.tuners.lora import Linear as LoraLinear

    fused = 0
    for module in policy.modules():
        if type(module) is not LoraLinear or not isinstance(module.base_layer, torch.nn.Linear):
            continue
        if getattr(module, "fan_in_fan_out", False) or module.base_layer.weight.requires_grad:
            continue
        if "_grpo_skill_peft_forward" in module.__dict__:
            continue
        module._grpo_skill_peft_forward = module.forward
        module.forward = _fused_forward(module, module._grpo_skill_peft_forward)
        fused += 1
    return fused
