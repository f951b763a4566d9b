"""Builds Qwen3 models and tokenizers on this machine, with no download.

``tiny`` is small enough to train with GRPO on two CPU cores and learnable: its byte-level BPE vocabulary
has a few hundred tokens, so a random model samples ``</think>`` often enough for a thinking reward to vary.
``qwen3-4b`` has Qwen3-4B's exact shape and puts the special tokens at Qwen3's ids (``</think>`` = 151668):
random weights, but real compute and memory for GPU tests and benchmarks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import string
import tempfile
import dataclasses
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .estimate import KNOWN_SHAPES, ModelShape

CACHE_ENV = "GRPO_SKILL_CACHE"
BUILDER_VERSION = 2


@dataclass(frozen=True)
class Shape:
    """A model to build: its decoder's dimensions (``estimate.ModelShape``, the one home of a model's shape; a
    vocab_size of 0 takes as many as its tokenizer makes) and how its tokenizer is made."""

    decoder: ModelShape
    bpe_vocab: int
    max_position_embeddings: int
    # id of <|endoftext|>; the other special tokens follow at Qwen3's offsets. None: right after the BPE vocab.
    first_special_id: int | None = None
    # All 256 bytes in the vocabulary (any text encodes), or only printable ASCII plus the corpus's
    # characters: tiny's ~150 tokens make its random model sample </think> in about 1 of 8 completions
    # (measured: 12% of 256 samples of 32 tokens), often enough for GRPO to see the reward vary.
    all_bytes: bool = True

    def cache_fields(self) -> dict:
        """The fields the cache key was made of before the decoder's dimensions moved to ModelShape (same key, so
        that a model built before is found again)."""
        decoder = self.decoder
        return {"hidden_size": decoder.hidden_size, "intermediate_size": decoder.intermediate_size,
                "num_hidden_layers": decoder.num_hidden_layers, "num_attention_heads": decoder.num_attention_heads,
                "num_key_value_heads": decoder.num_key_value_heads, "head_dim": decoder.head_dim,
                "vocab_size": decoder.vocab_size or None, "bpe_vocab": self.bpe_vocab,
                "max_position_embeddings": self.max_position_embeddings, "first_special_id": self.first_special_id,
                "all_bytes": self.all_bytes}


SHAPES = {
    # Qwen3's positions: a stand-in takes a real config
    "tiny": Shape(dataclasses.replace(KNOWN_SHAPES["tiny-qwen3"], vocab_size=0), 128, 40960, all_bytes=False),
    # For the arithmetic task (grpo_skill.arithmetic): wider and deeper than tiny, to learn two-digit addition.
    "small": Shape(ModelShape(0, 256, 768, 4, 8, 4, 32), 400, 1024),
    "qwen3-4b": Shape(KNOWN_SHAPES["qwen3-4b"], 4000, 40960, first_special_id=151643),
}

# Offsets from <|endoftext|> in Qwen3's vocabulary; the ids in between hold other control tokens.
SPECIAL_OFFSETS = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<think>": 24, "</think>": 25}
THINKING_TOKENS = ("<think>", "</think>")  # added tokens, but not "special": decoding keeps them

# Qwen3-style ChatML. With opens_think the generation prompt already holds "<think>\n", as in
# Qwen3-4B-Thinking-2507, so a completion contains only the closing </think>.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if OPENS_THINK %}{{- '<think>\\n' -}}"
    "{%- elif enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' -}}"
    "{%- endif -%}"
    "{%- endif -%}"
)


def cache_dir() -> Path:
    root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "grpo-skill"
    return Path(root) / "models"


def _corpus() -> list[str]:
    prompts = resources.files("grpo_skill.templates").joinpath("project/_i18n/data/prompts.en.jsonl").read_text()
    lines = [json.loads(line)["prompt"] for line in prompts.splitlines() if line.strip()]
    thinking = [
        "First, let me think about what is being asked. Then I check each step. Next, is that right? "
        "Finally, I write the answer.",
        "The answer is 42. Let me check: 6 times 7 is 42. So the answer is 42.",
    ]
    return lines + thinking + ["0 1 2 3 4 5 6 7 8 9 + - * / = ? ! . , : ;"]


def build_tokenizer(shape: Shape, opens_think: bool):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=shape.bpe_vocab,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if shape.all_bytes else [],
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus() + [string.printable], trainer)

    model = json.loads(bpe.to_str())["model"]
    vocab, merges = model["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    first_special = shape.first_special_id if shape.first_special_id is not None else len(vocab)
    # Unreachable filler entries push the special tokens up to Qwen3's ids.
    for filler in range(len(vocab), first_special):
        vocab[f"<|filler_{filler}|>"] = filler
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer, tokenizer.decoder = bpe.pre_tokenizer, bpe.decoder

    next_offset = 0
    for token, offset in SPECIAL_OFFSETS.items():
        for reserved in range(next_offset, offset):  # Qwen3 keeps other control tokens there
            tokenizer.add_special_tokens([AddedToken(f"<|reserved_{reserved}|>", special=True)])
        is_special = token not in THINKING_TOKENS
        tokenizer.add_tokens([AddedToken(token, special=is_special, normalized=False)])
        next_offset = offset + 1
    for token, offset in SPECIAL_OFFSETS.items():
        assert tokenizer.token_to_id(token) == first_special + offset, token

    template = CHAT_TEMPLATE.replace("OPENS_THINK", "true" if opens_think else "false")
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        chat_template=template,
        model_max_length=shape.max_position_embeddings,
    )


def build_model(shape: Shape, tokenizer, dtype: str, seed: int = 0):
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    decoder = shape.decoder
    config = Qwen3Config(
        vocab_size=decoder.vocab_size or len(tokenizer),
        hidden_size=decoder.hidden_size,
        intermediate_size=decoder.intermediate_size,
        num_hidden_layers=decoder.num_hidden_layers,
        num_attention_heads=decoder.num_attention_heads,
        num_key_value_heads=decoder.num_key_value_heads,
        head_dim=decoder.head_dim,
        max_position_embeddings=shape.max_position_embeddings,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=decoder.tie_word_embeddings,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype=dtype,
    )
    with torch.device("cuda" if decoder.vocab_size and torch.cuda.is_available() else "cpu"):
        model = Qwen3ForCausalLM(config).to(getattr(torch, dtype))
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id, config.bos_token_id],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
    )
    return model


BUILD_MARKER = ".grpo-skill-build"  # the build's key: a folder holding it was written by build()


def _built_here(target: Path, key: str) -> bool:
    try:
        return (target / BUILD_MARKER).read_text(encoding="utf-8").strip() == key and (target / "config.json").is_file()
    except OSError:
        return False


def _refuse_users_folder(target: Path) -> None:
    """--out writes only into a new or empty folder: whatever else is there is the user's."""
    from ..core.errors import UserError
    from ..core.i18n import _

    if target.exists() and not target.is_dir():
        raise UserError(_("--out {dir} exists and is not a folder; choose a new or empty folder").format(dir=target))
    if target.is_dir() and (target / BUILD_MARKER).is_file():  # ours, but another shape, template or version
        raise UserError(_("--out {dir} holds another model built by grpo-skill (another shape, chat template or "
                          "builder version); choose a new or empty folder (nothing in it was changed)").format(
            dir=target))
    if target.is_dir() and any(target.iterdir()):
        raise UserError(_("--out {dir} is not empty and holds no model built by grpo-skill; choose a new or empty "
                          "folder (nothing in it was changed)").format(dir=target))


def build(shape_name: str = "tiny", opens_think: bool = True, dest: str | Path | None = None) -> Path:
    """Build (or find in the cache) a Qwen3 model + tokenizer; returns the folder to load it from."""
    shape = SHAPES[shape_name]
    dtype = "bfloat16" if shape.decoder.vocab_size else "float32"
    key = hashlib.sha256(json.dumps([BUILDER_VERSION, shape.cache_fields(), opens_think, dtype]).encode()).hexdigest()[:12]
    target = Path(dest) if dest else cache_dir() / f"qwen3-{shape_name}-{'think' if opens_think else 'chat'}-{key}"
    if dest is None and (target / "config.json").is_file():
        return target
    if dest is not None and _built_here(target, key):
        return target
    if dest is not None:
        _refuse_users_folder(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        tokenizer = build_tokenizer(shape, opens_think)
        tokenizer.save_pretrained(staging)
        build_model(shape, tokenizer, dtype).save_pretrained(staging)
        (staging / BUILD_MARKER).write_text(key + "\n", encoding="utf-8")
        if dest is None and target.exists() and not (target / "config.json").is_file():
            shutil.rmtree(target)  # the cache's own half-built leftover; a --out folder is only ever an empty one
        elif dest is not None and target.is_dir():
            target.rmdir()  # empty: checked above
        try:
            staging.rename(target)  # whole or not at all: a half-built model is never found in the cache
        except OSError:
            if not (target / "config.json").is_file():
                raise
            # another process (of the same accelerate launch) built the same model first: the builds are seeded
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
