"""A verifiable task that needs no download: seeded addition problems, and a short supervised warm start.

    python -m grpo_skill.arithmetic data --out data/          # train.jsonl + test.jsonl (prompt, answer)
    python -m grpo_skill.arithmetic warm-start --data data/train.jsonl --out warm/

``data`` writes two files whose problems never overlap, so the test file measures held-out accuracy.
``warm-start`` builds a small Qwen3 on this machine (``modelbuild``, shape ``small``, no download) and teaches
it the answer format with TRL's SFTTrainer (loss on the answer tokens only), then saves the whole
model: point a project's ``model.name`` (or ``train.py --model``) at that folder and train it with GRPO and
the ``accuracy`` reward. A short warm start leaves the model right only part of the time, which is what GRPO
then improves. Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

from ..core.datafile import read_jsonl, write_jsonl

PROMPT = "What is {a} + {b}?"


def problems(count: int, seed: int, low: int = 0, high: int = 99, exclude: set | None = None) -> list[dict]:
    """``count`` distinct problems a + b with a, b in [low, high], none of them in ``exclude``."""
    space = (high - low + 1) ** 2 - len(exclude or ())
    if count > space:
        raise ValueError(f"only {space} distinct problems with operands in [{low}, {high}]; ask for fewer")
    rng = random.Random(seed)
    seen = set(exclude or ())
    rows = []
    while len(rows) < count:
        pair = (rng.randint(low, high), rng.randint(low, high))
        if pair in seen:
            continue
        seen.add(pair)
        rows.append({"prompt": PROMPT.format(a=pair[0], b=pair[1]), "answer": str(pair[0] + pair[1])})
    return rows


def pair_of(row: dict) -> tuple[int, int]:
    a, _, b = row["prompt"].removeprefix("What is ").removesuffix("?").partition(" + ")
    return int(a), int(b)


def write_splits(out_dir: str | Path, train: int = 2000, test: int = 200, seed: int = 0, high: int = 99) -> dict:
    """train.jsonl and test.jsonl in ``out_dir``: disjoint problems, the same seed gives the same files."""
    test_rows = problems(test, seed + 1, high=high)
    train_rows = problems(train, seed, high=high, exclude={pair_of(row) for row in test_rows})
    out_dir = Path(out_dir)
    return {
        "train": str(write_jsonl(train_rows, out_dir / "train.jsonl")),
        "test": str(write_jsonl(test_rows, out_dir / "test.jsonl")),
    }


def sampled_accuracy(model, tokenizer, rows: list[dict], seed: int = 0) -> float:
    """Share of ``rows`` answered right by one sample each at temperature 1 (the way evaluate.py samples)."""
    import torch

    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": row["prompt"]}], tokenize=False,
                                             add_generation_prompt=True) for row in rows]
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    inputs = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    tokenizer.padding_side = side
    torch.manual_seed(seed)
    with torch.no_grad():
        output = model.generate(**inputs, max_new_tokens=6, do_sample=True, temperature=1.0,
                                pad_token_id=tokenizer.pad_token_id)
    texts = tokenizer.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    return sum(is_right(text, row["answer"]) for text, row in zip(texts, rows)) / len(rows)


def is_right(text: str, answer: str) -> bool:
    """The last whole number in ``text`` is ``answer``."""
    numbers = re.findall(r"-?\d+", text)
    return bool(numbers) and numbers[-1] == answer


def warm_start(data: str | Path, out: str | Path, *, steps: int = 300, batch_size: int = 64, lr: float = 1e-3,
               seed: int = 0, shape: str = "small", base: str | Path | None = None,
               target_accuracy: float = 0.0, check_every: int = 25) -> dict:
    """Supervised pass on ``data`` (prompt, answer) with TRL's SFTTrainer (``finetune.fine_tune``, the loss on the
    answer only): the model learns to answer with the number and stop.

    With ``target_accuracy`` the pass stops as soon as sampled accuracy on 256 of the training problems
    reaches it (checked every ``check_every`` steps): a warm start that is right part of the time, whatever
    the hardware's speed, leaves GRPO something to improve.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import modelbuild
    from .finetune import fine_tune

    base = Path(base) if base else modelbuild.build(shape, opens_think=False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)

    rows = read_jsonl(data)
    probe = random.Random(seed + 7).sample(rows, min(256, len(rows)))
    rendered = [{"prompt": tokenizer.apply_chat_template([{"role": "user", "content": row["prompt"]}], tokenize=False,
                                                         add_generation_prompt=True),
                 "completion": row["answer"]} for row in rows]
    progress = _Progress(tokenizer, probe, seed, target_accuracy, check_every)
    started = time.perf_counter()
    out = Path(out)
    trainer, _result = fine_tune(model, tokenizer, rendered, out.with_name(out.name + ".trainer"), steps=steps,
                                 batch_size=batch_size, lr=lr, seed=seed, logging_steps=1,
                                 callbacks=[progress.callback()])
    trainer.model.eval().to("cpu").save_pretrained(out)
    tokenizer.save_pretrained(out)
    losses = progress.losses
    return {"model": str(out), "base": str(base), "steps": trainer.state.global_step, "max_steps": steps,
            "train_accuracy": progress.probes[-1][1] if progress.probes else None,
            "first_loss": sum(losses[:5]) / len(losses[:5]), "final_loss": sum(losses[-20:]) / len(losses[-20:]),
            "seconds": round(time.perf_counter() - started, 1), "device": device}


class _Progress:
    """The warm start's losses (printed every 50 steps) and sampled accuracy (every ``check_every`` steps, with
    ``target_accuracy``), stopping the pass once it is reached."""

    def __init__(self, tokenizer, probe: list[dict], seed: int, target_accuracy: float, check_every: int):
        self.tokenizer, self.probe, self.seed = tokenizer, probe, seed
        self.target_accuracy, self.check_every = target_accuracy, check_every
        self.losses: list[float] = []
        self.probes: list[tuple[int, float]] = []

    def callback(self):
        from transformers import TrainerCallback

        progress = self

        class WarmStartProgress(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):
                if logs and "loss" in logs:
                    progress.logged(state.global_step, state.max_steps, float(logs["loss"]))

            def on_step_end(self, args, state, control, model=None, **kwargs):
                if progress.reached(state.global_step, model):
                    control.should_training_stop = True

        return WarmStartProgress()

    def logged(self, step: int, steps: int, loss: float) -> None:
        self.losses.append(loss)
        if step % 50 == 0 or step == steps:
            print(f"warm-start step {step}/{steps}  loss {sum(self.losses[-50:]) / len(self.losses[-50:]):.3f}",
                  file=sys.stderr)

    def reached(self, step: int, model) -> bool:
        if not self.target_accuracy or step % self.check_every:
            return False
        model.eval()
        self.probes.append((step, sampled_accuracy(model, self.tokenizer, self.probe, self.seed)))
        model.train()
        print(f"warm-start step {step}: sampled accuracy on training problems {self.probes[-1][1]:.3f}",
              file=sys.stderr)
        return self.probes[-1][1] >= self.target_accuracy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grpo_skill.arithmetic", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    data = verbs.add_parser("data", help="write train.jsonl and test.jsonl (prompt, answer columns)")
    data.add_argument("--out", required=True, type=Path, help="folder for train.jsonl and test.jsonl")
    data.add_argument("--train", type=int, default=2000)
    data.add_argument("--test", type=int, default=200)
    data.add_argument("--max-operand", type=int, default=99)
    data.add_argument("--seed", type=int, default=0)
    warm = verbs.add_parser("warm-start", help="a short supervised pass on the answer format; saves the model")
    warm.add_argument("--data", required=True, type=Path, help="a jsonl with prompt and answer columns")
    warm.add_argument("--out", required=True, type=Path, help="folder for the warmed-up model")
    warm.add_argument("--base", type=Path, help="model folder to start from; default: build --shape")
    warm.add_argument("--shape", default="small", help="a modelbuild shape to build when --base is not given")
    warm.add_argument("--steps", type=int, default=300)
    warm.add_argument("--batch-size", type=int, default=64)
    warm.add_argument("--lr", type=float, default=1e-3)
    warm.add_argument("--seed", type=int, default=0)
    warm.add_argument("--target-accuracy", type=float, default=0.0,
                      help="stop once sampled accuracy on training problems reaches this (0: run every step)")
    args = parser.parse_args(argv)
    if args.verb == "data":
        result = write_splits(args.out, args.train, args.test, args.seed, args.max_operand)
    else:
        result = warm_start(args.data, args.out, steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                            seed=args.seed, shape=args.shape, base=args.base,
                            target_accuracy=args.target_accuracy)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
