"""Scoring and training passes with each sequence moved to the start of its row, so attention needs no padding mask.

GRPOTrainer pads every prompt of a generation to the longest one on the left and every completion on the right. With
a padding mask in the batch, PyTorch's SDPA cannot take its flash kernel (an explicit mask rules it out) and
transformers expands the grouped K/V heads to every query head first. An H100 profile of the thinking default
(docs/benchmarks.md's notes, 2026-12-06 21:59) found attention 267 ms of a step's 1,274 ms of kernels outside
generation, in the memory-efficient kernel, and another 154 ms in copies; with this, 1,045 ms (2026-12-07).

Rolled so that its tokens come first, a row is its tokens then padding: a causal pass without any mask computes
every real position exactly as the masked pass does (each attends only to the real tokens before it), and the
padding after them is never read by the loss. The decoder's hidden states are rolled back before the output layer,
so the logits stand where the trainer expects them. Positions start at 0 in every row, as `generate` numbers a
left-padded prompt; with rotary embeddings only their differences reach attention, so a model with rotary
embeddings is the one this is installed on (not one whose attention reads absolute positions besides, as Llama 4's
chunked attention does), and what it computes changes by rounding only.
"""

from __future__ import annotations

import functools
import types

# A call is a pass this aligns only with use_cache=False (what GRPOTrainer passes to score and train; `generate`
# passes True) and none of these: given positions, a cache or embeddings, or per-layer outputs asked for. A mixture of
# experts' router logits are the exception: rolled back like the hidden states, they meet the padded rows' mask its
# load-balancing loss applies.
_GIVEN_LEAVES_IT = ("position_ids", "past_key_values", "inputs_embeds")
_TRUE_LEAVES_IT = ("output_attentions", "output_hidden_states")
# Config keys of attention that reads absolute positions beside rotary embeddings (Llama 4's chunked attention and
# its temperature on the layers without RoPE): moving a row would change what such a model computes. Layers without
# any position encoding (SmolLM3's) are no such case: they see the same tokens either way.
_ABSOLUTE_POSITION_KEYS = ("attention_chunk_size", "attn_temperature_tuning")


def install(policy) -> bool:
    """Route the policy's scoring and training passes through aligned rows. ``policy``: the trainer's model (peft,
    accelerate's wrapper or a plain transformers model). Returns False, changing nothing, for a model without
    rotary embeddings (its positions are absolute: moving a row would change them)."""
    backbone = decoder_stack(policy)
    if backbone is None or getattr(backbone, "rotary_emb", None) is None or getattr(backbone, "_rows_aligned", False):
        return False
    config = getattr(backbone, "config", None)
    if any(getattr(config, key, None) for key in _ABSOLUTE_POSITION_KEYS):
        return False
    # Bound to the module (not a closure over it): a deep copy of the policy aligns its own rows with its own weights.
    backbone._forward_unaligned = backbone.__dict__.get("forward")  # another library's wrapper, if any, still runs
    backbone.forward = types.MethodType(_forward_aligned, backbone)
    backbone._rows_aligned = True
    return True


def _forward_aligned(self, *args, **kwargs):
    forward = self._forward_unaligned or functools.partial(type(self).forward, self)
    rows = None if args else aligned_rows(kwargs)
    if rows is None:
        return forward(*args, **kwargs)
    input_ids, back = rows
    outputs = forward(**{**kwargs, "input_ids": input_ids, "attention_mask": None})
    hidden = rolled_back(outputs.last_hidden_state, back)
    assert hidden is not None, "a decoder's hidden states are (rows, columns, width)"
    outputs.last_hidden_state = hidden
    router_logits = getattr(outputs, "router_logits", None)
    if router_logits is not None:
        router_logits = tuple(rolled_back(layer, back) for layer in router_logits)
        if any(layer is None for layer in router_logits):  # a router of another shape: its loss needs the padded pass
            return forward(*args, **kwargs)
        outputs.router_logits = router_logits
    return outputs


def rolled_back(per_token, back):
    """``per_token`` (rows, columns, ...) or flattened as (rows x columns, ...), each row moved back to where the
    padded batch had it; None for another shape."""
    rows, columns = back.shape
    flat = per_token.dim() >= 2 and per_token.shape[0] == rows * columns
    if not flat and per_token.shape[:2] != back.shape:
        return None
    by_row = per_token.reshape(rows, columns, -1)
    restored = by_row.gather(1, back[:, :, None].expand(-1, -1, by_row.shape[-1]))
    return restored.reshape(per_token.shape)


def decoder_stack(policy):
    """The decoder layers' model (Qwen3Model in Qwen3ForCausalLM) under peft's and accelerate's wrappers."""
    model = getattr(policy, "module", policy)  # DistributedDataParallel
    if hasattr(model, "get_base_model"):  # peft
        model = model.get_base_model()
    backbone = getattr(model, "base_model", None)  # transformers names it by base_model_prefix
    return backbone if backbone is not None and backbone is not model else None


def aligned_rows(kwargs: dict):
    """(each row's tokens rolled to its start, the index that rolls the hidden states back) for a padded batch whose
    every row is padding, tokens, padding; None where the call is not such a pass or there is no padding."""
    import torch

    input_ids, mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
    if kwargs.get("use_cache") is not False or any(kwargs.get(name) is not None for name in _GIVEN_LEAVES_IT) \
            or any(map(kwargs.get, _TRUE_LEAVES_IT)):
        return None
    if not isinstance(input_ids, torch.Tensor) or not isinstance(mask, torch.Tensor) or input_ids.dim() != 2 \
            or mask.shape != input_ids.shape or input_ids.shape[1] < 2:
        return None
    mask = mask.bool()
    columns = torch.arange(mask.shape[1], device=mask.device)
    starts = mask.int().argmax(dim=1, keepdim=True)  # each row's first token
    forward_index = (columns + starts) % mask.shape[1]
    rolled = mask.gather(1, forward_index)
    # One wait for the GPU (transformers' own check for an all-ones mask, skipped after this, was one too).
    contiguous, padded = torch.stack([rolled[:, 0].all() & (rolled[:, :-1] >= rolled[:, 1:]).all(),
                                      ~mask.all()]).tolist()
    if not (contiguous and padded):
        return None
    return input_ids.gather(1, forward_index), (columns - starts) % mask.shape[1]
