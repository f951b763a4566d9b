"""The command lines that advice names, so that following it needs no hand edit of config.toml: `grpo-skill set` with
the settings that probe, plan, the training-health warnings and sft.py suggest."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .errors import home_expanded
from .tomlsource import toml_text


def set_command(settings: dict[str, Any], project: str | Path | None = None) -> str:
    """``grpo-skill set [--project DIR] SECTION.KEY=VALUE ...`` for ``settings`` ("table.key" -> value; a key without
    a table is [grpo]'s, as plan names them), each a TOML value quoted for the shell; ``project``: a project folder or
    its config file, given as ``--project`` only where it is not the current folder or its config.toml (what `set`
    edits without it)."""
    items = [shlex.quote(f"{key if '.' in key else 'grpo.' + key}={toml_text(value)}")
             for key, value in settings.items()]
    where = []
    here = Path.cwd().resolve()
    if project is not None and home_expanded(project).resolve() not in (here, here / "config.toml"):
        where = ["--project", shlex.quote(str(project))]
    return " ".join(["grpo-skill", "set", *where, *items])
