"""A loaded project: config.toml through the schema, then everything that needs files or the registry.

``schema`` checks the TOML alone; here come the checks that read the project's folder: the dataset (exists,
parses, has its columns, with the line of the first bad row), the project's rewards.py (errors in it as
``rewards.py:LINE: ErrorType: message``), the model (a local folder that is there; a hub id reachable or
cached, failing in seconds when offline), the reward names and their params. Nothing heavy is imported.

Reading a data file is ``datafile``'s job, asking the hub ``hub``'s, reading an unrun rewards.py ``rewardsource``'s;
their names stay importable from here (``grpo_skill.project.hub_cached``, ``.LOCAL_DATA_SUFFIXES``, ...).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import grpocontents, launch, plugins, schema
from .contract import factory_warnings
from .datafile import LOCAL_DATA_SUFFIXES, OTHER_FILE_SUFFIXES, DatasetInfo, scan
from .errors import home_expanded, shown_path
from .hub import HUB_ID, go_offline, hub_cached, hub_has, hub_host, hub_reachable, hub_token_set, offline_by_env
from .hub import HUB_HOST_TIMEOUT_S  # noqa: F401  (importable from here, as before the split)
from .i18n import N_, _
from .params import fits_kind, param_kind
from .registry import Preset, RegistryError
from .rewardsource import declared_rewards
from .schema import CONFIG_FILE, ConfigError, Source
from .schemamessages import suggest

BACKENDS = schema.BACKENDS  # for train.py's --backend choices and the generator

# report_to integrations (transformers 5.x) -> (what to pip install, the modules one of which it needs);
# kubeflow needs an environment variable, not a package; "all" and "none" need nothing.
REPORT_TO_PACKAGES = {
    "azure_ml": ("azureml-core", ("azureml",)), "clearml": ("clearml", ("clearml",)),
    "codecarbon": ("codecarbon", ("codecarbon",)), "comet_ml": ("comet_ml", ("comet_ml",)),
    "dagshub": ("dagshub", ("dagshub",)), "dvclive": ("dvclive", ("dvclive",)), "flyte": ("flytekit", ("flytekit",)),
    "kubeflow": ("", ()), "mlflow": ("mlflow", ("mlflow",)), "neptune": ("neptune", ("neptune",)),
    "swanlab": ("swanlab", ("swanlab",)), "tensorboard": ("tensorboard", ("tensorboard", "tensorboardX")),
    "trackio": ("trackio", ("trackio",)), "wandb": ("wandb", ("wandb",)),
}


@dataclass
class RewardChoice:
    name: str
    weight: float = 1.0
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProjectConfig:
    path: Path
    model: dict[str, Any]
    lora: dict[str, Any]
    dataset: dict[str, Any]
    rewards: list[RewardChoice]
    grpo: dict[str, Any]
    sft: dict[str, Any] | None = None
    source: Source | None = None
    # reward names that rewards.py, read but not run, may register from code (`check` without --rewards)
    unchecked_rewards: list[str] = field(default_factory=list)
    # rewards of config.toml that rewards.py, read but not run, registers: their params are not checked
    unrun_rewards: list[str] = field(default_factory=list)
    # values that run but are surely not what was meant (schema's), each a line naming its key
    warnings: list[str] = field(default_factory=list)
    # a local dataset's rows, counted by ``load`` (None: a hub dataset, or not loaded by it)
    dataset_rows: int | None = None

    @property
    def project_dir(self) -> Path:
        return self.path.parent

    @property
    def preset(self) -> Preset:
        return plugins.get_preset(self.model["preset"])

    @property
    def reward_weights(self) -> list[float]:
        return [choice.weight for choice in self.rewards]

    @property
    def by_set(self) -> bool:
        """The config `grpo-skill set` would write: a fix is a key of that command, not a flag of train.py's."""
        return self.source is not None and self.source.by_set

    @property
    def by_new(self) -> bool:
        """The config `grpo-skill new` (or `plan --preset --set`) rendered: a fix is a --set of that command."""
        return self.source is not None and self.source.by_new

    @property
    def model_flag(self) -> bool:
        """The command that reads the config takes --model PATH (new, train.py, evaluate.py, probe): a fix may name
        it; `check`, `set` and `plan` have no such flag, so a fix names model.name."""
        return self.source is not None and self.source.model_flag

    def error(self, loc: tuple, message: str) -> ConfigError:
        return (self.source or Source(self.path)).error(loc, message)

    def said(self, loc: tuple, message: str) -> str:
        """``message`` after the file and line of the key at ``loc`` (a warning's text)."""
        return (self.source or Source(self.path)).said(loc, message)

    def dataset_file(self) -> Path | None:
        """The local data file, or None when ``dataset.path`` names a hub dataset."""
        candidate = self.project_dir / home_expanded(self.dataset["path"])
        return candidate if candidate.suffix in LOCAL_DATA_SUFFIXES else None

    def builds_its_model(self) -> bool:
        """True for a preset that makes its model on this machine (tiny) and a config that asks for it."""
        preset = self.preset
        return bool(preset.build_model) and self.model["name"] == preset.model_id

    def local_model_dir(self) -> Path | None:
        """``model.name`` as a folder (relative paths from the project), or None for a hub id."""
        return _local_folder(self.model["name"], self.project_dir)

    def model_path(self) -> str:
        """A local folder to load the model from, or the hub id; the tiny preset builds its model here."""
        if self.builds_its_model():
            return self.preset.build_model()
        local = self.local_model_dir()
        return str(local) if local is not None else self.model["name"]

    def adapter_dir(self) -> Path | None:
        """``model.adapter``: the LoRA adapter to continue from (relative paths from the project), if any."""
        adapter = self.model.get("adapter")
        return (self.project_dir / home_expanded(adapter)).resolve() if adapter else None

    def chat_messages(self, question: str) -> list[dict[str, str]]:
        """One prompt as chat messages, with ``dataset.system_prompt`` first when it is set."""
        system = [{"role": "system", "content": self.dataset["system_prompt"]}] if self.dataset.get("system_prompt") else []
        return system + [{"role": "user", "content": question}]

    def build_rewards(self, tokenizer, *, warned: list[str] | None = None) -> list:
        """The configured rewards as TRL reward functions, from the registry, in [[rewards]] order; a factory that
        fails raises a RewardError naming the reward and its plugin (see ``Reward.build``). What the factories warn
        (code_tests: the network cannot be cut here) goes into ``warned`` (`check`); without it, it is said as
        ``load_for_run`` says the config's warnings, a "warning:" line each, once (train.py, evaluate.py)."""
        said: list[str] = []
        try:
            with factory_warnings() as said:
                return [plugins.get_reward(choice.name).build(tokenizer=tokenizer, preset=self.preset,
                                                              params=choice.params, grpo=self.grpo)
                        for choice in self.rewards]
        finally:  # what was warned before a factory failed too
            if warned is not None:
                warned.extend(said)
            elif _first_process():
                _print_each(said)


# ---- loading --------------------------------------------------------------------------------------------

def config_path(path: str | Path) -> Path:
    path = home_expanded(path)
    return path / CONFIG_FILE if path.is_dir() else path


def refuse_what_is_no_config(path: Path, shown: str) -> None:
    """A file given as the config that is no TOML file (README.md): read as TOML its first line would be named as
    broken, and its fix be to edit it."""
    if path.is_file() and path.suffix.lower() != ".toml":
        raise ConfigError(_("{path} is not a config file (a project's config.toml); give the project's folder or "
                            "its config.toml").format(path=shown))


def load(path: str | Path, overrides: dict[str, Any] | None = None, *, rewards: bool = True,
         processes: int | None = None, text: str | None = None, given: tuple[str, ...] = (),
         derived: dict[str, str] | None = None, by_new: bool = False, model_flag: bool = False,
         longest_prompt: Callable[[ProjectConfig], int | None] | None = None,
         prompt_room: int | None = None) -> ProjectConfig:
    """Read and check a project's config; ``overrides`` maps "table.key" to a value (command-line flags).

    ``rewards=False`` leaves the project's rewards.py unrun: its reward names are then read from its source.
    ``processes``: the launch to check it for (``check --gpus``, ``plan --gpus``); by default this one's
    (WORLD_SIZE under accelerate launch, else 1). ``text``: the config to check instead of the file's (what
    `grpo-skill set` would write; messages name its lines); ``given``: the "table.key"s it changed, named as given on
    the command line; ``derived``: the keys it changed on its own, each with how (Source.derived). ``by_new``: the
    config `grpo-skill new` rendered (its fixes are --set settings); ``model_flag``: the caller takes --model PATH.
    ``longest_prompt``: counts the prompts in tokens (None where it cannot), for the advice of a refusal that needs it
    (core reads no tokenizer: the caller that can passes one). ``prompt_room``: the tokens the prompts had before
    the command changed the config (`set`: the file's, `new`: the preset's), for that advice where they cannot be
    counted.
    """
    processes = processes or launch.world_size()
    by_set = text is not None
    path = config_path(path)
    shown = shown_path(path)
    if not path.is_file():
        raise ConfigError(
            _("{path}: no such config file; run this inside a project made by 'grpo-skill new'").format(path=shown)
        )
    refuse_what_is_no_config(path, shown)
    text = read_config(path, shown) if text is None else text
    raw = schema.parse(text, shown)
    overridden = set(given)
    for dotted, value in (overrides or {}).items():
        table, key = dotted.split(".", 1)
        if dotted == "model.name" and isinstance(value, str) and looks_local(value):
            value = str(home_expanded(value).resolve())  # a folder given on the command line: from here
        if isinstance(raw.setdefault(table, {}), dict):
            raw[table][key] = value
            overridden.add(dotted)
    source = Source(Path(shown), text, overridden, by_set=by_set, derived=dict(derived or {}), by_new=by_new,
                    model_flag=model_flag)
    data = schema.validate(raw, source, processes, fit=_prompt_fit(path, source, longest_prompt, prompt_room))
    config = ProjectConfig(
        path=path, model=data["model"], lora=data["lora"], dataset=data["dataset"],
        rewards=[RewardChoice(entry["name"], entry["weight"], entry["params"]) for entry in data["rewards"]],
        grpo=data["grpo"], sft=data["sft"], source=source, warnings=data["warnings"],
    )
    check_output_dirs(config)
    check_push_to_hub(config)
    check_train_py_compiles_layers(config)
    read_accelerator_config(config)
    check_installed(config)
    declared = _project_rewards(config, run=rewards)
    check_registry(config, declared)
    check_model(config)
    model_config = model_config_json(config)
    positions = model_positions(config, model_config=model_config)
    if positions is None and not config.builds_its_model():  # not here yet: what the preset says its model reads
        positions = _declared_positions(config)
    check_positions(config, positions, longest_prompt)
    check_against_model(config, model_config)
    config.dataset_rows = check_dataset(config).rows
    check_draw(config, config.dataset_rows, processes)
    return config


def check_draw(config: ProjectConfig, rows: int | None, processes: int = 1) -> None:
    """One generation must draw no more distinct prompts than the dataset has (under accelerate launch, on all
    its processes), else TRL trains 0 steps and exits 0; and its batch must split over those processes."""
    from . import sampling

    split = sampling.split_problem(config.grpo, processes)
    if split:
        raise config.error(("grpo", "generation_batch_size"), split)
    problem = sampling.draw_problem(config.grpo, rows, processes)
    if problem:
        key = next((key for key in ("generation_batch_size", "steps_per_generation") if key in config.grpo),
                   "steps_per_generation")
        raise config.error(("grpo", key), problem)


def read_config(path: Path, shown: str) -> str:
    """A config file's text as written (its line endings kept, for `set` to write back), or the ConfigError that
    names a file that is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(_("{path}: not UTF-8 text (byte {position}); save it as UTF-8").format(
            path=shown, position=error.start)) from None


def load_for_run(path: str | Path, overrides: dict[str, Any] | None = None) -> ProjectConfig:
    """What train.py and evaluate.py call first: ``load``, then the hub check (seconds, never minutes offline)."""
    config = load(path, overrides, model_flag=True)
    if _first_process():
        _print_each(plugins.warnings())  # e.g. a GRPO_SKILL_PLUGINS entry that names no installed plugin
        print_warnings(config)
    check_hub_access(config)
    return config


def _first_process() -> bool:
    """Several processes (accelerate launch): the first one speaks for all."""
    return os.environ.get("RANK", "0") == "0"


def print_warnings(config: ProjectConfig) -> None:
    """The config's surprising values, a "warning:" line each on stderr."""
    _print_each(config.warnings)


def _print_each(problems) -> None:
    for problem in problems:
        print(_("warning: {problem}").format(problem=problem), file=sys.stderr)


# ---- output folders -------------------------------------------------------------------------------------

def check_output_dirs(config: ProjectConfig) -> None:
    """grpo.output_dir (or --output-dir) and sft.output_dir must not be the project folder or one above it: a run
    there would replace the project's README.md with the trainer's model card, and --overwrite clear it; nor a
    file (or inside one)."""
    project = config.project_dir.resolve()
    wanted = [(("grpo", "output_dir"), config.grpo.get("output_dir"))]
    if config.sft is not None:
        wanted.append((("sft", "output_dir"), config.sft.get("output_dir")))
    for loc, value in wanted:
        if not isinstance(value, str):
            continue
        folder = (config.project_dir / value).resolve()  # as train.py and sft.py join them
        if folder == project or folder in project.parents:
            raise config.error(loc, _("= {value}: is the project folder or a folder above it, where a run would write over "
                                      "the project's own files (README.md); use a folder inside it, like \"outputs\"").format(
                value=schema.toml_value(value)))
        # the trainer would make it only after the model has loaded, and fail with "File exists"
        file = next((path for path in (folder, *folder.parents) if path.exists()), None)
        if file is not None and not file.is_dir():
            raise config.error(loc, _("= {value}: {file} is a file, not a folder; name a new or empty folder, like "
                                      "\"outputs\"").format(value=schema.toml_value(value), file=shown_path(file)))
    if config.sft is not None and isinstance(config.grpo.get("output_dir"), str):
        _refuse_one_folder_for_both(config)


def _refuse_one_folder_for_both(config: ProjectConfig) -> None:
    """sft.py and train.py each write an adapter and metrics.jsonl: in one folder, one run's would replace the
    other's, and train.py --overwrite would delete the SFT adapter it continues from."""
    sft_dir, grpo_dir = config.sft["output_dir"], config.grpo["output_dir"]
    if (config.project_dir / sft_dir).resolve() != (config.project_dir / grpo_dir).resolve():
        return
    if config.source is not None and "grpo.output_dir" in config.source.overridden:  # train.py --output-dir
        raise config.error(("grpo", "output_dir"), _(
            "{dir!r} is sft.output_dir, where sft.py's adapter is: train.py would write its own over it; choose "
            "another folder").format(dir=grpo_dir))
    raise config.error(("sft", "output_dir"), _(
        "{dir!r} is grpo.output_dir too, where train.py writes its own adapter and metrics over sft.py's; give "
        "sft.py a folder of its own, e.g. {example!r}").format(
        dir=sft_dir, example=os.path.join(os.path.normpath(grpo_dir), "sft")))


def check_train_py_compiles_layers(config: ProjectConfig) -> None:
    """[model] compile_layers in a project whose train.py was made before the key (it never compiles): refused, not
    ignored; `grpo-skill update` brings the call (and writes "auto" itself)."""
    train_py = config.project_dir / "train.py"
    if config.model.get("compile_layers") is False or not train_py.is_file():
        return
    if "compile_decoder_layers" not in train_py.read_text(encoding="utf-8", errors="replace"):
        raise config.error(("model", "compile_layers"), _(
            "this project's train.py was made by an older grpo-skill and compiles no layers; run `grpo-skill "
            "update` (it adds that to train.py), or remove compile_layers"))


# ---- [grpo] settings in a file -------------------------------------------------------------------------------

def read_accelerator_config(config: ProjectConfig) -> None:
    """grpo.accelerator_config given as the path of accelerate's JSON file: read from the project folder, like every
    path in config.toml (transformers would open it from the folder train.py runs in, after the model has loaded),
    checked as the table it holds, and handed on as that table, so that train.py runs on what was checked."""
    value = config.grpo.get("accelerator_config")
    if not isinstance(value, str):
        return  # a table (a JSON object string is read as one by the schema)
    loc = ("grpo", "accelerator_config")
    file = config.project_dir / home_expanded(value)
    if not file.is_file():
        raise config.error(loc, _("no file {path} (a path in config.toml is read from the project folder); point it "
                                  "at accelerate's JSON file, or write the settings as a table, e.g. "
                                  "accelerator_config = {{ even_batches = false }}").format(path=file))
    try:
        table = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, OSError) as error:  # UnicodeDecodeError is a ValueError
        table, reason = None, str(error)
    else:
        reason = _("a JSON {kind}, not an object").format(kind=type(table).__name__)
    if not isinstance(table, dict):
        raise config.error(loc, _("{path} is not a JSON object ({reason}); fix the file, or write the settings as a "
                                  "table, e.g. accelerator_config = {{ even_batches = false }}").format(
            path=file, reason=reason))
    config.grpo["accelerator_config"] = table
    grpocontents.check_accelerator_config(config.grpo, config.source or Source(config.path))


# ---- [grpo] settings that need packages --------------------------------------------------------------------

def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (wandb alone takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package, or a module left without a spec
        return False


def check_installed(config: ProjectConfig) -> None:
    """[grpo] values whose package must be here: TRL would fail on them only after the model has loaded."""
    if config.grpo.get("use_vllm") and not installed("vllm"):
        raise config.error(("grpo", "use_vllm"), _(
            "vllm is not installed; pip install vllm (a CUDA machine), or remove use_vllm"))
    if config.grpo.get("use_liger_kernel") and not installed("liger_kernel"):
        raise config.error(("grpo", "use_liger_kernel"), _(
            "liger-kernel is not installed; pip install 'grpo-skill[liger]' (a CUDA machine), or remove "
            "use_liger_kernel"))
    report_to = config.grpo.get("report_to")
    for name in [report_to] if isinstance(report_to, str) else report_to or []:
        if name in ("all", "none"):
            continue
        if name not in REPORT_TO_PACKAGES:
            close = suggest(name, REPORT_TO_PACKAGES)
            raise config.error(("grpo", "report_to"), _("{name!r} is not a logger transformers knows; {hint}choose "
                                                        "from: {names}").format(
                name=name, hint=_("did you mean {suggestion!r}? ").format(suggestion=close) if close else "",
                names=", ".join(sorted(REPORT_TO_PACKAGES))))
        package, modules = REPORT_TO_PACKAGES[name]
        if modules and not any(installed(module) for module in modules):
            raise config.error(("grpo", "report_to"), _(
                "{name!r} is not installed; pip install {package}, or remove it from report_to").format(
                name=name, package=package))


# ---- the project's rewards.py and the registry ----------------------------------------------------------

def _project_rewards(config: ProjectConfig, run: bool) -> tuple[set[str], bool] | None:
    """Run the project's rewards.py (``run``), or read the reward names it registers from its source: (the names
    written as text, whether some Reward(...) gets its name from code, which only running rewards.py tells)."""
    rewards_py = config.project_dir / "rewards.py"
    if not rewards_py.is_file():
        return None
    if run:
        name = plugins.register_project(config.project_dir)
        error = plugins.reward_collection().errors.get(name)
        if error:
            raise RegistryError(error)
        return None
    return declared_rewards(rewards_py)


def check_registry(config: ProjectConfig, declared: tuple[set[str], bool] | None = None) -> None:
    """The preset and every reward are registered (``declared``: what an unrun rewards.py registers, see
    ``_project_rewards``), and each reward's params are ones it takes, of the type of their defaults. A name that
    rewards.py may register from code is not called unknown: it goes to ``config.unchecked_rewards``; one it
    registers by name, to ``config.unrun_rewards``."""
    try:
        config.preset
    except RegistryError as error:
        raise config.error(("model", "preset"), str(error)) from None
    names_in_source, unnamed = declared or (set(), False)
    for index, choice in enumerate(config.rewards):
        if choice.name in names_in_source:
            config.unrun_rewards.append(choice.name)  # its params are checked when rewards.py runs
            continue
        try:
            reward = plugins.get_reward(choice.name)
        except RegistryError as error:
            if unnamed:
                config.unchecked_rewards.append(choice.name)
                continue
            raise config.error(("rewards", index, "name"), str(error)) from None
        _check_params(config, index, choice, reward.params)
    names = [choice.name for choice in config.rewards]
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise config.error(("rewards", index, "name"), _(
                "{name!r} is listed twice; keep one [[rewards]] entry per reward").format(name=name))
    _refuse_gold_in_the_prompt(config)


def _refuse_gold_in_the_prompt(config: ProjectConfig) -> None:
    """A reward's answer_column must not be the prompt column: the model would be shown the gold answer it is
    scored against, and learn to copy it."""
    prompt_column = config.dataset["prompt_column"]
    for index, choice in enumerate(config.rewards):
        if _params_in_effect(choice).get("answer_column") != prompt_column:
            continue
        loc = ("rewards", index, "params", "answer_column") if "answer_column" in choice.params else \
            ("dataset", "prompt_column")
        raise config.error(loc, _(
            "the {name} reward's answer_column and dataset.prompt_column are both {column!r}: the model would be "
            "prompted with the gold answer it is scored against; point one of them at another column").format(
            name=choice.name, column=prompt_column))


def _params_in_effect(choice: RewardChoice) -> dict[str, Any]:
    """A reward's params as its factory will get them: its defaults, then config.toml's."""
    try:
        defaults = dict(plugins.get_reward(choice.name).params)
    except RegistryError:
        defaults = {}  # a reward of an unrun rewards.py: only its given params are known
    return {**defaults, **choice.params}


def _check_params(config: ProjectConfig, index: int, choice: RewardChoice, declared) -> None:
    for key, value in choice.params.items():
        loc = ("rewards", index, "params", key)
        if key not in declared:
            close = suggest(key, declared)
            hint = _("did you mean `{suggestion}`? ").format(suggestion=close) if close else ""
            raise config.error(loc, _("reward {name!r} has no param {key!r}; {hint}it takes: {params}").format(
                name=choice.name, key=key, hint=hint, params=", ".join(sorted(declared)) or _("none")))
        expected = param_kind(declared[key])
        if expected and not fits_kind(value, expected):
            raise config.error(loc, _("= {value}: must be {expected}, like its default {default}").format(
                value=schema.toml_value(value), expected=_(expected[1]), default=schema.toml_value(declared[key])))


# ---- the model ------------------------------------------------------------------------------------------

def looks_local(name: str) -> bool:
    """A model name written as a path (./m, ~/m, /m, a/b/c), not a hub id."""
    return name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1


def _local_folder(name: str, project_dir: Path) -> Path | None:
    candidate = home_expanded(name)
    if not candidate.is_absolute():
        candidate = project_dir / candidate
    if looks_local(name) or candidate.exists():
        return candidate.resolve()
    return None


def check_model(config: ProjectConfig) -> None:
    """A local model folder (and ``model.adapter``) must be there; a hub id must look like one."""
    adapter = config.adapter_dir()
    if adapter is not None and not (adapter / "adapter_config.json").is_file():
        raise config.error(("model", "adapter"), _(
            "no LoRA adapter in {path} (adapter_config.json is missing); point it at a saved adapter "
            "folder").format(path=adapter))
    name, local = config.model["name"], config.local_model_dir()
    if config.builds_its_model():
        return
    _refuse_a_model_built_for_another_preset(config)
    if local is None:
        problem = None if HUB_ID.match(name) else _(
            "{name!r} is neither a model folder nor a hub id like 'Qwen/Qwen3-4B'").format(name=name)
    elif not local.is_dir():
        problem = _("no model folder {path}").format(path=local)
    elif (local / "config.json").is_file():
        problem = None
    elif (local / "adapter_config.json").is_file():
        raise config.error(("model", "name"), _(
            "{path} is a LoRA adapter, not a model; set model.adapter to it and model.name to its base "
            "model").format(path=local))
    else:
        problem = _("{path} has no config.json, so it is not a model folder").format(path=local)
    if problem is None:
        return
    fix = (_("pass --model PATH to a model folder, or give a hub id") if config.model_flag
           else _("give model.name a model folder (a relative path is read from the project folder) or a hub id"))
    raise config.error(("model", "name"), _("{problem}; {fix}").format(problem=problem, fix=fix))


def _refuse_a_model_built_for_another_preset(config: ProjectConfig) -> None:
    """A preset's model made on this machine (tiny's) has no hub copy: under another preset (`set model.preset=...`
    on a tiny project) its name would be read as a hub id to download."""
    name = config.model["name"]
    for registered in plugins.presets().values():
        other = registered.item
        if other.build_model and name == other.model_id and other.name != config.model["preset"]:
            raise config.error(("model", "name"), _(
                "{name!r} is the {other} preset's model, built on this machine for that preset only; with preset "
                "{preset}, set model.name to its model ({model_id}) or to a model folder").format(
                name=name, other=other.name, preset=config.model["preset"], model_id=config.preset.model_id))


def model_positions(config: ProjectConfig, model_dir: str | Path | None = None,
                    model_config: dict | None = None) -> int | None:
    """How many positions the model reads (its config.json's max_position_embeddings), when its config.json is
    on this machine: ``model_dir``, a local model folder, or a hub model in the Hugging Face cache (or
    ``model_config``, that file already read)."""
    if model_config is None:
        model_config = model_config_json(config, model_dir)
    for table in (model_config, model_config.get("text_config") or {}):
        positions = table.get("max_position_embeddings") if isinstance(table, dict) else None
        if isinstance(positions, int) and positions > 0:
            return positions
    return None


def positions_here(config: ProjectConfig) -> int | None:
    """``model_positions`` as a command that may make the model reads them: where a preset builds its model (tiny),
    from that build, made now as `check` and `plan` make it (not without the training packages: None)."""
    if not config.builds_its_model():
        return model_positions(config) or _declared_positions(config)
    if any(importlib.util.find_spec(package) is None for package in ("torch", "transformers")):
        return None
    return model_positions(config, config.model_path())


def _declared_positions(config: ProjectConfig) -> int | None:
    """What the preset declares its own model reads, for that model when its config.json is not on this machine."""
    preset = config.preset
    return preset.max_position_embeddings if config.model["name"] == preset.model_id else None


def positions_of(name, preset, project_dir: Path) -> int | None:
    """``positions_here`` of the model that model.name ``name`` of preset ``preset`` names (a relative folder from
    ``project_dir``), for `set` and `new` before the config they make is whole; None where either is not text (a
    config the check refuses) or the preset is unknown."""
    if not isinstance(name, str) or not isinstance(preset, str):
        return None
    config = ProjectConfig(path=project_dir / CONFIG_FILE, model={"name": name, "preset": preset}, lora={},
                           dataset={}, rewards=[], grpo={})
    try:
        return positions_here(config)
    except RegistryError:  # an unknown preset: the config check names it
        return None


def _prompt_fit(path: Path, source: Source, longest_prompt: Callable[[ProjectConfig], int | None] | None,
                prompt_room: int | None):
    """For schema's check of a budget that leaves the prompt no room: (the model's positions, the longest prompt in
    tokens, ``prompt_room``) of the config it validated, each None where it is not known here."""
    def fit(data: dict) -> tuple[int | None, int | None, int | None]:
        config = ProjectConfig(path=path, model=data["model"], lora=data["lora"], dataset=data["dataset"], rewards=[],
                               grpo=data["grpo"], sft=data["sft"], source=source)
        return positions_here(config), (longest_prompt(config) if longest_prompt else None), prompt_room

    return fit


def model_config_json(config: ProjectConfig, model_dir: str | Path | None = None) -> dict:
    """The model's config.json where it is on this machine (``model_dir``, a local model folder, or a hub model in
    the Hugging Face cache); {} where it is not."""
    if model_dir is not None:
        found = Path(model_dir) / "config.json"
    elif config.builds_its_model():
        return {}  # built on first use; train.py checks it then
    elif config.local_model_dir() is not None:
        found = config.local_model_dir() / "config.json"
    else:
        try:
            from huggingface_hub import constants
        except ImportError:
            return {}
        # No folder for the model in the cache (its layout: models--org--name): nothing to read, and no need to
        # import huggingface_hub's download module (httpx, rich...: a third of `grpo-skill new`'s time).
        folder = constants.REPO_ID_SEPARATOR.join(["models", *config.model["name"].split("/")])
        if not (Path(constants.HF_HUB_CACHE) / folder).is_dir():
            return {}
        import huggingface_hub

        cached = huggingface_hub.try_to_load_from_cache(config.model["name"], "config.json")
        found = Path(cached) if isinstance(cached, str) else None
    try:
        model_config = json.loads(found.read_text(encoding="utf-8")) if found else {}
    except (OSError, ValueError):
        return {}
    return model_config if isinstance(model_config, dict) else {}


# config.json keys that only a Mixture-of-Experts model's config has
MOE_KEYS = ("output_router_logits", "num_experts", "num_local_experts", "n_routed_experts")


def check_against_model(config: ProjectConfig, model_config: dict) -> None:
    """[grpo] options that TRL refuses for this model only once it has loaded, read from its config.json ({}:
    not on this machine yet, nothing to check)."""
    check_lm_head_cast(config, model_config)
    coefficient = config.grpo.get("router_aux_loss_coef")
    text_config = model_config.get("text_config") or model_config
    if coefficient and model_config and not any(key in text_config for key in MOE_KEYS):
        raise config.error(("grpo", "router_aux_loss_coef"), _(
            "weights a Mixture-of-Experts model's router loss, and this model has no experts; remove it"))


def check_lm_head_cast(config: ProjectConfig, model_config: dict) -> None:
    """TRL's cast_lm_head_to_fp32 refuses an lm_head with a LoRA adapter, and fails (AttributeError, trl 1.14.2) on
    a LoRA model whose lm_head is tied to its embeddings, as Qwen3-4B's is: both only after the model has loaded."""
    if not config.grpo.get("cast_lm_head_to_fp32"):
        return
    if "lm_head" in config.lora["target_modules"]:
        raise config.error(("grpo", "cast_lm_head_to_fp32"), _(
            "TRL cannot cast an lm_head that carries a LoRA adapter; remove 'lm_head' from lora.target_modules, or "
            "remove cast_lm_head_to_fp32"))
    if model_config.get("tie_word_embeddings"):
        raise config.error(("grpo", "cast_lm_head_to_fp32"), _(
            "this model ties its lm_head to its embeddings (tie_word_embeddings in its config.json), and TRL's cast "
            "fails on such a LoRA model; remove cast_lm_head_to_fp32"))


def check_positions(config: ProjectConfig, positions: int | None,
                    longest_prompt: Callable[[ProjectConfig], int | None] | None = None) -> None:
    """model.max_seq_length within what the model reads: a longer one would pass every check and fail (or
    extrapolate silently) deep in training. ``longest_prompt``: as ``load`` takes it, for the fix of a length that
    `set` or `new` raised itself."""
    if positions is None or config.model["max_seq_length"] <= positions:
        return
    # as `set` and `new --set` take it; in [model] of the file
    key = "model.max_seq_length" if config.by_set or config.by_new else "max_seq_length"
    fix = _("set {key} to {positions} or less").format(key=key, positions=positions)
    if config.source is not None and "model.max_seq_length" in config.source.derived:
        # raised by `set` (`new`) to fit the budget it was given: the fix is in that command
        fix = _raised_past_positions(config, positions, longest_prompt(config) if longest_prompt else None) or fix
    raise config.error(("model", "max_seq_length"), _(
        "the model reads at most {positions} tokens (max_position_embeddings in its config.json); {fix}").format(
        positions=positions, fix=fix))


def _raised_past_positions(config: ProjectConfig, positions: int, longest: int | None) -> str | None:
    """The fix where `set` (`new`) raised model.max_seq_length past the model's positions to fit the budget it was
    given, as that command takes it: with the longest prompt counted, the budget as far as it fits beside it and
    max_seq_length at the positions (given, so that it is not raised again); else the budget lowered to what leaves the
    prompts the room they had. None where neither fits."""
    completion = config.grpo["max_completion_length"]
    if longest is not None and longest >= positions:
        return _("the longest prompt alone is {longest} tokens; shorten the prompts").format(longest=longest)
    if longest is not None:
        most = min(completion, positions - longest)
        settings = {"grpo.max_completion_length": most} if most < completion else {}
        settings["model.max_seq_length"] = positions
        if config.by_set:
            return _("give {settings} in this `grpo-skill set` command (the longest prompt is {longest} "
                     "tokens)").format(settings=" ".join(f"{key}={value}" for key, value in settings.items()),
                                       longest=longest)
        return _("give {settings} (the longest prompt is {longest} tokens)").format(
            settings=" ".join(f"--set {key}={value}" for key, value in settings.items()), longest=longest)
    room = config.model["max_seq_length"] - completion  # what the raise kept for the prompts
    if positions <= room:
        return None
    if config.by_set:
        return _("lower grpo.max_completion_length to {most} or less in this `grpo-skill set` command, leaving the "
                 "prompts the {room} tokens they had").format(most=positions - room, room=room)
    return _("give --set grpo.max_completion_length={most} or less, leaving the prompts the preset's {room} "
             "tokens").format(most=positions - room, room=room)


# ---- the hub --------------------------------------------------------------------------------------------

def check_hub_access(config: ProjectConfig, probe: bool = True, *, model: bool = True, dataset: bool = True) -> None:
    """A model or dataset named by hub id must be on the hub (asked in one request when ``probe``), or cached
    when offline. Offline (by HF_HUB_OFFLINE, or a hub that does not answer in seconds) a cached one is used
    without network retries, and a missing one is an error now rather than a minute of retries later."""
    wanted = []
    if model and not config.builds_its_model() and config.local_model_dir() is None:
        wanted.append((("model", "name"), N_("model"), config.model["name"]))
    if dataset and dataset_on_the_hub(config):
        wanted.append((("dataset", "path"), N_("dataset"), config.dataset["path"]))
    if not wanted:
        return
    reason = offline_by_env()
    if reason is None:
        if not probe:
            return
        if hub_reachable():
            for loc, kind, repo_id in wanted:
                found = None if hub_cached(repo_id, kind) else hub_has(repo_id, kind)
                if found is False:
                    raise config.error(loc, _(
                        "{kind} {repo!r} is not on the hub: check the name (a private repo needs HF_TOKEN, in .env), "
                        "or use {flag} for a local copy").format(
                        kind=_(kind), repo=repo_id,
                        flag=_local_model(config) if kind == "model" else _("a local file")))
                if found == "gated":
                    raise config.error(loc, _("{kind} {repo!r} is gated: accept its terms on its hub page, then set "
                                              "HF_TOKEN (in .env)").format(kind=_(kind), repo=repo_id))
            return
        host = hub_host()[0]
        reason = _("{host} cannot be reached").format(host=host)
        go_offline()
    for loc, kind, repo_id in wanted:
        if hub_cached(repo_id, kind):
            continue
        offline = reason if " " in reason else _("{variable} is set").format(variable=reason)
        flag = _local_model(config) if kind == "model" else _("dataset.path = a local file")
        raise config.error(loc, _("{kind} {repo!r} is not in the Hugging Face cache and the hub is offline "
                                  "({why}); use {flag}, or download it where there is a network").format(
            kind=_(kind), repo=repo_id, why=offline, flag=flag))


def check_push_to_hub(config: ProjectConfig) -> None:
    """grpo.push_to_hub: the trainer makes its hub repo as it starts, after the model has loaded, and pushes at each
    save; offline it cannot, and without a token it stops there."""
    if config.grpo.get("push_to_hub") is not True:
        return
    offline = offline_by_env()
    if offline:
        raise config.error(("grpo", "push_to_hub"), _(
            "= true, but {variable} is set: the trainer cannot make or push to its hub repo offline; remove "
            "push_to_hub (upload the adapter later with `hf upload`), or unset {variable}").format(variable=offline))
    if hub_token_set(config.project_dir) is False:
        config.warnings.append(config.said(("grpo", "push_to_hub"), _(
            "= true, but no Hugging Face token is set (HF_TOKEN, in .env, or `hf auth login`): the trainer would stop "
            "when it makes its hub repo, after the model has loaded")))


def _local_model(config: ProjectConfig) -> str:
    """How a refusal of a hub model says to use a local copy: the command's --model PATH where it has the flag
    (train.py, new), else model.name (check, set, plan)."""
    return "--model PATH" if config.model_flag else _("model.name = a local folder")


# ---- the dataset ----------------------------------------------------------------------------------------

def dataset_on_the_hub(config: ProjectConfig) -> bool:
    path = config.dataset["path"]
    return config.dataset_file() is None and not (config.project_dir / home_expanded(path)).is_dir()


def wanted_columns(config: ProjectConfig) -> list[tuple[str, str]]:
    """(what needs it, column) for the prompt column and every reward param named ``*_column``."""
    wanted = [("dataset.prompt_column", config.dataset["prompt_column"])]
    for choice in config.rewards:
        for key, column in _params_in_effect(choice).items():
            if key.endswith("_column") and isinstance(column, str) and column:  # "": no column (llm_judge)
                wanted.append((_("{name} reward's {key}").format(name=choice.name, key=key), column))
    return wanted


def check_dataset(config: ProjectConfig) -> DatasetInfo:
    """A local file must exist, parse, have rows and every wanted column (prompts as text); the first bad row
    is named by its line. A hub dataset id is checked for its form here, for access by ``check_hub_access``."""
    path = config.dataset["path"]
    data_file = config.dataset_file()
    loc = ("dataset", "path")
    folder = config.project_dir / home_expanded(path)
    if folder.is_dir():  # datasets would read it as a hub-style repo and fail in a long traceback
        raise config.error(loc, _("{path} is a folder; give a .jsonl, .json, .csv or .parquet file (or a hub "
                                  "dataset id)").format(path=folder))
    if data_file is None:
        suffix = Path(path).suffix.lower()
        if suffix in OTHER_FILE_SUFFIXES:
            raise config.error(loc, _("{suffix} files cannot be read; use .jsonl, .json, .csv or .parquet").format(
                suffix=suffix))
        if folder.is_file():  # datasets would take it for a hub id, and train.py say it is not in the cache
            raise config.error(loc, _("{path} is not a .jsonl, .json, .csv or .parquet file; rename it (or convert "
                                      "it) to one of those").format(path=folder))
        if looks_local(path) or not HUB_ID.match(path):
            raise config.error(loc, _("{path} does not exist; point it at your prompts file or a hub dataset "
                                      "id").format(path=folder))
        return DatasetInfo(local=False)
    if not data_file.is_file():
        raise config.error(loc, _("{path} does not exist; point it at your prompts file").format(path=data_file))
    if config.dataset["split"] != "train":
        raise config.error(("dataset", "split"), _(
            "a local file has one split, 'train'; set split = \"train\" (or split the file yourself)"))
    wanted = wanted_columns(config)
    shown = shown_path(data_file)
    try:
        info = scan(data_file, shown, wanted, given=config.source.overridden if config.source else ())
    except UnicodeDecodeError as error:
        raise ConfigError(_("{file}: not UTF-8 text (byte {position}); save it as UTF-8").format(
            file=shown, position=error.start)) from None
    if info.rows == 0:
        raise ConfigError(_("{file}: no rows; add prompts (dataset.path)").format(file=shown))
    return info


# kept for projects generated before check_dataset existed
check_dataset_columns = check_dataset


