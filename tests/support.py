"""Helpers shared by the CPU tests (imported as `support`: tests/gpu has a conftest of its own)."""

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(args, cwd=None, env=None, check=True, timeout=600):
    """Run a command as a user would; returns the CompletedProcess. ``env`` values of None unset."""
    merged = {key: value for key, value in {**os.environ, **(env or {})}.items() if value is not None}
    result = subprocess.run(args, cwd=cwd, env=merged, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result
