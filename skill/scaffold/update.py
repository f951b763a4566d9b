"""`grpo-skill update`: bring a generated project to the installed template version, keeping the user's edits.

copier's own update does the work (a three-way merge between the template version the project was made from,
the project as it is, and the template now; conflicts are marked inline). It needs the project in git, clean,
and its ``.copier-answers.yml`` naming the template version: ``new`` records it (:func:`record_origin`) and
makes the project a git repository with a first commit (:func:`start_repository`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..core import __version__
from . import history, skillfiles
from .git import git, installed as git_installed
from ..core.errors import UserError, home_expanded, shown_path
from ..core.i18n import _

ANSWERS_FILE = ".copier-answers.yml"
ORIGIN_KEYS = ("_commit", "_src_path")
GIT_IDENTITY = ("-c", "user.name=grpo-skill", "-c", "user.email=grpo-skill@localhost")
# the first line of a conflict copier (conflict="inline", through git merge-file) leaves: "<<<<<<< before updating"
CONFLICT_START = re.compile(r"<{7}(?: |$)")


class UpdateError(UserError):
    """The project cannot be updated as it is; nothing was changed."""


@dataclass
class UpdateResult:
    project: Path
    old: str | None
    new: str
    changed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    first_conflict: str | None = None  # FILE:LINE of the first conflict marker
    dry_run: bool = False

    @property
    def status(self) -> str:
        return "conflicts" if self.conflicts else ("updated" if self.changed else "unchanged")


# --- what `new` does ---------------------------------------------------------------------------------------


def write_origin(project: Path, ref: str | None) -> None:
    """Put ``_commit``/``_src_path`` after the answers file's header comment; remove both when ``ref`` is None."""
    import yaml

    answers = Path(project) / ANSWERS_FILE
    lines = [line for line in answers.read_text(encoding="utf-8").splitlines(keepends=True)
             if not line.startswith(tuple(f"{key}:" for key in ORIGIN_KEYS))]
    if ref:
        header = 0
        while header < len(lines) and lines[header].startswith("#"):
            header += 1
        lines[header:header] = [yaml.safe_dump({"_commit": ref, "_src_path": history.SOURCE}, sort_keys=False)]
    answers.write_text("".join(lines), encoding="utf-8")


def record_origin(project: str | Path, template: Path | None = None) -> str | None:
    """Write the template version into a new project's answers file, or, when the template folder is not a
    bundled commit (a development checkout), leave no ``_commit``/``_src_path`` at all. Returns the version."""
    ref = history.current_commit(template)
    write_origin(Path(project), ref)
    return ref


def _git(args, cwd, check=True) -> subprocess.CompletedProcess:
    return git(args, cwd, check=check, error=UpdateError)


def _work_tree(path: Path) -> Path | None:
    result = _git(["rev-parse", "--show-toplevel"], path, check=False)
    return Path(result.stdout.strip()) if result.returncode == 0 else None


def _has_identity(cwd: Path) -> bool:
    return bool(_git(["config", "user.email"], cwd, check=False).stdout.strip())


def _identity(cwd: Path) -> tuple[str, ...]:
    """Commit as the user; as grpo-skill where git knows no user (a fresh machine, CI)."""
    return () if _has_identity(cwd) else GIT_IDENTITY


def _copier_identity(cwd: Path) -> dict[str, str]:
    """copier commits in scratch repositories with the user's git identity; lend one where there is none."""
    if _has_identity(cwd):
        return {}
    return {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
            for what, value in (("NAME", "grpo-skill"), ("EMAIL", "grpo-skill@localhost"))}


def _ignored(path: Path) -> bool:
    """Whether the repository around ``path`` ignores it (its .gitignore, info/exclude or global excludes)."""
    try:
        return _git(["check-ignore", "-q", "--", "."], path, check=False).returncode == 0
    except (UpdateError, OSError):
        return False


def start_repository(project: str | Path, files: list[str]) -> str:
    """Make a new project a git repository with ``files`` in its first commit, so that `update` can merge later.

    Returns what happened: "created", "kept" (the project's own repository, from before a `new --force`: the
    changes are left for the user to review and commit), "inside" (already in someone's repository: left to the
    user to commit), "no-git", or "failed" (git refused; the project itself is complete).
    """
    project = Path(project)
    if not git_installed():
        return "no-git"
    top = _work_tree(project)
    if top is not None and top.resolve() == project.resolve():
        return "kept"
    if top is not None and not _ignored(project):
        return "inside"
    try:  # no repository around it, or one that ignores it (e.g. a runs/ folder): the project gets its own
        _git(["init", "-q"], project)
        _git(["add", "--", *files], project)
        _git([*_identity(project), "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m",
              f"New GRPO project from grpo-skill {__version__}"], project)
    except (UpdateError, OSError):
        return "failed"
    return "created"


# --- conflicts left in the project ---------------------------------------------------------------------------


def generated_files() -> list[str]:
    """The project files the template renders (and so the ones update merges), relative to the project: the
    template's files as copier names them, less what its copier.yml excludes."""
    import yaml

    manifest = history.load_manifest()
    names = manifest["files"] if manifest else history.folder_files(history.template_dir())
    settings = yaml.safe_load((history.template_dir() / "copier.yml").read_text(encoding="utf-8"))
    excluded, suffix = set(settings.get("_exclude", [])), settings.get("_templates_suffix", ".jinja")
    files = []
    for name in names:
        if excluded & set(name.split("/")):
            continue
        name = name.replace("{{_copier_conf.answers_file}}", ANSWERS_FILE)
        files.append(name.removesuffix(suffix))
    return sorted(files)


def first_conflict(project: str | Path, files: list[str] | None = None) -> str | None:
    """``FILE:LINE`` of the first conflict marker left in ``files`` (default: the generated ones), or None."""
    for name in files if files is not None else generated_files():
        path = Path(project) / name
        if not path.is_file():
            continue
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if CONFLICT_START.match(line):
                    return f"{name}:{number}"
    return None


def refuse_conflicts(project: str | Path) -> None:
    """An UpdateError naming the first conflict marker that an update left in the project, if any."""
    where = first_conflict(project)
    if where:
        where = shown_path(Path(project) / where)  # FILE:LINE from the current folder
        raise UpdateError(_("{where}: a conflict that `grpo-skill update` left unmerged; resolve the conflicts "
                            "(keep the lines you want, remove the <<<<<<< ======= >>>>>>> lines), then "
                            "commit").format(where=where))


# --- update ------------------------------------------------------------------------------------------------


def _answers(project: Path) -> dict:
    import yaml

    path = project / ANSWERS_FILE
    if not path.is_file():
        raise UpdateError(_("{path} has no {file}: it was not made by grpo-skill new").format(
            path=project, file=ANSWERS_FILE))
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{shown_path(path)}:{mark.line + 1}" if mark is not None else shown_path(path)
        raise UpdateError(_("{where}: not valid YAML ({reason}); restore it with git checkout -- {file}, or from a "
                            "fresh `grpo-skill new` with the same answers").format(
            where=where, reason=getattr(error, "problem", None) or type(error).__name__, file=ANSWERS_FILE)) from None
    return data if isinstance(data, dict) else {}


def _status_paths(project: Path) -> list[tuple[str, str]]:
    """(status code, path relative to the project) of each changed or untracked file under the project."""
    # status --porcelain names paths from the repository's top
    status = _git(["status", "--porcelain", "--untracked-files=all", "--", "."], project).stdout
    top = _work_tree(project)
    prefix = project.resolve().relative_to(top.resolve()).as_posix() if top else "."
    found = []
    for line in status.splitlines():
        path = line[3:].split(" -> ")[-1].strip('"')
        found.append((line[:2], path.removeprefix(prefix + "/") if prefix != "." else path))
    return found


def blocking_changes(project: Path) -> list[str]:
    """What keeps update from merging: uncommitted changes to tracked files, and untracked files where the
    template writes one. Other untracked files (a run's outputs, such as quick/) are none of the template's
    business and stay as they are."""
    owned = set(generated_files())
    return sorted(path for code, path in _status_paths(project) if code != "??" or path in owned)


def _changes(project: Path) -> tuple[list[str], list[str]]:
    """(changed files, files with conflicts) in the project's work tree, relative to the project."""
    changed = [path for _code, path in _status_paths(project)]
    # copier records what it could not merge as unmerged index entries, like git merge does
    unmerged = _git(["ls-files", "--unmerged", "--", "."], project).stdout
    conflicts = {line.split("\t", 1)[1] for line in unmerged.splitlines() if "\t" in line}  # relative to project
    return sorted(set(changed)), sorted(conflicts)


@contextlib.contextmanager
def _untracked_hidden(project: Path):
    """git config that has git ignore the project's untracked files (update refused those the template writes,
    so these are the user's, e.g. a run's outputs): copier refuses a project with any untracked file. A
    temporary excludes file lists them after the user's own global excludes, which it stands in for."""
    untracked = [path for code, path in _status_paths(project) if code == "??"]
    if not untracked:
        yield {}
        return
    top = _work_tree(project)
    prefix = project.resolve().relative_to(top.resolve()).as_posix() if top else "."
    own = _git(["config", "--path", "core.excludesFile"], project, check=False).stdout.strip()
    own_file = home_expanded(own) if own else Path(
        os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git" / "ignore"
    try:
        lines = own_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    lines += ["/" + (path if prefix == "." else f"{prefix}/{path}") for path in untracked]
    with tempfile.NamedTemporaryFile("w", suffix=".gitignore", encoding="utf-8", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
    try:
        yield {"core.excludesFile": handle.name}
    finally:
        os.unlink(handle.name)


def _run_copier(project: Path, commit: str) -> None:
    from .copying import load

    copier = load()
    from copier.errors import CopierError
    from plumbum.commands.processes import ProcessExecutionError

    try:
        with _untracked_hidden(project) as hidden, history.git_reads_bundle(git_config=hidden,
                                                                            **_copier_identity(project)):
            copier.run_update(
                str(project), vcs_ref=commit,  # the template: _src_path, history.SOURCE
                data={"grpo_skill_version": __version__}, defaults=True, overwrite=True, skip_answered=True,
                unsafe=True,  # the template's only "unsafe" part is grpo_skill's TemplateTranslations
                quiet=True, conflict="inline",
                # copier checks the template out as a git worktree, whose .git is a file; the template's own
                # _exclude replaces copier's default one, which would leave it out
                exclude=(".git",),
            )
    except CopierError as error:
        raise UpdateError(_("copier could not update {path}: {error}").format(path=project, error=error)) from None
    except ProcessExecutionError as error:  # git failing inside copier
        lines = (error.stderr or "").strip().splitlines()
        raise UpdateError(_("copier could not update {path}: {error}").format(
            path=project, error=lines[-1] if lines else error)) from None


def _apply(project: Path, lang: str, manifest: dict) -> None:
    _run_copier(project, manifest["commit"])
    write_origin(project, manifest["ref"])  # whatever the answers file's template writes, keep these portable
    skillfiles.refresh_in_project(project, lang)


def _is_current(project: Path, answers: dict, manifest: dict) -> bool:
    return (str(answers.get("_commit")) in (manifest["ref"], manifest["commit"])
            and answers.get("grpo_skill_version") == __version__
            and skillfiles.project_copies_current(project, answers.get("lang", "en")))


def _check_writable(project: Path, changed: list[str]) -> None:
    """Refuse before copier starts when a file the update changes, or a folder it adds one to, cannot be
    written; probed by opening (nothing written), as permissions do not tell for root or a read-only mount."""
    for relative in changed:
        path = project / relative
        try:
            if path.is_file():
                path.open("r+b").close()
            else:
                folder = next(parent for parent in path.parents if parent.is_dir())
                tempfile.TemporaryFile(dir=folder).close()
        except OSError as error:
            raise UpdateError(_("{path}: {reason}; nothing was changed: make the project writable, then "
                                "update").format(path=shown_path(path), reason=error.strerror or error)) from None


def update(project: str | Path = ".", dry_run: bool = False) -> UpdateResult:
    """Update ``project`` in place (or, with ``dry_run``, a throw-away clone of it) and say what changed."""
    project = Path(project)
    if not project.is_dir():
        raise UpdateError(_("{path} is not a folder").format(path=project))
    answers = _answers(project)
    old = str(answers.get("_commit") or "")  # a hand-edited file may hold an unquoted, all-digit commit
    if not old or answers.get("_src_path") != history.SOURCE:
        raise UpdateError(
            _("{path} does not record which template version made it (made by an older grpo-skill, or from a "
              "development checkout), so there is nothing to merge from; compare it with a fresh "
              "`grpo-skill new` instead").format(path=project))
    manifest = history.load_manifest()
    if manifest is None or not history.bundle_path().is_file():
        raise UpdateError(_("this grpo-skill installation has no template history ({path}); reinstall it").format(
            path=history.bundle_path()))
    if not git_installed():
        raise UpdateError(_("git is not installed; grpo-skill update needs it (https://git-scm.com)"))
    top = _work_tree(project)
    if top is None:
        raise UpdateError(_("{path} is not in a git repository; run: git init && git add -A && git commit -m "
                            "'my project', then update").format(path=project))
    blocking = blocking_changes(project)
    if blocking:
        shown = ", ".join(blocking[:5]) + (_(" and {count} more").format(count=len(blocking) - 5)
                                            if len(blocking) > 5 else "")
        raise UpdateError(_("{path} has uncommitted changes ({files}); commit or stash them, then update").format(
            path=project, files=shown))
    refuse_conflicts(project)  # committed with the markers of an earlier update: merging again would nest them

    if not history.knows(manifest, old):
        raise UpdateError(
            _("{path} was made from template version {old}, which this grpo-skill does not know (a newer or a "
              "development grpo-skill made it); upgrade grpo-skill, then update").format(path=project, old=old))

    result = UpdateResult(project, old, manifest["ref"], dry_run=dry_run)
    if _is_current(project, answers, manifest):
        return result
    lang = answers.get("lang", "en")
    # First in a throw-away clone: what --dry-run reports, and a failure there leaves the project untouched.
    with tempfile.TemporaryDirectory(prefix="grpo-skill-update-") as scratch:
        clone = Path(scratch) / "clone"
        _git(["clone", "-q", "--no-hardlinks", str(top), str(clone)], scratch)
        copy = clone / project.resolve().relative_to(top.resolve())
        _apply(copy, lang, manifest)
        result.changed, result.conflicts = _changes(copy)
        result.first_conflict = first_conflict(copy, result.conflicts)
    if not dry_run:
        _check_writable(project, result.changed)  # all or nothing: copier stops at the first file it cannot write
        already_there = {path for code, path in _status_paths(project) if code == "??"}  # the user's, not ours
        _apply(project, lang, manifest)
        result.changed, result.conflicts = _changes(project)
        result.changed = [path for path in result.changed if path not in already_there]
        result.first_conflict = first_conflict(project, result.conflicts)
    return result
