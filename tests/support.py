"""Helpers shared by the CPU tests (imported as `support`: tests/gpu has a conftest of its own)."""

import contextlib
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


@contextlib.contextmanager
def unwritable(folder):
    """``folder`` made unwritable for this process for the duration: its write permission removed, or for root
    (whom permissions do not stop) the immutable attribute set with chattr."""
    folder = Path(folder)
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o500)
        try:
            yield folder
        finally:
            folder.chmod(mode)
        return
    result = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    assert result.returncode == 0, f"chattr +i {folder}: {result.stderr}"  # root without chattr: no unwritable folder
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
