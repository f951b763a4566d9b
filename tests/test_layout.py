"""The package's layout (docs/architecture.md): every import runs down the floors, never up, and no module imports
itself back through others. The imports are read from the source (ast), those inside functions included."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import grpo_skill

PACKAGE = Path(grpo_skill.__file__).resolve().parent
# The floors of docs/architecture.md: a module imports from its own floor or below.
FLOORS = {"core": 0, "runtime": 1, "scaffold": 2, "advisors": 3, "cli": 4, "verbs": 4, "console": 4, "testing": 4, "": 4}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def resolve(package: str, name: str) -> str:
    """What ``from package import name`` imports: the submodule ``name``, a moved module's home, or ``package``."""
    full = f"{package}.{name}" if package else name
    if full in MODULES:
        return full
    if not package and name in grpo_skill.MOVED:
        return grpo_skill.MOVED[name]
    return package


def imports_of(module: str) -> set[str]:
    path = MODULES[module]
    own_package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = own_package.split(".") if own_package else []
            base = ".".join(parts[:len(parts) - node.level + 1])
            target = ".".join(filter(None, [base, node.module]))
            found |= {resolve(target, alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grpo_skill":
            target = node.module.partition(".")[2]
            target = grpo_skill.MOVED.get(target, target)
            found |= {resolve(target, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "grpo_skill":
                    target = alias.name.partition(".")[2]
                    found.add(grpo_skill.MOVED.get(target, target))
    found.discard(module)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def floor(module: str) -> int:
    return FLOORS[module.split(".")[0]]


def test_every_module_has_a_floor():
    assert {module.split(".")[0] for module in MODULES} <= set(FLOORS)


def test_no_import_runs_up_a_floor():
    upward = sorted(f"{module} -> {target}" for module, targets in GRAPH.items() for target in targets
                    if floor(target) > floor(module))
    assert upward == []


def test_no_import_circle():
    state: dict[str, str] = {}
    circles = []

    def visit(module, path):
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if state.get(target) == "open":
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_graph_reads_the_imports_it_is_meant_to():
    """The reader finds the arrows that exist (so that the tests above cannot pass on an empty graph)."""
    assert {"core.registry", "core.hookspecs", "core.errors"} <= GRAPH["core.plugins"]
    assert "core.launch" in GRAPH["core.errors"]
    assert "runtime.planning" in GRAPH["runtime.decoding"]  # a lazy import, inside a function
    assert "scaffold.generator" in GRAPH["advisors.plan"]


@pytest.mark.parametrize("old", sorted(grpo_skill.MOVED))
def test_an_old_module_name_is_its_new_home(old):
    """Generated projects, outside plugins and the docs import grpo_skill.errors, grpo_skill.project, ..."""
    moved = importlib.import_module(f"grpo_skill.{old}")
    assert moved is importlib.import_module(f"grpo_skill.{grpo_skill.MOVED[old]}")
    assert moved.__spec__.name == f"grpo_skill.{grpo_skill.MOVED[old]}"
    assert getattr(grpo_skill, old) is moved


def test_old_names_in_a_fresh_interpreter():
    """`from grpo_skill.X import name` and `python -m grpo_skill.X` as the docs and templates write them."""
    code = ("from grpo_skill import errors, i18n, project as project_config, warmstart, modelbuild, plugins\n"
            "from grpo_skill.errors import UserError\n"
            "from grpo_skill.judges import get_judge, judge_params\n"
            "from grpo_skill.registry import QWEN3_LORA_TARGETS\n"
            "import grpo_skill.plan\n"
            "assert UserError is __import__('grpo_skill.core.errors', fromlist=['x']).UserError\n"
            "assert grpo_skill.plan.estimate is __import__('grpo_skill.runtime.estimate', fromlist=['x']).estimate\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    shown = subprocess.run([sys.executable, "-m", "grpo_skill.schema", "--keys"], capture_output=True, text=True,
                           check=True)
    assert '"grpo"' in shown.stdout
