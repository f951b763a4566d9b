"""Attention for the decode step that reads grouped K/V heads as they are.

Qwen3 shares each K/V head among several query heads. transformers' SDPA path can pass that to PyTorch
(``enable_gqa``) only without an attention mask; a padded batch in a static cache always has one, so every decode
step copies the whole K/V cache out to one head per query head first. On an H200, Qwen3-4B's shape, batch 64,
that copy took 4.3 of the step's 14-19 ms (the decode profile of 2026-12-03, docs/benchmarks.md).

When one token is decoded, the query heads of a group can stand in for query *positions*: a query of shape
(batch, kv heads, group size, head dim) against the cache's (batch, kv heads, length, head dim) computes the same
attention, and the mask (batch, 1, 1, length) applies to each of them alike. Prefill, and anything else, goes to
transformers' own SDPA function unchanged.

A static cache is as long as the longest generation it may hold, and attention over it reads every position, the
ones not written yet too: Qwen3-4B's K/V take 144 KiB a token, so a batch of 32 over a cache of 2560 reads 12 GB
each decode step where its weights are 7.3. Given ``decode_window`` (the keyword ``with_decode_window`` adds to
each step's inputs: the tokens so far, rounded up to a step so that a compiled decode step meets few lengths), the
attention reads the cache's first ``decode_window`` positions only; the ones after it are masked anyway.
"""

from __future__ import annotations

import functools

NAME = "grpo_skill_grouped_decode"
WINDOW = "decode_window"
# How dynamo names the window where transformers' compiled forward receives it (its wrapper takes **kwargs). Named
# dynamic, the decode step compiles once for every window; left to dynamo, it compiles a graph for the first
# window and a second, dynamic one when the window first changes (on a GPU, the copy's whole decode step again).
WINDOW_SOURCE = f"L['kwargs']['{WINDOW}']"


def grouped_decode_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None,
                             decode_window=None, **kwargs):
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if (query.shape[2] != 1 or groups == 1 or attention_mask is None or kwargs.get("position_bias") is not None
            or attention_mask.shape[1] != 1 or attention_mask.shape[2] != 1):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    if decode_window is not None and decode_window < key.shape[2]:
        key, value = key[:, :, :decode_window], value[:, :, :decode_window]
        attention_mask = attention_mask[..., :decode_window]
    batch, heads, _one, head_dim = query.shape
    # query head h belongs to K/V head h // groups (transformers' repeat_kv order)
    grouped = query.reshape(batch, heads // groups, groups, head_dim)
    output = torch.nn.functional.scaled_dot_product_attention(grouped, key, value, attn_mask=attention_mask,
                                                              dropout_p=0.0, scale=scaling)
    return output.reshape(batch, heads, 1, head_dim).transpose(1, 2).contiguous(), None


def windows_compiled_once():
    """While it lasts, torch.compile takes the decode window as a dynamic integer from the first compile on
    (``torch.compiler.config.dynamic_sources``; a torch without it compiles twice, as before)."""
    import contextlib

    import torch

    sources = getattr(torch.compiler.config, "dynamic_sources", None)
    if sources is None:
        return contextlib.nullcontext()
    return torch.compiler.config.patch(dynamic_sources=",".join(filter(None, (sources, WINDOW_SOURCE))))


def register() -> str:
    """Makes ``attn_implementation = NAME`` known to transformers (with SDPA's masks); returns NAME."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(NAME, grouped_decode_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    return NAME


def with_decode_window(prepare_inputs, step: int, limit=None):
    """``prepare_inputs_for_generation`` that also passes ``decode_window``: the sequence's length so far (known to
    the host without asking the GPU) rounded up to a multiple of ``step``, and at most ``limit()`` where given; none
    for a generation from embeddings."""

    @functools.wraps(prepare_inputs)  # generate reads its signature to check the arguments it is given
    def prepare_inputs_with_window(input_ids, *args, **kwargs):
        inputs = prepare_inputs(input_ids, *args, **kwargs)
        if kwargs.get("inputs_embeds") is None:  # from embeddings, input_ids holds only the new tokens
            window = -(-input_ids.shape[-1] // step) * step
            inputs[WINDOW] = min(window, limit()) if limit is not None else window
        return inputs

    return prepare_inputs_with_window
