import os
import sys
import tempfile
from pathlib import Path

import pytest

# Plugins installed on this machine stay out of the tests; tests that want entry points set this themselves.
os.environ["GRPO_SKILL_PLUGINS"] = ""
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
