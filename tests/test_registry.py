"""The plugin registry: built-ins, plugins registered by hand, installed entry points, broken plugins."""

import json
import sys
import textwrap

import pytest

from grpo_skill import Judge, Preset, Reward, RewardError, hookimpl, plugins
from grpo_skill.registry import RegistryError

from support import run


def test_builtins_are_registered_like_plugins():
    assert set(plugins.presets()) >= {"standard", "thinking", "tiny"}
    assert set(plugins.rewards()) >= {"length", "format", "thinking", "thinking_comprehensive", "accuracy",
                                      "reasoning_accuracy", "cosine_length", "soft_overlong", "repetition",
                                      "think_format", "tag_count", "reasoning_steps", "language", "llm_judge"}
    infos = {info.name: info for info in plugins.plugin_infos()}
    assert infos["builtin:presets"].hooks == ("register_presets",)
    for kind in ("seed", "verifiable", "shaping"):
        assert infos[f"builtin:{kind}"].hooks == ("register_rewards",)
    assert infos["builtin:judge"].hooks == ("register_judges", "register_rewards")


def test_seed_presets_keep_the_seed_values_but_the_documented_departures():
    standard, thinking = plugins.get_preset("standard"), plugins.get_preset("thinking")
    assert standard.model_id == "unsloth/Qwen3-4B-unsloth-bnb-4bit"
    assert thinking.model_id == "unsloth/Qwen3-4B-Thinking-2507-unsloth-bnb-4bit"
    for preset in (standard, thinking):
        assert preset.load_in_4bit
        lora = preset.lora
        # "auto" for the seed's "unsloth": Unsloth's own where Unsloth trains, off where plan says it fits
        assert (lora.r, lora.alpha, lora.dropout, lora.gradient_checkpointing) == (16, 16, 0.0, "auto")
        assert lora.target_modules == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
        assert {k: preset.grpo[k] for k in ("learning_rate", "beta", "num_generations", "optim")} == {
            "learning_rate": 1e-5, "beta": 0.1, "num_generations": 8 if preset is thinking else 4, "optim": "adamw_8bit",
        }
        # the seed's 4 completions per optimizer step; standard takes them in one micro-batch (the same step)
        grpo = preset.grpo
        assert grpo["per_device_train_batch_size"] * grpo["gradient_accumulation_steps"] == 4
    assert (standard.grpo["per_device_train_batch_size"], thinking.grpo["per_device_train_batch_size"]) == (4, 1)
    # and as many optimizer steps per generation as before (steps_per_generation counts micro-batches)
    for preset, steps in ((standard, 8), (thinking, 4)):
        assert preset.grpo["steps_per_generation"] // preset.grpo["gradient_accumulation_steps"] == steps
    assert thinking.template_opens_think and not standard.template_opens_think
    # The departures that references/presets.md justifies: thinking gets room to close </think> (the seed's
    # 1024 is a floor) and groups of 8, standard renders prompts with Qwen3's thinking off and room for whole answers.
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


class Clash:
    """Registers a reward named like a built-in one, and one of its own."""

    @hookimpl
    def register_rewards(self, register):
        register(Reward("length", lambda context: None, "clashes with the built-in"))
        register(Reward("clash_only", lambda context: lambda completions, **kw: [0.0] * len(completions), "fine"))


@pytest.fixture
def project(tmp_path):
    from grpo_skill import generator

    generator.render("proj", tmp_path, preset_name="tiny")
    return tmp_path / "proj"


def invoke(*args):
    from click.testing import CliRunner

    from grpo_skill.cli import main

    return CliRunner().invoke(main, list(args))


def test_a_clashing_name_breaks_only_what_uses_it(project):
    plugins.register(Clash(), name="clash")
    try:
        assert "length" not in plugins.rewards() and "clash_only" in plugins.rewards()
        with pytest.raises(RegistryError, match="'length' is registered by both 'builtin:seed' and 'clash'"):
            plugins.get_reward("length")
        assert invoke("check", str(project)).exit_code == 0  # the tiny project uses `thinking` only
        config = project / "config.toml"
        config.write_text(config.read_text().replace('name = "thinking"', 'name = "length"'))
        result = invoke("check", str(project))
        assert result.exit_code == 1 and "'length' is registered by both" in result.stderr
        listing = invoke("rewards")
        assert listing.exit_code == 0 and "warning: reward 'length' is registered by both" in listing.stderr
    finally:
        plugins.unregister("clash")


class ClashingJudge:
    @hookimpl
    def register_judges(self, register):
        register(Judge("http", lambda params: lambda requests: [1.0] * len(requests), "clashes with the built-in"))


def test_a_clashing_judge_backend_is_warned_about_and_breaks_only_llm_judge_on_it(tmp_path):
    plugins.register(ClashingJudge(), name="clash-judge")
    try:
        listing = invoke("rewards")
        assert listing.exit_code == 0
        assert "judge backend 'http' is registered by both 'builtin:judge' and 'clash-judge'" in listing.stderr
        with pytest.raises(RewardError, match="judge backend 'http' is registered by both 'builtin:judge' and "
                                              "'clash-judge'; unregister one of them"):
            plugins.get_reward("llm_judge").build(params={"judge": {"url": "http://127.0.0.1:9/v1", "model": "m"}})
        with pytest.raises(RewardError, match="is no model folder"):  # the other backend is still found
            plugins.get_reward("llm_judge").build(params={"backend": "local", "judge": {"model": str(tmp_path / "none")}})
    finally:
        plugins.unregister("clash-judge")


class RaisingHook:
    @hookimpl
    def register_rewards(self, register):
        register(Reward("never_kept", lambda context: None, "registered before the hook fails"))
        raise ValueError("the plugin's own bug")


def test_a_hook_that_raises_is_isolated_and_listed_with_its_error():
    plugins.register(RaisingHook(), name="raising")
    try:
        assert "never_kept" not in plugins.rewards() and "thinking" in plugins.rewards()
        listed = {row["name"]: row for row in json.loads(invoke("plugins", "--json").stdout)}
        assert "ValueError: the plugin's own bug" in listed["raising"]["error"]
        assert "test_registry.py:" in listed["raising"]["error"]  # where it raised
        assert listed["builtin:seed"]["error"] is None
        rewards = invoke("rewards")
        assert rewards.exit_code == 0 and "plugin 'raising' failed in register_rewards" in rewards.stderr
        assert invoke("presets").exit_code == 0
        with pytest.raises(RegistryError, match="unknown reward 'never_kept'.*raising"):
            plugins.get_reward("never_kept")
    finally:
        plugins.unregister("raising")


class Derived:
    """Derives presets from a built-in one and from a preset of a plugin registered after it."""

    @hookimpl
    def register_presets(self, register):
        register(plugins.derive_preset("tiny", "tiny-long", description="tiny, 200 steps",
                                       grpo={"max_steps": 200}, lora={"r": 8}))
        register(plugins.derive_preset("later-base", "from-later", max_seq_length=512))


class LaterBase:
    @hookimpl
    def register_presets(self, register):
        register(plugins.derive_preset("tiny", "later-base", rewards=(("length", 1.0),)))


def test_a_preset_derived_from_another_during_registration():
    plugins.register(Derived(), name="derived")
    plugins.register(LaterBase(), name="later")
    try:
        tiny, long = plugins.get_preset("tiny"), plugins.get_preset("tiny-long")
        assert long.grpo == {**tiny.grpo, "max_steps": 200} and long.lora.r == 8
        assert long.lora.target_modules == tiny.lora.target_modules and long.build_model is tiny.build_model
        assert long.description == "tiny, 200 steps" and plugins.presets()["tiny-long"].plugin == "derived"
        later = plugins.get_preset("from-later")
        assert later.max_seq_length == 512 and later.rewards == (("length", 1.0),) and later.grpo == tiny.grpo
    finally:
        plugins.unregister("derived")
        plugins.unregister("later")


class CallsGetPreset:
    @hookimpl
    def register_presets(self, register):
        base = plugins.get_preset("tiny")  # recursed forever before derive_preset existed
        register(Preset(name="copy", description="", model_id=base.model_id, max_seq_length=128,
                        load_in_4bit=False, grpo=base.grpo, rewards=()))


class DerivesFromNothing:
    @hookimpl
    def register_presets(self, register):
        register(plugins.derive_preset("no-such-preset", "orphan"))


@pytest.mark.parametrize("plugin, error", [
    (CallsGetPreset(), "get_preset() was called while presets are being registered; derive a preset"),
    (DerivesFromNothing(), "preset 'orphan' derives from 'no-such-preset', which no plugin registers"),
])
def test_a_broken_derivation_is_reported_not_fatal(plugin, error):
    plugins.register(plugin, name="broken-presets")
    try:
        assert "tiny" in plugins.presets()
        assert error in plugins.hook_errors()["broken-presets"]
        assert invoke("presets").exit_code == 0
    finally:
        plugins.unregister("broken-presets")


def test_derive_preset_refuses_a_field_presets_do_not_have():
    with pytest.raises(RegistryError, match="Preset has no field 'think_end_token'"):
        plugins.derive_preset("tiny", "x", think_end_token="</think>")


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
    assert listed["broken"]["error"] == (
        f"{fake_site / 'broken_plugin.py'}:1: ModuleNotFoundError: No module named 'a_module_that_does_not_exist'")
    assert "register_reward" in listed["typo"]["error"]
    # the CLI still works, and says what failed
    rewards = cli("rewards", "--json", env={"PYTHONPATH": str(fake_site), "GRPO_SKILL_PLUGINS": None})
    assert "shouting" in {r["name"] for r in json.loads(rewards.stdout)}
    assert "plugin 'broken' failed to load" in rewards.stderr


def test_the_environment_variable_restricts_which_plugins_load(cli, fake_site):
    listed, _ = list_plugins(cli, fake_site, GRPO_SKILL_PLUGINS="good")
    assert "good" in listed and "broken" not in listed and "typo" not in listed
    listed, _ = list_plugins(cli, fake_site, GRPO_SKILL_PLUGINS="")
    assert set(listed) == {"builtin:presets", "builtin:seed", "builtin:verifiable", "builtin:shaping",
                           "builtin:structured", "builtin:execution", "builtin:judge"}


def test_an_unknown_name_in_the_environment_variable_warns(cli, fake_site):
    result = cli("rewards", env={"PYTHONPATH": str(fake_site), "GRPO_SKILL_PLUGINS": "good,nonexistent"})
    assert "shouting" in result.stdout
    assert "GRPO_SKILL_PLUGINS names 'nonexistent', which no installed package provides" in result.stderr
    assert "installed: broken, good, typo" in result.stderr


def test_a_typo_in_the_environment_variable_is_said_by_plugins_check_new_and_train(cli, fake_site, tmp_path):
    env = {"PYTHONPATH": str(fake_site), "GRPO_SKILL_PLUGINS": "goood"}
    warning = "GRPO_SKILL_PLUGINS names 'goood', which no installed package provides (installed: broken, good, typo)"
    assert warning in cli("plugins", env=env).stderr
    refused = cli("new", "shouty", "--preset", "tiny", "-r", "shouting", "-o", str(tmp_path), env=env, check=False)
    assert refused.returncode == 1 and not (tmp_path / "shouty").exists()
    # the reward is installed, but the variable keeps it out: the error says so
    assert warning in refused.stderr and "unknown reward 'shouting'" in refused.stderr
    assert "(GRPO_SKILL_PLUGINS=goood leaves out the installed plugins broken, good, typo)" in refused.stderr
    cli("new", "plain", "--preset", "tiny", "-o", str(tmp_path))
    assert warning in cli("check", str(tmp_path / "plain"), env=env).stderr
    loads = f"import grpo_skill.project as p; p.load_for_run({str(tmp_path / 'plain')!r})"  # train.py's first step
    assert warning in run([sys.executable, "-c", loads], env=env).stderr


def test_registering_a_plugin_twice_or_under_a_taken_name_says_so_in_one_line():
    seed = dict(plugins.manager().list_name_plugin())["builtin:seed"]
    with pytest.raises(RegistryError, match=r"^this plugin is already registered as 'builtin:seed'; unregister it"):
        plugins.register(seed, "seed-again")

    class Other:
        pass

    with pytest.raises(RegistryError, match=r"^a plugin named 'builtin:seed' is already registered; choose another"):
        plugins.register(Other(), "builtin:seed")
    assert "seed-again" not in dict(plugins.manager().list_name_plugin())


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


def test_the_readme_plugin_example_scores_strings_and_chat_messages():
    """README's plugin example, run as written: completions arrive as strings, or as chat messages when the
    dataset's prompts are conversations."""
    import re
    import types
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Plugins", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    module = types.ModuleType("readme_plugin")
    exec(compile(code, "README.md", "exec"), module.__dict__)
    plugins.register(module, name="readme")
    try:
        shouting = plugins.get_reward("shouting").build()
        assert shouting(completions=["STOP", "Fine."]) == [1.0, 0.0]
        assert shouting(completions=[[{"role": "assistant", "content": "NO"}], [{"role": "assistant", "content": "ok"}]],
                        prompts=[[{"role": "user", "content": "hi"}]] * 2) == [1.0, 0.0]
    finally:
        plugins.unregister("readme")


def test_presets_lists_each_presets_grpo_lora_and_template_settings(cli):
    listed = {row["name"]: row for row in json.loads(cli("presets", "--json").stdout)}
    standard = plugins.get_preset("standard")
    assert listed["standard"]["grpo"] == dict(standard.grpo)  # what `update` keeps: compare a project with it
    assert listed["standard"]["lora"]["r"] == standard.lora.r
    assert listed["standard"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert listed["thinking"]["grpo_summary"].startswith("lr 1e-05, beta 0.1, G 8, 2048 tokens")
    assert "2048 tokens" in cli("presets", env={"COLUMNS": "200"}).stdout


def test_plugin_hooks_run_once_per_load_not_on_every_lookup(tmp_path):
    """A plugin's hook may do work (open a client, read files): loading a project, building its rewards and listing
    them ask it once, until the plugins change."""
    from grpo_skill import generator, project

    class Counting:
        calls = 0

        @hookimpl
        def register_rewards(self, register):
            Counting.calls += 1
            register(Reward("counted", lambda context: lambda completions, **kw: [0.0] * len(completions), "."))

    generator.render("proj", tmp_path, preset_name="tiny")
    plugins.register(Counting(), "counting")
    try:
        loaded = project.load(tmp_path / "proj")  # registers the project's rewards.py: the plugins change once
        Counting.calls = 0
        loaded.build_rewards(tokenizer=None)
        project.load(tmp_path / "proj")
        plugins.get_reward("counted"), plugins.rewards(), plugins.warnings()
        assert Counting.calls == 0  # nothing changed since the first load: its registrations are reused
        plugins.unregister("counting")
        plugins.register(Counting(), "counting")
        plugins.get_reward("counted"), plugins.get_reward("length")
        assert Counting.calls == 1
    finally:
        plugins.unregister("counting")
