"""`grpo-skill skill install`: the skill's files, its folder name, overwriting, and the files in a wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grpo_skill import cli, i18n, skillfiles

REPO = Path(__file__).resolve().parents[1]
SKILL_MD = """---
name: grpo-skill
description: Test double of the skill. {lang}
---

# GRPO ({lang})

See [rewards](references/rewards.md).
"""


@pytest.fixture(autouse=True)
def english(monkeypatch):
    for variable in i18n.LOCALE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    i18n.set_language(None)


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A stand-in for the shipped skill (the real SKILL.md is written and tested elsewhere)."""
    root = tmp_path / "bundle"
    for lang, folder in (("en", root), ("zh-CN", root / "i18n" / "zh-CN")):
        (folder / "references").mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL_MD.format(lang=lang), encoding="utf-8")
        (folder / "references" / "rewards.md").write_text(f"# rewards ({lang})\n", encoding="utf-8")
    (root / "references" / "__pycache__").mkdir()
    (root / "references" / "__pycache__" / "junk.pyc").write_bytes(b"")
    sources = {"en": root, "zh-CN": root / "i18n" / "zh-CN"}
    monkeypatch.setattr(skillfiles, "source_dir", lambda lang="en": sources[lang])
    return root


def install(*args, env=None):
    result = CliRunner().invoke(cli.main, ["skill", "install", *args], env=env, prog_name="grpo-skill")
    return result.exit_code, result.output


def tree(folder: Path) -> dict[str, str]:
    return {path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_install_copies_the_skill_into_a_folder_named_after_it(bundle, tmp_path):
    dest = tmp_path / "skills"
    code, output = install("--dest", str(dest))
    assert code == 0, output
    target = dest / "grpo-skill"
    assert tree(target) == {
        "SKILL.md": SKILL_MD.format(lang="en"),
        "references/rewards.md": "# rewards (en)\n",
    }
    assert str(target) in output and output.startswith("Installed the skill (en, 2 files) in ")
    assert [path.name for path in dest.iterdir()] == ["grpo-skill"]  # no scratch folder left behind


def test_install_the_chinese_twin(bundle, tmp_path):
    code, output = install("--dest", str(tmp_path), "--lang", "zh-CN", "--json")
    assert code == 0, output
    result = json.loads(output)
    assert result["lang"] == "zh-CN" and result["status"] == "installed"
    assert tree(tmp_path / "grpo-skill")["SKILL.md"] == SKILL_MD.format(lang="zh-CN")
    assert tree(tmp_path / "grpo-skill")["references/rewards.md"] == "# rewards (zh-CN)\n"


def test_the_skill_language_follows_the_cli_language(bundle, tmp_path):
    result = CliRunner().invoke(cli.main, ["--lang", "zh-CN", "skill", "install", "--dest", str(tmp_path)])
    assert result.exit_code == 0
    assert result.output.startswith("已将技能（zh-CN，2 个文件）安装到 ")
    assert "(zh-CN)" in (tmp_path / "grpo-skill" / "SKILL.md").read_text(encoding="utf-8")


def test_a_twin_without_references_uses_the_english_ones(bundle, tmp_path):
    shutil.rmtree(bundle / "i18n" / "zh-CN" / "references")
    assert install("--dest", str(tmp_path), "--lang", "zh-CN")[0] == 0
    assert tree(tmp_path / "grpo-skill")["references/rewards.md"] == "# rewards (en)\n"


def test_installing_the_same_skill_again_changes_nothing(bundle, tmp_path):
    install("--dest", str(tmp_path))
    code, output = install("--dest", str(tmp_path))
    assert code == 0
    assert "already holds this skill (en); nothing to do" in output


def test_a_different_copy_is_kept_unless_forced(bundle, tmp_path):
    target = tmp_path / "grpo-skill"
    install("--dest", str(tmp_path))
    (target / "SKILL.md").write_text("my own edits", encoding="utf-8")
    (target / "references" / "old.md").write_text("from an older version", encoding="utf-8")

    code, output = install("--dest", str(tmp_path))
    assert code == 1
    assert "already exists and differs" in output and "--force" in output
    assert (target / "SKILL.md").read_text(encoding="utf-8") == "my own edits"

    code, output = install("--dest", str(tmp_path), "--lang", "zh-CN")  # the other language is a different copy
    assert code == 1

    code, output = install("--dest", str(tmp_path), "--force")
    assert code == 0 and output.startswith("Replaced the skill in ")
    assert tree(target) == {"SKILL.md": SKILL_MD.format(lang="en"), "references/rewards.md": "# rewards (en)\n"}


def test_refusal_in_chinese(bundle, tmp_path):
    (tmp_path / "grpo-skill").mkdir()
    (tmp_path / "grpo-skill" / "SKILL.md").write_text("other", encoding="utf-8")
    result = CliRunner().invoke(cli.main, ["--lang", "zh-CN", "skill", "install", "--dest", str(tmp_path)])
    assert result.exit_code == 1
    assert "已存在，且与本版本的技能不同；加 --force 可替换它" in result.output


def test_force_replaces_a_link_without_touching_what_it_points_to(bundle, tmp_path):
    elsewhere = tmp_path / "checkout"
    elsewhere.mkdir()
    (elsewhere / "SKILL.md").write_text("a developer's working copy", encoding="utf-8")
    dest = tmp_path / "skills"
    dest.mkdir()
    (dest / "grpo-skill").symlink_to(elsewhere, target_is_directory=True)
    assert install("--dest", str(dest))[0] == 1
    assert install("--dest", str(dest), "--force")[0] == 0
    assert not (dest / "grpo-skill").is_symlink()
    assert (elsewhere / "SKILL.md").read_text(encoding="utf-8") == "a developer's working copy"


def test_default_destination_is_the_personal_claude_skills_folder(bundle, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, output = install()
    assert code == 0, output
    assert (tmp_path / ".claude" / "skills" / "grpo-skill" / "SKILL.md").is_file()


@pytest.mark.parametrize("frontmatter, problem", [
    ("# no frontmatter\n", "no YAML frontmatter"),
    ("---\nname: GRPO Skill\n---\n", "not a valid skill name"),
    ("---\ndescription: no name\n---\n", "not a valid skill name"),
    ("---\nname: " + "a" * 65 + "\n---\n", "not a valid skill name"),
])
def test_a_skill_md_without_a_valid_name_is_refused(bundle, tmp_path, frontmatter, problem):
    (bundle / "SKILL.md").write_text(frontmatter, encoding="utf-8")
    code, output = install("--dest", str(tmp_path / "skills"))
    assert code == 1 and problem in output
    assert not (tmp_path / "skills" / "grpo-skill").exists()


def test_dest_that_is_a_file_is_refused(bundle, tmp_path):
    (tmp_path / "file").write_text("")
    code, output = install("--dest", str(tmp_path / "file"))
    assert code != 0


def test_the_folder_is_the_frontmatter_name(bundle, tmp_path):
    (bundle / "SKILL.md").write_text(SKILL_MD.replace("name: grpo-skill", "name: other-name"), encoding="utf-8")
    assert install("--dest", str(tmp_path))[0] == 0
    assert (tmp_path / "other-name" / "SKILL.md").is_file()


# --- the real files ---------------------------------------------------------------------------------------


def test_the_shipped_skills_install_under_the_name_the_spec_requires(tmp_path):
    """With the real SKILL.md (and its zh-CN twin, once written): the folder is the frontmatter name."""
    for lang in i18n.LANGS:
        if not (skillfiles.source_dir(lang) / "SKILL.md").is_file():
            continue  # the twin is written by the SKILL.md work; nothing to install yet
        installed = skillfiles.install(tmp_path / lang, lang)
        assert installed.path == tmp_path / lang / "grpo-skill"
        assert installed.path.name == skillfiles.skill_name(installed.path / "SKILL.md")
        assert "SKILL.md" in installed.files


SHIPPED = ["pyproject.toml", "skill", "plugins", "templates", "i18n", "references", "SKILL.md", "README.md"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the sources (building in the checkout would leave build/ behind)."""
    source = tmp_path_factory.mktemp("source")
    for name in SHIPPED:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif path.is_file():
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return next(out.glob("grpo_skill-*.whl"))


def test_the_wheel_carries_the_skill_and_the_catalogs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "grpo_skill/_bundle/i18n/locale/zh_CN/LC_MESSAGES/grpo_skill.mo" in names
    assert "grpo_skill/templates/project/_i18n/README.zh-CN.md.jinja" in names
    assert not any(name.endswith((".po", ".pot")) for name in names)
    assert not any(name.startswith("grpo_skill/_bundle/") and name.endswith(".py") for name in names)
    for lang in i18n.LANGS:
        relative = skillfiles.source_dir(lang).relative_to(skillfiles.bundle_dir())
        shipped = REPO / relative / "SKILL.md"
        if shipped.is_file():
            assert f"grpo_skill/_bundle/{(relative / 'SKILL.md').as_posix()}" in names
            for reference in sorted((REPO / relative / "references").glob("*.md")):
                assert f"grpo_skill/_bundle/{(relative / 'references' / reference.name).as_posix()}" in names


def test_an_unpacked_wheel_finds_its_catalogs_and_skill(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {key: value for key, value in os.environ.items() if key not in i18n.LOCALE_VARIABLES}
    env.update(PYTHONPATH=str(site), LANG="zh_CN.UTF-8")  # before the editable install on sys.path
    script = (
        "from grpo_skill import skillfiles, i18n; "
        "print(skillfiles.bundle_dir()); print(i18n._('Usage:'))"
    )
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    bundle_dir, usage = result.stdout.splitlines()
    assert Path(bundle_dir) == site / "grpo_skill" / "_bundle"
    assert usage == "用法:"
    if (REPO / "SKILL.md").is_file():
        result = subprocess.run([sys.executable, "-m", "grpo_skill.cli", "skill", "install", "--dest", str(tmp_path),
                                 "--lang", "en"],
                                env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "grpo-skill" / "SKILL.md").read_bytes() == (REPO / "SKILL.md").read_bytes()
