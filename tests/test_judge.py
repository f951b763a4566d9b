"""llm_judge with both built-in backends: a real HTTP server on 127.0.0.1 (good, slow, failing and malformed
answers), and the local tiny model graded from its token probabilities."""

import json
import os
import re
import socket
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from grpo_skill import Judge, JudgeRequest, RewardError, hookimpl, plugins
from grpo_skill.judges import get_judge


class JudgeServer:
    """An OpenAI-compatible /chat/completions endpoint whose behaviour the URL path picks:

    /good      grades 9 when the answer says 42, else 2
    /flaky     HTTP 500 for the first two requests, then like /good
    /slow      answers after `slow_seconds`
    /words     a reply with no number in it
    /shapeless a JSON body without "choices"
    /refuse    HTTP 401
    /outage    HTTP 500 while `down` is true, else like /good
    /down      sets `down`, while `outages` (how many times it may) lasts
    /reply     replies `reply`, whatever the answer
    """

    def __init__(self):
        self.requests, self.in_flight, self.max_in_flight = [], 0, 0
        self.lock = threading.Lock()
        self.slow_seconds = 1.0
        self.delay = 0.0
        self.reply = ""
        self.down, self.outages = False, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append((self.path, dict(self.headers), body))
                    count = sum(1 for path, _h, _b in server.requests if path == self.path)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(server.delay)
                with server.lock:  # before the reply: once it is sent the client may send its next request
                    server.in_flight -= 1
                self.answer(body, count)

            def answer(self, body, count):
                mode = self.path.split("/")[1]
                if mode == "down":
                    with server.lock:
                        if server.outages > 0:
                            server.down, server.outages = True, server.outages - 1
                    return self.send(200, {})
                if mode == "refuse":
                    return self.send(401, {"error": {"message": "invalid api key"}})
                if mode == "outage" and server.down:
                    return self.send(500, {"error": "down"})
                if mode == "flaky" and count <= 2:
                    return self.send(500, {"error": "overloaded"})
                if mode == "slow":
                    time.sleep(server.slow_seconds)
                if mode == "shapeless":
                    return self.send(200, {"id": "x"})
                question = body["messages"][-1]["content"]
                grade = server.reply if mode == "reply" else "I like it" if mode == "words" else "9" if "Answer to grade:\n42" in question else "2"
                self.send(200, {"choices": [{"message": {"role": "assistant", "content": grade}}]})

            def send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, mode):
        return f"http://127.0.0.1:{self.httpd.server_port}/{mode}/v1"


@pytest.fixture
def server():
    judge_server = JudgeServer()
    judge_server.thread.start()
    try:
        yield judge_server
    finally:
        judge_server.httpd.shutdown()
        judge_server.httpd.server_close()


def http_judge(url, **settings):
    settings = {"url": url, "timeout": 5.0, "retries": 2, "backoff": 0.01, **settings}
    return plugins.get_reward("llm_judge").build(params={"backend": "http", "judge": settings})


PROMPTS = ["What is 6 x 7?"] * 3
COMPLETIONS = ["Easy.</think>42", "</think>41", "still thinking about 42"]


def test_http_judge_grades_each_answer(server):
    reward = http_judge(server.url("good"))
    scores = reward(prompts=PROMPTS, completions=COMPLETIONS)
    # 9/10 and 2/10; the third never closed its thinking (no </think>, but "<think>"-less text is an answer)
    assert scores == [0.9, 0.2, 0.2]
    paths = [path for path, _headers, _body in server.requests]
    assert paths == ["/good/v1/chat/completions"] * 3
    first = server.requests[0][2]
    assert first["model"] == "judge" and first["temperature"] == 0
    assert "What is 6 x 7?" in first["messages"][-1]["content"]
    assert "Easy." not in json.dumps([body for _p, _h, body in server.requests])  # the thinking stays private


def test_unfinished_thinking_is_not_sent_to_the_judge(server):
    reward = plugins.get_reward("llm_judge").build(
        preset=plugins.get_preset("thinking"),
        params={"backend": "http", "judge": {"url": server.url("good"), "retries": 0}})
    assert reward(prompts=PROMPTS, completions=COMPLETIONS) == [0.9, 0.2, 0.0]
    assert len(server.requests) == 2


def test_the_key_comes_only_from_the_named_environment_variable(server, monkeypatch):
    monkeypatch.setenv("TEST_JUDGE_KEY", "s3cret")
    http_judge(server.url("good"), api_key_env="TEST_JUDGE_KEY")(prompts=PROMPTS[:1], completions=COMPLETIONS[:1])
    assert server.requests[0][1]["Authorization"] == "Bearer s3cret"
    monkeypatch.delenv("TEST_JUDGE_KEY")
    with pytest.raises(RewardError, match="judge.api_key_env names TEST_JUDGE_KEY, which is not set"):
        http_judge(server.url("good"), api_key_env="TEST_JUDGE_KEY")
    with pytest.raises(RewardError, match="judge backend 'http' has no setting 'api_key'"):
        http_judge(server.url("good"), api_key="s3cret")


def test_server_errors_are_retried_with_backoff(server):
    scores = http_judge(server.url("flaky"), retries=2, concurrency=1)(prompts=PROMPTS[:1], completions=["</think>42"])
    assert scores == [0.9]
    assert len(server.requests) == 3  # 500, 500, then the grade


def test_a_judge_that_never_answers_in_time_fails_clearly(server):
    server.slow_seconds = 1.0
    reward = http_judge(server.url("slow"), timeout=0.2, retries=1)
    started = time.monotonic()
    with pytest.raises(RewardError, match=r"the judge at http://127.0.0.1:\d+/slow/v1/chat/completions gave no "
                                          r"answer within 0.2 s \(2 attempts each\); raise judge.timeout"):
        reward(prompts=PROMPTS[:2], completions=COMPLETIONS[:2])
    assert time.monotonic() - started < 5


def test_a_judge_that_answers_errors_is_named_as_answering(server):
    """The server is up and its URL right: the message says what it answered, not "start the server"."""
    server.down = True
    with pytest.raises(RewardError) as raised:
        http_judge(server.url("outage"), retries=0)(prompts=PROMPTS[:2], completions=COMPLETIONS[:2])
    message = str(raised.value)
    assert re.search(r"the judge at http://127.0.0.1:\d+/outage/v1/chat/completions answered HTTP 500 to every "
                     r"request \(1 attempt each\); see the server's log$", message), message
    assert "start the server" not in message


def test_an_unreachable_judge_fails_in_one_line():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reward = http_judge(f"http://127.0.0.1:{port}/v1", retries=1)
    with pytest.raises(RewardError) as raised:
        reward(prompts=PROMPTS[:1], completions=COMPLETIONS[:1])
    message = str(raised.value)
    assert message.startswith("reward 'llm_judge' (plugin builtin:judge): cannot reach the judge at ")
    assert "ConnectError" in message and "start the server or fix judge.url" in message and "\n" not in message


def test_malformed_answers_leave_the_completion_out_with_one_warning(server):
    for mode, expected in (("words", "not a grade from 0 to 10"), ("shapeless", "without choices[0].message")):
        reward = http_judge(server.url(mode))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert reward(prompts=PROMPTS, completions=COMPLETIONS) == [None, None, None]
        assert len(caught) == 1 and expected in str(caught[0].message)


@pytest.mark.parametrize("reply, grade", [("8", 0.8), ("8/10", 0.8), ("7.5", 0.75), ("Grade: 1", 0.1),
                                          ("0.8", 0.8), ("1.0", 1.0), ("8/100", 0.08), ("4 out of 5", 0.8),
                                          ("Score: 80%", 0.8), ("10 / 10", 1.0)])
def test_a_judge_reply_reads_as_a_grade_from_0_to_1(server, reply, grade):
    # whole numbers are on the asked 0-10 scale; "0.8" is a judge that graded from 0 to 1, never 0.08
    server.reply = reply
    assert http_judge(server.url("reply"))(prompts=PROMPTS[:1], completions=COMPLETIONS[:1]) == [grade]


def test_a_refused_request_is_not_retried(server):
    with pytest.raises(RewardError, match=r"refused the request: HTTP 401 .*invalid api key.*check judge.api_key_env"):
        http_judge(server.url("refuse"))(prompts=PROMPTS[:1], completions=COMPLETIONS[:1])
    assert len(server.requests) == 1


def test_concurrency_is_limited(server):
    server.delay = 0.3  # long enough for requests to overlap on a busy machine
    reward = http_judge(server.url("good"), concurrency=2, timeout=10)
    scores = reward(prompts=["q"] * 6, completions=["</think>42"] * 6)
    assert scores == [0.9] * 6 and len(server.requests) == 6
    assert server.max_in_flight == 2


def test_a_reference_column_reaches_the_judge(server):
    reward = plugins.get_reward("llm_judge").build(params={
        "backend": "http", "reference_column": "answer", "judge": {"url": server.url("good")}})
    reward(prompts=PROMPTS[:1], completions=COMPLETIONS[:1], answer=["forty-two"])
    assert "Reference answer:\nforty-two" in server.requests[0][2]["messages"][-1]["content"]
    with pytest.raises(RewardError, match="no 'answer' column for params.reference_column"):
        reward(prompts=PROMPTS[:1], completions=COMPLETIONS[:1])


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(RewardError, match="unknown judge backend 'gpt'; choose one of: http, local"):
        plugins.get_reward("llm_judge").build(params={"backend": "gpt"})


# --- the local backend ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_judge(tiny_model):
    return get_judge("local").factory({"model": str(tiny_model), "device": "cpu", "batch_size": 8})


def test_local_judge_grades_from_token_probabilities(local_judge):
    requests = [JudgeRequest("What is 6 x 7?", answer, "correct") for answer in ("42", "41", "I have no idea at all")]
    grades = local_judge(requests)
    assert len(grades) == 3 and all(0.0 < grade < 1.0 for grade in grades)
    assert len(set(grades)) == 3  # the answer changes the judge's P(Yes)
    assert local_judge(requests) == grades  # no sampling: the same answer, the same grade


def test_local_judge_batches_without_changing_grades(local_judge, tiny_model):
    # right-padding must not leak into the scores: one at a time gives what a padded batch gives
    requests = [JudgeRequest("q", "a short answer", "correct"),
                JudgeRequest("a much longer question " * 5, "and a longer answer " * 3, "correct", "42")]
    one_by_one = get_judge("local").factory({"model": str(tiny_model), "device": "cpu", "batch_size": 1})
    assert one_by_one(requests) == pytest.approx(local_judge(requests), abs=1e-5)


def test_llm_judge_with_the_local_tiny_model_offline():
    reward = plugins.get_reward("llm_judge").build(params={"backend": "local", "judge": {"model": "tiny"}})
    scores = reward(prompts=["What is 6 x 7?"] * 2, completions=["</think>42", [{"role": "assistant",
                                                                                 "content": "</think>42"}]])
    assert scores[0] == scores[1] and 0.0 < scores[0] < 1.0


def test_local_judge_refuses_a_missing_model_folder(tmp_path):
    with pytest.raises(RewardError, match="is no model folder; give a local folder"):
        plugins.get_reward("llm_judge").build(params={"backend": "local", "judge": {"model": str(tmp_path / "nope")}})


def test_local_judge_refuses_a_folder_without_a_model_in_one_line(tmp_path):
    with pytest.raises(RewardError) as refused:
        plugins.get_reward("llm_judge").build(params={"backend": "local", "judge": {"model": str(tmp_path)}})
    assert "holds no model (no config.json)" in str(refused.value) and "\n" not in str(refused.value)


def test_local_judge_that_cannot_load_says_why_in_one_line(tmp_path):
    (tmp_path / "config.json").write_text("{}")  # a model folder in name only: no tokenizer, no weights
    with pytest.raises(RewardError, match="cannot load the judge model from") as refused:
        plugins.get_reward("llm_judge").build(params={"backend": "local", "judge": {"model": str(tmp_path)}})
    assert "\n" not in str(refused.value)


def test_a_judge_backend_from_a_plugin():
    class Plugin:
        @hookimpl
        def register_judges(self, register):
            register(Judge("length", lambda params: lambda requests: [min(1.0, len(r.answer) / params["chars"])
                                                                        for r in requests],
                           "longer is better", params={"chars": 10}))

    plugins.register(Plugin(), name="judge-plugin")
    try:
        reward = plugins.get_reward("llm_judge").build(params={"backend": "length", "judge": {"chars": 4}})
        assert reward(completions=["</think>ab", "</think>abcdefgh"]) == [0.5, 1.0]
    finally:
        plugins.unregister("judge-plugin")


@pytest.mark.parametrize("judge, refusal", [
    ('{ url = "ftp://judge" }', "judge.url = 'ftp://judge' is no http(s) URL"),
    ('{ url = "http://localhost:8000/v1", urll = "x" }', "judge backend 'http' has no setting 'urll'"),
])
def test_new_refuses_what_the_judges_factory_refuses_and_writes_nothing(cli, tmp_path, judge, refusal):
    done = cli("new", "p", "--preset", "tiny", "-r", "llm_judge", "--param", f"llm_judge.judge={judge}",
               "-o", str(tmp_path), check=False)
    assert done.returncode == 1 and refusal in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("judge, refusal", [
    ('{ model = "/no/such/judge" }', "judge.model = '/no/such/judge' is no model folder"),
    ('{ device = "gpu" }',
     "judge.device = 'gpu' is no device; give \"auto\", \"cpu\", \"cuda\", \"cuda:N\" or \"mps\""),
])
def test_new_refuses_a_local_judge_that_cannot_load_and_writes_nothing(cli, tmp_path, judge, refusal):
    done = cli("new", "p", "--preset", "tiny", "-r", "llm_judge", "--param", 'llm_judge.backend="local"',
               "--param", f"llm_judge.judge={judge}", "-o", str(tmp_path), check=False)
    assert done.returncode == 1 and refusal in done.stderr
    assert not (tmp_path / "p").exists()


def test_new_leaves_the_judges_server_key_and_model_to_check(cli, tmp_path, monkeypatch):
    """`new` checks the judge's params but reaches no server and loads no model: a key named for the project's
    .env (not set here) and the tiny judge are accepted; `check` still refuses the key that is not set."""
    env = {key: value for key, value in os.environ.items() if key != "JUDGE_KEY_NOT_SET"}
    made = cli("new", "p", "--preset", "tiny", "-r", "llm_judge", "--param",
               'llm_judge.judge={ url = "http://127.0.0.1:9/v1", api_key_env = "JUDGE_KEY_NOT_SET" }',
               "-o", str(tmp_path), env=env)
    assert "Created" in made.stdout
    checked = cli("check", str(tmp_path / "p"), env=env, check=False)
    assert checked.returncode == 1 and "judge.api_key_env names JUDGE_KEY_NOT_SET, which is not set" in checked.stderr


@pytest.mark.parametrize("backend, judge, refusal", [
    ("http", {"timeout": "x"}, "judge backend 'http': judge.timeout = 'x' must be a finite number, like its default"),
    ("http", {"model": 5}, "judge backend 'http': judge.model = 5 must be a string"),
    ("http", {"timeout": -1}, "judge.timeout = -1: give the seconds to wait for an answer, more than 0"),
    ("http", {"retries": -2}, "judge.retries = -2 must be 0 or more"),
    ("http", {"concurrency": 0}, "judge.concurrency = 0 must be 1 or more"),
    ("local", {"batch_size": 0}, "judge.batch_size = 0 must be 1 or more"),
    ("local", {"device": True}, "judge.device = True is no device"),
])
def test_judge_settings_that_cannot_work_are_refused_when_the_reward_is_built(backend, judge, refusal):
    """Before: a negative timeout failed at the first call inside httpx, retries = -1 made no attempt at all, a
    string for a number was a ValueError naming judge.py's line."""
    with pytest.raises(RewardError) as refused:
        plugins.get_reward("llm_judge").build(params={"backend": backend, "judge": {"url": "http://127.0.0.1:9/v1",
                                                                                   **judge} if backend == "http"
                                                     else judge})
    assert refusal in str(refused.value) and "judge.py" not in str(refused.value)


def test_a_cuda_judge_on_a_machine_without_that_gpu_is_refused_in_one_line(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(RewardError, match=r"judge.device = 'cuda:1': this machine has 1 CUDA GPUs; give \"auto\""):
        plugins.get_reward("llm_judge").build(params={"backend": "local", "judge": {"device": "cuda:1"}})


def test_new_leaves_a_judge_folder_named_from_the_project_to_check(cli, tmp_path):
    """train.py runs in the project and `check` builds the rewards there: `new`, run from elsewhere before the
    project exists, does not look for a relative judge.model (it refused one that the project would hold)."""
    made = cli("new", "p", "--preset", "tiny", "-r", "llm_judge", "--param", 'llm_judge.backend="local"',
               "--param", 'llm_judge.judge={ model = "models/judge" }', "-o", str(tmp_path))
    assert "Created" in made.stdout
    checked = cli("check", str(tmp_path / "p"), check=False)
    assert checked.returncode == 1 and "judge.model = 'models/judge' is no model folder" in checked.stderr
