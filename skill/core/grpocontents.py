"""Checks of what is inside [grpo] values that GRPOConfig hands on to another library (the scheduler's kwargs,
accelerate's settings, transformers' continuous batching, debug options) and of values that cannot act in train.py's
run: those libraries refuse them only after the model has loaded, or never and misread them.

What each library accepts is derived from it into ``data/grpo_config.json`` (``grpofields``); nothing heavy is
imported here.
"""

from __future__ import annotations

from .grpofields import grpo_fields, grpo_value, lr_schedulers, table_choices, table_fields, table_names
from .i18n import _
from .schemamessages import suggest
from .tomlsource import Source, toml_value

# debug options that act only in Trainer.evaluate, which train.py never calls
EVALUATION_ONLY_DEBUG = ("tpu_metrics_debug",)


def check_contents(grpo: dict, source: Source, processes: int) -> None:
    _check_debug(grpo, source)
    _check_scheduler_kwargs(grpo, source)
    check_accelerator_config(grpo, source)
    _check_continuous_batching(grpo, source)
    _check_sharding(grpo, source, processes)


def _check_debug(grpo: dict, source: Source) -> None:
    value = grpo.get("debug")
    if not value:
        return
    options = value.split() if isinstance(value, str) else value
    known = grpo_fields()["debug"]["item_choices"]
    for option in options:
        if option not in known:
            raise source.error(("grpo", "debug"), _unknown(option, known))
        if option in EVALUATION_ONLY_DEBUG:
            raise source.error(("grpo", "debug"), _(
                "{option!r} acts only when the trainer evaluates, and train.py runs no evaluation; remove it"
            ).format(option=option))


def _check_scheduler_kwargs(grpo: dict, source: Source) -> None:
    given = grpo.get("lr_scheduler_kwargs") or {}
    kind = grpo_value(grpo, "lr_scheduler_type")
    scheduler = lr_schedulers().get(kind)
    if scheduler is None:
        return  # an unknown type is the field's own choice error
    if scheduler.get("drops_kwargs"):
        if given:
            raise source.error(("grpo", "lr_scheduler_kwargs"), _(
                "the {kind!r} schedule takes no settings and transformers drops these without a word; remove them, "
                "or choose a schedule that takes them").format(kind=kind))
        return
    takes = scheduler["takes"]
    for key in given:
        if key not in takes:
            raise source.error(("grpo", "lr_scheduler_kwargs"), _(
                "the {kind!r} schedule does not take {key!r} (transformers would raise a TypeError at the first "
                "step); {known}").format(kind=kind, key=key, known=_known(key, takes)))
        if key in scheduler.get("choices", {}) and given[key] not in scheduler["choices"][key]:
            raise source.error(("grpo", "lr_scheduler_kwargs"), _none_of(key, given[key], scheduler["choices"][key]))
    where = ("grpo", "lr_scheduler_kwargs" if "lr_scheduler_kwargs" in grpo else "lr_scheduler_type")
    missing = [key for key in scheduler["needs"] if key not in given]
    if missing:
        raise source.error(where, _(
            "the {kind!r} schedule needs {keys} in lr_scheduler_kwargs, e.g. lr_scheduler_kwargs = {{ {first} = ... }}"
        ).format(kind=kind, keys=", ".join(missing), first=missing[0]))
    if "min_lr" in takes and "min_lr_rate" in takes and ("min_lr" in given) == ("min_lr_rate" in given):
        raise source.error(where, _(
            "the {kind!r} schedule needs exactly one of min_lr (a learning rate) or min_lr_rate (a share of "
            "learning_rate), e.g. lr_scheduler_kwargs = {{ min_lr_rate = 0.1 }}").format(kind=kind))
    learning_rate = grpo_value(grpo, "learning_rate")
    for key, default in scheduler.get("below_lr", {}).items():
        value = given.get(key, default)
        if not (_KINDS["float"](value) and _KINDS["float"](learning_rate)) or value < learning_rate:
            continue
        if key in given:
            raise source.error(("grpo", "lr_scheduler_kwargs"), _(
                "{key} = {value} must be below learning_rate ({lr}): the {kind!r} schedule decays from learning_rate "
                "to {key}, and transformers refuses it at the first step; lower {key}").format(
                key=key, value=toml_value(value), lr=toml_value(learning_rate), kind=kind))
        raise source.error(where, _(
            "the {kind!r} schedule decays from learning_rate to {key}, {value} by default, which must be below "
            "learning_rate ({lr}) (transformers refuses it at the first step); set a lower one, e.g. "
            "lr_scheduler_kwargs = {{ {key} = {lower} }}").format(
            kind=kind, key=key, value=toml_value(value), lr=toml_value(learning_rate),
            lower=toml_value(learning_rate / 10)))


def check_accelerator_config(grpo: dict, source: Source) -> None:
    """accelerator_config written as a table (``project.load`` reads one written as the path of accelerate's JSON
    file, from the project folder, and checks the table it holds here)."""
    given = grpo.get("accelerator_config")
    if not isinstance(given, dict):
        return  # a str is a path to accelerate's JSON file (a JSON object string is read as a table before this)
    _check_table(given, "accelerator_config", source)
    if given.get("use_configured_state"):
        raise source.error(("grpo", "accelerator_config"), _(
            "use_configured_state = true needs an accelerate state made before the trainer, and train.py makes none; "
            "remove it"))
    accumulation = given.get("gradient_accumulation_kwargs")
    if isinstance(accumulation, dict):
        if "num_steps" in accumulation:
            raise source.error(("grpo", "accelerator_config"), _(
                "gradient_accumulation_kwargs.num_steps would replace grpo.gradient_accumulation_steps after TRL has "
                "sized its generation batch on it; set gradient_accumulation_steps instead"))


def _check_continuous_batching(grpo: dict, source: Source) -> None:
    given = grpo.get("transformers_continuous_batching_config")
    if given is None:
        return
    if not (grpo.get("use_transformers_continuous_batching") or grpo.get("use_transformers_paged")):
        raise source.error(("grpo", "transformers_continuous_batching_config"), _(
            "is read only with use_transformers_continuous_batching = true; set that too, or remove it"))
    if isinstance(given, dict):
        _check_table(given, "transformers_continuous_batching_config", source)


def _check_sharding(grpo: dict, source: Source, processes: int) -> None:
    for key in ("fsdp", "fsdp_config"):
        if grpo.get(key):
            raise source.error(("grpo", key), _(
                "train.py shards the model through accelerate's config, which it reads before the model loads; "
                "remove it and run accelerate launch --config_file accelerate/fsdp.yaml train.py"))
    # GRPOConfig would turn DeepSpeed on after the model has loaded (and on one process fail at the first step),
    # past train.py's decisions on ZeRO-3, which read accelerate's launch before the model loads (4-bit weights, the
    # generation path)
    if grpo.get("deepspeed"):
        raise source.error(("grpo", "deepspeed"), _(
            "train.py runs DeepSpeed through accelerate's config, which it reads before the model loads; remove it "
            "and run accelerate launch --config_file accelerate/zero2.yaml train.py (zero_stage in that file sets the "
            "stage)"))
    if "ddp_backend" in grpo and processes == 1:
        raise source.error(("grpo", "ddp_backend"), _(
            "applies only to a launch of several processes (accelerate launch), and on one process transformers "
            "refuses it; remove it, or check a launch with grpo-skill check --gpus N"))


def _check_table(given: dict, name: str, source: Source) -> None:
    """Keys a library's settings table does not have, and values of the wrong type (accelerate reads a string
    "false" as true)."""
    fields, choices = table_fields(name), table_choices(name)
    key_of_grpo, _dot, inner = name.partition(".")
    prefix = f"{inner}." if inner else ""
    for key, value in given.items():
        if key not in fields:
            raise source.error(("grpo", key_of_grpo), _("has no key {key!r}; {known}").format(
                key=prefix + key, known=_known(key, fields)))
        if not _fits(value, fields[key]):
            raise source.error(("grpo", key_of_grpo), _("{key} = {value} must be {kinds}").format(
                key=prefix + key, value=toml_value(value),
                kinds=_(" or ").join(kind for kind in fields[key] if kind != "null")))
        if key in choices and value not in choices[key]:  # transformers would fall back to a default, or raise late
            raise source.error(("grpo", key_of_grpo), _none_of(prefix + key, value, choices[key]))
        if isinstance(value, dict) and f"{name}.{key}" in table_names():
            _check_table(value, f"{name}.{key}", source)


def _none_of(key: str, value, choices: list[str]) -> str:
    """A named value the library does not know (it raises late, or falls back to a default): the names it takes."""
    close = suggest(str(value), choices)
    said = (_("{key} = {value} is none of {choices}; did you mean {close!r}?") if close else
            _("{key} = {value} is none of {choices}"))
    return said.format(key=key, value=toml_value(value), choices=", ".join(choices), close=close)


_KINDS = {"bool": lambda v: isinstance(v, bool), "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "str": lambda v: isinstance(v, str), "dict": lambda v: isinstance(v, dict),
          "null": lambda v: v is None}  # JSON's null (accelerate's own files write them); TOML has none


def _fits(value, kinds: list[str]) -> bool:
    return any(kind.startswith("object:") or _KINDS.get(kind, lambda v: False)(value) for kind in kinds)


def _known(key: str, choices) -> str:
    choices = list(choices)
    close = suggest(key, choices)
    listed = ", ".join(choices) or _("nothing")
    if len(choices) > 8:
        listed = _("{count} keys: {some}, ...").format(count=len(choices), some=", ".join(choices[:4]))
    if close:
        return _("did you mean {close!r}? It takes {listed}").format(close=close, listed=listed)
    return _("it takes {listed}").format(listed=listed)


def _unknown(value: str, choices: list[str]) -> str:
    close = suggest(value, choices)
    if close:
        return _("{value!r} is not a debug option; did you mean {close!r}?").format(value=value, close=close)
    return _("{value!r} is not a debug option; choose from {choices}").format(value=value, choices=", ".join(choices))
