"""A GRPO loop as a user writes it from Unsloth's Qwen3 (4B) GRPO notebook: FastLanguageModel, get_peft_model and
TRL's GRPOTrainer, nothing from grpo-skill. Its settings come from a JSON file (benchmarks/run.py writes the same
ones it gives the generated project), so the two do the same work:

    python benchmarks/handwritten_unsloth.py SETTINGS.json
"""

import json
import sys

from unsloth import FastLanguageModel  # first, so that it patches transformers and TRL

from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

settings = json.load(open(sys.argv[1]))
lora = settings["lora"]

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name=settings["model"],
    max_seq_length=settings["max_seq_length"],
    load_in_4bit=settings["load_in_4bit"],
    fast_inference=False,  # no vLLM here
)
model = FastLanguageModel.get_peft_model(
    model,
    r=lora["r"],
    target_modules=lora["target_modules"],
    lora_alpha=lora["alpha"],
    lora_dropout=lora["dropout"],
    use_gradient_checkpointing=lora["gradient_checkpointing"],
    random_state=settings["grpo"].get("seed", 3407),
)

dataset = load_dataset("json", data_files=settings["prompts"], split="train")
dataset = dataset.map(lambda row: {"prompt": [{"role": "user", "content": row["prompt"]}]})


def reward_length(completions, **kwargs):
    return [min(len(completion[0]["content"].split()) / 50, 1.0) for completion in completions]


def reward_ends_sentence(completions, **kwargs):
    return [0.5 if completion[0]["content"].strip().endswith(".") else 0.0 for completion in completions]


# The thinking case: what the generated thinking project scores (a thinking reward on the </think> token id, and
# DAPO's soft overlong punishment), written as a user would, so that both do the same scoring work.
THINK_END_ID = tokenizer.convert_tokens_to_ids("</think>")


def reward_thinking(completion_ids, **kwargs):
    scores = []
    for ids in completion_ids:
        ids = list(ids)
        scores.append(-1.0 if THINK_END_ID not in ids else 1.0 if ids.index(THINK_END_ID) >= 30 else 0.5)
    return scores


if settings.get("case") == "thinking":
    from trl.rewards import get_soft_overlong_punishment

    budget = settings["grpo"]["max_completion_length"]
    reward_funcs = [reward_thinking, get_soft_overlong_punishment(max_completion_len=budget,
                                                                   soft_punish_cache=budget // 5)]
    reward_weights = [1.0, 0.5]
else:
    reward_funcs, reward_weights = [reward_length, reward_ends_sentence], None


training_args = GRPOConfig(
    output_dir=settings["output_dir"],
    max_steps=settings["max_steps"],
    report_to="none",
    reward_weights=reward_weights,
    **settings["grpo"],
)
trainer = GRPOTrainer(
    model=model,
    processing_class=tokenizer,
    reward_funcs=reward_funcs,
    args=training_args,
    train_dataset=dataset,
)
trainer.train()
