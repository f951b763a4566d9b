"""How much of what a LoRA has learned the fast path's generation copy samples with, and how far its sampling is
from the distribution the trainer computes log-probs for (issue 21 item 6).

A merged copy (``GenerationCopy(adapters="merged")``, skill/runtime/generation_copy.py) holds each linear layer as
one bf16 matrix, ``W + scale * B @ A`` summed in fp32 and rounded to bf16 once: an element of the adapter's delta
smaller than half a bf16 step of ``W`` rounds away. The copy with its adapters apart (the default) adds them to the
layer's output as the policy does. But the policy rounds too: in a bf16 run each layer's output is a bf16 number, and
under the trainer's bf16 autocast the adapters' own matmuls run in bf16, so an adapter's small contribution rounds
away there as well. So two references:

- the *learned* update: the policy computed in fp32 (its bf16 base weights upcast, which is exact, and its fp32
  LoRA) against the base computed the same way. "kept" is the share of that move a way of sampling keeps.
- the *trainer*: the policy as a bf16 run scores completions (bf16 base, fp32 LoRA, the forward under bf16
  autocast, as accelerate wraps it for GRPOTrainer), whose log-probs GRPO's loss uses. KL(trainer || sampler) is how
  far a sampler's distribution is from it: zero means on-policy samples.

Measured on real weights (SmolLM2-135M-Instruct, the model scripts/real_weights.py converts; on a CPU): LoRA r16 on
every linear layer, as the presets have it, trained with AdamW on worked additions (the product's arithmetic task)
at several learning rates, held-out prompts. The LoRA trains with the base in fp32 (the checkpoint's bf16 values
upcast): bf16 matmuls are slow on a CPU, and the update is then the one the data asks for, not shaped by bf16
rounding. Eager CPU kernels; on a GPU the compiled decode step rounds in its own order: benchmarks/sampler_mismatch.py
measures the samplers there, from their own samples (docs/sampler-mismatch.md).

    python benchmarks/copy_fidelity.py                      # writes docs/copy-fidelity.json and .md
    python benchmarks/copy_fidelity.py --out /tmp/fidelity  # elsewhere
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL_NAME = "smollm2-135m-instruct"
LEARNING_RATES = (1e-5, 1e-4)
CHECKPOINTS = (10, 40)
BATCH = 16
# the copy's ways to hold an adapter: GenerationCopy's ``adapters`` and ``adapter_dtype`` (None: the adapters' fp32)
COPIES = {"merged": ("merged", None), "apart, fp32": ("apart", None), "apart, bf16": ("apart", "bfloat16")}


def model_folder() -> Path:
    sys.path.insert(0, str(REPO / "scripts"))
    import real_weights

    folder = real_weights.cache_root() / "models" / MODEL_NAME
    if not (folder / "config.json").is_file():
        raise SystemExit(f"no {MODEL_NAME} at {folder}: run `python scripts/real_weights.py --steps 2 --no-report` "
                         "once to convert it")
    return folder


def texts(tokenizer, count: int, seed: int) -> list[str]:
    from grpo_skill.runtime import arithmetic

    rows = arithmetic.problems(count, seed)
    return [tokenizer.apply_chat_template([{"role": "user", "content": row["prompt"]},
                                           {"role": "assistant", "content": row["answer"]}], tokenize=False)
            for row in rows]


def log_probs(model, batch, autocast: bool = False):
    """Log-probs of ``model`` on ``batch``; ``autocast``: under bf16 autocast, as a bf16 trainer computes them."""
    import torch

    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = model(**batch).logits.float()
    return torch.log_softmax(logits, dim=-1)


def kl(p_log, q_log, mask) -> float:
    """Mean over the batch's real tokens of KL(p || q)."""
    per_token = (p_log.exp() * (p_log - q_log)).sum(-1)
    return float((per_token * mask).sum() / mask.sum())


def copy_of(policy, adapters: str, adapter_dtype: str | None):
    """The product's generation copy of ``policy`` in bf16, as on a GPU (on a CPU the product keeps it in fp32),
    with the policy's attention."""
    import torch

    from grpo_skill.runtime.generation_copy import GenerationCopy

    return GenerationCopy(policy, max_cache_len=64, compile_decode=False, attn_implementation="sdpa",
                          adapters=adapters, dtype=torch.bfloat16,
                          adapter_dtype=getattr(torch, adapter_dtype) if adapter_dtype else None).model


def bf16_run_of(policy):
    """The policy as a bf16 run holds it: base weights in bf16, the LoRA in fp32 (peft's default)."""
    import copy

    import torch

    held = copy.deepcopy(policy)
    for name, param in held.named_parameters():
        if "lora_" not in name:
            param.data = param.data.to(torch.bfloat16)
    return held


SAMPLERS = ("base", "trainer", *COPIES)  # what each row compares: the bf16 base and policy, the copies
LABELS = {"base": "bf16 base", "trainer": "trainer", "merged": "merged copy",
          "apart, fp32": "copy, adapters apart in fp32", "apart, bf16": "copy, adapters apart in bf16"}


def measure(args) -> dict:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    folder = model_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    held_out = tokenizer(texts(tokenizer, 32, seed=1), return_tensors="pt", padding=True)
    mask = held_out["attention_mask"][:, 1:].float()
    rows = []
    for lr in args.learning_rates:
        base = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        policy = get_peft_model(base, LoraConfig(r=16, lora_alpha=16, target_modules="all-linear",
                                                 lora_dropout=0.0))
        optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
        train = texts(tokenizer, BATCH * max(args.checkpoints), seed=0)
        for step in range(1, max(args.checkpoints) + 1):
            batch = tokenizer(train[(step - 1) * BATCH:step * BATCH], return_tensors="pt", padding=True)
            labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
            loss = policy(**batch, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if step not in args.checkpoints:
                continue
            learned = log_probs(policy, held_out)[:, :-1]
            with policy.disable_adapter():
                learned_base = log_probs(policy, held_out)[:, :-1]
            moved = kl(learned, learned_base, mask)
            run = bf16_run_of(policy)
            trainer = log_probs(run, held_out, autocast=True)[:, :-1]
            with run.disable_adapter():
                sampled = {"base": log_probs(run, held_out)[:, :-1]}
            sampled["trainer"] = trainer
            for name, (adapters, adapter_dtype) in COPIES.items():
                sampled[name] = log_probs(copy_of(run, adapters, adapter_dtype), held_out)[:, :-1]
            with torch.no_grad():
                deltas = [layer.get_delta_weight("default").float().norm() / layer.base_layer.weight.float().norm()
                          for layer in policy.modules() if hasattr(layer, "get_delta_weight")]
            row = {"learning_rate": lr, "step": step, "loss": round(float(loss.detach()), 4),
                   "delta_relative_norm": float(sum(deltas) / len(deltas)), "kl_learned_base": moved}
            for name, log_q in sampled.items():
                row[f"kept_{name}"] = 1 - kl(learned, log_q, mask) / moved if moved > 0 else None
                row[f"kl_trainer_{name}"] = kl(trainer, log_q, mask)
            rows.append(row)
            print(f"lr {lr:g} step {step}: learned move {moved:.2e}; kept: "
                  + ", ".join(f"{name} {row[f'kept_{name}']:.2f}" for name in SAMPLERS), file=sys.stderr)
    return {"date": datetime.date.today().isoformat(), "model": MODEL_NAME, "lora": "r16, alpha 16, all linear",
            "batch": BATCH, "rows": rows}


def markdown(report: dict) -> str:
    lines = [
        "# How much of the LoRA the generation copy keeps, and how far it samples from the trainer",
        "",
        f"Measured by `python benchmarks/copy_fidelity.py` on {report['date']}: {report['model']} (real weights), "
        f"LoRA {report['lora']}, trained with AdamW on worked additions (base in fp32), batch {report['batch']}; "
        "held-out prompts; eager CPU kernels. The copies are the fast path's (skill/runtime/generation_copy.py), in "
        "bf16 as on a GPU.",
        "",
        "| learning rate | step | adapter delta / base weight (norm) | learned move: KL(fp32 policy ‖ fp32 base) | "
        + " | ".join(f"kept: {LABELS[name]}" for name in SAMPLERS) + " | "
        + " | ".join(f"KL(trainer ‖ {LABELS[name]})" for name in SAMPLERS if name != "trainer") + " |",
        "|---|---|---|---|" + "---|" * (2 * len(SAMPLERS) - 1),
    ]
    for row in report["rows"]:
        cells = [f"{row['learning_rate']:g}", str(row["step"]), f"{row['delta_relative_norm']:.1e}",
                 f"{row['kl_learned_base']:.2e}"]
        cells += [f"{row[f'kept_{name}']:.2f}" for name in SAMPLERS]
        cells += [f"{row[f'kl_trainer_{name}']:.2e}" for name in SAMPLERS if name != "trainer"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "kept: the share of the learned move (the policy against the base, both computed in fp32) that a "
              "way of sampling keeps, 1 - KL(fp32 policy ‖ sampler) / KL(fp32 policy ‖ fp32 base); 1: all of it, 0: "
              "no closer than the base. The trainer is the policy as a bf16 run scores completions (bf16 base, fp32 "
              "LoRA, under bf16 autocast); its own kept shows what bf16 rounds away. KL(trainer ‖ sampler), per "
              "token: how far a sampler's distribution is from the one GRPO's loss assumes (0: on-policy), on the "
              "same held-out text; the GPU measurement from each sampler's own samples is docs/sampler-mismatch.md. "
              "Merged: `GenerationCopy(adapters=\"merged\")`; apart: each adapter beside its layer, in fp32 (peft "
              "without autocast) or in bf16 (as under bf16 autocast: what the fast path installs in a bf16 run)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="folder for copy-fidelity.json and .md")
    parser.add_argument("--learning-rates", type=float, nargs="+", default=list(LEARNING_RATES))
    parser.add_argument("--checkpoints", type=int, nargs="+", default=list(CHECKPOINTS))
    args = parser.parse_args(argv)
    write(measure(args), args.out / "copy-fidelity", markdown)
    return 0


def write(report: dict, stem: Path, render) -> None:
    """``stem``.json and ``stem``.md (``render(report)``, printed too)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    stem.with_suffix(".md").write_text(render(report))
    print(render(report))


if __name__ == "__main__":
    sys.exit(main())
