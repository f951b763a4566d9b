"""A run that outlives what stops it from outside: SIGTERM (SLURM, Kubernetes, spot preemption) and a judge that goes
down mid-run. Each saves a checkpoint after the last finished step and ends in one line with the command that
continues; continued, the run logs every step once and ends where an uninterrupted run ends. The tiny preset on the
CPU, 8 steps, no checkpoint of its own before the end (save_steps 20): the one resumed from is the one the stop
saved."""

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from grpo_skill.runtime import metrics, resume

from support import run
from test_judge import JudgeServer

STEPS = 8


@pytest.fixture(scope="module")
def judge():
    server = JudgeServer()
    server.outages = 1  # the gate reward takes it down once: a resumed run passes the same step with it up
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


# A project reward that takes the judge down when step GATE_STEP starts scoring: the outage falls on a step boundary
# of the run, whatever the timing, so the run and an uninterrupted one see the same grades.
GATE = """
import urllib.request

from grpo_skill import Reward, hookimpl


def gate_factory(context):
    def outage_gate(completions, trainer_state=None, **kwargs):
        if trainer_state is not None and trainer_state.global_step == context.params["at_step"]:
            urllib.request.urlopen(context.params["url"], data=b"{}").read()
        return [0.0] * len(completions)
    return outage_gate


@hookimpl
def register_rewards(register):
    register(Reward("outage_gate", gate_factory, "takes the test judge down at one step", params={"url": "", "at_step": 0}))
"""
GATE_STEP = 3


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_model, judge):
    root = tmp_path_factory.mktemp("preempt")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "tiny-preempt", "--preset", "tiny", "-o", str(root)])
    project = root / "tiny-preempt"
    port = judge.httpd.server_port
    (project / "rewards.py").write_text(GATE)
    config = (project / "config.toml").read_text()
    judged = config.replace("[grpo]", textwrap.dedent(f"""\
        [[rewards]]
        name = "outage_gate"
        weight = 1.0
        params = {{ url = "http://127.0.0.1:{port}/down", at_step = {GATE_STEP} }}

        [[rewards]]
        name = "llm_judge"
        weight = 1.0
        params = {{ backend = "http", judge = {{ url = "http://127.0.0.1:{port}/outage/v1", retries = 1, backoff = 0.01, timeout = 10 }} }}

        [grpo]"""), 1)
    (project / "judged.toml").write_text(judged)
    return project


def start(project, *args):
    return subprocess.Popen([sys.executable, "train.py", "--max-steps", str(STEPS), *args], cwd=project, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def rewards_by_step(output_dir):
    return [(row["step"], row["reward"]) for row in metrics.read_metrics(output_dir) if "reward" in row]


def continue_with(project, stderr):
    command = stderr.strip().splitlines()[-1].split("continue with: ")[1].split()
    assert command[:2] == ["python", "train.py"]
    return run([sys.executable, *command[1:]], cwd=project)


@pytest.fixture(scope="module")
def uninterrupted(project, judge):
    """The judged run never stopped: the judge stays up (the gate's call changes nothing)."""
    judge.down, judge.outages = False, 0
    run([sys.executable, "train.py", "--config", "judged.toml", "--max-steps", str(STEPS), "--output-dir",
         "judged-straight"], cwd=project)
    return rewards_by_step(project / "judged-straight")


def test_sigterm_saves_a_checkpoint_exits_143_and_the_run_continues_to_the_same_end(project, judge, uninterrupted):
    judge.down, judge.outages = False, 0
    output_dir = project / "sigterm"
    process = start(project, "--config", "judged.toml", "--output-dir", "sigterm")
    deadline = time.monotonic() + 180
    while not ((output_dir / metrics.METRICS_FILE).is_file()
               and (output_dir / metrics.METRICS_FILE).read_text().count("\n") >= 2):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 143, err
    last = resume.last_checkpoint(output_dir)
    assert last is not None and 2 <= last.step < STEPS
    assert "SIGTERM: saving a checkpoint after this step" in err and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (f"stopped at step {last.step} of {STEPS}; checkpoint saved; continue "
                                            f"with: python train.py --max-steps {STEPS} --config judged.toml "
                                            "--output-dir sigterm --resume")
    result = continue_with(project, err)
    assert json.loads(result.stdout)["global_step"] == STEPS
    assert rewards_by_step(output_dir) == uninterrupted  # every step once, each the same as without the stop


def test_a_judge_outage_saves_a_checkpoint_and_the_run_continues_once_it_is_back(project, judge, uninterrupted):
    judge.down, judge.outages = False, 1
    output_dir = project / "judged"
    failed = run([sys.executable, "train.py", "--config", "judged.toml", "--max-steps", str(STEPS), "--output-dir",
                  "judged"], cwd=project, check=False)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    last = resume.last_checkpoint(output_dir)
    assert last is not None and last.step >= GATE_STEP
    line = failed.stderr.strip().splitlines()[-1]
    assert line.startswith("error: reward 'llm_judge' (plugin builtin:judge): the judge at ")
    assert "answered HTTP 500 to every request (2 attempts each)" in line
    assert line.endswith(f"stopped at step {last.step} of {STEPS} with a checkpoint; once that is fixed, continue "
                         f"with: python train.py --config judged.toml --max-steps {STEPS} --output-dir judged --resume")

    judge.down = False  # the judge is back
    result = continue_with(project, failed.stderr.replace("error: ", ""))
    assert json.loads(result.stdout)["global_step"] == STEPS
    assert rewards_by_step(output_dir) == uninterrupted
