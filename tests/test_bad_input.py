"""Bad input, case by case: every mistake a user can make ends in a short message that says what is wrong, a
non-zero exit, no traceback, and no file written or changed.

Each case starts from a fresh copy of one generated tiny project (and the empty folder around it), makes the
user's mistake, hashes every file, runs the command, and checks: the exit code, one or two lines on stderr
holding the key fact, no "Traceback", and the same hashes afterwards. CLI cases run in-process through
click's CliRunner (the same ``main`` and standalone handling as the console script); train.py's checks run
in-process through ``project.load_for_run`` (what train.py calls first), and a few cases run the real
scripts and the real console script as subprocesses.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import re
import shutil
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from grpo_skill import Preset, Reward, errors, hookimpl, plugins
from grpo_skill import project as projects
from grpo_skill.cli import main

from support import model_of_positions, run as run_process

PROMPTS = "data/prompts.jsonl"
LINE_OF = {"rewards.weight": 26, "grpo.max_steps": 42, "grpo.learning_rate": 35}  # in the tiny project


# ---- the cases ------------------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    fact: str  # the key fact the message must hold
    code: int = 1
    args: tuple = ("check", "{project}")  # CLI arguments; {project} and {tmp} are filled in
    edits: tuple = ()  # (old, new) replacements in config.toml
    files: dict = field(default_factory=dict)  # relative path (from the case folder) -> text or bytes
    plugin: object = None  # registered for the case, unregistered after
    env: dict = field(default_factory=dict)
    mode: str = "cli"  # "cli" | "load" (train.py's load_for_run in-process) | "script" (a subprocess)
    overrides: dict = field(default_factory=dict)  # mode "load": train.py's command-line overrides
    setup: Callable | None = None  # extra preparation: setup(tmp, project)
    stdout_fact: str | None = None  # for warnings: the command succeeds and prints this
    missing: tuple = ()  # modules that the case's machine has not installed, whether or not this one has


def edit(old, new):
    return ((old, new),)


def rewards_py(source):
    return {"proj/rewards.py": textwrap.dedent(source)}


# a rewards.py whose reward factory raises: `check` and `train.py` must both name the file and line
BROKEN_FACTORY = rewards_py("""\
    from grpo_skill import Reward, hookimpl


    def factory(context):
        return context.params["missing"]


    @hookimpl
    def register_rewards(register):
        register(Reward("no_repetition", factory, "broken factory", params={"ngram": 3}))
""")


def jsonl(*lines):
    return {f"proj/{PROMPTS}": "".join(line + "\n" for line in lines)}


def read_only_folder():
    """A folder this process cannot write into: /sys for root (whom permissions do not stop), else a
    folder whose write permission the case's setup removes."""
    return "/sys" if os.geteuid() == 0 else "{tmp}/locked"


def lock(tmp, project):
    if os.geteuid() != 0:
        (tmp / "locked").mkdir()
        (tmp / "locked").chmod(0o500)


# a rewards.py that `grpo-skill update` could not merge
CONFLICTED_PY = "import sys\n<<<<<<< before updating\nA = 1\n=======\nA = 2\n>>>>>>> after updating\n"

CLI_CASES = [
    Case("new-name-digit", "project name '9lives' (the last part of the path) is not allowed", args=("new", "9lives")),
    Case("new-name-space", "project name 'my run'", args=("new", "my run")),
    Case("new-name-template", "project name '{{ 7*7 }}'", args=("new", "{{ 7*7 }}")),
    Case("new-name-dash-in-path", "project name '-x'", args=("new", "a/-x")),
    # an unset shell variable (new "$NAME") would have written the project into the current folder
    Case("new-name-empty", "the project's path is empty; give a folder name", args=("new", "")),
    Case("new-path-through-a-file", "cannot create {tmp}/afile/sub: {tmp}/afile is a file, not a folder",
         args=("new", "{tmp}/afile/sub"), files={"afile": "x\n"}),
    Case("new-set-backend", 'the project would not run: model.backend = "tf" (given on the command line): must be one of',
         args=("new", "ok", "--set", 'model.backend="tf"')),
    Case("new-set-4bit", 'model.load_in_4bit = "maybe" (given on the command line): must be true or false or "auto"',
         args=("new", "ok", "--set", 'model.load_in_4bit="maybe"')),
    # TRL lists loss_type's values only in its help and refuses another at the first training step
    Case("new-set-loss-type", 'grpo.loss_type = "grpo_plus" (given on the command line): must be one of "grpo", '
         '"dr_grpo", "dapo"', args=("new", "ok", "--set", 'grpo.loss_type="grpo_plus"')),
    Case("new-preset-typo", "unknown preset 'standrd'; did you mean 'standard'?", args=("new", "ok", "-p", "standrd")),
    Case("new-reward-unknown", "unknown reward 'nonsense'", args=("new", "ok", "-r", "nonsense")),
    Case("new-reward-weight-text", "--reward 'length:heavy': write a reward as NAME or NAME:WEIGHT",
         args=("new", "ok", "-r", "length:heavy")),
    Case("new-reward-weight-empty", "--reward 'length:': write a reward as NAME or NAME:WEIGHT",
         args=("new", "ok", "-r", "length:")),
    Case("new-reward-weight-huge", "--reward 'length:1e308': a weight from -1000 to 1000",
         args=("new", "ok", "-r", "length:1e308")),
    Case("new-reward-weight-nan", "--reward 'length:nan': write a reward as NAME or NAME:WEIGHT",
         args=("new", "ok", "-r", "length:nan")),
    Case("new-reward-twice", "a reward is given twice", args=("new", "ok", "-r", "length", "-r", "length:2")),
    Case("new-dataset-missing", "--dataset missing.jsonl: no such file", args=("new", "ok", "--dataset", "missing.jsonl")),
    Case("new-dataset-hub-id", "--dataset openai/gsm8k: no such file (--dataset copies a local file into the "
         "project); for a hub dataset give --set dataset.path=openai/gsm8k", args=("new", "ok", "--dataset",
                                                                                  "openai/gsm8k")),
    Case("new-dataset-txt", "--dataset notes.txt: not a .jsonl", args=("new", "ok", "--dataset", "notes.txt"),
         files={"notes.txt": "What is 2 + 2?\n"}),
    # the file as given, not the project's copy of it (ok/data/empty.jsonl), which is never written
    Case("new-dataset-empty", "Error: empty.jsonl: no rows", args=("new", "ok", "--dataset", "empty.jsonl"),
         files={"empty.jsonl": ""}),
    Case("new-prompt-column", "column 'question' is not in prompts.jsonl",
         args=("new", "ok", "-p", "tiny", "--prompt-column", "question")),
    Case("new-accuracy-without-answers", "column 'answer' is not in prompts.jsonl",
         args=("new", "ok", "-p", "tiny", "-r", "accuracy")),
    Case("new-dataset-bad-line", "not valid JSON", args=("new", "ok", "-p", "tiny", "--dataset", "mine.jsonl"),
         files={"mine.jsonl": '{"prompt": "fine"}\n{"prompt": broken}\n'}),
    Case("new-not-empty", "is not empty; choose another name, or pass --force", args=("new", "proj", "-p", "tiny")),
    Case("new-target-is-file", "exists and is not a folder", args=("new", "afile"), files={"afile": "mine\n"}),
    Case("new-model-missing-folder", "--model ./no-model: no such folder", args=("new", "ok", "--model", "./no-model")),
    Case("new-backend-choice", "'jax' is not one of 'auto', 'unsloth', 'trl'", code=2,
         args=("new", "ok", "--backend", "jax")),
    Case("new-lang-choice", "'fr' is not one of 'en', 'zh-CN'", code=2, args=("new", "ok", "--lang", "fr")),
    Case("new-unknown-option", "No such option '--bogus'", code=2, args=("new", "ok", "--bogus")),
    Case("new-missing-path", "Missing argument 'PATH'", code=2, args=("new",)),
    Case("unknown-command", "No such command 'chekc'. Did you mean 'check'?", code=2, args=("chekc",)),
    Case("new-read-only-parent", "choose a folder you can write to",
         args=("new", read_only_folder() + "/grpo-skill-test/proj", "-p", "tiny"), setup=lock),
    Case("check-no-folder", "no such config file", args=("check", "{tmp}/nowhere")),
    Case("check-no-config", "no such config file", args=("check", "{tmp}/empty"),
         setup=lambda tmp, project: (tmp / "empty").mkdir()),
    Case("check-not-utf8", "not UTF-8 text", files={"proj/config.toml": b"[model]\nname = \"\xff\xfe\"\n"}),
    Case("check-bom", "config.toml: starts with a byte-order mark (BOM), which TOML does not allow; save it as UTF-8 "
         "without BOM", files={"proj/config.toml": b"\xef\xbb\xbf[model]\nname = \"x\"\n"}),
    # what `grpo-skill update` could not merge, left in the project: named before anything reads the file
    Case("check-conflict-train-py", "proj/train.py:2: a conflict that `grpo-skill update` left unmerged; resolve "
         "the conflicts", files={"proj/train.py": CONFLICTED_PY}),
    # check refuses them first; plan and train.py import rewards.py, which named a bare SyntaxError
    Case("plan-conflict-rewards-py", "proj/rewards.py:2: a merge conflict left unresolved; keep the lines you want",
         args=("plan", "{project}"), files={"proj/rewards.py": CONFLICTED_PY}),
    Case("script-train-conflict-rewards-py", "rewards.py:2: a merge conflict left unresolved", mode="script",
         args=("train.py", "--max-steps", "1"), files={"proj/rewards.py": CONFLICTED_PY}),
    Case("check-conflict-config", "proj/config.toml:3: a conflict that `grpo-skill update` left unmerged",
         edits=edit("[model]\n", "<<<<<<< before updating\n[model]\n=======\n>>>>>>> after updating\n")),
    Case("rewards-project-missing", "'{tmp}/nowhere' does not exist", code=2,
         args=("rewards", "--project", "{tmp}/nowhere")),
    Case("rewards-project-without-rewards-py", "{tmp}/empty has no rewards.py, so it adds no rewards of its own",
         args=("rewards", "--project", "{tmp}/empty"), setup=lambda tmp, project: (tmp / "empty").mkdir()),
    Case("metrics-no-file", "has no metrics.jsonl", args=("metrics", "{project}")),
    Case("metrics-plot-read-only", "choose a folder you can write to", setup=lock,
         args=("metrics", "{project}/outputs", "--plot", read_only_folder() + "/reward.png"),
         files={"proj/outputs/metrics.jsonl": '{"step": 1, "reward": 0.5}\n{"step": 2, "reward": 0.7}\n'}),
    Case("metrics-plot-not-png", "--plot {tmp}/reward.txt: the plot is a PNG; give a file name ending in .png",
         args=("metrics", "{project}/outputs", "--plot", "{tmp}/reward.txt"),
         files={"proj/outputs/metrics.jsonl": '{"step": 1, "reward": 0.5}\n{"step": 2, "reward": 0.7}\n'}),
    Case("metrics-plot-users-file", "that file exists and is not a plot grpo-skill metrics drew",
         args=("metrics", "{project}/outputs", "--plot", "{tmp}/reward.png"),
         files={"proj/outputs/metrics.jsonl": '{"step": 1, "reward": 0.5}\n{"step": 2, "reward": 0.7}\n',
                "reward.png": b"\x89PNG\r\n\x1a\n not a plot of ours"}),
    Case("skill-install-read-only", "choose a folder you can write to", setup=lock,
         args=("skill", "install", "--dest", read_only_folder() + "/skills")),
    Case("build-model-shape", "'huge' is not one of 'tiny', 'qwen3-4b'", code=2, args=("build-model", "--shape", "huge")),
    Case("metrics-nan-reward", "warning: 1 step logged no reward (NaN: every completion was left out", code=0,
         args=("metrics", "{project}/outputs"), stdout_fact="gain: 0.200",
         files={"proj/outputs/metrics.jsonl": '{"step": 1, "reward": 0.5}\n{"step": 2, "reward": NaN}\n'
                                              '{"step": 3, "reward": 0.7}\n'}),
    Case("metrics-empty", "warning: metrics.jsonl holds no training step yet", code=0, stdout_fact="steps: 0",
         args=("metrics", "{project}/outputs"),
         files={"proj/outputs/metrics.jsonl": "", "proj/outputs/completions.jsonl": '{"step": 60, "completion": "x"}\n'}),
    Case("plugin-new-read-only", "cannot write ", setup=lock,
         args=("plugin", "new", "my_reward", "-o", read_only_folder() + "/plugins")),
    Case("plugin-new-not-empty", "is not empty", args=("plugin", "new", "my_reward", "-o", "{tmp}"),
         files={"grpo-skill-my-reward/notes.txt": "mine\n"}),
    Case("plan-gpus-absurd", "100000 GPUs: plan estimates data-parallel training on one machine, at most 64 GPUs",
         args=("plan", "{project}", "--gpus", "100000")),
    Case("build-model-into-users-folder", "--out {tmp}/mine is not empty and holds no model built by grpo-skill",
         args=("build-model", "--out", "{tmp}/mine"), files={"mine/notes.txt": "mine\n", "mine/config.json": "{}"}),
    Case("build-model-over-another-build", "--out {tmp}/mine holds another model built by grpo-skill",
         args=("build-model", "--out", "{tmp}/mine", "--chat"),
         files={"mine/.grpo-skill-build": "0123456789ab\n", "mine/config.json": "{}"}),
    Case("build-model-read-only", "choose a folder you can write to", setup=lock,
         args=("build-model", "--out", read_only_folder() + "/model")),
    # --column beside a file's own column of that name was dropped without a word, and a repeated one's last won
    Case("rewards-try-column-clashes-with-file", "--column answer: sample 1 of {tmp}/s.jsonl has its own 'answer'; "
         "drop --column answer", args=("rewards", "try", "accuracy", "--file", "{tmp}/s.jsonl", "--column", "answer=2"),
         files={"s.jsonl": '{"completion": "It is 4.", "answer": "4"}\n'}),
    Case("rewards-try-project-and-preset", "--project and --preset: a project scores as its own preset",
         args=("rewards", "try", "length", "-c", "Hi.", "--project", "{project}", "--preset", "standard")),
    Case("rewards-try-column-twice", "--column 'answer=3': answer is given twice; give each column once",
         args=("rewards", "try", "accuracy", "-c", "3", "--column", "answer=2", "--column", "answer=3")),
    Case("rewards-try-file-binary", "samples.jsonl: not UTF-8 text (byte 1)",
         args=("rewards", "try", "length", "--file", "{tmp}/samples.jsonl"), files={"samples.jsonl": b"\x00\xff\xfe"}),
    Case("rewards-try-file-latin1", "s.jsonl: not UTF-8 text (byte 19)", args=("rewards", "try", "length", "--file", "{tmp}/s.jsonl"),
         files={"s.jsonl": '{"completion": "caf\xe9"}\n'.encode("latin-1")}),
    Case("update-answers-not-yaml", ".copier-answers.yml:2: not valid YAML", args=("update", "{project}"),
         files={"proj/.copier-answers.yml": "lang: en\n  preset: [tiny\n"}),
    Case("update-answers-binary", ".copier-answers.yml: not valid YAML", args=("update", "{project}"),
         files={"proj/.copier-answers.yml": b"\xff\xfe\x00"}),
]

CHAT_KWARGS = "# chat_template_kwargs = { enable_thinking = false }"
LORA_TARGETS = ('target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", '
                '"lm_head"]')
TYPE_CASES = [  # (id, old, new, fact)
    ("grpo-typo", "learning_rate = 0.005", "learnin_rate = 0.005", "unknown key in [grpo]; did you mean `learning_rate`?"),
    ("model-typo", "load_in_4bit = false", "load_in_4bits = false", "did you mean `load_in_4bit`?"),
    ("lora-typo", "dropout = 0.0", "dropuot = 0.0", "did you mean `dropout`?"),
    ("dataset-typo", 'prompt_column = "prompt"', 'promt_column = "prompt"', "did you mean `prompt_column`?"),
    ("rewards-typo", "weight = 1.0", "wieght = 1.0", "rewards[0].wieght = 1.0: unknown key in [rewards]; did you mean `weight`?"),
    ("key-in-wrong-table", "seed = 42", "seed = 42\nr = 8", "grpo.r = 8: not a [grpo] key: it belongs in [lora]"),
    ("key-outside-tables", "[model]", "seed = 1\n[model]", "seed = 1: is outside any table; put it under [grpo]"),
    ("unknown-table", "[grpo]", "[trainer]\nx = 1\n[grpo]", "trainer: unknown table"),
    ("table-typo", "[lora]", "[lroa]", "unknown table; did you mean [lora]?"),
    ("missing-key", "max_seq_length = 256", "", "model.max_seq_length: is missing; add it to [model]"),
    ("max-steps-text", "max_steps = 60", 'max_steps = "sixty"', 'grpo.max_steps = "sixty": must be a whole number'),
    ("max-steps-quoted", "max_steps = 60", 'max_steps = "60"', "must be a whole number (no quotes)"),
    ("max-steps-zero", "max_steps = 60", "max_steps = 0", "grpo.max_steps = 0: must be at least 1"),
    ("max-steps-negative", "max_steps = 60", "max_steps = -1", "grpo.max_steps = -1: must be at least 1"),
    ("max-steps-fraction", "max_steps = 60", "max_steps = 2.5", "grpo.max_steps = 2.5: must be a whole number"),
    ("r-quoted", "r = 16", 'r = "16"', 'lora.r = "16": must be a whole number (no quotes)'),
    ("r-zero", "r = 16", "r = 0", "lora.r = 0: must be at least 1"),
    ("alpha-zero", "alpha = 16", "alpha = 0", "lora.alpha = 0: must be greater than 0"),
    ("dropout-above-one", "dropout = 0.0", "dropout = 1.5", "lora.dropout = 1.5: must be below 1"),
    ("dropout-negative", "dropout = 0.0", "dropout = -0.1", "lora.dropout = -0.1: must be at least 0"),
    ("target-modules-number", 'target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", '
     '"down_proj", "lm_head"]', "target_modules = 5", "lora.target_modules = 5: must be a list of strings"),
    ("target-modules-numbers", '"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"',
     "1, 2", "lora.target_modules = [1, 2]: must be a list of strings"),
    ("target-modules-empty", '"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"',
     "", "lora.target_modules = []: must not be empty"),
    ("checkpointing-yes", "gradient_checkpointing = false", 'gradient_checkpointing = "yes"',
     'must be true or false or one of "unsloth", "auto"'),
    ("4bit-quoted", "load_in_4bit = false", 'load_in_4bit = "false"', 'must be true or false or "auto" (no quotes)'),
    ("max-seq-quoted", "max_seq_length = 256", 'max_seq_length = "256"', "model.max_seq_length = \"256\""),
    ("lr-negative", "learning_rate = 0.005", "learning_rate = -1e-5", "grpo.learning_rate = -1e-05: must be greater than 0"),
    ("lr-zero", "learning_rate = 0.005", "learning_rate = 0", "grpo.learning_rate = 0: must be greater than 0"),
    ("lr-nan", "learning_rate = 0.005", "learning_rate = nan", "grpo.learning_rate = nan: must be a finite number"),
    ("lr-inf", "learning_rate = 0.005", "learning_rate = inf", "grpo.learning_rate = inf: must be a finite number"),
    ("lr-quoted", "learning_rate = 0.005", 'learning_rate = "1e-5"', "must be a number (no quotes)"),
    ("beta-negative", "beta = 0.04", "beta = -0.1", "grpo.beta = -0.1: must be at least 0"),
    ("temperature-zero", "seed = 42", "seed = 42\ntemperature = 0.0", "grpo.temperature = 0.0: must be greater than 0"),
    ("generations-one", "num_generations = 8", "num_generations = 1", "grpo.num_generations = 1: must be at least 2"),
    ("batch-not-divisible", "per_device_train_batch_size = 8", "per_device_train_batch_size = 6",
     "= 6 is not divisible by num_generations = 8"),
    ("completion-too-long", "max_completion_length = 32", "max_completion_length = 256",
     "256 leaves no room for the prompt in model.max_seq_length (256)"),
    ("weight-nan", "weight = 1.0", "weight = nan", "rewards[0].weight = nan: must be a finite number"),
    ("weight-inf", "weight = 1.0", "weight = -inf", "rewards[0].weight = -inf: must be a finite number"),
    ("weight-huge", "weight = 1.0", "weight = 1e308", "rewards[0].weight = 1e+308: must be at most 1000"),
    ("weight-text", "weight = 1.0", 'weight = "heavy"', 'rewards[0].weight = "heavy": must be a number'),
    ("weight-empty", "weight = 1.0", 'weight = ""', 'rewards[0].weight = "": must be a number'),
    ("weight-bool", "weight = 1.0", "weight = true", "rewards[0].weight = true: must be a number"),
    ("reward-no-name", 'name = "thinking"\n', "", "rewards[0].name: is missing"),
    ("reward-unknown", 'name = "thinking"', 'name = "thinkng"', "unknown reward 'thinkng'; did you mean 'thinking'?"),
    ("rewards-single-brackets", "[[rewards]]", "[rewards]", "write each reward as a [[rewards]] table"),
    ("reward-twice", "weight = 1.0", 'weight = 1.0\n[[rewards]]\nname = "thinking"',
     "rewards[1].name: 'thinking' is listed twice"),
    ("reward-param-unknown", "weight = 1.0", "weight = 1.0\nparams = { think_end = 1 }",
     "reward 'thinking' has no param 'think_end'; did you mean `think_end_token`?"),
    ("reward-param-type", "weight = 1.0", "weight = 1.0\nparams = { think_end_token = 5 }",
     "rewards[0].params.think_end_token = 5: must be a string"),
    ("reward-params-not-table", "weight = 1.0", "weight = 1.0\nparams = 5", "rewards[0].params = 5: must be a table"),
    ("bf16-set", "seed = 42", "seed = 42\nbf16 = true", "grpo.bf16: set by train.py"),
    ("reward-weights-set", "seed = 42", "seed = 42\nreward_weights = [1.0]", "grpo.reward_weights: set by train.py"),
    ("optim-typo", 'optim = "adamw_torch"', 'optim = "adamw_torh"', 'did you mean "adamw_torch"?'),
    ("scheduler-typo", 'lr_scheduler_type = "constant"', 'lr_scheduler_type = "constnt"', 'did you mean "constant"?'),
    ("report-to-number", "report_to = []", "report_to = 5", "grpo.report_to = 5: must be a string"),
    ("output-dir-empty", 'output_dir = "outputs"', 'output_dir = ""',
     'grpo.output_dir = "": is the project folder or a folder above it, where a run would write over the project\'s'),
    ("output-dir-dot", 'output_dir = "outputs"', 'output_dir = "."', 'grpo.output_dir = ".": is the project folder'),
    ("output-dir-above", 'output_dir = "outputs"', 'output_dir = "outputs/../.."',
     'grpo.output_dir = "outputs/../..": is the project folder or a folder above it'),
    ("sft-output-dir-dot", 'output_dir = "outputs/sft"', 'output_dir = "./"', 'sft.output_dir = "./": is the project'),
    ("output-dir-file", 'output_dir = "outputs"', 'output_dir = "rewards.py"',
     'grpo.output_dir = "rewards.py": proj/rewards.py is a file, not a folder; name a new or empty folder'),
    ("sft-output-dir-in-a-file", 'output_dir = "outputs/sft"', 'output_dir = "data/prompts.jsonl/sft"',
     'sft.output_dir = "data/prompts.jsonl/sft": proj/data/prompts.jsonl is a file, not a folder'),
    ("sft-output-dir-is-grpos", 'output_dir = "outputs/sft"', 'output_dir = "outputs/"',
     "sft.output_dir: 'outputs/' is grpo.output_dir too, where train.py writes its own adapter and metrics over "
     "sft.py's; give sft.py a folder of its own, e.g. 'outputs/sft'"),
    ("report-to-unknown", "report_to = []", 'report_to = ["wandbb"]',
     "grpo.report_to: 'wandbb' is not a logger transformers knows; did you mean 'wandb'?"),
    ("eval-strategy", "seed = 42", 'seed = 42\neval_strategy = "steps"',
     "grpo.eval_strategy: train.py trains without an eval dataset, so there is nothing to evaluate"),
    ("load-best-model", "seed = 42", "seed = 42\nload_best_model_at_end = true",
     "grpo.load_best_model_at_end: train.py trains without an eval dataset"),
    ("resume-from-checkpoint", "seed = 42", 'seed = 42\nresume_from_checkpoint = "outputs/checkpoint-20"',
     "grpo.resume_from_checkpoint: remove it from [grpo]; to continue a run, use python train.py --resume"),
    ("python-object-field", "seed = 42", "seed = 42\nparallelism_config = 2", "cannot be set in config.toml"),
    ("auto-batch", "seed = 42", "seed = 42\nauto_find_batch_size = true", "grpo.auto_find_batch_size: GRPO needs whole groups"),
    ("scale-rewards-typo", "seed = 42", 'seed = 42\nscale_rewards = "grup"', 'did you mean "group"?'),
    ("aggregation-typo", "seed = 42", 'seed = 42\nmulti_objective_aggregation = "sum_then_normalise"',
     'did you mean "sum_then_normalize"?'),
    ("importance-level-typo", "seed = 42", 'seed = 42\nimportance_sampling_level = "sequense"',
     'did you mean "sequence"?'),
    ("cache-implementation-typo", "seed = 42", 'seed = 42\ncache_implementation = "statc"', 'did you mean "static"?'),
    ("logging-steps-fraction", "logging_steps = 1", "logging_steps = 1.5",
     "grpo.logging_steps: 1.5 is neither a share of the run's steps (below 1) nor a whole number of steps"),
    ("empty-cache-steps", "seed = 42", "seed = 42\ntorch_empty_cache_steps = 0",
     "grpo.torch_empty_cache_steps = 0: must be at least 1"),
    ("prefetch-without-workers", "seed = 42", "seed = 42\ndataloader_prefetch_factor = 2",
     "grpo.dataloader_prefetch_factor: only applies with dataloader_num_workers above 0"),
    ("generation-kwargs-temperature", "seed = 42", "seed = 42\ngeneration_kwargs = { temperature = 0.7 }",
     "grpo.generation_kwargs: temperature here would override grpo.temperature only where TRL samples, while the "
     "rest of the run reads grpo.temperature; set grpo.temperature instead"),
    ("generation-kwargs-length", "seed = 42", "seed = 42\ngeneration_kwargs = { max_new_tokens = 64 }",
     "set grpo.max_completion_length instead"),
    ("generation-kwargs-greedy", "seed = 42", "seed = 42\ngeneration_kwargs = { do_sample = false }",
     "do_sample = false samples every completion of a group alike"),
    ("kwargs-not-json", "seed = 42", 'seed = 42\ngeneration_kwargs = "abc"',
     "grpo.generation_kwargs: 'abc' is not a JSON object (Expecting value: line 1 column 1 (char 0)); write it as a "
     "TOML table instead, e.g. generation_kwargs = { name = value }"),
    ("save-best", "seed = 42", 'seed = 42\nsave_strategy = "best"',
     "grpo.save_strategy: 'best' saves on the best evaluation metric, and train.py runs no evaluation"),
    ("scheduler-on-plateau", 'lr_scheduler_type = "constant"', 'lr_scheduler_type = "reduce_lr_on_plateau"',
     "grpo.lr_scheduler_type: 'reduce_lr_on_plateau' follows evaluation results, and train.py runs no evaluation"),
    ("sync-ref-model", "seed = 42", "seed = 42\nsync_ref_model = true",
     "grpo.sync_ref_model: train.py trains a LoRA adapter, whose reference model is the base with the adapter off"),
    ("debug-typo", "seed = 42", 'seed = 42\ndebug = "underflow_overflw"',
     "grpo.debug: 'underflow_overflw' is not a debug option; did you mean 'underflow_overflow'?"),
    ("debug-evaluation-only", "seed = 42", 'seed = 42\ndebug = ["tpu_metrics_debug"]',
     "grpo.debug: 'tpu_metrics_debug' acts only when the trainer evaluates, and train.py runs no evaluation"),
    ("full-eval-precision", "seed = 42", "seed = 42\nbf16_full_eval = true",
     "grpo.bf16_full_eval: train.py trains without an eval dataset, so there is nothing to evaluate"),
    ("scheduler-kwargs-dropped", "seed = 42", "seed = 42\nlr_scheduler_kwargs = { num_cycles = 2 }",
     "grpo.lr_scheduler_kwargs: the 'constant' schedule takes no settings and transformers drops these"),
    ("scheduler-kwargs-unknown", 'lr_scheduler_type = "constant"',
     'lr_scheduler_type = "cosine"\nlr_scheduler_kwargs = { num_cycle = 2 }',
     "grpo.lr_scheduler_kwargs: the 'cosine' schedule does not take 'num_cycle' (transformers would raise a "
     "TypeError at the first step); did you mean 'num_cycles'? It takes num_cycles"),
    ("scheduler-min-lr-missing", 'lr_scheduler_type = "constant"', 'lr_scheduler_type = "cosine_with_min_lr"',
     "grpo.lr_scheduler_type: the 'cosine_with_min_lr' schedule needs exactly one of min_lr (a learning rate) or "
     "min_lr_rate"),
    ("scheduler-needs-decay-steps", 'lr_scheduler_type = "constant"', 'lr_scheduler_type = "warmup_stable_decay"',
     "the 'warmup_stable_decay' schedule needs num_decay_steps in lr_scheduler_kwargs"),
    ("scheduler-polynomial-end-above-lr", 'lr_scheduler_type = "constant"',
     'lr_scheduler_type = "polynomial"\nlr_scheduler_kwargs = { lr_end = 0.01 }',
     "grpo.lr_scheduler_kwargs: lr_end = 0.01 must be below learning_rate (0.005): the 'polynomial' schedule decays "
     "from learning_rate to lr_end, and transformers refuses it at the first step; lower lr_end"),
    ("scheduler-polynomial-default-end", 'learning_rate = 0.005\nlr_scheduler_type = "constant"',
     'learning_rate = 1e-7\nlr_scheduler_type = "polynomial"',
     "grpo.lr_scheduler_type: the 'polynomial' schedule decays from learning_rate to lr_end, 1e-07 by default, which "
     "must be below learning_rate (1e-07) (transformers refuses it at the first step); set a lower one, e.g. "
     "lr_scheduler_kwargs = { lr_end = 1e-08 }"),
    ("scheduler-decay-type-typo", 'lr_scheduler_type = "constant"',
     'lr_scheduler_type = "warmup_stable_decay"\nlr_scheduler_kwargs = { num_decay_steps = 3, decay_type = "1_sqrt" }',
     "grpo.lr_scheduler_kwargs: decay_type = \"1_sqrt\" is none of linear, cosine, 1-sqrt; did you mean '1-sqrt'?"),
    ("accelerator-config-typo", "seed = 42", "seed = 42\naccelerator_config = { split_batchez = false }",
     "grpo.accelerator_config: has no key 'split_batchez'; did you mean 'split_batches'?"),
    ("accelerator-config-string-bool", "seed = 42", 'seed = 42\naccelerator_config = { even_batches = "false" }',
     'grpo.accelerator_config: even_batches = "false" must be bool'),
    ("accelerator-config-json-string", "seed = 42", "seed = 42\naccelerator_config = '{split_batches: false}'",
     "grpo.accelerator_config: '{split_batches: false}' is not a JSON object"),
    ("accelerator-config-accumulation", "seed = 42",
     "seed = 42\naccelerator_config = { gradient_accumulation_kwargs = { num_steps = 3 } }",
     "grpo.accelerator_config: gradient_accumulation_kwargs.num_steps would replace grpo.gradient_accumulation_steps"),
    ("continuous-batching-config-alone", "seed = 42",
     "seed = 42\ntransformers_continuous_batching_config = { block_size = 32 }",
     "grpo.transformers_continuous_batching_config: is read only with use_transformers_continuous_batching = true"),
    ("continuous-batching-scheduler-typo", "seed = 42", "seed = 42\nuse_transformers_continuous_batching = true\n"
     'transformers_continuous_batching_config = { scheduler_type = "prefil_first" }',
     'grpo.transformers_continuous_batching_config: scheduler_type = "prefil_first" is none of fifo, prefill_first; '
     "did you mean 'prefill_first'?"),
    ("continuous-batching-compile-mode-typo", "seed = 42", "seed = 42\nuse_transformers_continuous_batching = true\n"
     'transformers_continuous_batching_config = { decode_compile_config = { mode = "max_autotune" } }',
     'grpo.transformers_continuous_batching_config: decode_compile_config.mode = "max_autotune" is none of default, '
     "lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune; did you mean 'max-autotune'?"),
    ("continuous-batching-compile-key-typo", "seed = 42", "seed = 42\nuse_transformers_continuous_batching = true\n"
     "transformers_continuous_batching_config = { varlen_compile_config = { fulgraph = true } }",
     "grpo.transformers_continuous_batching_config: has no key 'varlen_compile_config.fulgraph'; did you mean "
     "'fullgraph'?"),
    ("fsdp-in-grpo", "seed = 42", 'seed = 42\nfsdp = "full_shard"',
     "grpo.fsdp: train.py shards the model through accelerate's config, which it reads before the model loads; "
     "remove it and run accelerate launch --config_file accelerate/fsdp.yaml train.py"),
    ("ddp-backend-one-process", "seed = 42", 'seed = 42\nddp_backend = "gloo"',
     "grpo.ddp_backend: applies only to a launch of several processes (accelerate launch)"),
    ("deepspeed-in-grpo", "seed = 42", "seed = 42\ndeepspeed = { zero_optimization = { stage = 2 } }",
     "grpo.deepspeed: train.py runs DeepSpeed through accelerate's config, which it reads before the model loads; "
     "remove it and run accelerate launch --config_file accelerate/zero2.yaml train.py"),
    ("compile-mode-typo", "seed = 42", 'seed = 42\ntorch_compile_mode = "max_autotune"',
     'did you mean "max-autotune"?'),
    ("compile-backend-typo", "seed = 42", 'seed = 42\ntorch_compile_backend = "inductr"',
     'did you mean "inductor"?'),
    ("hub-repo-without-logging", "seed = 42", 'seed = 42\nlog_completions_hub_repo = "me/completions"',
     "grpo.log_completions_hub_repo: uploads the completions that log_completions logs; set log_completions = true"),
    ("vllm-key-without-vllm", "seed = 42", 'seed = 42\nvllm_mode = "colocate"',
     "grpo.vllm_mode: acts only where vLLM generates the completions (use_vllm = true); remove it"),
    ("vllm-clip-range", "seed = 42", "seed = 42\nuse_vllm = true\nvllm_importance_sampling_clip_min = 5.0",
     "grpo.vllm_importance_sampling_clip_min: 5.0 must be less than vllm_importance_sampling_clip_max (3.0)"),
    ("generation-batch-and-steps", "seed = 42", "seed = 42\ngeneration_batch_size = 16\nsteps_per_generation = 2",
     "set generation_batch_size or steps_per_generation, not both"),
    ("compile-4bit", "load_in_4bit = false", "load_in_4bit = true\ncompile_decoding = true",
     "model.compile_decoding: with 4-bit weights a compiled decode step was measured slower, not faster"),
    ("compile-unsloth", 'backend = "auto"', 'backend = "unsloth"\ncompile_decoding = true',
     "model.compile_decoding: Unsloth decodes with its own CUDA graphs; compile_decoding is for backend = 'trl'"),
    ("compile-layers-word", 'compile_layers = "auto"', 'compile_layers = "yes"', 'model.compile_layers = "yes"'),
    ("backend-choice", 'backend = "auto"', 'backend = "jax"', 'model.backend = "jax": must be one of "auto", "unsloth", "trl"'),
    ("preset-typo", 'preset = "tiny"', 'preset = "tinny"', "unknown preset 'tinny'; did you mean 'tiny'?"),
    ("preset-unknown", 'preset = "tiny"', 'preset = "enormous"', "unknown preset 'enormous'; choose one of: standard,"),
    ("model-name-empty", 'name = "grpo-skill/tiny-qwen3"', 'name = ""', 'model.name = "": must not be an empty string'),
    ("model-folder-missing", 'name = "grpo-skill/tiny-qwen3"', 'name = "./models/mine"', "no model folder"),
    ("model-not-a-hub-id", 'name = "grpo-skill/tiny-qwen3"', 'name = "my model!"', "is neither a model folder nor a hub id"),
    ("adapter-missing", "load_in_4bit = false", 'load_in_4bit = false\nadapter = "sft-out"', "no LoRA adapter in"),
    ("dataset-missing", 'path = "data/prompts.jsonl"', 'path = "data/missing.jsonl"', "missing.jsonl does not exist"),
    ("dataset-txt", 'path = "data/prompts.jsonl"', 'path = "data/prompts.txt"', ".txt files cannot be read"),
    ("dataset-split", 'split = "train"', 'split = "test"', "a local file has one split, 'train'"),
    ("system-prompt-number", 'system_prompt = ""', "system_prompt = 5", "dataset.system_prompt = 5: must be a string"),
    ("chat-kwargs-number", 'system_prompt = ""', 'system_prompt = ""\nchat_template_kwargs = 3',
     "dataset.chat_template_kwargs = 3: must be a table"),
    ("sft-unknown-key", "[sft]\n", "[sft]\nepochs = 1\n", "sft.epochs = 1: unknown key"),
    ("sft-set-by-sft-py", "[sft]\n", '[sft]\nsave_strategy = "steps"\n',
     "sft.save_strategy: set by sft.py (it saves the adapter once, at the end); remove it from [sft]"),
    ("sft-response-column", 'response_column = "response"', 'response_column = "answer"',
     "sft.response_column: column 'answer' is not in sft.jsonl (it has: prompt, response, thinking); fix the name"),
    ("epochs-and-steps", "seed = 42", "seed = 42\nnum_train_epochs = 2",
     "grpo.num_train_epochs: max_steps (set too) decides the run's length and transformers ignores num_train_epochs"),
    ("weights-all-zero", "weight = 1.0", "weight = 0.0", "rewards[0].weight: every [[rewards]] weight is 0, so every "
     "completion scores 0 and GRPO has nothing to learn from"),
    ("grpo-chat-template-kwargs", "seed = 42", "seed = 42\nchat_template_kwargs = { enable_thinking = false }",
     "grpo.chat_template_kwargs: train.py gives TRL its prompts already rendered by the chat template, so TRL never "
     "reads these; move them to [dataset] chat_template_kwargs"),
    # read from the model's files (the tiny preset's, built here), as train.py reads them before or after it loads
    ("chat-kwargs-render-argument", CHAT_KWARGS, "chat_template_kwargs = { add_generation_prompt = false }",
     "dataset.chat_template_kwargs: add_generation_prompt is set by grpo-skill when it renders each prompt"),
    ("lora-target-missing", LORA_TARGETS, 'target_modules = ["q_proj", "nonexistent_proj"]',
     "lora.target_modules: 'nonexistent_proj' matches no module of this model; its linear layers: down_proj, "
     "gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj"),
    ("toml-syntax", "[lora]", "[lora", "not valid TOML"),
    ("toml-duplicate-key", "r = 16", "r = 16\nr = 8", "not valid TOML: Cannot overwrite a value"),
]
COMPILE_LAYERS = ('compile_layers = "auto"', "compile_layers = true")
CONFIG_CASES = [Case(f"config-{name}", fact, edits=edit(old, new)) for name, old, new, fact in TYPE_CASES] + [
    # [sft] is optional: its missing examples are named, and only sft.py stops (test_sft)
    Case("config-sft-examples-missing", "sft.path: data/none.jsonl does not exist: sft.py (the optional warm start) "
         "would stop there; train.py does not read it", code=0, stdout_fact="OK",
         edits=edit('path = "data/sft.jsonl"', 'path = "data/none.jsonl"')),
    # read from the model's files: named, not refused (a preset's kwargs may meet another model's template)
    Case("config-chat-kwargs-typo", "warning: proj/config.toml:27: dataset.chat_template_kwargs: the model's chat "
         "template never reads 'enable_thinkin', so it changes nothing; did you mean 'enable_thinking'? It reads: "
         "enable_thinking", code=0, stdout_fact="OK",
         edits=edit(CHAT_KWARGS, "chat_template_kwargs = { enable_thinkin = false }")),
    Case("config-compile-layers-unsloth", "model.compile_layers: Unsloth trains with its own kernels; compile_layers "
         "is for backend = 'trl' or 'auto'", edits=(COMPILE_LAYERS, ('backend = "auto"', 'backend = "unsloth"'))),
    Case("config-compile-layers-and-whole-model", "model.compile_layers: [grpo] torch_compile already compiles the "
         "whole model; remove one of the two", edits=(COMPILE_LAYERS, ("seed = 42", "seed = 42\ntorch_compile = true"))),
    Case("config-compile-layers-older-train-py", "model.compile_layers: this project's train.py was made by an older "
         "grpo-skill and compiles no layers; run `grpo-skill update`", files={"proj/train.py": "# an older train.py\n"}),
    Case("config-report-to-not-installed", "grpo.report_to: 'wandb' is not installed; pip install wandb, or remove "
         "it from report_to", edits=edit("report_to = []", 'report_to = ["wandb"]'), missing=("wandb",)),
    Case("config-report-to-string-not-installed", "'tensorboard' is not installed; pip install tensorboard",
         edits=edit("report_to = []", 'report_to = "tensorboard"'), missing=("tensorboard", "tensorboardX")),
    Case("config-liger-not-installed", "grpo.use_liger_kernel: liger-kernel is not installed; pip install "
         "'grpo-skill[liger]'", edits=edit("seed = 42", "seed = 42\nuse_liger_kernel = true"),
         missing=("liger_kernel",)),
    Case("config-use-vllm-not-installed", "grpo.use_vllm: vllm is not installed; pip install vllm",
         edits=edit("seed = 42", "seed = 42\nuse_vllm = true"), missing=("vllm",)),
    Case("config-fast-continuous-batching", "model.generation: with use_transformers_continuous_batching, "
         "transformers' continuous batching generates the completions, not the copy",
         edits=(('generation = "auto"', 'generation = "fast"'),
                ("seed = 42", "seed = 42\nuse_transformers_continuous_batching = true"))),
    Case("config-compile-decoding-dynamic-cache", "grpo.cache_implementation: compile_decoding decodes with a static "
         "KV cache", edits=(("load_in_4bit = false", "load_in_4bit = false\ncompile_decoding = true"),
                            ("seed = 42", 'seed = 42\ncache_implementation = "dynamic"'))),
    Case("config-deepspeed-file-on-a-launch", "grpo.deepspeed: train.py runs DeepSpeed through accelerate's config",
         args=("check", "{project}", "--gpus", "2"), edits=edit("seed = 42", 'seed = 42\ndeepspeed = "ds.json"'),
         files={"proj/ds.json": '{"zero_optimization": {"stage": 3}}'}),
    # transformers opens a relative path from the folder train.py runs in (here the case folder, which has one)
    Case("config-accelerator-config-path-missing", "grpo.accelerator_config: no file {project}/accel.json (a path in "
         "config.toml is read from the project folder); point it at accelerate's JSON file",
         edits=edit("seed = 42", 'seed = 42\naccelerator_config = "accel.json"'),
         files={"accel.json": '{"split_batches": false}'}),
    Case("config-accelerator-config-file-typo", "grpo.accelerator_config: has no key 'split_batchez'; did you mean "
         "'split_batches'?", edits=edit("seed = 42", 'seed = 42\naccelerator_config = "accel.json"'),
         files={"proj/accel.json": '{"split_batchez": false}'}),
    Case("config-accelerator-config-file-not-json", "grpo.accelerator_config: {project}/accel.json is not a JSON "
         "object (a JSON list, not an object); fix the file",
         edits=edit("seed = 42", 'seed = 42\naccelerator_config = "accel.json"'), files={"proj/accel.json": "[]"}),
    Case("config-chat-kwargs-the-template-reads", "", code=0, stdout_fact="OK",
         edits=edit(CHAT_KWARGS, "chat_template_kwargs = { enable_thinking = false }")),
    Case("config-learning-rate-far-too-high", "grpo.learning_rate = 50.0: far above what LoRA runs use, and likely to "
         "diverge (a NaN loss) within a few steps; GRPO with LoRA trains at 1e-6 to 1e-4", code=0, stdout_fact="OK",
         edits=edit("learning_rate = 0.005", "learning_rate = 50.0")),
    # a penalty alone is allowed, and named: with -r thinking:-1 the run learns never to close its thinking
    Case("config-rewards-all-negative", "rewards[0].weight: every [[rewards]] weight is 0 or negative: the run "
         "learns to score low on each of them", code=0, stdout_fact="OK", edits=edit("weight = 1.0", "weight = -1.0")),
    Case("config-rewards-empty", "rewards = []: must not be empty",
         edits=(('[[rewards]]\nname = "thinking"\nweight = 1.0\n', ""), ("[model]", "rewards = []\n[model]"))),
]


def model_folder_without_config(tmp, project):
    (project / "not-a-model").mkdir()
    (project / "not-a-model" / "weights.bin").write_text("x")


def adapter_folder(tmp, project):
    (project / "adapter").mkdir()
    (project / "adapter" / "adapter_config.json").write_text("{}")


def offline(**extra):
    return {"HF_HUB_OFFLINE": "1", **extra}


HUB_MODEL = 'name = "grpo-skill-tests/not-downloaded"'
MODEL_CASES = [
    Case("model-folder-without-config", "has no config.json, so it is not a model folder; give model.name a model "
         "folder (a relative path is read from the project folder) or a hub id",
         edits=edit('name = "grpo-skill/tiny-qwen3"', 'name = "not-a-model"'), setup=model_folder_without_config),
    Case("model-is-an-adapter", "is a LoRA adapter, not a model; set model.adapter",
         edits=edit('name = "grpo-skill/tiny-qwen3"', 'name = "adapter"'), setup=adapter_folder),
    Case("check-hub-offline", "is not in the Hugging Face cache and the hub is offline (HF_HUB_OFFLINE is set); use "
         "model.name = a local folder, or download it where there is a network",
         edits=edit('name = "grpo-skill/tiny-qwen3"', HUB_MODEL), env=offline()),
    Case("check-model-not-here", "the model is not on this machine, so the prompts' lengths, "
         "dataset.chat_template_kwargs and lora.target_modules were not checked against it", code=0,
         stdout_fact="OK", edits=edit('name = "grpo-skill/tiny-qwen3"', HUB_MODEL)),
    # train.py refuses a folder of the user's own files for its run; set and check passed it
    Case("set-output-dir-of-the-users-files", "grpo.output_dir = \"data\" (given on the command line): prompts.jsonl, "
         "sft.jsonl there are not a run's; train.py would refuse the folder", args=("set", "--project", "{project}", "grpo.output_dir=data")),
    # the trainer makes its hub repo after the model has loaded: offline or without a token it stopped there
    Case("check-push-to-hub-offline", "grpo.push_to_hub = true, but HF_HUB_OFFLINE is set: the trainer cannot make or "
         "push to its hub repo offline", edits=edit("seed = 42", "seed = 42\npush_to_hub = true"), env=offline()),
    Case("check-push-to-hub-without-token", "grpo.push_to_hub = true, but no Hugging Face token is set", code=0,
         stdout_fact="OK", edits=edit("seed = 42", "seed = 42\npush_to_hub = true"), env={"HF_TOKEN": None}),
    # tiny's model exists only as a local build: under another preset its name was read as a hub id to download
    Case("set-preset-keeps-a-built-model", "'grpo-skill/tiny-qwen3' is the tiny preset's model, built on this machine "
         "for that preset only; with preset standard, set model.name to its model (unsloth/Qwen3-4B-unsloth-bnb-4bit)",
         args=("set", "--project", "{project}", "model.preset=standard")),
    # check reads local files only: a hub dataset's columns are named as not checked (it said OK and nothing else)
    Case("check-hub-dataset-not-read", "dataset 'grpo-skill-tests/not-downloaded' is a hub dataset, so its rows and "
         "columns (prompt) were not checked; train.py checks them once it has downloaded it", code=0,
         stdout_fact="OK", edits=edit('path = "data/prompts.jsonl"', 'path = "grpo-skill-tests/not-downloaded"')),
]

DATASET_CASES = [
    Case("jsonl-broken-line", "data/prompts.jsonl:2: not valid JSON",
         files=jsonl('{"prompt": "a"}', '{"prompt": "b",}', '{"prompt": "c"}')),
    Case("jsonl-array-line", "data/prompts.jsonl:1: each line must be one JSON object", files=jsonl('["a", "b"]')),
    Case("jsonl-empty", "data/prompts.jsonl: no rows", files=jsonl()),
    Case("dataset-folder", "dataset.path: {project}/data is a folder; give a .jsonl, .json, .csv or .parquet file",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data"')),
    Case("train-dataset-folder", "is a folder; give a .jsonl, .json, .csv or .parquet file", mode="load",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/"')),
    # a local file of another extension: datasets took it for a hub id, and train.py said it was not in the cache
    Case("dataset-file-of-no-known-kind", "data/prompts.JSONL is not a .jsonl, .json, .csv or .parquet file; rename it",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.JSONL"'),
         files={"proj/data/prompts.JSONL": '{"prompt": "Hi"}\n'}),
    # a file that is no TOML file was read as a broken config, its first line named as the thing to fix
    Case("set-project-names-no-config", "README.md is not a config file (a project's config.toml)",
         args=("set", "--project", "{project}/README.md", "grpo.max_steps=5")),
    Case("set-dataset-file-of-no-known-kind", "data/prompts is not a .jsonl, .json, .csv or .parquet file; rename it",
         args=("set", "--project", "{project}", "dataset.path=data/prompts"),
         files={"proj/data/prompts": '{"prompt": "Hi"}\n'}),
    # train.py counts each prompt with the model's tokenizer before the model loads (the tiny preset's, built here)
    Case("check-prompt-too-long", "model.max_seq_length (256) is below the longest prompt (",
         files=jsonl('{"prompt": "Hi"}', json.dumps({"prompt": "word " * 400}))),
    Case("jsonl-row-without-prompt", "data/prompts.jsonl:3: this row has no 'prompt'",
         files=jsonl('{"prompt": "a"}', "", '{"question": "b"}')),
    Case("jsonl-prompt-empty", "data/prompts.jsonl:2: 'prompt' is empty; give every row a prompt",
         files=jsonl('{"prompt": "Hi"}', '{"prompt": ""}')),
    Case("jsonl-prompt-blank-new", "mine.jsonl:1: 'prompt' is empty", args=("new", "ok", "-p", "tiny", "--dataset", "mine.jsonl"),
         files={"mine.jsonl": '{"prompt": "  "}\n'}),
    Case("train-prompt-empty", "data/prompts.jsonl:1: 'prompt' is empty", mode="load", files=jsonl('{"prompt": ""}')),
    Case("jsonl-prompt-not-text", "data/prompts.jsonl:1: 'prompt' must be text, not 42", files=jsonl('{"prompt": 42}')),
    Case("jsonl-not-utf8", "not UTF-8 text", files={f"proj/{PROMPTS}": b'{"prompt": "caf\xe9"}\n'}),
    Case("csv-extra-field", "data/prompts.csv:3: 3 fields where the header has 2",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.csv"'),
         files={"proj/data/prompts.csv": "prompt,answer\nWhat is 1+1?,2\nWhat is 2+2?,4,extra\n"}),
    Case("csv-open-quote", "data/prompts.csv:2: not valid CSV",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.csv"'),
         files={"proj/data/prompts.csv": 'prompt\n"never closed\n'}),
    Case("csv-missing-column", "column 'prompt' is not in prompts.csv (it has: question)",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.csv"'),
         files={"proj/data/prompts.csv": "question\nWhat is 1+1?\n"}),
    Case("json-broken", "data/prompts.json:1: not valid JSON",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.json"'),
         files={"proj/data/prompts.json": '[{"prompt": "a"'}),
    Case("json-not-rows", "must hold a list of objects",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.json"'),
         files={"proj/data/prompts.json": '"just a string"'}),
    Case("parquet-garbage", "data/prompts.parquet: not a Parquet file",
         edits=edit('path = "data/prompts.jsonl"', 'path = "data/prompts.parquet"'),
         files={"proj/data/prompts.parquet": "this is not parquet"}),
    Case("accuracy-without-answer-column", "accuracy reward's answer_column: column 'answer' is not in prompts.jsonl",
         edits=edit('name = "thinking"', 'name = "accuracy"')),
    Case("cosine-length-without-answer-column",
         "cosine_length reward's answer_column: column 'solution' is not in prompts.jsonl",
         edits=edit('weight = 1.0', 'weight = 1.0\nparams = { answer_column = "solution" }')
         + edit('name = "thinking"', 'name = "cosine_length"')),
    Case("llm-judge-without-reference-column",
         "llm_judge reward's reference_column: column 'reference' is not in prompts.jsonl",
         edits=edit('weight = 1.0', 'weight = 1.0\nparams = { reference_column = "reference" }')
         + edit('name = "thinking"', 'name = "llm_judge"')),
]

REWARDS_PY_CASES = [
    Case("rewards-py-syntax", "rewards.py:3: SyntaxError", args=("check", "{project}"),
         files=rewards_py("from grpo_skill import hookimpl\n\ndef broken(:\n    pass\n")),
    Case("rewards-py-syntax-unrun", "rewards.py:2: SyntaxError", files=rewards_py("x = 1\nif x\n"),
         args=("check", "{project}", "--no-rewards")),
    Case("rewards-py-name-in-a-variable", "rewards.py names its rewards in code, so 'mine' could not be checked "
         "without running it; `grpo-skill check` without --no-rewards runs it", code=0, stdout_fact="OK",
         args=("check", "{project}", "--no-rewards"),
         edits=edit("[grpo]", '[[rewards]]\nname = "mine"\n\n[grpo]'), files=rewards_py("""\
             from grpo_skill import Reward as R, hookimpl

             NAME = "mine"


             @hookimpl
             def register_rewards(register):
                 register(R(NAME, lambda context: None, "from a variable"))
         """)),
    Case("rewards-py-names-in-a-loop", "so 'loop_b' could not be checked", code=0, stdout_fact="OK",
         args=("check", "{project}", "--no-rewards"),
         edits=edit("[grpo]", '[[rewards]]\nname = "loop_b"\n\n[grpo]'), files=rewards_py("""\
             import grpo_skill


             @grpo_skill.hookimpl
             def register_rewards(register):
                 for name in ("loop_a", "loop_b"):
                     register(grpo_skill.Reward(name, lambda context: None, "one of two"))
         """)),
    Case("rewards-py-name-in-code-run", "unknown reward 'mine'", args=("check", "{project}"),
         edits=edit("[grpo]", '[[rewards]]\nname = "mine"\n\n[grpo]'), files=rewards_py("""\
             from grpo_skill import Reward, hookimpl

             NAME = "not_mine"


             @hookimpl
             def register_rewards(register):
                 register(Reward(NAME, lambda context: None, "registers another name"))
         """)),
    Case("reward-param-auto-not-a-number", "template_opens_think = 3: must be \"auto\", true, false or a string",
         edits=edit("[grpo]", '[[rewards]]\nname = "think_format"\nparams = { template_opens_think = 3 }\n\n[grpo]')),
    Case("check-rewards-builds-every-reward", "judge backend 'http' has no setting 'urll'",
         args=("check", "{project}"),
         edits=edit("[grpo]", '[[rewards]]\nname = "llm_judge"\nparams = { judge = { urll = "http://x" } }\n\n[grpo]')),
    Case("rewards-py-import", "rewards.py:1: ModuleNotFoundError: No module named 'no_such_module'",
         args=("check", "{project}"), files=rewards_py("import no_such_module\n")),
    Case("rewards-py-name-error", "rewards.py:3: NameError: name 'undefined_thing' is not defined",
         args=("check", "{project}"), files=rewards_py("import os\n\nundefined_thing.call()\n")),
    Case("rewards-py-hook-raises", "rewards.py:6: RuntimeError: not today", args=("check", "{project}"),
         files=rewards_py("""\
             from grpo_skill import hookimpl


             @hookimpl
             def register_rewards(register):
                 raise RuntimeError("not today")
         """)),
    Case("rewards-py-registers-junk", "rewards.py:6: register() got 'no_repetition', expected a Reward",
         args=("check", "{project}"), files=rewards_py("""\
             from grpo_skill import hookimpl


             @hookimpl
             def register_rewards(register):
                 register("no_repetition")
         """)),
    Case("rewards-py-hook-typo", "rewards.py': unknown hook 'register_reward' (did you mean 'register_rewards'?)", args=("check", "{project}"),
         files=rewards_py("""\
             from grpo_skill import hookimpl


             @hookimpl
             def register_reward(register):
                 pass
         """)),
    Case("rewards-py-clash-used", "'length' is registered by both 'builtin:seed' and 'proj/rewards.py'",
         args=("check", "{project}"), edits=edit('name = "thinking"', 'name = "length"'),
         files=rewards_py("""\
             from grpo_skill import Reward, hookimpl


             @hookimpl
             def register_rewards(register):
                 register(Reward("length", lambda context: None, "mine"))
         """)),
    Case("check-reward-factory-raises", "reward 'no_repetition' (plugin proj/rewards.py) could not be built: "
         "proj/rewards.py:5: KeyError: 'missing'", edits=edit('name = "thinking"', 'name = "no_repetition"'),
         files=BROKEN_FACTORY),
    Case("check-own-reward-param-typo", "reward 'no_repetition' has no param 'ngrm'; did you mean `ngram`?",
         edits=edit('name = "thinking"', 'name = "no_repetition"\nparams = { ngrm = 4 }')),
    # the template's own reward refuses a word n-gram of fewer than 1 word, as the built-in rewards refuse theirs
    Case("check-own-reward-ngram-0", "reward 'no_repetition' (plugin proj/rewards.py): params.ngram must be a whole "
         "number from 1 up (got 0)", edits=edit('name = "thinking"', 'name = "no_repetition"\nparams = { ngram = 0 }')),
    Case("new-own-reward-ngram-negative", "the project would not run: reward 'no_repetition' (plugin ok/rewards.py): "
         "params.ngram must be a whole number from 1 up (got -2)",
         args=("new", "ok", "-p", "tiny", "-r", "no_repetition", "--param", "no_repetition.ngram=-2")),
    # a built-in reward's factory checks its params in `new` as in `check`, before a project is written
    Case("new-builtin-reward-param-refused", "the project would not run: reward 'reasoning_steps' (plugin "
         "builtin:shaping): params.min_steps must be a whole number from 1 up (got 0)",
         args=("new", "ok", "-p", "tiny", "-r", "reasoning_steps", "--param", "reasoning_steps.min_steps=0")),
    # language's factory loads py3langid's model for its language codes: `new` checks the other params without it
    Case("new-language-part-refused", "the project would not run: reward 'language' (plugin builtin:shaping): "
         "params.part = 'bogus': use \"all\", \"thinking\" or \"answer\"",
         args=("new", "ok", "-p", "tiny", "-r", "language", "--param", 'language.part="bogus"')),
    # an empty think_end_token is refused by the factory: every text holds it (str.split refused it at the first call)
    Case("new-kimi-length-empty-think-end", "the project would not run: reward 'kimi_length' (plugin "
         "builtin:verifiable): params.think_end_token \"\" holds no text",
         args=("new", "ok", "-p", "tiny", "-r", "kimi_length", "--dataset", "qa.jsonl", "--param",
               'kimi_length.think_end_token=""'), files={"qa.jsonl": '{"prompt": "6 x 7?", "answer": "42"}\n'}),
    Case("check-cosine-length-empty-think-end", "reward 'cosine_length' (plugin builtin:verifiable): "
         "params.think_end_token \"\" holds no text",
         edits=edit('name = "thinking"', 'name = "cosine_length"\nparams = { think_end_token = "" }'),
         files={"proj/data/prompts.jsonl": '{"prompt": "6 x 7?", "answer": "42"}\n'}),
    # a reward param that defaults to the budget follows the project's [grpo] max_completion_length, not the preset's
    Case("check-budget-follows-grpo", "params.soft_punish_cache = 30 must be between 1 and max_completion_len (24)",
         edits=(("max_completion_length = 32", "max_completion_length = 24"),
                ("[grpo]", '[[rewards]]\nname = "soft_overlong"\nparams = { soft_punish_cache = 30 }\n\n[grpo]'))),
    Case("rewards-project-listing-broken", "rewards.py:1: ZeroDivisionError: division by zero",
         args=("rewards", "--project", "{project}"), files=rewards_py("1 / 0\n")),
    Case("rewards-try-reward-raises", "raised on a batch starting with 'Hi.': proj/rewards.py:5: ZeroDivisionError",
         args=("rewards", "try", "crashes", "-c", "Hi.", "--project", "{project}"), files=rewards_py("""\
             from grpo_skill import Reward, hookimpl


             def crashes(completions, **kwargs):
                 return [1 / 0 for completion in completions]


             @hookimpl
             def register_rewards(register):
                 register(Reward("crashes", lambda context: crashes, "divides by zero"))
         """)),
]


class ClashingPlugin:
    @hookimpl
    def register_rewards(self, register):
        register(Reward("format", lambda context: None, "a second 'format'"))


class RaisingPlugin:
    @hookimpl
    def register_rewards(self, register):
        register(Reward("only_here", lambda context: None, "lost with the failing hook"))
        raise KeyError("api_key")


class RecursingPresets:
    @hookimpl
    def register_presets(self, register):
        plugins.get_preset("tiny")


class OrphanPreset:
    @hookimpl
    def register_presets(self, register):
        register(plugins.derive_preset("no-such-base", "orphan"))


class BadPreset:
    @hookimpl
    def register_presets(self, register):
        register(Preset(name="odd-batch", description="a batch that is not a multiple of G", model_id="x/y",
                        max_seq_length=256, load_in_4bit=False, rewards=(("thinking", 1.0),),
                        grpo={"num_generations": 4, "max_completion_length": 32, "per_device_train_batch_size": 3}))


PLUGIN_CASES = [
    Case("plugin-clash-used", "reward 'format' is registered by both 'builtin:seed' and 'test-plugin'",
         plugin=ClashingPlugin(), edits=edit('name = "thinking"', 'name = "format"')),
    Case("plugin-clash-new", "reward 'format' is registered by both", plugin=ClashingPlugin(),
         args=("new", "ok", "-r", "format")),
    Case("plugin-clash-listed", "warning: reward 'format' is registered by both", code=0, plugin=ClashingPlugin(),
         args=("rewards",), stdout_fact="thinking"),
    Case("plugin-hook-raises-used", "unknown reward 'only_here'", plugin=RaisingPlugin(),
         edits=edit('name = "thinking"', 'name = "only_here"')),
    Case("plugin-hook-raises-listed", "warning: plugin 'test-plugin' failed in register_rewards", code=0,
         plugin=RaisingPlugin(), args=("rewards",), stdout_fact="thinking"),
    Case("plugin-hook-raises-plugins", "", code=0, plugin=RaisingPlugin(), args=("plugins", "--json"),
         stdout_fact="KeyError: 'api_key'"),
    Case("plugin-get-preset-in-hook", "get_preset() was called while presets are being registered", code=0,
         plugin=RecursingPresets(), args=("presets",), stdout_fact="tiny"),
    Case("plugin-orphan-derivation", "unknown preset 'orphan'", plugin=OrphanPreset(), args=("new", "ok", "-p", "orphan")),
    Case("plugin-bad-preset", "the project would not run", plugin=BadPreset(), args=("new", "ok", "-p", "odd-batch")),
]

LOAD_CASES = [  # train.py's first call, in-process, with the overrides its flags make
    Case("train-max-steps-zero", "grpo.max_steps = 0 (given on the command line): must be at least 1", mode="load",
         overrides={"grpo.max_steps": 0}),
    Case("train-max-steps-negative", "grpo.max_steps = -1 (given on the command line): must be at least 1",
         mode="load", overrides={"grpo.max_steps": -1}),
    Case("train-model-missing", "no model folder /no/such/model; pass --model PATH to a model folder, or give a hub id",
         mode="load",
         overrides={"model.name": "/no/such/model"}),  # train.py's flag; `set` names model.name instead
    Case("train-backend", 'model.backend = "jax" (given on the command line)', mode="load",
         overrides={"model.backend": "jax"}),
    Case("train-hub-offline", "is not in the Hugging Face cache and the hub is offline (HF_HUB_OFFLINE is set)",
         mode="load", overrides={"model.name": "grpo-skill-tests/not-downloaded"}, env=offline()),
    Case("train-hub-unreachable", "is not in the Hugging Face cache and the hub is offline (127.0.0.1 cannot be reached)",
         mode="load", overrides={"model.name": "grpo-skill-tests/not-downloaded"},
         env={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": None}),
    Case("train-hub-dataset-offline", "dataset 'grpo-skill-tests/no-data' is not in the Hugging Face cache",
         mode="load", edits=edit('path = "data/prompts.jsonl"', 'path = "grpo-skill-tests/no-data"'), env=offline()),
    Case("train-hub-typo", "model 'owner/missing-model' is not on the hub: check the name", mode="load",
         overrides={"model.name": "owner/missing-model"}, env={"HF_ENDPOINT": "{hub}", "HF_HUB_OFFLINE": None}),
    Case("train-hub-gated", "model 'owner/gated-model' is gated: accept its terms", mode="load",
         overrides={"model.name": "owner/gated-model"}, env={"HF_ENDPOINT": "{hub}", "HF_HUB_OFFLINE": None}),
    Case("train-hub-dataset-typo", "dataset 'owner/missing-data' is not on the hub", mode="load",
         edits=edit('path = "data/prompts.jsonl"', 'path = "owner/missing-data"'),
         env={"HF_ENDPOINT": "{hub}", "HF_HUB_OFFLINE": None}),
    Case("train-typo", "did you mean `learning_rate`?", mode="load", edits=edit("learning_rate", "learnin_rate")),
    Case("train-report-to-not-installed", "grpo.report_to: 'wandb' is not installed", mode="load",
         edits=edit("report_to = []", 'report_to = ["wandb"]'), missing=("wandb",)),
    Case("train-output-dir-project", 'grpo.output_dir = "{project}" (given on the command line): is the project '
         "folder or a folder above it", mode="load", overrides={"grpo.output_dir": "{project}"}),
    Case("train-output-dir-dot", 'grpo.output_dir = "." (given on the command line): is the project folder',
         mode="load", overrides={"grpo.output_dir": "."}),
    Case("train-eval-strategy", "grpo.eval_strategy: train.py trains without an eval dataset", mode="load",
         edits=edit("seed = 42", 'seed = 42\neval_strategy = "epoch"')),
    Case("train-broken-rewards-py", "rewards.py:1: ZeroDivisionError", mode="load", files=rewards_py("1 / 0\n")),
    Case("train-accelerator-config-path-missing", "grpo.accelerator_config: no file {project}/accel.json", mode="load",
         edits=edit("seed = 42", 'seed = 42\naccelerator_config = "accel.json"'),
         files={"accel.json": '{"split_batches": false}'}),
    Case("train-reward-factory-raises", "reward 'no_repetition' (plugin proj/rewards.py) could not be built: "
         "proj/rewards.py:5: KeyError: 'missing'; check its params", mode="build",
         edits=edit('name = "thinking"', 'name = "no_repetition"'),
         files=BROKEN_FACTORY),
]

SCRIPT_CASES = [  # the real scripts and console script, as a user runs them
    Case("script-train-max-steps", "error: grpo.max_steps = 0 (given on the command line): must be at least 1",
         mode="script", args=("train.py", "--max-steps", "0")),
    Case("script-train-max-steps-text", "argument --max-steps: invalid int value: 'sixty'", code=2, mode="script",
         args=("train.py", "--max-steps", "sixty")),
    Case("script-train-config-typo", "error: config.toml:40: grpo.learnin_rate = 0.005: unknown key", mode="script",
         args=("train.py",), edits=edit("learning_rate", "learnin_rate")),
    Case("script-train-hub-offline", "error: model.name (given on the command line): model 'Qwen/Qwen3-4B' is not in "
         "the Hugging Face cache and the hub is offline (HF_HUB_OFFLINE is set); use --model PATH", mode="script",
         args=("train.py", "--model", "Qwen/Qwen3-4B"), env=offline(HF_HOME="{tmp}/hf-home")),
    Case("script-train-hub-typo", "error: model.name (given on the command line): model 'owner/missing-model' is not "
         "on the hub", mode="script", args=("train.py", "--model", "owner/missing-model"),
         env={"HF_ENDPOINT": "{hub}", "HF_HUB_OFFLINE": None, "HF_HOME": "{tmp}/hf-home"}),
    Case("script-train-output-dir-dot", 'error: grpo.output_dir = "." (given on the command line): is the project '
         "folder", mode="script", args=("train.py", "--output-dir", ".")),
    Case("script-train-output-dir-file", 'error: grpo.output_dir = "config.toml" (given on the command line): '
         "config.toml is a file, not a folder", mode="script", args=("train.py", "--output-dir", "config.toml")),
    # a folder of the user's: the trainer's model card would replace their README.md, and --overwrite, which removes
    # a run's files by name, their summary.json
    Case("script-train-output-dir-users-folder", "error: {project}/mine is not empty and holds no run (README.md); "
         "a run writes its files there", mode="script", args=("train.py", "--max-steps", "1", "--output-dir", "mine"),
         files={"proj/mine/README.md": "my notes\n"}),
    Case("script-train-overwrite-users-summary", "error: {project}/mine is not empty and holds no run (summary.json)",
         mode="script", args=("train.py", "--max-steps", "1", "--output-dir", "mine", "--overwrite"),
         files={"proj/mine/summary.json": '{"accuracy": 0.9}'}),
    Case("script-train-resume-users-folder", "error: {project}/mine is not empty and holds no run (metrics.jsonl)",
         mode="script", args=("train.py", "--max-steps", "1", "--output-dir", "mine", "--resume"),
         files={"proj/mine/metrics.jsonl": '{"epoch": 1, "loss": 0.5}\n'}),
    Case("script-sft-output-dir-users-folder", "error: {project}/mine is not empty and holds no run (notes.txt); a run "
         "writes its files there (README.md, adapter, ...) over any of the same name: choose a new or empty folder "
         "with sft.output_dir in config.toml", mode="script", args=("sft.py", "--max-steps", "1"),
         edits=edit('output_dir = "outputs/sft"', 'output_dir = "mine"'), files={"proj/mine/notes.txt": "mine\n"}),
    Case("script-train-output-dir-is-sfts", "error: grpo.output_dir (given on the command line): 'outputs/sft' is "
         "sft.output_dir, where sft.py's adapter is: train.py would write its own over it; choose another folder",
         mode="script", args=("train.py", "--max-steps", "1", "--output-dir", "outputs/sft")),
    Case("script-train-output-dir-is-sfts-absolute", "error: grpo.output_dir (given on the command line): "
         "'{project}/outputs/sft' is sft.output_dir", mode="script",
         args=("train.py", "--max-steps", "1", "--output-dir", "{project}/outputs/sft")),
    Case("script-evaluate-users-samples", "error: {tmp}/elsewhere/samples.jsonl is not evaluate.py's", mode="script",
         args=("evaluate.py", "--adapter", "{tmp}/elsewhere/adapter"),
         files={"elsewhere/adapter/adapter_config.json": "{}", "elsewhere/samples.jsonl": "my samples\n"}),
    Case("script-train-unsloth-on-cpu", "error: --backend unsloth needs a CUDA GPU; use --backend trl (or auto)",
         mode="script", args=("train.py", "--backend", "unsloth")),
    Case("script-train-unsloth-in-config-on-cpu", "error: model.backend = 'unsloth' needs a CUDA GPU", mode="script",
         args=("train.py",), edits=edit('backend = "auto"', 'backend = "unsloth"')),
    Case("script-sft-unsloth-on-cpu", "error: --backend unsloth needs a CUDA GPU", mode="script",
         args=("sft.py", "--backend", "unsloth")),
    # `check` takes it (test_schema); GRPOConfig would refuse it after the model has loaded
    Case("script-train-tf32-without-gpu", "grpo.tf32: needs an Ampere or newer NVIDIA GPU (compute capability 8.0 or "
         "more), which this machine does not have; remove it to train here", mode="script", args=("train.py",),
         edits=edit("seed = 42", "seed = 42\ntf32 = true")),
    Case("script-evaluate-no-adapter", "error: no adapter in", mode="script", args=("evaluate.py",)),
    # it said "or pass --adapter" to one who had
    Case("script-evaluate-adapter-given-is-none", "error: --adapter {tmp}/nope: no adapter there (no "
         "adapter_config.json); give the folder a run saved its adapter in", mode="script",
         args=("evaluate.py", "--adapter", "{tmp}/nope")),
    Case("script-evaluate-prompts", "--prompts must be at least 1", code=2, mode="script",
         args=("evaluate.py", "--prompts", "0")),
    Case("script-cli-check", "Error: ", mode="script", args=("-m", "grpo_skill.cli", "check", "{project}"),
         edits=edit("weight = 1.0", "weight = nan")),
    Case("script-cli-env-unknown-plugin", "GRPO_SKILL_PLUGINS names 'nonexistent', which no installed package provides",
         code=0, mode="script", args=("-m", "grpo_skill.cli", "rewards"), env={"GRPO_SKILL_PLUGINS": "nonexistent"},
         stdout_fact="thinking"),
]

CASES = CLI_CASES + CONFIG_CASES + MODEL_CASES + DATASET_CASES + REWARDS_PY_CASES + PLUGIN_CASES + LOAD_CASES + \
    SCRIPT_CASES


def test_there_are_at_least_80_distinct_cases():
    assert len({case.id for case in CASES}) == len(CASES) >= 80


# ---- running one --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def template_project(tmp_path_factory):
    from grpo_skill import generator

    folder = tmp_path_factory.mktemp("template")
    generator.render("proj", folder, preset_name="tiny")
    return folder / "proj"


def tree_hashes(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (Python's own __pycache__ aside) and its hash."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file() and "__pycache__" not in path.parts}


class FakeHub(http.server.BaseHTTPRequestHandler):
    """A Hugging Face hub that has nothing: every repo is missing, except the gated ones (behind terms)."""

    def answer(self):
        gated = "gated" in self.path
        self.send_response(403 if gated else 404)
        self.send_header("X-Error-Code", "GatedRepo" if gated else "RepoNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET = answer

    def log_message(self, *args):
        pass


HUB = {}


@pytest.fixture(scope="module", autouse=True)
def fake_hub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    HUB["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield
    server.shutdown()
    server.server_close()


def fill(text: str, tmp: Path, project: Path) -> str:
    return text.replace("{project}", str(project)).replace("{tmp}", str(tmp)).replace("{hub}", HUB.get("url", ""))


@contextlib.contextmanager
def environment(changes: dict, tmp: Path, project: Path):
    """Set (None: unset) environment variables for an in-process case; afterwards put them, and what
    huggingface_hub read from them, back."""
    saved = {name: os.environ.get(name) for name in [*changes, "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"]}
    hub_constants = sys.modules.get("huggingface_hub.constants")
    saved_offline = getattr(hub_constants, "HF_HUB_OFFLINE", None)
    for name, value in changes.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = fill(value, tmp, project)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        hub_constants_now = sys.modules.get("huggingface_hub.constants")
        if hub_constants_now is not None:  # imported before the case, or during it (reading the case's variables)
            hub_constants_now.HF_HUB_OFFLINE = saved_offline if hub_constants is not None else any(
                os.environ.get(name, "").upper() in ("1", "ON", "YES", "TRUE")
                for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def run_case(case: Case, tmp: Path, project: Path) -> tuple[int, str, str]:
    """(exit code, stderr, stdout) as the user would see them."""
    args = [fill(arg, tmp, project) for arg in case.args]
    if case.mode == "script":
        env = {name: (fill(value, tmp, project) if value else value) for name, value in case.env.items()}
        result = run_process([sys.executable, *args], cwd=project, env=env, check=False, timeout=120)
        return result.returncode, result.stderr, result.stdout
    with environment(case.env, tmp, project):
        if case.mode in ("load", "build"):
            try:
                overrides = {key: fill(value, tmp, project) if isinstance(value, str) else value
                             for key, value in case.overrides.items()}
                config = projects.load_for_run(project / "config.toml", overrides)
                if case.mode == "build":
                    config.build_rewards(tokenizer=None)
            except BaseException as error:  # what train.py's errors.install() prints for it
                message = errors.user_message(error)
                assert message is not None, f"{type(error).__name__} would print a traceback: {error}"
                return errors.exit_code(error), f"error: {message}\n", ""
            return 0, "", ""
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        return result.exit_code, result.stderr, result.stdout


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_bad_input_gets_a_short_answer_and_changes_nothing(case, template_project, tmp_path, monkeypatch):
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    for old, new in case.edits:
        config = project / "config.toml"
        text = config.read_text()
        assert old in text, old
        config.write_text(text.replace(old, new, 1))
    for relative, content in case.files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if case.setup:
        case.setup(tmp_path, project)
    monkeypatch.chdir(tmp_path)
    if case.missing:
        installed = projects.installed
        monkeypatch.setattr(projects, "installed", lambda module: module not in case.missing and installed(module))
    before = tree_hashes(tmp_path)
    if case.plugin is not None:
        plugins.register(case.plugin, "test-plugin")
    try:
        code, stderr, stdout = run_case(case, tmp_path, project)
    finally:
        if case.plugin is not None:
            plugins.unregister("test-plugin")
        for name, _plugin in plugins.pm.list_name_plugin():
            if name.startswith(plugins.PROJECT_PLUGIN_PREFIX):
                plugins.unregister(name)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == case.code, (code, stderr, stdout)
    assert fill(case.fact, tmp_path, project) in stderr, stderr
    assert len(lines) <= 2 and (lines or case.code == 0), stderr
    assert "Traceback" not in stderr + stdout, stderr
    if case.stdout_fact:
        assert case.stdout_fact in stdout
    assert tree_hashes(tmp_path) == before


def test_train_py_fails_fast_when_the_hub_is_offline(template_project, tmp_path):
    """The 54 seconds of retries are gone: an uncached hub model with HF_HUB_OFFLINE fails before any
    heavy import."""
    import time

    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    started = time.perf_counter()
    result = run_process([sys.executable, "train.py", "--model", "Qwen/Qwen3-4B"], cwd=project, check=False,
                         env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")})
    assert result.returncode == 1 and "--model PATH" in result.stderr
    assert time.perf_counter() - started < 20  # seconds, on a busy 2-core machine; it was 54 s of retries


def test_a_cached_hub_model_passes_offline(template_project, tmp_path):
    """The other side of the offline check: a model in the Hugging Face cache loads without the network."""
    home = tmp_path / "hf-home"
    snapshot = home / "hub" / "models--owner--cached" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (home / "hub" / "models--owner--cached" / "refs").mkdir()
    (home / "hub" / "models--owner--cached" / "refs" / "main").write_text("abc123")
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    probe = ("from grpo_skill import project\n"
             f"config = project.load_for_run({str(project / 'config.toml')!r}, {{'model.name': 'owner/cached'}})\n"
             "print(config.model_path())\n")
    result = run_process([sys.executable, "-c", probe], env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(home)})
    assert result.stdout.strip() == "owner/cached"


def test_debug_shows_the_traceback(template_project, tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace("max_steps = 60", "max_steps = 0"))
    result = CliRunner().invoke(main, ["--debug", "check", str(project)])
    assert isinstance(result.exception, projects.ConfigError)  # raised, not turned into one line
    script = run_process([sys.executable, "train.py"], cwd=project, env={"GRPO_SKILL_DEBUG": "1"}, check=False)
    assert script.returncode == 1 and "Traceback" in script.stderr and "ConfigError" in script.stderr


def test_a_logger_that_is_installed_passes_without_being_imported(template_project, tmp_path, monkeypatch):
    """The other side of report_to's check: a findable package passes, and is not imported to find it."""
    fake = tmp_path / "site"
    fake.mkdir()
    (fake / "wandb.py").write_text("raise RuntimeError('check imported wandb')\n")
    monkeypatch.syspath_prepend(str(fake))
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace("report_to = []", 'report_to = ["wandb", "kubeflow"]'))
    assert projects.load(config, rewards=False).grpo["report_to"] == ["wandb", "kubeflow"]
    assert "wandb" not in sys.modules


def test_a_lora_target_the_model_lacks_is_one_line_naming_its_layers(template_project, tmp_path):
    """Found once the model is loaded (check reads no model), before peft's 24-line error."""
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    text = config.read_text()
    old = 'target_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]'
    assert old in text
    config.write_text(text.replace(old, 'target_modules = ["q_proj", "nonexistent_proj"]'))
    result = run_process([sys.executable, "train.py"], cwd=project, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: config.toml:19: lora.target_modules: 'nonexistent_proj' matches no module of this model; its linear "
        "layers: down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj")
    assert not (project / "outputs").exists()


def test_all_linear_passes_check_and_reaches_peft_as_its_word(template_project, tmp_path):
    """lora.target_modules = "all-linear" is peft's own choice of layers: not a list of letters to look for."""
    from grpo_skill.runtime import model as model_loading, modelfiles

    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace(LORA_TARGETS, 'target_modules = "all-linear"'))
    loaded = projects.load(config, rewards=False)
    assert modelfiles.check(loaded) is None  # its model is here (built): checked, and nothing is refused
    empty = modelfiles.empty_model(modelfiles.model_folder(loaded))
    assert model_loading.add_lora(empty, loaded, "trl")[1].target_modules == "all-linear"


def test_train_py_names_a_chat_template_kwarg_its_template_never_reads(template_project, tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace(CHAT_KWARGS, "chat_template_kwargs = { enable_thinkin = false }"))
    result = run_process([sys.executable, "train.py", "--max-steps", "1"], cwd=project)
    line = next(number for number, text in enumerate(config.read_text().splitlines(), start=1)
                if text.startswith("chat_template_kwargs = { enable_thinkin"))
    assert (f"warning: config.toml:{line}: dataset.chat_template_kwargs: the model's chat template never reads "
            "'enable_thinkin', so it changes nothing; did you mean 'enable_thinking'? It reads: enable_thinking"
            ) in result.stderr.splitlines()


@pytest.mark.parametrize("model", ["local-folder", "built-here"])
def test_max_seq_length_beyond_the_models_positions_is_refused(template_project, tmp_path, tiny_model, model):
    """check (a model folder on this machine) and train.py (a model the preset builds) alike."""
    from grpo_skill.runtime import data

    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace("max_seq_length = 256", "max_seq_length = 100000512"))
    with pytest.raises(projects.ConfigError) as refused:
        if model == "local-folder":
            projects.load(config, {"model.name": str(tiny_model)}, rewards=False)
        else:
            data.check_prompt_lengths([12], projects.load(config, rewards=False))
    assert str(refused.value) == (
        f"{config}:8: model.max_seq_length: the model reads at most 40960 tokens (max_position_embeddings in its "
        "config.json); set max_seq_length to 40960 or less")


def test_max_seq_length_beyond_a_cached_hub_models_positions_is_refused(template_project, tmp_path, monkeypatch):
    """The same check for a hub model in the Hugging Face cache, whose config.json is read there."""
    from huggingface_hub import constants

    model = tmp_path / "hub" / "models--owner--cached"
    (model / "snapshots" / "abc123").mkdir(parents=True)
    (model / "snapshots" / "abc123" / "config.json").write_text('{"max_position_embeddings": 2048}')
    (model / "refs").mkdir()
    (model / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace("max_seq_length = 256", "max_seq_length = 4096"))
    with pytest.raises(projects.ConfigError) as refused:
        projects.load(config, {"model.name": "owner/cached"}, rewards=False)
    assert str(refused.value) == (
        f"{config}:8: model.max_seq_length: the model reads at most 2048 tokens (max_position_embeddings in its "
        "config.json); set max_seq_length to 2048 or less")


@pytest.mark.parametrize("length, completion, fix, fixed", [
    # max_seq_length at the positions already: the budget is what to lower
    (1024, 1000, "lower max_completion_length to 945", (1024, 945)),
    (1000, 990, "lower max_completion_length to 945 and raise max_seq_length to 1024", (1024, 945)),
])
def test_prompts_that_need_more_than_the_models_positions_are_fixed_within_them(
        template_project, tmp_path, tiny_model, english, length, completion, fix, fixed):
    """check counts the prompts with the model's tokenizer (the longest: 79 tokens): a max_seq_length raised to fit
    them and the budget would pass the model's 1024 positions, so the fix lowers the budget, and the config edited as
    it says passes."""
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    model = model_of_positions(tiny_model, tmp_path / "m1024", 1024)
    config = project / "config.toml"
    text = config.read_text().replace('name = "grpo-skill/tiny-qwen3"', f'name = "{model}"')

    def check(length: int, completion: int):
        config.write_text(text.replace("max_seq_length = 256", f"max_seq_length = {length}").replace(
            "max_completion_length = 32", f"max_completion_length = {completion}"))
        return CliRunner().invoke(main, ["check", str(project), "--no-rewards"])

    refused = check(length, completion)
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        f"Error: model.max_seq_length ({length}) is below the longest prompt (79 tokens) + grpo.max_completion_length "
        f"({completion}), and the model reads at most 1024 tokens (its max_position_embeddings); {fix}, or shorten "
        "the prompts")
    done = check(*fixed)
    assert done.exit_code == 0, done.output


def test_prompts_longer_than_the_model_reads_are_to_shorten(template_project, tmp_path, tiny_model, english):
    """Prompts of 1221 tokens for a model of 1024 positions: no max_seq_length or budget fits them."""
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    model = model_of_positions(tiny_model, tmp_path / "m1024", 1024)
    config = project / "config.toml"
    config.write_text(config.read_text().replace('name = "grpo-skill/tiny-qwen3"', f'name = "{model}"'))
    (project / PROMPTS).write_text(json.dumps({"prompt": "word " * 400}) + "\n")
    refused = CliRunner().invoke(main, ["check", str(project), "--no-rewards"])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        "Error: the longest prompt (1221 tokens) leaves no room for a completion in the 1024 tokens the model reads "
        "(its max_position_embeddings); shorten the prompts")


def test_rewards_measured_against_the_budget_use_the_projects_max_completion_length(template_project, tmp_path):
    """soft_overlong's max_completion_len = 0 and cosine_length's max_len = 0 mean [grpo] max_completion_length."""
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    config = project / "config.toml"
    config.write_text(config.read_text().replace("max_completion_length = 32", "max_completion_length = 24").replace(
        "[grpo]", '[[rewards]]\nname = "soft_overlong"\nparams = { soft_punish_cache = 4 }\n\n[grpo]', 1))
    loaded = projects.load(config, rewards=False)
    assert loaded.preset.grpo["max_completion_length"] == 32  # the preset's budget, which the project lowered
    soft_overlong = loaded.build_rewards(tokenizer=None)[1]
    # 24 tokens: the project's limit (-1.0); under the preset's 32 they would be 4 short of its soft zone (0.0)
    assert soft_overlong(prompts=["p"], completions=["x"], completion_ids=[[7] * 24]) == [-1.0]


def test_options_trl_cannot_apply_to_the_model_are_refused_before_it_loads(cli, tmp_path, tiny_model, english):
    """TRL's cast_lm_head_to_fp32 refuses an lm_head with a LoRA adapter and fails (AttributeError) on a LoRA model
    whose lm_head is tied to its embeddings (Qwen3-4B, the tiny model): both after the model has loaded. check
    refuses them from config.toml and the model's config.json; train.py's data check does for a built model."""
    import json

    from grpo_skill.core import project as projects
    from grpo_skill.runtime import data

    cli("new", "p", "--preset", "tiny", "-o", str(tmp_path))
    config = tmp_path / "p" / "config.toml"
    cast = re.sub(r"^\[grpo\].*$", lambda line: line.group(0) + "\ncast_lm_head_to_fp32 = true", config.read_text(),
                  flags=re.M)
    config.write_text(cast)  # the tiny preset puts an adapter on its lm_head too
    done = cli("check", str(tmp_path / "p"), "--no-rewards", check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "grpo.cast_lm_head_to_fp32: TRL cannot cast an lm_head that carries a LoRA adapter" in done.stderr
    cast = cast.replace(', "lm_head"]', "]")
    config.write_text(cast)
    loaded = projects.load(tmp_path / "p", rewards=False)  # the tiny model is built at train time: unknown here
    assert json.loads((tiny_model / "config.json").read_text())["tie_word_embeddings"] is True
    with pytest.raises(projects.ConfigError, match="ties its lm_head to its embeddings"):
        data.check_prompt_lengths([10], loaded)  # train.py, once the model is built, before it loads
    config.write_text(cast.replace('name = "grpo-skill/tiny-qwen3"', f'name = "{tiny_model}"'))
    done = cli("check", str(tmp_path / "p"), "--no-rewards", check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "grpo.cast_lm_head_to_fp32: this model ties its lm_head to its embeddings" in done.stderr
    # likewise a router loss weight for a model without experts (TRL raises in GRPOTrainer's __init__)
    local = cast.replace('name = "grpo-skill/tiny-qwen3"', f'name = "{tiny_model}"')
    config.write_text(local.replace("cast_lm_head_to_fp32 = true", "router_aux_loss_coef = 0.01"))
    done = cli("check", str(tmp_path / "p"), "--no-rewards", check=False)
    assert done.returncode == 1 and "grpo.router_aux_loss_coef: weights a Mixture-of-Experts model's router loss, " \
        "and this model has no experts" in done.stderr


@pytest.mark.parametrize("script", ["train.py", "evaluate.py"])
def test_what_a_reward_factory_warns_is_a_warning_line_of_train_py_and_evaluate_py(template_project, tmp_path,
                                                                                   script):
    """A factory's UserWarning (code_tests where the network cannot be cut) is one `warning:` line, as `check` says
    it, not a Python warning naming rewards.py's line. The script runs up to the line that builds its rewards."""
    project = tmp_path / "proj"
    shutil.copytree(template_project, project)
    rewards = project / "rewards.py"
    said = "no_repetition: counted in words, never in tokens"
    rewards.write_text("import warnings\n" + rewards.read_text().replace(
        "def no_repetition_factory(context):\n", f"def no_repetition_factory(context):\n    warnings.warn({said!r})\n"))
    config = project / "config.toml"
    config.write_text(config.read_text().replace('# [[rewards]]\n# name = "no_repetition"',
                                                 '[[rewards]]\nname = "no_repetition"'))
    if script == "evaluate.py":  # its adapter: found, never loaded
        (project / "outputs" / "adapter").mkdir(parents=True)
        (project / "outputs" / "adapter" / "adapter_config.json").write_text("{}")
    lines = (project / script).read_text().splitlines(keepends=True)
    built = next(number for number, line in enumerate(lines, start=1)
                 if line.startswith("reward_funcs = config.build_rewards("))
    (project / f"until_rewards_{script}").write_text("".join(lines[:built]))
    result = run_process([sys.executable, f"until_rewards_{script}"], cwd=project)
    assert result.stderr.splitlines().count(f"warning: {said}") == 1, result.stderr
    assert "UserWarning" not in result.stderr and "rewards.py:" not in result.stderr, result.stderr


@pytest.mark.parametrize("args", [
    ("new", "p", "--preset", "tiny", "--model", "~no-such-user-here/model"),
    ("new", "p", "--preset", "tiny", "--dataset", "~no-such-user-here/prompts.jsonl"),
    ("new", "~no-such-user-here/p", "--preset", "tiny"),
])
def test_a_home_folder_of_a_user_this_machine_lacks_is_one_line(cli, tmp_path, args):
    """pathlib raises a RuntimeError for ~user it cannot find: it was a traceback."""
    done = cli(*args, cwd=tmp_path, check=False)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "this machine has no home folder for ~no-such-user-here; give the folder's full path" in done.stderr
    assert not any(tmp_path.iterdir())
