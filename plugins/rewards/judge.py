"""llm_judge: another model grades each answer, through a judge backend registered as a plugin.

Two backends are built in:

- ``http``: any OpenAI-compatible chat-completions server (vLLM, an inference API). It asks for a 0-10 grade
  and divides by 10 ("8", "8/10"); a judge that grades from 0 to 1 anyway ("0.8", "1.0") is read as that
  fraction, not as 0.08; one on a scale of its own ("8/100", "4 out of 5", "80%") on that scale. The URL and
  model come from the config, the key only from an environment variable; each request has a timeout and is
  retried with exponential backoff (connection errors, timeouts, 429, 5xx), at most ``concurrency`` at a time.
  A reply without a usable grade gives ``None``; when no request of a batch gets through, the reward fails with
  one line saying where it could not reach.
- ``local``: a transformers causal LM on this machine (``tiny`` works offline), graded from its own token
  probabilities: P("Yes") / (P("Yes") + P("No")) for "Is the answer <criteria>?". No sampling, no parsing.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grpo_skill import Judge, JudgeRequest, Reward, completion_text, hookimpl, prompt_text
from grpo_skill.core.contract import checking_params_only
from grpo_skill.errors import MissingColumn, UserError, home_expanded, one_line
from grpo_skill import i18n
from grpo_skill.i18n import N_, _

from . import needs
from .verifiable import final_answer, opens_think, think_end_param


class JudgeError(UserError):
    """The judge cannot be reached or refuses every request."""


class JudgeWarning(UserWarning):
    """A judge's reply held no usable grade; that completion is left out (None)."""


SYSTEM_PROMPT = "You grade answers. Reply with one whole number from 0 to 10 and nothing else."
GRADE_PROMPT = (
    "Question:\n{question}\n\n{reference}Answer to grade:\n{answer}\n\n"
    "How {criteria} is the answer? 0: not at all, 10: fully. Reply with the number only."
)
YES_NO_PROMPT = (
    "Question:\n{question}\n\n{reference}Answer:\n{answer}\n\nIs the answer {criteria}? Reply Yes or No."
)
# "8", "7.5", "8/10", "8 out of 10", "80%", or a fraction of 1 such as "0.8" (a judge that ignored the 0-10 scale);
# a grade on a scale of its own ("8/100", "4 out of 5") is read on that scale
GRADE = re.compile(r"(-?\d+(?:\.(\d+))?)(?:\s*(?:/|out of)\s*(\d+(?:\.\d+)?)|\s*(%))?", re.IGNORECASE)


def _grade(reply: str) -> float | None:
    """The reply's grade from 0 to 1, or None when it holds none in range."""
    found = GRADE.search(reply)
    if not found:
        return None
    value, decimals, scale, percent = found.groups()
    value = float(value)
    if scale is not None:
        if float(scale) == 0:
            return None
        grade = value / float(scale)
    elif percent:
        grade = value / 100
    else:
        fraction = decimals is not None and 0 <= value <= 1
        grade = value if fraction else value / 10
    return grade if 0 <= grade <= 1 else None


def _reference(request: JudgeRequest) -> str:
    return f"Reference answer:\n{request.reference}\n\n" if request.reference else ""


# --- the http backend -----------------------------------------------------------------------------------------


class _Retryable(Exception):
    """A failure worth another try: no connection, no answer in time, 429 or 5xx. ``kind``: "answered" (429,
    5xx: the server is up and its URL right), "timeout" or "unreachable"."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def _at_least(params, *bounds) -> None:
    """Refuse a judge setting below its least working value (``bounds``: (key, least) pairs)."""
    for key, least in bounds:
        if params[key] < least:
            raise UserError(_("judge.{key} = {value!r} must be {least} or more").format(
                key=key, value=params[key], least=least))


class HttpJudge:
    def __init__(self, params):
        url = str(params["url"]).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise UserError(_("judge.url = {url!r} is no http(s) URL; e.g. \"http://localhost:8000/v1\"").format(
                url=url))
        _at_least(params, ("max_tokens", 1), ("retries", 0), ("backoff", 0), ("concurrency", 1))
        if params["timeout"] <= 0:
            raise UserError(_("judge.timeout = {value!r}: give the seconds to wait for an answer, more than 0").format(
                value=params["timeout"]))
        self.endpoint = url if url.endswith("/chat/completions") else url + "/chat/completions"
        self.model, self.max_tokens = params["model"], int(params["max_tokens"])
        self.timeout, self.retries = float(params["timeout"]), int(params["retries"])
        self.backoff, self.concurrency = float(params["backoff"]), int(params["concurrency"])
        # the key may come from the project's .env, which `new` has not written yet
        self.client = needs.model(lambda: self._client(params["api_key_env"]))
        self._warned = set()
        self._lock = threading.Lock()

    def _client(self, key_env: str):
        needs.require("httpx", _("the http judge needs httpx: pip install httpx (or pip install 'grpo-skill[train]')"))
        import httpx

        headers = {}
        if key_env:
            key = os.environ.get(key_env)
            if not key:
                raise UserError(_("judge.api_key_env names {env}, which is not set: export {env}=... or put it in "
                                  "the project's .env (the key never goes in config.toml)").format(env=key_env))
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(timeout=self.timeout, headers=headers)

    def _post(self, body: dict) -> dict:
        import httpx

        last, kind = "", "unreachable"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self.client.post(self.endpoint, json=body)
            except httpx.TimeoutException:
                last, kind = _("no answer within {seconds:g} s").format(seconds=self.timeout), "timeout"
                continue
            except httpx.TransportError as error:
                last, kind = f"{type(error).__name__}: {error}", "unreachable"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                last, kind = f"HTTP {response.status_code}", "answered"
                continue
            if response.status_code >= 400:
                hint = (_("check judge.api_key_env and the key") if response.status_code in (401, 403)
                        else _("check judge.url and judge.model"))
                raise JudgeError(_("the judge at {url} refused the request: HTTP {status} {text}; {hint}").format(
                    url=self.endpoint, status=response.status_code, text=response.text[:200].strip(), hint=hint))
            try:
                return response.json()
            except ValueError:
                return {}
        raise _Retryable(last, kind)

    def _failure(self, failed: _Retryable) -> str:
        """Why no request got through, and what to do: a server that answered is up (its log says why it
        failed), one that did not answer in time may be overloaded, one that cannot be reached is not running."""
        tries = i18n.ngettext("{count} attempt", "{count} attempts", self.retries + 1).format(count=self.retries + 1)
        if failed.kind == "answered":
            return _("the judge at {url} answered {error} to every request ({tries} each); see the server's log").format(
                url=self.endpoint, error=failed, tries=tries)
        if failed.kind == "timeout":
            return _("the judge at {url} gave no answer within {seconds:g} s ({tries} each); raise judge.timeout, or "
                     "see whether the server is overloaded").format(url=self.endpoint, seconds=self.timeout, tries=tries)
        return _("cannot reach the judge at {url} ({error}, {tries}); start the server or fix judge.url").format(
            url=self.endpoint, error=failed, tries=tries)

    def _warn(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        warnings.warn(JudgeWarning(message), stacklevel=3)

    def grade_one(self, request: JudgeRequest) -> float | None:
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": GRADE_PROMPT.format(
                    question=request.question, reference=_reference(request), answer=request.answer,
                    criteria=request.criteria)},
            ],
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        reply = self._post(body)
        try:
            content = reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            self._warn("shape", _("the judge at {url} answered without choices[0].message.content; those "
                                  "completions are left out (None)").format(url=self.endpoint))
            return None
        content = content.rsplit("</think>", 1)[-1]  # a thinking judge: the grade follows its thinking
        grade = _grade(content)
        if grade is None:
            self._warn("grade", _("the judge replied {reply!r}, not a grade from 0 to 10; such completions are "
                                  "left out (None)").format(reply=content[:80]))
        return grade

    def __call__(self, requests):
        outcomes: list = []

        def attempt(request):
            try:
                return self.grade_one(request)
            except _Retryable as error:
                return error

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)) or 1) as pool:
            outcomes = list(pool.map(attempt, requests))
        failed = [outcome for outcome in outcomes if isinstance(outcome, _Retryable)]
        if failed and len(failed) == len(outcomes):
            raise JudgeError(self._failure(failed[0]))
        if failed:
            self._warn("failed", _("{count} of {total} judge requests failed ({error}); those completions are "
                                   "left out (None)").format(count=len(failed), total=len(outcomes), error=failed[0]))
        return [None if isinstance(outcome, _Retryable) else outcome for outcome in outcomes]


# --- the local backend ----------------------------------------------------------------------------------------


class LocalJudge:
    def __init__(self, params):
        path, device = params["model"], params["device"]
        if path != "tiny":
            path = str(home_expanded(path))
        # A folder named from the project (train.py runs there) is looked for by `check` and train.py: `new` runs
        # elsewhere, before the project exists.
        if path != "tiny" and (Path(path).is_absolute() or not checking_params_only()):
            if not Path(path).is_dir():
                raise UserError(_("judge.model = {path!r} is no model folder; give a local folder (the judge runs "
                                  "offline) or \"tiny\"").format(path=path))
            if not (Path(path) / "config.json").is_file():  # else transformers fails in six lines
                raise UserError(_("judge.model = {path!r} holds no model (no config.json); give a folder written by "
                                  "save_pretrained, or \"tiny\"").format(path=path))
        if not isinstance(device, str) or (device not in ("auto", "cpu", "cuda", "mps")
                                           and not re.fullmatch(r"cuda:\d+", device)):
            raise UserError(_("judge.device = {device!r} is no device; give \"auto\", \"cpu\", \"cuda\", "
                              "\"cuda:N\" or \"mps\"").format(device=device))
        _at_least(params, ("batch_size", 1))
        self.batch_size = params["batch_size"]
        needs.require("transformers", _("the local judge needs transformers: pip install 'grpo-skill[train]'"))
        self.tokenizer, self.model, self.device = needs.model(lambda: self._load(path, device))
        self.yes = self.tokenizer.encode("Yes", add_special_tokens=False)
        self.no = self.tokenizer.encode("No", add_special_tokens=False)
        self.limit = getattr(self.model.config, "max_position_embeddings", 4096)

    @staticmethod
    def _load(path: str, device: str):
        """(tokenizer, model, device) of the judge model at ``path`` ("tiny": built here)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if path == "tiny":
            from grpo_skill import modelbuild

            path = modelbuild.build("tiny")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        elif device.startswith("cuda") and int(device.partition(":")[2] or 0) >= torch.cuda.device_count():
            raise UserError(_("judge.device = {device!r}: this machine has {count} CUDA GPUs; give \"auto\" or "
                              "\"cpu\"").format(device=device, count=torch.cuda.device_count()))
        elif device == "mps" and not torch.backends.mps.is_available():
            raise UserError(_("judge.device = \"mps\": this machine has no Apple GPU; give \"auto\" or \"cpu\""))
        from transformers.utils import logging as transformers_logging

        bar = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a run's output
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype="auto").to(device).eval()
        except (OSError, ValueError) as error:
            raise UserError(_("cannot load the judge model from {path}: {error}").format(
                path=path, error=one_line(error))) from None
        finally:
            if bar:
                transformers_logging.enable_progress_bar()
        return tokenizer, model, device

    def _prompt_ids(self, request: JudgeRequest) -> list[int]:
        content = YES_NO_PROMPT.format(question=request.question, reference=_reference(request),
                                       answer=request.answer, criteria=request.criteria)
        if self.tokenizer.chat_template:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                      add_generation_prompt=True, enable_thinking=False)
            if text.rstrip().endswith("<think>"):  # a template that always opens the thinking: close it empty
                text = text.rstrip() + "\n\n</think>\n\n"
        else:
            text = content + "\n"
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        keep = self.limit - max(len(self.yes), len(self.no))
        return ids[-keep:]  # an over-long question loses its start, never the answer or the instruction

    def _log_probs(self, prompts: list[list[int]], continuation: list[int]) -> list[float]:
        import torch

        sequences = [prompt + continuation for prompt in prompts]
        width = max(len(sequence) for sequence in sequences)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in sequences], device=self.device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, attention_mask=mask).logits.float()
        log_probs = torch.log_softmax(logits, dim=-1)
        totals = []
        for row, prompt in enumerate(prompts):
            positions = range(len(prompt) - 1, len(prompt) - 1 + len(continuation))
            totals.append(sum(log_probs[row, position, token].item()
                              for position, token in zip(positions, continuation)))
        return totals

    def __call__(self, requests):
        grades = []
        for start in range(0, len(requests), self.batch_size):
            prompts = [self._prompt_ids(request) for request in requests[start:start + self.batch_size]]
            yes, no = self._log_probs(prompts, self.yes), self._log_probs(prompts, self.no)
            grades += [1.0 / (1.0 + math.exp(n - y)) for y, n in zip(yes, no)]  # P(Yes) / (P(Yes) + P(No))
        return grades


# --- the reward -----------------------------------------------------------------------------------------------


def llm_judge_factory(context):
    from grpo_skill.judges import get_judge, judge_params

    params = context.params
    if not isinstance(params["judge"], dict):
        raise UserError(_("params.judge must be a table of the backend's settings, e.g. judge = { url = "
                          "\"http://localhost:8000/v1\", model = \"...\" }"))
    think_end, opened = think_end_param(context), opens_think(context)
    backend = get_judge(params["backend"])
    settings = judge_params(backend, params["judge"])
    if not backend.plugin.startswith("builtin:"):  # another plugin's backend may load a model or call a service
        settings = needs.model(lambda: settings)
    grade = backend.factory(settings)
    criteria, reference_column = params["criteria"], params["reference_column"]

    def llm_judge(completions, prompts=None, **kwargs):
        if reference_column and reference_column not in kwargs:
            raise MissingColumn(_("the dataset has no {column!r} column for params.reference_column").format(
                column=reference_column), reference_column)
        references = kwargs[reference_column] if reference_column else [None] * len(completions)
        prompts = prompts if prompts is not None else [""] * len(completions)
        scores: list[float | None] = [0.0] * len(completions)  # unfinished thinking: no answer to judge
        requests, where = [], []
        for index, (prompt, completion, reference) in enumerate(zip(prompts, completions, references)):
            answer = final_answer(completion_text(completion), think_end, opened)
            if answer is not None:
                requests.append(JudgeRequest(prompt_text(prompt), answer.strip(), criteria,
                                             None if reference is None else str(reference)))
                where.append(index)
        if requests:
            grades = list(grade(requests))
            if len(grades) != len(requests):
                raise UserError(_("judge backend {name!r} gave {got} grades for {expected} answers").format(
                    name=backend.name, got=len(grades), expected=len(requests)))
            for index, value in zip(where, grades):
                if value is not None and not 0.0 <= value <= 1.0:
                    raise UserError(_("judge backend {name!r} gave {value!r}; grades are from 0 to 1").format(
                        name=backend.name, value=value))
                scores[index] = value
        return scores

    return llm_judge


@hookimpl
def register_judges(register):
    register(Judge(
        "http", HttpJudge,
        N_("An OpenAI-compatible chat-completions server (vLLM, an inference API), asked for a 0-10 grade."),
        params={"url": "http://localhost:8000/v1", "model": "judge", "api_key_env": "", "timeout": 60.0,
                "retries": 3, "backoff": 1.0, "concurrency": 8, "max_tokens": 16},
        param_help={
            "url": N_("the server's base URL (…/v1) or its …/chat/completions"),
            "model": N_("the model name the server knows"),
            "api_key_env": N_("the environment variable holding the API key; empty: no key"),
            "timeout": N_("seconds to wait for one answer"),
            "retries": N_("tries after the first, on no connection, timeouts, 429 and 5xx"),
            "backoff": N_("seconds before the first retry, doubled each time"),
            "concurrency": N_("requests in flight at once"),
            "max_tokens": N_("tokens the judge may reply with"),
        },
    ))
    register(Judge(
        "local", LocalJudge,
        N_("A transformers causal LM on this machine, graded from its P(Yes) against P(No); offline."),
        params={"model": "tiny", "device": "auto", "batch_size": 8},
        param_help={
            "model": N_("a local model folder, or \"tiny\" (built here, for trying things out)"),
            "device": N_("\"auto\" (CUDA when there is one), \"cpu\", \"cuda\", \"cuda:N\" or \"mps\""),
            "batch_size": N_("answers scored per forward pass"),
        },
    ))


@hookimpl
def register_rewards(register):
    register(Reward(
        "llm_judge", llm_judge_factory,
        N_("Another model grades the answer after </think> from 0 to 1 against params.criteria, through a judge "
           "backend (http: an OpenAI-compatible server; local: a transformers model); 0.0 for unfinished "
           "thinking, None when the judge gives no usable grade."),
        params={"backend": "http", "judge": {}, "criteria": "correct, clear and complete", "reference_column": "",
                "think_end_token": "</think>", "template_opens_think": "auto"},
        param_help={
            "backend": N_("a judge backend: http or local (grpo-skill rewards show llm_judge lists their settings)"),
            "judge": N_("the backend's settings, e.g. { url = \"http://host:8000/v1\", model = \"...\", "
                        "api_key_env = \"JUDGE_API_KEY\" }"),
            "criteria": N_("what a good answer is, in a few words"),
            "reference_column": N_("a dataset column with reference answers shown to the judge; empty: none"),
            "think_end_token": N_("the judge sees only the text after it"),
            "template_opens_think": N_("\"auto\": whether the chat template opens <think>; true: no </think> means "
                                       "no answer (0.0)"),
        },
        example=("--prompt", "What is 6 x 7?", "--completion", "</think>42", "--completion", "</think>No idea",
                 "--param", "llm_judge.backend=local", "--param", "llm_judge.judge.model=tiny"),
    ))
