"""The project's prompts: loading the dataset and checking that prompts fit the model."""

from __future__ import annotations

from ..core.i18n import _
from ..core.project import LOCAL_DATA_SUFFIXES, ConfigError, ProjectConfig


def check_prompt_lengths(prompt_lengths: list[int], config: ProjectConfig) -> None:
    """TRL does not truncate prompts: the longest prompt plus a full completion must fit the model, and
    max_seq_length the model's positions (a built model's are known only now)."""
    from ..core.project import check_positions, model_positions

    if config.builds_its_model():
        check_positions(config, model_positions(config, config.model_path()))
    longest = max(prompt_lengths)
    completion = config.grpo["max_completion_length"]
    limit = config.model["max_seq_length"]
    if longest + completion > limit:
        raise ConfigError(
            _("model.max_seq_length ({limit}) is below the longest prompt ({longest} tokens) + "
              "grpo.max_completion_length ({completion}); raise max_seq_length to {needed} "
              "or shorten the prompts").format(limit=limit, longest=longest, completion=completion,
                                               needed=longest + completion)
        )


def load_dataset(config: ProjectConfig):
    """The configured split of ``dataset.path``: a local file, or a hub dataset. Imports datasets: call it
    after unsloth."""
    import datasets

    data_file = config.dataset_file()
    if data_file:
        loaded = datasets.load_dataset(LOCAL_DATA_SUFFIXES[data_file.suffix], data_files=str(data_file))
    else:
        loaded = datasets.load_dataset(config.dataset["path"])
    return loaded[config.dataset.get("split", "train")]


def chat_prompt(config: ProjectConfig, tokenizer, question: str) -> str:
    """One prompt in the model's chat template, as GRPO sees it: ``dataset.system_prompt`` first when set, and
    ``dataset.chat_template_kwargs`` passed to the template (e.g. ``{enable_thinking = false}`` for Qwen3)."""
    return tokenizer.apply_chat_template(
        config.chat_messages(question), tokenize=False, add_generation_prompt=True,
        **(config.dataset.get("chat_template_kwargs") or {}),
    )
