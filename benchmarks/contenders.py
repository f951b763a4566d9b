"""What the benchmark runs: the cases, the shared settings, and every contender with what its row tells.

A contender is one program (the generated project's train.py, a hand-written Unsloth loop, or plain TRL) at one
case's settings plus its own changes. Every contender of a case does the same work per optimizer step: one prompt,
``num_generations`` completions of ``max_completion_length`` tokens (a random-weight model never samples its end
token, so every completion runs to full length), one optimizer step over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

QWEN3_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# The settings every contender shares unless it says otherwise: the comparison (G=8, 8 completions per
# step, LoRA r16 on every linear layer, 4-bit, adamw_8bit, beta 0.1).
GRPO_COMMON = {
    "num_generations": 8,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 5e-6,
    "beta": 0.1,
    "optim": "adamw_8bit",
    "logging_steps": 1,
    "temperature": 1.0,
    # One seed for both programs: it picks the prompts (their lengths) and the samples. Unsloth's GRPOConfig
    # defaults to 3407 and the generated project to 42, so without it the two met different prompt lengths.
    "seed": 42,
}
LORA_COMMON = {"r": 16, "alpha": 16, "dropout": 0.0, "target_modules": QWEN3_TARGETS,
               "gradient_checkpointing": "unsloth"}
MODEL_COMMON = {"load_in_4bit": True}

CASES = {
    "standard": {"preset": "standard", "max_completion_length": 256, "max_seq_length": 512},
    "thinking": {"preset": "thinking", "max_completion_length": 1024, "max_seq_length": 1280},
}
# --dry-run: the tiny model on a CPU, a few tokens; only the plumbing is checked.
DRY_CASES = {
    "standard": {"preset": "standard", "max_completion_length": 12, "max_seq_length": 128},
    "thinking": {"preset": "thinking", "max_completion_length": 40, "max_seq_length": 160},
}
DRY_GRPO = {"num_generations": 4, "per_device_train_batch_size": 4, "optim": "adamw_torch"}

# GRPOConfig keys that make a preset's work per step: its group, micro-batches and completion length.
SHAPE_KEYS = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length")

# GRPOConfig keys that change speed (and memory) but not what one optimizer step learns from: a preset's values
# for these are its "speed settings". The equal-settings rows remove them.
SPEED_KEYS = ("steps_per_generation", "generation_batch_size", "cache_implementation", "use_liger_kernel")


@dataclass(frozen=True)
class Contender:
    name: str  # the row's name; unique with the case
    case: str  # "standard" | "thinking"
    program: str  # "generated" | "hand-written unsloth" | "plain trl"
    backend: str  # "unsloth" | "trl"
    tells: str  # what its row answers
    grpo: dict = field(default_factory=dict)  # GRPOConfig changes on top of the case's
    model: dict = field(default_factory=dict)  # e.g. {"load_in_4bit": False}
    lora: dict = field(default_factory=dict)  # e.g. {"gradient_checkpointing": False}
    preset_speed: bool = False  # add the case preset's speed settings
    # the case preset's own group, batch and lengths instead of the case's: other work per step than the hand-written
    # loop (no comparison with it), for plan's estimate of what `new` makes
    preset_shape: bool = False
    env: dict = field(default_factory=dict)  # extra environment for its process
    ablate: tuple[str, ...] = ()  # benchmarks/harness.py ablations
    tty: bool = False  # run it with a pseudo-terminal as stdout/stderr, as a user's terminal
    compile_decode: bool = False  # plain TRL: let transformers compile the static-cache decode step
    # train.py's --max-steps: a run this long, which the harness stops after its timed steps ("auto" choices that depend
    # on the run's length see it); None: the preset's max_steps for a project left to "auto", else as many as are timed
    run_steps: int | None = None
    warmup_cycles: int = 2  # generation cycles left out (the first includes compilation)
    measure_cycles: int = 3
    guess_s_per_step: float = 5.0  # before any measurement: only to plan the time budget
    fixed_s: float = 45.0  # load, set-up and exit, besides the steps (imports overlap the previous contender)

    @property
    def key(self) -> str:
        return f"{self.case}/{self.name}"


def _unsloth(name, case, tells, **kw):
    return Contender(name=name, case=case, program="generated", backend="unsloth", tells=tells, **kw)


# A static KV cache of one fixed size (the standard case's max_seq_length), so that transformers compiles the decode
# step once: TRL pads each generation batch to its own longest prompt, which would otherwise change the cache size.
STATIC_COMPILED = {"cache_implementation": "static", "generation_kwargs": {"max_cache_len": 512}}
STD, THINK = 4.3, 14.5  # guessed Unsloth s/step at G=8: 256 and 1024 tokens (design.md §6, §8)

# Unsloth runs a one-time check (and may recompile) the first time a longer sequence appears: warm-up steps must
# cover the prompt lengths the timed steps meet, so the equal-settings rows warm up for 2 steps and time 3.
DEFAULT = [
    Contender("hand-written unsloth", "thinking", "hand-written unsloth", "unsloth",
              "the reference for long completions", warmup_cycles=2, measure_cycles=3, guess_s_per_step=THINK,
              fixed_s=110),  # the first Unsloth process also compiles (~50 s) and imports with nothing to overlap
    _unsloth("generated unsloth", "thinking", "equal settings, long completions: the generated project's overhead "
             "(the goal: within 3%)", warmup_cycles=2, measure_cycles=3, guess_s_per_step=THINK, fixed_s=60),
    # 8 timed steps: at 3, one slow step (4.75 s among 4.2-4.3) moved the standard comparison by 4 points
    Contender("hand-written unsloth", "standard", "hand-written unsloth", "unsloth",
              "the reference: a user's own Unsloth GRPO loop at the same settings", measure_cycles=8,
              guess_s_per_step=STD, fixed_s=50),
    _unsloth("generated unsloth", "standard", "the generated project at equal settings: its overhead over the "
             "hand-written loop (the goal: within 3%)", measure_cycles=8, guess_s_per_step=STD),
    _unsloth("generated unsloth + speed", "standard", "the generated project with the standard preset's speed "
             "settings: ahead of the hand-written loop by how much", preset_speed=True, warmup_cycles=1,
             measure_cycles=1, guess_s_per_step=2.4, fixed_s=55),
    _unsloth("generated unsloth + speed", "thinking", "the thinking preset's speed settings", preset_speed=True,
             warmup_cycles=1, measure_cycles=1, guess_s_per_step=9.0, fixed_s=60),
    Contender("plain trl, spg 8, static compiled", "standard", "plain trl", "trl", "static KV cache with the decode "
              "step compiled (TRL turns compilation off; this contender turns it back on)",
              model={"load_in_4bit": False}, grpo={"steps_per_generation": 8, **STATIC_COMPILED},
              compile_decode=True, warmup_cycles=1, measure_cycles=1, guess_s_per_step=2.0, fixed_s=90),
    Contender("plain trl", "standard", "plain trl", "trl", "TRL + peft without Unsloth, bf16 weights (the 20 s/step "
              "reference)", model={"load_in_4bit": False}, warmup_cycles=1, measure_cycles=2, guess_s_per_step=20,
              fixed_s=30),
    Contender("generated trl", "standard", "generated", "trl", "the generated project's TRL backend (4-bit "
              "bitsandbytes + peft)", warmup_cycles=1, measure_cycles=2, guess_s_per_step=25, fixed_s=30),
    Contender("generated trl + speed", "standard", "generated", "trl", "the TRL backend at the standard preset's "
              "speed settings: what a user without Unsloth gets", preset_speed=True, warmup_cycles=1,
              measure_cycles=1, guess_s_per_step=3.5, fixed_s=30),
]

# The generated project as a user gets it: backend and generation path left to "auto" (on a GPU with room for it,
# the fast path: a bf16 copy of the policy, compiled decoding), the preset's speed settings.
DEFAULT += [
    Contender("generated default", "standard", "generated", "auto", "the standard preset as `new` makes it: "
              "whatever path auto takes on this machine", preset_speed=True, warmup_cycles=1, measure_cycles=2,
              guess_s_per_step=1.5, fixed_s=100),
    Contender("generated default", "thinking", "generated", "auto", "the thinking preset as `new` makes it",
              preset_speed=True, warmup_cycles=1, measure_cycles=1, guess_s_per_step=5.0, fixed_s=100),
    # What "auto" saves: the same run with the base held in 4 bits (the default until 2026-12-05). A 4-bit checkpoint
    # held in 16 bits has the same values, so what is learned is the same; only memory and speed differ.
    Contender("generated default, 4-bit base", "standard", "generated", "auto", "the standard default with "
              "load_in_4bit = true: a 4-bit base, and the copy's own bf16 linear layers",
              model={"load_in_4bit": True}, preset_speed=True, warmup_cycles=1, measure_cycles=2,
              guess_s_per_step=1.6, fixed_s=100),
]


# The defaults on a 24 GiB card (issue 21 item 5): what auto takes where `plan` sees 24 GiB, held to 24 GiB on the GPU
# (benchmarks/harness.py, BENCH_GPU_GIB). The target: peak reserved at most 22 GiB.
CARD_24 = {"BENCH_GPU_GIB": "24"}
DEFAULT += [
    Contender("generated default, 24 GiB card", "standard", "generated", "auto", "the standard preset as `new` "
              "makes it, on a 24 GiB card", preset_speed=True, env=CARD_24, warmup_cycles=1, measure_cycles=2,
              guess_s_per_step=1.5, fixed_s=100),
    Contender("generated default, 24 GiB card", "thinking", "generated", "auto", "the thinking preset as `new` "
              "makes it, on a 24 GiB card", preset_speed=True, env=CARD_24, warmup_cycles=1, measure_cycles=1,
              guess_s_per_step=5.0, fixed_s=100),
    # On an 80 GiB card (an H100) the thinking case fits only with checkpointing, which "auto" turns on for one layer
    # in n (the largest n that fits): measured on any card larger than that, as on one of 80 GiB
    Contender("generated default, 80 GiB card", "thinking", "generated", "auto", "the thinking preset as `new` "
              "makes it, on an 80 GiB card (checkpointing of some layers only)", preset_speed=True,
              env={"BENCH_GPU_GIB": "80"}, warmup_cycles=1, measure_cycles=1, guess_s_per_step=4.5, fixed_s=100),
    # There the case's micro-batch of 8 x 1024 tokens kept the fast path out (Unsloth's own generation: 12.0 s/step on
    # an H100 on 2026-12-05, 11.44 on an H200 on 2026-12-06); the same step in 2 micro-batches of 4 lets it in (3.52
    # s/step, 21.5 GiB). Since 2026-12-06 "auto" takes that split itself, so the row above measures it as the default;
    # this one sets it in [grpo].
    Contender("generated default, 24 GiB card, micro-batches of 4", "thinking", "generated", "auto", "the same "
              "with the micro-batches set in [grpo] that auto takes itself where the fast path does not fit the "
              "case's: 2 of 4 completions per step",
              grpo={"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}, preset_speed=True,
              env=CARD_24, warmup_cycles=1, measure_cycles=1, guess_s_per_step=5.0, fixed_s=100),
]


# The standard preset's own shape (G 4, one micro-batch of 4, 512 tokens, a generation every 8 steps), which it
# took on 2026-12-06 and no row measured: plan's estimate for it on an H200 was ~1.0 s/step at 29.1 GiB reserved.
DEFAULT += [
    Contender("generated default, the preset's own shape", "standard", "generated", "auto", "the standard preset "
              "exactly as `new` makes it: its own group (4), micro-batch (4 x 1) and 512-token completions, not the "
              "case's; other work per step than the hand-written loop", preset_speed=True, preset_shape=True,
              warmup_cycles=1, measure_cycles=2, guess_s_per_step=1.2, fixed_s=100),
]


def preset_defaults(contender: Contender) -> bool:
    """Whether a row is the generated project exactly as `new` makes it (besides the case's equal work, unless it
    takes the preset's own shape), on this card or on one of a smaller size (BENCH_GPU_GIB)."""
    return (contender.program == "generated" and contender.backend == "auto" and contender.preset_speed
            and not contender.model and not contender.lora and not contender.grpo and not contender.ablate
            and not contender.compile_decode and not contender.run_steps and set(contender.env) <= {"BENCH_GPU_GIB"})


# Suspects for the generated project's overhead: each changes one thing against "generated unsloth".
OVERHEAD = [
    Contender("hand-written unsloth", "standard", "hand-written unsloth", "unsloth", "the reference",
              guess_s_per_step=STD, fixed_s=110),
    _unsloth("generated unsloth", "standard", "equal settings", guess_s_per_step=STD),
    _unsloth("generated unsloth, no callbacks", "standard", "without grpo-skill's callbacks (progress bar, "
             "metrics.jsonl): their cost", ablate=("no_callbacks",), guess_s_per_step=STD),
    _unsloth("generated unsloth, allocator set first", "standard", "PYTORCH_ALLOC_CONF=expandable_segments:True "
             "before torch starts: train.py initialises CUDA before it imports unsloth, which sets it too late",
             env={"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, guess_s_per_step=STD),
    Contender("hand-written unsloth, terminal", "standard", "hand-written unsloth", "unsloth", "tqdm drawing to a "
              "terminal", tty=True, guess_s_per_step=STD),
    _unsloth("generated unsloth, terminal", "standard", "rich's progress bar drawing to a terminal", tty=True,
             guess_s_per_step=STD),
    _unsloth("generated unsloth, terminal, rich manual refresh", "standard", "the progress bar drawn only at each "
             "step, without rich's refresh thread (a one-line change to RichProgress)", tty=True,
             ablate=("rich_manual_refresh",), guess_s_per_step=STD),
    _unsloth("generated unsloth, TRL's gradient_checkpointing flag", "standard", "GRPOConfig.gradient_checkpointing "
             "left True as in a hand-written loop (train.py passes False with Unsloth)", ablate=("trl_default_gc",),
             guess_s_per_step=STD),
]

# Speed levers, one at a time against the equal-settings rows.
LEVERS = [
    _unsloth("generated unsloth, spg 4", "standard", "generation batched over 4 optimizer steps (32 sequences)",
             grpo={"steps_per_generation": 4}, warmup_cycles=1, measure_cycles=2, guess_s_per_step=2.6),
    _unsloth("generated unsloth, spg 16", "standard", "128 sequences generated at once for 16 steps",
             grpo={"steps_per_generation": 16}, warmup_cycles=1, measure_cycles=1, guess_s_per_step=1.8),
    _unsloth("generated unsloth, static cache", "standard", "cache_implementation='static'",
             grpo={"cache_implementation": "static"}, guess_s_per_step=STD),
    _unsloth("generated unsloth, beta 0", "standard", "no KL term: no reference-model forward pass (changes what "
             "is learned: a learning choice, not a free lever)", grpo={"beta": 0.0}, guess_s_per_step=STD),
    _unsloth("generated unsloth, no decode graphs", "standard", "UNSLOTH_DECODE_CUDA_GRAPHS=0: what Unsloth's "
             "CUDA-graph decoding gives", env={"UNSLOTH_DECODE_CUDA_GRAPHS": "0"}, warmup_cycles=1,
             measure_cycles=2, guess_s_per_step=6),
    Contender("plain trl, spg 8", "standard", "plain trl", "trl", "plain TRL with generation batched over 8 steps",
              model={"load_in_4bit": False}, grpo={"steps_per_generation": 8}, warmup_cycles=1, measure_cycles=1,
              guess_s_per_step=3.0, fixed_s=30),
    Contender("plain trl, liger", "standard", "plain trl", "trl", "use_liger_kernel: chunked log-probs (no full "
              "151k-vocabulary logits) and Liger's fused kernels", model={"load_in_4bit": False},
              grpo={"use_liger_kernel": True}, warmup_cycles=1, measure_cycles=2, guess_s_per_step=18, fixed_s=30),
    Contender("generated trl, liger", "standard", "generated", "trl", "the TRL backend with use_liger_kernel",
              grpo={"use_liger_kernel": True}, warmup_cycles=1, measure_cycles=2, guess_s_per_step=22, fixed_s=30),
    Contender("generated trl, spg 8, static compiled", "standard", "generated", "trl", "the TRL backend (4-bit) with "
              "a compiled static-cache decode step, turned on by the harness (train.py refuses compile_decoding with "
              "4-bit weights)", grpo={"steps_per_generation": 8, **STATIC_COMPILED}, compile_decode=True,
              warmup_cycles=1, measure_cycles=1, guess_s_per_step=3.0, fixed_s=90),
    Contender("generated trl bf16, spg 8, compile_decoding", "standard", "generated", "trl", "the TRL backend with "
              "[model] compile_decoding = true and bf16 weights: the project's own switch (compare 'plain trl, spg "
              "8, static compiled')", model={"load_in_4bit": False}, grpo={"steps_per_generation": 8,
                                                                           **STATIC_COMPILED},
              compile_decode=True, warmup_cycles=1, measure_cycles=1, guess_s_per_step=2.0, fixed_s=90),
    _unsloth("generated unsloth, spg 8", "thinking", "long completions, 64 sequences at once: the memory it takes",
             grpo={"steps_per_generation": 8}, warmup_cycles=1, measure_cycles=1, guess_s_per_step=7.5),
    Contender("plain trl, liger", "thinking", "plain trl", "trl", "long completions: the logits' memory without and "
              "with Liger (compare generated trl)", model={"load_in_4bit": False}, grpo={"use_liger_kernel": True},
              warmup_cycles=1, measure_cycles=1, guess_s_per_step=45, fixed_s=30),
]

# The training phases of the default. The 2026-12-05 profile found the GPU busy 20-32% of scoring, forward and
# backward: the host sets their pace. Rows measured that day (with a 4-bit base: a settings slip) turned off gradient
# checkpointing and cuDNN attention and scored each generation whole: 0.89 s/step against 1.36. The first two are the
# default since; each row below changes one thing against the default, to keep measuring what each is worth.
TRAINING = [
    Contender("generated default, scoring whole", "standard", "generated", "auto", "the standard default with the old "
              "and reference log-probs of a generation scored in one batch each (TRL scores them in chunks of "
              "per_device_train_batch_size): fewer, larger launches for more memory", preset_speed=True,
              ablate=("score_whole_generation",), warmup_cycles=1, measure_cycles=2, guess_s_per_step=1.0,
              fixed_s=100),
    Contender("generated default, gradient checkpointing", "standard", "generated", "auto", "the standard default "
              "with gradient checkpointing on (\"auto\" turns it off where plan says the run fits): what the "
              "backward's second forward costs", preset_speed=True, lora={"gradient_checkpointing": "unsloth"},
              warmup_cycles=1, measure_cycles=2, guess_s_per_step=1.2, fixed_s=100),
    Contender("generated default, cuDNN attention", "standard", "generated", "auto", "the standard default with "
              "PyTorch's cuDNN attention back on (train.py turns it off: it builds a graph per new sequence length)",
              preset_speed=True, ablate=("cudnn_attention",), warmup_cycles=1, measure_cycles=2,
              guess_s_per_step=1.2, fixed_s=100),
    Contender("generated default, compiled training", "standard", "generated", "auto", "the standard default with "
              "the model's forward compiled for scoring and training (torch.compile; generation untouched): the 2026-12-05 "
              "profile found these phases bound by the host, not the GPU", preset_speed=True,
              ablate=("compile_training",), warmup_cycles=2, measure_cycles=2, guess_s_per_step=1.0, fixed_s=200),
    Contender("generated default, LoRA input casts", "standard", "generated", "auto", "the standard default with "
              "peft's casts of each LoRA layer's input to fp32 kept (train.py skips them under autocast: autocast "
              "casts back at once)", preset_speed=True, ablate=("lora_input_casts",), warmup_cycles=1,
              measure_cycles=2, guess_s_per_step=1.2, fixed_s=100),
    Contender("generated default, scoring whole", "thinking", "generated", "auto", "the thinking default with each "
              "generation scored whole", preset_speed=True, ablate=("score_whole_generation",), warmup_cycles=1,
              measure_cycles=1, guess_s_per_step=4.0, fixed_s=100),
]
# Attention in scoring and training: since 2026-12-07 train.py moves each sequence to the start of its row and
# attends without a padding mask (runtime/aligned_rows.py; an H100 profile of 2026-12-06 found the thinking step's
# attention in SDPA's memory-efficient kernel, 267 ms of its 1,274 ms of kernels outside generation, since the mask
# rules flash out). These rows measure the batches as GRPOTrainer pads them, with the mask.
TRAINING += [
    Contender("generated default, padded rows", case, "generated", "auto", f"the {case} default scoring and "
              "training on the batches as GRPOTrainer pads them, with their padding mask", preset_speed=True,
              ablate=("padded_rows",), warmup_cycles=1, measure_cycles=cycles, guess_s_per_step=guess, fixed_s=100)
    for case, guess, cycles in (("standard", 0.8, 2), ("thinking", 3.6, 1))
]
# The seed and the thinking preset train in micro-batches of one completion (per_device_train_batch_size 1, 4
# accumulated), the cases in one of 8: the same optimizer step (TRL's default loss, "dapo", divides by the tokens of
# the whole accumulated batch), in 8 forward and backward passes of one sequence each. What that costs, where the
# training phases were found bound by the host (kernel launches), not the GPU: on an H100 (2026-12-06) standard 2.52
# s/step against 0.71, thinking 4.34 against 3.54; the standard preset has since taken its step in one micro-batch.
MICRO_BATCHES_OF_ONE = {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 8}
TRAINING += [
    Contender("generated default, micro-batches of 1", case, "generated", "auto", f"the {case} default in the presets' "
              "micro-batches of one completion, 8 accumulated per optimizer step: the same step in 8 passes",
              grpo=MICRO_BATCHES_OF_ONE, preset_speed=True, warmup_cycles=1, measure_cycles=cycles,
              guess_s_per_step=guess, fixed_s=100)
    for case, guess, cycles in (("standard", 1.5, 2), ("thinking", 5.0, 1))
]

# Generation on the fast path, each lever of 2026-12-05 taken out of the default: the adapters' A inside each base
# matmul and q/k/v and gate/up in one matmul each (runtime/fused_projections.py; the decode table of 2026-12-04 found
# the adapters' small matmuls costing ~10 us a layer per token); the decode attention reading the static cache up to
# the tokens so far (it read all of it: these cases' caches are 512 and 1280 tokens, the presets' 1024 and 2560); and
# generate reading one step late whether every sequence ended (it waited for the GPU at each token).
def _generation_rows(case: str, guess: float, cycles: int) -> list[Contender]:
    rows = [("projections apart", ("projections_apart",), "the generation copy's adapters and projections in "
             "matmuls of their own, as before 2026-12-05"),
            ("whole cache read", ("whole_cache_reads",), "the copy's decode attention reading its whole static cache "
             "at every step"),
            ("stop check each token", ("stop_check_each_token",), "generate waiting for the GPU at each token to "
             "learn whether every sequence ended"),
            ("none of the three", ("projections_apart", "whole_cache_reads", "stop_check_each_token"), "the fast "
             "path as it was before 2026-12-05")]
    return [Contender(f"generated default, {name}", case, "generated", "auto", f"the {case} default with {tells}",
                      preset_speed=True, ablate=ablate, warmup_cycles=1, measure_cycles=cycles,
                      guess_s_per_step=guess, fixed_s=100)
            for name, ablate, tells in rows]


GENERATION = _generation_rows("standard", 1.2, 2) + _generation_rows("thinking", 4.5, 1)
# A lever, not an ablation: the decode step compiled with torch.compile's max-autotune, which times Triton matmuls
# against cuBLAS for each shape (the decode table of 2026-12-03 put the batch-64 step's matmuls at ~2x their share of
# the floor); its first generation compiles longer.
GENERATION += [
    Contender("generated default, decode max-autotune", case, "generated", "auto", f"the {case} default with its "
              "decode step compiled in torch.compile's max-autotune mode", preset_speed=True,
              ablate=("decode_max_autotune",), warmup_cycles=1, measure_cycles=cycles, guess_s_per_step=guess,
              fixed_s=300)
    for case, guess, cycles in (("standard", 1.0, 2), ("thinking", 3.5, 1))
]
# A long run's default: train.py takes max-autotune by itself where the run's generations repay it (planning.
# decode_compile_mode); the same project with --max-steps 2000, stopped after its timed steps.
GENERATION += [
    Contender("generated default, a 2000-step run", case, "generated", "auto", f"the {case} default as a run of "
              "2000 steps takes it (the decode step's compile mode and compile_layers follow the run's length), stopped "
              "after its timed steps", preset_speed=True, run_steps=2000, warmup_cycles=1, measure_cycles=cycles,
              guess_s_per_step=guess, fixed_s=300)
    for case, guess, cycles in (("standard", 1.0, 2), ("thinking", 3.5, 1))
]

# The training phases (scoring, forward, backward: ~1.3 s of the thinking step's ~3.2 on an H100) through
# torch.compile, for a long run where its first compile would be repaid: whether that lever is worth a train.py choice.
GENERATION += [
    Contender("generated default, a 2000-step run, compiled training", "thinking", "generated", "auto", "the "
              "thinking default as a 2000-step run with the model's forward compiled for scoring and training",
              preset_speed=True, run_steps=2000, ablate=("compile_training",), model={"compile_layers": False},
              warmup_cycles=2, measure_cycles=1, guess_s_per_step=3.5, fixed_s=400),
    # The same fusions for less compilation: one set of graphs for the 36 decoder layers, not one for the whole model;
    # what a long run's compile_layers = "auto" takes (an H100, 2026-12-06: 2.72 s/step against 3.18), here turned off
    Contender("generated default, a 2000-step run, layers uncompiled", "thinking", "generated", "auto", "the "
              "thinking default as a 2000-step run with compile_layers = false: what compiling the decoder layers for "
              "scoring and training gains", preset_speed=True, run_steps=2000, model={"compile_layers": False},
              warmup_cycles=2, measure_cycles=1, guess_s_per_step=3.5, fixed_s=150),
    # Compiled layers hold less (53.4 GiB allocated against 63.1 on an H100), but plan fits a run as if they were eager
    # (past torch's recompile limit they would be): on an 80 GiB card the long run keeps checkpointing one layer in 8.
    # What dropping it would gain, where the compiled layers leave the room (generation = "fast": "auto" would split
    # the micro-batches instead, as plan fits the eager layers).
    Contender("generated default, a 2000-step run, no checkpointing", "thinking", "generated", "auto", "the "
              "thinking default as a 2000-step run (layers compiled) with gradient checkpointing off: what checkpointing "
              "costs a compiled run on a card where plan keeps it", preset_speed=True, run_steps=2000,
              lora={"gradient_checkpointing": False}, model={"generation": "fast"}, warmup_cycles=1,
              measure_cycles=1, guess_s_per_step=3.0, fixed_s=300),
]

SUITES = {"default": DEFAULT, "overhead": OVERHEAD, "levers": LEVERS, "training": TRAINING,
          "generation": GENERATION}

# --dry-run on a CPU: no Unsloth; the code paths of the GPU contenders (the generated project, its speed settings
# and ablations, a pseudo-terminal, plain TRL) on the tiny model.
DRY = [
    Contender("generated trl", "standard", "generated", "trl", "the generated project (TRL backend)"),
    Contender("generated trl + speed", "standard", "generated", "trl", "with the preset's speed settings",
              preset_speed=True),
    Contender("generated trl, no callbacks", "standard", "generated", "trl", "the no_callbacks ablation",
              ablate=("no_callbacks",)),
    Contender("generated trl, terminal, rich manual refresh", "standard", "generated", "trl",
              "rich in a pseudo-terminal, drawn at each step only", tty=True, ablate=("rich_manual_refresh",)),
    Contender("generated trl, scoring whole, cuDNN attention", "standard", "generated", "trl", "the "
              "training-phase ablations", ablate=("score_whole_generation", "cudnn_attention"), preset_speed=True),
    Contender("generated trl, compiled training", "standard", "generated", "trl", "the compile_training ablation",
              ablate=("compile_training",), preset_speed=True),
    Contender("generated trl, compiled layers", "standard", "generated", "trl", "the project's compile_layers = "
              "true", model={"compile_layers": True}, preset_speed=True),
    Contender("plain trl", "standard", "plain trl", "trl", "plain TRL"),
    Contender("generated trl", "thinking", "generated", "trl", "the thinking case"),
]
for _dry in DRY:  # plan the dry run's time: a few seconds a step, imports and the tiny model's load
    object.__setattr__(_dry, "guess_s_per_step", 3.0)
    object.__setattr__(_dry, "fixed_s", 40.0)


def suite(names: list[str]) -> list[Contender]:
    """Contenders of the named suites, in order, each once (``all``: every suite)."""
    chosen, seen = [], set()
    for name in names:
        for contender in (c for s in SUITES.values() for c in s) if name == "all" else SUITES[name]:
            if contender.key not in seen:
                seen.add(contender.key)
                chosen.append(contender)
    return chosen
