"""`python train.py --smoke`: generation, every reward, a checkpoint and a resume, whatever the batch layout."""

import json
import sys

import pytest

from grpo_skill.runtime import smoke


@pytest.mark.parametrize("grpo, every", [
    # the standard preset: 32 micro-steps per generation, 4 per optimizer step -> a generation every 8 steps
    ({"per_device_train_batch_size": 1, "gradient_accumulation_steps": 4, "steps_per_generation": 32}, 8),
    ({"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1}, 1),  # the tiny preset
    ({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4}, 1),  # TRL's default: spg = accumulation
    ({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 2, "generation_batch_size": 16}, 4),
    ({"per_device_train_batch_size": 1, "gradient_accumulation_steps": 4, "steps_per_generation": 8,
      "num_iterations": 2}, 4),
    ({"per_device_train_batch_size": 1, "gradient_accumulation_steps": 4, "steps_per_generation": 2}, 1),
])
def test_the_smoke_steps_cover_two_generations_for_any_layout(grpo, every):
    planned = smoke.plan({"output_dir": "outputs", **grpo})
    assert (planned.checkpoint_step, planned.max_steps) == (every, 2 * every)
    assert planned.output_dir == "outputs/smoke"


def test_smoke_samples_scores_saves_and_resumes_then_says_what_it_verified(cli, tmp_path, tiny_model, english):
    # 2 micro-steps per generation, 1 per optimizer step: a 1-step run would never sample a second time
    cli("new", "p", "--preset", "tiny", "-r", "thinking", "-r", "length:0.5", "--set", "grpo.steps_per_generation=2",
        "--set", "grpo.save_steps=50", "--set", "grpo.logging_steps=5", cwd=tmp_path)
    project = tmp_path / "p"
    from support import run

    done = run([sys.executable, "train.py", "--smoke"], cwd=project, timeout=300)
    assert "smoke test passed" in done.stdout
    assert "generation: completions sampled and scored at steps 1, 3" in done.stdout
    assert "rewards: thinking, length, each logged" in done.stdout
    assert "checkpoint: checkpoint-2 saved at step 2; the run resumed from it and finished step 4" in done.stdout
    folder = project / "outputs" / "smoke"
    assert json.loads((folder / "summary.json").read_text())["global_step"] == 4
    assert (folder / "adapter").is_dir() and not (project / "outputs" / "summary.json").exists()

    refused = run([sys.executable, "train.py", "--smoke", "--max-steps", "3"], cwd=project, check=False)
    assert refused.returncode != 0 and "--smoke chooses --max-steps itself; leave them out" in refused.stderr


def test_a_stand_in_whose_prompts_do_not_fit_gets_a_larger_max_seq_length_for_that_run_only(
        cli, tmp_path, tiny_model, english, capsys):
    from grpo_skill import project as projects
    from grpo_skill.schema import ConfigError

    cli("new", "p", "--preset", "standard", "--set", "model.max_seq_length=512",
        "--set", "grpo.max_completion_length=128", cwd=tmp_path)
    config_file = tmp_path / "p" / "config.toml"
    before = config_file.read_text(encoding="utf-8")
    # the tiny tokenizer makes the JSON task's longest email prompt 434 tokens (Qwen3's: about 130)
    configured = projects.load(config_file)
    with pytest.raises(ConfigError, match=r"max_seq_length \(512\) is below the longest prompt \(434 tokens\)"):
        smoke.fit_prompts(configured, [300, 434], stand_in=False)  # the configured model: refused as before
    stand_in = projects.load(config_file, {"model.name": str(tiny_model)})
    smoke.fit_prompts(stand_in, [300, 434], stand_in=True)
    assert stand_in.model["max_seq_length"] == 562
    assert ("the stand-in model's tokenizer makes the longest prompt 434 tokens, so max_seq_length is 562 for this "
            "run only (config.toml keeps 512") in capsys.readouterr().err
    assert config_file.read_text(encoding="utf-8") == before
    # beyond the stand-in's own positions it is refused: the run could not work, and the fix stays within them
    with pytest.raises(ConfigError, match=r"the model reads at most 40960 tokens \(its max_position_embeddings\); "
                                          "lower max_completion_length to 60 and raise max_seq_length to 40960, or "):
        smoke.fit_prompts(projects.load(config_file, {"model.name": str(tiny_model)}), [40900], stand_in=True)
