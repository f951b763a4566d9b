"""GRPO with plain TRL + peft, as TRL's documentation shows it: no Unsloth, nothing from grpo-skill. Settings from
a JSON file (benchmarks/run.py writes it), so it does the same work as the other contenders:

    python benchmarks/plain_trl.py SETTINGS.json

``"compile_decode": true`` turns transformers' compilation of the static-cache decode step back on: TRL builds its
GenerationConfig with disable_compile=True, so ``cache_implementation="static"`` alone runs uncompiled.
"""

import json
import sys

import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
from trl import GRPOConfig, GRPOTrainer

settings = json.load(open(sys.argv[1]))
lora = settings["lora"]
cuda = torch.cuda.is_available()
dtype = torch.bfloat16 if cuda else torch.float32

quantization = None
if settings["load_in_4bit"] and cuda:
    quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
model = AutoModelForCausalLM.from_pretrained(settings["model"], dtype=dtype, quantization_config=quantization)

dataset = load_dataset("json", data_files=settings["prompts"], split="train")
dataset = dataset.map(lambda row: {"prompt": [{"role": "user", "content": row["prompt"]}]})


def reward_length(completions, **kwargs):
    return [min(len(completion[0]["content"].split()) / 50, 1.0) for completion in completions]


def reward_ends_sentence(completions, **kwargs):
    return [0.5 if completion[0]["content"].strip().endswith(".") else 0.0 for completion in completions]


training_args = GRPOConfig(
    output_dir=settings["output_dir"],
    max_steps=settings["max_steps"],
    report_to="none",
    bf16=cuda,
    gradient_checkpointing=bool(lora["gradient_checkpointing"]),
    **settings["grpo"],
)
trainer = GRPOTrainer(
    model=model,
    reward_funcs=[reward_length, reward_ends_sentence],
    args=training_args,
    train_dataset=dataset,
    peft_config=LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                           target_modules=lora["target_modules"], task_type="CAUSAL_LM"),
)
if settings.get("compile_decode"):
    trainer.generation_config.disable_compile = False
trainer.train()
