"""The tokenizer `rewards try` and ``check_reward`` score with: the run's model's when it is on this machine (local,
built or cached; never downloaded), ``--tokenizer``'s, or none; and prompts rendered through its chat template as
training renders them."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import one_line
from ..core.i18n import _
from .rewardinput import TryError


def load_tokenizer(spec: str | None):
    if not spec:
        return None
    from transformers import AutoTokenizer

    if spec == "tiny":
        from ..runtime import modelbuild

        spec = str(modelbuild.build("tiny"))
    if not Path(spec).is_dir() and _cached(spec):  # a hub id in the Hugging Face cache: no download
        try:
            return AutoTokenizer.from_pretrained(spec, local_files_only=True)
        except (OSError, ValueError) as error:
            raise TryError(_("--tokenizer {spec}: cannot load a tokenizer there ({error})").format(
                spec=spec, error=one_line(error))) from None
    if not Path(spec).is_dir():
        raise TryError(_("--tokenizer {spec!r}: no such folder; give a model or tokenizer folder, or tiny").format(
            spec=spec))
    try:
        return AutoTokenizer.from_pretrained(spec)
    except (OSError, ValueError) as error:
        raise TryError(_("--tokenizer {spec}: cannot load a tokenizer there ({error})").format(
            spec=spec, error=one_line(error))) from None


def _cached(model_id: str) -> bool:
    try:
        import huggingface_hub
    except ImportError:
        return False
    try:
        return isinstance(huggingface_hub.try_to_load_from_cache(model_id, "tokenizer_config.json"), str)
    except ValueError:  # not a repo id
        return False


def run_tokenizer(tokenizer: str | None, preset, config, preset_name: str | None) -> tuple[str | None, str]:
    """(what to load, what to say about it): --tokenizer, else the tokenizer of the model the project or preset
    trains when it is on this machine (local, built, or cached), else none."""
    from ..core.i18n import N_

    if tokenizer:
        run_model = config.model["name"] if config is not None else preset.model_id if preset is not None else None
        if tokenizer == "tiny" and run_model and not (preset is not None and preset.build_model and (
                config is None or config.builds_its_model())):
            return tokenizer, _("tiny (--tokenizer): not {model}'s; the tiny tokenizer's template opens the thinking "
                                "block and it has no Chinese, so token counts and template_opens_think may differ "
                                "from training's").format(model=run_model)
        return tokenizer, _("{spec} (--tokenizer)").format(spec=tokenizer)
    if config is not None:
        if config.builds_its_model() or config.local_model_dir():
            return config.model_path(), _("{model}'s, as the project trains it").format(model=config.model["name"])
        model, whose = config.model["name"], N_("the project's model")
    elif preset is not None:
        if preset.build_model is not None:
            return "tiny", _("{model}'s (preset {preset})").format(model=preset.model_id, preset=preset.name)
        model, whose = preset.model_id, N_("the preset's model")
    else:
        return None, _("none (give --project, --preset or --tokenizer to score as a run would)")
    if _cached(model):
        return model, _("{model}'s, from the Hugging Face cache").format(model=model)
    return None, _("none: {whose} {model} is not on this machine, so completion_ids are not made and the chat template "
                   "is the preset's ({opens}); --tokenizer PATH gives a local copy's").format(
        whose=_(whose), model=model, opens=_("opens <think>") if preset is not None and preset.template_opens_think
        else _("no <think>"))


def chat_prompts(prompts: list, tokenizer, config) -> list:
    """The prompts as training gives them to rewards: through the chat template, with [dataset] system_prompt and
    chat_template_kwargs when a project is given; chat messages and empty prompts as they are."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return prompts
    system = config.dataset.get("system_prompt", "") if config is not None else ""
    kwargs = dict(config.dataset.get("chat_template_kwargs") or {}) if config is not None else {}
    rendered = []
    for prompt in prompts:
        if not isinstance(prompt, str) or not prompt:
            rendered.append(prompt)
            continue
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        rendered.append(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs))
    return rendered
