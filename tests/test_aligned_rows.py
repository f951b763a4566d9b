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
    """GPT-2 adds a learned embedding per position, Llama 4's chunked attention counts from the row's start: moving a
    row would change what they compute."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from grpo_skill.runtime import aligned_rows

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=32))
    forward = model.transformer.forward
    assert not aligned_rows.install(model)
    assert model.transformer.forward == forward
    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    policy.config.attention_chunk_size = 8192  # as Llama 4's config has it
    assert not aligned_rows.install(policy)


@pytest.mark.parametrize("path", ["gradient checkpointing", "through a DDP-like wrapper", "the backbone called directly"])
def test_the_trainers_other_paths_to_the_decoder_align_as_exactly(path):
    """Gradient checkpointing (the presets' "auto" turns it on where memory is short), the policy inside
    DistributedDataParallel (accelerate launch) and TRL's chunked log-probs (use_liger_kernel), which call the decoder
    stack itself and read its last hidden states."""
    from grpo_skill.runtime import aligned_rows

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    input_ids, mask = padded_batch(policy.config.vocab_size)
    real = mask.bool()
    if path == "gradient checkpointing":
        policy.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        policy.train()
    if path == "the backbone called directly":
        backbone = aligned_rows.decoder_stack(policy)

        def hidden():
            return backbone(input_ids=input_ids, attention_mask=mask, use_cache=False).last_hidden_state

        padded = hidden().detach()
        assert aligned_rows.install(policy)
        assert torch.allclose(hidden().detach()[real], padded[real], atol=1e-5)
        return
    padded, real, padded_grads = log_probs_and_grads(policy, input_ids, mask)
    wrapper = torch.nn.Module()
    wrapper.module = policy  # what DistributedDataParallel holds the model as
    assert aligned_rows.install(wrapper if path == "through a DDP-like wrapper" else policy)
    aligned, _real, aligned_grads = log_probs_and_grads(policy, input_ids, mask)
    assert torch.allclose(aligned[real], padded[real], atol=1e-5)
    for name, grad in aligned_grads.items():
        assert torch.allclose(grad, padded_grads[name], atol=1e-5, rtol=1e-4), name


def test_a_mixture_of_experts_keeps_its_load_balancing_loss(monkeypatch):
    """A MoE's router logits feed its auxiliary loss, masked by the padded rows: aligned, they are rolled back like the
    hidden states, so the loss is what the padded pass gives (to rounding) and attention still runs without a mask."""
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    from grpo_skill.runtime import aligned_rows

    torch.manual_seed(0)
    model = Qwen3MoeForCausalLM(Qwen3MoeConfig(
        vocab_size=64, hidden_size=32, intermediate_size=32, moe_intermediate_size=16, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_experts=4, num_experts_per_tok=2,
        max_position_embeddings=64, router_aux_loss_coef=0.01))
    input_ids, mask = padded_batch(64)
    real = mask.bool()
    with torch.no_grad():
        before = model(input_ids=input_ids, attention_mask=mask, use_cache=False, output_router_logits=True)
        assert aligned_rows.install(model)
        calls = attention_calls(monkeypatch)
        after = model(input_ids=input_ids, attention_mask=mask, use_cache=False, output_router_logits=True)
    assert calls and all(call["mask"] is None for call in calls)
    assert torch.allclose(after.aux_loss, before.aux_loss, atol=1e-6)
    for layer_before, layer_after in zip(before.router_logits, after.router_logits, strict=True):
        assert torch.allclose(layer_after[real.flatten()], layer_before[real.flatten()], atol=1e-5)


def test_router_logits_of_a_shape_it_cannot_roll_back_leave_the_pass_as_it_came():
    """A router that returns logits of some tokens only (not one row per token) cannot be rolled back: the pass is
    run again as it came, padding mask and all, and that is what the caller gets."""
    from types import SimpleNamespace

    from grpo_skill.runtime import aligned_rows

    class DecoderStack(torch.nn.Module):
        rotary_emb = object()

        def __init__(self):
            super().__init__()
            self.masks = []

        def forward(self, input_ids=None, attention_mask=None, use_cache=None):
            self.masks.append(attention_mask)
            hidden = input_ids[:, :, None].float()
            return SimpleNamespace(last_hidden_state=hidden, router_logits=(torch.zeros(3, 4),))

    policy = torch.nn.Module()
    policy.base_model = DecoderStack()
    assert aligned_rows.install(policy)
    input_ids, mask = padded_batch(64)
    outputs = policy.base_model(input_ids=input_ids, attention_mask=mask, use_cache=False)
    assert [m is None for m in policy.base_model.masks] == [True, False]  # tried aligned, then as it came
    assert torch.equal(outputs.last_hidden_state, input_ids[:, :, None].float())

    back = torch.tensor([[1, 2, 0], [0, 1, 2]])
    per_row = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(aligned_rows.rolled_back(per_row, back), torch.tensor([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]]))
    assert torch.equal(aligned_rows.rolled_back(per_row.reshape(6, 1), back), torch.tensor(
        [[1.0], [2.0], [0.0], [3.0], [4.0], [5.0]]))


def test_a_deep_copy_of_an_aligned_policy_runs_its_own_weights():
    import copy

    from grpo_skill.runtime import aligned_rows

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    input_ids, mask = padded_batch(policy.config.vocab_size)
    assert aligned_rows.install(policy)
    twin = copy.deepcopy(policy)
    ours, theirs = aligned_rows.decoder_stack(policy), aligned_rows.decoder_stack(twin)
    with torch.no_grad():
        for param in theirs.parameters():
            param.mul_(0.5)
        given_positions = (mask.cumsum(-1) - 1).clamp(min=0)  # as aligned rows number them; given: left as it came
        hidden = {name: stack(input_ids=input_ids, attention_mask=mask, use_cache=False, **more).last_hidden_state
                  for name, stack, more in (("ours", ours, {}), ("theirs", theirs, {}),
                                            ("theirs unaligned", theirs, {"position_ids": given_positions}))}
    real = mask.bool()
    assert not torch.allclose(hidden["ours"][real], hidden["theirs"][real])
    assert torch.allclose(hidden["theirs"][real], hidden["theirs unaligned"][real], atol=1e-5)
