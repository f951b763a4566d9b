import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Plugins installed on this machine stay out of the tests; tests that want entry points set this themselves.
os.environ["GRPO_SKILL_PLUGINS"] = ""
# Built models are cached across test runs here, not in the user's cache.
os.environ.setdefault("GRPO_SKILL_CACHE", str(Path(tempfile.gettempdir()) / "grpo-skill-test-cache"))

REPO = Path(__file__).resolve().parents[1]


def run(args, cwd=None, env=None, check=True, timeout=600):
    """Run a command as a user would; returns the CompletedProcess. ``env`` values of None unset."""
    merged = {key: value for key, value in {**os.environ, **(env or {})}.items() if value is not None}
    result = subprocess.run(args, cwd=cwd, env=merged, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


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
