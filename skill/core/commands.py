"""The command lines that advice names, so that following it needs no hand edit of config.toml: `grpo-skill set` with
the settings that probe, plan, the training-health warnings and sft.py suggest."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .tomlsource import toml_text


def set_command(settings: dict[str, Any], project: str | Path | None = None) -> str:
    """``grpo-skill set [--project DIR] SECTION.KEY=VALUE ...`` for ``settings`` ("table.key" -> value; a key without
    a table is [grpo]'s, as plan names them), each a TOML value quoted for the shell; ``--project`` only where
    ``project`` is not the current folder."""
    items = [shlex.quote(f"{key if '.' in key else 'grpo.' + key}={toml_text(value)}")
             for key, value in settings.items()]
    where = []
    if project is not None and Path(project).expanduser().resolve() != Path.cwd().resolve():
        where = ["--project", shlex.quote(str(project))]
    return " ".join(["grpo-skill", "set", *where, *items])
