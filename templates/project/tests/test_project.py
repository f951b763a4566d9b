"""This project's own checks: run `pytest` in the project folder."""

from pathlib import Path

from grpo_skill import config, plugins

PROJECT = Path(__file__).resolve().parents[1]


def test_config_is_valid_and_every_reward_is_registered():
    project_config = config.load(PROJECT / "config.toml")
    registered = plugins.rewards()
    for choice in project_config.rewards:
        assert choice.name in registered


def test_no_repetition_scores_loops_below_varied_text():
    plugins.register_project(PROJECT)
    reward = plugins.get_reward("no_repetition").build()
    varied, loop = reward(["the cat sat on the mat today", "go go go go go go go"])
    assert varied == 0.0
    assert loop == -0.8  # 5 trigrams, one distinct


def test_prompts_file_has_the_prompt_column():
    project_config = config.load(PROJECT / "config.toml")
    config.check_dataset_columns(project_config)  # raises ConfigError when the column is missing
    assert project_config.dataset_file().stat().st_size > 0
