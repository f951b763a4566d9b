"""The fast generation path: a copy of the policy samples what the policy itself would, and never changes it."""

import contextlib
import io

import pytest
from support import tiny_lora_policy

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def policy():
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from grpo_skill.builtins.presets import build_tiny_model

    path = build_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    # lm_head too, as the tiny preset trains it: the copy must untie it from the input embeddings
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=targets))
    torch.manual_seed(0)
    for name, param in model.named_parameters():  # a trained adapter: B away from its zero start
        if "lora_B" in name:
            param.data.normal_(0, 0.5)
    return model, tokenizer


def greedy(generate, tokenizer):
    from transformers import GenerationConfig

    prompts = ["<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nhi<|im_end|>\n"]
    tokenizer.padding_side = "left"
    inputs = tokenizer(prompts, return_tensors="pt", padding=True)
    config = GenerationConfig(max_new_tokens=16, do_sample=False, pad_token_id=tokenizer.pad_token_id or 0)
    return generate(**inputs, generation_config=config)


def test_the_copy_generates_what_the_policy_generates_and_leaves_it_unchanged(policy):
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False)
    sampled = greedy(copy.generate, tokenizer)
    assert torch.equal(sampled, greedy(model.generate, tokenizer))
    with model.disable_adapter():  # the adapter matters here: without it the policy answers otherwise
        assert not torch.equal(greedy(model.generate, tokenizer), sampled)
    assert all(torch.equal(param, before[name]) for name, param in model.named_parameters())


def test_the_copy_follows_the_policy_after_a_training_step(policy):
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_A" in name:
                param.add_(torch.randn_like(param) * 0.5)
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))


def test_the_copy_keeps_one_kv_cache_across_generations_and_empties_it_each_time(policy):
    """Compiled decode steps run as CUDA graphs that read the cache where they were recorded: a cache at a new
    address each generation records them all again (and past 128 times torch gives up on CUDA graphs). The second
    generation decodes into the first one's tensors, from an empty cache (what it samples is what the policy
    samples, after a longer generation filled more of it); another batch size gets a cache of its own."""
    from transformers import GenerationConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, window_step=8)
    tokenizer.padding_side = "left"
    two = tokenizer(["<|im_start|>user\nhello<|im_end|>\n", "<|im_start|>user\nhi<|im_end|>\n"],
                    return_tensors="pt", padding=True)
    one = tokenizer(["<|im_start|>user\nhi<|im_end|>\n"], return_tensors="pt")
    caches, said = [], []
    for inputs, new_tokens in ((two, 30), (two, 9), (one, 9), (two, 9)):
        config = GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                  pad_token_id=tokenizer.pad_token_id or 0, return_dict_in_generate=True)
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            out = copy.generate(**inputs, generation_config=config)
        said.append(stderr.getvalue())
        assert torch.equal(out.sequences, model.generate(**inputs, generation_config=GenerationConfig(
            max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
            pad_token_id=tokenizer.pad_token_id or 0)))
        caches.append(out.past_key_values)
    first, second, other_batch, back = caches
    # a switch of batch size is named, once: each one costs a new cache (and, on a GPU, recording the graphs again)
    assert said[:2] == ["", ""] and said[3] == ""
    assert "note: this generation needs a KV cache of 1 x 65 tokens, the last one 2 x 65" in said[2]
    assert second is first
    assert [layer.keys.data_ptr() for layer in second.layers] == [layer.keys.data_ptr() for layer in first.layers]
    written = two["input_ids"].shape[1] + 9  # what the second generation wrote; the first wrote 21 more
    assert not first.layers[0].keys[:, :, written + 1:].any()
    assert other_batch is not first and other_batch.layers[0].keys.shape[0] == 1


def test_decode_windows_reach_the_end_of_a_cache_longer_than_max_cache_len(policy):
    """A generation that needs more than max_cache_len tokens gets a cache as long as it needs (transformers' rule);
    its windows must reach that far, or each later token would attend without its newest keys."""
    from transformers import GenerationConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    inputs = tokenizer(["<|im_start|>user\nhello there<|im_end|>\n"], return_tensors="pt")
    width = inputs["input_ids"].shape[1]
    copy = GenerationCopy(model, max_cache_len=width + 2, compile_decode=False, window_step=8)
    config = GenerationConfig(max_new_tokens=24, min_new_tokens=24, do_sample=False, output_logits=True,
                              return_dict_in_generate=True, pad_token_id=tokenizer.pad_token_id or 0)
    for _generation in range(2):
        out = copy.generate(**inputs, generation_config=config)
        # each step's logits against the policy's own forward over the same tokens: a window short of the cache
        # misses keys (differences of order 0.1), decoding step by step only rounds (1e-5); tokens alone could
        # differ at a near tie of a random-weight model
        with torch.no_grad():
            scored = model(out.sequences).logits[:, width - 1:-1]
        assert torch.allclose(torch.stack(out.logits, dim=1), scored, atol=1e-3)


def test_grouped_decode_attention_equals_transformers_sdpa_on_a_padded_decode_step():
    from types import SimpleNamespace

    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from grpo_skill.runtime.grouped_decode import grouped_decode_attention

    torch.manual_seed(0)
    batch, heads, kv_heads, length, dim = 3, 8, 2, 11, 16
    module = SimpleNamespace(num_key_value_groups=heads // kv_heads, is_causal=True)
    query = torch.randn(batch, heads, 1, dim)
    key, value = torch.randn(batch, kv_heads, length, dim), torch.randn(batch, kv_heads, length, dim)
    mask = torch.ones(batch, 1, 1, length, dtype=torch.bool)
    mask[0, ..., :4] = False  # left padding
    mask[2, ..., 7:] = False  # cache slots not written yet
    expected, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=dim ** -0.5)
    got, _ = grouped_decode_attention(module, query, key, value, mask, scaling=dim ** -0.5)
    assert got.shape == expected.shape == (batch, 1, heads, dim)
    assert torch.allclose(got, expected, atol=1e-6)


def test_a_copy_with_grouped_decode_attention_generates_what_the_policy_generates(policy):
    from grpo_skill.runtime import grouped_decode
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, attn_implementation=grouped_decode.NAME)
    assert copy.model.config._attn_implementation == grouped_decode.NAME
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))


def test_the_lean_decode_loop_generates_what_generate_does(policy):
    """The copy's own loop (runtime/decode_loop.py): greedy tokens equal to transformers' generate, before and after
    the cache is reused, and equal again once an end token stops the sequences early."""
    from transformers import GenerationConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, loop="own")
    expected = greedy(model.generate, tokenizer)
    assert torch.equal(greedy(copy.generate, tokenizer), expected)
    assert torch.equal(greedy(copy.generate, tokenizer), expected)  # the second time through the same cache

    prompt_len = expected.shape[1] - 16
    end = int(expected[0, prompt_len + 2])  # a token the first sequence samples third: it ends there
    inputs = tokenizer(["<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
                        "<|im_start|>user\nhi<|im_end|>\n"], return_tensors="pt", padding=True)
    config = GenerationConfig(max_new_tokens=16, do_sample=False, pad_token_id=0, eos_token_id=end)
    reference = model.generate(**inputs, generation_config=config)
    got = copy.generate(**inputs, generation_config=config)
    width = reference.shape[1]
    assert torch.equal(got[:, :width], reference)
    assert (got[:, width:] == 0).all()  # past generate's stop, only padding
    assert got[0, prompt_len + 3:].eq(0).all()  # the first sequence is padded after its end token


def test_the_lean_loop_samples_from_the_warped_distribution():
    """top-k, top-p and temperature applied by transformers' warpers, then the draw: frequencies follow the warped
    probabilities (a token filtered out is never drawn)."""
    from transformers import GenerationConfig

    from grpo_skill.runtime.decode_loop import DecodeLoop, _warpers

    torch.manual_seed(0)
    logits = torch.tensor([[2.0, 1.5, 1.0, 0.0, -1.0, -3.0]]).repeat(40000, 1)
    config = GenerationConfig(do_sample=True, temperature=0.7, top_k=4, top_p=0.9)
    warped = torch.softmax(_warpers(config)(None, logits[:1].clone()), dim=-1)[0]
    assert warped[4:].sum() == 0 and warped[3] == 0  # top-k cut 4 and 5; top-p cut 3
    drawn = DecodeLoop._sample(logits.clone(), _warpers(config), True, None)
    frequencies = torch.bincount(drawn, minlength=6).float() / len(drawn)
    assert torch.allclose(frequencies, warped, atol=0.01), (frequencies, warped)


def test_settings_the_lean_loop_does_not_apply_go_to_generate(policy):
    from transformers import GenerationConfig

    from grpo_skill.runtime.decode_loop import supports

    assert supports(GenerationConfig(max_new_tokens=8, do_sample=True, temperature=0.9, top_p=0.95, min_p=0.1), {})
    assert not supports(GenerationConfig(max_new_tokens=8, repetition_penalty=1.1), {})
    assert not supports(GenerationConfig(max_new_tokens=8, num_beams=2), {})
    assert not supports(GenerationConfig(max_new_tokens=8), {"logits_processor": []})


def test_a_copy_with_its_adapters_apart_generates_what_the_policy_generates(policy):
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, adapters="apart")
    assert len(copy.adapted) == 7 * model.get_base_model().config.num_hidden_layers + 1  # 7 a layer, and lm_head
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))
    with torch.no_grad():  # a training step: the copy takes the new adapters at its next generation
        for name, param in model.named_parameters():
            if "lora_A" in name:
                param.add_(torch.randn_like(param) * 0.5)
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))


def bf16_policy(lora_alpha: int, adapter_scale: float):
    """The tiny model in bf16 with a LoRA r8 (fp32, peft's default) on every linear layer, B drawn at this scale."""
    return tiny_lora_policy(torch.bfloat16, adapter_scale, r=8, lora_alpha=lora_alpha, target_modules="all-linear")


def test_in_bf16_a_small_adapter_update_rounds_away_when_merged_and_stays_when_apart():
    """What benchmarks/copy_fidelity.py measures on real weights, on the tiny model: an adapter delta well under
    half a bf16 step of the base weights moves the policy's outputs; merged into bf16 weights it is gone."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model = bf16_policy(lora_alpha=8, adapter_scale=1e-4)
    inputs = torch.randint(0, model.config.vocab_size, (4, 24))
    with torch.no_grad():
        policy_logits = model(input_ids=inputs).logits.float()
        with model.disable_adapter():
            moved = (policy_logits - model(input_ids=inputs).logits.float()).norm()
        errors = {}
        for adapters in ("merged", "apart"):
            copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, adapters=adapters,
                                  dtype=torch.bfloat16, attn_implementation="sdpa")  # the policy's attention
            errors[adapters] = (copy.model(input_ids=inputs).logits.float() - policy_logits).norm() / moved
    assert errors["merged"] > 0.5, errors  # most of the update lost
    assert errors["apart"] < 0.1, errors


def test_under_bf16_autocast_the_copy_computes_the_adapters_as_the_trainer_does():
    """A bf16 run's trainer scores completions under accelerate's bf16 autocast, where a LoRA's matmuls run in bf16:
    the copy that install() makes for it computes exactly that; adapters in fp32 (peft without autocast) do not."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from grpo_skill.runtime.generation_copy import GenerationCopy, autocast_dtype

    model = bf16_policy(lora_alpha=16, adapter_scale=1e-2)
    AcceleratorState._reset_state(reset_partial_state=True)  # another test file on this worker may have set it
    try:
        accelerator = Accelerator(mixed_precision="bf16", cpu=True)
        assert autocast_dtype(accelerator) == torch.bfloat16
        trainer = accelerator.prepare_model(model)  # what the Trainer scores with
        inputs = torch.randint(0, model.config.vocab_size, (4, 24))
        with torch.no_grad():
            scored = trainer(input_ids=inputs).logits
            copies = {dtype: GenerationCopy(model, max_cache_len=64, compile_decode=False, adapters="apart",
                                            dtype=torch.bfloat16, attn_implementation="sdpa", adapter_dtype=dtype)
                      for dtype in (torch.bfloat16, None)}
            logits = {dtype: copy.model(input_ids=inputs).logits.float() for dtype, copy in copies.items()}
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)
    assert torch.equal(logits[torch.bfloat16], scored)
    assert not torch.equal(logits[None], scored)
    assert copies[None].adapted[0][0].down.dtype == torch.float32  # None: the adapters' own dtype


def test_without_mixed_precision_the_copy_keeps_the_adapters_own_dtype():
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from grpo_skill.runtime.generation_copy import autocast_dtype

    AcceleratorState._reset_state(reset_partial_state=True)
    try:
        assert autocast_dtype(Accelerator(mixed_precision="no", cpu=True)) is None
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)


def test_with_a_cache_step_each_generation_gets_a_cache_of_its_own_length(policy):
    """A static cache as long as the generation needs, in steps (few lengths, few compiled graphs), never longer
    than max_cache_len; it samples what the policy samples."""
    from transformers import GenerationConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=96, compile_decode=False, cache_step=32)
    inputs = tokenizer(["<|im_start|>user\nhello<|im_end|>\n"], return_tensors="pt")
    width = inputs["input_ids"].shape[1]
    lengths = {}
    for new_tokens in (4, 40, 200):
        config = GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                  pad_token_id=tokenizer.pad_token_id or 0)
        out = copy.generate(**inputs, generation_config=config, return_dict_in_generate=True)
        lengths[new_tokens] = out.past_key_values.max_cache_len
        if new_tokens < 200:
            assert torch.equal(out.sequences, model.generate(**inputs, generation_config=config))
    assert lengths[4] == -(-(width + 4) // 32) * 32 < 96
    assert lengths[40] == -(-(width + 40) // 32) * 32 > lengths[4]
    assert lengths[200] >= width + 200 - 1  # past max_cache_len: as long as the generation needs, as before
    assert GenerationCopy(model, max_cache_len=96, compile_decode=False).cache_length(width, 4) == 96


def test_the_copy_is_the_policys_frozen_weights_where_it_holds_them_in_its_dtype(policy):
    """A 16-bit base costs no second copy of its weights: the copy decodes with the policy's own frozen tensors, and
    allocates only what it computes itself (adapters, merged or trained weights, another dtype)."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False)
    q_proj = model.get_base_model().model.layers[0].self_attn.q_proj
    assert copy.model.model.layers[0].self_attn.q_proj.linear.weight.data_ptr() == q_proj.base_layer.weight.data_ptr()
    copy_bytes = sum(p.numel() * p.element_size() for p in copy.model.parameters())
    assert copy.shared_bytes == copy_bytes  # the tiny policy trains only adapters: every weight is shared
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))

    merged = GenerationCopy(model, max_cache_len=64, compile_decode=False, adapters="merged")
    assert merged.model.model.layers[0].self_attn.q_proj.weight.data_ptr() != q_proj.base_layer.weight.data_ptr()
    assert merged.model.model.norm.weight.data_ptr() == model.get_base_model().model.norm.weight.data_ptr()

    other_dtype = GenerationCopy(model, max_cache_len=64, compile_decode=False, dtype=torch.bfloat16)
    assert other_dtype.shared_bytes == 0


def test_the_copy_computes_in_the_policys_own_dtype():
    """fp16 on a GPU without bf16, bf16 where the run holds bf16 weights: the copy's dtype is the policy's, so it
    shares the policy's frozen weights instead of holding them again in another dtype."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from grpo_skill.builtins.presets import build_tiny_model
    from grpo_skill.runtime.generation_copy import GenerationCopy

    for dtype in (torch.bfloat16, torch.float16):
        model = AutoModelForCausalLM.from_pretrained(build_tiny_model(), dtype=dtype)
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
        copy = GenerationCopy(model, max_cache_len=64, compile_decode=False)
        assert {param.dtype for param in copy.model.parameters()} == {dtype}
        assert copy.shared_bytes == sum(p.numel() * p.element_size() for p in copy.model.parameters())


def test_a_copy_with_fused_projections_generates_what_the_policy_generates(policy):
    """q/k/v and gate/up in one matmul each, their adapters' A stacked under the base weights and B block-diagonal:
    the same logits up to the order a matmul sums in, the same tokens, and the new adapters after a training step."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    layers = model.get_base_model().config.num_hidden_layers
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, fuse=True)
    assert len(copy.fused) == 4 * layers  # q/k/v, o, gate/up and down
    assert [pair[1] for pair in copy.adapted] == [model.get_base_model().lm_head]  # not in a decoder layer
    assert not hasattr(copy.model.model.layers[0].self_attn, "q_proj")
    inputs = torch.randint(0, model.config.vocab_size, (3, 20))
    with torch.no_grad():
        assert torch.allclose(copy.model(input_ids=inputs).logits, model(input_ids=inputs).logits, rtol=1e-4, atol=1e-3)
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.add_(torch.randn_like(param) * 0.5)
    assert torch.equal(greedy(copy.generate, tokenizer), greedy(model.generate, tokenizer))
    with torch.no_grad(), model.disable_adapter():  # disabled adapters: the fused ones add nothing either
        expected = model(input_ids=inputs).logits
        copy.refresh()
        assert torch.allclose(copy.model(input_ids=inputs).logits, expected, rtol=1e-4, atol=1e-3)


def test_fused_projections_with_some_layers_adapted_and_scales_of_their_own():
    """LoRA on q_proj and v_proj only, each with its own alpha: k_proj's base weight joins the matmul without an
    adapter, each B block carries its own scale, and gate/up fuse without adapters; the copy holds the fused weights
    itself (they are not the policy's tensors)."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model = tiny_lora_policy(torch.float32, 0.5, seed=1, r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                             alpha_pattern={"v_proj": 32})
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, fuse=True)
    qkv = copy.model.model.layers[0].self_attn.qkv_proj
    assert qkv.ranks == [4, 0, 4] and qkv.scale == 1.0  # two scales (2 and 8): each block times its own
    assert copy.model.model.layers[0].mlp.gate_up_proj.up.shape[1] == 0
    assert len(copy.fused) == 2 * model.config.num_hidden_layers  # o_proj and down_proj: no adapter to fold
    inputs = torch.randint(0, model.config.vocab_size, (2, 16))
    with torch.no_grad():
        assert torch.allclose(copy.model(input_ids=inputs).logits, model(input_ids=inputs).logits, rtol=1e-4, atol=1e-3)
    attention = model.get_base_model().model.layers[0].self_attn
    rows = qkv.weight.shape[1] * qkv.weight.element_size()
    for offset, projection in zip((0, 64, 96), ("q_proj", "k_proj", "v_proj")):  # the tiny model's q, k, v widths
        layer = getattr(attention, projection)
        weight = getattr(layer, "base_layer", layer).weight  # the policy's frozen weight lives in the fused one
        assert weight.data_ptr() == qkv.weight.data_ptr() + offset * rows, projection


def test_a_fused_copy_holds_a_16_bit_base_once_and_training_goes_on_around_its_refresh():
    """The policy's frozen weights become views of the fused ones (no second copy); a forward saved for a backward
    stays valid across a refresh that writes the adapters' rows, and the policy computes what it did before."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model = tiny_lora_policy(torch.bfloat16, 0.5, seed=4, r=4, lora_alpha=8, target_modules="all-linear")
    inputs = torch.randint(0, model.config.vocab_size, (2, 16))
    with torch.no_grad():
        before = model(input_ids=inputs).logits
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, fuse=True,  # as under bf16 autocast
                          adapter_dtype=torch.bfloat16)
    assert len(copy.fused) == 4 * model.config.num_hidden_layers
    held = sum(param.numel() * param.element_size() for param in copy.model.parameters())
    a_rows = sum(sum(fused.ranks) * fused.weight.shape[1] * fused.weight.element_size() for fused in copy.fused)
    assert held - copy.shared_bytes == a_rows  # only the adapters' A rows are the copy's own
    logits = model(input_ids=inputs).logits
    copy.refresh()  # between a forward and its backward, as a generation would come
    logits.square().mean().backward()
    assert torch.equal(logits.detach(), before)
    assert all(param.grad is not None for name, param in model.named_parameters() if "lora_A" in name)


def test_fusing_needs_the_adapters_apart(policy):
    from grpo_skill.runtime.generation_copy import GenerationCopy

    with pytest.raises(ValueError, match="apart"):
        GenerationCopy(policy[0], max_cache_len=64, compile_decode=False, adapters="merged", fuse=True)


def test_a_decode_window_reads_the_written_part_of_the_cache_and_changes_nothing(policy):
    """With window_step, each decode step's attention reads the static cache up to the tokens so far (rounded up):
    the same tokens as the policy's, and the windows it met are the rounded lengths, shorter than the cache."""
    from grpo_skill.runtime import grouped_decode
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, attn_implementation=grouped_decode.NAME,
                          window_step=8)
    seen = []
    attention = grouped_decode.grouped_decode_attention

    def recording(module, query, key, value, attention_mask, **kwargs):
        if query.shape[2] == 1:
            seen.append(kwargs.get("decode_window"))
        return attention(module, query, key, value, attention_mask, **kwargs)

    from transformers import AttentionInterface

    AttentionInterface.register(grouped_decode.NAME, recording)
    try:
        sampled = greedy(copy.generate, tokenizer)
    finally:
        grouped_decode.register()
    assert torch.equal(sampled, greedy(model.generate, tokenizer))
    layers = model.get_base_model().config.num_hidden_layers
    steps = len(seen) // layers
    assert steps >= 8
    width = sampled.shape[1] - steps - 1  # the prompt's: prefill gave the first token, each decode step one more
    expected = [-(-length // 8) * 8 for length in range(width + 1, width + 1 + steps)]
    assert seen == [window for window in expected for _layer in range(layers)]
    assert max(seen) < 64


def test_a_decode_window_needs_the_grouped_decode_attention_and_generate(policy):
    from grpo_skill.runtime.generation_copy import GenerationCopy

    with pytest.raises(ValueError, match="grpo_skill_grouped_decode"):
        GenerationCopy(policy[0], max_cache_len=64, compile_decode=False, attn_implementation="sdpa", window_step=8)
    with pytest.raises(ValueError, match="loop='transformers'"):
        GenerationCopy(policy[0], max_cache_len=64, compile_decode=False, loop="own", window_step=8)


def test_the_grouped_decode_attention_reads_only_the_window():
    """Positions past the window are left out, not only masked: given a mask that leaves them visible, the windowed
    attention equals the full one over the first positions alone."""
    from types import SimpleNamespace

    from grpo_skill.runtime.grouped_decode import grouped_decode_attention

    torch.manual_seed(0)
    batch, heads, kv_heads, length, dim, window = 2, 8, 2, 24, 16, 16
    module = SimpleNamespace(num_key_value_groups=heads // kv_heads, is_causal=True)
    query = torch.randn(batch, heads, 1, dim)
    key, value = torch.randn(batch, kv_heads, length, dim), torch.randn(batch, kv_heads, length, dim)
    mask = torch.ones(batch, 1, 1, length, dtype=torch.bool)
    mask[0, ..., :3] = False  # left padding
    windowed, _ = grouped_decode_attention(module, query, key, value, mask, scaling=dim ** -0.5, decode_window=window)
    first, _ = grouped_decode_attention(module, query, key[:, :, :window], value[:, :, :window], mask[..., :window],
                                        scaling=dim ** -0.5)
    everything, _ = grouped_decode_attention(module, query, key, value, mask, scaling=dim ** -0.5)
    assert torch.allclose(windowed, first, atol=1e-6)
    assert not torch.allclose(windowed, everything, atol=1e-3)


def test_a_generation_from_embeddings_gets_no_window(policy):
    """From ``inputs_embeds`` the prompt is only in the cache (input_ids holds the new tokens): no window is passed,
    and the copy generates what it does without one."""
    from transformers import GenerationConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, _tokenizer = policy
    ids = torch.randint(0, model.config.vocab_size, (2, 20))
    embeds = model.get_input_embeddings()(ids).detach()
    config = GenerationConfig(max_new_tokens=8, do_sample=False, pad_token_id=0)
    outputs = [GenerationCopy(model, max_cache_len=64, compile_decode=False, window_step=step).generate(
        inputs_embeds=embeds, attention_mask=torch.ones_like(ids), generation_config=config) for step in (None, 8)]
    assert torch.equal(*outputs)


def test_a_fused_copy_keeps_the_adapters_when_the_policy_merges_them():
    """Merged into the policy's weights, in place (peft's default: into the fused rows the policy's weight now is)
    or into a new tensor (safe_merge: the rows keep the base), the adapters count once in the copy; unmerged, the
    same; a layer merged when the copy is made is not fused."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model = tiny_lora_policy(torch.float32, 0.5, seed=2, r=4, lora_alpha=12, target_modules="all-linear")
    inputs = torch.randint(0, model.config.vocab_size, (2, 16))
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, fuse=True)
    with torch.no_grad():
        expected = model(input_ids=inputs).logits
        for safe_merge in (False, True):
            model.merge_adapter(safe_merge=safe_merge)
            copy.refresh()
            assert torch.allclose(copy.model(input_ids=inputs).logits, expected, rtol=1e-4, atol=1e-3), safe_merge
            model.unmerge_adapter()
            copy.refresh()
            assert torch.allclose(copy.model(input_ids=inputs).logits, expected, rtol=1e-4, atol=1e-3), safe_merge
        model.merge_adapter()
        built_merged = GenerationCopy(model, max_cache_len=64, compile_decode=False, fuse=True)
        assert built_merged.fused == []
        model.unmerge_adapter()
        built_merged.refresh()
        assert torch.allclose(built_merged.model(input_ids=inputs).logits, expected, rtol=1e-4, atol=1e-3)


def test_in_bf16_the_fused_copy_computes_what_the_unfused_one_does():
    """Under a bf16 run's autocast the adapters are bf16, as the weights: they fuse, and the logits stay within bf16
    rounding of the unfused copy's, far closer than the adapters move them (a scale of 3, kept after B as peft
    applies it)."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model = bf16_policy(lora_alpha=24, adapter_scale=1e-2)
    inputs = torch.randint(0, model.config.vocab_size, (4, 24))
    with torch.no_grad():
        logits = {}
        for fuse in (False, True):
            copy = GenerationCopy(model, max_cache_len=64, compile_decode=False, adapters="apart", fuse=fuse,
                                  attn_implementation="sdpa", adapter_dtype=torch.bfloat16)
            logits[fuse] = copy.model(input_ids=inputs).logits.float()
        assert copy.fused and copy.fused[0].scale == 3.0
        with model.disable_adapter():
            moved = (model(input_ids=inputs).logits.float() - logits[False]).abs().mean()
    difference = (logits[True] - logits[False]).abs().mean()
    assert difference < 0.05 * moved, (difference, moved)


def test_a_copy_of_the_base_weights_keeps_the_adapters_when_the_policy_merges_them():
    """A copy that holds its base weights itself (here in bf16, from an fp32 policy; a 4-bit base's too) copied them
    before the merge: the adapters still count there. One that shares the policy's tensors sees the merge in them."""
    from grpo_skill.runtime.generation_copy import GenerationCopy

    model = tiny_lora_policy(torch.float32, 0.5, seed=3, r=4, lora_alpha=8, target_modules=["q_proj", "down_proj"])
    inputs = torch.randint(0, model.config.vocab_size, (2, 16))
    copies = {dtype: GenerationCopy(model, max_cache_len=64, compile_decode=False, dtype=dtype, adapters="apart",
                                    attn_implementation="sdpa") for dtype in (torch.float32, torch.bfloat16)}
    with torch.no_grad():
        before = {dtype: copy.model(input_ids=inputs).logits.float() for dtype, copy in copies.items()}
        model.merge_adapter()
        for dtype, copy in copies.items():
            copy.refresh()
            assert torch.allclose(copy.model(input_ids=inputs).logits.float(), before[dtype], atol=1e-4), dtype
        model.unmerge_adapter()


def test_deferred_stop_checks_open_transformers_cuda_gate_only_while_they_last():
    """generate's deferred stop check (no host wait per token) is transformers' own, gated to MPS; the copy opens
    the gate for CUDA around its own generate and closes it after, even when generate fails."""
    from transformers.generation import utils

    from grpo_skill.runtime.generation_copy import deferred_stop_checks

    gate = utils.DeferredStopCheck.is_supported
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert not gate(cuda, None, False, is_assistant=False)
    with pytest.raises(KeyError), deferred_stop_checks():
        assert utils.DeferredStopCheck.is_supported(cuda, None, False, is_assistant=False)
        assert not utils.DeferredStopCheck.is_supported(cuda, None, False, is_assistant=True)
        assert not utils.DeferredStopCheck.is_supported(cpu, None, False, is_assistant=False)  # no events on a CPU
        raise KeyError
    assert not utils.DeferredStopCheck.is_supported(cuda, None, False, is_assistant=False)


def test_the_copy_reports_how_fast_it_sampled_the_first_generation_apart(policy):
    """The run's summary says a generation's seconds and its seconds per new token position, leaving out the first
    generation (on a GPU it compiles the decode step): what a user reads to see where a generation-bound run goes."""
    from grpo_skill.runtime.generation_copy import GenerationCopy
    from transformers import GenerationConfig

    model, tokenizer = policy
    copy = GenerationCopy(model, max_cache_len=64, compile_decode=False)
    assert copy.speed() == {}
    inputs = tokenizer(["<|im_start|>user\nhello<|im_end|>\n"] * 3, return_tensors="pt")
    for new_tokens in (4, 12, 20):  # every sequence runs to the length asked for (no end token allowed earlier)
        config = GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                  pad_token_id=tokenizer.pad_token_id or 0)
        copy.generate(**inputs, generation_config=config)
    assert [(steps, sequences) for _seconds, steps, sequences in copy.timings] == [(4, 3), (12, 3), (20, 3)]
    speed = copy.speed()
    later = copy.timings[1:]
    assert speed["generations"] == 3 and speed["sequences_per_generation"] == 3
    assert speed["first_generation_s"] == round(copy.timings[0][0], 2)
    assert speed["generation_s"] == round((later[0][0] + later[1][0]) / 2, 3)
    assert speed["ms_per_step"] == round(1000 * (later[0][0] + later[1][0]) / 32, 2) and speed["ms_per_step"] > 0


def test_the_copy_compiles_its_decode_step_in_the_mode_it_was_given_and_keeps_the_rest(policy):
    """train.py gives the copy torch.compile's mode for its decode step (max-autotune for a long run): generate is
    asked for it, with the rest of a compile config the caller passed kept; without a mode, transformers' own."""
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import CompileConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    inputs = tokenizer(["<|im_start|>user\nhi<|im_end|>\n"], return_tensors="pt")
    asked = []
    for mode in ("max-autotune", None):
        copy = GenerationCopy(model, max_cache_len=48, compile_decode=True, compile_mode=mode)
        generate = copy.model.generate
        copy.model.generate = lambda *args, generation_config, **kwargs: (
            asked.append(generation_config), generate(*args, generation_config=generation_config, **kwargs))[1]
        config = GenerationConfig(max_new_tokens=2, do_sample=False, pad_token_id=tokenizer.pad_token_id or 0,
                                  compile_config=CompileConfig(backend="aot_eager", dynamic=False))
        copy.generate(**inputs, generation_config=config)
        copy.generate(**inputs, generation_config=GenerationConfig(max_new_tokens=2, do_sample=False,
                                                                   pad_token_id=tokenizer.pad_token_id or 0))
    autotuned, default_autotuned, kept, default = asked
    assert (autotuned.compile_config.mode, autotuned.compile_config.backend) == ("max-autotune", "aot_eager")
    assert autotuned.compile_config.dynamic is False and not autotuned.disable_compile
    assert default_autotuned.compile_config.mode == "max-autotune"
    assert kept.compile_config.mode == CompileConfig().mode and kept.compile_config.backend == "aot_eager"
    assert default.compile_config is None  # transformers' default config (reduce-overhead)


def test_decode_windows_compile_once_even_when_a_generation_fills_the_cache(policy):
    """The window is a dynamic integer of the compiled decode step from its first compile: one graph for every
    length (left to dynamo: one for the first length, then a second one). A window as long as the cache would take
    one more, late in a run's first long generation; the copy's cache is one position longer than any window
    reaches, so the generation that fills it compiles nothing new (and samples what the policy would: checked on
    the last generation, greedy)."""
    from torch._dynamo.utils import counters
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import CompileConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy

    model, tokenizer = policy
    torch._dynamo.reset()
    copy = GenerationCopy(model, max_cache_len=48, compile_decode=True, window_step=8)
    said = []
    compile_config = CompileConfig(backend="aot_eager")
    compile_config._compile_all_devices = True  # transformers compiles on a CPU only when asked to
    inputs = tokenizer(["<|im_start|>user\nhi<|im_end|>\n"], return_tensors="pt")
    room = 48 - inputs["input_ids"].shape[1]
    before = counters["stats"]["unique_graphs"]
    for new_tokens in (room // 2, room - 6, room):  # the last fills the cache to its end
        config = GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                  pad_token_id=tokenizer.pad_token_id or 0, compile_config=compile_config)
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            sampled = copy.generate(**inputs, generation_config=config)
        said.append(stderr.getvalue())
    # the wait of the first generation is named before it starts, once
    assert "the first one compiles the decode step" in said[0] and said[1:] == ["", ""]
    assert sampled.shape[1] == 48
    assert counters["stats"]["unique_graphs"] - before == 1
    assert torch.equal(sampled, model.generate(**inputs, generation_config=GenerationConfig(
        max_new_tokens=room, min_new_tokens=room, do_sample=False, pad_token_id=tokenizer.pad_token_id or 0)))
