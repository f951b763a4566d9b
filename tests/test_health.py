"""Training-health warnings: the callback on synthetic GRPO logs (the metric names TRL 1.14.2 logs)."""

import io
import math
import types

import pytest
from rich.console import Console
from transformers import TrainerControl, TrainerState, TrainingArguments

from grpo_skill.runtime.health import HEALTH_KEY, TrainingHealth, warnings_in

HEALTHY = {"loss": 0.01, "grad_norm": 0.5, "reward": 0.2, "reward_std": 0.4, "frac_reward_zero_std": 0.1,
           "completions/clipped_ratio": 0.1, "kl": 0.01}


@pytest.fixture
def watch(tmp_path):
    """Feed one log dict per step to a TrainingHealth; returns (rows as JsonlMetrics would record them, output)."""
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    output = io.StringIO()
    callback = TrainingHealth(console=Console(file=output, width=200))
    state, control = TrainerState(), TrainerControl()

    def feed(logs_per_step):
        rows = []
        for step, logs in enumerate(logs_per_step, start=1):
            state.global_step = step
            logs = dict(logs)
            callback.on_log(args, state, control, logs=logs)
            rows.append({"step": step, **logs})
        return rows, output.getvalue()

    return feed


def steps(count, **changes):
    return [{**HEALTHY, **changes} for _ in range(count)]


def rising(count):
    return [{**HEALTHY, "reward": 0.1 * step} for step in range(count)]


def test_a_healthy_run_gets_no_warning(watch):
    rows, output = watch(rising(30))
    assert warnings_in(rows) == [] and output == ""


def test_zero_spread_warns_once_after_five_steps_with_advice(watch):
    rows, output = watch(rising(3) + [{**HEALTHY, "reward": 0.1 * i, "frac_reward_zero_std": 0.95}
                                      for i in range(12)])
    warnings = warnings_in(rows)
    assert [(w["step"], w["check"]) for w in warnings] == [(8, "zero_std")]  # steps 4-8: five in a row
    assert "frac_reward_zero_std" in warnings[0]["message"] and "sft.py" in warnings[0]["advice"]
    assert output.count("warning") == 1 and "(step 8)" in output


def test_a_streak_broken_by_one_good_step_starts_again(watch):
    bad = {"completions/clipped_ratio": 0.9}
    logs = [{**HEALTHY, "reward": 0.1 * i, **(bad if i != 4 else {})} for i in range(9)]
    rows, _ = watch(logs)
    assert warnings_in(rows) == []  # 4 bad, 1 good, 4 bad: never five in a row
    rows, _ = watch([{**HEALTHY, "reward": 1 + 0.1 * i, **bad} for i in range(1)])
    assert [w["check"] for w in warnings_in(rows)] == ["clipped"]  # the fifth in a row


def test_clipped_completions_advise_a_larger_budget(watch):
    rows, _ = watch([{**HEALTHY, "reward": 0.1 * i, "completions/clipped_ratio": 0.8} for i in range(6)])
    (warning,) = warnings_in(rows)
    assert warning["check"] == "clipped" and "max_completion_length" in warning["advice"]


def clipped_rows(console=None, **known):
    """Six steps of clipped completions (budget 64) logged by a TrainingHealth told ``known`` (the run's config
    file, its folder, max_seq_length)."""
    callback = TrainingHealth(console=console or Console(file=io.StringIO()), **known)
    args, state, control = types.SimpleNamespace(max_completion_length=64), TrainerState(), TrainerControl()
    rows = []
    for step in range(1, 7):
        state.global_step = step
        logs = {**HEALTHY, "reward": 0.1 * step, "completions/clipped_ratio": 0.8}
        callback.on_log(args, state, control, logs=logs)
        rows.append({"step": step, **logs})
    return rows


def test_the_clipped_advice_gives_the_command_that_doubles_the_runs_budget():
    """GRPOConfig's max_completion_length (64 here): the advice names `grpo-skill set` with twice it, printed and
    recorded, and `grpo-skill metrics` says it again from the recorded values."""
    output = io.StringIO()
    rows = clipped_rows(Console(file=output, width=300))
    (warning,) = warnings_in(rows)
    assert "e.g. grpo-skill set grpo.max_completion_length=128; or add a length reward" in warning["advice"]
    assert warning["advice"] in " ".join(output.getvalue().split())


def test_the_clipped_advice_keeps_the_prompts_room_and_names_the_project_where_it_is_read(tmp_path, monkeypatch):
    """train.py's config and max_seq_length known: the doubled budget comes with max_seq_length raised by as much
    (`set` would refuse the budget alone where the prompts no longer fit), and the command carries --project when
    `grpo-skill metrics` reads it from another folder."""
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    rows = clipped_rows(config_file=project / "config.toml", run_dir=project / "outputs", max_seq_length=256)
    wanted = "grpo-skill set grpo.max_completion_length=128 model.max_seq_length=320;"
    assert wanted in warnings_in(rows, project / "outputs")[0]["advice"]  # read in the project folder: no --project
    assert wanted in warnings_in(rows, "outputs")[0]["advice"]
    monkeypatch.chdir(tmp_path)
    assert wanted.replace("set", "set --project proj") in warnings_in(rows, "proj/outputs")[0]["advice"]
    (tmp_path / "beside").mkdir()
    monkeypatch.chdir(tmp_path / "beside")  # not inside: the project's full path
    assert wanted.replace("set", f"set --project {project.resolve()}") in warnings_in(rows, "../proj/outputs")[0][
        "advice"]


def test_the_clipped_advice_stops_at_the_models_positions(tmp_path, monkeypatch):
    """A model of 300 positions: twice the budget of 64 (max_seq_length 320) does not fit, so max_seq_length goes to
    300 and the budget to what that leaves the prompts' 192 tokens, said; a model of more positions changes
    nothing; with max_seq_length already at them, no command, and the advice says why."""
    monkeypatch.chdir(tmp_path)
    known = {"config_file": tmp_path / "config.toml", "run_dir": tmp_path / "outputs", "max_seq_length": 256}
    (warning,) = warnings_in(clipped_rows(**known, positions=300), "outputs")
    assert warning["advice"] == (
        "raise [grpo] max_completion_length (and model.max_seq_length) as far as the model reads (300 tokens, its "
        "max_position_embeddings; twice the budget does not fit), e.g. grpo-skill set grpo.max_completion_length=108 "
        "model.max_seq_length=300; or add a length reward such as soft_overlong")
    (warning,) = warnings_in(clipped_rows(**known, positions=40960), "outputs")
    assert "e.g. grpo-skill set grpo.max_completion_length=128 model.max_seq_length=320;" in warning["advice"]
    assert "positions" not in warning["values"]
    (warning,) = warnings_in(clipped_rows(**known, positions=256), "outputs")
    assert warning["advice"] == (
        "max_completion_length cannot grow and keep the prompts their room: model.max_seq_length is already the 256 "
        "tokens the model reads (its max_position_embeddings); add a length reward such as soft_overlong")


def test_the_clipped_advice_names_the_config_the_run_read_where_its_outputs_are_now(tmp_path, monkeypatch):
    """A run of `train.py --config big.toml` names big.toml (not the folder's config.toml, which it did not read);
    a project copied with its outputs names the copy's config, not the one the run was made from."""
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    rows = clipped_rows(config_file=project / "big.toml", run_dir=project / "outputs", max_seq_length=256)
    (advice,) = [warning["advice"] for warning in warnings_in(rows, "outputs")]
    assert "grpo-skill set --project big.toml grpo.max_completion_length=128" in advice
    rows = clipped_rows(config_file=project / "config.toml", run_dir=project / "outputs", max_seq_length=256)
    monkeypatch.chdir(tmp_path)
    (warning,) = warnings_in(rows, "copy/outputs")  # read from a copy
    assert "grpo-skill set --project copy grpo.max_completion_length=128" in warning["advice"]
    assert warning["values"]["command"].startswith("grpo-skill set --project copy ")  # --json says the same


def test_the_clipped_advice_names_the_project_when_its_outputs_folder_is_a_link(tmp_path, monkeypatch):
    project, scratch = tmp_path / "proj", tmp_path / "scratch" / "big" / "run_a"
    project.mkdir()
    scratch.mkdir(parents=True)
    (project / "outputs").symlink_to(scratch)
    rows = clipped_rows(config_file=project / "config.toml", run_dir=project / "outputs", max_seq_length=256)
    monkeypatch.chdir(tmp_path)
    (warning,) = warnings_in(rows, "proj/outputs")
    assert "grpo-skill set --project proj grpo.max_completion_length=128" in warning["advice"]
    monkeypatch.chdir(project)
    (warning,) = warnings_in(rows, "outputs")
    assert "grpo-skill set grpo.max_completion_length=128" in warning["advice"]


def test_a_reward_that_never_moves_is_flat(watch):
    rows, _ = watch(steps(15, reward=-1.0, frac_reward_zero_std=0.5))
    assert [(w["step"], w["check"]) for w in warnings_in(rows)] == [(10, "flat_reward")]


def test_kl_and_grad_norm_blow_ups(watch):
    logs = rising(8)
    logs[5] = {**logs[5], "kl": 3.5}
    logs[6] = {**logs[6], "grad_norm": 60.0}  # median so far 0.5
    logs[7] = {**logs[7], "kl": 9.0, "grad_norm": 80.0}  # said once each only
    rows, output = watch(logs)
    assert [(w["step"], w["check"]) for w in warnings_in(rows)] == [(6, "kl"), (7, "grad_norm")]
    assert "beta" in warnings_in(rows)[0]["advice"] and "learning_rate" in warnings_in(rows)[1]["advice"]
    assert output.count("warning") == 2


def generating_every(every, count, **on_generation):
    """Logs as TRL writes them with steps_per_generation = every x gradient_accumulation_steps: rewards only on
    the steps that generate (1, 1 + every, ...), loss, kl and grad_norm on every step."""
    training = {key: HEALTHY[key] for key in ("loss", "grad_norm", "kl")}
    return [{**HEALTHY, **on_generation} if step % every == 0 else dict(training) for step in range(count)]


def test_with_several_steps_per_generation_reward_signs_count_generations_and_say_the_steps(watch):
    rows, output = watch(generating_every(4, 24, frac_reward_zero_std=0.95))
    warnings = warnings_in(rows)
    # generations at steps 1, 5, 9, 13, 17: the fifth in a row, spanning 17 steps
    assert [(w["step"], w["check"]) for w in warnings] == [(17, "zero_std")]
    assert "for 17 steps" in warnings[0]["message"] and "(step 17)" in output


def test_a_non_finite_gradient_on_a_step_that_did_not_generate_stops_the_run_there(watch, tmp_path):
    logs = generating_every(4, 8)
    logs[5] = {**logs[5], "grad_norm": math.nan}  # step 6: no reward in its row
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    callback = TrainingHealth(console=Console(file=io.StringIO()))
    state, control = TrainerState(), TrainerControl()
    for step, row in enumerate(logs, start=1):
        state.global_step = step
        callback.on_log(args, state, control, logs=dict(row))
        if control.should_training_stop:
            break
    assert callback.diverged[:2] == (6, "grad_norm")


def test_a_non_finite_grad_norm_warns_at_once(watch):
    rows, _ = watch([{**HEALTHY, "grad_norm": math.nan}])
    assert [w["check"] for w in warnings_in(rows)] == ["grad_norm"]


def test_a_non_finite_gradient_stops_the_run_without_saving_that_step(tmp_path):
    from types import SimpleNamespace

    from grpo_skill.errors import UserError
    from grpo_skill.runtime.health import raise_if_diverged

    callback = TrainingHealth(console=Console(file=io.StringIO()))
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    state, control = TrainerState(), TrainerControl()
    for step, grad_norm in enumerate((0.5, 0.6, math.nan), start=1):
        state.global_step = step
        control.should_save = True  # as the Trainer asks on a save step
        callback.on_log(args, state, control, logs={**HEALTHY, "grad_norm": grad_norm})
        if step < 3:
            assert not control.should_training_stop and control.should_save
    assert control.should_training_stop and not control.should_save
    trainer = SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[callback]))
    with pytest.raises(UserError, match=r"training stopped at step 3: grad_norm became nan.*--resume"):
        raise_if_diverged(trainer)


def test_a_healthy_run_is_not_stopped(watch, tmp_path):
    from types import SimpleNamespace

    from grpo_skill.runtime.health import raise_if_diverged

    callback = TrainingHealth(console=Console(file=io.StringIO()))
    callback.on_log(TrainingArguments(output_dir=str(tmp_path), report_to=[]), TrainerState(), TrainerControl(),
                    logs=dict(HEALTHY))
    raise_if_diverged(SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[callback])))


def test_the_end_of_training_summary_is_ignored(watch):
    rows, _ = watch([{"train_runtime": 1.0, "train_loss": math.nan}])
    assert HEALTH_KEY not in rows[0]


def test_a_warning_is_read_back_in_the_readers_language(watch):
    from grpo_skill import i18n

    i18n.set_language("zh-CN")
    try:
        rows, _ = watch(rising(3) + [{**HEALTHY, "reward": 0.1 * i, "frac_reward_zero_std": 0.95} for i in range(6)])
    finally:
        i18n.set_language(None)
    recorded = next(record for row in rows for record in row.get(HEALTH_KEY) or ())
    assert "已连续" in recorded["message"]  # written in the language the run had
    i18n.set_language("en")
    try:
        (warning,) = warnings_in(rows)  # `grpo-skill --lang en metrics` on that run
    finally:
        i18n.set_language(None)
    assert warning["message"].startswith("frac_reward_zero_std has stayed above 0.9 for 5 steps")
