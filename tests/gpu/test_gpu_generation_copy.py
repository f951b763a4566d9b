"""The generation copy as the fast path runs it on a GPU: its decode step compiled (transformers' CUDA graphs), the
projections fused or not, the decode attention reading the whole cache or a window of it: what it samples is scored
by it as the policy scores it."""

from __future__ import annotations

import pytest


@pytest.mark.gpu
@pytest.mark.parametrize("fuse, window_step, compile_mode",
                         [(False, None, None), (True, None, None), (True, 8, None), (True, 8, "max-autotune")],
                         ids=["apart", "fused projections", "fused projections, decode windows",
                              "fused projections, decode windows, max-autotune"])
def test_the_compiled_copy_scores_its_samples_as_the_policy_does(fuse, window_step, compile_mode):
    """The tiny model in fp32 (no rounding to hide behind), LoRA on every linear layer: the copy samples 24 tokens
    for 4 left-padded prompts with its decode step compiled (with windows: a length every 8 tokens, a CUDA graph
    each; with max-autotune, as a long run compiles it: Triton matmuls where they time faster); the policy, given
    those sequences, computes the same logits at every sampled position."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, GenerationConfig

    from grpo_skill.builtins.presets import build_tiny_model
    from grpo_skill.runtime.generation_copy import GenerationCopy

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    model = AutoModelForCausalLM.from_pretrained(build_tiny_model(), dtype=torch.float32).to(device)
    policy = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear")).eval()
    torch.manual_seed(0)
    copy = None
    for update in range(2):  # the second time after a training-like update: replayed graphs read the refreshed weights
        with torch.no_grad():
            for name, param in policy.named_parameters():
                if "lora_B" in name:
                    param.normal_(0, 0.3)  # in place, as an optimizer step changes them
        if copy is None:  # after the first update, generate refreshes the copy itself, as in training
            copy = GenerationCopy(policy, max_cache_len=64, compile_decode=device == "cuda", fuse=fuse,
                                  window_step=window_step, compile_mode=compile_mode)
            assert len(copy.fused) == (4 * policy.config.num_hidden_layers if fuse else 0)
        ids = torch.randint(10, policy.config.vocab_size - 10, (4, 12), device=device)
        mask = torch.ones_like(ids)
        mask[1, :3] = mask[3, :7] = 0  # left padding, as GRPOTrainer's prompts have it
        config = GenerationConfig(max_new_tokens=24, min_new_tokens=24, do_sample=True, top_k=0, pad_token_id=0)
        for _ in range(2):  # the second generation replays the compiled step
            out = copy.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                                return_dict_in_generate=True, output_logits=True)
        sampled = torch.stack(out.logits, dim=1)
        full_mask = torch.cat([mask, torch.ones_like(out.sequences[:, ids.shape[1]:])], dim=1)
        with torch.no_grad():
            positions = (full_mask.cumsum(-1) - 1).clamp(min=0)  # as generate numbers a left-padded prompt
            scored = policy(input_ids=out.sequences, attention_mask=full_mask,
                            position_ids=positions).logits[:, ids.shape[1] - 1:-1]
        assert torch.allclose(sampled, scored, rtol=1e-3, atol=1e-3), (update, (sampled - scored).abs().max())


@pytest.mark.gpu
def test_with_its_stop_check_deferred_the_copy_generates_what_it_does_without():
    """Greedy, fp32, compiled, with end tokens that stop some sequences early and a length limit for the rest: the
    same tokens with the stop check deferred (one extra step, undone) as with a check at every token."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, GenerationConfig

    from grpo_skill.builtins.presets import build_tiny_model
    from grpo_skill.runtime.generation_copy import GenerationCopy

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    model = AutoModelForCausalLM.from_pretrained(build_tiny_model(), dtype=torch.float32).to(device)
    policy = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear")).eval()
    torch.manual_seed(1)
    ids = torch.randint(10, policy.config.vocab_size - 10, (4, 12), device=device)
    mask = torch.ones_like(ids)
    mask[2, :5] = 0
    copies = {defer: GenerationCopy(policy, max_cache_len=64, compile_decode=device == "cuda", defer_stop_check=defer)
              for defer in (False, True)}
    free = copies[False].generate(input_ids=ids, attention_mask=mask, generation_config=GenerationConfig(
        max_new_tokens=24, do_sample=False, pad_token_id=0))
    ends = [int(free[0, 15]), int(free[1, 20])]  # two sequences end early, the others run to the limit
    config = GenerationConfig(max_new_tokens=24, do_sample=False, pad_token_id=0, eos_token_id=ends)
    outputs = {defer: copy.generate(input_ids=ids, attention_mask=mask, generation_config=config)
               for defer, copy in copies.items()}
    assert torch.equal(outputs[True], outputs[False])
    everything_ends = GenerationConfig(max_new_tokens=24, do_sample=False, pad_token_id=0,
                                       eos_token_id=sorted({int(token) for token in free[:, 13]}))
    stopped = {defer: copy.generate(input_ids=ids, attention_mask=mask, generation_config=everything_ends)
               for defer, copy in copies.items()}
    assert torch.equal(stopped[True], stopped[False]) and stopped[True].shape[1] < ids.shape[1] + 24
