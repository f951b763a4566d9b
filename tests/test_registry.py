"""The plugin registry: built-ins, plugins registered by hand, installed entry points, broken plugins."""

import json
import textwrap

import pytest

from grpo_skill import Preset, Reward, hookimpl, plugins
from grpo_skill.registry import RegistryError


def test_builtins_are_registered_like_plugins():
    assert set(plugins.presets()) >= {"standard", "thinking", "tiny"}
    assert set(plugins.rewards()) >= {"length", "format", "thinking", "thinking_comprehensive", "accuracy"}
    infos = {info.name: info for info in plugins.plugin_infos()}
    assert infos["builtin:presets"].hooks == ("register_presets",)
    assert infos["builtin:rewards"].hooks == ("register_rewards",)


def test_seed_presets_keep_the_seed_values_but_the_documented_departures():
    standard, thinking = plugins.get_preset("standard"), plugins.get_preset("thinking")
    assert standard.model_id == "unsloth/Qwen3-4B-unsloth-bnb-4bit"
    assert thinking.model_id == "unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit"
    for preset in (standard, thinking):
        assert preset.load_in_4bit
        lora = preset.lora
        assert (lora.r, lora.alpha, lora.dropout, lora.gradient_checkpointing) == (16, 16, 0.0, "unsloth")
        assert lora.target_modules == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
        assert {k: preset.grpo[k] for k in (
            "learning_rate", "beta", "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
            "optim",
        )} == {
            "learning_rate": 1e-5, "beta": 0.1, "num_generations": 4,
            "per_device_train_batch_size": 1, "gradient_accumulation_steps": 4, "optim": "adamw_8bit",
        }
    assert thinking.template_opens_think and not standard.template_opens_think
    # The departures that SKILL.md's preset table justifies: thinking gets room to close </think> (the seed's
    # 1024 is a floor), standard renders prompts with Qwen3's thinking off and room for whole answers.
    assert thinking.grpo["max_completion_length"] >= 1024
    assert thinking.max_seq_length >= thinking.grpo["max_completion_length"] + 256
    assert standard.chat_template_kwargs == {"enable_thinking": False} and not thinking.chat_template_kwargs
    assert standard.max_seq_length >= standard.grpo["max_completion_length"] + 256


class ExtraPlugin:
    """A plugin object registered in a test: one reward and one preset."""

    @hookimpl
    def register_rewards(self, register):
        register(Reward("always_half", lambda context: lambda completions, **kw: [0.5] * len(completions),
                        "Scores every completion 0.5."))

    def __init__(self):
        self.base = plugins.get_preset("tiny")

    @hookimpl
    def register_presets(self, register):
        base = self.base
        register(Preset(name="tiny-extra", description="tiny, from a test plugin", model_id=base.model_id,
                        max_seq_length=base.max_seq_length, load_in_4bit=False, grpo=base.grpo,
                        rewards=(("always_half", 1.0),), lora=base.lora, build_model=base.build_model))


@pytest.fixture
def extra_plugin():
    plugins.register(ExtraPlugin(), name="extra")
    try:
        yield
    finally:
        plugins.unregister("extra")


def test_a_registered_plugin_shows_up_in_the_listings(extra_plugin):
    from click.testing import CliRunner

    from grpo_skill.cli import main

    rewards = json.loads(CliRunner().invoke(main, ["rewards", "--json"]).output)
    assert {"name": "always_half", "plugin": "extra"}.items() <= next(r for r in rewards if r["name"] == "always_half").items()
    presets = {p["name"]: p for p in json.loads(CliRunner().invoke(main, ["presets", "--json"]).output)}
    assert presets["tiny-extra"]["plugin"] == "extra"
    # what an assistant needs to know before writing a thinking reward: does the prompt already open <think>?
    assert (presets["thinking"]["template_opens_think"], presets["standard"]["template_opens_think"]) == (True, False)
    listed = json.loads(CliRunner().invoke(main, ["plugins", "--json"]).output)
    assert next(p for p in listed if p["name"] == "extra")["hooks"] == ["register_presets", "register_rewards"]


def test_a_plugin_with_an_unknown_hook_is_refused_loudly():
    class Typo:
        @hookimpl
        def register_reward(self, register):  # missing "s"
            pass

    with pytest.raises(RegistryError, match="register_reward"):
        plugins.register(Typo(), name="typo")
    assert not plugins.pm.has_plugin("typo")


def test_two_plugins_registering_one_name_is_an_error():
    class Clash:
        @hookimpl
        def register_rewards(self, register):
            register(Reward("length", lambda context: None, "clashes with the built-in"))

    plugins.register(Clash(), name="clash")
    try:
        with pytest.raises(RegistryError, match="'length' is registered by both"):
            plugins.rewards()
    finally:
        plugins.unregister("clash")


def write_fake_distribution(site, name, module, entry_points, source):
    """An installed-looking distribution: a module plus a .dist-info with grpo_skill entry points."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[grpo_skill]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))


GOOD_PLUGIN = """
    from grpo_skill import Reward, hookimpl

    @hookimpl
    def register_rewards(register):
        register(Reward("shouting", lambda c: lambda completions, **kw: [float(x.isupper()) for x in completions],
                        "1.0 for all-caps"))
"""


@pytest.fixture
def fake_site(tmp_path):
    write_fake_distribution(tmp_path, "good_plugin", "good_plugin", {"good": "good_plugin"}, GOOD_PLUGIN)
    write_fake_distribution(tmp_path, "broken_plugin", "broken_plugin", {"broken": "broken_plugin"},
                            "import a_module_that_does_not_exist\n")
    write_fake_distribution(tmp_path, "typo_plugin", "typo_plugin", {"typo": "typo_plugin"}, """
        from grpo_skill import hookimpl

        @hookimpl
        def register_reward(register):
            pass
    """)
    return tmp_path


def list_plugins(cli, site, **env):
    result = cli("plugins", "--json", env={"PYTHONPATH": str(site), **env})
    return {p["name"]: p for p in json.loads(result.stdout)}, result.stderr


def test_installed_plugins_load_and_broken_ones_are_reported(cli, fake_site):
    listed, _ = list_plugins(cli, fake_site, GRPO_SKILL_PLUGINS=None)
    assert listed["good"]["source"] == "entry point" and listed["good"]["hooks"] == ["register_rewards"]
    assert "ModuleNotFoundError" in listed["broken"]["error"] and "a_module_that_does_not_exist" in listed["broken"]["error"]
    assert "register_reward" in listed["typo"]["error"]
    # the CLI still works, and says what failed
    rewards = cli("rewards", "--json", env={"PYTHONPATH": str(fake_site), "GRPO_SKILL_PLUGINS": None})
    assert "shouting" in {r["name"] for r in json.loads(rewards.stdout)}
    assert "plugin 'broken' failed to load" in rewards.stderr


def test_the_environment_variable_restricts_which_plugins_load(cli, fake_site):
    listed, _ = list_plugins(cli, fake_site, GRPO_SKILL_PLUGINS="good")
    assert "good" in listed and "broken" not in listed and "typo" not in listed
    listed, _ = list_plugins(cli, fake_site, GRPO_SKILL_PLUGINS="")
    assert set(listed) == {"builtin:presets", "builtin:rewards"}


def test_loading_a_second_project_replaces_the_first_projects_rewards(tmp_path):
    from grpo_skill import generator, project as config

    for name in ("first", "second"):
        generator.render(name, tmp_path, preset_name="tiny")
    config.load(tmp_path / "first")
    config.load(tmp_path / "second")  # the same reward name from another project's rewards.py: no clash
    project_plugins = [name for name, _ in plugins.pm.list_name_plugin() if name.startswith("project:")]
    assert project_plugins == ["project:" + str((tmp_path / "second").resolve())]
    assert plugins.rewards()["no_repetition"].plugin == project_plugins[0]
    plugins.unregister(project_plugins[0])
