import os
import sys
import tempfile
from pathlib import Path

import pytest

# Plugins installed on this machine stay out of the tests; tests that want entry points set this themselves.
os.environ["GRPO_SKILL_PLUGINS"] = ""
# A program the tests run that dies of a signal (a train.py once exited -11 in CI) prints where it was
os.environ.setdefault("PYTHONFAULTHANDLER", "1")
# One thread per torch process under xdist (each worker, and the train.py and CLI runs it starts): on 2 cores two
# workers of two threads each wait on each other. Measured: tests/test_end_to_end.py, test_resume.py, test_sft.py and
# test_real_weights.py on two workers took 394 s with one thread, 538 s without (2026-12-08).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# Built models are cached across test runs here, not in the user's cache.
os.environ.setdefault("GRPO_SKILL_CACHE", str(Path(tempfile.gettempdir()) / "grpo-skill-test-cache"))

from support import run  # noqa: E402


@pytest.fixture
def cli():
    """Invoke the installed console script."""

    def invoke(*args, cwd=None, env=None, check=True):
        return run([sys.executable, "-m", "grpo_skill.cli", *args], cwd=cwd, env=env, check=check)

    return invoke


@pytest.fixture(scope="session")
def tiny_model():
    from grpo_skill import modelbuild

    return modelbuild.build("tiny")


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture
def english(monkeypatch):
    """The CLI in English whatever the machine's locale (for tests that compare messages)."""
    from grpo_skill import i18n

    for variable in i18n.LOCALE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    i18n.set_language(None)
