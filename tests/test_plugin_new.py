"""`grpo-skill plugin new`: the package it writes, the package's own tests, and the package pip-installed:
listed by `grpo-skill rewards` and trained with in a tiny project."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from grpo_skill import cli
from support import run

FILES = {".gitignore", "README.md", "README.zh-CN.md", "pyproject.toml", "grpo_skill_answer_length/__init__.py",
         "tests/conftest.py", "tests/test_answer_length.py"}


pytestmark = pytest.mark.usefixtures("english")  # messages compared as English text


def plugin_new(*args):
    result = CliRunner().invoke(cli.main, ["plugin", "new", *args], prog_name="grpo-skill")
    return result.exit_code, result.output


def test_it_writes_the_package(tmp_path):
    code, output = plugin_new("answer-length", "-o", str(tmp_path), "--json")
    assert code == 0, output
    package = tmp_path / "grpo-skill-answer-length"
    assert set(json.loads(output)["files"]) == FILES
    assert {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()} == FILES
    import tomllib

    pyproject = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == "grpo-skill-answer-length"
    assert pyproject["project"]["entry-points"]["grpo_skill"] == {"answer_length": "grpo_skill_answer_length"}
    assert "from grpo_skill.testing import check_reward" in (package / "tests/test_answer_length.py").read_text()
    chinese = (package / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "奖励插件" in chinese and "[English](README.md)" in chinese
    assert "[中文说明](README.zh-CN.md)" in (package / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name, message", [
    ("Answer Length", "plugin name 'Answer Length' is not allowed"),
    ("1st", "plugin name '1st' is not allowed"),
    ("class", "plugin name 'class' is a Python keyword; choose another (e.g. class_reward)"),
    ("accuracy", "a reward named 'accuracy' exists already (plugin 'builtin:verifiable')"),
])
def test_bad_names_are_refused_and_nothing_written(tmp_path, name, message):
    code, output = plugin_new(name, "-o", str(tmp_path))
    assert code == 1 and message in output
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_never_overwritten(tmp_path):
    package = tmp_path / "grpo-skill-answer-length"
    package.mkdir()
    (package / "pyproject.toml").write_text("mine\n")
    code, output = plugin_new("answer_length", "-o", str(tmp_path))
    assert code == 1 and "exists and is not empty" in output
    assert (package / "pyproject.toml").read_text() == "mine\n" and len(list(package.iterdir())) == 1


def test_a_name_the_code_uses_itself_still_gives_a_working_package(tmp_path):
    # a reward named max (or len, completion_text...) once shadowed what the scaffold's code calls
    code, output = plugin_new("max", "-o", str(tmp_path))
    assert code == 0, output
    package = tmp_path / "grpo-skill-max"
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=package,
                 env={"PYTHONPATH": str(package), "GRPO_SKILL_PLUGINS": None}, check=False)
    assert result.returncode == 0 and "4 passed" in result.stdout, result.stdout + result.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The scaffolded package pip-installed into a folder of its own (on PYTHONPATH for the commands below)."""
    root = tmp_path_factory.mktemp("plugin")
    result = CliRunner().invoke(cli.main, ["plugin", "new", "answer_length", "-o", str(root)])
    assert result.exit_code == 0, result.output
    package = root / "grpo-skill-answer-length"
    target = root / "site"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(package)])
    return {"package": package, "env": {"PYTHONPATH": str(target), "GRPO_SKILL_PLUGINS": None}}


def test_the_packages_own_tests_pass(installed):
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=installed["package"],
                 env=installed["env"], check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout


def test_installed_it_is_listed_and_trains_in_a_tiny_project(installed, tmp_path):
    grpo_skill = [sys.executable, "-m", "grpo_skill.cli"]
    rewards = json.loads(run([*grpo_skill, "rewards", "--json"], env=installed["env"]).stdout)
    listed = next(r for r in rewards if r["name"] == "answer_length")
    assert listed["plugin"] == "answer_length" and listed["params"] == {"max_words": 40, "think_end_token": "</think>"}
    plugins = json.loads(run([*grpo_skill, "plugins", "--json"], env=installed["env"]).stdout)
    assert next(p for p in plugins if p["name"] == "answer_length")["source"] == "entry point"

    run([*grpo_skill, "new", "with-plugin", "--preset", "tiny", "-r", "thinking:1.0", "-r", "answer_length:0.5",
         "-o", str(tmp_path)], env=installed["env"])
    project = tmp_path / "with-plugin"
    run([sys.executable, "train.py", "--max-steps", "2"], cwd=project, env=installed["env"])
    rows = [json.loads(line) for line in (project / "outputs" / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "reward" in row]  # the last line is the run's summary
    assert len(steps) == 2 and all("rewards/answer_length/mean" in row for row in steps)
