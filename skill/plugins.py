"""The plugin manager: built-ins first, then installed packages (entry points), then a project's own."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pluggy

from . import hookspecs
from .i18n import _
from .registry import Preset, Registered, RegistryError, Reward, collect

ENTRY_POINT_GROUP = "grpo_skill"
# Comma-separated entry-point names to load; set but empty loads no installed plugin.
LOAD_PLUGINS_ENV = "GRPO_SKILL_PLUGINS"
DEFAULT_PLUGINS = (
    "grpo_skill.builtins.presets",
    "grpo_skill.builtins.rewards.seed",
    "grpo_skill.builtins.rewards.verifiable",
    "grpo_skill.builtins.rewards.shaping",
    "grpo_skill.builtins.rewards.judge",
)
PROJECT_PLUGIN_PREFIX = "project:"


@dataclass(frozen=True)
class PluginInfo:
    name: str
    source: str  # "builtin", "entry point" or "project"
    hooks: tuple[str, ...]
    version: str | None = None
    error: str | None = None


pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
pm.add_hookspecs(hookspecs)
_sources: dict[str, tuple[str, str | None]] = {}
_failures: list[PluginInfo] = []
_loaded = False


def _register(plugin, name: str, source: str, version: str | None = None) -> None:
    pm.register(plugin, name=name)
    try:
        pm.check_pending()  # a hook implementation with no spec (a typo) is refused, loudly
    except pluggy.PluginValidationError as error:
        pm.unregister(name=name)
        raise RegistryError(_("plugin {name!r}: {error}").format(name=name, error=error)) from None
    _sources[name] = (source, version)


def _load_entry_points() -> None:
    allowed = os.environ.get(LOAD_PLUGINS_ENV)
    allowed_names = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if allowed_names is not None and entry_point.name not in allowed_names:
            continue
        if pm.has_plugin(entry_point.name):
            continue
        version = entry_point.dist.version if entry_point.dist else None
        try:
            _register(entry_point.load(), entry_point.name, "entry point", version)
        except Exception as error:  # a broken plugin is reported, never fatal
            _failures.append(PluginInfo(entry_point.name, "entry point", (), version, f"{type(error).__name__}: {error}"))


def manager() -> pluggy.PluginManager:
    global _loaded
    if not _loaded:
        _loaded = True
        for module_name in DEFAULT_PLUGINS:
            _register(importlib.import_module(module_name), "builtin:" + module_name.rsplit(".", 1)[1], "builtin")
        _load_entry_points()
    return pm


def register_project(project_dir: str | Path) -> str | None:
    """Register a generated project's ``rewards.py`` as a plugin; errors in it are the user's to see.

    One project at a time: registering another project's rewards.py replaces the previous one, so that
    loading two projects in one process never reports their rewards as registered twice.
    """
    path = Path(project_dir).resolve() / "rewards.py"
    if not path.is_file():
        return None
    name = PROJECT_PLUGIN_PREFIX + str(path.parent)
    manager()
    if pm.has_plugin(name):
        return name
    for registered, _ in pm.list_name_plugin():
        if registered.startswith(PROJECT_PLUGIN_PREFIX):
            unregister(registered)
    module_name = f"grpo_skill_project_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    _register(module, name, "project")
    return name


def unregister(name: str) -> None:
    pm.unregister(name=name)
    _sources.pop(name, None)


def register(plugin, name: str) -> None:
    """Register a plugin object by hand (tests, notebooks)."""
    manager()
    _register(plugin, name, "manual")


def rewards() -> dict[str, Registered]:
    return collect(manager().hook.register_rewards, Reward)


def presets() -> dict[str, Registered]:
    return collect(manager().hook.register_presets, Preset)


def get_reward(name: str) -> Reward:
    found = rewards()
    if name not in found:
        raise RegistryError(
            _("unknown reward {name!r}; choose one of: {choices}").format(name=name, choices=", ".join(sorted(found)))
        )
    return found[name].item


def get_preset(name: str) -> Preset:
    found = presets()
    if name not in found:
        raise RegistryError(
            _("unknown preset {name!r}; choose one of: {choices}").format(name=name, choices=", ".join(sorted(found)))
        )
    return found[name].item


def plugin_infos() -> list[PluginInfo]:
    manager()
    infos = []
    for name, plugin in pm.list_name_plugin():
        hooks = tuple(sorted(impl.name for impl in pm.get_hookcallers(plugin) or ()))
        source, version = _sources.get(name, ("manual", None))
        infos.append(PluginInfo(name, source, hooks, version))
    return infos + list(_failures)


def failures() -> list[PluginInfo]:
    manager()
    return list(_failures)
