"""A generation that draws more distinct prompts than the dataset has: TRL's RepeatSampler then yields nothing and
training ends at step 0 with exit 0, so check, new and train.py refuse it in one line with the fix."""

import json

import pytest

from grpo_skill.core import sampling


def write_rows(path, count):
    path.write_text("".join(json.dumps({"prompt": f"question {i}"}) + "\n" for i in range(count)), encoding="utf-8")
    return path


@pytest.mark.parametrize("grpo, processes, drawn", [
    ({"per_device_train_batch_size": 1, "gradient_accumulation_steps": 4, "steps_per_generation": 32,
      "num_generations": 4}, 1, 8),  # the standard preset
    ({"per_device_train_batch_size": 8, "steps_per_generation": 32, "num_generations": 8}, 2, 64),
    ({"per_device_train_batch_size": 2, "gradient_accumulation_steps": 4, "num_generations": 4}, 1, 2),
    ({"per_device_train_batch_size": 2, "generation_batch_size": 48, "num_generations": 4}, 3, 12),
])
def test_prompts_per_generation_as_trl_works_it_out(grpo, processes, drawn):
    assert sampling.prompts_per_generation(grpo, processes) == drawn


def test_the_fix_names_the_largest_steps_per_generation_that_fits():
    grpo = {"per_device_train_batch_size": 8, "steps_per_generation": 32, "num_generations": 8}
    assert sampling.draw_problem(grpo, rows=64, processes=2) is None
    problem = sampling.draw_problem(grpo, rows=24, processes=2)
    assert problem.startswith("one generation draws 64 distinct prompts on 2 processes (generation batch 512 / "
                              "num_generations 8), but the dataset has 24 row(s): TRL would train 0 steps")
    assert problem.endswith("--set grpo.steps_per_generation=12)")
    assert sampling.prompts_per_generation({**grpo, "steps_per_generation": 12}, 2) == 24
    # num_generations 3 with a batch of 2 per process: the steps must make the batch a multiple of 3
    odd = {"per_device_train_batch_size": 2, "steps_per_generation": 30, "num_generations": 3}
    assert sampling.fitting_steps(odd, rows=7, processes=1) == 9  # 18 completions: 6 prompts
    assert "lower grpo.per_device_train_batch_size" in sampling.draw_problem(
        {"per_device_train_batch_size": 16, "steps_per_generation": 1, "num_generations": 2}, rows=3)


def test_new_and_check_refuse_a_generation_larger_than_the_dataset(cli, tmp_path, english):
    data = write_rows(tmp_path / "small.jsonl", 6)
    done = cli("new", "p", "--dataset", str(data), cwd=tmp_path, check=False)  # the standard preset draws 8
    assert done.returncode == 1 and not (tmp_path / "p").exists()
    assert ("one generation draws 8 distinct prompts on one process (generation batch 32 / num_generations 4), but "
            "the dataset has 6 row(s): TRL would train 0 steps; set grpo.steps_per_generation = 6 (grpo-skill set "
            "grpo.steps_per_generation=6; with new: --set grpo.steps_per_generation=6)") in done.stderr
    cli("new", "p", "--dataset", str(data), "--set", "grpo.steps_per_generation=6", cwd=tmp_path)
    assert "OK" in cli("check", "p", cwd=tmp_path).stdout
    write_rows(tmp_path / "p" / "data" / "small.jsonl", 5)  # the user's data shrinks
    done = cli("check", "p", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "config.toml:" in done.stderr and "the dataset has 5 row(s)" in done.stderr
    assert "set grpo.steps_per_generation = 5 (grpo-skill set grpo.steps_per_generation=5;" in done.stderr
    # under accelerate launch on 2 processes the draw doubles: train.py's load refuses it before any model loads
    write_rows(tmp_path / "p" / "data" / "small.jsonl", 6)
    done = cli("check", "p", cwd=tmp_path, env={"WORLD_SIZE": "2"}, check=False)
    assert done.returncode == 1 and "12 distinct prompts on 2 processes" in done.stderr


def test_a_generation_batch_that_does_not_split_over_the_gpus_is_refused_before_training(cli, tmp_path, english):
    """GRPOConfig splits generation_batch_size over all processes in whole micro-batches and raises otherwise: on
    2 GPUs, 12 completions in micro-batches of 4 cannot split. check (as train.py's load under accelerate launch)
    and plan --gpus refuse it in one line with the multiple that works; on 3 GPUs it splits."""
    cli("new", "p", "--preset", "standard", cwd=tmp_path)
    config = tmp_path / "p" / "config.toml"
    config.write_text("\n".join("generation_batch_size = 12" if line.startswith("steps_per_generation =") else line
                                for line in config.read_text().splitlines()) + "\n")
    before = config.read_text()
    assert "OK" in cli("check", "p", cwd=tmp_path).stdout
    for done in (cli("check", "p", cwd=tmp_path, env={"WORLD_SIZE": "2"}, check=False),
                 cli("plan", "p", "--gpus", "2", cwd=tmp_path, check=False)):
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert ("generation_batch_size = 12 does not split over 2 processes in micro-batches of "
                "per_device_train_batch_size = 4: TRL refuses it; make it a multiple of 8") in done.stderr
    assert cli("plan", "p", "--gpus", "3", cwd=tmp_path).returncode == 0
    assert config.read_text() == before


def test_a_batch_that_makes_whole_groups_only_over_several_gpus_is_checked_for_that_launch(cli, tmp_path, english):
    """TRL counts every process in the generation batch that num_generations must divide: 4 completions a process
    and groups of 8 work on 2 GPUs, not on one. check says so on one process and names --gpus; check --gpus 2,
    WORLD_SIZE=2 (train.py's load under accelerate launch) and plan --gpus 2 accept it."""
    cli("new", "p", "--preset", "standard", cwd=tmp_path)
    config = tmp_path / "p" / "config.toml"
    text = config.read_text()
    assert "num_generations = 4" in text and "steps_per_generation = 8" in text
    config.write_text(text.replace("num_generations = 4", "num_generations = 8")
                      .replace("steps_per_generation = 8", "steps_per_generation = 1"))
    before = config.read_text()
    done = cli("check", "p", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert ("per_device_train_batch_size x steps_per_generation = 4 is not divisible by num_generations = 8; make the "
            "batch a multiple of 8 (on 2 GPUs it would be 8: check such a launch with grpo-skill check --gpus 2)"
            ) in done.stderr
    assert "OK" in cli("check", "p", "--gpus", "2", cwd=tmp_path).stdout
    assert "OK" in cli("check", "p", cwd=tmp_path, env={"WORLD_SIZE": "2"}).stdout
    assert cli("plan", "p", "--gpus", "2", cwd=tmp_path).returncode == 0
    done = cli("check", "p", "--gpus", "3", cwd=tmp_path, check=False)  # 12 completions: not whole groups of 8
    assert done.returncode == 1
    assert ("per_device_train_batch_size x steps_per_generation x 3 processes = 12 is not divisible by "
            "num_generations = 8") in done.stderr
    assert config.read_text() == before
