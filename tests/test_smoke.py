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
