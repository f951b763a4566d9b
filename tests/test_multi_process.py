"""The generated project under `accelerate launch` with 2 processes on the CPU (gloo, accelerate/cpu-ddp.yaml), as
a user without a GPU would check a multi-GPU setup: one summary, one adapter, one metrics file with every step once,
learning at least as fast as one process, Ctrl-C and --resume, mistakes reported once. The tiny preset, 30 steps.

Learning under 2 processes is compared with 1 process honestly: tiny runs are not bit-reproducible, and a 30-step
run at the tiny preset's high learning rate climbs to a plateau and then wanders, now and then collapsing for a few
steps, so its last 10 steps say little. Each run is read by its best 10-step mean reward. Measured on this CPU, seeds
42-60, 30 steps: best-10 mean 1 process 0.221 (sd 0.113, min -0.174), 2 processes 0.287 (sd 0.051, min 0.134);
gained over the first 10 steps: min 0.644 (1 process) and 0.659 (2 processes). Two processes see twice the
completions per step and learn at least as fast: the same seed's 2-process best fell below the 1-process best by at
most 0.198 (mean: 0.067 above). The last-10 means, which this test compared before, differed by up to 0.58 (seed 52).
"""

import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import pytest

from grpo_skill.runtime import distributed, metrics, resume

from support import run

STEPS = 30
SAVE_STEPS = 4
GAIN_WANTED = 0.5  # best 10-step mean over the first 10 steps' mean; measured minimum 0.64
BEHIND_TOLERANCE = 0.3  # how far the 2-process best may fall below the 1-process best; measured at most 0.198
CONFIG = "accelerate/cpu-ddp.yaml"


def launch_args(*args):
    # `accelerate launch`, through this interpreter (the console script may belong to another Python)
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", CONFIG, "train.py", *args]


def launch(project, *args, check=True):
    return run(launch_args(*args), cwd=project, check=check)


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("ddp")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "tiny-ddp", "--preset", "tiny", "-o", str(root)])
    project = root / "tiny-ddp"
    config = project / "config.toml"
    config.write_text(config.read_text().replace("save_steps = 20", f"save_steps = {SAVE_STEPS}"))
    return project


@pytest.fixture(scope="module")
def one_process(project):
    result = run([sys.executable, "train.py", "--max-steps", str(STEPS), "--output-dir", "one"], cwd=project)
    return project / "one", result


@pytest.fixture(scope="module")
def two_processes(project):
    result = launch(project, "--max-steps", str(STEPS), "--output-dir", "two")
    return project / "two", result


def training_rows(output_dir):
    return [row for row in metrics.read_metrics(output_dir) if "reward" in row]


def tree_digest(folder):
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_two_processes_write_one_summary_one_adapter_and_every_step_once(two_processes):
    output_dir, result = two_processes
    summary = json.loads(result.stdout)  # one JSON document: printed by one process
    assert (summary["processes"], summary["global_step"], summary["steps"]) == (2, STEPS, STEPS)
    assert json.loads((output_dir / resume.SUMMARY_FILE).read_text()) == summary
    rows = metrics.read_metrics(output_dir)
    assert [row["step"] for row in rows if "reward" in row] == list(range(1, STEPS + 1))
    assert len([row for row in rows if metrics.END_OF_TRAINING_KEY in row]) == 1
    assert result.stderr.count("backend: trl") == 1
    assert all(result.stderr.count(f"step {step:>4}  reward") == 1 for step in range(1, STEPS + 1))
    assert (output_dir / "adapter" / "adapter_model.safetensors").stat().st_size > 0
    assert sorted(path.name for path in output_dir.glob("checkpoint-*")) == ["checkpoint-28", "checkpoint-30"]
    # one checkpoint holds both processes' random state (each samples its own completions)
    assert {path.name for path in (output_dir / "checkpoint-30").glob("rng_state_*.pth")} == {
        "rng_state_0.pth", "rng_state_1.pth"}


def test_each_step_trains_on_the_completions_of_both_processes(one_process, two_processes):
    # The per-device batch stays, the global batch doubles: TRL counts every process's tokens in num_tokens.
    one, two = training_rows(one_process[0]), training_rows(two_processes[0])
    ratio = two[-1]["num_tokens"] / one[-1]["num_tokens"]
    assert 1.6 < ratio < 2.4, ratio


def best_10_step_mean(rewards):
    return max(statistics.fmean(rewards[start:start + 10]) for start in range(len(rewards) - 9))


def test_two_processes_learn_at_least_as_fast_as_one(one_process, two_processes):
    one, two = ([row["reward"] for row in training_rows(output_dir)] for output_dir, _ in (one_process, two_processes))
    gains = [best_10_step_mean(rewards) - statistics.fmean(rewards[:10]) for rewards in (one, two)]
    assert min(gains) >= GAIN_WANTED, gains
    assert best_10_step_mean(two) >= best_10_step_mean(one) - BEHIND_TOLERANCE, (one, two)


def test_a_mistake_is_reported_once_by_the_main_process(project, two_processes):
    output_dir, _ = two_processes
    before = tree_digest(output_dir)
    result = launch(project, "--max-steps", str(STEPS), "--output-dir", "two", check=False)
    assert result.returncode != 0
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {output_dir} holds a finished run ({STEPS} steps): start over with --overwrite, or choose another "
        "--output-dir"]
    assert tree_digest(output_dir) == before


def test_unsloth_is_refused_before_anything_loads(project):
    result = launch(project, "--max-steps", "2", "--output-dir", "unsloth", "--backend", "unsloth", check=False)
    assert result.returncode != 0
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        "error: --backend unsloth trains on one GPU only; to train on 2 processes, use --backend trl, or run "
        "python train.py on one GPU"]
    assert "Loading weights" not in result.stderr and not (project / "unsloth").exists()


# A mistake every process finds before training: the machine's first process reports it. The others must not exit
# first: the launcher stops the remaining processes when one exits, and would stop the first one before it prints.
MISTAKE = """
import sys
from grpo_skill import errors
errors.MAIN_PROCESS_REPORT_WAIT_S = float(sys.argv[1])
errors.install()
print("raising", flush=True)
raise errors.UserError("data/train.jsonl: no such file")
"""


def second_process(wait_s):
    env = {**os.environ, "WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1"}
    return subprocess.Popen([sys.executable, "-c", MISTAKE, str(wait_s)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_another_process_stays_silent_until_the_launcher_stops_it():
    process = second_process(wait_s=120)
    assert process.stdout.readline() == "raising\n"
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=3)  # still there: it did not leave the launcher a reason to stop the first process
    process.terminate()  # what the launcher does once the first process has reported and exited
    out, err = process.communicate(timeout=30)
    assert (process.returncode, err) == (-signal.SIGTERM, "")


def test_another_process_reports_a_mistake_the_first_one_did_not_hit():
    process = second_process(wait_s=1)
    out, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (1, "error: data/train.jsonl: no such file\n")


FINISH = """
import atexit, sys
from grpo_skill.runtime import distributed
atexit.register(lambda: print("interpreter teardown"))
print("training done")
distributed.finish(int(sys.argv[1]))
print("the main process goes on")
"""


@pytest.mark.parametrize("rank,code,expected", [
    ("1", 0, "training done\n"), ("1", 130, "training done\n"),
    ("0", 0, "training done\nthe main process goes on\ninterpreter teardown\n")])
def test_at_the_end_the_other_processes_leave_without_interpreter_teardown(rank, code, expected):
    # a worker's interpreter teardown aborted now and then under gloo, and the launcher then killed the main process
    result = run([sys.executable, "-c", FINISH, str(code)], env={"WORLD_SIZE": "2", "RANK": rank, "LOCAL_RANK": rank},
                 check=False)
    assert (result.returncode, result.stdout) == (code if rank == "1" else 0, expected)


# Ctrl-C: the terminal sends SIGINT to the launcher and to every process; the launcher passes it on once more ------

@pytest.fixture(scope="module")
def ctrl_c(project):
    output_dir = project / "ctrl-c"
    process = subprocess.Popen(launch_args("--max-steps", "12", "--output-dir", "ctrl-c"), cwd=project, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    path = output_dir / metrics.METRICS_FILE
    deadline = time.monotonic() + 300
    while not (path.is_file() and path.read_text().count("\n") >= 1):
        if process.poll() is not None:
            pytest.fail(f"the launch ended (exit {process.returncode}) before its first step\n{process.communicate()[1]}")
        assert time.monotonic() < deadline, "no step logged in time"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    out, err = process.communicate(timeout=300)
    return output_dir, out, err


def test_ctrl_c_stops_both_processes_at_one_step_with_one_line(ctrl_c):
    output_dir, out, err = ctrl_c
    last = resume.last_checkpoint(output_dir)
    assert last is not None and 1 <= last.step < 12
    assert [row["step"] for row in training_rows(output_dir)] == list(range(1, last.step + 1))
    assert {path.name for path in last.path.glob("rng_state_*.pth")} == {"rng_state_0.pth", "rng_state_1.pth"}
    assert err.count("Ctrl-C: saving a checkpoint after this step") == 1
    assert [line for line in err.splitlines() if "checkpoint saved" in line] == [
        f"stopped at step {last.step} of 12; checkpoint saved; continue with: accelerate launch --config_file {CONFIG} "
        "train.py --max-steps 12 --output-dir ctrl-c --resume"]
    # no traceback from train.py (the launcher reports the signal it got in one of its own), and both processes
    # ended by themselves: the launcher did not have to kill them
    assert "train.py\", line" not in err and "KeyboardInterrupt" not in err
    assert "forcefully exiting" not in err
    assert not (output_dir / "adapter").exists() and not (output_dir / resume.SUMMARY_FILE).exists()
    assert out == ""


def test_the_command_printed_at_ctrl_c_finishes_the_run_under_two_processes(project, ctrl_c):
    output_dir, _, err = ctrl_c
    command = err.split("continue with: ")[1].splitlines()[0].split()
    assert command[:4] == ["accelerate", "launch", "--config_file", CONFIG]
    result = run([sys.executable, "-m", "accelerate.commands.launch", *command[2:]], cwd=project)
    assert [row["step"] for row in training_rows(output_dir)] == list(range(1, 13))
    summary = json.loads(result.stdout)
    assert (summary["global_step"], summary["processes"]) == (12, 2)
    assert (output_dir / "adapter" / "adapter_config.json").is_file()


def test_sigterm_to_the_launcher_stops_both_processes_with_one_checkpoint(project):
    """SLURM or Kubernetes stop the launcher with SIGTERM; it passes it on to each process, which finish the step,
    save together and say how to continue (the launcher then reports the signal in a traceback of its own)."""
    output_dir = project / "sigterm"
    process = subprocess.Popen(launch_args("--max-steps", "12", "--output-dir", "sigterm"), cwd=project, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    path = output_dir / metrics.METRICS_FILE
    deadline = time.monotonic() + 300
    while not (path.is_file() and path.read_text().count("\n") >= 1):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "no step logged in time"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)  # the launcher only
    _out, err = process.communicate(timeout=300)
    last = resume.last_checkpoint(output_dir)
    assert last is not None and 1 <= last.step < 12
    assert {path.name for path in last.path.glob("rng_state_*.pth")} == {"rng_state_0.pth", "rng_state_1.pth"}
    assert [row["step"] for row in training_rows(output_dir)] == list(range(1, last.step + 1))
    assert err.count("SIGTERM: saving a checkpoint after this step") == 1
    assert [line for line in err.splitlines() if "checkpoint saved" in line] == [
        f"stopped at step {last.step} of 12; checkpoint saved; continue with: accelerate launch --config_file {CONFIG} "
        "train.py --max-steps 12 --output-dir sigterm --resume"]
    assert "train.py\", line" not in err


@pytest.mark.parametrize("name,kind,cpu", [("ddp", "MULTI_GPU", False), ("cpu-ddp", "MULTI_GPU", True),
                                           ("fsdp", "FSDP", False), ("zero2", "DEEPSPEED", False)])
def test_the_shipped_accelerate_configs_are_what_accelerate_reads(project, name, kind, cpu):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(project / "accelerate" / f"{name}.yaml"))  # unknown keys raise here
    assert (config.distributed_type.value, config.use_cpu, config.num_processes, config.num_machines) == (
        kind, cpu, 2, 1)
    if kind == "FSDP":
        assert config.fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"  # the adapter saved whole
    if kind == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] == 2


@pytest.mark.parametrize("parent,expected", [
    (["/venv/bin/python", "/venv/bin/accelerate", "launch", "--config_file", "accelerate/ddp.yaml", "train.py",
      "--max-steps", "9", "--overwrite"], "accelerate launch --config_file accelerate/ddp.yaml train.py"),
    (["python3", "-m", "accelerate.commands.launch", "--num_processes", "2", "train.py"],
     "accelerate launch --num_processes 2 train.py"),
    (["/usr/bin/python", "/usr/bin/torchrun", "--nproc_per_node=4", "/runs/a/train.py"],
     "torchrun --nproc_per_node=4 /runs/a/train.py"),
    (["python", "-m", "torch.distributed.run", "--nnodes", "2", "train.py"], "torchrun --nnodes 2 train.py"),
    (["bash", "launch.sh"], None),
])
def test_the_command_to_resume_is_the_launch_as_the_user_typed_it(parent, expected):
    command = distributed.launch_command(["train.py", "--max-steps", "9", "--resume"], parent)
    assert (" ".join(command) if command else None) == (expected and f"{expected} --max-steps 9 --resume")


def test_zero3_given_in_a_deepspeed_json_counts_as_sharded_weights(tmp_path, monkeypatch):
    """An accelerate config that names a DeepSpeed JSON (deepspeed_config_file) carries the ZeRO stage in that file,
    not in zero_stage: train.py's pre-load decisions (16-bit weights, no fast-path copy) must see ZeRO-3 there too,
    and ZeRO-2 (or no stage: accelerate's default, 2) must not count."""
    for name in ("ACCELERATE_USE_FSDP", "ACCELERATE_DEEPSPEED_ZERO_STAGE", "ACCELERATE_DEEPSPEED_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    assert distributed.shards_weights() is False  # accelerate's default stage, 2
    stage_file = tmp_path / "ds.json"
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_CONFIG_FILE", str(stage_file))
    for stage, sharded in ((3, True), (2, False)):
        stage_file.write_text(json.dumps({"zero_optimization": {"stage": stage}, "train_batch_size": "auto"}))
        assert distributed.shards_weights() is sharded
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3")  # accelerate's own zero_stage
    monkeypatch.delenv("ACCELERATE_DEEPSPEED_CONFIG_FILE")
    assert distributed.shards_weights() is True
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "false")
    assert distributed.shards_weights() is False
