"""The generation copy's linear layers as few, larger matmuls: their adapters' A matrices inside the base matmul,
and the projections that read the same input in one.

With each LoRA kept beside its layer (runtime/generation_copy.py, "apart"), a decode step of Qwen3-4B runs three
matmuls per adapted layer, two of them tiny (x A, then B): on an H200 they cost about 10 us per layer whatever the
batch, 2.7 ms of a 8.4 ms step at batch 8 and 2.9 of 10.4 at 64 (docs/benchmarks.md, 2026-12-04). Here a layer's
base weight and its adapters' A matrices are stacked into one weight, so that one matmul gives the base output and
``x A``, and the B matrices make a second, small one, added as peft adds it: ``base + (x A) B * scale``. In a decoder
layer q_proj, k_proj and v_proj read the same input, and so do gate_proj and up_proj: each such group is one
``FusedProjections``, its B matrices block-diagonal. Per decoder layer that is 8 matmuls instead of 21, each output
the same products summed (in another order inside one kernel), in the adapters' dtype (which must be the copy's).

Memory: where the copy shared a 16-bit base's frozen weight with the policy, the policy's weight becomes a view of
its rows in the stacked one (the old tensor is freed), so they are still held once; only the A rows are new. A 4-bit
base's copy holds its dequantized weights itself, fused or not. The policy's weight, re-pointed with ``.data =``,
keeps its own autograd version counter: refreshing the A rows never invalidates a forward saved for a backward.

Which modules: transformers' Qwen3 attention and MLP (the presets' models), their forward rewritten here around the
fused projections; any other architecture keeps its layers as they are (``fuse`` returns what it fused).
"""

from __future__ import annotations

import functools
import sys

from .lora_layers import adapter_matrices

# module class -> its groups: (projections that read the same input, the attribute their fused module takes)
GROUPS = {
    "Qwen3Attention": ((("q_proj", "k_proj", "v_proj"), "qkv_proj"), (("o_proj",), "o_proj")),
    "Qwen3MLP": ((("gate_proj", "up_proj"), "gate_up_proj"), (("down_proj",), "down_proj")),
}


def fuse(model, base, adapted: list) -> list:
    """Replace each group of projections in ``model`` (the copy) by one FusedProjections whose adapters follow
    ``base``'s (the policy's) layers; ``adapted`` is the copy's (AdaptedLinear, policy layer) pairs. Returns the
    fused modules. A group stays as it is where a layer is not a fixed base weight plus adapters the copy follows (a
    layer that trains whole, an adapter merged in), and a lone layer without adapters has nothing to fold."""
    policy_layer = {id(copied): source for copied, source in adapted}
    fused = []
    for name, module in list(model.named_modules()):
        for projections, attribute in GROUPS.get(type(module).__name__, ()):
            members = [getattr(module, projection) for projection in projections]
            if not all(_fixed_base(member, policy_layer, base, f"{name}.{projection}")
                       for member, projection in zip(members, projections)):
                continue
            if len(members) == 1 and id(members[0]) not in policy_layer:
                continue
            sources = [policy_layer.get(id(member)) for member in members]
            policy_linears = [source.base_layer if source is not None else base.get_submodule(f"{name}.{projection}")
                              for source, projection in zip(sources, projections)]
            fused.append(fused_projections_class()(members, sources, policy_linears))
            for projection in projections:
                delattr(module, projection)
            setattr(module, attribute, fused[-1])
            if len(members) > 1:  # its forward calls the group
                module.__class__ = _fused_class(type(module))
    return fused


def _fixed_base(member, policy_layer: dict, base, name: str) -> bool:
    """Whether a copy's projection is a base weight that never changes, with or without adapters the copy follows
    (in the base weight's dtype, so that one matmul computes both)."""
    import torch

    source = base.get_submodule(name)
    if id(member) in policy_layer:  # an AdaptedLinear: its base weight is copied once, unmerged
        layer_bias = getattr(source.base_layer, "bias", None)
        return (member.down.dtype == member.linear.weight.dtype and not getattr(source, "merged", False)
                and not (layer_bias is not None and layer_bias.requires_grad))
    if type(member) is not torch.nn.Linear:
        return False
    if hasattr(source, "base_layer") or hasattr(source, "modules_to_save"):
        return False  # merged adapters or a layer that trains: the copy rewrites its weight at every refresh
    return not any(param.requires_grad for param in source.parameters())


@functools.lru_cache(maxsize=None)
def fused_projections_class():
    """The fused module (a class made on first use: torch loads with the copy)."""
    import torch
    from torch.nn import functional

    class FusedProjections(torch.nn.Module):
        """Linear layers that read the same input (or one), as one: ``weight`` stacks their base weights, then the A
        matrices of the adapted ones; ``up`` holds the B matrices block-diagonally (zeros elsewhere). Returns each
        layer's output (one layer's: that output), as the layers would."""

        def __init__(self, members, sources, policy_linears):
            super().__init__()
            linears = [getattr(member, "linear", member) for member in members]
            downs = [member.down for member in members if hasattr(member, "down")]
            self.outs = [linear.out_features for linear in linears]
            self.starts = [sum(self.outs[:index]) for index in range(len(self.outs))]  # each layer's first row
            self.ranks = [member.down.shape[0] if hasattr(member, "down") else 0 for member in members]
            self.sources = sources  # the policy's LoRA layer each member follows, or None
            self.policy_linears = policy_linears  # the policy's layer holding each member's base weight
            weight = torch.cat([linear.weight.detach() for linear in linears] + [down.detach() for down in downs])
            self.weight = torch.nn.Parameter(weight, requires_grad=False)
            biases = [linear.bias for linear in linears]
            self.bias = None if all(bias is None for bias in biases) else torch.nn.Parameter(torch.cat(
                [bias.detach() if bias is not None else weight.new_zeros(out) for bias, out in zip(biases, self.outs)]
                + [weight.new_zeros(sum(self.ranks))]), requires_grad=False)
            self.register_buffer("up", weight.new_zeros(sum(self.outs), sum(self.ranks)), persistent=False)
            self.scale = 1.0
            for linear, policy_linear, start, out in zip(linears, policy_linears, self.starts, self.outs):
                rows = self.weight.data[start:start + out]
                if policy_linear.weight.data_ptr() == linear.weight.data_ptr():  # the policy's own frozen tensor
                    policy_linear.weight.data = rows
                linear.weight.data = rows  # the old tensor is freed now, not when the whole copy is fused
            self.follow()

        def forward(self, x):
            outputs = functional.linear(x, self.weight, self.bias)
            if self.up.shape[1]:
                base, low = outputs.split([sum(self.outs), self.up.shape[1]], dim=-1)
                outputs = base + functional.linear(low, self.up) * self.scale
            return outputs if len(self.outs) == 1 else outputs.split(self.outs, dim=-1)

        def follow(self) -> None:
            """Take the policy layers' adapters as they are now. One scale for all when they share it (peft's
            rounding: B's output, then times the scale); otherwise each B block times its own scale. Adapters merged
            into the policy's weight count unless that weight is still these rows (peft merged in place, into them)."""
            matrices = [adapter_matrices(source, base_shows_merge=self._holds(index)) if rank else None
                        for index, (source, rank) in enumerate(zip(self.sources, self.ranks))]
            scales = {found[2] for found in matrices if found is not None}
            shared_scale = next(iter(scales)) if len(scales) == 1 else None
            row, column, out_row = sum(self.outs), 0, 0
            for found, rank, out in zip(matrices, self.ranks, self.outs):
                if rank:
                    block = self.up[out_row:out_row + out, column:column + rank]
                    if found is None:  # disabled: no adapter output
                        self.weight.data[row:row + rank].zero_()
                        block.zero_()
                    else:
                        down, up, scale = found
                        self.weight.data[row:row + rank].copy_(down)
                        block.copy_(up if shared_scale is not None else up * scale)
                    row, column = row + rank, column + rank
                out_row += out
            if scales:  # while every adapter is disabled the scale stays: a compiled step guards on it
                self.scale = shared_scale if shared_scale is not None else 1.0

        def _holds(self, index: int) -> bool:
            """Whether member ``index``'s rows are the policy's base weight itself."""
            return self.policy_linears[index].weight.data_ptr() == self.weight.data[self.starts[index]].data_ptr()

    return FusedProjections


@functools.lru_cache(maxsize=None)
def _fused_class(module_class):
    """``module_class`` with a forward that calls its fused projections (transformers' forward otherwise)."""
    if module_class.__name__ == "Qwen3MLP":
        class FusedMLP(module_class):
            def forward(self, x):
                gate, up = self.gate_up_proj(x)
                return self.down_proj(self.act_fn(gate) * up)

        return FusedMLP

    modeling = sys.modules[module_class.__module__]

    class FusedAttention(module_class):
        def forward(self, hidden_states, position_embeddings, attention_mask, past_key_values=None, **kwargs):
            input_shape = hidden_states.shape[:-1]
            hidden_shape = (*input_shape, -1, self.head_dim)
            query, key, value = self.qkv_proj(hidden_states)
            query_states = self.q_norm(query.view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(key.view(hidden_shape)).transpose(1, 2)
            value_states = value.view(hidden_shape).transpose(1, 2)
            cos, sin = position_embeddings
            query_states, key_states = modeling.apply_rotary_pos_emb(query_states, key_states, cos, sin)
            if past_key_values is not None:
                key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)
            attention = modeling.ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation,
                                                                       modeling.eager_attention_forward)
            output, weights = attention(self, query_states, key_states, value_states, attention_mask,
                                        dropout=0.0 if not self.training else self.attention_dropout,
                                        scaling=self.scaling, sliding_window=self.sliding_window, **kwargs)
            return self.o_proj(output.reshape(*input_shape, -1).contiguous()), weights

    return FusedAttention
