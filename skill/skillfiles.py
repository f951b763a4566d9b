"""The skill itself (SKILL.md + references/, in English or the zh-CN twin) and its installation for an assistant.

Where the files are: a wheel carries them in ``grpo_skill/_bundle/`` (pyproject.toml maps the package
``grpo_skill._bundle`` to the repository root and lists the files as its package data); an editable
install or a checkout reads them from the repository root. Both have the same layout::

    SKILL.md, references/                      English
    i18n/zh-CN/SKILL.md, i18n/zh-CN/references/  Chinese twin
    i18n/locale/<ll_CC>/LC_MESSAGES/grpo_skill.mo  CLI message catalogs
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
from .i18n import LANGS, _

SKILL_FILE = "SKILL.md"
REFERENCES = "references"
# Claude Code's personal skills folder; a project's own skills live in <project>/.claude/skills (--dest).
DEFAULT_SKILLS_DIR = "~/.claude/skills"
# Agent Skills spec: the name is the folder's name, lowercase letters, digits and single hyphens, <= 64.
SKILL_NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class InstallError(UserError):
    """The skill cannot be installed; the message says why and what to do."""


@dataclass(frozen=True)
class Installed:
    path: Path
    lang: str
    files: list[str]
    status: str  # "installed", "replaced" or "unchanged"


def bundle_dir() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "_bundle"
    return packaged if packaged.is_dir() else here.parent


def source_dir(lang: str = "en") -> Path:
    if lang not in LANGS:
        raise InstallError(_("--lang {lang!r} is not one of {choices}").format(lang=lang, choices=", ".join(LANGS)))
    return bundle_dir() if lang == "en" else bundle_dir() / "i18n" / lang


def skill_files(lang: str = "en") -> dict[str, Path]:
    """What gets installed: relative name -> source file."""
    source = source_dir(lang)
    skill_md = source / SKILL_FILE
    if not skill_md.is_file():
        raise InstallError(
            _("{path} is missing; this grpo-skill installation is incomplete, reinstall it").format(path=skill_md)
        )
    references = source / REFERENCES
    if not references.is_dir():  # a twin without its own references links to the English ones
        references = source_dir("en") / REFERENCES
    files = {SKILL_FILE: skill_md}
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


def _same(target: Path, files: dict[str, Path]) -> bool:
    present = {path.relative_to(target).as_posix() for path in target.rglob("*") if path.is_file()}
    return present == set(files) and all(
        (target / name).read_bytes() == source.read_bytes() for name, source in files.items()
    )


def install(dest: str | Path | None = None, lang: str = "en", force: bool = False) -> Installed:
    """Copy the skill into ``dest/<name>/`` (default ~/.claude/skills); refuse to replace a different copy
    unless ``force``."""
    files = skill_files(lang)
    name = skill_name(files[SKILL_FILE])
    root = Path(dest or DEFAULT_SKILLS_DIR).expanduser()
    target = root / name
    status = "installed"
    if target.exists() or target.is_symlink():
        real_folder = target.is_dir() and not target.is_symlink()
        if real_folder and _same(target, files):
            return Installed(target, lang, sorted(files), "unchanged")
        if not force:
            raise InstallError(
                _("{path} already exists and differs from this version's skill; pass --force to replace it").format(
                    path=target
                )
            )
        status = "replaced"
    if root.exists() and not root.is_dir():
        raise InstallError(_("{path} is not a folder; choose another --dest").format(path=root))
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))  # same file system: the swap is a rename
    try:
        for relative, source in files.items():
            (scratch / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, scratch / relative)
        os.chmod(scratch, 0o755)
        if status == "replaced":
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()  # a link or a file: remove it, never what a link points to
        scratch.rename(target)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch)
    return Installed(target, lang, sorted(files), status)
