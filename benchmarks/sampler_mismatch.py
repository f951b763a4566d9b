"""How far each way of sampling is from the distribution the trainer scores with, on a GPU (issue 21).

GRPOTrainer samples completions, then computes their log-probs with its own forward: the policy under
accelerate's bf16 autocast (``bf16=True``), where a LoRA's matmuls run in bf16. With ``generate`` on the policy
(no vLLM) TRL takes the samples as on-policy and corrects nothing, so any gap between the sampler's distribution and
the trainer's is an off-policy error the loss never sees. Samplers measured, each on the same trained policy:

- TRL's own: the policy's ``generate``, as TRL calls it (peft's generate reaches the base model's forward, outside
  accelerate's autocast: the adapters compute in fp32), eager, dynamic cache;
- the fast path's copies (skill/runtime/generation_copy.py), compiled, static cache, grouped decode attention: merged
  into bf16 weights; adapters apart in fp32; adapters apart in the trainer's autocast dtype (what ``install`` picks);
- the trainer itself on the same sequences in batches of 8 instead of all at once: the floor that kernel order alone
  gives.

Real weights (SmolLM2-135M-Instruct, the model scripts/real_weights.py converts); LoRA r16 on every linear layer,
trained with AdamW under bf16 autocast (accelerate, as a TRL run trains) on worked additions, at two learning rates.
At each checkpoint every sampler answers the same held-out prompts (temperature 1, no top-k/top-p), and over each
completion's tokens (to its end of turn):

- KL(trainer ‖ sampler) over the whole vocabulary, per token;
- the sampled token's log-ratio log p_sampler(y) − log p_trainer(y): its mean estimates KL(sampler ‖ trainer), and
  the share of tokens whose trainer/sampler ratio is outside [0.8, 1.2] (PPO's clip range) says how many a
  truncated importance weight would touch.

    python benchmarks/sampler_mismatch.py                  # on a CUDA GPU; writes docs/sampler-mismatch.json and .md
    python benchmarks/sampler_mismatch.py --out /tmp/mm    # elsewhere
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import copy_fidelity  # noqa: E402  (the same model folder, task and KL as the CPU measurement)

LEARNING_RATES = (1e-5, 1e-4)
CHECKPOINTS = (10, 40)
BATCH = 16
PROMPTS = 64
NEW_TOKENS = 128
CLIP = 0.2
SAMPLERS = {
    "TRL's generate": {"tells": "the policy's own generate, as TRL calls it: adapters in fp32 (outside autocast), "
                                "eager, dynamic cache"},
    "merged copy": {"adapters": "merged", "tells": "LoRA merged into bf16 weights"},
    "copy, adapters apart in fp32": {"adapters": "apart", "adapter_dtype": None,
                                     "tells": "each LoRA beside its layer in fp32, as peft computes it without "
                                              "autocast"},
    "copy, adapters apart in bf16": {"adapters": "apart", "adapter_dtype": "bfloat16",
                                     "tells": "each LoRA beside its layer in bf16, as the trainer computes it under "
                                              "bf16 autocast (what the fast path installs when bf16 is on)"},
}


def prompts(tokenizer, count: int, seed: int, device):
    from grpo_skill.runtime import arithmetic

    texts = [tokenizer.apply_chat_template([{"role": "user", "content": row["prompt"]}], tokenize=False,
                                           add_generation_prompt=True)
             for row in arithmetic.problems(count, seed)]
    tokenizer.padding_side = "left"
    return tokenizer(texts, return_tensors="pt", padding=True).to(device)


def completion_mask(completions, stop_id: int):
    """1 for each completion token up to and including its first stop token, as GRPOTrainer masks them."""
    import torch

    is_stop = completions == stop_id
    first = torch.where(is_stop.any(1), is_stop.int().argmax(1), completions.shape[1])
    positions = torch.arange(completions.shape[1], device=completions.device)
    return (positions[None, :] <= first[:, None]).float()


def trainer_log_probs(trainer, sequences, attention, steps: int, rows: int):
    """The trainer's log-probs of each completion position (as GRPOTrainer computes them), ``rows`` at a time."""
    import torch

    chunks = []
    with torch.no_grad():
        for start in range(0, sequences.shape[0], rows):
            logits = trainer(input_ids=sequences[start:start + rows], attention_mask=attention[start:start + rows],
                             logits_to_keep=steps + 1).logits[:, :-1].float()
            chunks.append(torch.log_softmax(logits, dim=-1))
    return torch.cat(chunks)


def compare(trainer_log, sampler_log, tokens, mask) -> dict:
    log_ratio = (sampler_log.gather(-1, tokens[..., None]) - trainer_log.gather(-1, tokens[..., None]))[..., 0]
    count = mask.sum()
    outside = ((-log_ratio).exp().sub(1).abs() > CLIP).float()
    return {"kl_trainer_sampler": copy_fidelity.kl(trainer_log, sampler_log, mask),
            "mean_log_ratio": float((log_ratio * mask).sum() / count),
            "mean_abs_log_ratio": float((log_ratio.abs() * mask).sum() / count),
            "outside_clip": float((outside * mask).sum() / count)}


def measure(args) -> dict:
    import torch
    from accelerate import Accelerator
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from grpo_skill.runtime.generation_copy import GenerationCopy
    from grpo_skill.runtime.grouped_decode import NAME as GROUPED

    cuda = torch.cuda.is_available()
    torch.manual_seed(0)
    accelerator = Accelerator(mixed_precision="bf16", cpu=not cuda)
    folder = copy_fidelity.model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    stop_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    base = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).to(accelerator.device)
    policy = get_peft_model(base, LoraConfig(r=16, lora_alpha=16, target_modules="all-linear", lora_dropout=0.0))
    trainer = accelerator.prepare_model(policy)  # its forward under bf16 autocast, as the Trainer's is
    held_out = prompts(tokenizer, args.prompts, seed=1, device=accelerator.device)
    prompt_length = held_out["input_ids"].shape[1]
    config = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=args.new_tokens,
                              eos_token_id=stop_id, pad_token_id=stop_id)
    copies, build_seconds = {}, {}
    for name, spec in SAMPLERS.items():
        if "adapters" in spec:
            started = time.perf_counter()
            dtype = getattr(torch, spec["adapter_dtype"]) if spec.get("adapter_dtype") else None
            copies[name] = GenerationCopy(policy, max_cache_len=prompt_length + args.new_tokens, compile_decode=cuda,
                                          attn_implementation=GROUPED if cuda else "sdpa",
                                          adapters=spec["adapters"], dtype=torch.bfloat16, adapter_dtype=dtype)
            build_seconds[name] = round(time.perf_counter() - started, 1)
    train_texts = copy_fidelity.texts(tokenizer, BATCH * max(args.checkpoints), seed=0)
    rows = []
    for lr in args.learning_rates:
        for module in policy.modules():  # the same policy (and so the same compiled copies) starts over at each lr
            if hasattr(module, "reset_lora_parameters"):
                module.reset_lora_parameters("default", True)
        optimizer = accelerator.prepare_optimizer(torch.optim.AdamW(
            [p for p in policy.parameters() if p.requires_grad], lr=lr, weight_decay=0.0))
        tokenizer.padding_side = "right"
        for step in range(1, max(args.checkpoints) + 1):
            batch = tokenizer(train_texts[(step - 1) * BATCH:step * BATCH], return_tensors="pt",
                              padding=True).to(accelerator.device)
            labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
            trainer.train()
            loss = trainer(**batch, labels=labels).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            if step not in args.checkpoints:
                continue
            trainer.eval()
            row = {"learning_rate": lr, "step": step, "loss": round(float(loss.detach()), 4), "samplers": {}}
            for name in SAMPLERS:
                torch.manual_seed(step)
                generate = copies[name].generate if name in copies else policy.generate
                started = time.perf_counter()
                with torch.no_grad():
                    out = generate(**held_out, generation_config=config, output_logits=True,
                                   return_dict_in_generate=True)
                seconds = time.perf_counter() - started
                completions = out.sequences[:, prompt_length:]
                steps = completions.shape[1]
                mask = completion_mask(completions, stop_id)
                attention = torch.cat([held_out["attention_mask"], mask.long()], dim=1)
                sampler_log = torch.log_softmax(torch.stack(out.logits, dim=1).float(), dim=-1)
                reference = trainer_log_probs(trainer, out.sequences, attention, steps, rows=args.prompts)
                result = compare(reference, sampler_log, completions, mask)
                result.update(tokens=int(mask.sum()), generate_seconds=round(seconds, 2))
                row["samplers"][name] = result
                if name == "TRL's generate":  # the floor: the trainer against itself, other batch shapes
                    again = trainer_log_probs(trainer, out.sequences, attention, steps, rows=8)
                    row["samplers"]["trainer, batches of 8"] = compare(reference, again, completions, mask)
                del out, sampler_log, reference
                print(f"lr {lr:g} step {step} {name}: " + json.dumps(result), file=sys.stderr, flush=True)
            with torch.no_grad():
                sample = held_out["input_ids"][:8]
                policy_log = torch.log_softmax(trainer(input_ids=sample).logits.float(), -1)
                with policy.disable_adapter():
                    base_log = torch.log_softmax(trainer(input_ids=sample).logits.float(), -1)
            every_token = torch.ones_like(policy_log[..., 0])
            row["kl_trainer_base_on_prompts"] = copy_fidelity.kl(policy_log, base_log, every_token)
            rows.append(row)
    return {"date": datetime.date.today().isoformat(), "model": copy_fidelity.MODEL_NAME,
            "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
            "lora": "r16, alpha 16, all linear", "prompts": args.prompts, "new_tokens": args.new_tokens,
            "copy_build_seconds": build_seconds, "rows": rows}


def markdown(report: dict) -> str:
    names = list(report["rows"][0]["samplers"])
    lines = [
        "# How far each sampler is from the trainer",
        "",
        f"Measured by `python benchmarks/sampler_mismatch.py` on {report['date']}, {report['device']} (torch "
        f"{report['torch']}): {report['model']} (real weights), LoRA {report['lora']}, trained under bf16 autocast "
        f"on worked additions; {report['prompts']} held-out prompts, up to {report['new_tokens']} tokens sampled at "
        "temperature 1. The trainer: the policy's forward under accelerate's bf16 autocast, as GRPOTrainer scores "
        "completions.",
        "",
        "| learning rate | step | KL(trainer ‖ base), prompts | sampler | KL(trainer ‖ sampler) per token "
        "| mean log-ratio (≈ KL(sampler ‖ trainer)) | mean abs log-ratio | tokens outside ratio [0.8, 1.2] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        for name in names:
            cells = row["samplers"][name]
            lines.append(f"| {row['learning_rate']:g} | {row['step']} | {row['kl_trainer_base_on_prompts']:.2e} | "
                         f"{name} | {cells['kl_trainer_sampler']:.2e} | {cells['mean_log_ratio']:.2e} | "
                         f"{cells['mean_abs_log_ratio']:.2e} | {cells['outside_clip']:.2%} |")
    lines += ["", "Samplers:", ""]
    lines += [f"- {name}: {spec['tells']}" for name, spec in SAMPLERS.items()]
    lines += ["- trainer, batches of 8: the trainer's own forward on the same sequences in batches of 8 instead of "
              "all at once (kernel order alone)"]
    if report.get("notes"):
        lines += ["", "Notes:", ""] + [f"- {note}" for note in report["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=copy_fidelity.REPO / "docs",
                        help="folder for sampler-mismatch.json and .md")
    parser.add_argument("--learning-rates", type=float, nargs="+", default=list(LEARNING_RATES))
    parser.add_argument("--checkpoints", type=int, nargs="+", default=list(CHECKPOINTS))
    parser.add_argument("--prompts", type=int, default=PROMPTS)
    parser.add_argument("--new-tokens", type=int, default=NEW_TOKENS)
    args = parser.parse_args(argv)
    copy_fidelity.write(measure(args), args.out / "sampler-mismatch", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
