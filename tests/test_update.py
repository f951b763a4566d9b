"""`grpo-skill update`: the template history shipped with the package, what `new` records, and copier's
three-way update of a project the user has edited."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from grpo_skill import cli, history, skillfiles

from support import git, template_versions

REPO = Path(__file__).resolve().parents[1]
B_LINE = "# B: the new template version adds this line"


pytestmark = pytest.mark.usefixtures("english")  # messages compared as English text


def grpo_skill(*args):
    result = CliRunner().invoke(cli.main, list(args), prog_name="grpo-skill")
    return result.exit_code, result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file, .git included: a refused or dry-run update must leave all of it alone."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def answers(project: Path) -> dict:
    return yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))


# --- the shipped history -------------------------------------------------------------------------------------


def test_the_shipped_bundle_holds_exactly_this_template(tmp_path):
    assert history.check() == [], "commit templates/project, then run: python -m grpo_skill.history --write"
    manifest = history.load_manifest()
    clone = tmp_path / "clone"
    git("clone", "-q", str(history.bundle_path()), str(clone), cwd=tmp_path)
    assert git("rev-parse", "HEAD", cwd=clone).strip() == manifest["commit"]
    assert history.folder_files(clone) == manifest["files"] == history.folder_files(history.template_dir())


def test_history_check_names_a_template_file_that_differs(tmp_path, monkeypatch):
    copy = tmp_path / "templates"
    shutil.copytree(history.templates_dir(), copy)
    (copy / "project" / "train.py.jinja").write_text("edited\n", encoding="utf-8")
    monkeypatch.setattr(history, "templates_dir", lambda: copy)
    assert history.check() == [
        f"templates/project/train.py.jinja differs from the bundled commit {history.load_manifest()['ref']}"]
    assert history.main(["--check"]) == 1


# --- two template versions, as two grpo-skill releases would ship them ----------------------------------------


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """Version A: this template; version B: A plus one line at the end of train.py."""
    def add_line(repo):
        train = repo / "train.py.jinja"
        train.write_text(train.read_text(encoding="utf-8").rstrip("\n") + f"\n{B_LINE}\n", encoding="utf-8")

    return template_versions(tmp_path_factory.mktemp("versions"), add_line)


def install_version(monkeypatch, folder: Path) -> dict:
    monkeypatch.setattr(history, "templates_dir", lambda: folder)
    return history.load_manifest()


@pytest.fixture
def project(tmp_path, monkeypatch, versions):
    """A tiny project made with version A, edited and committed the way a user would."""
    install_version(monkeypatch, versions["A"])
    code, output = grpo_skill("new", "demo", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0, output
    project = tmp_path / "demo"
    train = project / "train.py"
    train.write_text("# my notes on this run\n" + train.read_text(encoding="utf-8"), encoding="utf-8")
    config = project / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "max_steps = 60" in text
    config.write_text(text.replace("max_steps = 60", "max_steps = 7"), encoding="utf-8")
    git("commit", "-qam", "my settings", cwd=project)
    return project


def test_new_records_the_template_version_portably_and_commits_the_project(tmp_path, monkeypatch, versions):
    manifest = install_version(monkeypatch, versions["A"])
    code, output = grpo_skill("new", "fresh", "--preset", "tiny", "-o", str(tmp_path), "--json")
    assert code == 0, output
    project = tmp_path / "fresh"
    assert json.loads(output)["repository"] == "created"
    recorded = answers(project)
    assert recorded["_commit"] == manifest["ref"] and recorded["_src_path"] == history.SOURCE
    text = (project / ".copier-answers.yml").read_text(encoding="utf-8")
    assert str(REPO) not in text and str(tmp_path) not in text and str(Path.home()) not in text
    assert git("status", "--porcelain", cwd=project) == ""  # everything generated is in the first commit
    assert len(git("log", "--oneline", cwd=project).splitlines()) == 1
    for target in skillfiles.TARGETS:  # the skill, at this version, for an assistant opening the project
        copy = project / target / "grpo-skill"
        assert not copy.is_symlink()
        assert {name: path.read_bytes() for name, path in skillfiles.files_under(copy).items()} == {
            name: path.read_bytes() for name, path in skillfiles.skill_files("en").items()}


def test_a_chinese_project_carries_the_chinese_skill(tmp_path):
    code, output = grpo_skill("new", "zh", "--preset", "tiny", "--lang", "zh-CN", "-o", str(tmp_path))
    assert code == 0, output
    for target in skillfiles.TARGETS:
        assert (tmp_path / "zh" / target / "grpo-skill-zh-cn" / "SKILL.md").read_bytes() == \
            (REPO / "i18n" / "zh-CN" / "SKILL.md").read_bytes()
        assert not (tmp_path / "zh" / target / "grpo-skill").exists()


def test_a_project_inside_another_repository_is_left_to_its_owner(tmp_path):
    git("init", "-q", cwd=tmp_path)
    code, output = grpo_skill("new", "inner", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0
    assert "inside another git repository" in output
    assert not (tmp_path / "inner" / ".git").exists()


def test_a_project_that_the_repository_around_it_ignores_gets_its_own(tmp_path):
    git("init", "-q", cwd=tmp_path)
    (tmp_path / ".gitignore").write_text("runs/\n")
    code, output = grpo_skill("new", "inner", "--preset", "tiny", "-o", str(tmp_path / "runs"))
    assert code == 0 and "inside another git repository" not in output
    assert (tmp_path / "runs" / "inner" / ".git").is_dir()
    assert git("status", "--porcelain", cwd=tmp_path / "runs" / "inner") == ""  # committed: ready for update


def test_update_keeps_the_users_edits_and_brings_the_new_version(project, monkeypatch, versions):
    old = answers(project)["_commit"]
    (project / ".claude" / "skills" / "grpo-skill" / "SKILL.md").write_text("an older skill", encoding="utf-8")
    git("commit", "-qam", "an older copy of the skill", cwd=project)
    manifest = install_version(monkeypatch, versions["B"])

    before = snapshot(project)
    code, output = grpo_skill("update", str(project), "--dry-run", "--json")
    assert code == 0, output
    preview = json.loads(output)
    assert preview["dry_run"] and preview["status"] == "updated" and preview["conflicts"] == []
    assert {"train.py", ".copier-answers.yml", ".claude/skills/grpo-skill/SKILL.md"} <= set(preview["changed"])
    assert snapshot(project) == before  # --dry-run changed nothing, not even .git

    code, output = grpo_skill("update", str(project))
    assert code == 0, output
    assert f"Updated {project.resolve()} from template {old} to {manifest['ref']}:" in output
    train = (project / "train.py").read_text(encoding="utf-8")
    assert train.startswith("# my notes on this run\n")  # the user's edit
    assert train.rstrip().endswith(B_LINE)  # the template's change
    assert "max_steps = 7" in (project / "config.toml").read_text(encoding="utf-8")
    assert answers(project)["_commit"] == manifest["ref"] and answers(project)["_src_path"] == history.SOURCE
    assert (project / ".claude" / "skills" / "grpo-skill" / "SKILL.md").read_bytes() == (REPO / "SKILL.md").read_bytes()
    assert sorted(line[3:] for line in git("status", "--porcelain", cwd=project).splitlines()) == \
        sorted(preview["changed"])  # the dry run said what the update did

    git("commit", "-qam", "updated", cwd=project)
    code, output = grpo_skill("update", str(project))
    assert code == 0 and "is up to date" in output


def test_update_keeps_what_new_recorded_as_given_and_adds_no_record_to_a_project_made_before_it(
        tmp_path, monkeypatch, versions, tmp_path_factory):
    """given_keys (the settings `new` was given) stays through an update. A project made from a template without
    that answer updates to one with it cleanly and gains none: new --force over it then tells the user's values from
    the preset's as before, and backs up nothing."""
    template = history.template_dir()
    install_version(monkeypatch, versions["A"])
    code, output = grpo_skill("new", "recorded", "--preset", "tiny", "--set", "grpo.max_steps=7", "-o", str(tmp_path))
    assert code == 0, output
    assert answers(tmp_path / "recorded")["given_keys"] == ["grpo.max_steps"]
    install_version(monkeypatch, versions["B"])
    code, output = grpo_skill("update", str(tmp_path / "recorded"), "--json")
    assert code == 0 and json.loads(output)["conflicts"] == [], output
    assert answers(tmp_path / "recorded")["given_keys"] == ["grpo.max_steps"]

    # "A": the template as it was before given_keys; "B": this one
    earlier = tmp_path_factory.mktemp("before-given-keys") / "templates"
    shutil.copytree(template, earlier / "project", ignore=shutil.ignore_patterns("__pycache__"))
    settings = (earlier / "project" / "copier.yml").read_text(encoding="utf-8")
    (earlier / "project" / "copier.yml").write_text(settings[:settings.index("\ngiven_keys:")] + "\n",
                                                     encoding="utf-8")
    monkeypatch.setattr(history, "templates_dir", lambda: earlier)
    before = template_versions(earlier.parent, lambda repo: shutil.copyfile(template / "copier.yml",
                                                                            repo / "copier.yml"))
    install_version(monkeypatch, before["A"])
    code, output = grpo_skill("new", "older", "--preset", "tiny", "--set", "grpo.max_steps=7", "-o", str(tmp_path))
    assert code == 0, output
    project = tmp_path / "older"
    made = (project / ".copier-answers.yml").read_text(encoding="utf-8")
    assert "given_keys" not in made
    manifest = install_version(monkeypatch, before["B"])
    code, output = grpo_skill("update", str(project), "--json")
    assert code == 0, output
    assert json.loads(output)["conflicts"] == []
    updated = (project / ".copier-answers.yml").read_text(encoding="utf-8")
    without_version = re.compile(r"(?m)^_commit: .*\n")
    assert without_version.sub("", updated) == without_version.sub("", made)  # the version changed alone
    assert answers(project)["_commit"] == manifest["ref"]
    git("commit", "-qam", "updated", cwd=project)
    code, output = grpo_skill("new", "older", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path))
    assert code == 0, output
    result = json.loads(output)
    assert result["notes"] == [
        "the earlier project's grpo.max_steps = 7 is not carried over: this render takes the preset's values and this "
        "command's options; `grpo-skill set SECTION.KEY=VALUE` changes one setting of a project without rendering it "
        "again"]
    assert result["backed_up"] == []
    assert answers(project)["given_keys"] == []


def test_a_project_inside_a_larger_repository_updates_too(tmp_path, monkeypatch, versions):
    install_version(monkeypatch, versions["A"])
    git("init", "-q", cwd=tmp_path)
    assert grpo_skill("new", "inner", "--preset", "tiny", "-o", str(tmp_path / "runs"))[0] == 0
    project = tmp_path / "runs" / "inner"
    (project / "config.toml").write_text(
        (project / "config.toml").read_text(encoding="utf-8").replace("max_steps = 60", "max_steps = 7"))
    git("add", "-A", cwd=tmp_path)
    git("commit", "-qm", "runs", cwd=tmp_path)
    install_version(monkeypatch, versions["B"])
    code, output = grpo_skill("update", str(project), "--json")
    assert code == 0, output
    assert sorted(json.loads(output)["changed"]) == [".copier-answers.yml", "train.py"]  # relative to the project
    assert (project / "train.py").read_text(encoding="utf-8").rstrip().endswith(B_LINE)
    assert "max_steps = 7" in (project / "config.toml").read_text(encoding="utf-8")


def test_what_cannot_be_merged_is_marked_inline(project, monkeypatch, versions):
    train = project / "train.py"
    train.write_text(train.read_text(encoding="utf-8").rstrip("\n") + "\n# my own last line\n", encoding="utf-8")
    git("commit", "-qam", "a last line of my own", cwd=project)
    install_version(monkeypatch, versions["B"])
    code, output = grpo_skill("update", str(project))
    assert code == 1
    text = train.read_text(encoding="utf-8")
    assert "<<<<<<< before updating" in text and "# my own last line" in text and B_LINE in text
    line = text.splitlines().index("<<<<<<< before updating") + 1
    assert "! train.py" in output and f"1 file(s) with conflicts (marked '!'), the first at train.py:{line}" in output

    # left as it is, and even committed so: check and a second update name the marker instead of saying OK
    # (train.py would then die in a SyntaxError) or merging over it
    refusal = f"{project / 'train.py'}:{line}: a conflict that `grpo-skill update` left unmerged; resolve the conflicts"
    code, output = grpo_skill("check", str(project))
    assert code == 1 and refusal in output and len(output.strip().splitlines()) == 1
    git("commit", "-qam", "the update, its conflict unresolved", cwd=project)
    before = snapshot(project)
    code, output = grpo_skill("update", str(project))
    assert code == 1 and refusal in output and len(output.strip().splitlines()) == 1
    assert snapshot(project) == before


def made_by_another_grpo_skill(project: Path) -> None:
    path = project / ".copier-answers.yml"
    path.write_text(re.sub(r"^_commit: .*$", "_commit: 0123abc", path.read_text(), count=1, flags=re.MULTILINE))
    git("commit", "-qam", "x", cwd=project)


@pytest.mark.parametrize("spoil, message", [
    (made_by_another_grpo_skill, "was made from template version 0123abc, which this grpo-skill does not know"),
    (lambda p: shutil.rmtree(p / ".git"), "is not in a git repository; run: git init"),
    (lambda p: (p / "train.py").write_text("uncommitted\n"), "has uncommitted changes (train.py); commit or stash "
                                                              "them"),
    (lambda p: (p / "evaluate.py").unlink() or (p / "sft.py").unlink(), "uncommitted changes (evaluate.py, sft.py)"),
    (lambda p: (p / "rewards.py").unlink() or git("commit", "-qam", "x", cwd=p) or (p / "rewards.py").write_text("#"),
     "has uncommitted changes (rewards.py)"),  # untracked, where the template writes a file
    (lambda p: (p / ".copier-answers.yml").write_text("lang: en\n  preset: [tiny\n") or git("commit", "-qam", "x", cwd=p),
     ".copier-answers.yml:2: not valid YAML"),
    (lambda p: (p / ".copier-answers.yml").unlink() or git("commit", "-qam", "x", cwd=p),
     "has no .copier-answers.yml"),
    (lambda p: (p / ".copier-answers.yml").write_text("preset: tiny\n") or git("commit", "-qam", "x", cwd=p),
     "does not record which template version made it"),
])
def test_update_refuses_what_it_cannot_merge_and_changes_nothing(project, monkeypatch, versions, spoil, message):
    spoil(project)
    install_version(monkeypatch, versions["B"])
    before = snapshot(project)
    code, output = grpo_skill("update", str(project))
    assert code == 1 and message in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1
    assert snapshot(project) == before


def test_an_update_that_cannot_write_a_file_changes_nothing(project, monkeypatch, versions):
    from support import unwritable

    install_version(monkeypatch, versions["B"])
    stale = project / "README.md"  # a tracked file touched, not changed: git's stat data of it goes stale, which
    os.utime(stale, (stale.stat().st_atime, stale.stat().st_mtime + 5))  # a plain `git status` would write back
    before = snapshot(project)
    with unwritable(project / "train.py"):
        code, output = grpo_skill("update", str(project))
    assert code == 1 and "train.py: " in output and "nothing was changed" in output
    assert len(output.strip().splitlines()) == 1 and "Traceback" not in output
    assert snapshot(project) == before


def test_untracked_outputs_do_not_block_an_update_and_are_left_alone(project, monkeypatch, versions):
    """What the README's own `train.py --output-dir quick` leaves is not the template's: update goes ahead."""
    (project / "quick").mkdir()
    (project / "quick" / "metrics.jsonl").write_text('{"step": 1}\n')
    install_version(monkeypatch, versions["B"])
    code, output = grpo_skill("update", str(project), "--json")
    assert code == 0, output
    assert "quick/metrics.jsonl" not in json.loads(output)["changed"]
    assert (project / "train.py").read_text(encoding="utf-8").rstrip().endswith(B_LINE)
    assert (project / "quick" / "metrics.jsonl").read_text() == '{"step": 1}\n'


def test_a_template_with_edits_not_in_the_history_makes_a_project_without_a_version(tmp_path, monkeypatch):
    copy = tmp_path / "templates"
    shutil.copytree(history.templates_dir(), copy)
    (copy / "project" / "README.md.jinja").write_text("an edit not committed yet\n", encoding="utf-8")
    monkeypatch.setattr(history, "templates_dir", lambda: copy)
    code, output = grpo_skill("new", "dev", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0, output
    recorded = answers(tmp_path / "dev")
    assert "_commit" not in recorded and "_src_path" not in recorded  # no version to merge from, no machine path


def test_a_project_from_the_previous_template_commit_updates_to_this_one(tmp_path):
    """The real shipped history: a project made from its second-newest commit updates cleanly to the newest."""
    import copier

    from grpo_skill import generator

    manifest = history.load_manifest()
    clone = tmp_path / "clone"
    git("clone", "-q", str(history.bundle_path()), str(clone), cwd=tmp_path)
    commits = git("rev-list", "--first-parent", "HEAD", cwd=clone).split()  # the main line: merged branches aside
    assert len(commits) >= 2 and commits[0] == manifest["commit"]
    project = tmp_path / "older"
    with history.git_reads_bundle():
        copier.run_copy(history.SOURCE, project, vcs_ref=commits[1], data=generator.answers("older", "tiny"),
                        defaults=True, quiet=True, unsafe=True, exclude=(".git",))
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("commit", "-qm", "older", cwd=project)
    code, output = grpo_skill("update", str(project), "--json")
    assert code == 0, output
    result = json.loads(output)
    assert result["conflicts"] == [] and result["to"] == manifest["ref"]
