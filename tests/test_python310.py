"""Python 3.10, the oldest that pyproject accepts: the CLI installs and runs there (tomllib came in 3.11; tomli stands
in). The venv holds the CLI's own dependencies, not the training stack, and is kept between runs in the test cache."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from support import REPO, run, source_tree_build


def python310() -> str:
    """A Python 3.10 interpreter that runs: pyenv's, or python3.10 on PATH (a pyenv shim may not run)."""
    pyenv = shutil.which("pyenv")
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip() if pyenv else ""
    candidates = [str(path) for path in sorted(Path(root, "versions").glob("3.10.*/bin/python"))] if root else []
    candidates += [found for found in [shutil.which("python3.10")] if found]
    for candidate in candidates:
        if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    raise AssertionError("no Python 3.10 here (pyenv's or python3.10): install one to test the oldest Python "
                         "supported")


def venv310() -> Path:
    """A 3.10 venv with this package's dependencies (from pyproject), kept in the test cache; this tree installed
    into it editable, without its dependencies, each time."""
    pyproject = (REPO / "pyproject.toml").read_bytes()
    folder = Path(os.environ["GRPO_SKILL_CACHE"]) / f"venv310-{hashlib.sha256(pyproject).hexdigest()[:12]}"
    python = folder / "bin" / "python"
    if not (folder / "ready").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        run([python310(), "-m", "venv", str(folder)])
        with source_tree_build():  # pip builds the wheel in the source tree
            run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(REPO)], timeout=900)
        (folder / "ready").write_text("")
    with source_tree_build():
        run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "-e", str(REPO)],
            timeout=300)
    return folder


def test_the_cli_runs_on_python_310(tmp_path):
    folder = venv310()
    version = run([str(folder / "bin" / "python"), "-c", "import sys; print(sys.version_info[:2])"]).stdout
    assert version.strip() == "(3, 10)"
    cli = [str(folder / "bin" / "grpo-skill")]
    run([*cli, "new", "on-310", "--preset", "tiny", "-o", str(tmp_path)])
    checked = run([*cli, "check", str(tmp_path / "on-310"), "--no-rewards"])
    assert "OK (preset tiny" in checked.stdout
    planned = run([*cli, "plan", str(tmp_path / "on-310"), "--gpu-memory", "24"])
    assert "GiB" in planned.stdout
