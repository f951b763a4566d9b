"""`grpo-skill plugin new`: a third-party reward-plugin package, rendered from templates/plugin with copier.

NAME is the reward's name (``answer_length``); the package is ``grpo-skill-answer-length``, its module
``grpo_skill_answer_length``, and its entry point (group ``grpo_skill``) ``answer_length``.
"""

from __future__ import annotations

import keyword
import re
import shutil
import tempfile
from pathlib import Path

from ..core import __version__
from . import history
from ..core import plugins
from ..core.errors import UserError
from ..core.i18n import _
from ..core.registry import RegistryError

PACKAGE_PREFIX = "grpo-skill-"
REWARD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


class ScaffoldError(UserError):
    """Bad input for `grpo-skill plugin new`; nothing has been written."""


def template_dir() -> Path:
    return history.templates_dir() / "plugin"


def names(name: str) -> dict[str, str]:
    """The reward, package and module names for NAME (``answer-length``, ``grpo-skill-answer-length`` or
    ``answer_length`` all give the same)."""
    reward = name.removeprefix(PACKAGE_PREFIX).replace("-", "_")
    if not REWARD_NAME.match(reward):
        raise ScaffoldError(
            _("plugin name {name!r} is not allowed: use lowercase letters, digits, '-' and '_', starting with a "
              "letter (e.g. answer_length)").format(name=name)
        )
    if keyword.iskeyword(reward):  # a reward is often a function of its name, which a keyword cannot be
        raise ScaffoldError(
            _("plugin name {name!r} is a Python keyword; choose another (e.g. {name}_reward)").format(name=name))
    return {"reward_name": reward, "package_name": PACKAGE_PREFIX + reward.replace("_", "-"),
            "module_name": f"grpo_skill_{reward}"}


def new_plugin(name: str, parent: str | Path = ".") -> tuple[Path, list[str]]:
    """Render the plugin package into ``parent/<package name>``; refuses a name a loaded plugin registers, and
    an existing folder that is not empty."""
    from . import copying

    data = {**names(name), "grpo_skill_version": __version__}
    try:
        taken = plugins.rewards().get(data["reward_name"])
    except RegistryError:
        taken = None  # a broken plugin elsewhere is no reason to refuse a new one
    if taken is not None:
        raise ScaffoldError(
            _("a reward named {name!r} exists already (plugin {plugin!r}); choose another name").format(
                name=data["reward_name"], plugin=taken.plugin)
        )
    target = Path(parent) / data["package_name"]
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(_("{target} exists and is not empty; choose another name or -o").format(target=target))
    with tempfile.TemporaryDirectory() as scratch:
        rendered = Path(scratch) / data["package_name"]
        copying.copy_into_new_folder(template_dir(), rendered, data=data, defaults=True, quiet=True, overwrite=True)
        files = sorted(path.relative_to(rendered).as_posix() for path in rendered.rglob("*") if path.is_file())
        try:
            shutil.copytree(rendered, target, dirs_exist_ok=True)
        except OSError as error:
            raise ScaffoldError(_("cannot write {path}: {error}; choose another -o").format(
                path=getattr(error, "filename", None) or target, error=error.strerror or error)) from None
    return target, files
