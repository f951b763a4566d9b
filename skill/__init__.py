"""grpo-skill: GRPO training set-ups for TRL and Unsloth, with rewards and presets as plugins.

The package is laid out by role (docs/architecture.md): ``core/`` (plugins, registry, config), ``runtime/`` (what a
generated project imports while it runs), ``scaffold/`` (what writes files), ``advisors/`` (doctor, plan, probe,
rewards try) and ``cli.py``. The names plugin authors, generated projects and the docs use keep working from here.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from .core import __version__

# The names plugin authors import from the package (``from grpo_skill import Reward, hookimpl``), each from its home;
# imported when first asked for, so that `grpo-skill --help` loads no plugin machinery.
PUBLIC = {
    "hookimpl": "core.hookspecs", "derive_preset": "core.plugins",
    **{name: "core.registry" for name in ("Judge", "JudgeRequest", "LoraSettings", "Preset", "Reward", "RewardContext",
                                          "RewardError", "completion_text", "prompt_text")},
}
__all__ = [*PUBLIC, "__version__"]

# Where the modules of the flat layout live now. ``grpo_skill.<old name>`` is the same module object as its new home
# (``from grpo_skill import project``, ``import grpo_skill.errors``, ``python -m grpo_skill.plan``): generated projects,
# outside plugins and the docs use these names.
MOVED = {
    **{name: f"core.{name}" for name in
       ("errors", "hookspecs", "i18n", "judges", "plugins", "project", "registry", "schema")},
    **{name: f"runtime.{name}" for name in ("arithmetic", "gpus", "modelbuild", "promptlength", "warmstart")},
    **{name: f"scaffold.{name}" for name in ("docs", "generator", "history", "settings", "skillfiles", "update")},
    **{name: f"advisors.{name}" for name in ("doctor", "plan", "probe", "rewardtry")},
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Serves ``grpo_skill.<old name>`` as the module at its new home, imported once."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package == __name__ and name in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(self._home(spec.name))
        spec.loader_state = module.__spec__  # the import sets the old name's spec on the module: exec_module puts it back
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state

    def get_code(self, fullname):  # python -m grpo_skill.<old name>: run the module at its new home as __main__
        return compile(f"import runpy; runpy.run_module({self._home(fullname)!r}, run_name='__main__', alter_sys=True)",
                       f"<{fullname}>", "exec")

    def get_source(self, fullname):
        return None

    @staticmethod
    def _home(fullname: str) -> str:
        return f"{__name__}.{MOVED[fullname.rpartition('.')[2]]}"


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str):
    if name in PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{PUBLIC[name]}"), name)
        globals()[name] = value
        return value
    if name in MOVED:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC, *MOVED})
