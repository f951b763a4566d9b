"""Scoring and training passes with each row's tokens moved to its start: attention without a padding mask (the
flash kernel on a GPU), the same log-probs and gradients at every real position, and every other call left alone."""

import pytest
from support import tiny_lora_policy

torch = pytest.importorskip("torch")


def padded_batch(vocab_size: int):
    """Rows as GRPOTrainer pads them: prompts on the left to the longest, completions on the right after their end."""
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(10, vocab_size - 10, (4, 20), generator=generator)
    mask = torch.ones_like(input_ids)
    mask[0, :3] = mask[1, :5] = mask[3, :1] = 0  # shorter prompts
    mask[1, -4:] = mask[2, -7:] = 0  # completions that ended early
    return input_ids, mask


def attention_calls(monkeypatch) -> list[dict]:
    """What each call of PyTorch's SDPA was given: a mask or none, causal or not."""
    calls, sdpa = [], torch.nn.functional.scaled_dot_product_attention

    def recorded(*args, **kwargs):
        calls.append({"mask": kwargs.get("attn_mask") if len(args) < 4 else args[3],
                      "is_causal": kwargs.get("is_causal", False)})
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recorded)
    return calls


def log_probs_and_grads(policy, input_ids, mask):
    """Each real position's log-prob of its next token, as the trainer scores them, and the adapters' gradients."""
    logits = policy(input_ids=input_ids, attention_mask=mask, use_cache=False).logits[:, :-1]
    log_probs = logits.log_softmax(-1).gather(-1, input_ids[:, 1:, None])[..., 0]
    real = mask[:, 1:].bool() & mask[:, :-1].bool()
    (-log_probs[real].mean()).backward()
    grads = {name: param.grad.clone() for name, param in policy.named_parameters() if param.grad is not None}
    policy.zero_grad()
    return log_probs.detach(), real, grads


def test_aligned_rows_attend_without_a_mask_and_score_and_learn_as_the_padded_batch(monkeypatch):
    from grpo_skill.runtime import aligned_rows

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    input_ids, mask = padded_batch(policy.config.vocab_size)
    calls = attention_calls(monkeypatch)
    padded, real, padded_grads = log_probs_and_grads(policy, input_ids, mask)
    assert calls and all(call["mask"] is not None for call in calls)  # as TRL's passes run without this
    assert aligned_rows.install(policy)
    calls.clear()
    aligned, _real, aligned_grads = log_probs_and_grads(policy, input_ids, mask)
    assert calls and all(call["mask"] is None and call["is_causal"] for call in calls)
    assert torch.allclose(aligned[real], padded[real], atol=1e-5)
    assert aligned_grads.keys() == padded_grads.keys() and len(aligned_grads) > 0
    for name, grad in aligned_grads.items():
        assert torch.allclose(grad, padded_grads[name], atol=1e-5, rtol=1e-4), name
    # The output layer's logits stand where the trainer slices them: the last positions of each row as it came.
    kept = policy(input_ids=input_ids, attention_mask=mask, use_cache=False, logits_to_keep=8).logits
    assert kept.shape[1] == 8
    assert torch.allclose(kept[:, :-1].log_softmax(-1).gather(-1, input_ids[:, -7:, None])[..., 0][real[:, -7:]],
                          padded[:, -7:][real[:, -7:]], atol=1e-5)


@pytest.mark.parametrize("change", ["a hole in a row", "generate's cache", "positions given", "no padding"])
def test_a_call_that_is_not_a_padded_whole_sequence_pass_goes_to_the_model_as_it_came(monkeypatch, change):
    from grpo_skill.runtime import aligned_rows

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    input_ids, mask = padded_batch(policy.config.vocab_size)
    kwargs = {"use_cache": False}
    if change == "a hole in a row":
        mask[2, 8] = 0
    elif change == "generate's cache":
        kwargs["use_cache"] = True
    elif change == "positions given":
        kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
    else:
        mask = torch.ones_like(mask)
    with torch.no_grad():
        before = policy(input_ids=input_ids, attention_mask=mask, **kwargs).logits
        assert aligned_rows.install(policy)
        calls = attention_calls(monkeypatch)
        after = policy(input_ids=input_ids, attention_mask=mask, **kwargs).logits
    assert torch.equal(before, after)
    if change != "no padding":  # without padding transformers itself drops the mask
        assert all(call["mask"] is not None for call in calls)


def test_generation_from_the_aligned_policy_is_what_it_was():
    """The policy generating (generation = "plain", or a CPU run): `generate` passes a cache, so nothing moves."""
    from transformers import GenerationConfig

    from grpo_skill.runtime import aligned_rows

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear").eval()
    input_ids, mask = padded_batch(policy.config.vocab_size)
    config = GenerationConfig(max_new_tokens=6, do_sample=False, pad_token_id=0)
    before = policy.generate(input_ids=input_ids[:, :12], attention_mask=mask[:, :12], generation_config=config)
    aligned_rows.install(policy)
    after = policy.generate(input_ids=input_ids[:, :12], attention_mask=mask[:, :12], generation_config=config)
    assert torch.equal(before, after)


def test_a_model_with_absolute_positions_is_left_alone():
    """GPT-2 adds a learned embedding per position: moving a row would change what it computes."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from grpo_skill.runtime import aligned_rows

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=32))
    forward = model.transformer.forward
    assert not aligned_rows.install(model)
    assert model.transformer.forward == forward
