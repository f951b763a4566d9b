"""`grpo-skill doctor`: the facts it reads from this machine, the problems it finds in an environment, and its
exit status. Conditions this machine cannot produce (a GPU, trl 1.15, a clashing Unsloth) are given to the pure
``diagnose`` as facts, starting from this machine's real ones."""

from __future__ import annotations

import copy
import importlib.metadata
import json
import sys
import tomllib

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement

from grpo_skill import cli, doctor
from support import REPO, run

# The caps Unsloth 2026.10.9's metadata puts on packages grpo-skill shares (seen on the GPU machine, 2026-12-01).
UNSLOTH_REQUIRES = ["trl<=1.15.0", "transformers<=5.17.0", "datasets<5", "torch<2.15",
                    "xformers>=0.0.27; platform_system == 'Linux'", "tyro; extra == 'cli'"]


pytestmark = pytest.mark.usefixtures("english")  # messages compared as English text


@pytest.fixture(scope="module")
def facts():
    return doctor.collect()


def problems_of(facts, level=None):
    return [p for p in doctor.diagnose(facts) if level is None or p["level"] == level]


def test_the_tested_versions_are_the_pins_in_pyproject():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pinned = {Requirement(line).name.lower(): str(Requirement(line).specifier)
              for extra in doctor.EXTRAS for line in extras[extra]}
    assert {name: info["spec"] for name, info in doctor.tested_set().items()} == pinned
    assert doctor.tested_set()["trl"] == {"spec": "==1.14.2", "extra": "train"}


def test_the_facts_are_this_machines(facts):
    import torch

    for name, version in facts["packages"].items():
        try:
            assert version == importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            assert version is None
    assert facts["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert facts["torch"]["imported"] and facts["torch"]["cuda"] == torch.cuda.is_available()
    builtins = {"builtin:presets", "builtin:seed", "builtin:verifiable", "builtin:shaping", "builtin:structured",
                "builtin:execution", "builtin:judge"}
    assert {p["name"] for p in facts["plugins"]} >= builtins
    assert facts["disk"]["hub_cache_free_gib"] > 0


def test_this_machine_has_no_blocker(facts):
    assert problems_of(facts, doctor.BLOCKER) == []  # the CI machine trains the tiny preset


def test_trl_1_15_without_a_gpu_is_a_blocker(facts):
    broken = copy.deepcopy(facts)
    broken["packages"]["trl"] = "1.15.0"
    broken["torch"]["cuda"] = False
    [blocker] = problems_of(broken, doctor.BLOCKER)
    assert "trl 1.15.0 without a CUDA GPU" in blocker["what"] and blocker["fix"] == 'pip install "trl==1.14.2"'
    with_gpu = copy.deepcopy(broken)
    with_gpu["torch"].update(cuda=True, devices=[{"name": "H200", "total_gib": 139.8, "free_gib": 139.0,
                                                  "capability": "9.0", "bf16": True}])
    assert problems_of(with_gpu, doctor.BLOCKER) == []  # on a GPU it trains; it is only untested
    assert any("trl 1.15.0 is not the version grpo-skill is tested with (trl==1.14.2)" in p["what"]
               for p in problems_of(with_gpu, doctor.WARNING))


def test_unsloth_with_a_transformers_it_does_not_accept_is_a_blocker(facts):
    broken = copy.deepcopy(facts)
    broken["packages"].update(unsloth="2026.10.9", transformers="5.18.0")
    broken["requires"]["unsloth"] = UNSLOTH_REQUIRES
    blockers = problems_of(broken, doctor.BLOCKER)
    assert [p["what"] for p in blockers] == [
        "unsloth 2026.10.9 requires transformers<=5.17.0, but transformers 5.18.0 is installed"]
    assert blockers[0]["fix"] == 'pip install "transformers<=5.17.0"'


def test_missing_training_packages_are_a_blocker(facts):
    bare = copy.deepcopy(facts)
    for name in ("torch", "trl"):
        bare["packages"][name] = None
    bare["torch"] = {"imported": False, "error": "ModuleNotFoundError: No module named 'torch'", "cuda": False,
                     "devices": []}
    [blocker] = problems_of(bare, doctor.BLOCKER)
    assert blocker["what"] == "not installed, and train.py needs them: torch, trl"
    assert blocker["fix"] == 'pip install "grpo-skill[train]"'


def test_a_small_gpu_without_bf16_a_full_disk_a_broken_plugin_and_no_git(facts):
    worse = copy.deepcopy(facts)
    worse["torch"].update(cuda=True, devices=[{"name": "T4", "total_gib": 14.6, "free_gib": 2.0,
                                               "capability": "7.5", "bf16": False}])
    worse["packages"]["unsloth"] = None
    worse["disk"]["hub_cache_free_gib"] = 0.5
    worse["plugins"].append({"name": "judge", "source": "entry point", "version": "0.1",
                             "error": "ImportError: no module named openai"})
    worse["git"] = None
    found = {p["what"]: p["level"] for p in doctor.diagnose(worse)}
    assert found["GPU 0 (T4) has no bf16: training runs in fp16, which overflows more easily"] == doctor.WARNING
    assert found["GPU 0 (T4) has 2.0 GiB free: the 4B presets need about 6 GiB or more"] == doctor.WARNING
    assert any(what.startswith("0.5 GiB free beside the model cache") and level == doctor.BLOCKER
               for what, level in found.items())
    assert found["plugin 'judge' failed to load: ImportError: no module named openai"] == doctor.WARNING
    assert found["a CUDA GPU but no unsloth: train.py uses plain TRL + peft, several times slower and with more "
                 "memory"] == doctor.WARNING
    assert any(what.startswith("git is not installed") for what in found)
    assert list(found.values())[0] == doctor.BLOCKER  # blockers come first


def disk_problems(facts):
    return [p for p in doctor.diagnose(facts) if "beside the model cache" in p["what"]]


def test_with_a_project_the_disk_check_is_for_its_model(facts):
    roomy = copy.deepcopy(facts)
    roomy["disk"]["hub_cache_free_gib"] = 10.0
    assert [p["level"] for p in disk_problems(roomy)] == [doctor.WARNING]  # no project: a 4B model may not fit
    roomy["model"] = {"name": "unsloth/Qwen3-4B-unsloth-bnb-4bit", "local": False, "cached": False,
                      "download_gib": 3.3}
    assert disk_problems(roomy) == []  # 3.3 GiB and a run fit in 10
    tight = copy.deepcopy(roomy)
    tight["disk"]["hub_cache_free_gib"] = 3.0
    (problem,) = disk_problems(tight)
    assert problem["level"] == doctor.BLOCKER
    assert "unsloth/Qwen3-4B-unsloth-bnb-4bit needs about 3.3 GiB to download, and a run 1 more" in problem["what"]
    cached = copy.deepcopy(tight)
    cached["model"].update(cached=True, download_gib=None)
    assert disk_problems(cached) == []  # nothing to download


def test_a_projects_model_is_local_cached_or_a_download_of_its_known_size(cli, tmp_path, monkeypatch):
    cli("new", "tiny", "--preset", "tiny", "-o", str(tmp_path))
    assert doctor.project_model(tmp_path / "tiny") == {"name": "grpo-skill/tiny-qwen3", "local": True,
                                                       "cached": False, "download_gib": None, "hub_offline": None}
    cli("new", "thinking", "--preset", "thinking", "-o", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # a hub that does not answer, as on a machine offline
    model = doctor.project_model(tmp_path / "thinking")
    assert model["local"] is False and model["cached"] is False  # no hub here: never downloaded
    assert 3.0 < model["download_gib"] < 4.0  # Qwen3-4B at 4 bits; its bnb-4bit repo is ~3.5 GB
    assert model["hub_offline"] == "127.0.0.1 cannot be reached"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert doctor.project_model(tmp_path / "thinking")["hub_offline"] == "HF_HUB_OFFLINE is set"


def test_a_model_to_download_while_the_hub_is_offline_is_a_blocker(facts):
    offline = copy.deepcopy(facts)
    offline["model"] = {"name": "unsloth/Qwen3-4B-unsloth-bnb-4bit", "local": False, "cached": False,
                        "download_gib": 3.3, "hub_offline": "huggingface.co cannot be reached"}
    (problem,) = [p for p in doctor.diagnose(offline) if "project's model" in p["what"]]
    assert problem["level"] == doctor.BLOCKER
    assert problem["what"] == ("the project's model unsloth/Qwen3-4B-unsloth-bnb-4bit is not on this machine, and the "
                               "hub is offline (huggingface.co cannot be reached): train.py would stop before loading it")
    assert "--model PATH" in problem["fix"]
    reachable = copy.deepcopy(offline)
    reachable["model"]["hub_offline"] = None
    assert not [p for p in doctor.diagnose(reachable) if "project's model" in p["what"]]


def test_the_command_exits_1_on_a_blocker_and_shows_the_fix(facts, monkeypatch):
    broken = copy.deepcopy(facts)
    broken["packages"]["trl"] = "1.15.0"
    broken["torch"]["cuda"] = False
    monkeypatch.setattr(doctor, "collect", lambda project=None: broken)
    result = CliRunner().invoke(cli.main, ["doctor"])
    assert result.exit_code == 1
    assert "✗ trl 1.15.0 without a CUDA GPU" in result.output
    assert '  fix: pip install "trl==1.14.2"' in result.output
    assert "1 blocker(s)" in result.output

    result = CliRunner().invoke(cli.main, ["doctor", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False and report["problems"][0]["level"] == "blocker"


def test_the_command_on_this_machine(facts, monkeypatch):
    monkeypatch.setattr(doctor, "collect", lambda project=None: facts)
    result = CliRunner().invoke(cli.main, ["doctor"])
    assert result.exit_code == 0, result.output
    assert f"Python {facts['python']['version']}" in result.output and "Ready to train" in result.output


def test_help_for_the_new_commands_imports_nothing_heavy():
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from grpo_skill.cli import main\n"
        "for args in (['doctor', '--help'], ['update', '--help'], ['plugin', 'new', '--help'],\n"
        "             ['skill', 'install', '--help']):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0, args\n"
        "print(sorted({'torch', 'transformers', 'trl', 'datasets', 'peft', 'copier'} & set(sys.modules)))\n"
    )
    assert run([sys.executable, "-c", probe]).stdout.strip() == "[]"
