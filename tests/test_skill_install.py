"""The skill inside the package, `grpo-skill skill install`, and the skill in a built wheel."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import grpo_skill
from grpo_skill import cli, i18n, skillfiles

REPO = Path(__file__).resolve().parents[1]
SOURCES = {"en": REPO, "zh-CN": REPO / "i18n" / "zh-CN"}  # where people edit the skill
NAMES = {"en": "grpo-skill", "zh-CN": "grpo-skill-zh-cn"}


pytestmark = pytest.mark.usefixtures("english")  # messages compared as English text


def install(*args, cwd=None):
    result = CliRunner().invoke(cli.main, ["skill", "install", *args], prog_name="grpo-skill")
    return result.exit_code, result.output


def tree(folder: Path) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in sorted(skillfiles.files_under(folder).items())}


def source_tree(lang: str) -> dict[str, bytes]:
    root = SOURCES[lang]
    files = {"SKILL.md": (root / "SKILL.md").read_bytes()}
    files.update({f"references/{p.name}": p.read_bytes() for p in sorted((root / "references").glob("*.md"))})
    return files


def entries(dest: Path, name: str) -> list[Path]:
    return [dest / target / name for target in (".claude/skills", ".agents/skills")]


# --- the packaged skill ------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_the_packaged_skill_is_the_sources(lang):
    folder = skillfiles.skill_dir(lang)
    assert folder == Path(grpo_skill.__file__).resolve().parent / ".agents" / "skills" / NAMES[lang]
    assert tree(folder) == source_tree(lang)
    assert set(skillfiles.skill_files(lang)) == set(source_tree(lang))


def quick_validate(skill_dir: Path) -> str | None:
    """The Agent Skills validator's rules (anthropics/skills, skill-creator/scripts/quick_validate.py)."""
    content = (skill_dir / "SKILL.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---", content, re.DOTALL)
    if not match:
        return "no frontmatter"
    meta = yaml.safe_load(match.group(1))
    unexpected = set(meta) - {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
    if unexpected:
        return f"unexpected keys {unexpected}"
    name, description = meta.get("name", ""), meta.get("description", "")
    if not isinstance(name, str) or not re.match(r"^[a-z0-9-]+$", name.strip()):
        return f"name {name!r} is not kebab-case"
    if name.startswith("-") or name.endswith("-") or "--" in name or len(name) > 64:
        return f"name {name!r}"
    if not isinstance(description, str) or "<" in description or ">" in description:
        return "description with angle brackets"
    if len(description.strip()) > 1024:
        return "description too long"
    compatibility = meta.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or not 0 < len(compatibility) <= 500):
        return "compatibility"
    return None


def line_frontmatter(skill_md: Path) -> dict[str, str]:
    """How library-skills reads a SKILL.md: ``key: value`` on one line each, quotes stripped."""
    text = skill_md.read_text(encoding="utf-8")
    found = {}
    for line in text[3:text.find("\n---", 3)].splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key.strip() in ("name", "description"):
            found[key.strip()] = value.strip().strip("\"'")
    return found


@pytest.mark.parametrize("lang", i18n.LANGS)
def test_each_skill_passes_the_validators_and_is_named_after_its_folder(lang):
    folder = skillfiles.skill_dir(lang)
    assert quick_validate(folder) is None
    meta = skillfiles.frontmatter(folder / "SKILL.md")
    assert meta["name"] == folder.name == NAMES[lang]
    # library-skills, which links libraries' skills into projects, reads one line per key
    assert line_frontmatter(folder / "SKILL.md") == {"name": meta["name"], "description": meta["description"]}


def test_the_validator_rules_catch_what_they_should(tmp_path):
    skill = tmp_path / "bad-skill"
    skill.mkdir()
    for frontmatter, problem in [
        ("name: bad-skill\ndescription: ends the thinking at </think>", "angle brackets"),
        ("name: Bad_Skill\ndescription: fine", "kebab-case"),
        ("name: bad-skill\ndescription: " + "x" * 1025, "too long"),
        ("name: bad-skill\ndescription: fine\nversion: 1", "unexpected"),
    ]:
        (skill / "SKILL.md").write_text(f"---\n{frontmatter}\n---\n# body\n", encoding="utf-8")
        assert problem in quick_validate(skill)


# --- skill install -------------------------------------------------------------------------------------------


def test_install_links_the_skill_into_claude_and_agents(tmp_path):
    code, output = install("--dest", str(tmp_path))
    assert code == 0, output
    for entry in entries(tmp_path, "grpo-skill"):
        assert entry.is_symlink() and not os.path.isabs(os.readlink(entry))  # relative: survives a moved home
        assert entry.resolve() == skillfiles.skill_dir("en").resolve()
        assert tree(entry) == source_tree("en")
        assert f"{entry}: linked to {skillfiles.skill_dir('en')}" in output
    assert sorted(p.name for p in (tmp_path / ".claude" / "skills").iterdir()) == ["grpo-skill"]  # no scratch left


def test_a_dest_that_did_not_exist_is_named(tmp_path):
    code, output = install("--dest", str(tmp_path / "projetc"))
    assert code == 0 and all(entry.is_symlink() for entry in entries(tmp_path / "projetc", "grpo-skill"))
    assert f"note: {tmp_path / 'projetc'} did not exist and was created; check that it is the --dest you meant" in (
        output)
    assert "did not exist" not in install("--dest", str(tmp_path / "projetc"))[1]  # it exists now


def test_installing_again_changes_nothing(tmp_path):
    install("--dest", str(tmp_path))
    links = [os.readlink(entry) for entry in entries(tmp_path, "grpo-skill")]
    code, output = install("--dest", str(tmp_path), "--json")
    assert code == 0
    assert [place["status"] for place in json.loads(output)["places"]] == ["unchanged", "unchanged"]
    assert [os.readlink(entry) for entry in entries(tmp_path, "grpo-skill")] == links


def test_the_default_destination_is_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert install()[0] == 0
    assert all(entry.is_symlink() for entry in entries(tmp_path, "grpo-skill"))


def test_the_chinese_twin_replaces_the_english_links(tmp_path):
    install("--dest", str(tmp_path))
    code, output = install("--dest", str(tmp_path), "--lang", "zh-CN", "--json")
    assert code == 0, output
    result = json.loads(output)
    assert result["name"] == "grpo-skill-zh-cn" and result["lang"] == "zh-CN"
    assert result["removed"] == [str(entry) for entry in entries(tmp_path, "grpo-skill")]
    for entry in entries(tmp_path, "grpo-skill-zh-cn"):
        assert tree(entry) == source_tree("zh-CN")
    assert not any(entry.exists() or entry.is_symlink() for entry in entries(tmp_path, "grpo-skill"))


def test_the_skill_language_follows_the_cli_language(tmp_path):
    result = CliRunner().invoke(cli.main, ["--lang", "zh-CN", "skill", "install", "--dest", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert all(entry.is_symlink() for entry in entries(tmp_path, "grpo-skill-zh-cn"))


def test_copy_mode_copies_and_a_later_install_links_again(tmp_path):
    code, output = install("--dest", str(tmp_path), "--copy")
    assert code == 0, output
    for entry in entries(tmp_path, "grpo-skill"):
        assert entry.is_dir() and not entry.is_symlink() and tree(entry) == source_tree("en")
    assert install("--dest", str(tmp_path), "--copy")[1].count("already holds this version") == 2
    code, output = install("--dest", str(tmp_path))  # an unedited copy carries nothing to lose: linked
    assert code == 0 and output.count("replaced by a link") == 2
    assert all(entry.is_symlink() for entry in entries(tmp_path, "grpo-skill"))


def test_a_differing_copy_is_kept_unless_forced(tmp_path):
    install("--dest", str(tmp_path), "--copy")
    claude, agents = entries(tmp_path, "grpo-skill")
    (agents / "SKILL.md").write_text("my own edits", encoding="utf-8")
    before = tree(claude), tree(agents)

    code, output = install("--dest", str(tmp_path))
    assert code == 1
    assert f"{agents} already exists and differs from this version's skill; pass --force" in output
    assert (tree(claude), tree(agents)) == before and not claude.is_symlink()  # nothing changed, not even claude/

    code, output = install("--dest", str(tmp_path), "--force")
    assert code == 0 and all(entry.is_symlink() for entry in (claude, agents))


def test_a_link_to_another_installation_needs_force_and_its_target_is_kept(tmp_path):
    elsewhere = tmp_path / "checkout"
    elsewhere.mkdir()
    (elsewhere / "SKILL.md").write_text("a developer's working copy", encoding="utf-8")
    claude, _agents = entries(tmp_path / "project", "grpo-skill")
    claude.parent.mkdir(parents=True)
    claude.symlink_to(elsewhere, target_is_directory=True)
    code, output = install("--dest", str(tmp_path / "project"))
    assert code == 1 and f"links to {elsewhere}" in output
    assert install("--dest", str(tmp_path / "project"), "--force")[0] == 0
    assert claude.resolve() == skillfiles.skill_dir("en").resolve()
    assert (elsewhere / "SKILL.md").read_text(encoding="utf-8") == "a developer's working copy"


def test_a_dangling_link_is_repaired(tmp_path):
    claude, agents = entries(tmp_path, "grpo-skill")
    claude.parent.mkdir(parents=True)
    claude.symlink_to(tmp_path / "an-uninstalled-venv" / "grpo-skill", target_is_directory=True)
    code, output = install("--dest", str(tmp_path))
    assert code == 0, output
    assert f"{claude}: replaced by a link" in output and tree(claude) == source_tree("en")


def test_where_links_cannot_be_made_the_skill_is_copied(tmp_path, monkeypatch):
    def no_links(*args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "symlink", no_links)
    code, output = install("--dest", str(tmp_path))
    assert code == 0, output
    assert "symbolic links cannot be made here, so the skill was copied" in output
    for entry in entries(tmp_path, "grpo-skill"):
        assert not entry.is_symlink() and tree(entry) == source_tree("en")


def test_a_skills_folder_as_dest_is_refused_with_the_right_one(tmp_path):
    code, output = install("--dest", str(tmp_path / ".claude" / "skills"))
    assert code == 1 and f"try --dest {tmp_path}" in output
    assert not (tmp_path / ".claude").exists()


def test_a_dest_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    code, output = install("--dest", str(tmp_path / "file"))
    assert code == 2 and "is a file" in output  # click refuses it before the command runs


@pytest.mark.parametrize("frontmatter, problem", [
    ("# no frontmatter\n", "no YAML frontmatter"),
    ("---\nname: GRPO Skill\n---\n", "not a valid skill name"),
    ("---\ndescription: no name\n---\n", "not a valid skill name"),
    ("---\nname: " + "a" * 65 + "\n---\n", "not a valid skill name"),
    ("---\nname: other-name\ndescription: x\n---\n", "differs from its folder 'grpo-skill'"),
])
def test_a_broken_packaged_skill_is_refused_and_nothing_written(tmp_path, monkeypatch, frontmatter, problem):
    packaged = tmp_path / "package" / "grpo-skill"
    packaged.mkdir(parents=True)
    (packaged / "SKILL.md").write_text(frontmatter, encoding="utf-8")
    monkeypatch.setattr(skillfiles, "SKILLS_DIR", tmp_path / "package")
    code, output = install("--dest", str(tmp_path / "project"))
    assert code == 1 and problem in output
    assert not (tmp_path / "project").exists()


# --- the skill in a wheel --------------------------------------------------------------------------------------

SHIPPED = ["pyproject.toml", "skill", "plugins", "templates", "i18n", "references", "SKILL.md", "README.md"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the sources with their symbolic links (building in the checkout would leave
    build/ behind)."""
    source = tmp_path_factory.mktemp("source")
    for name in SHIPPED:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(path, source / name)
    assert (source / "skill" / ".agents" / "skills" / "grpo-skill" / "SKILL.md").is_symlink()
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return next(out.glob("grpo_skill-*.whl"))


def test_the_wheel_carries_the_skills_as_files_where_tools_look(wheel):
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    for lang in i18n.LANGS:
        for relative, content in source_tree(lang).items():
            assert archive.read(f"grpo_skill/.agents/skills/{NAMES[lang]}/{relative}") == content
    record = next(name for name in names if name.endswith(".dist-info/RECORD"))
    recorded = {row[0] for row in csv.reader(archive.read(record).decode().splitlines()) if row}
    assert "grpo_skill/.agents/skills/grpo-skill/SKILL.md" in recorded  # what library-skills scans
    assert "grpo_skill/_bundle/i18n/locale/zh_CN/LC_MESSAGES/grpo_skill.mo" in names
    assert not any(name.startswith("grpo_skill/_bundle/") and name.endswith(".md") for name in names)  # one copy
    assert {"grpo_skill/templates/project.bundle", "grpo_skill/templates/project.history.json",
            "grpo_skill/templates/plugin/copier.yml", "grpo_skill/templates/plugin/.gitignore"} <= names
    assert not any(name.endswith((".po", ".pot")) for name in names)


def test_an_unpacked_wheel_links_its_own_skill_and_makes_updatable_projects(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {key: value for key, value in os.environ.items() if key not in i18n.LOCALE_VARIABLES}
    env.update(PYTHONPATH=str(site), LANG="zh_CN.UTF-8")  # before the editable install on sys.path
    probe = "from grpo_skill import skillfiles, i18n; print(skillfiles.skill_dir('en')); print(i18n._('Usage:'))"
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    packaged, usage = result.stdout.splitlines()
    assert Path(packaged) == site / "grpo_skill" / ".agents" / "skills" / "grpo-skill"
    assert usage == "用法:"

    project = tmp_path / "project"
    result = subprocess.run([sys.executable, "-m", "grpo_skill.cli", "skill", "install", "--dest", str(project),
                             "--lang", "en"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for entry in entries(project, "grpo-skill"):
        assert entry.resolve() == Path(packaged).resolve() and tree(entry) == source_tree("en")

    result = subprocess.run([sys.executable, "-m", "grpo_skill.cli", "new", "from-wheel", "--preset", "tiny",
                             "-o", str(tmp_path)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answers = yaml.safe_load((tmp_path / "from-wheel" / ".copier-answers.yml").read_text(encoding="utf-8"))
    manifest = json.loads((site / "grpo_skill" / "templates" / "project.history.json").read_text())
    assert answers["_commit"] == manifest["ref"] and answers["_src_path"] == "git+grpo-skill://templates/project"
