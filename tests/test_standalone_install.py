"""A generated project installs on its own: in a fresh venv (none of this Python's packages), its requirements.txt
and a grpo-skill wheel install everything it needs, and the tiny preset trains there."""

import json
import re
import sys
import tomllib
import venv
from importlib import metadata

import pytest

from support import REPO, build_wheel, run


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "standalone", "--preset", "tiny", "-o", str(root)])
    return root / "standalone"


def requirement_lines(project):
    lines = (project / "requirements.txt").read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def test_requirements_take_the_train_extra_of_a_compatible_grpo_skill(project):
    # the training stack's versions live in one place, pyproject's train extra, which pip reads from the wheel
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert requirement_lines(project) == [f"grpo-skill[train]~={version}", "pytest>=8"]


def test_the_answers_file_names_no_path_of_this_machine(project):
    answers = (project / ".copier-answers.yml").read_text()
    assert re.search(r"^_src_path: git\+grpo-skill://", answers, re.MULTILINE)  # a name `update` resolves
    assert str(REPO) not in answers and not re.search(r"^\S+: /", answers, re.MULTILINE)


def test_the_readme_opens_with_install_and_run(project):
    opening = (project / "README.md").read_text().split("\n## ")[0]
    commands = re.search(r"```bash\n(.*?)```", opening, re.DOTALL).group(1)
    assert [line.split("#")[0].strip() for line in commands.splitlines()] == [
        "python -m venv .venv && . .venv/bin/activate", "pip install -r requirements.txt", "python train.py"]


@pytest.mark.slow
def test_a_fresh_venv_installs_the_requirements_and_trains(project, tmp_path, tiny_model):
    dist = tmp_path / "dist"
    build_wheel(REPO, dist)
    venv.EnvBuilder(with_pip=True).create(tmp_path / "venv")  # without system site-packages
    python = str(tmp_path / "venv" / "bin" / "python")
    # torch first, the build this machine runs (CPU here), as the README advises; all else from requirements.txt
    # --no-compile: what is installed is the same; byte-compiling every file of torch and the rest took ~15 s here
    run([python, "-m", "pip", "install", "-q", "--no-compile", f"torch=={metadata.version('torch')}"], timeout=900)
    run([python, "-m", "pip", "install", "-q", "--no-compile", "--find-links", str(dist), "-r", "requirements.txt"],
        cwd=project, timeout=900)
    run([python, "-m", "pip", "check"])
    where = run([python, "-c", "import grpo_skill, trl; print(grpo_skill.__file__); print(trl.__file__)"]).stdout
    assert all(line.startswith(str(tmp_path / "venv")) for line in where.splitlines()), where

    result = run([python, "train.py", "--max-steps", "3"], cwd=project)
    summary = json.loads(result.stdout)
    assert (summary["global_step"], summary["steps"]) == (3, 3)
    assert (project / "outputs" / "adapter" / "adapter_model.safetensors").is_file()
    assert "3 passed" in run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project).stdout
