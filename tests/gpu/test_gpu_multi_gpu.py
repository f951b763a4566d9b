"""One GPU against two: the same generated project trained by `python train.py` and by
`accelerate launch --config_file accelerate/ddp.yaml --num_processes 2 train.py` (DDP, TRL backend).

- tiny (its full 60-step run): both runs learn the thinking reward, and their last-10-step mean rewards are close;
- standard on the Qwen3-4B shape (random weights), bf16 and 4-bit: completions per second on 2 GPUs against 1
  (the median step_time of the steps after the first; each step trains per-device batch x processes completions),
  and each process on a GPU of its own (nvidia-smi, per process where it shows them, else per GPU);
- FSDP (accelerate/fsdp.yaml) on the tiny preset: it trains and saves the adapter.

The speed-up is recorded for docs/gpu-report (scripts/gpu_report.py), not asserted: timings are measured, never
asserted. Skipped unless 2 CUDA GPUs are visible. GRPO_SKILL_GPU_DRY_RUN=1 runs the plumbing on a CPU instead:
two processes over gloo (accelerate/cpu-ddp.yaml), tiny builds for the 4B shape, no memory or learning checks.

On a machine with 2 GPUs:  python -m pytest -m gpu tests/gpu/test_gpu_multi_gpu.py -p no:cacheprovider -ra
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from gpu_helpers import set_toml
from grpo_skill.runtime import metrics

DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"
TINY_MIN_GAIN = 0.5  # as tests/gpu/test_gpu_projects.py
# |last-10 mean, 2 GPUs - 1 GPU|: tests/test_multi_process.py derives 0.15 from seeds on the CPU; twice that here,
# where the spread of bf16 GPU runs has not been measured.
TINY_LAST10_TOLERANCE = 0.3
BIG_STEPS = 6
BIG_COMPLETION = 64


def visible_gpus() -> list[str]:
    """The first two visible GPUs (as CUDA_VISIBLE_DEVICES names them); skips the test when there are fewer."""
    if DRY_RUN:
        return ["cpu", "cpu"]
    import torch

    count = torch.cuda.device_count()
    if count < 2:
        pytest.skip(f"needs 2 CUDA GPUs ({count} visible)")
    named = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [name.strip() for name in named.split(",")] if named else [str(index) for index in range(count)]
    return ids[:2]


def launch_command(processes: int, config: str, *args) -> list:
    if processes == 1:
        return [sys.executable, "train.py", *args]
    if DRY_RUN:
        config = "accelerate/cpu-ddp.yaml"
    return [sys.executable, "-m", "accelerate.commands.launch", "--config_file", config, "--num_processes",
            str(processes), "train.py", *args]


class GpuWatch:
    """Polls nvidia-smi while a launch runs: the peak memory of each GPU, and of each of the launch's processes."""

    def __init__(self, launcher_pid: int):
        self.launcher_pid = launcher_pid
        self.gpu_peak_mib: dict[str, float] = {}  # GPU index -> peak memory.used
        self.process_gpus: dict[int, dict[str, float]] = {}  # worker pid -> {GPU index: peak MiB}
        self.workers: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    def smi(self, *query) -> list[list[str]]:
        done = subprocess.run(["nvidia-smi", *query, "--format=csv,noheader,nounits"], capture_output=True, text=True)
        return [[cell.strip() for cell in line.split(",")] for line in done.stdout.splitlines() if line.strip()]

    def poll(self):
        import psutil

        index_of = {uuid: index for index, uuid in self.smi("--query-gpu=index,uuid")}
        while not self.stop.is_set():
            try:
                self.workers |= {child.pid for child in psutil.Process(self.launcher_pid).children(recursive=True)}
            except psutil.Error:
                pass
            for index, used in self.smi("--query-gpu=index,memory.used"):
                self.gpu_peak_mib[index] = max(self.gpu_peak_mib.get(index, 0.0), float(used))
            for pid, uuid, used in self.smi("--query-compute-apps=pid,gpu_uuid,used_memory"):
                if pid.isdigit() and int(pid) in self.workers and used.replace(".", "").isdigit():
                    gpus = self.process_gpus.setdefault(int(pid), {})
                    gpus[index_of.get(uuid, uuid)] = max(gpus.get(index_of.get(uuid, uuid), 0.0), float(used))
            time.sleep(0.5)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


def train(commands, project, processes, gpus, name, *args, config="accelerate/ddp.yaml", watch=False):
    """Run train.py on the first ``processes`` GPUs; returns (result, GpuWatch or None)."""
    env = {} if DRY_RUN else {"CUDA_VISIBLE_DEVICES": ",".join(gpus[:processes])}
    command = launch_command(processes, config, *args, "--output-dir", name)
    if not watch or DRY_RUN:
        return commands.run(command, name=name, cwd=project, env=env, timeout=900), None
    log = commands.log_dir / f"{name}.log"
    started = time.perf_counter()
    with log.open("w") as stderr:
        process = subprocess.Popen([str(arg) for arg in command], cwd=project, stdout=subprocess.PIPE, stderr=stderr,
                                   text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
        with GpuWatch(process.pid) as gpu_watch:
            out, _ = process.communicate(timeout=900)
    assert process.returncode == 0, log.read_text()[-4000:]
    result = subprocess.CompletedProcess(command, process.returncode, out, log.read_text())
    result.seconds, result.log = time.perf_counter() - started, log
    return result, gpu_watch


def check_run(project, name, steps, processes):
    output_dir = project / name
    summary = json.loads((output_dir / "summary.json").read_text())
    assert (summary["processes"], summary["global_step"], summary["backend"]) == (processes, steps, "trl")
    rows = [row for row in metrics.read_metrics(output_dir) if "reward" in row]
    assert [row["step"] for row in rows] == list(range(1, steps + 1))
    assert (output_dir / "adapter" / "adapter_model.safetensors").is_file()
    return rows


def new_project(commands, tmp_path, name, preset, model):
    commands.run([*commands.grpo_skill(), "new", name, "--preset", preset, "--backend", "trl", "--model", model,
                  "-o", tmp_path], name=f"new-{name}")
    return tmp_path / name


def tiny_model(commands) -> str:
    built = commands.run([*commands.grpo_skill(), "build-model", "--shape", "tiny"], name="build-tiny")
    return built.stdout.strip().splitlines()[-1]


@pytest.mark.gpu
def test_tiny_learns_alike_on_one_and_two_gpus(tmp_path, commands, record_property):
    gpus = visible_gpus()
    project = new_project(commands, tmp_path, "tiny-ddp", "tiny", tiny_model(commands))
    steps = tomllib.loads((project / "config.toml").read_text())["grpo"]["max_steps"]
    trends = {}
    for processes in (1, 2):
        result, _ = train(commands, project, processes, gpus, f"gpus{processes}")
        rows = check_run(project, f"gpus{processes}", steps, processes)
        trends[processes] = trend = metrics.reward_trend(rows)
        record_property(f"tiny_{processes}gpu_train_seconds", round(result.seconds, 1))
        record_property(f"tiny_{processes}gpu_first10_reward", round(trend["first_mean_reward"], 3))
        record_property(f"tiny_{processes}gpu_last10_reward", round(trend["last_mean_reward"], 3))
    difference = trends[2]["last_mean_reward"] - trends[1]["last_mean_reward"]
    record_property("tiny_last10_difference", round(difference, 3))
    assert trends[1]["gain"] >= TINY_MIN_GAIN and trends[2]["gain"] >= TINY_MIN_GAIN, trends
    assert abs(difference) <= TINY_LAST10_TOLERANCE, trends


@pytest.mark.gpu
@pytest.mark.parametrize("weights", ["bf16", "4bit"])
def test_completions_per_second_on_two_gpus_against_one(weights, tmp_path, commands, request, record_property):
    gpus = visible_gpus()
    model = str(request.getfixturevalue("qwen3_4b")["chat"])
    project = new_project(commands, tmp_path, f"standard-{weights}", "standard", model)
    config_path = project / "config.toml"
    set_toml(config_path, "grpo", "max_completion_length", str(BIG_COMPLETION))
    set_toml(config_path, "model", "load_in_4bit", "true" if weights == "4bit" else "false")
    grpo = tomllib.loads(config_path.read_text())["grpo"]
    # one generation per optimizer step (not the preset's several): every step does the same work, so step times
    # compare across 1 and 2 GPUs
    set_toml(config_path, "grpo", "steps_per_generation", str(grpo["gradient_accumulation_steps"]))
    per_device = grpo["per_device_train_batch_size"] * grpo["gradient_accumulation_steps"]
    rates = {}
    for processes in (1, 2):
        name = f"gpus{processes}"
        result, gpu_watch = train(commands, project, processes, gpus, name, "--max-steps", str(BIG_STEPS),
                                  watch=processes == 2)
        rows = check_run(project, name, BIG_STEPS, processes)
        step_time = statistics.median(row["step_time"] for row in rows[1:])  # the first step warms up
        rates[processes] = per_device * processes / step_time
        record_property(f"{weights}_{processes}gpu_median_step_seconds", round(step_time, 3))
        record_property(f"{weights}_{processes}gpu_completions_per_s", round(rates[processes], 3))
        record_property(f"{weights}_{processes}gpu_train_seconds", round(result.seconds, 1))
        if gpu_watch:
            check_one_gpu_per_process(gpu_watch, gpus, record_property, weights)
    record_property(f"{weights}_scaling_2gpu_over_1gpu", round(rates[2] / rates[1], 3))


def check_one_gpu_per_process(gpu_watch: GpuWatch, gpus: list[str], record_property, weights: str) -> None:
    for index, mib in sorted(gpu_watch.gpu_peak_mib.items()):
        record_property(f"{weights}_2gpu_gpu{index}_peak_used_mib", round(mib))
    if gpu_watch.process_gpus:  # nvidia-smi shows this container's process ids
        record_property(f"{weights}_2gpu_gpus_of_each_process", " ".join(
            "+".join(sorted(found)) for found in gpu_watch.process_gpus.values()))
        on_gpus = [sorted(found) for found in gpu_watch.process_gpus.values()]
        assert len(on_gpus) == 2 and all(len(found) == 1 for found in on_gpus), gpu_watch.process_gpus
        assert on_gpus[0] != on_gpus[1], gpu_watch.process_gpus
    else:  # another pid namespace: at least both GPUs were busy with a model
        assert all(gpu_watch.gpu_peak_mib.get(index, 0) > 1024 for index in gpus), gpu_watch.gpu_peak_mib


@pytest.mark.gpu
def test_fsdp_trains_tiny_on_two_gpus(tmp_path, commands, record_property):
    gpus = visible_gpus()
    project = new_project(commands, tmp_path, "tiny-fsdp", "tiny", tiny_model(commands))
    result, _ = train(commands, project, 2, gpus, "fsdp", "--max-steps", "8", config="accelerate/fsdp.yaml")
    check_run(project, "fsdp", 8, 2)
    record_property("fsdp_tiny_train_seconds", round(result.seconds, 1))
    assert (Path(project) / "fsdp" / "checkpoint-8" / "trainer_state.json").is_file()
