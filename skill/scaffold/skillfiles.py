"""The skill itself (SKILL.md + references/, English or the zh-CN twin) and where assistants find it.

The package ships each language as its own skill, where tools that collect libraries' skills look
(``library-skills``, the Agent Skills convention)::

    grpo_skill/.agents/skills/grpo-skill/          SKILL.md, references/   English
    grpo_skill/.agents/skills/grpo-skill-zh-cn/    SKILL.md, references/   Chinese twin

In the repository these folders hold symbolic links to the sources people edit (SKILL.md, references/ and
i18n/zh-CN/); a wheel carries the files. ``install`` links a skill into a project's ``.claude/skills`` (read
by Claude Code) and ``.agents/skills`` (read by other assistants), so that upgrading grpo-skill upgrades the
skill; a generated project gets copies, at the version it was made or last updated with.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UserError, home_expanded
from ..core.i18n import LANGS, _

SKILL_FILE = "SKILL.md"
REFERENCES = "references"
SKILLS_DIR = Path(__file__).resolve().parents[1] / ".agents" / "skills"
SKILL_NAMES = {"en": "grpo-skill", "zh-CN": "grpo-skill-zh-cn"}
# Where assistants read a project's skills: Claude Code reads only .claude/skills; others read .agents/skills.
TARGETS = (".claude/skills", ".agents/skills")
# Agent Skills spec: the name is the folder's name, lowercase letters, digits and single hyphens, <= 64.
SKILL_NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class InstallError(UserError):
    """The skill cannot be installed; the message says why and what to do."""


@dataclass(frozen=True)
class Placed:
    path: Path
    mode: str  # "link" or "copy"
    status: str  # "installed", "replaced" or "unchanged"


@dataclass(frozen=True)
class Installed:
    name: str
    lang: str
    source: Path
    files: list[str]
    places: list[Placed]
    removed: list[Path] = field(default_factory=list)  # links to the other language's skill, now replaced
    note: str | None = None  # why a copy was made where a link was asked for


def skill_dir(lang: str = "en") -> Path:
    """The packaged skill folder of ``lang``."""
    if lang not in LANGS:
        raise InstallError(_("--lang {lang!r} is not one of {choices}").format(lang=lang, choices=", ".join(LANGS)))
    return SKILLS_DIR / SKILL_NAMES[lang]


def skill_files(lang: str = "en") -> dict[str, Path]:
    """What a skill consists of: relative name -> file (SKILL.md and references/*), validated."""
    source = skill_dir(lang)
    skill_md = source / SKILL_FILE
    if not skill_md.is_file():
        raise InstallError(
            _("{path} is missing; this grpo-skill installation is incomplete, reinstall it").format(path=skill_md)
        )
    name = skill_name(skill_md)
    if name != source.name:
        raise InstallError(
            _("{path}: frontmatter name {name!r} differs from its folder {folder!r}; reinstall grpo-skill").format(
                path=skill_md, name=name, folder=source.name)
        )
    files = {SKILL_FILE: skill_md}
    references = source / REFERENCES
    if references.is_dir():
        for path in sorted(references.rglob("*")):
            relative = path.relative_to(references)
            if path.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                files[f"{REFERENCES}/{relative.as_posix()}"] = path
    return files


def frontmatter(skill_md: Path) -> dict:
    """The YAML between the leading ``---`` lines of a SKILL.md."""
    import yaml  # comes with copier

    text = skill_md.read_text(encoding="utf-8")
    match = re.match(r"\A---\r?\n(.*?)\r?\n---\r?\n", text, re.DOTALL)
    data = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(data, dict):
        raise InstallError(_("{path} has no YAML frontmatter between '---' lines").format(path=skill_md))
    return data


def skill_name(skill_md: Path) -> str:
    name = frontmatter(skill_md).get("name")
    if not isinstance(name, str) or len(name) > 64 or not SKILL_NAME_PATTERN.match(name):
        raise InstallError(
            _("{path}: frontmatter name {name!r} is not a valid skill name (a-z, 0-9 and '-', at most 64)").format(
                path=skill_md, name=name
            )
        )
    return name


def files_under(folder: Path) -> dict[str, Path]:
    """Relative name -> file, following links (the repository's skill folders are links)."""
    found = {}
    for parent, _dirs, names in os.walk(folder, followlinks=True):
        for name in names:
            path = Path(parent) / name
            found[path.relative_to(folder).as_posix()] = path
    return found


def _same_files(folder: Path, files: dict[str, Path]) -> bool:
    if not folder.is_dir():
        return False
    return set(files_under(folder)) == set(files) and all(
        (folder / name).read_bytes() == source.read_bytes() for name, source in files.items()
    )


def _same_folder(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _remove(entry: Path) -> None:
    """Remove a link or file (never what a link points to), or a real folder."""
    if entry.is_symlink() or entry.is_file():
        entry.unlink()
    elif entry.is_dir():
        shutil.rmtree(entry)


def _copy_skill(files: dict[str, Path], folder: Path) -> None:
    for relative, source in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / relative)  # follows the repository's links: real files


def _link(source: Path, link: Path, final: Path) -> bool:
    """Make ``link``, to be renamed to ``final``: a symbolic link to ``source``, relative to ``final``'s folder
    (absolute across drives). False where links cannot be made."""
    try:
        target = os.path.relpath(source, final.parent.resolve())
    except ValueError:  # another drive (Windows)
        target = str(source)
    try:
        os.symlink(target, link, target_is_directory=True)
    except (OSError, NotImplementedError):
        return False
    return True


def _place(entry: Path, source: Path, files: dict[str, Path], copy: bool) -> str:
    """Build the new entry beside the old one, then swap, so a failure leaves the old one in place."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    built = scratch / entry.name
    try:
        mode = "link" if not copy and _link(source, built, entry) else "copy"
        if mode == "copy":
            _copy_skill(files, built)
        _remove(entry)
        built.rename(entry)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return mode


def _checked_root(dest: str | Path | None) -> Path:
    root = home_expanded(dest if dest is not None else ".")
    if root.exists() and not root.is_dir():
        raise InstallError(_("{path} is not a folder; choose another --dest").format(path=root))
    if root.name == "skills" and root.parent.name in (".claude", ".agents"):
        raise InstallError(
            _("--dest is the folder that holds .claude/ and .agents/ (a project, or ~ for every project), not "
              "{path} itself; try --dest {parent}").format(path=root, parent=root.parent.parent)
        )
    return root


def install(dest: str | Path | None = None, lang: str = "en", *, copy: bool = False,
            force: bool = False) -> Installed:
    """Link (or with ``copy`` copy) the skill into ``dest/.claude/skills/<name>`` and ``dest/.agents/skills/<name>``.

    ``dest`` defaults to the current folder; ``~`` installs it for every project. An existing entry that is
    this skill already (a link to it, or an identical copy) is kept or converted; a differing copy or a link to
    another installation is replaced only with ``force``. Everything is checked before anything changes.
    """
    root = _checked_root(dest)
    files = skill_files(lang)
    source = skill_dir(lang)
    name = source.name

    plan = []
    for target in TARGETS:
        entry = root / target / name
        is_link = entry.is_symlink()
        if not entry.exists() and not is_link:
            plan.append((entry, "installed"))
        elif is_link and not entry.exists():
            plan.append((entry, "replaced"))  # a dangling link (an uninstalled environment): nothing to lose
        elif is_link and _same_folder(entry, source):
            plan.append((entry, "replaced" if copy else "unchanged"))
        elif not is_link and entry.is_dir() and _same_files(entry, files):
            plan.append((entry, "unchanged" if copy else "replaced"))  # an identical copy becomes a link
        elif force:
            plan.append((entry, "replaced"))
        else:
            what = (_("links to {target}").format(target=os.readlink(entry)) if is_link
                    else _("differs from this version's skill"))
            raise InstallError(
                _("{path} already exists and {what}; pass --force to replace it").format(path=entry, what=what)
            )

    other = [root / target / SKILL_NAMES[other_lang] for other_lang in LANGS if other_lang != lang
             for target in TARGETS]
    stale = [entry for entry in other if entry.is_symlink() and entry.exists()
             and any(_same_folder(entry, skill_dir(l)) for l in LANGS)]

    for entry, status in plan:
        existing = entry.parent
        while not existing.exists():
            existing = existing.parent
        if status != "unchanged" and not os.access(existing, os.W_OK):
            raise InstallError(_("cannot write {path}; choose a folder you can write to as --dest").format(path=existing))

    places, notes, links_failed = [], [], False
    if not root.exists():  # a typo in --dest would otherwise pass unseen
        notes.append(_("{path} did not exist and was created; check that it is the --dest you meant").format(
            path=root))
    try:
        for entry, status in plan:
            if status == "unchanged":
                places.append(Placed(entry, "link" if entry.is_symlink() else "copy", status))
                continue
            entry.parent.mkdir(parents=True, exist_ok=True)
            mode = _place(entry, source, files, copy)
            links_failed = links_failed or (mode == "copy" and not copy)
            places.append(Placed(entry, mode, status))
        for entry in stale:
            entry.unlink()
    except OSError as error:
        raise InstallError(
            _("cannot write {path}: {error}; choose a folder you can write to as --dest").format(
                path=getattr(error, "filename", None) or root, error=error.strerror or error)
        ) from None
    if links_failed:
        notes.append(_("symbolic links cannot be made here, so the skill was copied; run this again after "
                       "upgrading grpo-skill"))
    return Installed(name, lang, source, sorted(files), places, stale, "; ".join(notes) or None)


# --- the copies inside a generated project ---------------------------------------------------------------


def add_to_project(project: str | Path, lang: str = "en") -> list[str]:
    """Copy the skill of ``lang`` into a new project's .claude/skills and .agents/skills; the files added."""
    files = skill_files(lang)
    name = skill_dir(lang).name
    added = []
    for target in TARGETS:
        folder = Path(project) / target / name
        _copy_skill(files, folder)
        added += [f"{target}/{name}/{relative}" for relative in files]
    return added


def project_copies_current(project: str | Path, lang: str = "en") -> bool:
    """Whether the project's copies of the skill are this version's (False when it has none)."""
    files = skill_files(lang)
    name = skill_dir(lang).name
    present = [Path(project) / target / name for target in TARGETS
               if (Path(project) / target / name).exists() or (Path(project) / target / name).is_symlink()]
    return bool(present) and all(not folder.is_symlink() and _same_files(folder, files) for folder in present)


def refresh_in_project(project: str | Path, lang: str = "en") -> list[str]:
    """Bring a project's copies of the skill to this version; the files changed, added or removed.

    Copies the user deleted stay deleted, unless the project has none at all (made before projects carried
    the skill): then both are added.
    """
    project = Path(project)
    files = skill_files(lang)
    name = skill_dir(lang).name
    folders = [project / target / name for target in TARGETS]
    present = [folder for folder in folders if folder.exists() or folder.is_symlink()]
    changed: list[str] = []
    for folder in present or folders:
        relative = folder.relative_to(project).as_posix()
        if folder.is_dir() and not folder.is_symlink() and _same_files(folder, files):
            continue
        old = ({name_: path.read_bytes() for name_, path in files_under(folder).items()}
               if folder.is_dir() and not folder.is_symlink() else {})
        folder.parent.mkdir(parents=True, exist_ok=True)
        _remove(folder)
        _copy_skill(files, folder)
        for name_ in sorted(set(old) | set(files)):
            if name_ not in files or name_ not in old or old[name_] != files[name_].read_bytes():
                changed.append(f"{relative}/{name_}")
    return changed
