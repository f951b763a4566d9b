"""Where a decode step goes: the generation paths a GRPO run can sample with, on Qwen3-4B's shape, against the floor.

    python benchmarks/decode_profile.py --out /tmp/decode        # on a CUDA GPU; writes decode.json and decode.md

Each path samples ``--new-tokens`` tokens for a batch of left-padded prompts, as GRPOTrainer's generation does. A
decode step's time is taken from two generations of different lengths (their difference over the extra tokens), so
the prefill and the set-up are left out. The floor is the bytes one decode step must read (every weight once, and
the KV cache at the generation's mean length) over the copy bandwidth measured in the same run. A profile of the
fast path (``torch.profiler``) splits the step into kernel time by kind and time the GPU sits idle (launches,
Python, host syncs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import kernel_profile

PROMPT_TOKENS = 96
QWEN3_STOP_IDS = [151645, 151643]  # <|im_end|>, <|endoftext|>: what GRPOTrainer stops on for Qwen3
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def measure_bandwidth(torch) -> float:
    """Device copy bandwidth in bytes/s (read + write), the best of a few 2 GiB copies."""
    source = torch.empty(2**30, dtype=torch.bfloat16, device="cuda")
    target = torch.empty_like(source)
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        started = time.perf_counter()
        target.copy_(source)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    del source, target
    return 2 * 2**31 / best


def floor_ms(config, batch: int, new_tokens: int, bandwidth: float, weight_bytes: int) -> float:
    kv_per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 2
    mean_context = PROMPT_TOKENS + new_tokens / 2
    return 1000 * (weight_bytes + kv_per_token * mean_context * batch) / bandwidth


def prompts(torch, batch: int, vocab: int):
    """Left-padded prompts of 64..96 tokens, as a GRPO generation batch has."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, vocab - 1000, (batch, PROMPT_TOKENS), generator=generator)
    mask = torch.ones_like(ids)
    for row in range(batch):
        pad = int(torch.randint(0, 32, (1,), generator=generator))
        mask[row, :pad] = 0
        ids[row, :pad] = 0
    return {"input_ids": ids.cuda(), "attention_mask": mask.cuda()}


def sample_length(config, tokens: int) -> None:
    """Ask ``config`` for ``tokens`` new tokens: exactly that many without stop tokens; with them, at most (a
    random-weight model almost never samples one, and forcing the length would mask them)."""
    config.max_new_tokens = tokens
    config.min_new_tokens = tokens if config.eos_token_id is None else None


def timed_generate(torch, generate, inputs, config, tokens: int) -> float:
    sample_length(config, tokens)
    torch.cuda.synchronize()
    started = time.perf_counter()
    generate(**inputs, generation_config=config)
    torch.cuda.synchronize()
    return time.perf_counter() - started


def decode_step_ms(torch, generate, inputs, config, new_tokens: int) -> float:
    short = max(8, new_tokens // 8)
    timed_generate(torch, generate, inputs, config, new_tokens)  # warm-up: compiles, sizes the cache
    long_s = min(timed_generate(torch, generate, inputs, config, new_tokens) for _ in range(2))
    short_s = min(timed_generate(torch, generate, inputs, config, short) for _ in range(2))
    return 1000 * (long_s - short_s) / (new_tokens - short)


def profile_step(torch, generate, inputs, config, tokens: int) -> dict:
    """Kernel time per decode step by kind, and the GPU's idle share, over one generation of ``tokens``."""
    from torch.profiler import ProfilerActivity, profile

    sample_length(config, tokens)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        started = time.perf_counter()
        generate(**inputs, generation_config=config)
        torch.cuda.synchronize()
        wall = time.perf_counter() - started
    summary = kernel_profile.kernel_summary(prof, per=tokens)
    return {
        "wall_ms_per_token": 1000 * wall / tokens,
        "kernel_ms_per_token": summary["kernel_ms"],
        "kinds_ms_per_token": summary["kinds_ms"],
        "top_kernels_ms_per_token": summary["top_kernels_ms"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/grpo-skill-bench"))
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--paths", nargs="+", default=list(PATHS))
    parser.add_argument("--no-profile", action="store_true",
                        help="time the decode step only (the profiler's pass costs about a minute a row)")
    args = parser.parse_args(argv)

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, GenerationConfig

    from grpo_skill import modelbuild
    from grpo_skill.runtime.generation_copy import GenerationCopy

    args.out.mkdir(parents=True, exist_ok=True)
    model_dir = modelbuild.build("qwen3-4b", opens_think=False, dest=args.work / "model-qwen3-4b")
    bandwidth = measure_bandwidth(torch)

    def policy(four_bit: bool):
        quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                          bnb_4bit_compute_dtype=torch.bfloat16) if four_bit else None
        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16, device_map="cuda",
                                                    quantization_config=quantization)
        model = get_peft_model(base, LoraConfig(r=16, lora_alpha=16, target_modules=LORA_TARGETS))
        for name, param in model.named_parameters():  # a trained adapter: B away from its zero start
            if "lora_B" in name:
                param.data.normal_(0, 1e-3)
        return model.eval()

    rows, profiles = [], {}
    results_path = args.out / "decode.json"
    bf16_policy = policy(four_bit=False)
    config_model = bf16_policy.get_base_model().config
    weight_bytes = sum(p.numel() * 2 for n, p in bf16_policy.get_base_model().named_parameters() if "lora" not in n)
    weight_bytes -= config_model.vocab_size * config_model.hidden_size * 2  # tied: the embedding rows read are few
    copies, sources = {}, {False: bf16_policy}
    for path in args.paths:
        spec = PATHS[path]
        four_bit = bool(spec.get("four_bit"))
        if four_bit not in sources:
            sources[four_bit] = policy(four_bit=True)
        source = sources[four_bit]
        for batch in args.batches:
            inputs = prompts(torch, batch, config_model.vocab_size)
            config = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, pad_token_id=0,
                                      eos_token_id=QWEN3_STOP_IDS if spec.get("stops") else None)
            if spec["kind"] == "copy":
                key = path
                if key not in copies:
                    started = time.perf_counter()
                    copies[key] = GenerationCopy(source,
                                                 max_cache_len=spec.get("cache_len", PROMPT_TOKENS + args.new_tokens),
                                                 cache_step=spec.get("cache_step"),
                                                 compile_decode=True, attn_implementation=spec.get("attn", "sdpa"),
                                                 loop=spec.get("loop", "transformers"),
                                                 adapters=spec.get("adapters", "merged"),
                                                 adapter_dtype=getattr(torch, spec.get("adapter_dtype", ""), None),
                                                 fuse=spec.get("fuse", False), window_step=spec.get("window_step"),
                                                 defer_stop_check=spec.get("defer", False),
                                                 compile_mode=spec.get("compile_mode"))
                    torch.cuda.synchronize()
                    build_s = time.perf_counter() - started
                copy = copies[key]
                refresh_ms = _refresh_ms(torch, copy)
                generate = copy.generate
            else:
                build_s, refresh_ms = None, None
                config.cache_implementation = spec.get("cache")
                config.disable_compile = not spec.get("compile", False)
                if spec.get("cache") == "static":
                    config.max_cache_len = PROMPT_TOKENS + args.new_tokens
                generate = source.generate
            try:
                step = decode_step_ms(torch, generate, inputs, config, args.new_tokens) if spec.get(
                    "decode", True) else None
                error = None
            except Exception as exc:  # a path that fails here is a row that says why
                step, error = None, f"{type(exc).__name__}: {str(exc)[:300]}"
            floor = floor_ms(config_model, batch, args.new_tokens, bandwidth, weight_bytes)
            row = {"path": path, "batch": batch, "new_tokens": args.new_tokens, "decode_ms": step, "floor_ms": floor,
                   "x_floor": step / floor if step else None, "refresh_ms": refresh_ms,
                   "copy_build_s": build_s, "error": error, "tells": spec["tells"],
                   "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            if spec.get("profile") and step and not args.no_profile:
                profiles[f"{path} @ {batch}"] = profile_step(torch, generate, inputs, config, 64)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            results = {"bandwidth_GBps": bandwidth / 1e9, "weight_bytes": weight_bytes, "new_tokens": args.new_tokens,
                       "prompt_tokens": PROMPT_TOKENS, "device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "rows": rows, "profiles": profiles}
            results_path.write_text(json.dumps(results, indent=2))
    (args.out / "decode.md").write_text(render(json.loads(results_path.read_text())))
    print(render(json.loads(results_path.read_text())))
    return 0


def _refresh_ms(torch, copy) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    copy.refresh()
    torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - started)


# The fast path's decode step as train.py takes it (a run short enough for the default compile mode), and as a long
# run takes it (max-autotune, planning.decode_compile_mode): the report holds these against issue 21's 3x the floor.
DEFAULT_PATH = ("copy with adapters apart in bf16, grouped decode, fused projections, cache of 1024, windows of 128, "
                "stop tokens, stop check deferred")
LONG_RUN_PATH = f"{DEFAULT_PATH}, max-autotune"

# the fast path's copy as train.py makes it for a bf16 run: LoRA beside each layer in bf16, grouped decode attention
APART_BF16 = {"kind": "copy", "attn": "grpo_skill_grouped_decode", "adapters": "apart", "adapter_dtype": "bfloat16"}

PATHS = {
    "policy, dynamic cache": {"kind": "policy", "cache": None, "tells": "TRL's default generation: the policy with "
                              "its LoRA unmerged, step by step in eager mode"},
    "policy, static compiled": {"kind": "policy", "cache": "static", "compile": True, "tells": "[model] "
                                "compile_decoding: the policy, unmerged LoRA, a compiled static-cache step"},
    "merged copy, sdpa": {"kind": "copy", "attn": "sdpa", "profile": True, "tells": "the generation copy: LoRA "
                          "merged into bf16 weights, static cache, compiled, SDPA attention"},
    "merged copy, grouped decode": {"kind": "copy", "attn": "grpo_skill_grouped_decode", "profile": True,
                                    "tells": "the same, its decode attention reading grouped K/V heads in place "
                                    "(runtime/grouped_decode.py)"},
    "merged copy, grouped decode, lean loop": {"kind": "copy", "attn": "grpo_skill_grouped_decode", "loop": "own",
                                               "profile": True, "tells": "the same, sampled by runtime/decode_loop.py "
                                               "instead of transformers' generate (no per-token bookkeeping)"},
    "copy with adapters apart, grouped decode": {"kind": "copy", "attn": "grpo_skill_grouped_decode",
                                                 "adapters": "apart", "profile": True,
                                                 "tells": "the copy with each LoRA beside its layer (fp32, as peft "
                                                 "computes it without autocast), not merged"},
    "copy with adapters apart, grouped decode, lean loop": {"kind": "copy", "attn": "grpo_skill_grouped_decode",
                                                            "adapters": "apart", "loop": "own", "profile": True,
                                                            "tells": "the same, sampled by runtime/decode_loop.py"},
    "copy with adapters apart, grouped decode, stop tokens": {
        "kind": "copy", "attn": "grpo_skill_grouped_decode", "adapters": "apart", "stops": True,
        "tells": "the same with the stop tokens GRPOTrainer passes: generate then checks every token whether all "
                 "sequences stopped (a sync with the GPU); training measured ~14 ms a token against this table's ~11"},
    "copy with adapters apart in bf16, grouped decode": {
        **APART_BF16,
        "profile": True, "tells": "the copy with each LoRA beside its layer in bf16, as the trainer computes it under "
                                  "bf16 autocast (benchmarks/sampler_mismatch.py)"},
    "copy with adapters apart in bf16, grouped decode, stop tokens": {
        **APART_BF16,
        "stops": True, "tells": "the same with GRPOTrainer's stop tokens"},
    "copy with adapters apart in bf16, grouped decode, cache of 1024": {
        **APART_BF16,
        "cache_len": 1024, "tells": "the same with the cache train.py gives the copy for the standard preset "
                                    "(max_seq_length 1024 tokens, not the 352 this generation fills): the decode "
                                    "attention reads the whole cache, empty positions too"},
    "copy with adapters apart in bf16, grouped decode, cache of 1024 fitted in steps of 512": {
        **APART_BF16,
        "cache_len": 1024, "cache_step": 512, "tells": "the same, each generation's cache as long as it can fill, "
                                                      "rounded up to 512 tokens (GenerationCopy's cache_step)"},
    "copy with adapters apart in bf16, grouped decode, fused projections": {
        **APART_BF16,
        "fuse": True, "profile": True, "tells": "the same with each layer's adapter A inside its base matmul, q/k/v "
                                               "and gate/up in one matmul each (runtime/fused_projections.py): 8 "
                                               "matmuls a layer instead of 21"},
    "copy with adapters apart in bf16, grouped decode, fused projections, cache of 1024": {
        **APART_BF16,
        "fuse": True, "cache_len": 1024, "tells": "the same with the standard preset's cache of 1024 tokens"},
    "copy with adapters apart in bf16, grouped decode, cache of 1024, windows of 128": {
        **APART_BF16,
        "cache_len": 1024, "window_step": 128, "tells": "the cache of 1024, each decode step's attention reading it "
                                                        "up to the tokens so far rounded up to 128 (decode_window)"},
    "copy with adapters apart in bf16, grouped decode, fused projections, cache of 1024, windows of 128": {
        **APART_BF16,
        "fuse": True, "cache_len": 1024, "window_step": 128, "profile": True,
        "tells": "both: fused projections and decode windows"},
    "copy with adapters apart in bf16, grouped decode, stop tokens, stop check deferred": {
        **APART_BF16,
        "stops": True, "defer": True, "profile": True,
        "tells": "GRPOTrainer's stop tokens, generate reading whether all have ended one step late (transformers' "
                 "DeferredStopCheck, opened for CUDA): the host no longer waits for the GPU at each token"},
    DEFAULT_PATH: {
        **APART_BF16,
        "fuse": True, "cache_len": 1024, "window_step": 128, "stops": True, "defer": True, "profile": True,
        "tells": "all three: fused projections, decode windows, the stop check deferred"},
    LONG_RUN_PATH: {
        **APART_BF16,
        "fuse": True, "cache_len": 1024, "window_step": 128, "stops": True, "defer": True,
        "compile_mode": "max-autotune",
        "tells": "the default path compiled with torch.compile's max-autotune (Triton matmuls tried for each shape "
                 "against cuBLAS; a longer first compile)"},
    "copy with adapters apart in bf16, grouped decode, cache of 2560": {
        **APART_BF16,
        "cache_len": 2560, "tells": "the thinking preset's cache (max_seq_length 2560)"},
    "copy with adapters apart in bf16, grouped decode, fused projections, cache of 2560, windows of 128": {
        **APART_BF16,
        "fuse": True, "cache_len": 2560, "window_step": 128, "tells": "the thinking preset's cache, with fused "
                                                                     "projections and decode windows"},
    "copy of a 4-bit policy, adapters apart": {"kind": "copy", "attn": "grpo_skill_grouped_decode", "four_bit": True,
                                               "adapters": "apart", "decode": False,
                                               "tells": "its refresh: only the adapters are copied in"},
    "merged copy, flex": {"kind": "copy", "attn": "flex_attention", "profile": True, "tells": "the same with "
                          "flex_attention (grouped KV heads read as they are)"},
    "4-bit policy, dynamic cache": {"kind": "policy", "cache": None, "four_bit": True, "tells": "TRL backend with a "
                                    "4-bit base: dequantizes every weight on every token"},
    "merged copy of a 4-bit policy": {"kind": "copy", "attn": "sdpa", "four_bit": True, "decode": False,
                                      "tells": "a 4-bit base's bf16 merged copy: decodes as the bf16 copy does; "
                                      "its refresh dequantizes and merges every linear layer"},
}


def render(results: dict) -> str:
    lines = [
        f"Decode step on {results['device']} (torch {results['torch']}), Qwen3-4B shape, "
        f"{results['prompt_tokens']}-token prompts, {results['new_tokens']} sampled tokens; floor = "
        f"{results['weight_bytes'] / 1e9:.2f} GB of weights + the KV cache at the mean length, read at the measured "
        f"{results['bandwidth_GBps']:.0f} GB/s.",
        "",
        "| path | batch | decode step, ms | floor, ms | × floor | copy refresh, ms | what it is |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        tokens = row.get("new_tokens", results["new_tokens"])
        path = row["path"] if tokens == results["new_tokens"] else f"{row['path']} ({tokens} tokens)"
        if row.get("device", results["device"]) != results["device"]:  # a row merged from a call on another card
            path = f"{path} (on {row['device']})"
        step = f"{row['decode_ms']:.2f}" if row["decode_ms"] else (f"failed: {row['error'].splitlines()[0][:150]}" if row["error"]
                                                                    else "as the bf16 copy")
        ratio = f"{row['x_floor']:.1f}" if row["x_floor"] else "–"
        refresh = f"{row['refresh_ms']:.0f}" if row["refresh_ms"] is not None else "–"
        lines.append(f"| {path} | {row['batch']} | {step} | {row['floor_ms']:.2f} | {ratio} | {refresh} | "
                     f"{row['tells']} |")
    for name, prof in results["profiles"].items():
        idle = prof["wall_ms_per_token"] - prof["kernel_ms_per_token"]
        lines += ["", f"Profile, {name}: {prof['wall_ms_per_token']:.2f} ms per token of wall time, "
                  f"{prof['kernel_ms_per_token']:.2f} in kernels, {idle:.2f} with the GPU idle (launches, Python, "
                  "host syncs; prefill included).", "", "| kernel kind | ms per token |", "|---|---|"]
        lines += [f"| {kind} | {ms} |" for kind, ms in prof["kinds_ms_per_token"].items()]
        lines += ["", "| top kernels | ms per token |", "|---|---|"]
        lines += [f"| `{kernel}` | {ms} |" for kernel, ms in prof["top_kernels_ms_per_token"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
