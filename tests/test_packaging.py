"""The built wheel works on its own, and a pip-installed plugin package is found through its entry point."""

import json
import shlex
import sys
import venv
from pathlib import Path

import pytest

from support import REPO, build_wheel, run


def with_this_pythons_packages(venv_dir):
    """Let a new venv import what the running Python has installed (copier, click, torch, ...), after its
    own packages. Not --system-site-packages: that is the *base* interpreter's, which lacks them when the
    tests run inside a venv. A plain path line: the .pth files there (an editable grpo-skill) stay unread."""
    own = next((venv_dir / "lib").glob("python3*/site-packages"))
    paths = [path for path in sys.path if Path(path).name in ("site-packages", "dist-packages")]
    (own / "_tests_outer_site_packages.pth").write_text("".join(f"{path}\n" for path in paths))


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """A venv with the grpo-skill wheel and the example plugin installed (their dependencies come from the
    running Python's site-packages, so nothing is downloaded)."""
    root = tmp_path_factory.mktemp("wheel")
    for source in (REPO, REPO / "plugins" / "example-reward-plugin"):
        build_wheel(source, root / "dist")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    with_this_pythons_packages(root / "venv")
    python = root / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", *map(str, (root / "dist").glob("*.whl"))])
    return root / "venv" / "bin"


def test_the_wheel_is_what_runs(wheel_venv):
    where = run([wheel_venv / "python", "-c", "import grpo_skill; print(grpo_skill.__file__)"]).stdout
    assert where.startswith(str(wheel_venv.parent))


def test_the_wheel_renders_a_project_from_its_own_templates(wheel_venv, tmp_path):
    result = run([wheel_venv / "grpo-skill", "new", "from-wheel", "--preset", "thinking", "-o", str(tmp_path), "--json"])
    assert "train.py" in json.loads(result.stdout)["files"]
    run([wheel_venv / "grpo-skill", "check", str(tmp_path / "from-wheel")])


def test_a_pip_installed_plugin_is_discovered_through_the_entry_point(wheel_venv):
    env = {"GRPO_SKILL_PLUGINS": None}
    rewards = json.loads(run([wheel_venv / "grpo-skill", "rewards", "--json"], env=env).stdout)
    keywords = next(r for r in rewards if r["name"] == "keywords")
    assert keywords["plugin"] == "keywords"
    listed = json.loads(run([wheel_venv / "grpo-skill", "plugins", "--json"], env=env).stdout)
    plugin = next(p for p in listed if p["name"] == "keywords")
    assert (plugin["source"], plugin["version"], plugin["hooks"]) == ("entry point", "0.1.0", ["register_rewards"])


def test_the_installed_plugins_reward_scores(wheel_venv):
    probe = (
        "from grpo_skill import plugins\n"
        "f = plugins.get_reward('keywords').build(params={'words': ['because', 'so']})\n"
        "print(f(completions=['It works because of X, so yes.', 'Because.', 'No.']))\n"
        # chat messages: the assistant's text is scored, not the tool's reply after it
        "print(f(completions=[[{'role': 'assistant', 'content': 'because'}, {'role': 'tool', 'content': 'x'}]]))\n"
    )
    out = run([wheel_venv / "python", "-c", probe], env={"GRPO_SKILL_PLUGINS": "keywords"}).stdout
    assert out.split() == ["[1.0,", "0.5,", "0.0]", "[0.5]"]


def test_the_installed_plugins_reward_has_help_and_an_example_that_runs(wheel_venv):
    env = {"GRPO_SKILL_PLUGINS": "keywords"}
    shown = json.loads(run([wheel_venv / "grpo-skill", "rewards", "show", "keywords", "--json"], env=env).stdout)
    assert all(param["help"] for param in shown["params"])
    example = shlex.split(shown["example"])
    assert example[:4] == ["grpo-skill", "rewards", "try", "keywords"]
    tried = json.loads(run([wheel_venv / "grpo-skill", *example[1:], "--json"], env=env).stdout)
    assert [sample["scores"]["keywords"] for sample in tried["samples"]] == [1.0, 0.0]


def test_the_restriction_variable_keeps_an_installed_plugin_out(wheel_venv):
    rewards = json.loads(run([wheel_venv / "grpo-skill", "rewards", "--json"], env={"GRPO_SKILL_PLUGINS": ""}).stdout)
    assert "keywords" not in {r["name"] for r in rewards}
