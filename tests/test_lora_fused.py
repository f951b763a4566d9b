"""The fused LoRA forward train.py gives an uncompiled TRL policy computes what peft's computes: the same logits and
gradients in fp32, the same to bf16 rounding under autocast, and peft's own path wherever it would compute otherwise
(adapters disabled for the reference pass, dropout, several adapters, mixed dtypes)."""

import copy

import pytest
from support import tiny_lora_policy

torch = pytest.importorskip("torch")


def run(policy, inputs, autocast: bool = False):
    """Logits and the adapters' gradients of one forward and backward."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = policy(input_ids=inputs).logits
    logits.float().square().mean().backward()
    grads = {name: param.grad.clone() for name, param in policy.named_parameters() if param.grad is not None}
    policy.zero_grad()
    return logits.detach().float(), grads


def fused_calls(monkeypatch):
    """Count the fused function's calls."""
    from grpo_skill.runtime import lora_fused

    calls = []
    function = lora_fused._lora_linear()

    class Counted:
        @staticmethod
        def apply(*args):
            calls.append(args[0].shape)
            return function.apply(*args)

    monkeypatch.setattr(lora_fused, "_lora_linear", lambda: Counted)
    return calls


def test_fp32_logits_and_gradients_are_peft_s(monkeypatch):
    from grpo_skill.runtime import lora_fused

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    fused = copy.deepcopy(policy)
    adapted = sum(1 for module in policy.modules() if hasattr(module, "lora_A") and len(module.lora_A))
    assert lora_fused.fuse(fused) == adapted
    assert lora_fused.fuse(fused) == 0  # a second call leaves the fused layers as they are
    calls = fused_calls(monkeypatch)
    inputs = torch.randint(0, policy.config.vocab_size, (2, 12))
    logits, grads = run(policy, inputs)
    same_logits, same_grads = run(fused, inputs)
    assert len(calls) == adapted
    assert torch.allclose(same_logits, logits, atol=1e-5, rtol=1e-5)
    assert grads.keys() == same_grads.keys() and len(grads) == 2 * adapted
    for name in grads:
        assert torch.allclose(same_grads[name], grads[name], atol=1e-6, rtol=1e-4), name


def test_under_bf16_autocast_no_farther_from_fp32_than_peft_and_fp32_gradients(monkeypatch):
    """bf16 rounds both; the fused sum rounds once where peft rounds three times, so against the same model in fp32
    its logits and gradients are no farther off than peft's own."""
    from grpo_skill.runtime import lora_fused

    policy = tiny_lora_policy(torch.bfloat16, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    fused, exact = copy.deepcopy(policy), copy.deepcopy(policy).float()
    lora_fused.fuse(fused)
    calls = fused_calls(monkeypatch)
    inputs = torch.randint(0, policy.config.vocab_size, (2, 12))
    logits, grads = run(policy, inputs, autocast=True)
    fused_logits, fused_grads = run(fused, inputs, autocast=True)
    exact_logits, exact_grads = run(exact, inputs)
    assert calls

    def off(tensors, name=None):
        got, want = (tensors[name], exact_grads[name]) if name else (tensors, exact_logits)
        return float((got - want).norm() / want.norm())

    assert off(fused_logits) <= 1.1 * off(logits)
    assert not torch.equal(fused_logits, logits)  # the fused path ran: another rounding
    for name in grads:
        assert fused_grads[name].dtype == torch.float32  # the adapters' own dtype, for the optimizer
        assert off(fused_grads, name) <= 1.25 * off(grads, name) + 1e-3, name


def test_the_reference_pass_with_adapters_disabled_is_the_base_model(monkeypatch):
    from grpo_skill.runtime import lora_fused

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    fused = copy.deepcopy(policy)
    lora_fused.fuse(fused)
    calls = fused_calls(monkeypatch)
    inputs = torch.randint(0, policy.config.vocab_size, (1, 9))
    with torch.no_grad(), policy.disable_adapter(), fused.disable_adapter():
        assert torch.equal(fused(input_ids=inputs).logits, policy(input_ids=inputs).logits)
    assert not calls


@pytest.mark.parametrize("case", ["dropout", "two adapters", "bf16 base, no autocast"])
def test_peft_s_own_forward_wherever_it_would_round_or_compute_otherwise(monkeypatch, case):
    from peft import LoraConfig

    from grpo_skill.runtime import lora_fused

    dtype = torch.bfloat16 if case == "bf16 base, no autocast" else torch.float32
    policy = tiny_lora_policy(dtype, 0.1, r=8, lora_alpha=16, lora_dropout=0.1 if case == "dropout" else 0.0,
                              target_modules=["q_proj"])
    if case == "two adapters":
        policy.add_adapter("second", LoraConfig(r=4, target_modules=["q_proj"]))
        policy.base_model.set_adapter(["default", "second"])
    policy.eval()  # dropout off, so that the two forwards can be compared
    fused = copy.deepcopy(policy)
    assert lora_fused.fuse(fused) > 0
    calls = fused_calls(monkeypatch)
    inputs = torch.randint(0, policy.config.vocab_size, (1, 9))
    with torch.no_grad():
        assert torch.equal(fused(input_ids=inputs).logits, policy(input_ids=inputs).logits)
    assert not calls
