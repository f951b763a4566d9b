"""The built-in presets: the seed guide's two Qwen3-4B set-ups, and a tiny Qwen3 built locally."""

from grpo_skill import LoraSettings, Preset, hookimpl
from grpo_skill.i18n import N_  # descriptions are translated where they are shown (grpo-skill presets)
from grpo_skill.registry import QWEN3_LORA_TARGETS

# The seed's GRPOConfig: 1 prompt x 4 generations per step, lr 10x below SFT, a KL penalty of 0.1.
SEED_GRPO = {
    "learning_rate": 1e-5,
    "beta": 0.1,
    "num_generations": 4,
    "max_completion_length": 128,
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": 4,
    "max_steps": 100,
    "optim": "adamw_8bit",
    "logging_steps": 1,
    # A checkpoint every 20 steps (at most 1-4 minutes of GPU time lost to a crash; Ctrl-C saves at once);
    # two are kept, so that one cut off while saving still leaves one to resume from.
    "save_steps": 20,
    "save_total_limit": 2,
}


def build_tiny_model() -> str:
    from grpo_skill import modelbuild  # imports torch/transformers: only when a run needs the model

    return str(modelbuild.build("tiny", opens_think=True))


# Departures from the seed, each because the seed's value cannot learn on the preset's real model (SKILL.md's
# preset table says why, in both languages):
# - standard: Qwen3-4B is a hybrid model that thinks unless told not to; its answers are scored by length and
#   format, so its prompts are rendered with thinking off. 128 tokens cut most of its chat answers before
#   their end, where every truncated answer scores the same (no final '.'): 512, and room for the prompt.
# Speed (docs/benchmarks.md, Qwen3-4B's shape): generation dominates a step, and sampling the completions of several
# optimizer steps in one batch costs little more than sampling one step's: 8 optimizer steps per generation
# (steps_per_generation counts micro-batches). A step's 4 completions in one micro-batch, not the seed's 4 of one:
# a pass over one 512-token completion is bound by the host launching its kernels (an H100, 2026-12-06: the
# benchmark's step took 2.52 s in micro-batches of one, 0.71 in one of 8); TRL's and Unsloth's default loss
# ("dapo") divide by the whole step's tokens, so the optimizer step is the same.
STANDARD_GRPO = {**SEED_GRPO, "max_completion_length": 512, "per_device_train_batch_size": 4,
                 "gradient_accumulation_steps": 1, "steps_per_generation": 8}
# - thinking: Qwen3-4B-Thinking-2507 always thinks first, for hundreds to thousands of tokens (its card
#   recommends 32,768 output tokens); at 128 almost no completion reaches </think> and every one scores -1.
#   2048 lets most answers to everyday questions close their thinking; 512 more for the prompt.
#   4 optimizer steps per generation, not 8: its completions are 4x longer, and so is their KV cache.
#   Groups of 8, not 4 (TRL's default): a thinking model often answers a prompt alike 4 times (all right or all
#   cut off: no spread, no learning from it). The generation batch stays 16 completions (2 prompts x 8 instead of
#   4 x 4), so memory and time per step are unchanged; each prompt is seen half as often per step.
#   The seed's micro-batches of one completion stay: a pass over 2048 tokens keeps the GPU busy (plan: no gain from
#   merging them), and one micro-batch of 4 would hold ~40 GiB more activations.
THINKING_GRPO = {**SEED_GRPO, "num_generations": 8, "max_completion_length": 2048, "steps_per_generation": 4 * 4}


@hookimpl
def register_presets(register):
    register(Preset(
        name="standard",
        description=N_("Qwen3-4B, thinking off, 512-token answers: general GRPO with the length and format rewards."),
        model_id="unsloth/Qwen3-4B-unsloth-bnb-4bit",
        max_seq_length=1024,
        load_in_4bit="auto",  # its 4-bit checkpoint held in 16 bits on the fast path
        grpo=STANDARD_GRPO,
        rewards=(("length", 0.5), ("format", 0.5)),
        chat_template_kwargs={"enable_thinking": False},
        max_position_embeddings=40960,
    ))
    register(Preset(
        name="thinking",
        description=N_("Qwen3-4B-Thinking-2507, 2048-token completions: rewards closing the reasoning with </think> "
                       "within the budget."),
        model_id="unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit",
        max_seq_length=2560,  # the completion budget and 512 tokens of prompt
        load_in_4bit="auto",  # its 4-bit checkpoint held in 16 bits on the fast path
        grpo=THINKING_GRPO,
        # soft_overlong keeps a spread once every completion closes its thinking: in the last 20% of the budget
        # it scores below the completions that finish sooner
        rewards=(("thinking", 1.0), ("soft_overlong", 0.5)),
        template_opens_think=True,
        max_position_embeddings=262144,
    ))
    register(Preset(
        name="tiny",
        description=N_(
            "A tiny Qwen3 built on this machine (no download): a smoke test of the whole loop on a CPU in about a "
            "minute; it learns to emit </think>, not to answer."
        ),
        model_id="grpo-skill/tiny-qwen3",
        max_seq_length=256,
        load_in_4bit=False,
        # A smoke test: with the thinking reward alone it learns to emit </think> early, then pads to the
        # 32-token cap (clipped ratio -> 1.0). With a length penalty beside it (soft_overlong) it stops early,
        # but writes a run of </think> tokens. Held constant at 5e-3: at 1e-2 two of six runs learned, then
        # collapsed to never closing the thinking (every reward -1, so no advantage to recover with). A small KL term
        # pulls such a run back towards its start: on 2 CPU cores, beta 0 left 2 of 65 runs under a 0.5 gain (one
        # fell to -0.9), beta 0.04 none of 40 (median gain 0.91 against 0.83).
        grpo={
            "learning_rate": 5e-3,
            "lr_scheduler_type": "constant",
            "beta": 0.04,
            "num_generations": 8,
            "max_completion_length": 32,
            "per_device_train_batch_size": 8,
            "gradient_accumulation_steps": 1,
            "max_steps": 60,
            "optim": "adamw_torch",
            "logging_steps": 1,
            "save_steps": 20,
            "save_total_limit": 2,
        },
        rewards=(("thinking", 1.0),),
        # lm_head too: in a 64-wide model the tied output layer must move for </think> to become likely
        lora=LoraSettings(target_modules=QWEN3_LORA_TARGETS + ("lm_head",), gradient_checkpointing=False),
        template_opens_think=True,
        build_model=build_tiny_model,
    ))
