"""The project template's git history, shipped with the package so that `grpo-skill update` can merge.

copier updates a project with a three-way merge: it renders the template at the commit the project was made
from, diffs that against the project, and applies the diff to the template's current version. It needs the
template as a git repository. The package carries one: ``templates/project.bundle``, the history of
``templates/project`` cut out of this repository (``git subtree split``), and ``templates/project.history.json``,
its newest commit, the git ids of that commit's files, and every commit of its history. Both are made by::

    python -m grpo_skill.history --write    # after committing a change under templates/project
    python -m grpo_skill.history --check    # exit 1 when templates/project differs from the bundle

``new`` renders from the template folder and records the bundle's commit only when the folder is exactly
that commit (a development checkout with uncommitted template edits makes projects that cannot be updated).
Projects record the template as :data:`SOURCE`, never a path of the machine that made them; while copier
runs, git is told to read that name from the installed bundle (:func:`git_reads_bundle`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from ..core.errors import UserError
from ..core.i18n import _

TEMPLATE = "project"
PREFIX = "templates/project"  # the template's folder in this repository
# What .copier-answers.yml records as _src_path: copier reads "git+..." as a git URL without touching the
# file system; git_reads_bundle() maps it to the bundle of whichever grpo-skill runs.
SOURCE = "git+grpo-skill://templates/project"
GIT_URL = SOURCE.removeprefix("git+")
IGNORED_PARTS = ("__pycache__", ".git")
IGNORED_SUFFIXES = (".pyc",)


class HistoryError(UserError):
    """The shipped template history is missing or cannot be made."""


def templates_dir() -> Path:
    return Path(str(resources.files("grpo_skill.templates")))


def template_dir() -> Path:
    return templates_dir() / TEMPLATE


def bundle_path() -> Path:
    return templates_dir() / f"{TEMPLATE}.bundle"


def manifest_path() -> Path:
    return templates_dir() / f"{TEMPLATE}.history.json"


def load_manifest(path: Path | None = None) -> dict | None:
    path = path or manifest_path()
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def blob_id(data: bytes) -> str:
    """The id git gives a file's content (``git hash-object``), so the folder compares with a commit without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def folder_files(folder: Path) -> dict[str, str]:
    """Relative path -> git blob id of every file under ``folder`` that git would track."""
    return {
        path.relative_to(folder).as_posix(): blob_id(path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not any(part in IGNORED_PARTS for part in path.relative_to(folder).parts)
        and not path.name.endswith(IGNORED_SUFFIXES)
    }


def knows(manifest: dict, commit: str) -> bool:
    """Whether ``commit`` (full, or abbreviated as copier records it) is in the shipped history."""
    return len(commit) >= 4 and any(known.startswith(commit) for known in manifest.get("history", ()))


def current_commit(folder: Path | None = None, manifest: dict | None = None) -> str | None:
    """The bundled commit whose files ``folder`` (the template) holds exactly, as copier names it; else None."""
    manifest = manifest if manifest is not None else load_manifest()
    if not manifest:
        return None
    return manifest["ref"] if folder_files(folder or template_dir()) == manifest["files"] else None


def checkout(commit: str, destination: Path) -> bool:
    """Write the template as it was at ``commit`` (a version of the shipped history, as a project records it) into
    ``destination``, a new folder, without git's own files; False where this installation cannot give it."""
    from .git import installed

    manifest = load_manifest()
    if not manifest or not knows(manifest, commit) or not bundle_path().is_file() or not installed():
        return False
    with tempfile.TemporaryDirectory(prefix="grpo-skill-template-") as scratch:
        if _git_status("clone", "-q", "--no-checkout", str(bundle_path()), scratch) != 0:
            return False
        destination.mkdir(parents=True)
        return _git_status("--work-tree", str(destination), "checkout", "-q", commit, "--", ".", cwd=scratch) == 0


@contextlib.contextmanager
def git_reads_bundle(bundle: Path | None = None, git_config: dict[str, str] | None = None, **env: str):
    """While inside, git (and so copier) clones :data:`SOURCE` from ``bundle``, copier caches nothing, and
    ``env`` (and ``git_config``, as GIT_CONFIG_* variables) is set for the git commands copier runs."""
    bundle = Path(bundle or bundle_path()).resolve()
    count = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    settings = {f"url.{bundle.as_posix()}.insteadOf": GIT_URL, **(git_config or {})}
    extra = {"GIT_CONFIG_COUNT": str(count + len(settings)), **env}
    for index, (key, value) in enumerate(settings.items(), start=count):
        extra[f"GIT_CONFIG_KEY_{index}"], extra[f"GIT_CONFIG_VALUE_{index}"] = key, value
    saved = {key: os.environ.get(key) for key in [*extra, "COPIER_CACHE_DIR"]}
    from plumbum import local  # copier runs git through plumbum, which keeps its own copy of the environment

    with tempfile.TemporaryDirectory(prefix="grpo-skill-copier-") as cache:
        os.environ.update(extra, COPIER_CACHE_DIR=cache)
        try:
            with local.env(**extra):
                yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


# --- making the bundle (maintainers, in a checkout) ---------------------------------------------------------


def _git(*args: str, cwd: Path | str | None = None) -> str:
    from .git import git

    return git(args, cwd, error=HistoryError).stdout.strip()


def _git_status(*args: str, cwd: Path | str | None = None) -> int:
    from .git import git

    return git(args, cwd, check=False).returncode


def checkout_root() -> Path:
    """The repository this package is a checkout of (its templates/ folder is the package's)."""
    root = templates_dir().resolve().parent
    if not (root / ".git").exists() or not (root / PREFIX).is_dir():
        raise HistoryError(_("{path} is not a grpo-skill checkout; run this in the repository").format(path=root))
    return root


def build(root: Path, out_dir: Path) -> dict:
    """Write ``project.bundle`` and ``project.history.json`` for the committed history of templates/project."""
    if _git("status", "--porcelain", "--", PREFIX, cwd=root):
        raise HistoryError(_("{prefix} has uncommitted changes; commit them first").format(prefix=PREFIX))
    return write_bundle(root, _git("subtree", "split", "-q", f"--prefix={PREFIX}", "HEAD", cwd=root), out_dir)


def write_bundle(repo: Path, commit: str, out_dir: Path) -> dict:
    """Bundle the history of ``commit`` (a template at the root of ``repo``) into ``out_dir``, with its manifest.
    Refuses a history that lost the commit of the bundle already there."""
    previous = load_manifest(out_dir / f"{TEMPLATE}.history.json")
    with tempfile.TemporaryDirectory(prefix="grpo-skill-history-") as scratch:
        bare = Path(scratch) / "template.git"
        _git("init", "-q", "--bare", str(bare))
        _git("push", "-q", str(bare), f"{commit}:refs/heads/main", cwd=repo)
        split = _git("rev-parse", "main", cwd=bare)
        _git("symbolic-ref", "HEAD", "refs/heads/main", cwd=bare)
        if previous and previous["commit"] != split:
            # Every project made from an earlier bundle names a commit that must stay in this one.
            known = _git_status("merge-base", "--is-ancestor", previous["commit"], split, cwd=bare) == 0
            if not known:
                raise HistoryError(
                    _("the template history was rewritten: {old} (the shipped bundle's newest commit) is not in "
                      "the history of {new}; projects made from it could not be updated").format(
                        old=previous["commit"], new=split)
                )
        files = {}
        for line in _git("ls-tree", "-r", split, cwd=bare).splitlines():
            meta, path = line.split("\t", 1)
            files[path] = meta.split()[2]
        bundle = out_dir / f"{TEMPLATE}.bundle"
        if not (previous and previous["commit"] == split and bundle.is_file()):
            _git("bundle", "create", "-q", str(Path(scratch) / "out.bundle"), "HEAD", "main", cwd=bare)
            shutil.move(str(Path(scratch) / "out.bundle"), bundle)
        clone = Path(scratch) / "clone"
        _git("clone", "-q", str(bundle), str(clone))
        ref = _git("describe", "--tags", "--always", split, cwd=clone)  # what copier records as _commit
        commits = _git("rev-list", split, cwd=bare).split()  # every version a project can have been made from
    manifest = {"commit": split, "ref": ref, "files": files, "history": commits}
    (out_dir / f"{TEMPLATE}.history.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                                                      encoding="utf-8")
    return manifest


def check() -> list[str]:
    """What is wrong with the shipped history: empty when the bundle holds this template exactly."""
    manifest = load_manifest()
    if manifest is None or not bundle_path().is_file():
        return [_("{path} is missing").format(path=bundle_path() if manifest else manifest_path())]
    problems = []
    local = folder_files(template_dir())
    for path in sorted(set(local) | set(manifest["files"])):
        if local.get(path) != manifest["files"].get(path):
            problems.append(_("{prefix}/{path} differs from the bundled commit {commit}").format(
                prefix=PREFIX, path=path, commit=manifest["ref"]))
    return problems


def main(argv=None) -> int:
    import argparse  # `new` and `update` import this module; only its command line needs argparse

    parser = argparse.ArgumentParser(prog="python -m grpo_skill.history", description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="exit 1 when the bundle is not this template")
    action.add_argument("--write", action="store_true", help="rebuild the bundle from the committed history")
    args = parser.parse_args(argv)
    try:
        if args.write:
            manifest = build(checkout_root(), templates_dir())
            print(f"{bundle_path()}: {manifest['commit']} ({len(manifest['files'])} files)")
            return 0
        problems = check()
    except HistoryError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("commit templates/project, then run: python -m grpo_skill.history --write", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
