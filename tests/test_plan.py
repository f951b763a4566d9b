"""`grpo-skill plan`: memory and time estimates without a GPU, checked against measured runs."""

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import replace

import pytest
from click.testing import CliRunner

from grpo_skill import plan
from grpo_skill.cli import main
from support import REPO

# The committed benchmark once a GPU run has produced it; the measurements of design.md until then.
MEASURED = REPO / "docs" / "benchmarks.json"
if not MEASURED.is_file():
    MEASURED = REPO / "benchmarks" / "seed-measurements.json"
REPORT = json.loads(MEASURED.read_text())
ROWS = plan.measured_rows(REPORT)
TOLERANCE = 0.25


def test_there_are_measured_rows_to_check_against():
    assert len(ROWS) >= 3, f"{MEASURED} has {len(ROWS)} rows with a measured peak memory"


@pytest.mark.parametrize("row,settings", ROWS, ids=[f"{row['case']}/{row['name']}" for row, _ in ROWS])
def test_the_estimate_is_within_25_percent_of_every_measured_peak(row, settings):
    result = plan.estimate(settings)
    assert abs(result.peak_allocated_gib / row["peak_allocated_gib"] - 1) <= TOLERANCE, (
        f"allocated: estimated {result.peak_allocated_gib:.2f} GiB, measured {row['peak_allocated_gib']} GiB; "
        f"re-fit with `python -m grpo_skill.plan --calibrate {MEASURED.relative_to(REPO)}`")
    if row.get("peak_reserved_gib"):
        assert abs(result.peak_reserved_gib / row["peak_reserved_gib"] - 1) <= TOLERANCE, (
            f"reserved: estimated {result.peak_reserved_gib:.2f} GiB, measured {row['peak_reserved_gib']} GiB")


def test_calibrate_prints_constants_that_fit_the_measurements():
    done = subprocess.run([sys.executable, "-m", "grpo_skill.plan", "--calibrate", str(MEASURED)],
                          capture_output=True, text=True, check=True)
    fitted = ast.literal_eval(done.stdout.split("=", 1)[1].strip())
    assert set(fitted) == set(plan.CALIBRATION)
    for row, settings in ROWS:
        result = plan.estimate(settings, fitted)
        assert abs(result.peak_allocated_gib / row["peak_allocated_gib"] - 1) <= TOLERANCE, row["name"]


def test_a_fit_without_the_thinking_rows_estimates_them():
    """Held out: constants fitted on the standard case alone (4x shorter completions) and the decode table, checked
    on every thinking row. Peak allocated memory and s/step within 25%. Reserved memory within 25% below and 35%
    above: the estimate takes reserved as allocated times one ratio per backend, while measured ratios run from
    1.03 to 1.18 (an over-estimate only makes plan advise a smaller setting)."""
    fitted = plan.calibrate(REPORT, leave_out="thinking")
    held_out = [(row, settings) for row, settings in ROWS if row["case"] == "thinking"]
    assert len(held_out) >= 3
    for row, settings in held_out:
        result = plan.estimate(settings, fitted)
        name = f"{row['name']}: estimated {result.peak_allocated_gib:.2f} GiB, {result.s_per_step:.2f} s/step"
        assert abs(result.peak_allocated_gib / row["peak_allocated_gib"] - 1) <= TOLERANCE, name
        if row["on_report_gpu"]:  # times are fitted on the report's card; rows merged from another say memory only
            assert abs(result.s_per_step / row["s_per_step"] - 1) <= TOLERANCE, name
        assert -TOLERANCE <= result.peak_reserved_gib / row["peak_reserved_gib"] - 1 <= 0.35, name


def test_a_fit_keeps_the_constants_no_row_depends_on():
    """Without Unsloth rows, nothing measures Unsloth's decoding or training: a fit must leave those constants as
    they are rather than drift with the search, and say which it kept."""
    shape = plan.ModelShape.from_config(REPORT["model"]["shape"])
    gpu_gib = REPORT["environment"]["gpu_memory_gib"]
    trl_only = {**REPORT, "rows": [
        row for row in REPORT["rows"] if not row.get("settings")
        or plan.from_benchmark_row(row, shape, row.get("run_gpu_gib") or gpu_gib).backend != "unsloth"]}
    kept = plan.constants_without_rows(trl_only)
    assert {"decode_base_s_unsloth", "train_flops_per_s_unsloth", "reserved_ratio_unsloth"} <= set(kept)
    assert "logit_bytes_trl" not in kept  # trl rows measure it
    done = subprocess.run([sys.executable, "-m", "grpo_skill.plan", "--calibrate", str(MEASURED)],
                          capture_output=True, text=True, check=True)
    assert "kept as they are (no row depends on them)" in done.stderr or not plan.constants_without_rows(REPORT)


def test_a_refit_does_not_drift_where_the_rows_leave_a_constant_free():
    """One row per backend fixes its s/step, not how it splits into decoding and training: a refit on the committed
    rows must not wander along such a direction (before the pull towards the current values, TRL 4-bit's training
    FLOP/s went 1.43e14 -> 5.84e14 on unchanged time rows). 3x allows for real refits."""
    fitted = plan.calibrate(REPORT)
    for name, value in fitted.items():
        if plan.CALIBRATION[name] > 0:
            assert 1 / 3 <= value / plan.CALIBRATION[name] <= 3, (
                f"{name}: {plan.CALIBRATION[name]:.3g} -> {value:.3g}; paste a fresh fit into CALIBRATION if the rows "
                "changed")


def qwen3_4b(**changes) -> plan.Settings:
    return replace(plan.Settings(shape=plan.KNOWN_SHAPES["qwen3-4b"], beta=0.1), **changes)


def test_checkpointing_fewer_layers_costs_more_memory_and_less_time():
    """transformers' every_n_layers (what "auto" picks where the run does not fit without checkpointing): the layers
    left out keep their activations and are not recomputed in the backward. Unsloth checkpoints its own way."""
    trl = qwen3_4b(backend="trl", load_in_4bit=False, gradient_checkpointing=True, max_completion_length=1024)
    every, one_in_8 = plan.estimate(trl), plan.estimate(replace(trl, checkpoint_every_n_layers=8))
    off = plan.estimate(replace(trl, gradient_checkpointing=False))
    assert every.peak_allocated_gib < one_in_8.peak_allocated_gib < off.peak_allocated_gib
    assert every.s_per_step > one_in_8.s_per_step > off.s_per_step
    unsloth = qwen3_4b(max_completion_length=1024)
    assert plan.estimate(replace(unsloth, checkpoint_every_n_layers=8)) == plan.estimate(unsloth)


def test_compiled_layers_hold_fewer_activations_as_measured_and_auto_fits_the_run_as_if_eager():
    """[model] compile_layers: the one call that ran the thinking 2000-step run with and without its layers compiled
    measured what they save in peak memory, and the estimate counts it (a consistency check: the factor comes from
    this pair). What fits the run to the GPU counts the eager layers' memory, compiled or not: past torch's recompile
    limit the layers run eager, and the saving was measured with checkpointing on only."""
    pair = {settings.compiled_layers: (row, settings) for row, settings in ROWS if row["case"] == "thinking"
            and row["name"] in ("generated default, a 2000-step run",
                                "generated default, a 2000-step run, layers uncompiled")}
    (eager_row, eager), (compiled_row, compiled) = pair[False], pair[True]
    assert eager_row["run_date"] == compiled_row["run_date"], "the pair was measured in one call"
    measured = eager_row["peak_allocated_gib"] - compiled_row["peak_allocated_gib"]
    estimated = plan.estimate(eager).peak_allocated_gib - plan.estimate(compiled).peak_allocated_gib
    assert abs(estimated / measured - 1) <= TOLERANCE, (estimated, measured)

    assert plan.needed_gib(plan.estimate(compiled)) == plan.needed_gib(plan.estimate(eager))

    long_run = replace(eager, gradient_checkpointing="auto", checkpoint_every_n_layers=1, max_steps=2000)
    checkpointing = {}
    for asked in ("auto", True, False):
        taken = plan.resolved(replace(long_run, compiled_layers=asked), eager_row["run_gpu_gib"])
        assert taken.compiled_layers is (asked is not False)
        checkpointing[asked] = (taken.gradient_checkpointing, taken.checkpoint_every_n_layers)
    assert checkpointing["auto"] == checkpointing[True] == checkpointing[False] == (True, 8)  # as the pair ran


def test_the_levers_move_memory_the_way_the_advice_assumes():
    base = plan.estimate(qwen3_4b()).peak_allocated_gib
    assert plan.estimate(qwen3_4b(steps_per_generation=8)).peak_allocated_gib > base
    assert plan.estimate(qwen3_4b(load_in_4bit=False)).peak_allocated_gib > base + 4  # 16-bit weights: ~5 GiB more
    assert plan.estimate(qwen3_4b(gradient_checkpointing=False)).peak_allocated_gib > base
    assert plan.estimate(qwen3_4b(max_completion_length=1024)).peak_allocated_gib > base
    trl = qwen3_4b(backend="trl", load_in_4bit=False, gradient_checkpointing=True, max_completion_length=2048)
    assert plan.estimate(replace(trl, use_liger_kernel=True)).peak_allocated_gib < plan.estimate(trl).peak_allocated_gib
    # batching generation over more steps costs memory and saves time
    assert plan.estimate(qwen3_4b(steps_per_generation=8)).s_per_step < plan.estimate(qwen3_4b()).s_per_step


def test_the_fast_path_counts_its_kv_cache_held_through_training():
    """The copy keeps its static cache between generations (its CUDA graphs read it in place), so training's
    activations and logits come on top of it, not in its place."""
    fast = qwen3_4b(backend="trl", generation="fast", load_in_4bit=False, max_seq_length=1280,
                    max_completion_length=1024, gradient_checkpointing=False)
    kept = plan.estimate(fast)
    parts = kept.parts_gib
    assert kept.peak_allocated_gib >= (parts["weights"] + parts["generation_kv_cache"] + parts["training_activations"]
                                       + parts["training_logits"])
    assert kept.peak_allocated_gib > plan.estimate(replace(fast, copy_keeps_cache=False)).peak_allocated_gib


@pytest.fixture(scope="session")
def with_unsloth(tmp_path_factory):
    """An environment where an unsloth package is installed, as train.py's backend = "auto" and plan look for it
    (found, never imported: a stand-in that would fail to import), for what "auto" takes where it is."""
    folder = tmp_path_factory.mktemp("unsloth-installed")
    (folder / "unsloth").mkdir()
    (folder / "unsloth" / "__init__.py").write_text("raise ImportError('a stand-in: plan only looks for it')\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}


def plan_here(monkeypatch, unsloth: bool, *args) -> str:
    """`grpo-skill plan ARGS` in this process (in English: the `english` fixture), on a machine where the unsloth
    package is (is not) installed."""
    monkeypatch.setattr(plan, "unsloth_installed", lambda: unsloth)
    result = CliRunner().invoke(main, ["plan", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def new_project(cli, tmp_path, model="unsloth/Qwen3-4B-unsloth-bnb-4bit", preset="standard"):
    cli("new", "run", "--preset", preset, "--model", model, "-o", str(tmp_path))
    return tmp_path / "run"


def set_grpo(project, **values):
    """Set keys of [grpo] in a generated config.toml, as a user would in an editor."""
    config = project / "config.toml"
    lines = [line for line in config.read_text().splitlines() if not any(line.startswith(f"{key} =") for key in values)]
    at = next(index for index, line in enumerate(lines) if line.startswith("[grpo]"))
    lines[at + 1:at + 1] = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    config.write_text("\n".join(lines) + "\n")


def test_plan_a_project_that_does_not_fit_names_changes_that_do(cli, tmp_path, with_unsloth):
    project = new_project(cli, tmp_path)
    set_grpo(project, steps_per_generation=16, max_completion_length=256)
    config = project / "config.toml"  # the backend's own generation: "auto" would change path to fit instead
    config.write_text(config.read_text().replace('generation = "auto"', 'generation = "plain"'))
    roomy = json.loads(cli("plan", str(project), "--gpu-memory", "200", "--json", env=with_unsloth).stdout)
    assert roomy["fits"] is True and roomy["settings"]["backend"] == "unsloth"
    assert roomy["settings"]["generation_steps"] == 16 and roomy["settings"]["max_completion_length"] == 256
    budget = roomy["needed_gib"] * 0.8
    tight = json.loads(cli("plan", str(project), "--gpu-memory", str(budget), "--json", env=with_unsloth).stdout)
    assert tight["fits"] is False and tight["changes"]
    for change in tight["changes"]:
        assert change["peak_reserved_gib"] + plan.CUDA_CONTEXT_GIB <= budget + 0.05, change
    text = cli("plan", str(project), "--gpu-memory", str(budget), env=with_unsloth).stdout
    assert "does not fit" in text and "steps_per_generation = " in text


def test_plan_reads_the_shape_of_a_local_model_folder(cli, tmp_path):
    model = tmp_path / "my-model"
    model.mkdir()
    shape = {"vocab_size": 32000, "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 12,
             "num_attention_heads": 16, "num_key_value_heads": 4, "tie_word_embeddings": False}
    (model / "config.json").write_text(json.dumps(shape))
    project = new_project(cli, tmp_path, model=str(model))
    result = json.loads(cli("plan", str(project), "--json").stdout)
    assert result["shape_source"].endswith("config.json")
    assert result["settings"]["shape"]["hidden_size"] == 1024 and result["settings"]["shape"]["head_dim"] == 64
    big = json.loads(cli("plan", "--preset", "standard", "--json").stdout)
    assert result["parts_gib"]["weights"] < big["parts_gib"]["weights"] / 3


def add_prompt(project, text):
    with (project / "data" / "prompts.jsonl").open("a") as prompts:
        prompts.write(json.dumps({"prompt": text}) + "\n")


def test_prompts_that_leave_no_room_for_a_completion_are_refused_as_train_py_refuses_them(cli, tmp_path):
    """Given with --prompt-tokens, or measured with the model's tokenizer (the tiny preset's, built here); the fix
    within the model's 40960 positions."""
    project = new_project(cli, tmp_path, model="grpo-skill/tiny-qwen3", preset="tiny")
    given = cli("plan", str(project), "--prompt-tokens", "300", check=False)
    assert given.returncode == 1 and given.stderr.strip() == (
        "Error: model.max_seq_length (256) is below the longest prompt (300 tokens) + grpo.max_completion_length "
        "(32); raise max_seq_length to 332 or shorten the prompts")
    given = cli("plan", str(project), "--prompt-tokens", "40950", check=False)
    assert given.returncode == 1 and given.stderr.strip() == (
        "Error: model.max_seq_length (256) is below the longest prompt (40950 tokens) + grpo.max_completion_length "
        "(32), and the model reads at most 40960 tokens (its max_position_embeddings); lower max_completion_length "
        "to 10 and raise max_seq_length to 40960, or shorten the prompts")
    given = cli("plan", str(project), "--prompt-tokens", "100000", check=False)
    assert given.returncode == 1 and given.stderr.strip() == (
        "Error: the longest prompt (100000 tokens) leaves no room for a completion in the 40960 tokens the model "
        "reads (its max_position_embeddings); shorten the prompts")
    add_prompt(project, "word " * 400)
    measured = cli("plan", str(project), check=False)
    assert measured.returncode == 1 and len(measured.stderr.strip().splitlines()) == 1
    assert measured.stderr.startswith("Error: model.max_seq_length (256) is below the longest prompt (")


def test_a_budget_set_for_the_plan_that_leaves_no_room_names_the_values_that_fit(cli, tmp_path):
    """`plan --set` of a completion budget at max_seq_length or past it: the refusal gives the values that fit the
    prompts counted with the tiny preset's tokenizer (it said only "lower it, or raise max_seq_length"), and
    planning with one of them goes through."""
    project = new_project(cli, tmp_path, model="grpo-skill/tiny-qwen3", preset="tiny")
    refused = cli("plan", str(project), "--set", "grpo.max_completion_length=300", check=False)
    found = re.search(r"set model\.max_seq_length = (\d+) or grpo\.max_completion_length = (\d+) \(the longest "
                      r"prompt is (\d+) tokens\)$", refused.stderr.strip())
    assert refused.returncode == 1 and found, refused.stderr
    seq, budget, longest = map(int, found.groups())
    assert seq == 300 + longest and budget == 256 - longest
    planned = cli("plan", str(project), "--gpu-memory", "80", "--set", f"model.max_seq_length={seq}",
                  "--set", "grpo.max_completion_length=300")  # set's tests paste both kinds of fix back
    assert planned.returncode == 0


def test_a_guessed_prompt_length_that_leaves_no_room_is_a_note(cli, tmp_path):
    """No tokenizer here (a hub model not downloaded): the guess may be wrong, so plan plans it and says so."""
    project = new_project(cli, tmp_path)
    add_prompt(project, "word " * 2000)
    done = cli("plan", str(project), "--gpu-memory", "80", env={"HF_HOME": str(tmp_path / "hf-home")})
    assert "note: prompts guessed at up to ~2512 tokens and a full completion (512) pass max_seq_length (1024): " \
           "train.py refuses prompts that long" in done.stdout


def test_an_unknown_model_is_a_one_line_error(cli, tmp_path):
    project = new_project(cli, tmp_path, model="someone/mystery-model")
    done = cli("plan", str(project), check=False)
    assert done.returncode == 1
    assert "mystery-model" in done.stderr and "config.json" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # its advice works when followed (it offered the shapes as presets, which plan refused as unknown)
    advice = done.stderr.split("e.g. ")[1].split()
    assert advice[:3] == ["grpo-skill", "plan", "--set"]
    assert "known shape qwen3-8b" in cli(*advice[1:], str(project)).stdout
    both = cli("plan", str(project), "--preset", "standard", check=False)
    assert both.returncode != 0 and "not both" in both.stderr


def test_plan_imports_no_torch():
    code = ("import sys\nfrom grpo_skill.cli import main\n"
            "try:\n    main(['plan', '--preset', 'thinking', '--gpu-memory', '24', '--json'])\n"
            "except SystemExit as stop:\n    assert stop.code in (0, None), stop.code\n"
            "assert 'torch' not in sys.modules, 'plan imported torch'\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)


# Several GPUs (data-parallel) ------------------------------------------------------------------------------------

def test_more_gpus_keep_the_memory_per_gpu_multiply_the_batch_and_add_an_exchange():
    one = qwen3_4b(backend="trl", per_device_train_batch_size=8, num_generations=8)
    two = replace(one, processes=2)
    alone, together = plan.estimate(one), plan.estimate(two)
    assert together.peak_allocated_gib == alone.peak_allocated_gib  # each GPU holds the whole model
    assert (one.global_batch, two.global_batch) == (8, 16)
    assert together.communication_s_per_step > 0 == alone.communication_s_per_step
    assert together.s_per_step == pytest.approx(alone.s_per_step + together.communication_s_per_step)
    parallel = plan.data_parallel(two, together)
    assert 1.5 < parallel["speedup"] < 2  # twice the completions per step, a little slower per step
    # the 1-GPU global batch on 2 GPUs: half the per-device batch, each GPU training on half as many tokens; this
    # step is bound by decoding, which halving the batch barely shortens, so no slower than one GPU plus the exchange
    assert parallel["same_global_batch"]["per_device_train_batch_size"] == 4
    halved = plan.estimate(replace(two, per_device_train_batch_size=4))
    assert halved.train_s_per_step < alone.train_s_per_step
    assert parallel["same_global_batch"]["s_per_step"] <= round(alone.s_per_step + together.communication_s_per_step, 2)


def test_plan_gpus_from_the_flag_or_the_projects_accelerate_config(cli, tmp_path):
    project = new_project(cli, tmp_path)
    one = json.loads(cli("plan", str(project), "--json").stdout)
    assert one["settings"]["processes"] == 1 and "data_parallel" not in one
    two = json.loads(cli("plan", str(project), "--gpus", "2", "--json").stdout)
    assert two["settings"]["backend"] == "trl"  # auto: train.py takes TRL under several processes
    settings = two["settings"]
    assert two["data_parallel"]["global_batch"] == (
        2 * settings["per_device_train_batch_size"] * settings["gradient_accumulation_steps"])
    from_config = json.loads(cli("plan", str(project), "--accelerate-config", str(project / "accelerate" / "ddp.yaml"),
                                 "--json").stdout)
    assert from_config["data_parallel"] == two["data_parallel"]
    text = cli("plan", str(project), "--gpus", "2").stdout
    assert "on 2 GPUs (data-parallel; memory is per GPU)" in text
    # the step's line counts one GPU's completions, the data-parallel line all of them: each says which
    assert "per optimizer step, on each GPU: " in text and "per optimizer step, on each GPU" not in (
        cli("plan", str(project)).stdout)
    # what train.py takes under several processes: the backend's own generation, checkpointing on
    sized = json.loads(cli("plan", str(project), "--gpus", "2", "--gpu-memory", "141", "--json").stdout)
    assert sized["generation_path"] == "trl" and sized["generation_why"] == (
        "several processes: the fast path runs in a single process")
    assert sized["gradient_checkpointing"] is True and sized["checkpointing_why"].startswith("several processes")
    assert sized["settings"]["gradient_checkpointing"] is True  # transformers' own on the TRL backend
    assert sized["backend_why"] == 'backend = "auto": several processes train with TRL'


@pytest.mark.parametrize("args,message", [
    (["--gpus", "2", "--backend", "unsloth"], "backend unsloth trains on one GPU only; plan 2 GPUs with --backend trl"),
    (["--accelerate-config", "accelerate/fsdp.yaml"], "distributed_type FSDP shards the model's memory"),
    (["--accelerate-config", "accelerate/zero2.yaml"], "distributed_type DEEPSPEED shards the model's memory"),
    (["--accelerate-config", "no-such.yaml"], "cannot read the accelerate config no-such.yaml"),
    (["--gpus", "2", "--accelerate-config", "accelerate/ddp.yaml"], "give --gpus or --accelerate-config, not both"),
    (["--gpus", "0"], "0 is not in the range x>=1"),
    (["--gpu-memory", "-5"], "-5.0 is not in the range 0<x"),
    (["--gpu-memory", "nan"], "--gpu-memory: give the GPU's memory in GiB"),
    (["--gpu-memory", "inf"], "inf is not in the range 0<x"),
    (["--prompt-tokens", "0"], "0 is not in the range x>=1"),
])
def test_plan_gpus_mistakes_are_one_line(cli, tmp_path, args, message):
    project = new_project(cli, tmp_path)
    done = cli("plan", ".", *args, cwd=project, check=False)
    assert done.returncode != 0 and message in done.stderr.splitlines()[0]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2  # click adds "Try -h"


def test_plan_counts_the_static_cache_and_the_faster_decoding_of_compile_decoding(cli, tmp_path):
    project = new_project(cli, tmp_path)
    config = project / "config.toml"
    eager_text = config.read_text().replace("load_in_4bit = true", "load_in_4bit = false").replace(
        'backend = "auto"', 'backend = "trl"').replace('generation = "auto"', 'generation = "plain"')
    config.write_text(eager_text)
    eager = json.loads(cli("plan", str(project), "--json").stdout)
    config.write_text(eager_text.replace("# compile_decoding = true", "compile_decoding = true"))
    compiled = json.loads(cli("plan", str(project), "--json").stdout)
    # train.py's static cache: max_seq_length (1024) tokens for every sequence, longer than prompt + completion
    assert compiled["settings"]["static_cache_tokens"] == 1024 and compiled["settings"]["compiled_decoding"]
    assert compiled["parts_gib"]["generation_kv_cache"] > eager["parts_gib"]["generation_kv_cache"]
    assert compiled["s_per_step"] < eager["s_per_step"]


def test_auto_generation_takes_the_fast_path_where_it_fits_and_says_why(cli, tmp_path, with_unsloth):
    project = new_project(cli, tmp_path)
    roomy = json.loads(cli("plan", str(project), "--gpu-memory", "141", "--json").stdout)
    assert roomy["generation_path"] == "fast" and roomy["settings"]["backend"] == "trl"
    # load_in_4bit = "auto": the base in 16 bits, and the copy decodes with its very weights
    assert roomy["settings"]["load_in_4bit"] == "auto" and not roomy["settings"]["holds_4bit"]
    assert roomy["parts_gib"]["generation_copy"] == 0
    four_bit = json.loads(cli("plan", str(project), "--gpu-memory", "141", "--set", "model.load_in_4bit=true",
                              "--json").stdout)
    assert four_bit["generation_path"] == "fast" and four_bit["settings"]["holds_4bit"]
    assert 6 < four_bit["parts_gib"]["generation_copy"] < 7  # Qwen3-4B's linear layers again in bf16, not embeddings
    assert four_bit["needed_gib"] > roomy["needed_gib"]
    small = json.loads(cli("plan", str(project), "--gpu-memory", "12", "--json", env=with_unsloth).stdout)
    assert small["generation_path"] == "unsloth" and small["parts_gib"]["generation_copy"] == 0
    assert small["settings"]["holds_4bit"]  # "auto" off the fast path: 4-bit
    assert "more than nine tenths" in small["generation_why"]
    text = cli("plan", str(project), "--gpu-memory", "141").stdout
    assert "generation: fast (plan: " in text
    batching = json.loads(cli("plan", str(project), "--gpu-memory", "141", "--set",
                              "grpo.use_transformers_continuous_batching=true", "--json").stdout)
    assert batching["generation_path"] != "fast"  # TRL's generate_batch answers, not the copy (as train.py takes it)


THINKING_3072 = ["--gpu", "4090", "--set", "grpo.max_completion_length=3072", "--set", "model.max_seq_length=3584"]


def test_auto_backend_is_what_train_py_takes_where_unsloth_is_or_is_not_installed(cli, tmp_path, monkeypatch, english,
                                                                                  with_unsloth):
    """backend = "auto": train.py takes Unsloth where the unsloth package is installed (on a CUDA GPU), TRL where it
    is not. plan takes it as this machine would and names the other, since plan often runs on another machine than
    the training one (an assistant's plan named Unsloth on a machine without it, 2026-12-06). At 3072 tokens on a
    4090 the fast path does not fit, so the two differ."""
    project = new_project(cli, tmp_path, "unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit", "thinking")
    args = [str(project), *THINKING_3072]
    without = json.loads(plan_here(monkeypatch, False, *args, "--json"))
    assert without["unsloth_installed"] is False and without["backend_requested"] == "auto"
    assert without["settings"]["backend"] == "trl" and without["generation_path"] == "trl"
    assert without["backend_why"] == 'backend = "auto": the unsloth package is not installed on this machine'
    asked = json.loads(plan_here(monkeypatch, False, *args, "--backend", "unsloth", "--json"))
    elsewhere = without["auto_alternative"]  # what --backend unsloth plans
    assert elsewhere == {"unsloth_installed": True, "backend": "unsloth", "generation_path": "unsloth",
                         "peak_reserved_gib": asked["peak_reserved_gib"], "needed_gib": asked["needed_gib"],
                         "s_per_step": asked["s_per_step"], "fits": True}
    text = plan_here(monkeypatch, False, *args)
    assert 'backend: trl (backend = "auto": the unsloth package is not installed on this machine)' in text
    assert (f'  where the unsloth package is installed, "auto" takes instead: backend unsloth, generation unsloth, '
            f'~{elsewhere["needed_gib"]:.1f} GiB, ~{elsewhere["s_per_step"]:.1f} s/step; --backend unsloth plans it'
            ) in text.splitlines()
    # asked for by name, Unsloth is planned, and plan says that this machine could not train with it
    assert asked["backend_why"] == "--backend unsloth" and asked["auto_alternative"] is None
    assert asked["notes"] == ["the unsloth package is not installed on this machine, where train.py would refuse "
                              "backend unsloth (pip install 'grpo-skill[unsloth]'); this plans a machine that has it"]
    # where it is installed: Unsloth, and TRL named as what a machine without it takes
    with_it = json.loads(plan_here(monkeypatch, True, *args, "--json"))
    assert with_it["settings"]["backend"] == "unsloth" and with_it["generation_path"] == "unsloth"
    assert with_it["backend_why"] == 'backend = "auto": the unsloth package is installed on this machine'
    assert (with_it["s_per_step"], with_it["notes"]) == (asked["s_per_step"], [])
    assert with_it["auto_alternative"] == {"unsloth_installed": False, "backend": "trl", "generation_path": "trl",
                                           **{key: without[key] for key in ("peak_reserved_gib", "needed_gib",
                                                                             "s_per_step", "fits")}}
    assert (f'  without the unsloth package, "auto" takes instead: backend trl, generation trl, '
            f'~{without["needed_gib"]:.1f} GiB, ~{without["s_per_step"]:.1f} s/step; --backend trl plans it'
            ) in plan_here(monkeypatch, True, *args).splitlines()
    # the look itself, as train.py's: the package found where Python finds packages
    found = json.loads(cli("plan", *args, "--json", env=with_unsloth).stdout)
    assert found["unsloth_installed"] is True and found["settings"]["backend"] == "unsloth"
    # where the fast path fits, both machines train with TRL: nothing else to name
    roomy = json.loads(plan_here(monkeypatch, False, str(project), "--gpu", "H200", "--json"))
    assert roomy["generation_path"] == "fast" and roomy["auto_alternative"] is None
    assert roomy["backend_why"] == 'backend = "auto": the fast path trains with TRL'


# Since this date train.py scores and trains on aligned rows (runtime/aligned_rows.py): a row measured before it
# pairs with the default measured on padded rows, the benchmark's 'padded rows' ablation.
ALIGNED_ROWS_SINCE = "2026-12-07 08:20 UTC"


def test_plan_counts_what_the_host_spends_on_micro_batches_of_one_completion():
    """A pass over one short completion is bound by the host launching its kernels, not by its FLOPs: the seed's
    micro-batches of one completion cost what the benchmark measured against the same step in one micro-batch of 8,
    on the card that ran both, within 25%."""
    rows = {(row["case"], row["name"], row.get("run_gpu")): (row, settings) for row, settings in ROWS}
    padded = {(row["case"], row.get("run_gpu")): row for row in REPORT["rows"]
              if row["name"] == "generated default, padded rows"}
    checked = []
    for (case, name, gpu), (small, small_settings) in rows.items():
        if name != "generated default, micro-batches of 1" or not small.get("s_per_step"):
            continue
        whole, whole_settings = rows[(case, "generated default", gpu)]
        if (small["run_date"] < ALIGNED_ROWS_SINCE) != (whole["run_date"] < ALIGNED_ROWS_SINCE):
            assert small["run_date"] < ALIGNED_ROWS_SINCE, "re-measure the padded rows beside it"
            whole = padded[(case, gpu)]  # the default as the row's own code trained it: on padded rows
        measured = small["s_per_step"] - whole["s_per_step"]
        estimated = plan.estimate(small_settings).s_per_step - plan.estimate(whole_settings).s_per_step
        assert abs(estimated / measured - 1) <= TOLERANCE, (
            f"{case}: micro-batches of one cost {measured:.2f} s/step more, estimated {estimated:.2f}")
        checked.append(case)
    assert sorted(checked) == ["standard", "thinking"]


def test_num_iterations_trains_on_each_generation_again_and_generates_less_often(cli, tmp_path):
    """TRL generates every steps_per_generation x num_iterations micro-steps: with num_iterations 2 a step carries
    half the generation time, old log-probs are scored (each generation is trained on twice), and a run of the same
    max_steps generates half as often (what the decode compile mode counts)."""
    cli("new", "mu", "--preset", "thinking", "-o", str(tmp_path))
    runs = {mu: json.loads(cli("plan", str(tmp_path / "mu"), "--gpu-memory", "141", "--json", "--set",
                               f"grpo.num_iterations={mu}", "--set", "grpo.max_steps=400").stdout) for mu in (1, 2)}
    once, twice = runs[1], runs[2]
    assert twice["generation_s_per_cycle"] == once["generation_s_per_cycle"]
    generation_share = once["s_per_step"] - once["train_s_per_step"]
    assert twice["s_per_step"] - twice["train_s_per_step"] == pytest.approx(generation_share / 2, abs=0.01)
    assert "400 generations" not in once["decode_compile_why"] and "100 generations" in once["decode_compile_why"]
    assert "50 generations" in twice["decode_compile_why"]


def test_plan_offers_the_same_step_in_fewer_larger_micro_batches(cli, tmp_path):
    """The seed's 4 micro-batches of one completion per optimizer step (the standard preset before 2026-12-06): one
    micro-batch of 4 is the same optimizer step (TRL's dapo loss divides by the whole step's tokens) in a quarter of
    the passes, and fits a 24 GiB card; plan offers it. The standard preset now takes it as its default."""
    project = new_project(cli, tmp_path)
    seed = ("--set", "grpo.per_device_train_batch_size=1", "--set", "grpo.gradient_accumulation_steps=4",
            "--set", "grpo.steps_per_generation=32")
    planned = json.loads(cli("plan", str(project), "--gpu-memory", "24", *seed, "--json").stdout)
    faster = planned["faster"]
    assert faster["change"] == {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 1,
                                "steps_per_generation": 8} and faster["same_step"]
    assert faster["s_per_step"] < planned["s_per_step"] * 0.8 and faster["peak_reserved_gib"] <= 24
    merged = json.loads(cli("plan", str(project), "--gpu-memory", "24", "--json").stdout)  # the preset as it is

    def completions_per_step(result):
        return result["settings"]["per_device_train_batch_size"] * result["settings"]["gradient_accumulation_steps"]

    assert {key: merged["settings"][key] for key in faster["change"]} == faster["change"]
    assert completions_per_step(merged) == completions_per_step(planned) == 4
    assert merged["settings"]["generation_batch"] == planned["settings"]["generation_batch"]
    assert merged["s_per_step"] == pytest.approx(faster["s_per_step"], abs=0.01)
    text = cli("plan", str(project), "--gpu-memory", "24", *seed).stdout
    assert "faster and still fitting: per_device_train_batch_size = 4" in text and "only the micro-batches differ" in text
    # bnpo divides each micro-batch by its own tokens: merging them would change the step, so it is not offered
    bnpo = json.loads(cli("plan", str(project), "--gpu-memory", "24", *seed, "--set", 'grpo.loss_type="bnpo"',
                          "--json").stdout)
    assert not (bnpo["faster"] or {}).get("same_step")


def test_where_the_fast_path_fits_only_in_smaller_micro_batches_auto_takes_it_in_them(cli, tmp_path, with_unsloth):
    """A large micro-batch (8 completions of 1024 tokens, the benchmark's thinking case: the logits alone ~8 GiB)
    does not fit the fast path on a 24 GiB card; the same completions per optimizer step and per generation in
    smaller micro-batches do, and "auto" takes them (measured on an H200 as a 24 GiB card, 2026-12-06: 3.52 s/step
    at 21.5 GiB reserved against 11.44 on Unsloth's generation). Not where the loss depends on the split (bnpo), and
    not where a micro-batch of one cannot be split."""
    project = new_project(cli, tmp_path, "unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit", "thinking")
    big = ["--set", "grpo.per_device_train_batch_size=8", "--set", "grpo.gradient_accumulation_steps=1",
           "--set", "grpo.steps_per_generation=4", "--set", "grpo.max_completion_length=1024",
           "--set", "model.max_seq_length=1280"]

    def planned(gpu_gib, *args):  # where unsloth is installed: its generation is the one to beat
        return json.loads(cli("plan", str(project), "--gpu-memory", str(gpu_gib), *big, *args, "--json",
                              env=with_unsloth).stdout)

    roomy, small, bnpo = planned(141), planned(24), planned(24, "--set", 'grpo.loss_type="bnpo"')
    assert roomy["generation_path"] == "fast" and roomy["settings"]["per_device_train_batch_size"] == 8
    assert small["generation_path"] == "fast" and small["fits"] and small["peak_reserved_gib"] <= 22
    parts = 8 // small["settings"]["per_device_train_batch_size"]
    assert parts > 1 and {key: small["settings"][key] for key in (
        "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation")} == {
        "per_device_train_batch_size": 8 // parts, "gradient_accumulation_steps": parts,
        "steps_per_generation": 4 * parts}
    assert small["settings"]["generation_batch"] == roomy["settings"]["generation_batch"]
    assert (f"in {parts} micro-batches it fits" in small["generation_why"]
            and f"per_device_train_batch_size = {8 // parts}" in small["generation_why"])
    # bnpo divides each micro-batch by its own tokens: splitting would change the step, so the backend's own path
    assert bnpo["generation_path"] == "unsloth" and "micro-batches" not in bnpo["generation_why"]
    assert bnpo["settings"]["per_device_train_batch_size"] == 8 and small["s_per_step"] < bnpo["s_per_step"] / 2
    # a micro-batch of one cannot be split: the backend's own generation
    one = json.loads(cli("plan", str(project), "--gpu-memory", "12", "--json").stdout)
    assert one["generation_path"] != "fast" and "micro-batches" not in one["generation_why"]


def test_auto_checkpointing_is_off_where_the_run_fits_without_it_and_says_why(cli, tmp_path):
    """[lora] gradient_checkpointing = "auto" (the presets' default): off on a GPU with room for the activations of
    every layer (the backward then runs no second forward), on where they would not fit."""
    project = new_project(cli, tmp_path)
    big_batch = ["--set", "grpo.per_device_train_batch_size=8", "--set", "grpo.steps_per_generation=1"]

    def planned(gpu_gib, *args):
        return json.loads(cli("plan", str(project), "--gpu-memory", str(gpu_gib), *big_batch, *args, "--json").stdout)

    roomy = planned(141)
    assert roomy["settings"]["lora_targets"] and roomy["gradient_checkpointing"] is False
    assert "plan without it" in roomy["checkpointing_why"]
    on = planned(141, "--set", "lora.gradient_checkpointing=unsloth")  # the fast path: the TRL backend
    assert on["gradient_checkpointing"] is True and on["settings"]["gradient_checkpointing"] is True
    assert on["checkpointing_why"] == 'gradient_checkpointing = "unsloth": transformers\' own on the TRL backend'
    assert roomy["parts_gib"]["training_activations"] > 5 * on["parts_gib"]["training_activations"]
    # a card with room for the run with checkpointing, not without: on, and the reason names the size
    card = round((on["needed_gib"] + roomy["needed_gib"]) / 2 / 0.9, 1)
    tight = planned(card)
    assert tight["gradient_checkpointing"] is True and tight["fits"]
    assert "more than nine tenths" in tight["checkpointing_why"]
    # what the TRL backend takes: transformers' checkpointing (train.py's GRPOConfig gradient_checkpointing = true),
    # not Unsloth's, whose name the settings once showed
    assert tight["settings"]["backend"] == "trl" and tight["settings"]["gradient_checkpointing"] is True
    text = cli("plan", str(project), "--gpu-memory", str(card), *big_batch).stdout
    assert "gradient checkpointing: on (without it the run needs about" in text


def test_the_tiny_model_built_here_has_the_shape_the_planner_uses(tiny_model):
    """modelbuild builds from estimate's ModelShape (one home for a model's shape): what it builds is what `plan`
    estimates for it."""
    from grpo_skill.runtime.estimate import KNOWN_SHAPES, ModelShape

    built = ModelShape.from_config(json.loads((tiny_model / "config.json").read_text()))
    assert built == KNOWN_SHAPES["tiny-qwen3"]


def test_a_fit_splits_the_fast_paths_time_into_its_phases_and_skips_superseded_times():
    """A fast-path row that measured its phases fixes how its step splits into generating and training (two errors,
    not one), so the decode and training constants cannot trade against each other; a row whose time measured code
    since changed (``superseded``) counts for memory only."""
    [(row, settings)] = [(row, settings) for row, settings in ROWS
                         if (row["case"], row["name"]) == ("standard", "generated default") and row["on_report_gpu"]]
    assert settings.generation == "fast" and row["phases_s_per_step"]["generation"] > 0
    memory_only = 2  # allocated and reserved
    assert len(plan.errors([(row, settings)], plan.CALIBRATION)) == memory_only + 2
    assert len(plan.errors([({**row, "superseded": "since changed"}, settings)], plan.CALIBRATION)) == memory_only
    generation_error, training_error = plan.errors([(row, settings)], plan.CALIBRATION)[memory_only:]
    slow_decode = {**plan.CALIBRATION, "decode_base_s_copy": plan.CALIBRATION["decode_base_s_copy"] * 2}
    slower_generation, same_training = plan.errors([(row, settings)], slow_decode)[memory_only:]
    assert slower_generation > generation_error and same_training == training_error  # each phase its own error


def test_plans_offers_come_with_the_set_command_that_writes_them(cli, tmp_path):
    """The faster setting and each change that makes the run fit, as the `grpo-skill set` command for the planned
    project (with the what-if settings it was planned with): run as printed, plan then estimates what it promised."""
    project = new_project(cli, tmp_path)
    seed = ("--set", "grpo.per_device_train_batch_size=1", "--set", "grpo.gradient_accumulation_steps=4",
            "--set", "grpo.steps_per_generation=32")
    planned = json.loads(cli("plan", str(project), "--gpu-memory", "24", *seed, "--json").stdout)
    command = planned["faster"]["command"]
    assert command == (f"grpo-skill set --project {project} grpo.per_device_train_batch_size=4 "
                       "grpo.gradient_accumulation_steps=1 grpo.steps_per_generation=8")
    assert f"\n  {command}\n" in cli("plan", str(project), "--gpu-memory", "24", *seed).stdout
    cli(*shlex.split(command)[1:])
    followed = json.loads(cli("plan", str(project), "--gpu-memory", "24", "--json").stdout)
    assert followed["s_per_step"] == pytest.approx(planned["faster"]["s_per_step"], abs=0.01)
    # from inside the project, no --project; a plan that does not fit names a command for each change
    tight = json.loads(cli("plan", ".", "--gpu-memory", "6", "--json", cwd=project).stdout)
    assert tight["fits"] is False and tight["changes"]
    for change in tight["changes"]:
        words = shlex.split(change["command"])
        assert words[:2] == ["grpo-skill", "set"] and "--project" not in words
        assert {word.partition("=")[0] for word in words[2:]} == {
            key if "." in key else f"grpo.{key}" for key in change["change"]}


BIG_THINKING = ["--set", "grpo.per_device_train_batch_size=8", "--set", "grpo.gradient_accumulation_steps=1",
                "--set", "grpo.max_completion_length=1024", "--set", "model.max_seq_length=1280"]


def test_following_plans_faster_advice_gives_the_estimate_it_promised(cli, tmp_path):
    """plan's faster setting is in the config's own units and resolved as train.py would: set as offered, the plan
    estimates what it promised. (A 24 GiB card: steps_per_generation 4 lets the fast path in, split; 8 would need
    Unsloth's generation, slower, so the largest that fits is not offered.)"""
    project = new_project(cli, tmp_path, "unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit", "thinking")
    base = [*BIG_THINKING, "--set", "grpo.steps_per_generation=1"]
    planned = json.loads(cli("plan", str(project), "--gpu-memory", "24", *base, "--json").stdout)
    faster = planned["faster"]
    assert faster and faster["s_per_step"] < planned["s_per_step"]
    # the change in place of the settings it changes (a key given twice is refused)
    given = {item.split("=")[0]: item for item in base[1::2]}
    given.update({f"grpo.{key}": f"grpo.{key}={value}" for key, value in faster["change"].items()})
    followed = json.loads(cli("plan", str(project), "--gpu-memory", "24", *(
        arg for item in given.values() for arg in ("--set", item)), "--json").stdout)
    assert followed["s_per_step"] == pytest.approx(faster["s_per_step"], abs=0.01)
    assert followed["peak_reserved_gib"] == pytest.approx(faster["peak_reserved_gib"], abs=0.06)
    # where the config counts its generation batch in completions, the advice does too (TRL takes one of the two)
    config = project / "config.toml"
    config.write_text("\n".join(line for line in config.read_text().splitlines()
                                if not line.startswith("steps_per_generation =")) + "\n")
    set_grpo(project, generation_batch_size=8)
    counted = json.loads(cli("plan", str(project), "--gpu-memory", "24", *BIG_THINKING, "--json").stdout)
    assert set(counted["faster"]["change"]) == {"generation_batch_size"}
    followed = json.loads(cli("plan", str(project), "--gpu-memory", "24", *BIG_THINKING, "--set",
                              f"grpo.generation_batch_size={counted['faster']['change']['generation_batch_size']}",
                              "--json").stdout)
    assert followed["s_per_step"] == pytest.approx(counted["faster"]["s_per_step"], abs=0.01)


def test_entropy_terms_computed_per_micro_batch_keep_the_split_and_merges_away(cli, tmp_path):
    """TRL computes top_entropy_quantile's threshold and the entropy bonus over each micro-batch: with either, another
    split is another optimizer step, so "auto" does not split and plan offers no merge as the same step."""
    project = new_project(cli, tmp_path, "unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit", "thinking")
    big = [*BIG_THINKING, "--set", "grpo.steps_per_generation=4"]
    split = json.loads(cli("plan", str(project), "--gpu-memory", "24", *big, "--json").stdout)
    assert "micro-batches it fits" in split["generation_why"]
    for entropy in ("grpo.top_entropy_quantile=0.2", "grpo.entropy_coef=0.01"):
        kept = json.loads(cli("plan", str(project), "--gpu-memory", "24", *big, "--set", entropy, "--json").stdout)
        assert kept["generation_path"] != "fast" and "micro-batches" not in kept["generation_why"], entropy
        assert kept["settings"]["per_device_train_batch_size"] == 8
    seed = qwen3_4b(per_device_train_batch_size=1, gradient_accumulation_steps=4, steps_per_generation=32)
    assert plan.larger_micro_batches(seed) and not plan.larger_micro_batches(replace(seed, entropy_per_micro_batch=True))


def test_a_merge_is_offered_only_where_the_generation_batch_holds_whole_merged_micro_batches():
    """TRL refuses a generation_batch_size that is not a multiple of the processes' micro-batches: 12 completions in
    micro-batches of 4 (2 accumulated) cannot merge into micro-batches of 8."""
    odd = qwen3_4b(num_generations=4, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                   generation_batch_size=12)
    assert plan.larger_micro_batches(odd) == []
    even = replace(odd, generation_batch_size=16)
    assert [change for _settings, change in plan.larger_micro_batches(even)] == [
        {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}]


def test_several_gpus_are_compared_with_one_gpu_as_train_py_runs_it(cli, tmp_path):
    """Under several processes train.py keeps the backend's own generation; one GPU takes the fast path where it
    fits. plan's speed-up is against that one GPU, so it says when two GPUs are slower than one."""
    project = new_project(cli, tmp_path)
    two = json.loads(cli("plan", str(project), "--gpus", "2", "--gpu-memory", "80", "--json").stdout)
    one = json.loads(cli("plan", str(project), "--gpu-memory", "80", "--json").stdout)
    parallel = two["data_parallel"]
    assert one["generation_path"] == parallel["one_gpu_path"] == "fast" and two["generation_path"] != "fast"
    one_rate = one["settings"]["per_device_train_batch_size"] * one["settings"]["gradient_accumulation_steps"] / one[
        "s_per_step"]
    assert parallel["speedup"] == pytest.approx(parallel["completions_per_s"] / one_rate, rel=0.05)
    assert parallel["speedup"] < 1
    text = cli("plan", str(project), "--gpus", "2", "--gpu-memory", "80").stdout
    assert f"~{parallel['speedup']:.1f}x one GPU as train.py runs it there (generation fast;" in text

    assert "one_gpu_fast_path" not in parallel  # one GPU already takes it


def test_several_gpus_beside_one_gpu_on_the_fast_path_where_the_config_keeps_it_off(cli, tmp_path):
    """compile_decoding (or generation = "plain") keeps one GPU off the fast path too, so "Nx one GPU" compares two
    slow paths: plan also gives one GPU's rate on the fast path (an assistant's eval took the 1.9x at face value)."""
    project = new_project(cli, tmp_path)
    config = project / "config.toml"
    config.write_text(config.read_text().replace('load_in_4bit = "auto"', "load_in_4bit = false\ncompile_decoding = true"))
    two = json.loads(cli("plan", str(project), "--gpus", "2", "--gpu-memory", "80", "--json").stdout)
    fast_one = json.loads(cli("plan", str(project), "--gpu-memory", "80", "--json",
                              "--set", "model.compile_decoding=false").stdout)
    parallel = two["data_parallel"]
    assert parallel["one_gpu_path"] == "trl compiled" and fast_one["generation_path"] == "fast"
    rate = fast_one["settings"]["per_device_train_batch_size"] * fast_one["settings"]["gradient_accumulation_steps"] / \
        fast_one["s_per_step"]
    assert parallel["one_gpu_fast_path"]["completions_per_s"] == pytest.approx(rate, rel=0.05)
    text = cli("plan", str(project), "--gpus", "2", "--gpu-memory", "80").stdout
    assert (f"one GPU on the fast path instead ([model] generation = \"auto\", without compile_decoding): "
            f"~{parallel['one_gpu_fast_path']['completions_per_s']:.1f} completions/s") in text


def test_a_faster_setting_that_reuses_generations_longer_says_it_changes_what_is_learned(cli, tmp_path):
    """More optimizer steps per generation is faster and more off-policy: plan names both numbers and says so."""
    project = new_project(cli, tmp_path)
    planned = json.loads(cli("plan", str(project), "--gpu-memory", "80", "--json").stdout)
    change, (before, after) = planned["faster"]["change"], planned["faster"]["optimizer_steps_per_generation"]
    settings = planned["settings"]
    assert before == settings["generation_steps"] // settings["gradient_accumulation_steps"]
    assert after == change["steps_per_generation"] // settings["gradient_accumulation_steps"] > before
    text = cli("plan", str(project), "--gpu-memory", "80").stdout
    assert (f"one generation for {after} optimizer steps instead of {before}: more off-policy" in text
            and "which changes what is learned" in text)
    merged = json.loads(cli("plan", str(project), "--gpu-memory", "24", "--set", "grpo.per_device_train_batch_size=1",
                            "--set", "grpo.gradient_accumulation_steps=4", "--set", "grpo.steps_per_generation=32",
                            "--json").stdout)["faster"]
    assert merged["same_step"] and "optimizer_steps_per_generation" not in merged  # a merge reuses nothing longer


@pytest.mark.parametrize("processes", [1, 2])
def test_a_generation_batch_size_is_split_over_the_processes_as_trl_splits_it(monkeypatch, processes):
    """generation_batch_size counts completions over all GPUs: on two, each process generates half of them at a time
    and each generation serves half as many micro-steps (TRL's own GRPOConfig is the judge)."""
    from trl import GRPOConfig

    monkeypatch.setattr(GRPOConfig, "world_size", property(lambda self: processes))
    trl_config = GRPOConfig(output_dir=None, per_device_train_batch_size=8, num_generations=8, generation_batch_size=32,
                            use_cpu=True, bf16=False, report_to=[])
    planned = qwen3_4b(per_device_train_batch_size=8, num_generations=8, generation_batch_size=32, processes=processes)
    assert planned.generation_steps == trl_config.steps_per_generation
    assert planned.generation_batch * processes == trl_config.generation_batch_size


def test_a_smaller_generation_that_brings_the_run_back_onto_the_fast_path_is_offered(cli, tmp_path):
    """At 3072 tokens on a 24 GiB card the thinking preset's 16-micro-step generation needs too much KV cache for the
    fast path, so it falls back to a slower one; half the generation fits the fast path and is faster by plan's own
    estimate, and is closer to on-policy (an assistant found that plan did not offer it)."""
    args = ["plan", "--preset", "thinking", "--gpu", "4090", "--set", "grpo.max_completion_length=3072",
            "--set", "model.max_seq_length=3584"]
    planned = json.loads(cli(*args, "--json").stdout)
    assert planned["generation_path"] != "fast"
    faster = planned["faster"]
    assert faster["change"] == {"steps_per_generation": 8} and faster["s_per_step"] < planned["s_per_step"]
    assert faster["generation_path"] == "fast"  # what makes it faster: an assistant read it as the slow path's
    before, after = faster["optimizer_steps_per_generation"]
    assert after < before
    text = cli(*args).stdout
    assert f"one generation for {after} optimizer steps instead of {before}: closer to on-policy" in text
    assert f"generation then takes the fast path (now {planned['generation_path']})" in text


def test_plan_says_what_chose_a_generation_path_it_did_not_choose_itself(cli, tmp_path, english):
    """A preset has no config.toml: where --backend unsloth or compile_decoding takes generation off "auto", plan names
    that, not "set in config.toml", which no config said."""
    unsloth = json.loads(cli("plan", "--preset", "standard", "--backend", "unsloth", "--gpu", "H200", "--json",
                             cwd=tmp_path).stdout)
    assert (unsloth["generation_path"], unsloth["generation_why"]) == (
        "unsloth", "the unsloth backend generates with its own")
    compiled = json.loads(cli("plan", "--preset", "standard", "--set", "model.compile_decoding=true", "--gpu", "H200",
                              "--json", cwd=tmp_path).stdout)
    assert (compiled["generation_path"], compiled["generation_why"]) == (
        "trl compiled", "compile_decoding = true: the policy decodes, compiled")


FAKE_NVIDIA_SMI = '''import sys
rows = [{"index": "0", "uuid": "GPU-aaaa-1111", "name": "NVIDIA H100 80GB HBM3", "memory.total": "81559"},
        {"index": "1", "uuid": "GPU-bbbb-2222", "name": "NVIDIA L4", "memory.total": "23034"}]
fields = next(arg for arg in sys.argv if arg.startswith("--query-gpu=")).split("=", 1)[1].split(",")
print("\\n".join(", ".join(row[field] for field in fields) for row in rows))
'''


def test_plan_sizes_the_gpu_cuda_visible_devices_picks_on_a_host_of_two_kinds(cli, tmp_path):
    """nvidia-smi lists every GPU of the host whatever CUDA_VISIBLE_DEVICES says: plan (and train.py's "auto"
    choices, which ask it) size the card the run will use, not the host's first."""
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\n{FAKE_NVIDIA_SMI}")
    fake.chmod(0o755)
    path = f"{fake.parent}{os.pathsep}{os.environ['PATH']}"
    seen = {}
    for visible in (None, "1", "GPU-bbbb", "MIG-0d2c"):
        planned = json.loads(cli("plan", "--preset", "standard", "--json",
                                 env={"PATH": path, "CUDA_VISIBLE_DEVICES": visible}).stdout)
        seen[visible] = (planned["gpu"]["name"], round(planned["gpu_memory_gib"], 1))
    assert seen == {None: ("H100", 79.6), "1": ("L4", 22.5), "GPU-bbbb": ("L4", 22.5),
                    "MIG-0d2c": ("H100", 79.6)}  # a MIG slice nvidia-smi cannot map: the first GPU, as before


def test_plan_offers_no_generation_larger_than_the_dataset_can_fill(cli, tmp_path, english):
    """One generation draws per_device_train_batch_size x GPUs x steps_per_generation / num_generations distinct
    prompts. On 3 GPUs plan offered the tiny project (32 rows) steps_per_generation = 16, 48 prompts, which
    `check --gpus 3` refuses (TRL would train 0 steps): what it offers now passes that check."""
    cli("new", "p", "--preset", "tiny", cwd=tmp_path)
    project = str(tmp_path / "p")
    planned = json.loads(cli("plan", project, "--gpus", "3", "--gpu-memory", "80", "--json").stdout)
    spg = planned["faster"]["change"]["steps_per_generation"]
    assert 8 * 3 * spg // 8 <= 32, planned["faster"]
    cli("set", "--project", project, f"grpo.steps_per_generation={spg}")
    assert "OK" in cli("check", project, "--gpus", "3").stdout
