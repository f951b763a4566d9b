"""git run as a subprocess (update, the template history): its output, or a failure said in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..core.errors import UserError
from ..core.i18n import _


def installed() -> bool:
    return shutil.which("git") is not None


def git(args, cwd: Path | str | None = None, *, check: bool = True,
        error: type[UserError] = UserError) -> subprocess.CompletedProcess:
    """``git ARGS`` in ``cwd``; with ``check``, a non-zero exit raises ``error`` with git's last line."""
    # no optional locks: `git status` would otherwise rewrite .git/index to refresh its stat data, a change to the
    # user's repository from a command that only reads it (and a failed update must change nothing)
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    if check and result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise error(_("git {command} failed in {path}: {error}").format(
            command=args[0], path=cwd or Path.cwd(), error=lines[-1] if lines else result.returncode))
    return result
