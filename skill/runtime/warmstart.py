"""Warm-start examples: worked answers (with or without thinking) turned into prompt/completion texts for a
model's own chat template, and a supervised warm start that teaches a model to behave like a preset's target.

    python -m grpo_skill.warmstart examples --data data/train.jsonl --out data/sft.jsonl   # arithmetic, worked
    python -m grpo_skill.warmstart train --examples data/sft.jsonl --out thinker/ [--chat]

A project's ``sft.py`` uses ``load_examples``: each example (prompt, thinking, response) becomes the prompt
exactly as GRPO renders it (``runtime.data.chat_prompt``) and the completion that model should write after it:
the thinking and ``</think>`` when the template opened ``<think>`` (Qwen3-Thinking-2507), ``<think>...</think>``
then the response when the model decides (a hybrid template with thinking on), the response alone when the
template switched thinking off (``enable_thinking = false``) or the example has no thinking.

``examples`` writes worked arithmetic examples (``grpo_skill.arithmetic`` problems) whose thinking varies in
length and whose answers vary in style, so that the rewards of a preset find spread in what the warmed-up
model writes. ``train`` builds a small Qwen3 on this machine (no download) and fine-tunes all of its weights
on those examples with TRL's SFTTrainer: the GPU tests use it to stand in for the presets' real models.
Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from ..core.errors import UserError
from ..core.i18n import _

THINK_START, THINK_END = "<think>", "</think>"
EXAMPLE_COLUMNS = ("prompt_column", "thinking_column", "response_column")
SFT_DATA_KEYS = ("path", "split", *EXAMPLE_COLUMNS)  # [sft]'s keys that SFTConfig does not take


class ExamplesError(UserError):
    """Warm-start examples that do not fit the model or the config."""


def thinking_state(prompt_text: str) -> str:
    """How the rendered prompt leaves thinking: "open" (it ends inside <think>), "off" (an empty, closed
    <think></think> ends it: thinking switched off) or "model" (the model decides whether to think)."""
    tail = prompt_text.rstrip()
    if tail.endswith(THINK_START):
        return "open"
    if tail.endswith(THINK_END):
        return "off"
    return "model"


def completion_for(prompt_text: str, thinking: str, response: str) -> str:
    """What the model should write after ``prompt_text``: the thinking (closed by </think>) when thinking is on
    for this prompt and the example has some, then the response. The eos token is added by SFTTrainer."""
    state = thinking_state(prompt_text)
    thinking = (thinking or "").strip()
    if state == "open":
        return f"{thinking}\n{THINK_END}\n\n{response}"
    if state == "model" and thinking:
        return f"{THINK_START}\n{thinking}\n{THINK_END}\n\n{response}"
    return response


def sft_settings(config) -> dict:
    """``[sft]`` with its defaults: data keys (path, split, columns) and SFTConfig fields."""
    from ..core.schema import SftTable  # the defaults' one home

    defaults = {key: SftTable.model_fields[key].default for key in SFT_DATA_KEYS}
    return {**defaults, **(getattr(config, "sft", None) or _raw_table(config, "sft"))}


def _raw_table(config, section: str) -> dict:
    """A table of config.toml that ProjectConfig does not hold as an attribute (read again, cheap)."""
    from ..core.schema import tomllib  # tomli on Python 3.10

    return tomllib.loads(config.path.read_text(encoding="utf-8")).get(section, {})


def missing_examples(config) -> str | None:
    """``[sft]`` path as written, where it names a local file that is not there (sft.py stops; train.py never reads
    it); None otherwise."""
    from ..core.datafile import LOCAL_DATA_SUFFIXES

    written = sft_settings(config)["path"]
    path = config.project_dir / written
    return written if path.suffix in LOCAL_DATA_SUFFIXES and not path.is_file() else None


def examples_file(config) -> Path | None:
    """``[sft]`` path as a local file, checked to exist and to hold the example columns in every row (light: sft.py
    and `grpo-skill check` call it before any model loads); None for a hub dataset id."""
    from ..core.datafile import LOCAL_DATA_SUFFIXES, missing_column, scan
    from ..core.errors import shown_path

    settings = sft_settings(config)
    path = config.project_dir / settings["path"]
    if path.suffix not in LOCAL_DATA_SUFFIXES:
        return None
    if not path.is_file():
        raise config.error(("sft", "path"), _("{path} does not exist; point it at your worked examples").format(
            path=path))
    shown = shown_path(path)
    # every row needs a prompt (the first wanted: it must be text) and a response; a row may lack its thinking
    wanted = [(f"sft.{key}", settings[key]) for key in ("prompt_column", "response_column")]
    try:
        info = scan(path, shown, wanted, given=config.source.overridden if config.source else ())
    except UnicodeDecodeError as error:
        raise ExamplesError(_("{file}: not UTF-8 text (byte {position}); save it as UTF-8").format(
            file=shown, position=error.start)) from None
    thinking = settings["thinking_column"]
    if thinking and info.columns and thinking not in info.columns:
        raise missing_column(shown, "sft.thinking_column", thinking, info.columns,
                             given=config.source is not None and "sft.thinking_column" in config.source.overridden)
    return path


OUTPUT_SETTING = "sft.output_dir in config.toml"


def prepare_output(output_dir: Path, overwrite: bool) -> None:
    """Check sft.py's output folder before the model loads: a folder of someone else's files is refused; an earlier
    SFT run there is replaced only with --overwrite (its adapter may be the one [model] adapter names, and its
    metrics would run on into the new run's). Nothing is removed here: see :func:`clear_output`."""
    from . import resume

    resume.refuse_others_folder(output_dir, OUTPUT_SETTING)
    if resume.has_run(output_dir) and not overwrite:
        raise resume.ResumeError(_("{dir} holds an earlier SFT run: replace it with python sft.py --overwrite, or set "
                                   "another sft.output_dir in config.toml").format(dir=output_dir))


def clear_output(output_dir: Path) -> None:
    """Remove the earlier SFT run that --overwrite replaces, once the model has loaded: [model] adapter may name that
    run's adapter, which sft.py then continues from (loaded by now) and writes anew."""
    from . import resume

    if resume.has_run(output_dir):
        resume.remove_run(output_dir, OUTPUT_SETTING)


def adapter_command(config, adapter_dir: Path) -> str:
    """The `grpo-skill set` command that has train.py continue from ``adapter_dir`` (what sft.py says last): [model]
    adapter, relative to the project as config.toml reads it."""
    import os

    from ..core.commands import set_command

    relative = Path(os.path.relpath(adapter_dir, config.project_dir)).as_posix()
    return set_command({"model.adapter": relative}, config.project_dir)


def load_examples(config, tokenizer):
    """``[sft]`` path as a datasets.Dataset of prompt/completion texts for ``tokenizer``'s chat template."""
    import datasets

    from ..core.datafile import missing_column
    from .data import chat_prompt, check_chat_template_kwargs, load_file

    check_chat_template_kwargs(config, tokenizer)  # before every example goes through the template
    settings = sft_settings(config)
    path = examples_file(config)
    if path is not None:
        rows = load_file(path)  # as train.py reads its prompts: the texts as written
    else:
        rows = datasets.load_dataset(settings["path"])[settings.get("split", "train")]
    prompt, thinking, response = (settings[key] for key in EXAMPLE_COLUMNS)
    for key, column in (("prompt_column", prompt), ("response_column", response)) + (
            (("thinking_column", thinking),) if thinking else ()):
        if column not in rows.column_names:  # a hub dataset's columns are known only now
            raise missing_column(settings["path"], f"sft.{key}", column, rows.column_names)
    if thinking and _has_thinking(rows[thinking]) and not knows_think_end(tokenizer):
        raise ExamplesError(
            _("sft: the examples have thinking but the model's tokenizer has no {token} token; "
              "set [sft] thinking_column = \"\" to train on the responses alone").format(token=THINK_END)
        )

    def render(row):
        prompt_text = chat_prompt(config, tokenizer, row[prompt])
        return {"prompt": prompt_text,
                "completion": completion_for(prompt_text, row[thinking] if thinking else "", row[response])}

    return rows.map(render, remove_columns=rows.column_names)


def _has_thinking(values) -> bool:
    return any(value and str(value).strip() for value in values)


def knows_think_end(tokenizer) -> bool:
    token_id = tokenizer.convert_tokens_to_ids(THINK_END)
    return token_id is not None and token_id != getattr(tokenizer, "unk_token_id", None)


# --- worked arithmetic: the GPU tests' stand-in for a preset's target behaviour --------------------------------

RESPONSES = (  # answer styles from terse to a full sentence: the standard preset's rewards tell them apart
    "{s}",
    "{s}.",
    "The answer is {s}.",
    "{a} plus {b} equals {s}.",
    "Adding {a} and {b} gives {s}, so the answer is {s}.",
)


def worked_thinking(a: int, b: int, depth: int) -> str:
    """Thinking about a + b at one of four depths, from one line to a checked, step-by-step sum."""
    s = a + b
    if depth == 0:
        return f"{a} + {b} = {s}."
    if depth == 1:
        return f"I add {a} and {b}. {a} + {b} = {s}."
    tens, ones = (a // 10 + b // 10) * 10, a % 10 + b % 10
    steps = f"First the tens: {a // 10 * 10} + {b // 10 * 10} = {tens}. Then the ones: {a % 10} + {b % 10} = {ones}. " \
            f"So {tens} + {ones} = {s}."
    return steps if depth == 2 else steps + f" Is that right? {s} - {b} = {a}, so yes."


def rechecks(a: int, b: int, count: int, rng: random.Random) -> str:
    """``count`` more checks of a + b, in varied words (about 25-40 tokens each for the small model): a thinking
    model that keeps checking an answer it already has."""
    s, ones = a + b, a % 10 + b % 10
    forms = (
        f"Check again: {s} - {a} = {b}, so yes.",
        f"Let me recount the ones: {a % 10} + {b % 10} = {ones}.",
        f"Once more: {a} + {b}. Tens and ones give {s}.",
        f"Hmm, is {s} right? {s} - {b} = {a}. Yes.",
        f"Another way: {a} + {b // 10 * 10} = {a + b // 10 * 10}, then + {b % 10} = {s}.",
        f"Wait, {b} + {a} is the same sum: {s}.",
    )
    return " ".join(rng.choice(forms) for _ in range(count))


def arithmetic_examples(rows: list[dict], seed: int = 0, recheck_mean: float = 0.0, recheck_max: int = 0) -> list[dict]:
    """Worked examples (prompt, thinking, response, answer) for arithmetic rows (prompt, answer): each with a
    random thinking depth and answer style. With ``recheck_mean`` > 0 the checked thinking goes on with a random
    number of further checks (exponential with that mean, at most ``recheck_max``): thinking of tens to hundreds
    of tokens, a few past a completion budget, like a thinking model that overthinks easy questions."""
    from .arithmetic import pair_of

    rng = random.Random(seed)
    examples = []
    for row in rows:
        a, b = pair_of(row)
        thinking = worked_thinking(a, b, rng.randrange(4))
        if recheck_mean > 0:
            count = min(int(rng.expovariate(1 / recheck_mean)), recheck_max)
            thinking = worked_thinking(a, b, 3) + (" " + rechecks(a, b, count, rng) if count else "")
        examples.append({
            "prompt": row["prompt"],
            "thinking": thinking,
            "response": rng.choice(RESPONSES).format(a=a, b=b, s=a + b),
            "answer": row["answer"],
        })
    return examples


def warm_start(examples: str | Path, out: str | Path, *, opens_think: bool = True, shape: str = "small",
               steps: int = 400, batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
               max_position_embeddings: int = 4096, thinking_off_share: float = 0.0) -> dict:
    """A small Qwen3 built here, then every weight fine-tuned on ``examples`` (prompt, thinking, response).

    ``opens_think``: a template that opens <think> (a thinking model, like Qwen3-Thinking-2507); else a hybrid
    chat template, and ``thinking_off_share`` of the examples are rendered with ``enable_thinking=False`` (the
    response alone), the rest with thinking. Long ``max_position_embeddings``: the presets' budgets fit.
    """
    import dataclasses
    import shutil

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import modelbuild
    from ..core.datafile import read_jsonl

    started = time.perf_counter()
    out = Path(out)
    base = out.with_name(out.name + ".base")
    geometry = dataclasses.replace(modelbuild.SHAPES[shape], max_position_embeddings=max_position_embeddings)
    tokenizer = modelbuild.build_tokenizer(geometry, opens_think=opens_think)
    dtype = "float32"
    modelbuild.build_model(geometry, tokenizer, dtype, seed=seed).save_pretrained(base)
    tokenizer.save_pretrained(base)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)

    rng = random.Random(seed)
    rendered = []
    for row in read_jsonl(examples):
        kwargs = {"enable_thinking": False} if not opens_think and rng.random() < thinking_off_share else {}
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": row["prompt"]}], tokenize=False,
                                               add_generation_prompt=True, **kwargs)
        rendered.append({"prompt": prompt, "completion": completion_for(prompt, row["thinking"], row["response"])})
    from .finetune import fine_tune

    trainer, result = fine_tune(model, tokenizer, rendered, out.with_name(out.name + ".trainer"), steps=steps,
                                batch_size=batch_size, lr=lr, seed=seed, logging_steps=max(1, steps // 10),
                                callbacks=[_loss_printer()])
    trainer.model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    shutil.rmtree(base, ignore_errors=True)
    return {"model": str(out), "steps": steps, "mean_loss": round(result.training_loss, 4),
            "final_loss": next((row["loss"] for row in reversed(trainer.state.log_history) if "loss" in row), None),
            "examples": len(rendered), "opens_think": opens_think, "seconds": round(time.perf_counter() - started, 1)}


def _loss_printer():
    """A callback that prints the loss to stderr at each logging step."""
    from transformers import TrainerCallback

    class LossToStderr(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                print(f"warm-start step {state.global_step}/{state.max_steps}  loss {float(logs['loss']):.3f}",
                      file=sys.stderr)

    return LossToStderr()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grpo_skill.warmstart", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    make = verbs.add_parser("examples", help="worked examples (prompt, thinking, response, answer) for arithmetic rows")
    make.add_argument("--data", required=True, type=Path, help="a jsonl of arithmetic rows (prompt, answer)")
    make.add_argument("--out", required=True, type=Path)
    make.add_argument("--seed", type=int, default=0)
    make.add_argument("--recheck-mean", type=float, default=0.0,
                      help="thinking goes on with this many further checks on average (exponential): long thinking")
    make.add_argument("--recheck-max", type=int, default=30, help="at most this many further checks")
    train = verbs.add_parser("train", help="build a small Qwen3 and fine-tune all its weights on worked examples")
    train.add_argument("--examples", required=True, type=Path)
    train.add_argument("--out", required=True, type=Path)
    train.add_argument("--chat", action="store_true",
                       help="a hybrid chat template (thinking on or off), not one that opens <think>")
    train.add_argument("--thinking-off-share", type=float, default=0.5,
                       help="with --chat: share of examples rendered with enable_thinking=False")
    train.add_argument("--shape", default="small")
    train.add_argument("--steps", type=int, default=400)
    train.add_argument("--batch-size", type=int, default=64)
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.verb == "examples":
        from ..core.datafile import read_jsonl, write_jsonl

        rows = arithmetic_examples(read_jsonl(args.data), seed=args.seed, recheck_mean=args.recheck_mean,
                                   recheck_max=args.recheck_max)
        result = {"examples": str(write_jsonl(rows, args.out)), "count": len(rows)}
    else:
        print(f"warm start: {args.examples} -> {args.out}", file=sys.stderr)
        result = warm_start(args.examples, args.out, opens_think=not args.chat, shape=args.shape, steps=args.steps,
                            batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                            thinking_off_share=args.thinking_off_share if args.chat else 0.0)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
