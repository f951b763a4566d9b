"""The plugin manager: built-ins first, then installed packages (entry points), then a project's own.

A plugin that fails to import, or whose hook raises, is set aside and reported (``grpo-skill plugins`` shows
the error, the listings warn); the others keep working. A name that two plugins register is left out and
marked as clashing: only a project that uses that name fails, with a message naming both plugins.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pluggy

from . import hookspecs
from .errors import shown_path, user_frame, where_raised
from .i18n import _
from . import contract
from .registry import (PROJECT_PLUGIN_PREFIX, Collection, Judge, LoraSettings, Preset, Registered, RegistryError, Reward,
                       collect)

ENTRY_POINT_GROUP = "grpo_skill"
# Comma-separated entry-point names to load; set but empty loads no installed plugin.
LOAD_PLUGINS_ENV = "GRPO_SKILL_PLUGINS"
DEFAULT_PLUGINS = (
    "grpo_skill.builtins.presets",
    "grpo_skill.builtins.rewards.seed",
    "grpo_skill.builtins.rewards.verifiable",
    "grpo_skill.builtins.rewards.shaping",
    "grpo_skill.builtins.rewards.structured",
    "grpo_skill.builtins.rewards.execution",
    "grpo_skill.builtins.rewards.judge",
)
# a project's rewards.py registers as PROJECT_PLUGIN_PREFIX + its folder (the registry rebuilds its rewards by it)


@dataclass(frozen=True)
class PluginInfo:
    name: str
    source: str  # "builtin", "entry point", "project" or "manual"
    hooks: tuple[str, ...]
    version: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class DerivedPreset:
    """A preset made from another one, resolved once every plugin has registered (see ``derive_preset``)."""

    base: str
    name: str
    changes: Mapping[str, Any]

    def resolve(self, base: Preset) -> Preset:
        changes = dict(self.changes)
        if "grpo" in changes:  # merged key by key: name only what differs from the base
            changes["grpo"] = {**base.grpo, **changes["grpo"]}
        if isinstance(changes.get("lora"), Mapping):
            changes["lora"] = dataclasses.replace(base.lora, **changes["lora"])
        if "rewards" in changes:
            changes["rewards"] = tuple(tuple(pair) for pair in changes["rewards"])
        return dataclasses.replace(base, name=self.name, **changes)


def derive_preset(base: str, name: str, **changes) -> DerivedPreset:
    """A preset like ``base`` with ``changes``, to pass to ``register`` inside ``register_presets``.

    ``grpo`` (and ``lora`` given as a dict) are merged into the base's; every other field replaces the base's.
    The base may come from any plugin, registered before or after this one: it is looked up once all plugins
    have registered, so there is no need (and no way) to call ``get_preset`` while registering.
    """
    fields = {spec.name for spec in dataclasses.fields(Preset)} - {"name"}
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise RegistryError(_("derive_preset: Preset has no field {field!r}; it has: {fields}").format(
            field=unknown[0], fields=", ".join(sorted(fields))))
    if isinstance(changes.get("lora"), Mapping):
        lora_fields = {spec.name for spec in dataclasses.fields(LoraSettings)}
        bad = sorted(set(changes["lora"]) - lora_fields)
        if bad:
            raise RegistryError(_("derive_preset: LoraSettings has no field {field!r}; it has: {fields}").format(
                field=bad[0], fields=", ".join(sorted(lora_fields))))
    return DerivedPreset(base, name, changes)


pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
pm.add_hookspecs(hookspecs)
_sources: dict[str, tuple[str, str | None]] = {}
_failures: list[PluginInfo] = []
_unknown_allowed: list[str] = []
_left_out: list[str] = []  # installed plugins that GRPO_SKILL_PLUGINS does not name
_loaded = False
_collecting: set[str] = set()
_collected: dict[str, Collection] = {}  # each hook's registrations, collected once per set of plugins


def shown_name(name: str) -> str:
    """A plugin's name for messages: a project's rewards.py by its path."""
    if name.startswith(PROJECT_PLUGIN_PREFIX):
        return shown_path(Path(name[len(PROJECT_PLUGIN_PREFIX):]) / "rewards.py")
    return name


def _register(plugin, name: str, source: str, version: str | None = None) -> None:
    pm.register(plugin, name=name)
    _collected.clear()
    try:
        pm.check_pending()  # a hook implementation with no spec (a typo) is refused, loudly
    except pluggy.PluginValidationError as error:
        pm.unregister(name=name)
        hook = re.search(r"unknown hook '(\w+)'", str(error))
        hooks = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("register_")))
        if hook is None:
            raise RegistryError(_("plugin {name!r}: {error}").format(name=shown_name(name), error=error)) from None
        close = difflib.get_close_matches(hook.group(1), hooks.split(", "), n=1)
        raise RegistryError(_("plugin {name!r}: unknown hook {hook!r}{suggestion}; the hooks are {hooks}").format(
            name=shown_name(name), hook=hook.group(1), hooks=hooks,
            suggestion=_(" (did you mean {close!r}?)").format(close=close[0]) if close else "")) from None
    _sources[name] = (source, version)


def _load_entry_points() -> None:
    allowed = os.environ.get(LOAD_PLUGINS_ENV)
    allowed_names = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
    installed = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    if allowed_names:
        _unknown_allowed.extend(sorted(allowed_names - {entry_point.name for entry_point in installed}))
    for entry_point in installed:
        if allowed_names is not None and entry_point.name not in allowed_names:
            _left_out.append(entry_point.name)
            continue
        if pm.has_plugin(entry_point.name):
            continue
        version = entry_point.dist.version if entry_point.dist else None
        try:
            _register(entry_point.load(), entry_point.name, "entry point", version)
        except Exception as error:  # a broken plugin is reported, never fatal
            _failures.append(PluginInfo(entry_point.name, "entry point", (), version, describe_hook_error(error)))


def describe_hook_error(error: BaseException) -> str:
    if isinstance(error, RegistryError):  # raised by register() inside a hook: say where the hook called it
        frame = user_frame(error)
        return f"{shown_path(frame.filename)}:{frame.lineno}: {error}" if frame else str(error)
    return where_raised(error)


def manager() -> pluggy.PluginManager:
    global _loaded
    if not _loaded:
        _loaded = True
        for module_name in DEFAULT_PLUGINS:
            _register(importlib.import_module(module_name), "builtin:" + module_name.rsplit(".", 1)[1], "builtin")
        _load_entry_points()
    return pm


def installed_names() -> list[str]:
    return sorted({entry_point.name for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})


def project_plugin_name(project_dir: str | Path) -> str:
    return PROJECT_PLUGIN_PREFIX + str(Path(project_dir).resolve())


def register_project(project_dir: str | Path) -> str | None:
    """Register a generated project's ``rewards.py`` as a plugin; an error in it is reported as
    ``rewards.py:LINE: ErrorType: message`` (a RegistryError).

    One project at a time: registering another project's rewards.py replaces the previous one, so that
    loading two projects in one process never reports their rewards as registered twice.
    """
    path = Path(project_dir).resolve() / "rewards.py"
    if not path.is_file():
        return None
    name = project_plugin_name(path.parent)
    manager()
    if pm.has_plugin(name):
        return name
    for registered, _plugin in pm.list_name_plugin():
        if registered.startswith(PROJECT_PLUGIN_PREFIX):
            unregister(registered)
    module_name = f"grpo_skill_project_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        _register(module, name, "project")
    except Exception as error:
        sys.modules.pop(module_name, None)
        raise RegistryError(describe_hook_error(error)) from error
    return name


def unregister(name: str) -> None:
    pm.unregister(name=name)
    _collected.clear()
    _sources.pop(name, None)


def register(plugin, name: str) -> None:
    """Register a plugin object by hand (tests, notebooks)."""
    manager()
    registered_as = pm.get_name(plugin)
    if registered_as is not None:  # pluggy would say "already registered" with the whole module's repr
        raise RegistryError(_("this plugin is already registered as {name!r}; unregister it first, or use it as "
                              "it is").format(name=shown_name(registered_as)))
    if pm.has_plugin(name):
        raise RegistryError(_("a plugin named {name!r} is already registered; choose another name, or unregister "
                              "it first").format(name=name))
    _register(plugin, name, "manual")


# ---- what the plugins register --------------------------------------------------------------------------

def _once(hook: str, collect_them) -> Collection:
    """A hook's registrations, collected the first time they are asked for after the plugins last changed."""
    manager()
    if hook not in _collected:
        _collected[hook] = collect_them()
    return _collected[hook]


def reward_collection() -> Collection:
    return _once("register_rewards", lambda: collect(pm.hook.register_rewards, Reward, describe_hook_error, shown_name))


def judge_collection() -> Collection:
    return _once("register_judges", lambda: collect(pm.hook.register_judges, Judge, describe_hook_error, shown_name))


def preset_collection() -> Collection:
    """The presets, with every ``derive_preset`` resolved against the presets of all plugins."""
    if "presets" in _collecting:
        raise RegistryError(_("get_preset() was called while presets are being registered; derive a preset "
                              "with grpo_skill.derive_preset(base, name, ...) instead"))
    return _once("register_presets", _collect_presets)


def _collect_presets() -> Collection:
    _collecting.add("presets")
    try:
        found = collect(pm.hook.register_presets, (Preset, DerivedPreset), describe_hook_error)
    finally:
        _collecting.discard("presets")
    pending = {name: reg for name, reg in found.items.items() if isinstance(reg.item, DerivedPreset)}
    while pending:
        ready = {name: reg for name, reg in pending.items()
                 if reg.item.base in found.items and reg.item.base not in pending}
        if not ready:
            break
        for name, reg in ready.items():
            base = found.items[reg.item.base].item
            try:
                found.items[name] = Registered(reg.item.resolve(base), reg.plugin)
            except (TypeError, ValueError) as error:
                found.errors[reg.plugin] = _("preset {name!r}: {error}").format(name=name, error=error)
                del found.items[name]
            del pending[name]
    for name, reg in pending.items():  # a base no plugin registers (or a cycle)
        base = reg.item.base
        why = _("which clashes") if base in found.clashes else _("which no plugin registers")
        found.errors.setdefault(reg.plugin, _("preset {name!r} derives from {base!r}, {why}").format(
            name=name, base=base, why=why))
        del found.items[name]
    return found


def rewards() -> dict[str, Registered]:
    return reward_collection().items


def presets() -> dict[str, Registered]:
    return preset_collection().items


def closest(name: str, names) -> str | None:
    """The name of ``names`` that ``name`` most likely misspells, if any is close enough."""
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return close[0] if close else None


def get_from(collection: Collection, kind: str, name: str, suggest=()):
    """The item ``name`` of ``collection``. ``suggest``: names it does not hold that a misspelt name may still mean
    (a project's own rewards), offered as "did you mean" beside its own."""
    if name in collection.clashes:
        owners = collection.clashes[name]
        installed = [owner for owner in owners if _sources.get(owner, ("",))[0] == "entry point"]
        if any(owner.startswith(PROJECT_PLUGIN_PREFIX) for owner in owners):
            fix = _("rename the one in this project's rewards.py")
        elif installed:
            fix = _("uninstall one, or load only the plugins you want with {env}=name1,name2 (installed: "
                    "{installed})").format(env=LOAD_PLUGINS_ENV, installed=", ".join(installed_names()))
        else:
            fix = _("unregister one of them")
        raise RegistryError(_("{kind} {name!r} is registered by both {first!r} and {second!r}; {fix}").format(
            kind=kind, name=name, first=shown_name(owners[0]), second=shown_name(owners[1]), fix=fix))
    if name not in collection.items:
        choices = sorted(collection.items)
        close = closest(name, [*choices, *suggest])
        if close:
            message = _("unknown {kind} {name!r}; did you mean {suggestion!r}? Choose one of: {choices}")
        else:
            message = _("unknown {kind} {name!r}; choose one of: {choices}")
        message = message.format(kind=kind, name=name, suggestion=close or "", choices=", ".join(choices))
        broken = [info.name for info in _failures] + sorted(shown_name(name) for name in collection.errors)
        if broken:
            message += _(" (not loaded, with errors: {plugins}; see grpo-skill plugins)").format(
                plugins=", ".join(broken))
        if _left_out:
            message += _(" ({env}={value} leaves out the installed plugins {plugins})").format(
                env=LOAD_PLUGINS_ENV, value=os.environ.get(LOAD_PLUGINS_ENV, ""), plugins=", ".join(sorted(_left_out)))
        raise RegistryError(message)
    return collection.items[name].item


def get_reward(name: str, suggest=()) -> Reward:
    return get_from(reward_collection(), _("reward"), name, suggest)


def get_preset(name: str) -> Preset:
    return get_from(preset_collection(), _("preset"), name)


def hook_errors() -> dict[str, str]:
    """Plugin -> the error its hook raised (for each hook that failed)."""
    errors: dict[str, list[str]] = {}
    collections = (("register_rewards", reward_collection()), ("register_presets", preset_collection()),
                   ("register_judges", judge_collection()))
    for hook, collection in collections:
        for plugin, error in collection.errors.items():
            errors.setdefault(plugin, []).append(f"{hook}: {error}")
    return {plugin: "; ".join(found) for plugin, found in errors.items()}


def plugin_infos() -> list[PluginInfo]:
    manager()
    failed_hooks = hook_errors()
    infos = []
    for name, plugin in pm.list_name_plugin():
        hooks = tuple(sorted(impl.name for impl in pm.get_hookcallers(plugin) or ()))
        source, version = _sources.get(name, ("manual", None))
        infos.append(PluginInfo(name, source, hooks, version, failed_hooks.get(name)))
    return infos + list(_failures)


def warnings() -> list[str]:
    """One line per problem the listings should mention: broken plugins, clashing names, a
    GRPO_SKILL_PLUGINS entry that names no installed plugin."""
    manager()
    lines = [_("plugin {name!r} failed to load: {error}").format(name=info.name, error=info.error)
             for info in _failures]
    lines += [_("plugin {name!r} failed in {error}").format(name=shown_name(name), error=error)
              for name, error in hook_errors().items()]
    for kind, collection in ((_("reward"), reward_collection()), (_("preset"), preset_collection()),
                             (_("judge backend"), judge_collection())):
        lines += [_("{kind} {name!r} is registered by both {first!r} and {second!r}: projects that use it fail "
                    "until one goes").format(kind=kind, name=name, first=shown_name(owners[0]),
                                             second=shown_name(owners[1]))
                  for name, owners in collection.clashes.items()]
    if _unknown_allowed:
        lines.append(_("{env} names {names}, which no installed package provides (installed: {installed})").format(
            env=LOAD_PLUGINS_ENV, names=", ".join(repr(name) for name in _unknown_allowed),
            installed=", ".join(installed_names()) or _("none")))
    return lines


def _find_project_reward(name: str, project_dir: str) -> Reward:
    register_project(project_dir)
    return get_reward(name)


contract.find_project_reward = _find_project_reward  # a pickled reward of a project's rewards.py is rebuilt through it
