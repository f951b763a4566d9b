"""The model and tokenizer as a run uses them: 4-bit or not, Unsloth or transformers, and the LoRA adapter.

train.py, sft.py, evaluate.py and `grpo-skill probe` load through here, so all of them see the same model and
tokenizer. With the Unsloth backend, ``unsloth`` must have been imported before transformers (train.py does it in its step 3);
``load`` imports it itself when nothing has imported transformers yet (the probe).
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import contextmanager
from pathlib import Path

from ..core.i18n import _
from ..core.project import ConfigError, ProjectConfig
from . import distributed, machine


def adapter_dir(config: ProjectConfig) -> Path | None:
    """``model.adapter``: a LoRA adapter folder (e.g. sft.py's) that training continues from, or None."""
    path = config.adapter_dir()  # the one place that resolves model.adapter
    if path is None:
        return None
    if not (path / "adapter_config.json").is_file():
        raise ConfigError(
            _("model.adapter: {path} holds no LoRA adapter (adapter_config.json); run `python sft.py` first "
              "or remove the line").format(path=path)
        )
    return path


def torch_dtype():
    import torch

    if machine.bf16_supported():
        return torch.bfloat16
    return torch.float16 if machine.cuda_available() else torch.float32


def load_tokenizer(config: ProjectConfig):
    """``model.name``'s tokenizer as a run uses it: the prompts are rendered and the rewards built with it before the
    model loads (a mistake costs seconds), and ``load`` keeps it."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(config.model_path())
    if tokenizer.pad_token is None:  # GRPO pads the group's completions
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load(config: ProjectConfig, backend: str, tokenizer=None, load_in_4bit: bool | None = None):
    """(model, tokenizer): ``model.name`` loaded for ``backend``, with ``model.adapter`` on it (trainable) when
    set. Without an adapter the model has no LoRA yet: ``add_lora`` gives it one. ``tokenizer``: the one from
    ``load_tokenizer`` that the prompts were rendered with, kept (Unsloth loads its own beside it, unused then).
    ``load_in_4bit``: as the run resolved ``model.load_in_4bit`` (train.py); None resolves "auto" here as train.py
    would on this machine (evaluate.py, sft.py, the probe)."""
    adapter = adapter_dir(config)
    model_path = config.model_path()
    if load_in_4bit is None:
        load_in_4bit = config.model["load_in_4bit"]
        if load_in_4bit == "auto" and backend == "unsloth":
            load_in_4bit = True  # Unsloth in 16 bits would download another checkpoint (its 16-bit twin)
        elif load_in_4bit == "auto":
            from . import decoding

            load_in_4bit = decoding.held_4bit(config, backend, machine.cuda_available())
    if backend == "unsloth":
        if "unsloth" not in sys.modules and "transformers" in sys.modules:
            print(_("warning: unsloth was imported after transformers, so it cannot patch it fully; import unsloth "
                    "first"), file=sys.stderr)
        from unsloth import FastLanguageModel

        # Unsloth loads an adapter folder as base (from adapter_config.json) + adapter, trainable, patched.
        _check_adapter_base(adapter, model_path)
        patching = {"use_gradient_checkpointing": unsloth_checkpointing(config.lora)} if adapter else {}
        model, own_tokenizer = FastLanguageModel.from_pretrained(
            str(adapter or model_path),
            max_seq_length=config.model["max_seq_length"],
            load_in_4bit=load_in_4bit,
            **patching,  # how Unsloth patches the adapter it loads, as get_peft_model would
        )
        tokenizer = tokenizer or own_tokenizer
    else:
        from transformers import AutoModelForCausalLM

        dtype = torch_dtype()
        tokenizer = tokenizer or load_tokenizer(config)
        four_bit = machine.quantization_config(config, dtype, load_in_4bit)
        if stored_in_4bit(model_path):
            model = _load_stored_4bit(config, model_path, dtype, keep_4bit=four_bit is not None)
        else:
            model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype, quantization_config=four_bit)
        if adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    if tokenizer.pad_token is None:  # GRPO pads the group's completions
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def stored_in_4bit(model_path: str) -> bool:
    """Whether the checkpoint was saved in 4 bits by bitsandbytes (its config says so), as the presets'
    ``unsloth/...-bnb-4bit`` models are: transformers then loads it 4-bit whatever ``load_in_4bit`` says."""
    from transformers import AutoConfig

    settings = getattr(AutoConfig.from_pretrained(model_path), "quantization_config", None)
    if settings is not None and not isinstance(settings, dict):
        settings = settings.to_dict()
    return bool(settings) and settings.get("quant_method") == "bitsandbytes" and bool(
        settings.get("load_in_4bit") or settings.get("_load_in_4bit"))


def _load_stored_4bit(config: ProjectConfig, model_path: str, dtype, keep_4bit: bool):
    """A checkpoint stored in 4 bits, loaded as stored, then held in ``dtype`` unless ``keep_4bit``: the same
    weights (the same outputs as the 4-bit model), computed without dequantizing each layer on every call."""
    from transformers import AutoModelForCausalLM

    name = config.model["name"]
    if not machine.has_bitsandbytes():
        raise ConfigError(_("model.name {name} is stored in 4 bits (bitsandbytes), which is not installed: pip install "
                            "bitsandbytes, or name a 16-bit checkpoint of the model").format(name=name))
    if not keep_4bit and distributed.shards_weights():
        raise ConfigError(_("model.name {name} is stored in 4 bits, and FSDP and ZeRO-3 shard 16-bit weights only: "
                            "name a 16-bit checkpoint of the model, or launch with accelerate/ddp.yaml").format(name=name))
    # no quantization_config argument: None would replace the checkpoint's own and load it as if it were 16-bit
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype)
    if keep_4bit:
        return model
    model = model.dequantize(dtype=dtype)
    # dequantize leaves the flag; TRL and peft would still treat the model as 4-bit (bf16 adapters, k-bit layers)
    if getattr(model, "is_loaded_in_4bit", False):
        del model.is_loaded_in_4bit
    if distributed.is_main_process():
        print(_("note: {name} is stored in 4 bits; this run holds its weights in {dtype}: the same values, not "
                "dequantized again at every step (for the model's original weights, name its 16-bit checkpoint)").format(
            name=name, dtype=str(dtype).removeprefix("torch.")),
              file=sys.stderr)
    return model


def for_sampling(model, backend: str):
    """A loaded model made ready to sample outside training: Unsloth's fast generation, on the GPU, eval mode."""
    if backend == "unsloth":
        from unsloth import FastLanguageModel

        FastLanguageModel.for_inference(model)
    if backend == "trl" and machine.cuda_available() and model.device.type != "cuda":
        model.to("cuda")
    return model.eval()


TRAINED = "trained"  # the adapter name of a run's result beside the one it started from


def with_trained_adapter(model, adapter: Path):
    """A model from ``load`` with the run's trained adapter (``adapter``) put on it and active; ``before(model)``
    turns it back into the model GRPO started from."""
    from peft import PeftModel

    if isinstance(model, PeftModel):  # [model] adapter: training continued from it, as "default"
        model.load_adapter(str(adapter), adapter_name=TRAINED)
        model.set_adapter(TRAINED)
        return model
    return PeftModel.from_pretrained(model, str(adapter))


@contextmanager
def before(model):
    """Within it, ``model`` (from ``with_trained_adapter``) samples as GRPO's starting point did: with
    ``[model] adapter`` when training continued from one, else the bare model."""
    if TRAINED in model.peft_config:
        model.set_adapter("default")
        try:
            yield model
        finally:
            model.set_adapter(TRAINED)
    else:
        with model.disable_adapter():
            yield model


def unsloth_checkpointing(lora: dict) -> str | bool:
    """[lora] gradient_checkpointing for Unsloth: "auto" is Unsloth's own (activations kept in CPU memory)."""
    value = lora["gradient_checkpointing"]
    return "unsloth" if value == "auto" else value


def add_lora(model, config: ProjectConfig, backend: str):
    """(model, peft_config): LoRA from ``[lora]``; for TRL as a peft config that the trainer applies, for
    Unsloth applied here. A model loaded with ``model.adapter`` keeps that adapter and its shape."""
    from peft import LoraConfig, PeftModel

    lora = config.lora
    if isinstance(model, PeftModel):
        return model, None
    check_targets(model, config)
    targets = lora["target_modules"]  # "all-linear" as it is: peft's own word, not a list of letters
    targets = targets if targets == "all-linear" else list(targets)
    if backend == "unsloth":
        from unsloth import FastLanguageModel

        model = FastLanguageModel.get_peft_model(
            model,
            r=lora["r"],
            lora_alpha=lora["alpha"],
            lora_dropout=lora["dropout"],
            target_modules=targets,
            use_gradient_checkpointing=unsloth_checkpointing(lora),
            random_state=config.grpo.get("seed", 42),
        )
        return model, None
    return model, LoraConfig(
        r=lora["r"],
        lora_alpha=lora["alpha"],
        lora_dropout=lora["dropout"],
        target_modules=targets,
        task_type="CAUSAL_LM",
    )


def lora_inputs_uncast(trainer, fast_generation: bool):
    """A context for training in which peft leaves each LoRA layer's input in the activations' dtype. peft casts it
    to the adapter's fp32 before the A matmul, and under the trainer's bf16 or fp16 autocast that matmul casts it
    straight back: the same numbers (a 16-bit value is exact in fp32), two cast kernels per adapted layer and their
    backward for nothing (on a CPU, a 36-layer Qwen3 with LoRA on every linear layer: 12,593 -> 9,586 cast and
    copy operations per forward and backward, logits and gradients bit for bit the same). Only where every forward
    of the policy runs under autocast: mixed precision, and generation answered by the copy (the policy's own
    ``generate`` runs outside autocast and needs the cast); and without LoRA dropout, which would scale the input in
    its 16 bits instead of fp32 (another rounding)."""
    import torch
    from peft.helpers import disable_input_dtype_casting

    from .generation_copy import autocast_dtype

    policy = trainer.accelerator.unwrap_model(trainer.model)
    no_dropout = all(isinstance(dropout, torch.nn.Identity) for module in policy.modules()
                     for dropout in getattr(module, "lora_dropout", {}).values())
    active = fast_generation and no_dropout and autocast_dtype(trainer.accelerator) is not None
    return disable_input_dtype_casting(policy, active=active)


def keep_checkpointing_options(policy) -> None:
    """Let [grpo] gradient_checkpointing_kwargs carry transformers' own options (``every_n_layers``: checkpoint every
    n-th layer only; ``offload``). Trainer takes them out before torch sees the rest, but TRL turns checkpointing off
    around each scoring pass and back on with the dict as it is, and torch's checkpoint then fails the next training
    step ("Unexpected keyword arguments: every_n_layers"). Here they are taken out on every call."""
    inner = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
    enable = inner.gradient_checkpointing_enable

    def enable_with_options(gradient_checkpointing_kwargs=None, every_n_layers=None, offload=None):
        kwargs = dict(gradient_checkpointing_kwargs or {})
        given_every, given_offload = kwargs.pop("every_n_layers", 1), kwargs.pop("offload", False)
        every_n_layers = given_every if every_n_layers is None else every_n_layers
        offload = given_offload if offload is None else offload
        if every_n_layers == 1 and not offload:  # the call as it was: transformers' defaults
            return enable(gradient_checkpointing_kwargs=kwargs or None)
        return enable(gradient_checkpointing_kwargs=kwargs or None, every_n_layers=every_n_layers, offload=offload)

    inner.gradient_checkpointing_enable = enable_with_options


def compile_decoder_layers(policy) -> int:
    """Each decoder layer of the policy through torch.compile in place ([model] compile_layers), for scoring and
    training: the layers share one code, so one set of graphs serves all of them. A call with a KV cache (the
    policy generating: generation = "plain" on a GPU, or any run on a CPU) takes the eager forward, since every
    layer index and cache state would be a graph of its own (9 graphs instead of 3 for the tiny preset's two
    layers; a 36-layer model would exhaust the recompile limit). Dynamic shapes from the start (completions change
    length every generation) and room for the variants a step meets: with and without grad, with and without the
    adapters (the reference), checkpointed or not. Under torch's default limit of 8 the layers met a 9th on an H100
    and ran uncompiled from then on; with these, no recompile after the first step (2026-12-06). Returns how many
    layers it compiled."""
    import torch
    import torch._dynamo

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 32)
    layers = [module for module in policy.modules() if type(module).__name__.endswith("DecoderLayer")]
    for layer in layers:
        layer._compiled_call_impl = _compiled_without_cache(layer, torch.compile(layer._call_impl, dynamic=True))
    return len(layers)


def _compiled_without_cache(layer, compiled):
    """What nn.Module.compile sets as the layer's call: ``compiled``, except for a call with a KV cache."""
    def call(*args, **kwargs):
        if kwargs.get("past_key_values") is not None:
            return layer._call_impl(*args, **kwargs)
        return compiled(*args, **kwargs)

    return call


def check_targets(model, config: ProjectConfig) -> None:
    """Each [lora] target_modules name matches a module of this model, as peft matches them (the name's last
    parts): refused in one line with the model's own linear layers, not in peft's page of text. ``model`` may hold
    no weights (`grpo-skill check` builds it on the meta device)."""
    import torch

    targets = config.lora["target_modules"]
    if targets == "all-linear":  # peft picks the linear layers itself
        return
    layers = linear_layers(model)
    missing = [target for target in targets if not lora_modules(layers, [target])]
    if missing:
        linear = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                         if isinstance(module, torch.nn.Linear)})
        raise config.error(("lora", "target_modules"), _(
            "{missing} matches no module of this model; its linear layers: {linear}").format(
            missing=", ".join(map(repr, missing)), linear=", ".join(linear)))


def linear_layers(model) -> dict[str, bool]:
    """Each module's name, and whether peft's "all-linear" takes it: a linear layer other than the output layer."""
    import torch
    from transformers.pytorch_utils import Conv1D

    output = model.get_output_embeddings()
    return {name: isinstance(module, (torch.nn.Linear, Conv1D)) and module is not output
            for name, module in model.named_modules() if name}


def lora_modules(layers: dict[str, bool], targets) -> set[str]:
    """The modules among ``layers`` (from :func:`linear_layers`) that peft puts a LoRA on for ``targets``, matched
    as peft matches them: "all-linear", every linear layer but the output layer (an adapter's config saves the names
    it stood for); a list, each name a module's whole name or its last parts; another string, a regular expression
    of whole names."""
    if targets == "all-linear":
        return {name for name, linear in layers.items() if linear}
    if isinstance(targets, str):
        return {name for name in layers if re.fullmatch(targets, name)}
    return {name for name in layers if any(name == target or name.endswith("." + target) for target in targets)}


def _check_adapter_base(adapter: Path | None, model_path: str) -> None:
    """Unsloth takes the base model from the adapter's config: it must be the project's model."""
    if adapter is None:
        return
    base = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        return
    if Path(base).exists() and Path(model_path).exists():
        if Path(base).resolve() != Path(model_path).resolve():
            raise ConfigError(
                _("model.adapter was trained on {base}, but model.name is {model}; train the adapter on this model "
                  "(python sft.py) or point model.name at {base}").format(base=base, model=model_path)
            )
    elif base.casefold() != str(model_path).casefold():  # hub ids: Unsloth may have renamed its 4-bit variant
        print(_("note: model.adapter names {base} as its base model; model.name is {model}").format(
            base=base, model=model_path), file=sys.stderr)
