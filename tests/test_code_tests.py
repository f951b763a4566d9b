"""code_tests: a completion's Python against the dataset's tests, in a separate process with time and memory limits,
in a temporary folder, without the network where unshare allows it (plugins/rewards/execution.py)."""

import json
import os
import socket
import time
import warnings

import pytest

from grpo_skill import RewardError, plugins
from grpo_skill.builtins.rewards import execution

TESTS = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(0, 0) == 0"]


def code_tests(codes, tests=TESTS, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", execution.NetworkWarning)
        reward = plugins.get_reward("code_tests").build(params={"timeout": 3.0, **params})
    completions = ["I will write it.</think>```python\n" + code + "\n```" for code in codes]
    return reward(prompts=[""] * len(codes), completions=completions, tests=[tests] * len(codes))


def test_the_share_of_tests_that_pass():
    assert code_tests(["def add(a, b):\n    return a + b",
                       "def add(a, b):\n    return a - b",  # passes add(0, 0) only
                       "def add(a, b):\n    return a * b",  # passes add(0, 0) only
                       "def add(a, b):\n    return a +",  # a syntax error
                       "import sys\nsys.exit(0)"]) == [1.0, pytest.approx(1 / 3), pytest.approx(1 / 3), 0.0, 0.0]


def test_a_string_of_tests_is_one_test_and_an_empty_row_is_left_out():
    reward = plugins.get_reward("code_tests").build()
    completions = ["</think>def add(a, b): return a + b"] * 3  # no fence: the whole answer is the code
    scores = reward(completions=completions, tests=["assert add(1, 1) == 2\nassert add(1, 2) == 4", "", None])
    assert scores == [0.0, None, None]


def test_the_last_fence_is_the_code_and_the_thinking_does_not_count():
    text = ("```python\ndef add(a, b): return a + b\n```</think>First try:\n```python\ndef add(a, b): return 0\n"
            "```\nBetter:\n```\ndef add(a, b): return a + b\n```")
    reward = plugins.get_reward("code_tests").build()
    assert reward(completions=[text, "```python\ndef add(a, b): return a + b\n```</think>"],
                  tests=[TESTS, TESTS]) == [1.0, 0.0]


def test_a_run_over_the_time_limit_scores_zero():
    slow = "import time\ntime.sleep(2)\ndef add(a, b):\n    return a + b"
    assert code_tests([slow], timeout=0.5) == [0.0]
    assert code_tests([slow], timeout=5.0) == [1.0]  # the same code in time passes
    assert code_tests(["while True:\n    pass"], timeout=0.5) == [0.0]


def test_a_run_over_the_memory_limit_scores_zero():
    hungry = "block = bytearray(300 * 2 ** 20)\ndef add(a, b):\n    return a + b"
    assert code_tests([hungry], memory_mb=200, timeout=20.0) == [0.0]
    assert code_tests([hungry], memory_mb=1024, timeout=20.0) == [1.0]  # the same code with room passes


def test_the_code_runs_in_a_temporary_folder_with_no_keys_or_proxies(monkeypatch, tmp_path):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.chdir(tmp_path)
    probe = ("import os\nassert 'HTTPS_PROXY' not in os.environ and 'OPENAI_API_KEY' not in os.environ\n"
             "assert os.getcwd() != {cwd!r} and os.path.basename(os.getcwd()).startswith('grpo-code-')\n"
             "open('left.txt', 'w').write('x')\n"
             "def add(a, b):\n    return a + b").format(cwd=str(tmp_path))
    assert code_tests([probe]) == [1.0]
    assert not (tmp_path / "left.txt").exists()


def test_the_network_is_cut_where_unshare_works_else_a_warning_says_it_is_not():
    with socket.socket() as server:  # a server on this machine's loopback
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        reach = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n" \
                "def add(a, b):\n    return a + b"
        cut = bool(execution.network_off_prefix())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reward = plugins.get_reward("code_tests").build()
        scores = reward(completions=["</think>" + reach], tests=[TESTS])
    assert scores == ([0.0] if cut else [1.0])
    assert any(isinstance(w.message, execution.NetworkWarning) for w in caught) is not cut


def test_new_says_where_the_network_cannot_be_cut_among_its_warnings(monkeypatch, tmp_path):
    # `new` builds code_tests to check its params; the factory's warning is one of new's, not a Python warning
    from click.testing import CliRunner

    from grpo_skill.cli import main

    monkeypatch.setattr(execution, "_unshare", [])  # as probed where unshare cannot make a network namespace
    data = tmp_path / "code.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Write add {n}.", "tests": TESTS}) + "\n" for n in range(16)))
    result = CliRunner().invoke(main, ["new", str(tmp_path / "run"), "-p", "tiny", "-r", "code_tests",
                                       "--dataset", str(data), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == [
        "code_tests: unshare cannot make a network namespace here, so the tested code can reach the network (it gets "
        "no proxy settings or keys); run training in a container for code you do not trust"]
    assert "NetworkWarning" not in result.stderr


def test_check_says_where_the_network_cannot_be_cut_as_new_does(monkeypatch, tmp_path):
    # `check` builds every reward: the factory's warning is one of check's `warning:` lines (and in --json's warnings)
    from click.testing import CliRunner

    from grpo_skill.cli import main

    data = tmp_path / "code.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Write add {n}.", "tests": TESTS}) + "\n" for n in range(16)))
    result = CliRunner().invoke(main, ["new", str(tmp_path / "run"), "-p", "tiny", "-r", "code_tests", "--dataset",
                                       str(data)])
    assert result.exit_code == 0, result.output
    monkeypatch.setattr(execution, "_unshare", [])  # as probed where unshare cannot make a network namespace
    said = ("code_tests: unshare cannot make a network namespace here, so the tested code can reach the network (it "
            "gets no proxy settings or keys); run training in a container for code you do not trust")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == [said]
    result = CliRunner().invoke(main, ["check", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"warning: {said}"]


def test_bad_params_and_a_missing_column_are_refused():
    with pytest.raises(RewardError, match="memory_mb a whole number from 64"):
        plugins.get_reward("code_tests").build(params={"memory_mb": 8})
    with pytest.raises(RewardError, match="no 'tests' column"):
        plugins.get_reward("code_tests").build()(completions=["x"], answer=["1"])


def test_children_of_a_timed_out_run_are_killed_too(tmp_path):
    started = tmp_path / "started"
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)  # orphan-probe'])\n"
            f"open({str(started)!r}, 'w').close()\n"
            "time.sleep(30)")
    assert code_tests([code], timeout=2.0) == [0.0]
    assert started.exists()  # the child was started before the kill

    def sleepers():
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if b"orphan-probe" in open(f"/proc/{pid}/cmdline", "rb").read():
                    found.append(pid)
            except OSError:  # gone meanwhile
                pass
        return found

    # SIGKILL is delivered asynchronously: on a busy machine the child can take a moment to go (it would sleep 30 s
    # if it had not been killed).
    deadline = time.monotonic() + 5
    while sleepers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers() == []
