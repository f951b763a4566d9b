"""The reward names a project's rewards.py registers, read from its source without running it (`check` without
--rewards): ``Reward("name", ...)`` and ``Reward(name="name", ...)`` calls, under any alias of ``Reward``."""

from __future__ import annotations

import ast
from pathlib import Path

from .errors import where_raised
from .registry import RegistryError


def declared_rewards(rewards_py: Path) -> tuple[set[str], bool]:
    """(the names written as text, whether some Reward(...) gets its name from code, which only running rewards.py
    tells); a syntax error is a RegistryError naming its line."""
    try:
        tree = ast.parse(rewards_py.read_bytes(), filename=str(rewards_py))
    except SyntaxError as error:
        raise RegistryError(where_raised(error)) from None
    callables = {"Reward"} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                              for alias in node.names if alias.name == "Reward" and alias.asname}
    names, unnamed = set(), False
    for node in ast.walk(tree):  # Reward("name", ...) or Reward(name="name", ...)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in callables:
            arguments = node.args[:1] + [kw.value for kw in node.keywords if kw.arg in ("name", None)]
            literal = [arg.value for arg in arguments if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            names |= set(literal)
            unnamed |= not arguments or len(literal) < len(arguments)  # Reward(NAME, ...), Reward(**fields)
    return names, unnamed
