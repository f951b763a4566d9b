"""How much of what a LoRA has learned the fast path's generation copy samples with (issue 21 item 6).

A merged copy (``GenerationCopy(adapters="merged")``, skill/runtime/generation_copy.py) holds each linear layer as
one bf16 matrix, ``W + scale * B @ A`` summed in fp32 and rounded to bf16 once. The base ``W`` is already a bf16
number, so an element of the adapter's delta smaller than half a bf16 step of ``W`` rounds away: until the adapter
has moved far enough, the copy samples from (nearly) the base model while the policy it stands for has learned. The
policy itself adds the adapter's output to the base layer's, where nothing rounds away, and so does the copy with
its adapters apart (the default).

This measures it on real weights (SmolLM2-135M-Instruct, the model scripts/real_weights.py converts; on a CPU):
LoRA r16 on every linear layer, as the presets have it, trained with AdamW on worked additions (the product's
arithmetic task) for a few steps at several learning rates; after each, on held-out prompts, the next-token
distributions of the base (adapter off), the policy (adapter on, bf16 base) and the copy the product builds from it.

    python benchmarks/copy_fidelity.py                      # writes docs/copy-fidelity.json and .md
    python benchmarks/copy_fidelity.py --out /tmp/fidelity  # elsewhere

Per row: KL(policy || base) per token, how far training moved the model; KL(policy || copy), how far the copy is
from it; and the share of the move the copy keeps, 1 - KL(policy || copy) / KL(policy || base).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL_NAME = "smollm2-135m-instruct"
LEARNING_RATES = (1e-5, 1e-4, 1e-3)
CHECKPOINTS = (10, 40)
BATCH = 16
ADAPTERS = ("merged", "apart")  # the copy's two ways to hold an adapter (GenerationCopy's ``adapters``)


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


def log_probs(model, batch):
    import torch

    with torch.no_grad():
        logits = model(**batch).logits.float()
    return torch.log_softmax(logits, dim=-1)


def kl(p_log, q_log, mask) -> float:
    """Mean over the batch's real tokens of KL(p || q)."""
    per_token = (p_log.exp() * (p_log - q_log)).sum(-1)
    return float((per_token * mask).sum() / mask.sum())


def copy_of(policy, adapters: str):
    """The product's generation copy of ``policy`` in bf16, as on a GPU (on a CPU the product keeps it in fp32),
    with the policy's attention."""
    import torch

    from grpo_skill.runtime.generation_copy import GenerationCopy

    return GenerationCopy(policy, max_cache_len=64, compile_decode=False, attn_implementation="sdpa",
                          adapters=adapters, dtype=torch.bfloat16).model


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
        base = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
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
            with policy.disable_adapter():
                base_log = log_probs(policy, held_out)[:, :-1]
            policy_log = log_probs(policy, held_out)[:, :-1]
            moved = kl(policy_log, base_log, mask)
            deltas = [layer.get_delta_weight("default").float().norm() / layer.base_layer.weight.float().norm()
                      for layer in policy.modules() if hasattr(layer, "get_delta_weight")]
            row = {"learning_rate": lr, "step": step, "loss": round(float(loss.detach()), 4),
                   "delta_relative_norm": float(sum(deltas) / len(deltas)), "kl_policy_base": moved}
            for adapters in ADAPTERS:
                apart = kl(policy_log, log_probs(copy_of(policy, adapters), held_out)[:, :-1], mask)
                row[f"kl_policy_copy_{adapters}"] = apart
                row[f"kept_{adapters}"] = 1 - apart / moved if moved > 0 else None
            rows.append(row)
            print(f"lr {lr:g} step {step}: KL(policy||base) {moved:.2e}, kept merged {row['kept_merged']:.2f}, "
                  f"apart {row['kept_apart']:.2f}", file=sys.stderr)
    return {"date": datetime.date.today().isoformat(), "model": MODEL_NAME, "lora": "r16, alpha 16, all linear",
            "batch": BATCH, "rows": rows}


def markdown(report: dict) -> str:
    lines = [
        "# How much of the LoRA the generation copy keeps",
        "",
        f"Measured by `python benchmarks/copy_fidelity.py` on {report['date']}: {report['model']} (real weights, "
        f"bf16), LoRA {report['lora']}, AdamW on worked additions, batch {report['batch']}; held-out prompts. "
        "The copy is the fast path's (skill/runtime/generation_copy.py), in bf16 as on a GPU.",
        "",
        "| learning rate | step | adapter delta / base weight (norm) | KL(policy ‖ base) | KL(policy ‖ merged copy) "
        "| kept, merged | KL(policy ‖ copy, adapters apart) | kept, apart |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        cells = [f"{row['learning_rate']:g}", str(row["step"]), f"{row['delta_relative_norm']:.1e}",
                 f"{row['kl_policy_base']:.2e}"]
        for adapters in ADAPTERS:
            kept = row[f"kept_{adapters}"]
            cells += [f"{row[f'kl_policy_copy_{adapters}']:.2e}", "" if kept is None else f"{kept:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "kept: the share of the policy's move away from the base that the copy samples with (1: all of it; "
              "0: the copy samples as the base does). Merged: `GenerationCopy(adapters=\"merged\")`, each adapter "
              "summed into its layer's bf16 weight; apart: the fast path's default since 2026-12-04, each adapter "
              "beside its layer, in fp32 as the policy computes it."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="folder for copy-fidelity.json and .md")
    parser.add_argument("--learning-rates", type=float, nargs="+", default=list(LEARNING_RATES))
    parser.add_argument("--checkpoints", type=int, nargs="+", default=list(CHECKPOINTS))
    args = parser.parse_args(argv)
    report = measure(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "copy-fidelity.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "copy-fidelity.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
