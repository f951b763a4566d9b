"""Checkpoints and resume in a generated project: kill -9, Ctrl-C, --resume, --overwrite, and refusing to bury a
run; metrics.jsonl keeps every step once. The tiny preset with a checkpoint every 4 steps, on the CPU."""

import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from grpo_skill.runtime import metrics, resume, traces

from support import run

SAVE_STEPS = 4


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("resume")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "tiny-resume", "--preset", "tiny", "-o", str(root)])
    project = root / "tiny-resume"
    config = project / "config.toml"
    text = config.read_text()
    assert "save_steps = 20" in text and "save_total_limit = 2" in text  # the preset's, made smaller here
    config.write_text(text.replace("save_steps = 20", f"save_steps = {SAVE_STEPS}"))
    return project


def start(project, *args):
    return subprocess.Popen([sys.executable, "train.py", *args], cwd=project, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(condition, process, timeout=180):
    """Poll until ``condition()``; fails if the run ends first (then the test would prove nothing)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"train.py ended (exit {process.returncode}) before the moment to interrupt it\n{err}")
        assert time.monotonic() < deadline, "train.py took too long"
        time.sleep(0.02)


def logged_steps(output_dir):
    return [row["step"] for row in metrics.read_metrics(output_dir) if "reward" in row]


def checkpoint_steps(output_dir):
    return [checkpoint.step for checkpoint in resume.checkpoint_dirs(output_dir)]


def tree_digest(folder):
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def train(project, *args, check=True):
    return run([sys.executable, "train.py", *args], cwd=project, check=check)


# kill -9 after the first checkpoint, then --resume ------------------------------------------------------------

@pytest.fixture(scope="module")
def killed(project):
    """A 16-step run killed with SIGKILL as soon as its first checkpoint is complete."""
    output_dir = project / "killed"
    process = start(project, "--max-steps", "16", "--output-dir", "killed")
    wait_for(lambda: (output_dir / f"checkpoint-{SAVE_STEPS}" / resume.TRAINER_STATE).is_file(), process)
    process.kill()
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert not (output_dir / resume.SUMMARY_FILE).exists()
    # A kill can land in the middle of a metrics line; make sure this one did, after the rows of later steps.
    with (output_dir / metrics.METRICS_FILE).open("a") as handle:
        handle.write('{"step": 15, "loss": 0.1')
    return output_dir


def test_a_fresh_start_over_an_interrupted_run_refuses_and_changes_nothing(project, killed):
    before = tree_digest(killed)
    result = train(project, "--max-steps", "16", "--output-dir", "killed", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {killed} holds a run stopped at step {resume.last_checkpoint(killed).step}: continue it with --resume, "
        "or start over with --overwrite"]
    assert tree_digest(killed) == before


@pytest.fixture(scope="module")
def resumed_after_kill(project, killed):
    last = resume.last_checkpoint(killed)
    result = train(project, "--max-steps", "16", "--output-dir", "killed", "--resume")
    return last, result


def test_resume_after_kill_logs_every_step_once(resumed_after_kill, killed):
    last, result = resumed_after_kill
    assert f"resuming from {last.path} (step {last.step})" in result.stderr
    assert "line" in result.stderr and "is cut off" in result.stderr  # the torn line: skipped, with a warning
    assert f"step {last.step + 1:>4}  reward" in result.stderr  # the first step the resumed run trains
    assert f"step {last.step:>4}  reward" not in result.stderr
    assert logged_steps(killed) == list(range(1, 17))
    traced = [row["step"] for row in metrics.read_metrics(killed / traces.TRACES_FILE)]
    assert traced == [step for step in range(1, 17) for _ in range(8)]  # the traces before the checkpoint kept


def test_resume_after_kill_ends_with_the_adapter_and_a_summary_of_the_whole_run(resumed_after_kill, killed):
    _, result = resumed_after_kill
    summary = json.loads(result.stdout)
    assert (summary["global_step"], summary["steps"]) == (16, 16)
    assert json.loads((killed / resume.SUMMARY_FILE).read_text()) == summary
    assert (killed / "adapter" / "adapter_model.safetensors").stat().st_size > 0
    assert (killed / resume.PLOT_FILE).stat().st_size > 0
    assert checkpoint_steps(killed) == [12, 16]  # save_total_limit = 2


@pytest.fixture
def finished_copy(project, resumed_after_kill, killed, tmp_path):
    """The resumed run's folder (checkpoints 12 and 16, LoRA r 16), copied: to resume it with changed settings."""
    copy = project / f"copy-{tmp_path.name}"
    shutil.copytree(killed, copy)
    yield copy
    shutil.rmtree(copy)


def resume_with_config_edit(project, finished_copy, old, new):
    """``train.py --resume`` of the finished copy with one edit to a copy of config.toml; the run must change no file
    of it (asserted here, since every refusal promises it)."""
    edited = project / "config-edited.toml"
    edited.write_text((project / "config.toml").read_text().replace(old, new))
    before = tree_digest(finished_copy)
    try:
        result = train(project, "--config", edited.name, "--output-dir", finished_copy.name, "--resume",
                       "--max-steps", "20", check=False)
    finally:
        edited.unlink()
    assert tree_digest(finished_copy) == before
    return result


def test_resume_with_another_lora_shape_is_refused_before_the_model_loads(project, finished_copy):
    result = resume_with_config_edit(project, finished_copy, "\nr = 16\n", "\nr = 32\n")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {finished_copy.name}/checkpoint-16 was trained with LoRA r 16 (now 32), not what [lora] says now: "
        "resume with the values it was trained with, or start over with --overwrite"]


def test_resume_with_all_linear_over_named_target_modules_is_refused_before_the_model_loads(project, finished_copy):
    """"all-linear" names no layer: it is compared by the modules it picks in the model, built without weights."""
    result = resume_with_config_edit(project, finished_copy, f"target_modules = {json.dumps(TINY_TARGETS)}",
                                     'target_modules = "all-linear"')
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {finished_copy.name}/checkpoint-16 was trained with LoRA target_modules {sorted(TINY_TARGETS)} (now "
        '"all-linear"), not what [lora] says now: resume with the values it was trained with, or start over with '
        "--overwrite"]


def test_resume_onto_another_model_is_refused_before_it_loads(project, finished_copy):
    from grpo_skill import modelbuild

    wider = modelbuild.build("small", opens_think=True)  # hidden size 256 against tiny's 64
    before = tree_digest(finished_copy)
    result = train(project, "--model", str(wider), "--output-dir", finished_copy.name, "--resume",
                   "--max-steps", "20", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {finished_copy / 'checkpoint-16'} was trained with model.name \"grpo-skill/tiny-qwen3\" (now "
        f"\"{wider}\"), which a checkpoint cannot change: set them back to resume, or start over with --overwrite"]
    assert tree_digest(finished_copy) == before


def test_resume_after_editing_the_learning_rate_is_refused_with_the_choice(project, finished_copy):
    """Trainer restores the optimizer's learning rate from the checkpoint: the edit would be ignored silently."""
    result = resume_with_config_edit(project, finished_copy, "learning_rate = 0.005", "learning_rate = 0.001")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {finished_copy.name}/checkpoint-16 was trained with grpo.learning_rate 0.005 (now 0.001): its "
        "optimizer state keeps the old value, so the new one would be ignored; set it back to resume, or start over "
        "with --overwrite to train with the new one"]


@pytest.mark.parametrize("old,new,key", [("num_generations = 8", "num_generations = 4", "grpo.num_generations"),
                                         ("gradient_accumulation_steps = 1", "gradient_accumulation_steps = 2",
                                          "grpo.gradient_accumulation_steps"),
                                         ("alpha = 16", "alpha = 32", "lora.alpha")])
def test_resume_after_changing_what_a_checkpoint_fixes_is_refused(tmp_path, old, new, key):
    """Checked before the model loads, from the settings the checkpoint recorded (no training needed)."""
    from grpo_skill import generator, project as projects

    generator.render("proj", tmp_path, preset_name="tiny")
    config_file = tmp_path / "proj" / "config.toml"
    checkpoint = tmp_path / "out" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(resume.run_settings(projects.load(config_file))))
    config_file.write_text(config_file.read_text().replace(old, new, 1))
    with pytest.raises(resume.ResumeError) as refused:
        resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                       settings=resume.run_settings(projects.load(config_file)))
    assert f"was trained with {key} " in str(refused.value) and "which a checkpoint cannot change" in str(refused.value)
    assert sorted(path.name for path in checkpoint.iterdir()) == [resume.SETTINGS_FILE, resume.TRAINER_STATE]


def test_resume_where_auto_weights_resolve_otherwise_is_refused_and_setting_them_back_resumes(tmp_path):
    """load_in_4bit = "auto" held 16 bits where the run began (the fast path); on a machine where it resolves to 4
    bits the checkpoint's base would change under it. Naming the precision it was trained with resumes."""
    from grpo_skill import generator, project as projects

    generator.render("proj", tmp_path, preset_name="tiny")
    config_file = tmp_path / "proj" / "config.toml"
    config_file.write_text(config_file.read_text().replace("load_in_4bit = false", 'load_in_4bit = "auto"', 1))
    checkpoint = tmp_path / "out" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    began = resume.run_settings(projects.load(config_file), held_4bit=False)
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(began))
    with pytest.raises(resume.ResumeError) as refused:
        resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                       settings=resume.run_settings(projects.load(config_file), held_4bit=True))
    assert "was trained with model.load_in_4bit (as this run took it) false (now true)" in str(refused.value)
    config_file.write_text(config_file.read_text().replace('load_in_4bit = "auto"', "load_in_4bit = false", 1))
    start = resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                           settings=resume.run_settings(projects.load(config_file), held_4bit=False))
    assert start.checkpoint.step == 4
    # a checkpoint that recorded no resolved value (older grpo-skill) is compared by the literal alone
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(resume.run_settings(projects.load(config_file))))
    assert resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                          settings=resume.run_settings(projects.load(config_file), held_4bit=True)).checkpoint


def test_resume_after_changing_a_reward_weight_or_beta_applies_it_and_says_so(tmp_path, capsys):
    from grpo_skill import generator, project as projects

    generator.render("proj", tmp_path, preset_name="tiny")
    config_file = tmp_path / "proj" / "config.toml"
    checkpoint = tmp_path / "out" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(resume.run_settings(projects.load(config_file))))
    text = config_file.read_text().replace("weight = 1.0", "weight = 0.5", 1).replace("beta = 0.04", "beta = 0.02")
    config_file.write_text(text)
    start = resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                           settings=resume.run_settings(projects.load(config_file)))
    assert start.checkpoint.step == 4
    assert capsys.readouterr().err.splitlines()[-1] == (
        "changed since that checkpoint, and applied from here on: grpo.beta 0.04 -> 0.02; rewards thinking:1 -> "
        "thinking:0.5")


def test_resume_across_compile_layers_names_no_change(tmp_path, capsys):
    """compile_layers changes how fast the layers run, not what they compute: a checkpoint recorded before the key
    existed, or with another value, resumes without naming it."""
    from grpo_skill import generator, project as projects

    generator.render("proj", tmp_path, preset_name="tiny")
    config_file = tmp_path / "proj" / "config.toml"
    checkpoint = tmp_path / "out" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    recorded = resume.run_settings(projects.load(config_file))
    assert recorded.pop("model.compile_layers") == "auto"  # as an older grpo-skill recorded it: no such key
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(recorded))
    config_file.write_text(config_file.read_text().replace('compile_layers = "auto"', "compile_layers = true"))
    start = resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                           settings=resume.run_settings(projects.load(config_file)))
    assert start.checkpoint.step == 4 and "changed since that checkpoint" not in capsys.readouterr().err


# Ctrl-C ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ctrl_c(project):
    """A 12-step run sent SIGINT once its first step is logged."""
    output_dir = project / "ctrl-c"
    process = start(project, "--max-steps", "12", "--output-dir", "ctrl-c")
    wait_for(lambda: (output_dir / metrics.METRICS_FILE).is_file()
             and (output_dir / metrics.METRICS_FILE).read_text().count("\n") >= 1, process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=180)
    return output_dir, process.returncode, out, err


def test_ctrl_c_saves_a_checkpoint_and_exits_130_with_one_line(ctrl_c):
    output_dir, returncode, out, err = ctrl_c
    assert returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = resume.last_checkpoint(output_dir)
    assert last is not None and 1 <= last.step < 12
    assert logged_steps(output_dir) == list(range(1, last.step + 1))
    assert err.strip().splitlines()[-1] == (
        f"stopped at step {last.step} of 12; checkpoint saved; continue with: "
        "python train.py --max-steps 12 --output-dir ctrl-c --resume")
    assert [line for line in err.splitlines() if "--resume" in line] == [err.strip().splitlines()[-1]]
    assert not (output_dir / "adapter").exists() and not (output_dir / resume.SUMMARY_FILE).exists()
    assert out == ""


@pytest.fixture(scope="module")
def resumed_after_ctrl_c(project, ctrl_c):
    output_dir, _, _, err = ctrl_c
    command = err.strip().splitlines()[-1].split("continue with: ")[1].split()
    assert command[:2] == ["python", "train.py"]
    return output_dir, train(project, *command[2:])


def test_the_command_printed_at_ctrl_c_finishes_the_run(resumed_after_ctrl_c):
    output_dir, result = resumed_after_ctrl_c
    assert logged_steps(output_dir) == list(range(1, 13))
    assert json.loads(result.stdout)["global_step"] == 12
    assert (output_dir / "adapter" / "adapter_config.json").is_file()


def test_a_fresh_start_over_a_finished_run_refuses_and_changes_nothing(project, resumed_after_ctrl_c):
    output_dir, _ = resumed_after_ctrl_c
    before = tree_digest(output_dir)
    result = train(project, "--max-steps", "12", "--output-dir", "ctrl-c", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {output_dir} holds a finished run (12 steps): start over with --overwrite, or choose another "
        "--output-dir"]
    result = train(project, "--max-steps", "12", "--output-dir", "ctrl-c", "--resume", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: the run in {output_dir} already reached step 12 (max_steps 12); to train further, raise --max-steps "
        "above 12, or start over with --overwrite"]
    assert tree_digest(output_dir) == before


def test_overwrite_removes_only_what_the_run_wrote(project, resumed_after_ctrl_c):
    finished, _ = resumed_after_ctrl_c
    output_dir = project / "overwritten"
    shutil.copytree(finished, output_dir)
    (output_dir / "my-notes.txt").write_text("keep me")
    result = train(project, "--max-steps", "2", "--output-dir", "overwritten", "--overwrite")
    assert "--overwrite: removed the earlier run in" in result.stderr
    assert logged_steps(output_dir) == [1, 2]
    assert checkpoint_steps(output_dir) == [2]
    assert json.loads((output_dir / resume.SUMMARY_FILE).read_text())["global_step"] == 2
    assert (output_dir / "my-notes.txt").read_text() == "keep me"


CTRL_C_PROBE = """
import os, signal, sys, time
from grpo_skill.runtime import resume
ctrl_c = resume.CtrlC(sys.argv[1]).install()
if sys.argv[2] == "training":
    with ctrl_c.during_training():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
        print("first Ctrl-C noted" if ctrl_c.requested else "first Ctrl-C missed", flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
else:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
print("not stopped", flush=True)
"""


@pytest.mark.parametrize("when", ["training", "loading"])
def test_a_second_ctrl_c_or_one_before_training_stops_at_once(tmp_path, when):
    (tmp_path / "checkpoint-8").mkdir()
    (tmp_path / "checkpoint-8" / resume.TRAINER_STATE).write_text("{}")
    result = run([sys.executable, "-c", CTRL_C_PROBE, str(tmp_path), when], check=False)
    assert result.returncode == 130
    assert "Traceback" not in result.stderr and "not stopped" not in result.stdout
    if when == "training":
        assert result.stdout == "first Ctrl-C noted\n"
        assert result.stderr.splitlines()[0].startswith("Ctrl-C: saving a checkpoint after this step")
    assert result.stderr.strip().splitlines()[-1].startswith("stopped by Ctrl-C without saving; python ")
    assert result.stderr.strip().endswith("--resume continues from step 8")


# Refused before any model loads ------------------------------------------------------------------------------

def test_resume_without_a_checkpoint_is_one_line_and_writes_nothing(project):
    result = train(project, "--output-dir", "never-ran", "--resume", check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {project / 'never-ran'} has no checkpoint to resume from; start the run without --resume"]
    assert not (project / "never-ran").exists()


def test_resume_of_a_run_killed_before_its_first_checkpoint_points_to_overwrite(tmp_path):
    # without --resume the same folder is refused too ("start over with --overwrite"): no circle between the two
    write_rows(tmp_path / metrics.METRICS_FILE, [{"step": 1, "reward": 0.0}])
    write_rows(tmp_path / traces.TRACES_FILE, [{"step": 1, "completion": "a"}])
    with pytest.raises(resume.ResumeError) as refused:
        resume.prepare(tmp_path, resume=True, max_steps=10)
    assert str(refused.value) == (f"{tmp_path} holds a run without a checkpoint to resume from: start over with "
                                  "--overwrite instead of --resume")
    with pytest.raises(resume.ResumeError, match="start over with --overwrite"):
        resume.prepare(tmp_path, max_steps=10)
    assert resume.prepare(tmp_path, overwrite=True, max_steps=10) == resume.Start()
    assert not any(tmp_path.iterdir())


def test_resume_and_overwrite_together_are_refused(project):
    result = train(project, "--resume", "--overwrite", check=False)
    assert result.returncode == 1
    assert "choose one" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_resume_from_checkpoint_in_the_config_points_to_the_flag(project):
    config = project / "config.toml"
    original = config.read_text()
    try:
        edited = original.replace('output_dir = "outputs"\n',
                                  'output_dir = "outputs"\nresume_from_checkpoint = "outputs/checkpoint-4"\n')
        assert edited != original
        config.write_text(edited)
        result = train(project, "--output-dir", "from-config", check=False)
    finally:
        config.write_text(original)
    line = edited.splitlines().index('resume_from_checkpoint = "outputs/checkpoint-4"') + 1
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: config.toml:{line}: grpo.resume_from_checkpoint: remove it from [grpo]; to continue a run, use "
        "python train.py --resume (it takes the last checkpoint in grpo.output_dir)"]
    assert not (project / "from-config").exists()


# The run folder and metrics.jsonl, without training ----------------------------------------------------------

def write_rows(path, rows, tail=""):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + tail)


def users_folder(folder):
    """A folder of the user's whose files bear names a run writes: none of it is a run."""
    folder.mkdir()
    (folder / "README.md").write_text("# my notes\n")
    (folder / resume.SUMMARY_FILE).write_text('{"accuracy": 0.9}')
    (folder / metrics.METRICS_FILE).write_text('{"epoch": 1, "loss": 0.5}\n')
    (folder / resume.ADAPTER_DIR).mkdir()
    (folder / resume.ADAPTER_DIR / resume.ADAPTER_CONFIG).write_text("{}")
    return folder


@pytest.mark.parametrize("mode", [{}, {"overwrite": True}, {"resume": True}], ids=["fresh", "overwrite", "resume"])
def test_a_folder_of_the_users_is_refused_whatever_the_flag_and_left_alone(tmp_path, mode):
    folder = users_folder(tmp_path / "mine")
    before = tree_digest(folder)
    assert resume.finished_step(folder) is None and not resume.has_run(folder)
    with pytest.raises(resume.ResumeError) as refused:
        resume.prepare(folder, max_steps=10, **mode)
    assert str(refused.value) == (
        f"{folder} is not empty and holds no run (README.md, adapter, metrics.jsonl, ...); a run writes its files "
        "there (README.md, adapter, ...) over any of the same name: choose a new or empty folder with --output-dir")
    assert tree_digest(folder) == before


def test_a_finished_runs_summary_is_told_from_a_users(tmp_path):
    # what train.py writes, and the summaries from before it wrote global_step
    (tmp_path / resume.SUMMARY_FILE).write_text(json.dumps(
        {"backend": "trl", "adapter": "outputs/adapter", "metrics": "outputs/metrics.jsonl", "global_step": 12,
         "steps": 12}))
    assert resume.finished_step(tmp_path) == 12 and resume.has_run(tmp_path)
    (tmp_path / resume.SUMMARY_FILE).write_text(json.dumps(
        {"adapter": "outputs/adapter", "metrics": "outputs/metrics.jsonl", "steps": 5}))
    assert resume.finished_step(tmp_path) == 5
    with pytest.raises(resume.ResumeError, match=r"holds a finished run \(5 steps\)"):
        resume.prepare(tmp_path, max_steps=10)
    for users in ({"steps": 5}, {"global_step": 5}, [5], {"adapter": "a", "metrics": "m", "global_step": True}):
        (tmp_path / resume.SUMMARY_FILE).write_text(json.dumps(users))
        assert resume.finished_step(tmp_path) is None and not resume.has_run(tmp_path), users


def test_a_fresh_start_takes_a_folder_holding_only_what_runs_leave_there(tmp_path, capsys):
    """sft.py's outputs/sft and --smoke's outputs/smoke inside grpo.output_dir, a hidden file, and TRL's model card
    of a run that --overwrite removed before it stopped: no files of the user's, and no run to bury."""
    for sub in ("sft", "smoke"):
        (tmp_path / sub).mkdir()
        write_rows(tmp_path / sub / metrics.METRICS_FILE, [{"step": 1, "loss": 0.1}])
    (tmp_path / ".gitkeep").write_text("")
    (tmp_path / "README.md").write_text("---\nlibrary_name: transformers\nmodel_name: outputs\ntags:\n"
                                        "- generated_from_trainer\n- grpo\n- trl\nlicence: license\n---\n")
    assert not resume.has_run(tmp_path)
    assert resume.prepare(tmp_path, max_steps=10) == resume.Start()
    assert resume.prepare(tmp_path, overwrite=True, max_steps=10) == resume.Start()
    assert sorted(path.name for path in tmp_path.iterdir()) == [".gitkeep", "README.md", "sft", "smoke"]
    (tmp_path / "notes.txt").write_text("mine")  # a file of the user's beside them: refused
    with pytest.raises(resume.ResumeError, match=r"holds no run \(notes.txt\)"):
        resume.prepare(tmp_path, max_steps=10)


def test_a_fresh_start_takes_what_a_run_that_failed_before_its_first_step_left(tmp_path):
    """Trainer makes its output folders at start: a --smoke or sft.py run that failed at step 1 leaves one empty,
    and a TensorBoard run its runs/ of event files; the next run starts there, with or without --overwrite."""
    (tmp_path / "smoke").mkdir()
    (tmp_path / "runs" / "Dec06_21-00-00_host").mkdir(parents=True)
    (tmp_path / "runs" / "Dec06_21-00-00_host" / "events.out.tfevents.1765054800.host.1.0").write_bytes(b"\0")
    assert resume.prepare(tmp_path, max_steps=10) == resume.Start()
    assert resume.prepare(tmp_path, overwrite=True, max_steps=10) == resume.Start()
    (tmp_path / "runs" / "notes.txt").write_text("mine")  # a file of the user's in runs/: refused
    with pytest.raises(resume.ResumeError, match=r"holds no run \(runs\)"):
        resume.prepare(tmp_path, max_steps=10)


def test_evaluate_writes_its_samples_over_its_own_only(tmp_path):
    adapter = tmp_path / resume.ADAPTER_DIR
    assert resume.samples_file(adapter) == tmp_path / resume.SAMPLES_FILE  # none yet
    write_rows(tmp_path / resume.SAMPLES_FILE, [{"prompt": "2+2?", "before": "5", "after": "4"}])
    assert resume.samples_file(adapter) == tmp_path / resume.SAMPLES_FILE  # evaluate.py's own, from before
    (tmp_path / resume.SAMPLES_FILE).write_text("my samples\n")
    with pytest.raises(resume.ResumeError) as refused:
        resume.samples_file(adapter)
    assert str(refused.value) == (f"{tmp_path / resume.SAMPLES_FILE} is not evaluate.py's, which writes its samples "
                                  "there (beside the adapter): move it, or pass --adapter a copy of the adapter in "
                                  "another folder")


@pytest.mark.parametrize("saved", [{}, {"README.md": "---\nbase_model: tiny\nlibrary_name: peft\n---\n"},
                                   {"README.md": "---\n", "adapter_model.safetensors": "\0"}],
                         ids=["nothing", "peft-card", "part-of-the-weights"])
def test_a_checkpoint_cut_off_while_saving_is_not_resumed_from_and_is_removed(tmp_path, saved):
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / resume.TRAINER_STATE).write_text("{}")
    (tmp_path / "checkpoint-8").mkdir()  # no trainer_state.json: the kill came while saving, after these files
    for name, text in saved.items():
        (tmp_path / "checkpoint-8" / name).write_text(text)
    write_rows(tmp_path / metrics.METRICS_FILE, [{"step": s, "reward": 0.0} for s in range(1, 9)])
    started = resume.prepare(tmp_path, resume=True, max_steps=12)
    assert started.checkpoint.step == 4 and started.resume_from == str(tmp_path / "checkpoint-4")
    assert checkpoint_steps(tmp_path) == [4]
    assert logged_steps(tmp_path) == [1, 2, 3, 4]


@pytest.mark.parametrize("mode", [{}, {"overwrite": True}, {"resume": True}], ids=["fresh", "overwrite", "resume"])
def test_a_folder_of_the_users_named_like_a_checkpoint_is_refused_and_left_alone(tmp_path, mode):
    """Trainer would save into it, or remove it as an older checkpoint (save_total_limit): the run must not start."""
    run_dir = tmp_path / "run"
    (run_dir / "checkpoint-4").mkdir(parents=True)
    (run_dir / "checkpoint-4" / resume.TRAINER_STATE).write_text("{}")
    (run_dir / "checkpoint-4" / "adapter_model.safetensors").write_bytes(b"weights")
    write_rows(run_dir / metrics.METRICS_FILE, [{"step": s, "reward": 0.0} for s in range(1, 7)])
    mine = run_dir / "checkpoint-8"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    before = tree_digest(run_dir)
    with pytest.raises(resume.ResumeError) as refused:
        resume.prepare(run_dir, max_steps=12, **mode)
    assert str(refused.value) == (
        f"{mine} holds no checkpoint (no trainer_state.json, adapter or weights), but Trainer takes any folder of "
        "that name for one, to save into or delete as an older checkpoint: rename it or move it out, or choose "
        "another folder with --output-dir")
    assert tree_digest(run_dir) == before
    # without the run beside it, it is a folder of the user's like any other
    shutil.rmtree(run_dir / "checkpoint-4")
    (run_dir / metrics.METRICS_FILE).unlink()
    assert not resume.has_run(run_dir)
    with pytest.raises(resume.ResumeError, match=r"is not empty and holds no run \(checkpoint-8\)"):
        resume.prepare(run_dir, max_steps=12, **mode)
    assert (mine / "notes.txt").read_text() == "keep me"


def checkpoint_with_adapter(output_dir, **adapter_config):
    checkpoint = output_dir / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    (checkpoint / resume.ADAPTER_CONFIG).write_text(json.dumps({"r": 16, **adapter_config}))
    return checkpoint


QWEN3_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
TINY_TARGETS = [*QWEN3_LINEAR, "lm_head"]  # the tiny preset's [lora] target_modules
TINY_LORA = {"r": 16, "target_modules": TINY_TARGETS, "source": "[lora]"}


def test_an_unsloth_checkpoint_that_trains_lm_head_whole_resumes(tmp_path):
    # Unsloth saves a LoRA on lm_head as a whole trained matrix: modules_to_save, not target_modules
    checkpoint_with_adapter(tmp_path, target_modules=QWEN3_LINEAR, modules_to_save=["lm_head"])
    started = resume.prepare(tmp_path, resume=True, max_steps=4, lora=TINY_LORA)
    assert started.checkpoint.step == 2


@pytest.mark.parametrize("saved", [
    {"target_modules": QWEN3_LINEAR},  # lm_head not trained at all
    {"target_modules": ["q_proj", "v_proj"], "modules_to_save": ["lm_head"]},
    {"target_modules": [*QWEN3_LINEAR, "lm_head", "embed_tokens"]},
], ids=["without-lm-head", "fewer-layers", "more-layers"])
def test_a_checkpoint_with_other_target_modules_is_refused_and_left_alone(tmp_path, saved):
    checkpoint = checkpoint_with_adapter(tmp_path, **saved)
    before = tree_digest(tmp_path)
    with pytest.raises(resume.ResumeError) as refused:
        resume.prepare(tmp_path, resume=True, max_steps=4, lora=TINY_LORA)
    assert str(refused.value).startswith(
        f"{checkpoint} was trained with LoRA target_modules {sorted(saved['target_modules'])} (now ")
    assert tree_digest(tmp_path) == before


def peft_checkpoint_and_project(tmp_path, trained, now):
    """A checkpoint in tmp_path/out whose adapter peft saved itself on the tiny model with target_modules ``trained``,
    with the settings of a run whose [lora] said so, and a tiny project whose [lora] target_modules are ``now``; its
    config.toml."""
    import torch

    from grpo_skill import generator, project as projects
    from support import tiny_lora_policy

    generator.render("proj", tmp_path, preset_name="tiny")
    config_file = tmp_path / "proj" / "config.toml"
    template = config_file.read_text()
    checkpoint = tmp_path / "out" / "checkpoint-4"
    tiny_lora_policy(torch.float32, r=16, target_modules=trained).save_pretrained(checkpoint)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    for targets in (trained, now):
        config_file.write_text(template.replace(f"target_modules = {json.dumps(TINY_TARGETS)}",
                                                f"target_modules = {json.dumps(targets)}"))
        if targets is trained:
            (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(resume.run_settings(projects.load(config_file))))
    return config_file


@pytest.mark.parametrize("trained,now,refused", [
    ("all-linear", TINY_TARGETS, f'target_modules "all-linear" (now {sorted(TINY_TARGETS)})'),  # lm_head besides
    (["q_proj", "v_proj"], "all-linear", """target_modules ['q_proj', 'v_proj'] (now "all-linear")"""),
    ("all-linear", "all-linear", None),
    ("all-linear", QWEN3_LINEAR, None),  # the same layers, named
    (QWEN3_LINEAR, "all-linear", None),
    (["v_proj", "q_proj"], ["q_proj", "v_proj"], None),
], ids=["all-linear-then-named", "named-then-all-linear", "all-linear-both", "all-linear-then-the-same-named",
        "named-then-all-linear-for-the-same", "the-same-names-in-another-order"])
def test_all_linear_is_compared_by_the_layers_it_stands_for(tmp_path, trained, now, refused, capsys):
    """peft saves "all-linear" as the whole names of the layers it picked (model.layers.0.mlp.up_proj, ...): a
    checkpoint's adapter, saved by peft itself, against [lora] target_modules as config.toml says them. The settings
    the checkpoint recorded (config.toml's words) are compared the same way, by the modules they pick."""
    from grpo_skill import project as projects

    config = projects.load(peft_checkpoint_and_project(tmp_path, trained, now))
    shape, settings = resume.lora_shape(config), resume.run_settings(config)
    assert shape["target_modules"] == now
    if refused is None:
        assert resume.prepare(tmp_path / "out", resume=True, max_steps=8, lora=shape,
                              settings=settings).checkpoint.step == 4
        assert "changed since that checkpoint" not in capsys.readouterr().err  # the same modules: nothing changed
        return
    before = tree_digest(tmp_path / "out")
    with pytest.raises(resume.ResumeError) as error:
        resume.prepare(tmp_path / "out", resume=True, max_steps=8, lora=shape, settings=settings)
    assert str(error.value) == (f"{tmp_path / 'out' / 'checkpoint-4'} was trained with LoRA {refused}, not what "
                                "[lora] says now: resume with the values it was trained with, or start over with "
                                "--overwrite")
    assert tree_digest(tmp_path / "out") == before


def test_comparing_all_linear_leaves_transformers_unimported(tmp_path):
    """train.py checks the checkpoint before it imports unsloth, which must come before transformers."""
    config_file = peft_checkpoint_and_project(tmp_path, "all-linear", TINY_TARGETS)
    probe = ("import sys\n"
             "from grpo_skill import project as projects\n"
             "from grpo_skill.runtime import resume\n"
             f"shape = resume.lora_shape(projects.load({str(config_file)!r}))\n"
             "try:\n"
             f"    resume.prepare({str(tmp_path / 'out')!r}, resume=True, max_steps=8, lora=shape)\n"
             "except resume.ResumeError as error:\n"
             "    print(error)\n"
             "print('transformers' in sys.modules)\n")
    lines = run([sys.executable, "-c", probe]).stdout.splitlines()
    assert 'target_modules "all-linear" (now ' in lines[0] and lines[1:] == ["False"]


def test_rewind_keeps_steps_up_to_the_checkpoint_and_drops_end_of_training_rows(tmp_path):
    path = tmp_path / metrics.METRICS_FILE
    rows = [{"step": 1, "reward": 0.1}, {"step": 2, "reward": 0.2}, {"step": 2, "train_runtime": 3.0},
            {"step": 3, "reward": 0.3}]
    write_rows(path, rows, tail='{"step": 4, "rew')
    warnings = []
    assert metrics.rewind(path, 2, on_warning=warnings.append) == 2
    assert metrics.read_metrics(path) == rows[:2]
    assert warnings == [f"{path} line 5 is cut off (the run was killed while writing it); skipped"]


def test_latest_traces_skip_a_line_cut_off_by_a_kill(tmp_path):
    write_rows(tmp_path / traces.TRACES_FILE, [{"step": 3, "completion": "a"}, {"step": 3, "completion": "b"}],
               tail='{"step": 4, "compl')
    warnings = []
    assert [row["completion"] for row in traces.latest(tmp_path, 5, on_warning=warnings.append)] == ["a", "b"]
    assert len(warnings) == 1 and "is cut off" in warnings[0]


def test_metrics_cli_skips_a_cut_off_last_line_with_a_warning(cli, tmp_path):
    write_rows(tmp_path / metrics.METRICS_FILE, [{"step": 1, "reward": -1.0}, {"step": 2, "reward": 1.0}],
               tail='{"step": 3, "reward": 0.')
    result = cli("metrics", str(tmp_path), "--json")
    summary = json.loads(result.stdout)
    assert {key: summary[key] for key in ("steps", "first_mean_reward", "last_mean_reward", "gain")} == {
        "steps": 2, "first_mean_reward": -1.0, "last_mean_reward": 1.0, "gain": 2.0}  # two steps: step 1 vs step 2
    assert result.stderr.strip().splitlines() == [
        f"warning: {tmp_path / metrics.METRICS_FILE} line 3 is cut off (the run was killed while writing it); skipped"]


def test_metrics_cli_names_a_broken_line_in_the_middle(cli, tmp_path):
    path = tmp_path / metrics.METRICS_FILE
    path.write_text('{"step": 1, "reward": 0.5}\nnot json\n{"step": 3, "reward": 0.5}\n')
    result = cli("metrics", str(tmp_path), check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: {path} line 2 is not a JSON object: 'not json'; delete that line, or the file"]


def test_a_character_cut_in_half_on_the_last_line_is_skipped_like_a_cut_off_line(tmp_path):
    # traces are written with ensure_ascii=False: a kill can stop in the middle of a multi-byte character
    path = tmp_path / traces.TRACES_FILE
    path.write_bytes(b'{"step": 3, "completion": "a"}\n{"step": 4, "completion": "\xe4\xbd')
    warnings = []
    assert [row["completion"] for row in traces.latest(tmp_path, 5, on_warning=warnings.append)] == ["a"]
    assert warnings == [f"{path} line 2 is cut off (the run was killed while writing it); skipped"]
    assert metrics.rewind(path, 3, on_warning=warnings.append) == 1  # what train.py --resume does with it
    assert metrics.read_metrics(path) == [{"step": 3, "completion": "a"}]


def test_a_line_that_is_not_utf8_before_the_last_is_named(cli, tmp_path):
    path = tmp_path / metrics.METRICS_FILE
    path.write_bytes(b'{"step": 1, "reward": 0.5}\n{"step": 2, "note": "caf\xe9"}\n{"step": 3, "reward": 0.5}\n')
    result = cli("metrics", str(tmp_path), check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: {path} line 2 is not UTF-8 text (byte 24); delete that line, or the file"]


def test_a_row_whose_values_are_not_numbers_is_named(cli, tmp_path):
    path = tmp_path / metrics.METRICS_FILE
    path.write_text('{"step": 1, "reward": 0.5}\n{"step": "x", "reward": "high"}\n')
    result = cli("metrics", str(tmp_path), check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: {path} line 2: 'step' is \"x\", not a number; fix or delete that line"]


def test_a_line_separator_inside_a_completion_does_not_split_its_row(tmp_path):
    row = {"step": 1, "completion": "one\u2028two\x85three"}
    (tmp_path / traces.TRACES_FILE).write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert traces.latest(tmp_path, 5) == [row]


def test_metrics_cli_shows_completions_that_lack_fields(cli, tmp_path):
    write_rows(tmp_path / metrics.METRICS_FILE, [{"step": 1, "reward": 0.5}])
    write_rows(tmp_path / traces.TRACES_FILE, [
        {"step": 1, "completion": "kept", "rewards": {"a": 1.0}, "reward": 1.0, "advantage": 0.5},
        {"step": 2, "completion": "no rewards", "reward": 0.25},
        {"step": 2, "completion": "rewards null", "rewards": None, "advantage": None}])
    result = cli("metrics", str(tmp_path))
    assert result.stdout.splitlines()[-4:] == [
        "- reward +0.25 (), advantage -:", "  no rewards", "- reward - (), advantage -:", "  rewards null"]


def test_the_summary_of_a_short_run_compares_its_halves():
    rows = [{"step": step, "reward": reward} for step, reward in enumerate([0.1, 0.2, 0.3, 0.4, 0.5], 1)]
    trend = metrics.reward_trend(rows)  # five steps: the first two against the last two, not all five twice
    assert trend["first_mean_reward"] == pytest.approx(0.15) and trend["last_mean_reward"] == pytest.approx(0.45)
    assert trend["gain"] == pytest.approx(0.3) and trend["steps"] == 5
    long = [{"step": step, "reward": float(step)} for step in range(1, 61)]
    assert metrics.reward_trend(long)["gain"] == pytest.approx(50.0)  # 60 steps: the first and last ten


def test_overwrite_in_a_folder_it_cannot_write_removes_nothing(tmp_path):
    """Nothing of the earlier run is lost when --overwrite cannot remove all of it."""
    from support import unwritable

    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    (checkpoint / "adapter_model.safetensors").write_bytes(b"weights")
    write_rows(tmp_path / metrics.METRICS_FILE, [{"step": 1, "reward": 0.0}])
    before = tree_digest(tmp_path)
    with unwritable(tmp_path), pytest.raises(resume.ResumeError) as refused:
        resume.prepare(tmp_path, overwrite=True, max_steps=10)
    assert str(refused.value).startswith("--overwrite: cannot remove ")
    assert "nothing was removed" in str(refused.value)
    assert tree_digest(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint-4", metrics.METRICS_FILE]


def test_resume_under_another_micro_batch_split_continues_and_says_so(tmp_path, capsys):
    """generation = "auto" may split the micro-batches on one GPU and not on another: the same optimizer step in
    other passes, so the checkpoint continues, and the change is said. A checkpoint from before the split was
    recorded says nothing about it."""
    from grpo_skill import generator, project as projects

    generator.render("proj", tmp_path, preset_name="tiny")
    config = projects.load(tmp_path / "proj" / "config.toml")
    checkpoint = tmp_path / "out" / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    (checkpoint / resume.TRAINER_STATE).write_text("{}")
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(resume.run_settings(config, micro_batches={})))
    split = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}
    start = resume.prepare(tmp_path / "out", resume=True, max_steps=60,
                           settings=resume.run_settings(config, micro_batches=split))
    assert start.checkpoint.step == 4
    assert capsys.readouterr().err.splitlines()[-1] == (
        "changed since that checkpoint, and applied from here on: grpo micro-batches (as this run took them) {} -> "
        '{"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}')
    (checkpoint / resume.SETTINGS_FILE).write_text(json.dumps(resume.run_settings(config)))  # recorded nothing
    resume.prepare(tmp_path / "out", resume=True, max_steps=60, settings=resume.run_settings(config, micro_batches=split))
    assert "micro-batches" not in capsys.readouterr().err


def test_a_resume_continues_from_the_newest_complete_checkpoints_step(tmp_path):
    """What train.py --resume tells the compile choices it has done (the steps left weigh the compile)."""
    assert resume.steps_done(tmp_path / "outputs") == 0  # no output folder yet
    for step, complete in ((10, True), (20, True), (30, False)):  # 30 was cut off while saving
        folder = tmp_path / "outputs" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        if complete:
            (folder / resume.TRAINER_STATE).write_text("{}")
    assert resume.steps_done(tmp_path / "outputs") == 20
