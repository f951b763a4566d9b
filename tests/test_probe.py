"""`grpo-skill probe` on the tiny preset (CPU): every figure, and a verdict that follows the completion budget."""

import json
import re
import shlex
import sys

import pytest

from grpo_skill.probe import report_lines
from support import run

PROMPTS = "2"


def set_grpo(config, key, value):
    """Edit one [grpo] value of a generated config.toml, as a user would."""
    text, count = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", config.read_text())
    assert count == 1
    config.write_text(text)


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_model):
    root = tmp_path_factory.mktemp("probe")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "probe-run", "--preset", "tiny", "-o", str(root)])
    return root / "probe-run"


def probe(cli, project, *args):
    # one thread: a tiny model's sampling is many small steps, which spare threads on a busy CPU only slow down
    return cli("probe", str(project), "--prompts", PROMPTS, *args, env={"OMP_NUM_THREADS": "1"})


def test_a_budget_the_completions_end_within_is_ready(cli, project):
    set_grpo(project / "config.toml", "max_completion_length", 192)
    result = json.loads(probe(cli, project, "--json").stdout)
    assert result["verdict"] == "ready", result["findings"]
    assert result["completions"] == 2 * 8 and result["num_generations"] == 8
    assert 0 <= result["clipped_ratio"] <= 0.5
    assert result["thinking"]["mode"] == "open" and 0 < result["thinking"]["closed_ratio"] <= 1
    thinking = result["rewards"]["thinking"]
    assert -1 <= thinking["mean"] <= 1.1 and thinking["std"] > 0
    assert result["zero_spread_groups"] <= 0.5
    assert result["prompt_tokens"]["max"] >= result["prompt_tokens"]["mean"] > 0
    assert 0 < result["completion_tokens"]["mean"] <= 192
    assert result["tokens_per_second"] > 0
    assert result["natural_length"]["sampled_up_to"] >= 192
    assert not any(finding["blocking"] for finding in result["findings"])
    assert len(result["samples"]) == 2 and {"prompt", "completion", "reward", "rewards"} <= set(result["samples"][0])


def test_a_two_token_budget_flips_the_verdict_with_a_measured_budget(cli, project):
    set_grpo(project / "config.toml", "max_completion_length", 2)
    result = json.loads(probe(cli, project, "--json").stdout)
    assert result["verdict"] == "change"
    assert result["clipped_ratio"] > 0.5 and result["zero_spread_groups"] == 1.0
    codes = [finding["code"] for finding in result["findings"]]
    assert codes[0] == "clipped" and "zero_spread" in codes
    # the tiny preset's random weights: said, so that nobody tunes a real run from them
    assert codes[-1] == "random_weights" and not result["findings"][-1]["blocking"]
    clipped = result["findings"][0]
    suggested = result["natural_length"]["p90"]
    assert suggested and suggested > 2  # measured by sampling the cut-off completions on
    assert "max_completion_length" in clipped["advice"] and str(-(-suggested // 64) * 64) in clipped["advice"]
    # the advice as a command: it names the project (probed from another folder), and `set` takes it
    command = re.search(r"grpo-skill set .*?(?=[;,] (?:or|then) )", clipped["advice"]).group(0)
    words = shlex.split(command)
    assert words[2:4] == ["--project", str(project)]
    assert f"grpo.max_completion_length={-(-suggested // 64) * 64}" in words
    preview = cli(*words[1:], "--dry-run")
    assert "Would change" in preview.stdout and "grpo.max_completion_length: 2 →" in preview.stdout

    text = "\n".join(report_lines(result))  # what the command prints without --json
    assert f"clipped (hit max_completion_length): {result['clipped_ratio']:.0%}" in text
    assert "verdict: change" in text and clipped["advice"] in text
    assert "reward thinking: mean -1.000, std 0.000" in text


def test_a_folder_without_a_project_is_a_one_line_error(cli, tmp_path):
    result = cli("probe", str(tmp_path), check=False)
    assert result.returncode != 0
    assert "no such config file" in result.stderr and "Traceback" not in result.stderr


def test_an_uncached_model_offline_is_one_line_that_probe_model_can_follow(cli, project, tmp_path, english):
    # as train.py: checked before any model loads, so no minute of hub retries and no traceback
    result = cli("probe", str(project), "--model", "nobody/not-cached-model", check=False,
                 env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "Error: model.name (given on the command line): model 'nobody/not-cached-model' is not in "
        "the Hugging Face cache and the hub is offline (HF_HUB_OFFLINE is set); use --model PATH, or download it "
        "where there is a network"]


def test_probe_model_probes_that_model_instead_of_model_name(cli, project, tiny_model):
    set_grpo(project / "config.toml", "max_completion_length", 16)
    result = probe(cli, project, "--json", "--model", str(tiny_model))
    probed = json.loads(result.stdout)
    assert probed["model"] == str(tiny_model) and probed["completions"] == 2 * 8
    # a local folder, not the preset's own built model: no "random weights" note
    assert "random_weights" not in [finding["code"] for finding in probed["findings"]]
    assert "was not run" not in result.stderr  # probe builds and runs the rewards itself


STEP_AWARE_REWARDS = '''\
from grpo_skill import Reward, hookimpl


def factory(context):
    def by_step(completions, trainer_state, log_metric, **kwargs):
        log_metric("by_step/seen", len(completions))
        return [1.0 + trainer_state.global_step for _ in completions]

    return by_step


@hookimpl
def register_rewards(register):
    register(Reward("by_step", factory, "1 + the training step: reads what GRPOTrainer passes a reward"))
'''


def test_rewards_get_what_grpotrainer_passes_them(cli, tmp_path):
    # a reward that reads trainer_state and logs a metric, as TRL lets it in training, works in the probe too
    cli("new", "step-run", "--preset", "tiny", "-o", str(tmp_path))
    project = tmp_path / "step-run"
    (project / "rewards.py").write_text(STEP_AWARE_REWARDS)
    config = project / "config.toml"
    config.write_text(config.read_text().replace('name = "thinking"', 'name = "by_step"'))
    set_grpo(config, "max_completion_length", 4)
    result = json.loads(probe(cli, project, "--json").stdout)
    assert result["rewards"]["by_step"] == {"mean": 1.0, "std": 0.0, "min": 1.0, "max": 1.0}


def test_more_prompts_than_the_dataset_has_probes_them_all_and_says_so(cli, tmp_path, tiny_model, english):
    rows = tmp_path / "one.jsonl"
    rows.write_text('{"prompt": "Say hi."}\n')
    cli("new", "p", "--preset", "tiny", "--dataset", str(rows), cwd=tmp_path)
    result = cli("probe", str(tmp_path / "p"), "--prompts", "3", "--json", env={"OMP_NUM_THREADS": "1"})
    assert json.loads(result.stdout)["prompts"] == 1
    assert "note: --prompts 3 is more than the dataset's 1 row(s): probing all of them" in result.stderr
