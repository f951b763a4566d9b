"""Training on the fast path under bf16 autocast: peft's casts of LoRA inputs to fp32 are skipped, and nothing the
trainer computes changes."""

from types import SimpleNamespace

import pytest
from support import tiny_lora_policy

torch = pytest.importorskip("torch")


def casts_and_results(prepared, inputs):
    """Cast operations in one forward and backward of the prepared (autocast) model, its logits and gradients."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as recorded:
        logits = prepared(input_ids=inputs).logits
        logits.float().square().mean().backward()
    casts = sum(event.count for event in recorded.key_averages() if event.key == "aten::_to_copy")
    model = getattr(prepared, "module", prepared)
    grads = {name: param.grad.clone() for name, param in model.named_parameters() if param.grad is not None}
    model.zero_grad()
    return casts, logits.detach(), grads


def test_under_autocast_the_fast_path_skips_lora_input_casts_and_learns_the_same():
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from grpo_skill.runtime import model as model_loading

    policy = tiny_lora_policy(torch.bfloat16, 0.1, r=8, lora_alpha=16, target_modules="all-linear")  # fp32 adapters
    inputs = torch.randint(0, policy.config.vocab_size, (2, 12))
    AcceleratorState._reset_state(reset_partial_state=True)  # another test file on this worker may have set it
    try:
        accelerator = Accelerator(mixed_precision="bf16", cpu=True)
        trainer = SimpleNamespace(accelerator=accelerator, model=accelerator.prepare_model(policy))
        casts, logits, grads = casts_and_results(trainer.model, inputs)
        with model_loading.lora_inputs_uncast(trainer, fast_generation=True):
            fewer, same_logits, same_grads = casts_and_results(trainer.model, inputs)
        with model_loading.lora_inputs_uncast(trainer, fast_generation=False):  # the policy generates: casts stay
            assert all(layer.cast_input_dtype_enabled for layer in policy.modules() if hasattr(layer, "lora_A"))
        after, _logits, _grads = casts_and_results(trainer.model, inputs)
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)
    adapted = sum(1 for layer in policy.modules() if hasattr(layer, "lora_A") and len(layer.lora_A))
    assert casts - fewer >= 2 * adapted  # the cast to fp32 and autocast's back, forward and backward
    assert after == casts  # restored on leaving
    assert torch.equal(same_logits, logits)
    assert grads.keys() == same_grads.keys() and all(torch.equal(grads[name], same_grads[name]) for name in grads)


@pytest.mark.parametrize("mixed_precision, dropout", [("bf16", 0.1), ("no", 0.0)],
                         ids=["LoRA dropout (it would scale in 16 bits)", "no mixed precision"])
def test_the_casts_stay_where_skipping_them_would_change_a_number(mixed_precision, dropout):
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from grpo_skill.runtime import model as model_loading

    dtype = torch.bfloat16 if mixed_precision == "bf16" else torch.float32
    policy = tiny_lora_policy(dtype, r=8, lora_alpha=16, lora_dropout=dropout, target_modules=["q_proj"])
    AcceleratorState._reset_state(reset_partial_state=True)
    try:
        accelerator = Accelerator(mixed_precision=mixed_precision, cpu=True)
        trainer = SimpleNamespace(accelerator=accelerator, model=accelerator.prepare_model(policy))
        with model_loading.lora_inputs_uncast(trainer, fast_generation=True):
            assert all(layer.cast_input_dtype_enabled for layer in policy.modules() if hasattr(layer, "lora_A"))
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)


def test_checkpointing_of_every_nth_layer_survives_trls_scoring_pass():
    """[grpo] gradient_checkpointing_kwargs = {every_n_layers = 2}: Trainer passes it to transformers, which
    checkpoints every other layer; TRL turns checkpointing off around each scoring pass and back on with the dict as
    it is, which torch's checkpoint refuses at the next training step. With the options kept, the same layers are
    checkpointed again and the step trains."""
    from trl.models.utils import disable_gradient_checkpointing

    from grpo_skill.runtime import model as model_loading

    policy = tiny_lora_policy(torch.float32, 0.1, r=8, lora_alpha=16, target_modules="all-linear")
    options = {"every_n_layers": 2, "use_reentrant": False}
    policy.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False}, every_n_layers=2)
    layers = policy.get_base_model().model.layers
    checkpointed = [layer.gradient_checkpointing for layer in layers]
    assert any(checkpointed) and not all(checkpointed)
    model_loading.keep_checkpointing_options(policy)
    policy.train()
    inputs = torch.randint(0, policy.config.vocab_size, (2, 12))
    with torch.no_grad(), disable_gradient_checkpointing(policy, options):  # as GRPOTrainer scores a generation
        policy(input_ids=inputs)
    assert [layer.gradient_checkpointing for layer in layers] == checkpointed
    policy(input_ids=inputs).logits.float().square().mean().backward()
    assert all(param.grad is not None for name, param in policy.named_parameters() if "lora_" in name)
