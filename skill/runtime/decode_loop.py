"""A lean sampling loop for the generation copy: one static KV cache kept between generations, the decode step
compiled once, and per token only the step, the sampling warpers and a few small tensor writes.

Why: with the copy's decode step compiled and its attention reading grouped K/V heads, a step at batch 8 took 6.65 ms
on an H200 with transformers' ``generate`` against 5.24 ms of GPU kernels under the profiler (docs/benchmarks.md,
2026-12-03): at small batches the step waits on the host, which runs ``generate``'s per-token Python (input
preparation, the attention mask grown by one column, stopping criteria). This loop keeps one full-length attention
mask (the causal mask hides the columns not yet written), so a step's inputs never change shape, and it asks the GPU
whether every sequence has ended only every ``STOP_CHECK_EVERY`` tokens.

It samples as ``generate`` does for the settings GRPO uses (temperature, top-k, top-p, min-p, min_new_tokens, the
end tokens, padding after the end), with transformers' own warpers; anything else (a repetition penalty, beams, ...)
is answered by ``generate`` itself (``supports``). Greedy decoding gives ``generate``'s tokens exactly
(tests/test_generation_copy.py); sampling draws from the same distribution with another random stream.
"""

from __future__ import annotations

STOP_CHECK_EVERY = 16  # tokens between two host syncs that ask whether every sequence has ended

# GenerationConfig settings this loop applies; any other logits processor is left to ``generate``
_UNSUPPORTED = {
    "repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "num_beams": 1,
    "num_return_sequences": 1, "typical_p": 1.0, "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "bad_words_ids": None,
    "suppress_tokens": None, "begin_suppress_tokens": None, "forced_bos_token_id": None, "forced_eos_token_id": None,
    "sequence_bias": None, "renormalize_logits": False, "exponential_decay_length_penalty": None,
    "guidance_scale": None, "watermarking_config": None, "top_h": None, "stop_strings": None,
    "prompt_lookup_num_tokens": None,
}


def supports(config, kwargs: dict) -> bool:
    """Whether this loop samples exactly what ``generate`` would for ``config`` and the call's extra arguments."""
    if set(kwargs) - {"input_ids", "attention_mask"} or config.max_new_tokens is None:
        return False
    for name, neutral in _UNSUPPORTED.items():
        if getattr(config, name, neutral) not in (neutral, None):
            return False
    return not getattr(config, "return_dict_in_generate", False)


def prepared(model, config):
    """``config`` completed from the model's own generation config and transformers' defaults, as ``generate``
    completes it (an end token or top-k the caller left unset comes from the model)."""
    config, _unused = model._prepare_generation_config(config)
    return config


def _warpers(config):
    """transformers' own warpers for the sampling settings, in ``generate``'s order."""
    from transformers.generation import (LogitsProcessorList, MinPLogitsWarper, TemperatureLogitsWarper,
                                         TopKLogitsWarper, TopPLogitsWarper)

    warpers = LogitsProcessorList()
    if not config.do_sample:
        return warpers
    if config.temperature is not None and config.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(config.temperature))
    if config.top_k is not None and config.top_k != 0:
        warpers.append(TopKLogitsWarper(top_k=config.top_k))
    if config.top_p is not None and config.top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=config.top_p))
    if config.min_p is not None:
        warpers.append(MinPLogitsWarper(min_p=config.min_p))
    return warpers


def _end_tokens(config) -> list[int]:
    eos = config.eos_token_id
    if eos is None:
        return []
    return [eos] if isinstance(eos, int) else list(eos)


class DecodeLoop:
    """Samples from ``model`` (a causal LM with a static-cache-capable architecture) with one cache of
    ``max_cache_len`` tokens per sequence, reused while the batch size stays the same."""

    def __init__(self, model, max_cache_len: int, compile_decode: bool):
        self.model = model
        self.max_cache_len = max_cache_len
        self.compile_decode = compile_decode
        self._cache = None
        self._batch = None
        self._step = None

    def _cache_for(self, batch: int):
        from transformers import StaticCache

        if self._cache is None or self._batch != batch:
            self._cache = StaticCache(config=self.model.config, max_cache_len=self.max_cache_len)
            self._batch = batch
        else:
            self._cache.reset()
        return self._cache

    def _decode_step(self):
        if self._step is None:
            self._step = self.model.__call__
            if self.compile_decode:
                from transformers import CompileConfig

                self._step = self.model.get_compiled_call(CompileConfig())
        return self._step

    def generate(self, input_ids, attention_mask, config):
        """``input_ids`` (left-padded prompts) followed by the sampled tokens, padded after each sequence's end:
        what ``generate`` returns (it may stop sooner, once every sequence has ended)."""
        import torch

        batch, prompt_len = input_ids.shape
        new_tokens = config.max_new_tokens
        if prompt_len + new_tokens > self.max_cache_len:
            raise ValueError(f"{prompt_len} prompt + {new_tokens} new tokens exceed the cache of {self.max_cache_len}")
        device = input_ids.device
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        cache = self._cache_for(batch)
        # One mask for every step: the prompt's padding, then ones; the causal mask hides what is not written yet.
        mask = torch.ones(batch, self.max_cache_len, dtype=attention_mask.dtype, device=device)
        mask[:, :prompt_len] = attention_mask
        positions = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 1)
        next_position = attention_mask.long().sum(-1, keepdim=True)  # where each sequence's first new token sits
        cache_positions = torch.arange(self.max_cache_len, device=device)
        warpers = _warpers(config)
        ends = torch.tensor(_end_tokens(config), device=device, dtype=torch.long)
        pad = config.pad_token_id if config.pad_token_id is not None else (int(ends[0]) if len(ends) else 0)
        min_new = config.min_new_tokens or 0

        out = torch.full((batch, new_tokens), pad, dtype=torch.long, device=device)
        ended = torch.zeros(batch, dtype=torch.bool, device=device)
        logits = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                            cache_position=cache_positions[:prompt_len], past_key_values=cache, use_cache=True,
                            logits_to_keep=1).logits[:, -1]
        step = self._decode_step()
        # The step's position inputs are the same two tensors every time, moved on in place: no new allocation and
        # no storage offset for the compiled step to guard on
        position = next_position.clone()
        cache_position = cache_positions[prompt_len:prompt_len + 1].clone()
        written = 0
        for index in range(new_tokens):
            token = self._sample(logits.float(), warpers, config.do_sample, ends if index < min_new else None)
            if len(ends):
                token = token.masked_fill(ended, pad)
                ended |= torch.isin(token, ends)
            out[:, index] = token
            written = index + 1
            if written == new_tokens:
                break
            if len(ends) and written % STOP_CHECK_EVERY == 0 and bool(ended.all()):
                break
            logits = step(input_ids=token[:, None], attention_mask=mask, position_ids=position,
                          cache_position=cache_position, past_key_values=cache, use_cache=True).logits[:, -1]
            position += 1
            cache_position += 1
        return torch.cat([input_ids, out[:, :written]], dim=1)

    @staticmethod
    def _sample(logits, warpers, do_sample: bool, suppress):
        import torch

        if suppress is not None and len(suppress):
            logits[:, suppress] = float("-inf")
        if not do_sample:
            return logits.argmax(-1)
        logits = warpers(None, logits)
        probs = torch.softmax(logits, dim=-1)
        # Sampling by the exponential race (argmax of p / E, E ~ Exp(1)) draws from ``probs`` as torch.multinomial
        # does, without its host sync
        return (probs / torch.empty_like(probs).exponential_(1)).argmax(-1)
