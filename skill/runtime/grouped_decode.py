"""Attention for the decode step that reads grouped K/V heads as they are.

Qwen3 shares each K/V head among several query heads. transformers' SDPA path can pass that to PyTorch
(``enable_gqa``) only without an attention mask; a padded batch in a static cache always has one, so every decode
step copies the whole K/V cache out to one head per query head first. On an H200, Qwen3-4B's shape, batch 64,
that copy took 4.3 of the step's 14-19 ms (the decode profile of 2026-12-03, docs/benchmarks.md).

When one token is decoded, the query heads of a group can stand in for query *positions*: a query of shape
(batch, kv heads, group size, head dim) against the cache's (batch, kv heads, length, head dim) computes the same
attention, and the mask (batch, 1, 1, length) applies to each of them alike. Prefill, and anything else, goes to
transformers' own SDPA function unchanged.
"""

from __future__ import annotations

NAME = "grpo_skill_grouped_decode"


def grouped_decode_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None,
                             **kwargs):
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if (query.shape[2] != 1 or groups == 1 or attention_mask is None or kwargs.get("position_bias") is not None
            or attention_mask.shape[1] != 1 or attention_mask.shape[2] != 1):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    batch, heads, _one, head_dim = query.shape
    # query head h belongs to K/V head h // groups (transformers' repeat_kv order)
    grouped = query.reshape(batch, heads // groups, groups, head_dim)
    output = torch.nn.functional.scaled_dot_product_attention(grouped, key, value, attn_mask=attention_mask,
                                                              dropout_p=0.0, scale=scaling)
    return output.reshape(batch, heads, 1, head_dim).transpose(1, 2).contiguous(), None


def register() -> str:
    """Makes ``attn_implementation = NAME`` known to transformers (with SDPA's masks); returns NAME."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(NAME, grouped_decode_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    return NAME
