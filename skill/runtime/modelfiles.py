"""What `grpo-skill check` checks against the model's files, without its weights: the prompts' lengths and the chat
template's kwargs with its tokenizer (as train.py renders and counts the prompts before the model loads), and
lora.target_modules against the modules of an empty model built from its config.json (train.py finds a wrong name
only once the model has loaded). Each raises the error train.py would.

The model's files are read where they are on this machine: a local folder, the tiny preset's build (made on first
use, as `plan` makes it) or the Hugging Face cache; nothing is downloaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..core.i18n import _
from ..core.project import ProjectConfig


def model_folder(config: ProjectConfig) -> Path | None:
    """The model's folder on this machine, or None where it is not here (a hub model not downloaded)."""
    if config.builds_its_model():
        return Path(config.model_path())
    local = config.local_model_dir()
    if local is not None:
        return local if (local / "config.json").is_file() else None
    try:
        import huggingface_hub
    except ImportError:
        return None
    cached = huggingface_hub.try_to_load_from_cache(config.model["name"], "config.json")
    return Path(cached).parent if isinstance(cached, str) else None


def check(config: ProjectConfig) -> str | None:
    """Check the project against its model's files; why nothing was checked (the model is not on this machine, or
    the training packages are not installed), or None."""
    from importlib.util import find_spec

    what = _("the prompts' lengths, dataset.chat_template_kwargs and lora.target_modules")
    if find_spec("transformers") is None or find_spec("accelerate") is None:  # grpo-skill without its [train] extra
        return _("transformers is not installed, so {what} were not checked against the model; train.py checks "
                 "them").format(what=what)
    folder = model_folder(config)
    if folder is None:
        return _("the model is not on this machine, so {what} were not checked against it; train.py checks them once "
                 "it has the model").format(what=what)
    tokenizer = _tokenizer(folder)
    if tokenizer is not None:
        from . import data

        config.warnings.extend(data.unread_chat_template_kwargs(config, tokenizer))
        check_prompt_lengths(config, tokenizer)
    if config.adapter_dir() is None:  # an adapter keeps its own target modules
        model = empty_model(folder)
        if model is not None:
            from .model import check_targets

            check_targets(model, config)
    return None


def _tokenizer(folder: Path):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception:  # a snapshot without its tokenizer files: train.py loads (or downloads) them itself
        return None


def check_prompt_lengths(config: ProjectConfig, tokenizer) -> None:
    """train.py's check of the longest prompt against max_seq_length, on a local prompts file (a hub dataset is
    counted by train.py once it has it)."""
    from .data import check_prompt_lengths as check_lengths

    lengths = prompt_lengths(config, tokenizer)
    if lengths:
        check_lengths(lengths, config)


def prompt_lengths(config: ProjectConfig, tokenizer) -> list[int]:
    """Every prompt of a local prompts file in tokens, rendered as train.py renders it; [] where the file cannot be
    read here (a hub dataset)."""
    from .data import chat_prompt
    from .promptlength import prompts

    texts = prompts(config.dataset_file(), config.dataset["prompt_column"])
    if not texts:
        return []
    return [len(ids) for ids in tokenizer([chat_prompt(config, tokenizer, text) for text in texts]).input_ids]


def longest_prompt(config: ProjectConfig) -> int | None:
    """The longest prompt in tokens as ``check_prompt_lengths`` counts it, for the advice of a refusal (what
    `project.load` calls ``longest_prompt``); None where it cannot be counted here: no transformers, the model or a
    local prompts file not on this machine, or prompts that the chat template refuses (the checks after say why)."""
    from importlib.util import find_spec

    folder = model_folder(config) if find_spec("transformers") is not None else None
    tokenizer = _tokenizer(folder) if folder is not None else None
    if tokenizer is None:
        return None
    try:
        lengths = prompt_lengths(config, tokenizer)
    except Exception:  # a chat template or its kwargs that fail on these prompts: named by the checks after this one
        return None
    return max(lengths) if lengths else None


def empty_model(folder: Path):
    """The model of ``folder``'s config.json on the meta device (its modules, no weights); None where transformers
    cannot build it from its config alone."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        with init_empty_weights():
            return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(folder)))
    except Exception:  # an architecture this transformers does not know: train.py says so when it loads it
        return None


def layers(folder: Path) -> dict[str, bool] | None:
    """The modules of the model of ``folder``'s config.json, as :func:`model.linear_layers` gives them; None where it
    cannot be built. Built in a child process: train.py asks before it imports unsloth, which must come before
    transformers."""
    child = subprocess.run([sys.executable, "-m", __name__, str(folder)], capture_output=True, text=True)
    try:
        return json.loads(child.stdout.splitlines()[-1]) if child.returncode == 0 else None
    except (IndexError, ValueError):  # a child that printed no answer
        return None


if __name__ == "__main__":
    from .model import linear_layers

    empty = empty_model(Path(sys.argv[1]))
    print(json.dumps(None if empty is None else linear_layers(empty)))
