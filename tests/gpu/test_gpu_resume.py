"""Ctrl-C and --resume on a GPU, on both backends: Unsloth runs its own copy of Trainer's training loop, so the
checkpoint-on-Ctrl-C callback and resuming from a checkpoint are checked there too.

tiny: a full flow (Ctrl-C after the first logged step, exit 130, the printed command finishes the run, each step
logged once). standard on the Qwen3-4B shape (4-bit with Unsloth): the same with a few steps, so that a 4-bit
LoRA adapter, its optimizer state and the step come back from a checkpoint of the real shape.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gpu_helpers import set_toml
from grpo_skill.runtime import metrics, resume

DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"


def wait_for_first_step(process, output_dir, timeout=600):
    path = output_dir / metrics.METRICS_FILE
    deadline = time.monotonic() + timeout
    while not (path.is_file() and path.read_text().count("\n") >= 1):
        if process.poll() is not None:
            pytest.fail(f"train.py ended (exit {process.returncode}) before its first step was logged")
        assert time.monotonic() < deadline, "no step logged in time"
        time.sleep(0.1)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["trl", "unsloth"])
@pytest.mark.parametrize("preset_name", ["tiny", "standard"])
def test_ctrl_c_then_resume_on_gpu(preset_name, backend, tmp_path, commands, request, record_property):
    if backend == "unsloth" and importlib.util.find_spec("unsloth") is None:
        pytest.skip("unsloth is not installed")
    if preset_name == "tiny":
        built = commands.run([*commands.grpo_skill(), "build-model", "--shape", "tiny"], name="build-tiny")
        model, steps, save_steps = built.stdout.strip().splitlines()[-1], 16, 4
    else:
        model, steps, save_steps = str(request.getfixturevalue("qwen3_4b")["chat"]), 4, 2
    name = f"resume-{preset_name}-{backend}"
    commands.run([*commands.grpo_skill(), "new", name, "--preset", preset_name, "--backend", backend,
                  "--model", model, "-o", tmp_path], name="new")
    project, output_dir = tmp_path / name, tmp_path / name / "outputs"
    set_toml(project / "config.toml", "grpo", "save_steps", str(save_steps))
    if preset_name != "tiny":
        set_toml(project / "config.toml", "grpo", "max_completion_length", "24")

    log = commands.log_dir / "interrupted.log"
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "train.py", "--max-steps", str(steps)], cwd=project,
                                   stdout=subprocess.PIPE, stderr=stderr, text=True)
        wait_for_first_step(process, output_dir)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=600)
    err = log.read_text()
    assert process.returncode == 130, err[-3000:]
    assert "Traceback" not in err
    last = resume.last_checkpoint(output_dir)
    assert last is not None and last.step < steps
    record_property("stopped_at_step", last.step)
    command = err.strip().splitlines()[-1].split("continue with: ")[1].split()
    assert command == ["python", "train.py", "--max-steps", str(steps), "--resume"]

    resumed = commands.run([sys.executable, *command[1:]], name="resumed", cwd=project)
    record_property("resume_seconds", round(resumed.seconds, 1))
    assert f"resuming from {last.path} (step {last.step})" in resumed.log.read_text()
    # every step once, before and after the interruption (rewards only on the steps that generated)
    logged = metrics.read_metrics(output_dir)
    assert [row["step"] for row in logged if "loss" in row] == list(range(1, steps + 1))
    assert [row["step"] for row in logged if "reward" in row][0] == 1
    summary = json.loads((output_dir / resume.SUMMARY_FILE).read_text())
    assert (summary["global_step"], summary["backend"]) == (steps, backend)
    assert (output_dir / "adapter" / "adapter_model.safetensors").is_file()
