"""`grpo-skill doctor`: is this environment ready to train, and if not, what to do.

:func:`collect` gathers the facts (Python, torch and CUDA, GPUs, package versions and their own requirements,
the hub cache, disk space, plugins, git); :func:`diagnose` turns facts into problems, each with its fix, and
is pure so that tests can feed it any environment. The versions grpo-skill is tested with are read from its
own package metadata (the pins in pyproject.toml's ``train`` and ``unsloth`` extras), not from a list here.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import platform
import shutil
import sys
from pathlib import Path

from ..core import __version__
from ..core.errors import home_expanded
from ..core.i18n import _

DISTRIBUTION = "grpo-skill"
EXTRAS = ("train", "unsloth")  # the extras whose pins are the tested set
ALSO_SHOWN = ("triton",)  # not pinned, but decides whether TRL >= 1.15 can train
GIB = 1024 ** 3
# Below this much free disk beside the hub cache a 4B model (3-8 GB) and its checkpoints may not fit.
DISK_WARNING_GIB = 20
DISK_BLOCKER_GIB = 1
DISK_RUN_GIB = 1  # a project's checkpoints and outputs: LoRA adapters and optimizer state, well under this
# The standard/thinking presets' 4B model peaked at 3.9-5.7 GiB with Unsloth 4-bit and 9.1 GiB with plain TRL
# (measured on an H200); below this much free GPU memory they may not start.
GPU_WARNING_GIB = 6
BLOCKER, WARNING = "blocker", "warning"


# --- facts --------------------------------------------------------------------------------------------------


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def tested_set() -> dict[str, dict[str, str]]:
    """name -> {"spec": ">=...", "extra": "train"} from grpo-skill's own metadata."""
    from packaging.requirements import Requirement

    tested = {}
    for line in metadata.requires(DISTRIBUTION) or ():
        requirement = Requirement(line)
        for extra in EXTRAS:
            if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
                tested[_normal(requirement.name)] = {"spec": str(requirement.specifier), "extra": extra}
    return tested


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _torch() -> dict:
    try:
        import torch
    except Exception as error:  # a broken install: the fact to report
        return {"imported": False, "error": f"{type(error).__name__}: {error}", "cuda": False, "devices": []}
    facts = {"imported": True, "error": None, "cuda": bool(torch.cuda.is_available()),
             "cuda_version": torch.version.cuda, "devices": []}
    if facts["cuda"]:
        for index in range(torch.cuda.device_count()):
            properties = torch.cuda.get_device_properties(index)
            free, total = torch.cuda.mem_get_info(index)
            facts["devices"].append({
                "name": properties.name, "total_gib": round(total / GIB, 1), "free_gib": round(free / GIB, 1),
                "capability": f"{properties.major}.{properties.minor}",
                "bf16": bool(torch.cuda.is_bf16_supported()) if index == torch.cuda.current_device() else None,
            })
    return facts


def _hub() -> dict:
    try:
        from huggingface_hub import constants, get_token
    except ImportError:
        home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
        cache = os.environ.get("HF_HUB_CACHE", str(home / "hub"))
        offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
        return {"cache": cache, "offline": offline, "token": bool(os.environ.get("HF_TOKEN"))}
    return {"cache": str(constants.HF_HUB_CACHE), "offline": bool(constants.HF_HUB_OFFLINE),
            "token": get_token() is not None}


def _free_gib(path: str | Path) -> float | None:
    path = home_expanded(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return round(shutil.disk_usage(path).free / GIB, 1)
    except OSError:
        return None


def _plugins() -> list[dict]:
    from ..core import plugins

    return [{"name": info.name, "source": info.source, "version": info.version, "error": info.error}
            for info in plugins.plugin_infos()]


def _git_version() -> str | None:
    from ..scaffold.git import git, installed

    if not installed():
        return None
    return git(["--version"], check=False).stdout.strip().removeprefix("git version ") or None


def project_model(path: str | Path) -> dict:
    """A project's model as the disk check sees it: where it comes from, and what downloading it takes (a hub id
    that is not cached, of a known shape: its weights at 4 or 16 bits). Raises ConfigError for a broken project."""
    from ..runtime import estimate as plan
    from ..core import hub, project

    config = project.load(path, rewards=False)
    name = config.model["name"]
    local = config.builds_its_model() or config.local_model_dir() is not None
    cached = not local and hub.hub_cached(name, "model")
    download = None
    known = None if local or cached else plan.known_shape(name)
    if known is not None:
        shape = known[1]
        # 4-bit: half a byte per linear weight, and room for the layers that dynamic 4-bit checkpoints (Unsloth's)
        # keep at 16 bits: Qwen3-4B's bnb-4bit repo is ~3.5 GB
        # the checkpoint as stored is what downloads: a -bnb-4bit repository whatever the run holds it in
        stored_4bit = "bnb-4bit" in name.lower() or config.model["load_in_4bit"] is True
        weight_bytes = shape.linear_params * 0.75 + shape.embedding_params * 2 if stored_4bit else shape.params * 2
        download = round(weight_bytes / GIB, 1)
    return {"name": name, "local": local, "cached": cached, "download_gib": download,
            "hub_offline": None if local or cached else _hub_offline()}


def _hub_offline() -> str | None:
    """Why the hub cannot be asked for a download (as train.py would find it), or None."""
    from ..core import hub

    variable = hub.offline_by_env()
    if variable is not None:
        return _("{variable} is set").format(variable=variable)
    return None if hub.hub_reachable() else _("{host} cannot be reached").format(host=hub.hub_host()[0])


def collect(project_dir: str | Path | None = None) -> dict:
    """Everything diagnose() looks at. Imports torch (and so may take seconds)."""
    tested = tested_set()
    names = sorted(set(tested) | set(ALSO_SHOWN))
    packages = {name: _version(name) for name in names}
    requires = {name: list(metadata.requires(name) or ()) for name in names if packages[name]}
    hub = _hub()
    try:
        requires_python = metadata.metadata(DISTRIBUTION)["Requires-Python"]
    except metadata.PackageNotFoundError:
        requires_python = None
    return {
        "grpo_skill": __version__,
        "python": {"version": platform.python_version(), "executable": sys.executable, "requires": requires_python},
        "platform": platform.platform(terse=True),
        "torch": _torch(),
        "packages": packages,
        "tested": tested,
        "requires": requires,
        "hub": hub,
        "disk": {"hub_cache_free_gib": _free_gib(hub["cache"]), "cwd_free_gib": _free_gib(Path.cwd())},
        "plugins": _plugins(),
        "git": _git_version(),
        "model": project_model(project_dir) if project_dir is not None else None,
    }


# --- problems -----------------------------------------------------------------------------------------------


def _problem(level: str, what: str, fix: str) -> dict:
    return {"level": level, "what": what, "fix": fix}


def _satisfied(version: str, spec: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) in SpecifierSet(spec, prereleases=True)
    except InvalidVersion:
        return True  # not ours to judge


def _own_requirements(facts: dict) -> list[dict]:
    """Installed packages whose own metadata rules out another installed package's version (e.g. Unsloth's
    cap on transformers), as `pip check` would say, for the packages that train together."""
    from packaging.requirements import InvalidRequirement, Requirement

    problems = []
    packages = facts["packages"]
    for owner, lines in sorted(facts["requires"].items()):
        for line in lines:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = _normal(requirement.name)
            installed = packages.get(name)
            if installed and requirement.specifier and not _satisfied(installed, str(requirement.specifier)):
                problems.append(_problem(
                    BLOCKER,
                    _("{owner} {owner_version} requires {name}{spec}, but {name} {installed} is installed").format(
                        owner=owner, owner_version=packages[owner], name=name, spec=requirement.specifier,
                        installed=installed),
                    _('pip install "{name}{spec}"').format(name=name, spec=requirement.specifier)))
    return problems


def diagnose(facts: dict) -> list[dict]:
    """The problems in ``facts``, blockers first; each says what is wrong and how to fix it."""
    problems = (_package_problems(facts) + _gpu_problems(facts["torch"], facts["packages"]) + _model_problems(facts)
                + _disk_problems(facts) + _tool_problems(facts))
    return sorted(problems, key=lambda problem: problem["level"] != BLOCKER)


def _package_problems(facts: dict) -> list[dict]:
    """Python, the training packages and their versions."""
    from packaging.version import Version

    problems = []
    python, torch, packages, tested = facts["python"], facts["torch"], facts["packages"], facts["tested"]

    if python.get("requires") and not _satisfied(python["version"], python["requires"]):
        problems.append(_problem(BLOCKER, _("Python {version} is outside grpo-skill's {spec}").format(
            version=python["version"], spec=python["requires"]), _("use a Python {spec}").format(
                spec=python["requires"])))

    missing = [name for name, info in tested.items() if info["extra"] == "train" and not packages.get(name)]
    if missing:
        problems.append(_problem(BLOCKER, _("not installed, and train.py needs them: {names}").format(
            names=", ".join(missing)), _('pip install "grpo-skill[train]"')))
    if packages.get("torch") and not torch["imported"]:
        problems.append(_problem(BLOCKER, _("torch is installed but does not import: {error}").format(
            error=torch["error"]), _("reinstall torch for this machine: https://pytorch.org/get-started/locally/")))

    trl = packages.get("trl")
    if trl and Version(trl) >= Version("1.15") and not torch["cuda"]:
        problems.append(_problem(
            BLOCKER,
            _("trl {version} without a CUDA GPU: its GRPO computes log-probabilities with a Triton kernel, which "
              "needs a GPU").format(version=trl),
            _('pip install "trl==1.14.2"')))
    problems += _own_requirements(facts)

    for name, info in sorted(tested.items()):
        installed = packages.get(name)
        if installed and not _satisfied(installed, info["spec"]):
            problems.append(_problem(WARNING, _("{name} {installed} is not the version grpo-skill is tested with "
                                                "({name}{spec})").format(name=name, installed=installed,
                                                                         spec=info["spec"]),
                                     _('pip install "{name}{spec}"').format(name=name, spec=info["spec"])))
    return problems


def _gpu_problems(torch: dict, packages: dict) -> list[dict]:
    problems = []
    if torch["imported"] and not torch["cuda"]:
        problems.append(_problem(WARNING, _("no CUDA GPU: only the tiny preset trains at a usable speed here"),
                                 _("train standard or thinking projects on a machine with an NVIDIA GPU")))
    if torch["cuda"] and not packages.get("unsloth"):
        problems.append(_problem(WARNING, _("a CUDA GPU but no unsloth: train.py uses plain TRL + peft, "
                                            "several times slower and with more memory"),
                                 _('pip install "grpo-skill[unsloth]"')))
    for index, device in enumerate(torch.get("devices", [])):
        if device.get("bf16") is False:
            problems.append(_problem(WARNING, _("GPU {index} ({name}) has no bf16: training runs in fp16, which "
                                                "overflows more easily").format(index=index, name=device["name"]),
                                     _("if the loss turns NaN, lower learning_rate or use a GPU with bf16")))
        if device["free_gib"] < GPU_WARNING_GIB:
            problems.append(_problem(WARNING, _("GPU {index} ({name}) has {free} GiB free: the 4B presets need "
                                                "about {need} GiB or more").format(
                index=index, name=device["name"], free=device["free_gib"], need=GPU_WARNING_GIB),
                _("free the GPU (other processes, a Jupyter kernel), or lower num_generations and "
                  "max_completion_length")))
    return problems


def _model_problems(facts: dict) -> list[dict]:
    """The project's model, where it must be downloaded and the hub cannot be asked: train.py would stop at once."""
    model = facts.get("model")
    if not model or not model.get("hub_offline"):
        return []
    return [_problem(BLOCKER, _("the project's model {model} is not on this machine, and the hub is offline ({why}): "
                                "train.py would stop before loading it").format(model=model["name"],
                                                                              why=model["hub_offline"]),
                     _("download it where there is a network (hf download {model}, then copy the Hugging Face cache "
                       "here), or give train.py --model PATH to a local copy").format(model=model["name"]))]


def _disk_problems(facts: dict) -> list[dict]:
    """Room beside the model cache: for the project's model when it must be downloaded, else for a 4B model."""
    problems = []
    free, model = facts["disk"].get("hub_cache_free_gib"), facts.get("model")
    if free is not None and model and model.get("download_gib"):
        # the project's own model: its download, and room for checkpoints and the run (LoRA: small)
        if free < model["download_gib"] + DISK_RUN_GIB:
            problems.append(_problem(BLOCKER, _("{free} GiB free beside the model cache ({cache}): {model} needs about "
                                                "{need} GiB to download, and a run {run} more").format(
                free=free, cache=facts["hub"]["cache"], model=model["name"], need=model["download_gib"],
                run=DISK_RUN_GIB), _("free space, or point HF_HUB_CACHE (models) and --output-dir elsewhere")))
    elif free is not None and model and (model.get("local") or model.get("cached")):
        pass  # nothing to download
    elif free is not None and free < DISK_WARNING_GIB:
        level = BLOCKER if free < DISK_BLOCKER_GIB else WARNING
        problems.append(_problem(level, _("{free} GiB free beside the model cache ({cache}): a 4B model takes 3-8 "
                                          "GB, and checkpoints more").format(free=free, cache=facts["hub"]["cache"]),
                                 _("free space, or point HF_HUB_CACHE (models) and --output-dir elsewhere")))
    return problems


def _tool_problems(facts: dict) -> list[dict]:
    """Plugins that failed to load, and git."""
    problems = []
    for plugin in facts["plugins"]:
        if plugin["error"]:
            problems.append(_problem(WARNING, _("plugin {name!r} failed to load: {error}").format(
                name=plugin["name"], error=plugin["error"]),
                _("fix or uninstall it, or leave it out: GRPO_SKILL_PLUGINS=<the plugins to load>")))
    if not facts["git"]:
        problems.append(_problem(WARNING, _("git is not installed: new projects are not git repositories and "
                                            "grpo-skill update cannot merge"), _("install git")))
    return problems
