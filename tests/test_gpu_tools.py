"""The tools that take this repository to the GPU machine: the offline bundle, the reports, the benchmark's set-up."""

import dataclasses
import importlib.util
import json
import sys
import tomllib

import pytest

from grpo_skill import project
from support import REPO, run


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


bundle = load(REPO / "scripts" / "build_gpu_bundle.py")
gpu_report = load(REPO / "scripts" / "gpu_report.py")
sys.path.insert(0, str(REPO / "benchmarks"))
bench_report = load(REPO / "benchmarks" / "report.py")
bench_run = load(REPO / "benchmarks" / "run.py")
decode_render = load(REPO / "benchmarks" / "decode_profile.py").render


# -- the offline bundle ----------------------------------------------------------------------------------------------

def test_the_bundle_asks_pip_for_every_dependency_of_the_gpu_extras():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = pyproject["dependencies"] + pyproject["optional-dependencies"]["train"] \
        + pyproject["optional-dependencies"]["unsloth"]
    requirements = bundle.project_requirements()
    assert {"train", "unsloth"} <= set(bundle.BUNDLE_EXTRAS)
    missing = [requirement for requirement in wanted if requirement not in requirements]
    assert not missing, f"not in the bundle's requirements: {missing}"


def test_the_image_list_leaves_the_projects_own_packages_to_the_bundle():
    image = bundle.read_image_packages()
    for name in ("torch", "transformers", "peft", "accelerate", "typing_extensions", "nvidia-cublas-cu12",
                 "cuda-bindings", "PyYAML"):
        assert image.covers(name), name
    # what the image lacks must be bundled (python-dotenv missing once broke every train.py there)
    for name in ("trl", "datasets", "unsloth", "unsloth-zoo", "bitsandbytes", "copier", "python-dotenv",
                 "liger-kernel", "pydantic"):
        assert not image.covers(name), name
    assert image.versions["torch"] == "2.11.0" and "torchao==0.17.0" in image.pins


def test_an_image_package_pip_must_change_is_bundled_only_when_its_version_is_known():
    image = bundle.ImagePackages(versions={"peft": "0.10.0", "fsspec": None}, never={"xformers": "no"})
    resolved = [{"name": name, "version": "1.0", "url": ""} for name in ("trl", "peft", "fsspec", "xformers")]
    bundled, warnings = bundle.split_image(resolved, image)
    assert [item["name"] for item in bundled] == ["trl", "peft"]
    assert len(warnings) == 3


# -- reports regenerate from their JSON ------------------------------------------------------------------------------

def test_the_gpu_report_is_generated_from_its_json():
    report = json.loads((REPO / "docs" / "gpu-report.json").read_text())
    assert gpu_report.markdown(report) == (REPO / "docs" / "gpu-report.md").read_text(), \
        "docs/gpu-report.md differs from its JSON: python scripts/gpu_report.py render docs/gpu-report.json"


def test_a_partial_gpu_run_merges_into_the_report():
    def result(test, outcome="passed", **numbers):
        return {"test": test, "outcome": outcome, "seconds": 1.0, "numbers": numbers, "error": ""}

    recipe = "tests/gpu/test_gpu_recipes.py::test_preset_recipe_learns_on_a_model_like_its_target"
    old = gpu_report.report_of({"gpu": "old"}, [
        result("tests/gpu/test_gpu_arithmetic.py::test_grpo_raises_held_out_arithmetic_accuracy"),
        result(f"{recipe}[standard-trl]", heldout_reward_before=0.1),  # renamed since: dropped
        result(f"{recipe}[thinking-trl-scaled]", heldout_reward_before=0.2),
    ], 10.0, 0)
    new = gpu_report.report_of({"gpu": "new"}, [
        result(f"{recipe}[thinking-trl-scaled]", heldout_reward_before=0.3),
        result(f"{recipe}[standard-trl-presets]", outcome="not run"),
    ], 20.0, 0)
    expected = ["tests/gpu/test_gpu_arithmetic.py::test_grpo_raises_held_out_arithmetic_accuracy",
                f"{recipe}[thinking-trl-scaled]", f"{recipe}[standard-trl-presets]"]

    merged = gpu_report.merge(old, new, expected)

    assert [(test["test"].split("::")[-1], test["outcome"]) for test in merged["tests"]] == [
        ("test_grpo_raises_held_out_arithmetic_accuracy", "passed"),
        ("test_preset_recipe_learns_on_a_model_like_its_target[thinking-trl-scaled]", "passed"),
        ("test_preset_recipe_learns_on_a_model_like_its_target[standard-trl-presets]", "not run")]
    assert merged["learning"]["recipes"]["thinking"]["trl"]["heldout_reward_before"] == 0.3
    assert "standard" in merged["learning"]["recipes"]  # the not-run presets' lr row shows as such
    assert merged["learning"]["recipes"]["standard"]["trl, presets' lr"]["outcome"] == "not run"
    assert merged["environment"] == {"gpu": "new"}
    # each result keeps the card it ran on, through this merge and the next; a test that did not run has none
    assert [test.get("gpu") for test in merged["tests"]] == ["old", "new", None]
    again = gpu_report.merge(merged, gpu_report.report_of({"gpu": "third"}, [], 5.0, 0), expected)
    assert [test.get("gpu") for test in again["tests"]] == ["old", "new", None]
    page = gpu_report.markdown({**again, "environment": {"gpu": "third", "versions": {}}})
    assert "- results from several cards (the GPU above is the latest call's; each test's row names its own), tests " \
           "per card: old 1, new 1" in page
    assert "| grpo_raises_held_out_arithmetic_accuracy | passed | 1.0 | old |" in page
    assert gpu_report.table(again).splitlines()[1].endswith("passed        1.0  old")  # the console's summary too


def test_render_derives_the_report_again_from_its_tests(tmp_path, capsys):
    """A report written by older code (here: no grid, no card per test) renders with what this code derives."""
    project = "tests/gpu/test_gpu_projects.py::test_generated_project_trains_on_gpu[tiny-trl]"
    stale = {"environment": {"gpu": "NVIDIA H200", "versions": {}}, "suite_wall_seconds": 1.0, "pytest_exit_status": 0,
             "counts": {}, "grid": {}, "learning": {"tiny_thinking": {}}, "notes": ["kept"],
             "tests": [{"test": project, "outcome": "passed", "seconds": 2.0, "numbers": {"steps": 60}, "error": ""}]}
    (tmp_path / "r.json").write_text(json.dumps(stale))

    assert gpu_report.main(["render", str(tmp_path / "r.json")]) == 0

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["grid"]["tiny"]["trl"]["gpu"] == "NVIDIA H200" and report["counts"] == {"passed": 1}
    assert report["notes"] == ["kept"]
    assert "| tiny | trl | passed | 2.0 | 60 |" in (tmp_path / "r.md").read_text()


def recipe_run(variant, outcome="passed", **numbers):
    recipe = "tests/gpu/test_gpu_recipes.py::test_preset_recipe_learns_on_a_model_like_its_target"
    spread = {"heldout_reward_std_after": 0.3, "heldout_completions": 160, "heldout_reward_before": 0.772,
              "heldout_reward_accuracy_after": 0.9, "train_seconds": 100.0}
    return {"test": f"{recipe}[thinking-trl-{variant}]", "outcome": outcome, "seconds": 1.0,
            "numbers": {**spread, **numbers, "recipe": json.dumps({"gradient_accumulation_steps": 4,
                                                                   "steps_per_generation": 16})}, "error": ""}


def parity_lines(*runs):
    page = gpu_report.markdown(gpu_report.report_of({"versions": {}, "gpu": "NVIDIA H100"}, list(runs), 1.0, 0))
    return [line for line in page.splitlines()
            if line.startswith(("- thinking:", "| thinking | fast", "| thinking | plain"))]


def test_the_report_compares_fast_and_plain_generation_against_the_noise_of_two_seeds():
    fast = recipe_run("scaled", generation="fast", seed=42, heldout_reward_after=1.073)
    other_seed = recipe_run("reseeded", generation="fast", seed=43, heldout_reward_after=1.05)

    lines = parity_lines(fast, recipe_run("plain", generation="plain", seed=42, heldout_reward_after=1.06), other_seed)
    # noise: the larger of the seeds' gap 0.023 and the standard error sqrt(2 * 0.3^2 / 160) = 0.0335
    assert "- thinking: plain - fast -0.013, noise 0.034 (fast at two seeds 0.023, standard error 0.034): the same " \
           "held-out reward within the noise" in lines
    assert "| thinking | plain | plain | 42 | 0.772 -> 1.06 | 0.9 | 100.0 |" in lines
    assert any(line.startswith("- thinking: one generation feeds 4 optimizer steps") and "more off-policy" in line
               for line in lines)

    lines = parity_lines(fast, recipe_run("plain", generation="plain", seed=42, heldout_reward_after=0.95), other_seed)
    assert "- thinking: plain - fast -0.123, noise 0.034 (fast at two seeds 0.023, standard error 0.034): a gap over " \
           "twice the noise, fast higher" in lines


def test_the_report_compares_compiled_layers_with_the_fast_run_of_the_same_seed():
    fast = recipe_run("scaled", generation="fast", seed=42, heldout_reward_after=1.073)
    other_seed = recipe_run("reseeded", generation="fast", seed=43, heldout_reward_after=1.05)
    compiled = recipe_run("compiled", generation="fast", seed=42, heldout_reward_after=1.09, compiled_layers=True)
    page = gpu_report.markdown(gpu_report.report_of({"versions": {}}, [fast, other_seed, compiled], 1.0, 0))
    # the noise as fast against plain is judged: max(seed gap 0.023, standard error 0.0335)
    assert "- thinking, compiled layers: compiled - fast +0.017, noise 0.034 (fast at two seeds 0.023, standard " \
           "error 0.034): the same held-out reward within the noise" in page
    assert "| thinking | compiled | fast | 42 | 0.772 -> 1.09 | 0.9 | 100.0 |" in page
    uncompiled = recipe_run("compiled", generation="fast", seed=42, heldout_reward_after=1.09, compiled_layers=False)
    page = gpu_report.markdown(gpu_report.report_of({"versions": {}}, [fast, other_seed, uncompiled], 1.0, 0))
    assert "- thinking, compiled layers: not compared: compiled: decoder layers not compiled" in page
    far = recipe_run("compiled", generation="fast", seed=42, heldout_reward_after=0.9, compiled_layers=True)
    page = gpu_report.markdown(gpu_report.report_of({"versions": {}}, [fast, other_seed, far], 1.0, 0))
    assert "compiled - fast -0.173, noise 0.034" in page and "a gap over twice the noise, fast higher" in page
    assert "compiled layers" not in gpu_report.markdown(gpu_report.report_of({"versions": {}}, [fast, other_seed],
                                                                             1.0, 0))


def test_the_report_does_not_judge_runs_of_two_cards_against_one_noise():
    fast = {**recipe_run("scaled", generation="fast", seed=42, heldout_reward_after=1.073), "gpu": "NVIDIA H200"}
    lines = parity_lines(fast, recipe_run("plain", generation="plain", seed=42, heldout_reward_after=1.06),
                         recipe_run("reseeded", generation="fast", seed=43, heldout_reward_after=1.05))
    assert "- thinking: not compared: ran on different GPUs (fast: NVIDIA H200, plain: NVIDIA H100, fast, another " \
           "seed: NVIDIA H100): run all three on one card" in lines
    unnamed = {**fast, "gpu": None}  # a report that named no card (a dry run on a CPU) is not another run of this one
    lines = parity_lines(unnamed, recipe_run("plain", generation="plain", seed=42, heldout_reward_after=1.06),
                         recipe_run("reseeded", generation="fast", seed=43, heldout_reward_after=1.05))
    assert any("not compared: ran on different GPUs (fast: unknown, plain: NVIDIA H100" in line for line in lines)


def test_the_report_compares_only_runs_that_took_the_path_they_stand_for():
    lines = parity_lines(recipe_run("scaled", generation="plain", seed=42, heldout_reward_after=1.0),  # auto went plain
                         recipe_run("plain", outcome="failed"),
                         recipe_run("reseeded", generation="fast", seed=43, heldout_reward_after=1.0))
    assert "- thinking: not compared: fast: took the plain path; plain: failed" in lines
    assert not any("within the noise" in line for line in lines)


def test_the_benchmark_page_is_generated_from_its_json():
    json_file, md_file = REPO / "docs" / "benchmarks.json", REPO / "docs" / "benchmarks.md"
    assert json_file.is_file() == md_file.is_file(), "commit docs/benchmarks.json and .md together"
    if json_file.is_file():
        assert bench_report.markdown(json.loads(json_file.read_text())) == md_file.read_text(), \
            "docs/benchmarks.md differs from its JSON: python benchmarks/report.py docs/benchmarks.json"


# -- the benchmark's set-up ------------------------------------------------------------------------------------------

def contender(name, case="standard"):
    return next(c for c in bench_run.catalog.DEFAULT if c.name == name and c.case == case)


def test_every_contender_of_a_case_does_the_same_work_per_step():
    for case in ("standard", "thinking"):
        settings = [bench_run.settings_for(c, dry_run=False) for c in bench_run.catalog.suite(["all"])
                    if c.case == case and not c.preset_shape]
        for key in ("num_generations", "max_completion_length"):
            assert len({s["grpo"][key] for s in settings}) == 1, (case, key)
        # the same completions per optimizer step, however they are split into micro-batches
        assert len({s["grpo"]["per_device_train_batch_size"] * s["grpo"]["gradient_accumulation_steps"]
                    for s in settings}) == 1, case
        # and as many optimizer steps per generation as the case's default
        default = bench_run.settings_for(contender("generated default", case), dry_run=False)
        for s in settings:
            if s["grpo"]["per_device_train_batch_size"] == 1 and s["speed_source"]:
                assert s["steps_per_generation"] == default["steps_per_generation"], s
        # timed windows are whole generation cycles
        assert all(s["warmup_steps"] % s["steps_per_generation"] == 0 == s["measure_steps"] % s["steps_per_generation"]
                   for s in settings)


def test_the_preset_shape_contender_runs_the_preset_as_new_makes_it_and_is_not_compared_with_the_loop():
    """The standard preset's own group, micro-batch and lengths (other work than the case's): its row says so, and the
    report gives it no ratio to the hand-written loop, which does other work per step."""
    from grpo_skill import plugins

    own = plugins.get_preset("standard")
    shaped = contender("generated default, the preset's own shape")
    settings = bench_run.settings_for(shaped, dry_run=False)
    assert {key: settings["grpo"][key] for key in bench_run.catalog.SHAPE_KEYS} == {
        key: own.grpo.get(key, 1) for key in bench_run.catalog.SHAPE_KEYS}
    assert settings["grpo"]["steps_per_generation"] == own.grpo["steps_per_generation"]
    assert settings["model"]["max_seq_length"] == own.max_seq_length
    per_generation = own.grpo["steps_per_generation"] // own.grpo["gradient_accumulation_steps"]
    assert settings["steps_per_generation"] == per_generation  # optimizer steps per generation
    assert bench_run.catalog.preset_defaults(shaped)
    case_default = bench_run.settings_for(contender("generated default"), dry_run=False)
    assert case_default["grpo"]["num_generations"] != settings["grpo"]["num_generations"]  # other work indeed
    loop = {"case": "standard", "name": "hand-written unsloth", "s_per_step": 4.0, "run_date": "d"}
    row = {"case": "standard", "name": shaped.name, "s_per_step": 1.0, "run_date": "d", "equal_work": False}
    assert bench_report.versus(row, loop) == "" and bench_report.versus({**row, "equal_work": True}, loop) == "0.25x"


def test_a_generated_contender_is_the_project_with_the_cases_settings(tmp_path, tiny_model):
    bench = bench_run.Benchmark(bench_run.argparse.Namespace(out=tmp_path, work=tmp_path / "work", budget=60,
                                                             suite=["default"], dry_run=False))
    prompts = REPO / "templates" / "project" / "_i18n" / "data" / "prompts.en.jsonl"
    equal = bench_run.Job(0, contender("generated unsloth"), bench_run.settings_for(contender("generated unsloth"),
                                                                                    False))
    speed = bench_run.Job(1, contender("generated unsloth + speed"),
                          bench_run.settings_for(contender("generated unsloth + speed"), False))
    for job in (equal, speed):
        bench.prepare(job, tiny_model, prompts)
    loaded = [project.load(job.cwd) for job in (equal, speed)]
    for config in loaded:
        assert config.grpo["num_generations"] == 8 and config.grpo["max_completion_length"] == 256
        assert config.model["max_seq_length"] == 512 and config.lora["r"] == 16
    assert not set(bench_run.catalog.SPEED_KEYS) & set(loaded[0].grpo)
    assert set(bench_run.catalog.SPEED_KEYS) & set(loaded[1].grpo)
    assert "--max-steps" in equal.command and str(equal.settings["warmup_steps"] + equal.settings["measure_steps"]) \
        in equal.command
    # the preset as `new` makes it runs as long as the preset says (train.py's choices depend on the run's length)
    default = bench_run.Job(4, contender("generated default"), bench_run.settings_for(contender("generated default"),
                                                                                      False))
    bench.prepare(default, tiny_model, prompts)
    from grpo_skill import plugins

    preset_steps = plugins.get_preset("standard").grpo["max_steps"]
    assert default.command[default.command.index("--max-steps") + 1] == str(preset_steps)
    assert bench_run.catalog.preset_defaults(default.contender)
    # a run shorter than its timed steps would end before them: never shorter
    short = dataclasses.replace(contender("generated default"), grpo={"max_steps": 3})
    job = bench_run.Job(5, short, bench_run.settings_for(short, False))
    bench.prepare(job, tiny_model, prompts)
    timed = job.settings["warmup_steps"] + job.settings["measure_steps"]
    assert job.command[job.command.index("--max-steps") + 1] == str(timed) and timed > 3
    # a long run's default: train.py sees the run's length (its choices depend on it), the harness stops it early
    long_run = bench_run.catalog.suite(["generation"])
    [long_run] = [c for c in long_run if c.key == "thinking/generated default, a 2000-step run"]
    job = bench_run.Job(2, long_run, bench_run.settings_for(long_run, False))
    bench.prepare(job, tiny_model, prompts)
    steps = job.command[job.command.index("--max-steps") + 1]
    assert steps == "2000" and not bench_run.catalog.preset_defaults(long_run)
    assert "a run of 2000 steps" in bench_run.reporting.speed_settings({"settings": job.settings})
    # a contender's own [model] switch reaches the project it runs (the lever turned off beside the default)
    [uncompiled] = [c for c in bench_run.catalog.suite(["generation"])
                    if c.key == "thinking/generated default, a 2000-step run, layers uncompiled"]
    job = bench_run.Job(3, uncompiled, bench_run.settings_for(uncompiled, False))
    bench.prepare(job, tiny_model, prompts)
    assert project.load(job.cwd).model["compile_layers"] is False
    assert "compile_layers = false" in bench_run.reporting.speed_settings({"settings": job.settings})


def test_a_dry_run_times_the_generated_project_and_profiles_a_cycle_after(tmp_path, tiny_model):
    out = tmp_path / "bench"
    run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--out", str(out), "--work", str(tmp_path / "work"),
         "--dry-run", "--model", str(tiny_model), "--only", "standard/generated trl", "--profile"], timeout=300)
    report = json.loads((out / "benchmarks.json").read_text())
    [row] = [row for row in report["rows"] if row["name"] == "generated trl"]
    assert row["status"] == "ok" and row["s_per_step"] > 0 and row["measured_steps"] == 1
    assert row["took"] == {"backend": "trl", "generation": "plain", "load_in_4bit": False,
                           "gradient_checkpointing": False, "checkpoint_every_n_layers": 1,
                           "micro_batches": {}, "decode_compile_mode": None,
                           "compiled_layers": False}  # as train.py says it ran
    assert 0 < row["completion_tokens_per_step"] <= 4 * 12  # G=4 completions of at most 12 tokens
    assert row["phases_s_per_step"]["generation"] > 0 and row["phases_s_per_step"]["backward"] > 0
    [step] = row["phases_s_by_step"]  # each timed step's own phases, summing to the row's
    assert step["backward"] == pytest.approx(row["phases_s_per_step"]["backward"], abs=1e-3)
    # --profile: one more generation cycle, after the timed steps, under the profiler; its phases share its time
    profile = row["profile"]
    assert profile["device"] == "cpu" and profile["steps"] == row["settings"]["steps_per_generation"]
    phases = profile["phases"]
    assert {"generation", "scoring_logps", "policy_logps", "backward", "optimizer"} <= set(phases)
    assert all(phases[name]["wall_ms"] > 0 for name in ("generation", "policy_logps", "backward"))
    assert sum(entry["wall_ms"] for entry in phases.values()) == pytest.approx(profile["wall_ms_per_step"], rel=0.02)
    page = (out / "benchmarks.md").read_text()
    assert page == bench_report.markdown(report)
    timed_backward = 1000 * row["phases_s_per_step"]["backward"]
    assert "## Where a training step goes" in page
    assert f"| backward | {timed_backward:.1f} | {phases['backward']['wall_ms']:.1f} | – |" in page
    # the host side: operators the model's forward and backward call, their host time within the phase's wall time
    for name in ("scoring_logps", "policy_logps", "backward"):
        assert phases[name]["ops"] > 10 and 0 < phases[name]["op_ms"] <= phases[name]["wall_ms"], (name, phases[name])
    assert "aten::linear" in profile["top_host_ops_per_step"]
    forward = phases["policy_logps"]
    assert (f"| policy forward (log-probs) | {forward['ops']:.0f} | {forward['op_ms']:.1f} | 0.0 | "
            f"{forward['wall_ms'] - forward['op_ms']:.1f} |") in page  # no GPU to wait for on a CPU


def test_a_profiled_kernel_counts_for_the_innermost_phase_it_ran_in():
    kernel_profile = load(REPO / "benchmarks" / "kernel_profile.py")
    ms = 1000  # the profiler's clock counts µs
    ranges = [(0, 100 * ms, "generate_and_score"), (10 * ms, 60 * ms, "generation"), (70 * ms, 90 * ms,
              "scoring_logps"), (100 * ms, 150 * ms, "loss"), (105 * ms, 140 * ms, "policy_logps"),
              (160 * ms, 200 * ms, "backward")]
    kernels = [(20 * ms, 30 * ms, "nvjet_sm90_tst_128x8"), (75 * ms, 79 * ms, "triton_poi_fused_add"),
               (95 * ms, 99 * ms, "Memcpy HtoD"), (110 * ms, 130 * ms, "nvjet_sm90_tst_64x8"),
               (151 * ms, 155 * ms, "vectorized_elementwise_kernel"), (170 * ms, 190 * ms, "flash_bwd_kernel")]
    phases = kernel_profile.by_phase(ranges, kernels, window=(0, 210 * ms), steps=2)
    assert phases["generation"] == {"wall_ms": 25.0, "kernel_ms": 5.0, "kernels": 0.5, "kinds_ms": {"matmul": 5.0}}
    # the scoring's own time is what its inner phases leave: 100 - 50 - 20 ms, over 2 steps
    assert phases["generate_and_score"]["wall_ms"] == 15.0
    assert phases["generate_and_score"]["kinds_ms"] == {"copies and cache updates": 2.0}
    assert phases["scoring_logps"]["kinds_ms"] == {"fused elementwise (triton)": 2.0}
    assert phases["policy_logps"]["kernel_ms"] == 10.0 and phases["loss"]["wall_ms"] == 7.5
    assert phases["backward"]["kinds_ms"] == {"attention": 10.0}
    # between phases (150-160 ms, and 200-210): the trainer's own time, and a kernel that ran there
    assert phases["other"] == {"wall_ms": 10.0, "kernel_ms": 2.0, "kernels": 0.5, "kinds_ms": {"other": 2.0}}
    assert sum(entry["wall_ms"] for entry in phases.values()) == 105.0


def test_host_time_is_split_into_operators_and_gpu_waits_per_innermost_phase():
    kernel_profile = load(REPO / "benchmarks" / "kernel_profile.py")
    ms = 1000
    ranges = [(0, 100 * ms, "loss"), (10 * ms, 80 * ms, "policy_logps")]
    ops = [(12 * ms, 20 * ms, "aten::linear"), (30 * ms, 31 * ms, "Torch-Compiled Region: 0/0"),
           (85 * ms, 86 * ms, "aten::mul")]
    syncs = [(70 * ms, 79 * ms, "cudaDeviceSynchronize"), (120 * ms, 121 * ms, "cudaDeviceSynchronize")]
    host = kernel_profile.host_by_phase(ranges, ops, steps=1, syncs=syncs)
    assert host["policy_logps"] == {"ops": 2, "op_ms": 9.0, "sync_ms": 9.0}
    assert host["loss"] == {"ops": 1, "op_ms": 1.0, "sync_ms": 0.0}  # its own time only: the forward is inside it
    assert host["other"] == {"ops": 0, "op_ms": 0.0, "sync_ms": 1.0}
    # what counts as an operator call: aten's, other libraries' registered ops, compiled regions; not phase marks
    assert [kernel_profile.operator(name) for name in ("aten::mm", "bitsandbytes::dequantize_4bit",
            "Torch-Compiled Region: 1/0", "bench:backward", "cudaLaunchKernel")] == [True, True, True, False, False]


def test_a_dry_run_never_writes_docs():
    done = run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--out", str(REPO / "docs"), "--dry-run"],
               check=False)
    assert done.returncode != 0 and "docs/" in done.stderr


@pytest.mark.parametrize("suite", ["default", "overhead", "levers"])
def test_each_suite_lists_its_contenders(suite):
    done = run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--list", "--suite", suite])
    assert len(done.stdout.splitlines()) == len(bench_run.catalog.SUITES[suite]) + 1


def test_rounds_alternate_the_order_so_drift_favours_no_contender():
    assert bench_run.schedule(["a", "b"], 3) == [("a", 1), ("b", 1), ("b", 2), ("a", 2), ("a", 3), ("b", 3)]
    done = run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--list", "--rounds", "2", "--only",
                "standard/hand-written unsloth", "standard/generated unsloth"])
    assert [line.split("  ")[0] for line in done.stdout.splitlines()[:4]] == [
        "standard/hand-written unsloth (round 1)", "standard/generated unsloth (round 1)",
        "standard/generated unsloth (round 2)", "standard/hand-written unsloth (round 2)"]
    refused = run([sys.executable, str(REPO / "benchmarks" / "run.py"), "--list", "--rounds", "0"], check=False)
    assert refused.returncode != 0 and "--rounds" in refused.stderr


def test_a_contender_run_in_rounds_reads_as_the_mean_of_its_rounds():
    def row(name, number, seconds, reserved):
        return {"case": "standard", "name": name, "status": "ok", "round": number, "s_per_step": seconds,
                "peak_reserved_gib": reserved, "phases_s_per_step": {"generation": seconds - 1}}

    report = {"rows": [row("hand-written unsloth", 1, 4.0, 4.5), row("generated unsloth", 1, 5.1, 4.6),
                       row("generated unsloth", 2, 5.1, 4.4), row("hand-written unsloth", 2, 6.0, 4.5)]}
    page = bench_report.markdown(report)
    [hand_written] = [line for line in page.splitlines() if line.startswith("| hand-written unsloth |")]
    [generated] = [line for line in page.splitlines() if line.startswith("| generated unsloth |")]
    assert hand_written.startswith("| hand-written unsloth | ok | 5.00 (4.00, 6.00) |  |")
    # compared mean to mean (5.1 against 5.0), not round 1 alone (+27.5%); the higher peak of the two rounds
    assert generated.startswith("| generated unsloth | ok | 5.10 (5.10, 5.10) | +2.0% |") and "| 4.60 |" in generated
    assert "| standard | hand-written unsloth (round 2) |" in page
    assert "+2.0%" in bench_report.table(report)


def test_a_merged_run_takes_its_contenders_place_and_says_which_comparisons_cross_runs():
    def row(name, seconds):
        return {"case": "standard", "name": name, "status": "ok", "s_per_step": seconds}

    report = {"date": "day 1", "rows": [row("hand-written unsloth", 5.0), row("generated unsloth", 5.5),
                                        row("generated unsloth + speed", 2.5)]}
    again = {"date": "day 2", "rows": [{**row("hand-written unsloth", 4.0), "round": 1},
                                       {**row("generated unsloth", 4.1), "round": 1},
                                       {**row("generated unsloth", 4.1), "round": 2},
                                       {**row("hand-written unsloth", 4.0), "round": 2}, row("new lever", 3.0)]}
    merged = bench_report.merge(report, again)
    assert [(r["name"], r.get("round"), r["run_date"]) for r in merged["rows"]] == [
        ("hand-written unsloth", 1, "day 2"), ("hand-written unsloth", 2, "day 2"),
        ("generated unsloth", 1, "day 2"), ("generated unsloth", 2, "day 2"),
        ("generated unsloth + speed", None, "day 1"), ("new lever", None, "day 2")]
    lines = {line.split(" | ")[0]: line for line in bench_report.markdown(merged).splitlines() if "| ok |" in line}
    assert "| +2.5% |" in lines["| generated unsloth"]
    assert "| -37.5% (other run) |" in lines["| generated unsloth + speed"]
    assert "| -25.0% |" in lines["| new lever"]


def test_a_contender_measured_again_without_the_profiler_keeps_its_profile_with_the_profiles_date():
    """A plain re-run of a profiled contender replaces its timings, not its profile: the page still shows the
    profile's table, dated and timed by the run that took it."""
    phase = {"wall_ms": 500.0, "kernel_ms": 480.0, "kernels": 6000, "kinds_ms": {"matmul": 180.0}}
    profile = {"device": "cuda", "steps": 4, "wall_ms_per_step": 3600.0, "phases": {"backward": phase}}
    row = {"case": "thinking", "name": "generated default", "status": "ok"}
    report = {"date": "day 1", "rows": [{**row, "s_per_step": 3.64, "profile": profile,
                                         "phases_s_per_step": {"backward": 0.545}}]}
    merged = bench_report.merge(report, {"date": "day 2", "rows": [{**row, "s_per_step": 3.57,
                                                                     "phases_s_per_step": {"backward": 0.54}}]})
    [kept] = merged["rows"]
    assert kept["s_per_step"] == 3.57 and kept["run_date"] == "day 2"
    page = bench_report.markdown(merged)
    assert "thinking / generated default (day 1): 4 optimizer steps" in page
    assert "| backward | 545.0 | 500.0 | 480.0 |" in page  # the profiled run's own timed phase, not day 2's 540
    rounds = bench_report.merge(report, {"date": "day 2", "rows": [{**row, "s_per_step": 3.57, "round": 1},
                                                                    {**row, "s_per_step": 3.59, "round": 2}]})
    assert bench_report.markdown(rounds).count("thinking / generated default (day 1)") == 1  # one table, not one a round
    reprofiled = bench_report.merge(merged, {"date": "day 3", "rows": [{**row, "s_per_step": 3.5, "profile": {
        **profile, "wall_ms_per_step": 3500.0}, "phases_s_per_step": {"backward": 0.53}}]})
    assert "thinking / generated default (day 3): 4 optimizer steps" in bench_report.markdown(reprofiled)


def test_a_row_whose_code_has_changed_since_says_so_where_its_time_is_read():
    """A row marked ``superseded`` (the path it measured is no longer what a run takes) must not read as the
    current default: its status and its "tells" say so, with the reason."""
    row = {"case": "thinking", "name": "generated default, 24 GiB card", "status": "ok", "s_per_step": 11.4,
           "tells": "the thinking preset on a 24 GiB card"}
    current = bench_report.markdown({"rows": [row]})
    assert "| generated default, 24 GiB card | ok | 11.40 |" in current and "superseded" not in current.lower()
    page = bench_report.markdown({"rows": [{**row, "superseded": "auto now takes smaller micro-batches there"}]})
    assert "| generated default, 24 GiB card | ok, superseded | 11.40 |" in page
    assert "the thinking preset on a 24 GiB card. Superseded: auto now takes smaller micro-batches there. |" in page


def test_rows_merged_from_another_gpu_are_named_with_it():
    """A call that ran on another card (an H100 when no H200 came) merges in, but its rows say where they ran:
    timings of two GPUs side by side without the GPU named would read as one machine's."""
    row = {"case": "standard", "name": "generated default", "status": "ok", "s_per_step": 1.0}
    report = {"date": "day 1", "environment": {"gpu": "NVIDIA H200"},
              "rows": [{**row, "name": "hand-written unsloth", "s_per_step": 4.0}]}
    same = bench_report.merge(report, {"date": "day 2", "environment": {"gpu": "NVIDIA H200"}, "rows": [row]})
    assert "(on " not in bench_report.markdown(same)
    other = bench_report.merge(report, {"date": "day 3", "environment": {"gpu": "NVIDIA H100 80GB HBM3"},
                                        "rows": [row]})
    page = bench_report.markdown(other)
    assert "| generated default (on NVIDIA H100 80GB HBM3) | ok |" in page
    assert "| hand-written unsloth | ok |" in page
    assert "day 3 (suites , wall None s of None; on NVIDIA H100 80GB HBM3)" in page


def test_a_contender_measured_on_another_gpu_stands_beside_its_row_and_skill_md_quotes_the_pages_card():
    """Merged from an H100, 'generated default' does not replace the H200's row (nor fold into its rounds): both
    stay, and the figures SKILL.md quotes (and plan's fitted times) are the page's own card's. Measured again on
    the page's card, the row is replaced as before."""
    from grpo_skill.scaffold.figures import measured

    def row(seconds, **more):
        return {"case": "thinking", "name": "generated default", "status": "ok", "s_per_step": seconds,
                "peak_reserved_gib": 20.0, **more}

    report = {"date": "day 1", "environment": {"gpu": "NVIDIA H200"}, "rows": [row(4.8)]}
    merged = bench_report.merge(report, {"date": "day 2", "environment": {"gpu": "NVIDIA H100 80GB HBM3",
                                                                          "gpu_memory_gib": 79.2},
                                         "rows": [row(4.0, peak_reserved_gib=27.0)]})
    assert [(r["s_per_step"], r.get("run_gpu"), r.get("run_gpu_gib")) for r in merged["rows"]] == [
        (4.8, None, None), (4.0, "NVIDIA H100 80GB HBM3", 79.2)]  # plan resolves "auto" against the row's card
    assert measured(merged, "thinking", "generated default")["s_per_step"] == 4.8
    assert measured(merged, "thinking", "generated default")["peak_reserved_gib"] == 20.0
    merged["rows"][1]["cudagraph_recordings_by_generation"] = [9, 1, 0]
    page = bench_report.markdown(merged)
    assert "| CUDA graphs recorded, by generation |" in page and "| 9, 1, 0 |" in page  # re-records after warm-up
    assert "| generated default | ok | 4.80 |" in page
    assert "| generated default (on NVIDIA H100 80GB HBM3) | ok | 4.00 |" in page
    again = bench_report.merge(merged, {"date": "day 3", "environment": {"gpu": "NVIDIA H200"}, "rows": [row(3.5)]})
    assert [(r["s_per_step"], r["run_date"]) for r in again["rows"]] == [(3.5, "day 3"), (4.0, "day 2")]


def test_a_decode_call_replaces_its_rows_in_the_table_and_keeps_the_others():
    """A later decode_profile.py call (another length, new paths) merged into the page: the same path, batch and
    length replaced where it stood, a row at another length kept apart and named with its length on the page."""
    def row(path, batch, ms, **more):
        return {"path": path, "batch": batch, "decode_ms": ms, "floor_ms": 2.0, "x_floor": ms / 2, "refresh_ms": 10,
                "copy_build_s": 1.0, "error": None, "tells": "t", **more}

    header = {"weight_bytes": 7.27e9, "prompt_tokens": 96, "device": "H200", "torch": "2.11"}
    profile = {"wall_ms_per_token": 9.6, "kernel_ms_per_token": 5.2, "kinds_ms_per_token": {},
               "top_kernels_ms_per_token": {}}
    old = {**header, "bandwidth_GBps": 4200, "new_tokens": 256, "notes": ["day 1"], "profiles": {"a @ 8": profile},
           "rows": [row("a", 8, 9.0), row("a", 64, 11.0), row("b", 8, 8.0)]}
    new = {**header, "bandwidth_GBps": 4100, "new_tokens": 1024, "notes": [], "profiles": {},
           "rows": [row("a", 8, 7.0, new_tokens=256), row("a", 32, 12.0, new_tokens=1024), row("c", 8, 6.0)]}
    merged = bench_report.merge_decode(old, new)
    assert [(r["path"], r["batch"], r["new_tokens"], r["decode_ms"]) for r in merged["rows"]] == [
        ("a", 8, 256, 7.0), ("a", 64, 256, 11.0), ("b", 8, 256, 8.0), ("a", 32, 1024, 12.0), ("c", 8, 1024, 6.0)]
    assert merged["bandwidth_GBps"] == 4100 and merged["profiles"] == {"a @ 8": profile}
    assert merged["notes"] == ["day 1"]
    page = decode_render(merged)
    assert "| a (256 tokens) | 64 | 11.00 |" in page and "| a | 32 | 12.00 |" in page
    assert bench_report.merge_decode(None, new) is new
    # a call on another card: its rows name it, the page's other rows keep theirs unnamed
    elsewhere = bench_report.merge_decode(merged, {**new, "device": "H100", "rows": [row("d", 8, 5.0)]})
    page = decode_render(elsewhere)
    assert "| d | 8 | 5.00 |" in page and "| a (256 tokens) (on H200) | 64 | 11.00 |" in page
    # the same path and batch measured on another card stands beside the first card's row, not over it
    beside = bench_report.merge_decode(merged, {**new, "device": "H100", "rows": [row("a", 64, 8.5, new_tokens=256)]})
    assert [(r["path"], r["batch"], r["decode_ms"], r["device"]) for r in beside["rows"] if r["batch"] == 64] == [
        ("a", 64, 11.0, "H200"), ("a", 64, 8.5, "H100")]


def test_the_compile_decoding_contender_uses_the_projects_own_switch(tmp_path, tiny_model):
    bench = bench_run.Benchmark(bench_run.argparse.Namespace(out=tmp_path, work=tmp_path / "work", budget=60,
                                                             suite=["levers"], dry_run=False))
    prompts = REPO / "templates" / "project" / "_i18n" / "data" / "prompts.en.jsonl"
    chosen = next(c for c in bench_run.catalog.suite(["levers"]) if c.name.endswith("compile_decoding"))
    job = bench_run.Job(0, chosen, bench_run.settings_for(chosen, False))
    bench.prepare(job, tiny_model, prompts)
    config = project.load(job.cwd)  # the config check accepts it: bf16 weights, the TRL backend
    assert config.model["compile_decoding"] and not config.model["load_in_4bit"]
    assert config.grpo["cache_implementation"] == "static" and config.grpo["steps_per_generation"] == 8


def test_the_harness_runs_a_project_as_on_a_card_of_the_size_asked(tmp_path):
    """BENCH_GPU_GIB (the 24 GiB rows): the run's `plan` sees a card of that size, so auto chooses as it would
    there; without it, the machine's own."""
    script = tmp_path / "script.py"
    script.write_text("from grpo_skill.runtime import planning\nprint('card', planning.gpu_memory_gib())\n")
    harness = [sys.executable, str(REPO / "benchmarks" / "harness.py"), "--result", str(tmp_path / "r.json"),
               str(script)]
    assert "card 24.0" in run(harness, env={"BENCH_GPU_GIB": "24"}).stdout
    from grpo_skill.runtime import planning

    assert f"card {planning.gpu_memory_gib()}" in run(harness, env={"BENCH_GPU_GIB": None}).stdout
    rows = {contender.key: contender for contender in bench_run.catalog.SUITES["default"]}
    assert bench_run.catalog.preset_defaults(rows["thinking/generated default, 24 GiB card"])


def test_the_next_contender_loads_only_once_the_one_before_has_let_go_of_the_gpu(tmp_path):
    """A contender keeps its GPU memory after its result while it saves and exits: the next one is let onto the GPU
    only when that process has ended (two thinking contenders do not fit an 80 GB card together)."""
    import subprocess
    import time

    bench = bench_run.Benchmark(bench_run.argparse.Namespace(out=tmp_path / "out", work=tmp_path / "work", budget=60,
                                                             suite=["default"], dry_run=False))
    contenders = [c for c in bench_run.catalog.suite(["default"]) if c.program == "generated"][:2]
    before, after = (bench_run.Job(i, c, bench_run.settings_for(c, False)) for i, c in enumerate(contenders))
    for job in (before, after):
        job.workdir = tmp_path / f"job{job.index}"
        job.workdir.mkdir()
        job.planned_s = 10
    # the one before: its result is in, its process still saving for two seconds
    before.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    before.result_at, before.row, before.launched = time.time(), {}, time.time()
    bench.finishing.append(before)
    # the next: waits for the gate, then reports at once
    after.process = subprocess.Popen([sys.executable, "-c", (
        "import json, pathlib, time\n"
        f"work = pathlib.Path({str(after.workdir)!r})\n"
        "while not (work / 'go').exists(): time.sleep(0.05)\n"
        "(work / 'result.json').write_text(json.dumps({'s_per_step': 1.0}))\n")])
    bench.run([after], [None])
    assert before.process.returncode == 0 and after.row["status"] == "ok"
    ended = before.row["exit_status"] == 0
    assert ended and after.released >= before.result_at + 1.5, "the next contender was let on while the GPU was held"


def test_a_suite_its_budget_stops_says_so_and_reports_what_it_cut_short(tmp_path):
    """gpu-suite.sh --budget interrupts pytest (which prints KeyboardInterrupt): the script says that this was the
    budget, exits 124, and the report names the stop and lists the tests it cut short as not run."""
    result = run(["bash", str(REPO / "scripts" / "gpu-suite.sh"), "--no-install", "--workers", "1", "--budget", "1",
                  "--out", str(tmp_path)], env={"PYTHON": sys.executable}, check=False, timeout=300)
    assert result.returncode == 124, result.stderr[-2000:]
    assert "gpu-suite: the --budget of 1 s ran out and stopped pytest" in result.stderr
    report = json.loads((tmp_path / "gpu-report.json").read_text(encoding="utf-8"))
    assert report["pytest_exit_status"] == 124 and set(report["counts"]) == {"not run"}
    assert "pytest exit status 124 (stopped by gpu-suite.sh --budget)" in (tmp_path / "gpu-report.md").read_text(
        encoding="utf-8")


def test_a_call_of_one_contender_starts_it_whatever_its_plan_and_a_longer_call_skips_what_cannot_fit(tmp_path):
    """A contender planned past the budget is skipped where others may use the time; the call's only contender is
    started anyway (its plan is a guess: skipping it left a 262 s call with nothing on 2026-12-06)."""
    bench = bench_run.Benchmark(bench_run.argparse.Namespace(out=tmp_path, work=tmp_path / "work", budget=100,
                                                             suite=["default"], dry_run=False))
    job = bench_run.Job(0, contender("generated default"), bench_run.settings_for(contender("generated default"),
                                                                                  False))
    job.planned_s = 1000.0
    now = bench_run.time.time()
    assert not bench.fits(job, now)
    bench.alone = True
    assert bench.fits(job, now) and not bench.fits(job, bench.deadline)


def test_the_benchmark_page_holds_each_cards_default_against_issue_21s_targets():
    """The page opens with the targets read off the rows: the default as `new` makes it beside the hand-written loop
    of its run, a long run, a 24 GiB card's memory (a superseded row not held to it), the decode step's floor."""
    from decode_profile import DEFAULT_PATH

    def row(case, name, s_per_step, gpu, **more):
        return {"case": case, "name": name, "s_per_step": s_per_step, "status": "ok", "run_gpu": gpu,
                "run_date": f"{gpu} run", **more}

    rows = [row("standard", "hand-written unsloth", 4.0, "NVIDIA H200"),
            row("standard", "generated default", 0.8, "NVIDIA H200", preset_defaults=True),
            row("thinking", "generated default", 3.3, "NVIDIA H200", preset_defaults=True),
            row("thinking", "generated default, a 2000-step run", 2.9, "NVIDIA H100"),
            row("thinking", "generated default", 3.6, "NVIDIA H100", preset_defaults=True),
            row("standard", "generated default, 24 GiB card", 1.0, "NVIDIA H200", peak_reserved_gib=23.5),
            row("thinking", "generated default, 24 GiB card", 11.0, "NVIDIA H200", peak_reserved_gib=12.0,
                superseded="auto takes the settings of the row 'generated default, 24 GiB card, split' since"),
            row("thinking", "generated default, 24 GiB card, split", 3.5, "NVIDIA H200", peak_reserved_gib=21.5),
            row("thinking", "generated default", 2.0, "NVIDIA A100")]  # not marked as the preset as `new` makes it
    measured = {"refresh_ms": 40.0, "tells": "", "error": None}
    decode = {"device": "NVIDIA H200", "rows": [
        {"path": DEFAULT_PATH, "batch": 64, "decode_ms": 7.8, "floor_ms": 2.2, "x_floor": 3.5, **measured},
        {"path": "merged copy, sdpa", "batch": 8, "decode_ms": 6.9, "floor_ms": 1.8, "x_floor": 3.8, **measured}]}
    page = bench_report.markdown({"environment": {"gpu": "NVIDIA H200", "versions": {}}, "rows": rows})
    section = page.split("## Against issue 21's targets")[1].split("## Runs")[0]
    assert "| standard | NVIDIA H200 | <= 1 | 0.80 | yes | 4.00 (0.20x) |  |  |" in section
    assert "| thinking | NVIDIA H200 | <= 3 | 3.30 | **no** |  |  |  |" in section
    assert "| thinking | NVIDIA H100 | <= 3 | 3.60 | **no** |  | 2.90 | yes |" in section
    assert "A100" not in section
    # the targets' card first
    assert section.index("| thinking | NVIDIA H200") < section.index("| thinking | NVIDIA H100")
    assert "| standard | NVIDIA H200 | generated default, 24 GiB card | 1.00 | 23.50 | **no** |" in section
    # a superseded row is not held to the target; the row its note names, measuring what `new` makes now, is
    assert ("| thinking | NVIDIA H200 | generated default, 24 GiB card | 11.00 | 12.00 | superseded |\n"
            "| thinking | NVIDIA H200 | generated default, 24 GiB card, split | 3.50 | 21.50 | yes |") in section
    assert "the fast path's decode step" not in section  # no decode table in this report
    decode.update(bandwidth_GBps=4200, weight_bytes=8e9, prompt_tokens=96, new_tokens=256, torch="2", profiles={})
    with_decode = bench_report.markdown({"environment": {"gpu": "NVIDIA H200", "versions": {}}, "rows": rows,
                                         "decode": decode})
    section = with_decode.split("## Against issue 21's targets")[1].split("## Runs")[0]
    assert "| default compile mode | NVIDIA H200 | 64 | 7.80 | 2.20 | 3.5 | **no** |" in section
    assert "merged copy" not in section  # only the fast path's own step is held to the floor
