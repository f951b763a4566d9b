"""A checkpoint saved in 4 bits by bitsandbytes (the presets' unsloth/...-bnb-4bit models) with ``load_in_4bit =
false`` or on a machine without CUDA: transformers would take ``quantization_config=None`` as "this checkpoint is
16-bit" and stop on mismatched shapes, so the loader loads it as stored and holds its weights in 16 bits.

Loading one needs bitsandbytes, which the CPU suite does not install (with it, every peft import here costs ~1.5 s
more); tests/gpu/test_gpu_projects.py trains from one on a GPU. On a CPU with bitsandbytes 0.50.2 the held weights
gave the 4-bit model's logits exactly (2026-12-04)."""

import json
import shutil

import pytest

# what bitsandbytes 0.50.2 writes into config.json when transformers 5.17 saves a 4-bit model
SAVED_4BIT = {"_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "bfloat16",
              "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": False,
              "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False,
              "llm_int8_skip_modules": None, "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False,
              "quant_method": "bitsandbytes"}


@pytest.fixture
def stored_4bit(tiny_model, tmp_path):
    """The tiny model's folder with a 4-bit checkpoint's config (the loader reads the config before the weights)."""
    folder = shutil.copytree(tiny_model, tmp_path / "tiny-bnb-4bit")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "quantization_config": SAVED_4BIT}))
    return folder


def test_a_checkpoint_saved_in_4_bits_is_told_from_a_16_bit_one(tiny_model, stored_4bit):
    from grpo_skill.runtime import model

    assert model.stored_in_4bit(str(stored_4bit))
    assert not model.stored_in_4bit(str(tiny_model))
    eight_bit = json.loads((stored_4bit / "config.json").read_text())
    eight_bit["quantization_config"] = {**SAVED_4BIT, "load_in_4bit": False, "_load_in_4bit": False,
                                        "load_in_8bit": True, "_load_in_8bit": True}
    (stored_4bit / "config.json").write_text(json.dumps(eight_bit))
    assert not model.stored_in_4bit(str(stored_4bit))


def test_without_bitsandbytes_a_4_bit_checkpoint_is_refused_with_what_to_do(cli, tmp_path, stored_4bit, monkeypatch,
                                                                             english):
    from grpo_skill import project as projects
    from grpo_skill.runtime import machine, model

    cli("new", "four-bit", "--preset", "tiny", "-o", str(tmp_path))
    config = projects.load(tmp_path / "four-bit", {"model.name": str(stored_4bit)}, rewards=False)
    monkeypatch.setattr(machine, "has_bitsandbytes", lambda: False)
    with pytest.raises(projects.ConfigError) as refused:
        model.load(config, "trl")
    assert str(refused.value) == (f"model.name {stored_4bit} is stored in 4 bits (bitsandbytes), which is not "
                                  "installed: pip install bitsandbytes, or name a 16-bit checkpoint of the model")
