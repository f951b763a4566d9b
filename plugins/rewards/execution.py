"""code_tests: a completion's Python run against the dataset's tests, in a separate process.

The code is the last fenced block of the final answer (```python ... ``` or ``` ... ```), else the whole answer. The
tests column holds a string of Python (one test: asserts) or a list of such strings (each a test of its own, for
partial credit). The score is the share of tests that pass; 0.0 when the code does not run, runs out of time or of
memory.

Each completion runs (on Linux or macOS: the limits are POSIX rlimits) in its own Python process (``python -I``:
no user site, no PYTHON* variables), in a new temporary folder that is its working directory and HOME, deleted
afterwards, with stdin closed and:

- time: ``timeout`` seconds of wall clock for the whole run (its process group is killed), and as much CPU time;
- memory: ``memory_mb`` of address space (RLIMIT_AS), files up to 16 MB, no core dumps;
- network: in a network namespace of its own (``unshare --net``, nothing reachable) where Linux allows it; else
  with only the environment variables listed below (no proxy settings, no keys) and a warning, once, that the
  network is reachable.

This is NOT a security boundary: the code runs as your user and can read your files, fork, or use the network
where unshare is unavailable. Score the code of a model you do not trust inside a container or VM.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grpo_skill import Reward, completion_text, hookimpl
from grpo_skill.errors import MissingColumn, UserError
from grpo_skill.i18n import N_, _

from .verifiable import final_answer, opens_think, think_end_param

FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")  # all the code sees of the trainer's environment
FILE_BYTES = 16 * 2 ** 20
OPENS_THINK_HELP_CODE = N_("\"auto\": whether the chat template opens <think>; true: no </think> means no code (0.0)")

# Runs in the child: its own limits first (set here, not in a preexec_fn, which can deadlock a threaded trainer), then
# the solution, then each test in the solution's namespace; the passes go to a file.
HARNESS = r"""
import json, resource, sys
cpu, memory, file_bytes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
code, tests = open("solution.py").read(), json.load(open("tests.json"))
passed = []
namespace = {"__name__": "__main__"}
try:
    exec(compile(code, "solution.py", "exec"), namespace)
except BaseException:
    tests = []
for index, test in enumerate(tests):
    try:
        exec(compile(test, "test_%d.py" % index, "exec"), dict(namespace))
        passed.append(index)
    except BaseException:
        pass
with open("result.json", "w") as out:
    json.dump(passed, out)
"""


class NetworkWarning(UserWarning):
    """code_tests cannot cut the network off (no unshare): the code can reach it."""


_unshare: list[str] | None = None
_unshare_lock = threading.Lock()


def network_off_prefix() -> list[str]:
    """The command prefix that runs a program without network ([] when Linux does not allow it here), probed once."""
    global _unshare
    with _unshare_lock:
        if _unshare is None:
            _unshare = []
            tool = shutil.which("unshare")
            for prefix in ([tool, "--net"], [tool, "--net", "--map-root-user"]) if tool else ():
                try:
                    probe = subprocess.run([*prefix, sys.executable, "-c", "pass"], capture_output=True, timeout=20)
                except (OSError, subprocess.TimeoutExpired):
                    continue
                if probe.returncode == 0:
                    _unshare = prefix
                    break
        return _unshare


def code_of(answer: str) -> str:
    fences = FENCE.findall(answer)
    return fences[-1] if fences else answer


def run_tests(code: str, tests: list[str], seconds: float, memory_mb: int, prefix: list[str]) -> float:
    """The share of ``tests`` that pass against ``code``, run as the module's docstring says."""
    folder = tempfile.mkdtemp(prefix="grpo-code-")
    try:
        Path(folder, "solution.py").write_text(code, encoding="utf-8")
        Path(folder, "tests.json").write_text(json.dumps(tests), encoding="utf-8")
        env = {key: os.environ[key] for key in KEPT_ENV if key in os.environ}
        env["HOME"] = env["TMPDIR"] = folder
        limits = [str(int(seconds) + 1), str(memory_mb * 2 ** 20), str(FILE_BYTES)]
        process = subprocess.Popen([*prefix, sys.executable, "-I", "-c", HARNESS, *limits], cwd=folder, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its session: the code's own children too
            process.wait()
            return 0.0
        try:
            passed = json.loads(Path(folder, "result.json").read_text())
        except (OSError, ValueError):  # killed (memory), or it exited before the harness wrote
            return 0.0
        return len(set(passed) & set(range(len(tests)))) / len(tests)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _tests_of(value) -> list[str] | None:
    if isinstance(value, str):
        return [value] if value.strip() else None
    if isinstance(value, (list, tuple)) and value and all(isinstance(test, str) for test in value):
        return list(value)
    return None


def code_tests_factory(context):
    params = context.params
    seconds, memory_mb, workers = params["timeout"], params["memory_mb"], params["workers"]
    if not (isinstance(seconds, (int, float)) and seconds > 0 and isinstance(memory_mb, int) and memory_mb >= 64
            and isinstance(workers, int) and workers >= 1):
        raise UserError(_("params: timeout must be above 0 seconds, memory_mb a whole number from 64 and workers "
                          "from 1 (got {timeout}, {memory}, {workers})").format(
            timeout=seconds, memory=memory_mb, workers=workers))
    column, think_end, opened = params["tests_column"], think_end_param(context), opens_think(context)
    prefix = network_off_prefix()
    if not prefix:
        warnings.warn(NetworkWarning(_("code_tests: unshare cannot make a network namespace here, so the tested code "
                                       "can reach the network (it gets no proxy settings or keys); run training in "
                                       "a container for code you do not trust")), stacklevel=2)

    def score_one(completion, tests_value) -> float | None:
        tests = _tests_of(tests_value)
        if tests is None:
            return None  # no tests to run: left out
        answer = final_answer(completion_text(completion), think_end, opened)
        if answer is None or not answer.strip():
            return 0.0
        return run_tests(code_of(answer), tests, float(seconds), memory_mb, prefix)

    def code_tests(completions, prompts=None, **kwargs):
        if column not in kwargs:
            raise MissingColumn(_("the dataset has no {column!r} column with tests; set params.tests_column").format(
                column=column), column)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(score_one, completions, kwargs[column]))

    return code_tests


@hookimpl
def register_rewards(register):
    register(Reward(
        "code_tests", code_tests_factory,
        N_("Runs the Python of the final answer (its last ``` fence, else all of it) with the tests column's "
           "asserts (a string, or a list for partial credit) in a separate process: the share of tests that pass; "
           "0.0 when it fails to run, takes over timeout seconds or more than memory_mb; None for a row without "
           "tests. A temporary folder, no network where unshare works: NOT a security boundary (use a container "
           "for untrusted models)."),
        params={"tests_column": "tests", "timeout": 5.0, "memory_mb": 512, "workers": 4,
                "think_end_token": "</think>", "template_opens_think": "auto"},
        param_help={"tests_column": N_("the dataset column with the tests: Python asserts, a string or a list"),
                    "timeout": N_("seconds one completion's run may take (wall clock)"),
                    "memory_mb": N_("address space one run may use, in MB"),
                    "workers": N_("runs at once"),
                    "think_end_token": N_("the code is read after the last one"),
                    "template_opens_think": OPENS_THINK_HELP_CODE},
        example=("--completion", "</think>def add(a, b): return a + b",
                 "--completion", "</think>def add(a, b): return a - b", "--column", "tests=assert add(2, 3) == 5"),
    ))
