"""Helpers for the GPU tests: run commands as a user would, edit a generated config.toml."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


class Commands:
    """Runs commands in a subprocess, each with its own log file; failures show the log's tail."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def grpo_skill(self) -> list[str]:
        script = shutil.which("grpo-skill")
        return [script] if script else [sys.executable, "-m", "grpo_skill.cli"]

    def run(self, args, *, name: str, cwd=None, timeout: float = 540, check: bool = True, env=None):
        log = self.log_dir / f"{name}.log"
        started = time.perf_counter()
        merged = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        with log.open("w", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(map(str, args))}  (cwd {cwd or os.getcwd()})\n")
            handle.flush()
            result = subprocess.run(
                [str(a) for a in args], cwd=cwd, env=merged, stdout=subprocess.PIPE, stderr=handle, text=True,
                timeout=timeout,
            )
            handle.write(f"\n--- stdout ---\n{result.stdout}\n--- exit {result.returncode} after "
                         f"{time.perf_counter() - started:.1f} s ---\n")
        result.seconds = time.perf_counter() - started
        result.log = log
        if check and result.returncode != 0:
            tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
            raise AssertionError(f"{name}: exit {result.returncode}; log {log}, its end:\n{tail}")
        return result


def set_toml(path: Path, section: str, key: str, literal: str) -> None:
    """Set ``key = literal`` in ``[section]`` of a generated config.toml, as a user would in an editor."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"^\[{re.escape(section)}\]", line))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    for i in range(start + 1, end):
        if re.match(rf"^{re.escape(key)}\s*=", lines[i]):
            lines[i] = f"{key} = {literal}"
            break
    else:
        lines.insert(start + 1, f"{key} = {literal}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
