"""`grpo-skill set`: an existing project's config.toml changed in place (comments and layout kept), written only once
the project passes `check`; `update` keeps what it set; `new --force` names what it does not carry over."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console

from grpo_skill import cli, history, plugins

from support import git, model_of_positions, template_versions

pytestmark = pytest.mark.usefixtures("english")  # messages compared as English text

DATA = '{"question": "What is 2 + 3?", "final": "5"}\n{"question": "What is 4 + 4?", "final": "8"}\n'


def grpo_skill(*args, cwd: Path | None = None, monkeypatch=None):
    if cwd is not None:
        monkeypatch.chdir(cwd)
    result = CliRunner().invoke(cli.main, list(args), prog_name="grpo-skill")
    return result.exit_code, result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def no_project_plugins():
    """A project's rewards.py stays registered after a command; each test starts without those of earlier ones."""
    for info in plugins.plugin_infos():
        if info.source == "project":
            plugins.unregister(info.name)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny project as `new` makes it, copied for each test."""
    root = tmp_path_factory.mktemp("set")
    code, output = grpo_skill("new", "demo", "--preset", "tiny", "-o", str(root))
    assert code == 0, output
    return root / "demo"


@pytest.fixture
def project(made, tmp_path):
    copy = tmp_path / "demo"
    shutil.copytree(made, copy, symlinks=True)
    return copy


def config_text(project: Path) -> str:
    return (project / "config.toml").read_bytes().decode("utf-8")


# --- changes in place ---------------------------------------------------------------------------------------


def test_set_changes_the_value_on_its_own_line_and_nothing_else(project):
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=64")
    assert code == 0, output
    assert "grpo.max_completion_length: 32 → 64" in output
    assert before.count("\nmax_completion_length = 32\n") == 1
    assert config_text(project) == before.replace("\nmax_completion_length = 32\n", "\nmax_completion_length = 64\n")


def test_a_symlinked_config_is_written_through_its_link(project):
    shared = project.parent / "shared.toml"
    (project / "config.toml").rename(shared)
    (project / "config.toml").symlink_to(shared)
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=64")
    assert code == 0, output
    assert (project / "config.toml").is_symlink()  # the link kept, its target changed
    assert "\nmax_completion_length = 64\n" in shared.read_text()


def test_a_value_keeps_its_comment_and_its_form(project):
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), "model.max_seq_length=320", "grpo.learning_rate=1e-3")
    assert code == 0, output
    assert config_text(project) == before.replace(
        "max_seq_length = 256  # prompt + completion tokens", "max_seq_length = 320  # prompt + completion tokens"
    ).replace("learning_rate = 0.005\nlr_scheduler", "learning_rate = 1e-3\nlr_scheduler")  # as written


def test_a_new_key_follows_the_last_key_of_its_table(project):
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.temperature=0.7")
    assert code == 0, output
    assert "grpo.temperature: (not set) → 0.7" in output
    # after [grpo]'s last key, before the blank line and the comment that open [sft]
    assert config_text(project) == before.replace("report_to = []\n", "report_to = []\ntemperature = 0.7\n")


def test_epochs_or_steps_given_takes_the_other_out_and_says_so(project):
    """transformers lets max_steps decide and ignores num_train_epochs beside it: `set` of one takes the other out
    (it refused the pair, and nothing could take max_steps out: training by epochs was out of reach)."""
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.num_train_epochs=2")
    assert code == 0, output
    assert "grpo.max_steps: 60 → (not set)" in output
    assert "note: grpo.max_steps (60) taken out: grpo.num_train_epochs decides the run's length" in output
    grpo = tomllib.loads(config_text(project))["grpo"]
    assert grpo["num_train_epochs"] == 2 and "max_steps" not in grpo
    assert config_text(project).replace("num_train_epochs = 2\n", "") == before.replace("max_steps = 60\n", "")
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_steps=30")  # and back
    assert code == 0, output
    assert "note: grpo.num_train_epochs (2) taken out: grpo.max_steps decides the run's length" in output
    grpo = tomllib.loads(config_text(project))["grpo"]
    assert grpo["max_steps"] == 30 and "num_train_epochs" not in grpo


def test_a_commented_out_key_becomes_the_key_with_its_comment(project):
    (project / "outputs" / "sft" / "adapter").mkdir(parents=True)
    (project / "outputs" / "sft" / "adapter" / "adapter_config.json").write_text("{}")
    # as sft.py leaves its run: without it, outputs holds a folder of the user's, which check (and train.py) refuse
    (project / "outputs" / "sft" / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    before = config_text(project)
    commented = '# adapter = "outputs/sft/adapter"  # continue from a LoRA adapter'
    assert before.count(commented) == 1
    code, output = grpo_skill("set", "--project", str(project), 'model.adapter="outputs/sft/adapter"',
                              "model.compile_decoding=false")
    assert code == 0, output
    text = config_text(project)
    assert text == before.replace(commented, commented[2:]).replace(
        "# compile_decoding = true  # TRL backend", "compile_decoding = false  # TRL backend")
    assert text.count("adapter =") == 1 and text.count("compile_decoding =") == 1  # replaced, not added twice
    assert tomllib.loads(text)["model"]["adapter"] == "outputs/sft/adapter"


def test_bare_text_for_a_text_key_is_taken_and_said(project):
    code, output = grpo_skill("set", "--project", str(project), "dataset.system_prompt=Be brief.")
    assert code == 0, output
    assert "note: grpo-skill set 'dataset.system_prompt=Be brief.': taken as the text \"Be brief.\"" in output
    assert 'system_prompt = "Be brief."\n' in config_text(project)


def test_a_budget_past_max_seq_length_raises_it_as_new_does(project):
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=300")
    assert code == 0, output
    assert "model.max_seq_length: 256 → 524" in output
    assert "note: model.max_seq_length raised to 524: grpo.max_completion_length (300) plus the 224 tokens" in output
    config = tomllib.loads(config_text(project))
    assert (config["model"]["max_seq_length"], config["grpo"]["max_completion_length"]) == (524, 300)


def test_windows_line_endings_are_kept(project):
    config = project / "config.toml"
    config.write_bytes(config.read_bytes().replace(b"\n", b"\r\n"))
    before = config.read_bytes()
    code, output = grpo_skill("set", "--project", str(config), "grpo.max_completion_length=64", "grpo.temperature=0.7")
    assert code == 0, output
    assert config.read_bytes() == before.replace(
        b"max_completion_length = 32\r\n", b"max_completion_length = 64\r\n").replace(
        b"report_to = []\r\n", b"report_to = []\r\ntemperature = 0.7\r\n")


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_a_new_table_takes_the_files_line_endings_and_ends_with_a_newline(project, newline):
    """An older project's config.toml without [sft]: the table is added at the end in the file's own line endings."""
    config = project / "config.toml"
    text = config.read_text()
    kept = text[:text.index("# Optional warm start")].rstrip("\n") + "\n"  # [sft] and its comment gone
    config.write_bytes(kept.encode().replace(b"\n", newline))
    before = config.read_bytes()
    code, output = grpo_skill("set", "--project", str(project), "sft.max_steps=10", "sft.logging_steps=2")
    assert code == 0, output
    assert config.read_bytes() == before + newline.join([b"", b"[sft]", b"max_steps = 10", b"logging_steps = 2", b""])


@pytest.mark.parametrize("typed", ["{enable_thinking=false}", "{enable_thinking = false}",
                                   "{  enable_thinking = false  }"])
def test_an_inline_table_is_written_as_the_template_writes_one(project, typed):
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), f"dataset.chat_template_kwargs={typed}")
    assert code == 0, output
    assert config_text(project) == before.replace("# chat_template_kwargs = { enable_thinking = false }",
                                                  "chat_template_kwargs = { enable_thinking = false }")


def test_from_inside_the_project_and_the_same_value_again(project, monkeypatch):
    code, output = grpo_skill("set", "grpo.beta=0.1", cwd=project, monkeypatch=monkeypatch)
    assert code == 0 and "Changed config.toml" in output and "grpo.beta: 0.04 → 0.1" in output
    before = snapshot(project)
    code, output = grpo_skill("set", "grpo.beta=0.1", cwd=project, monkeypatch=monkeypatch)
    assert code == 0 and "already has these values; nothing to write" in output
    assert "grpo.beta: 0.1 (unchanged)" in output
    assert snapshot(project) == before


def test_a_surprising_value_is_written_and_warned_about_as_check_does(project):
    code, output = grpo_skill("set", "--project", str(project), "grpo.learning_rate=0.5")
    assert code == 0, output
    assert "warning: grpo.learning_rate = 0.5 (given on the command line): far above what LoRA runs use" in output
    assert "learning_rate = 0.5\n" in config_text(project)


# --- --param --------------------------------------------------------------------------------------------------


@pytest.fixture
def graded(tmp_path):
    """A project whose rewards have params: accuracy and cosine_length on a gold column."""
    data = tmp_path / "d.jsonl"
    data.write_text(DATA)
    code, output = grpo_skill("new", "graded", "--preset", "tiny", "--dataset", str(data), "--prompt-column",
                              "question", "--answer-column", "final", "--reward", "accuracy:1", "--reward",
                              "cosine_length:0.5", "--param", "cosine_length.max_len=300", "-o", str(tmp_path))
    assert code == 0, output
    return tmp_path / "graded"


def test_param_changes_one_param_and_keeps_the_others(graded):
    before = config_text(graded)
    line = 'params = { answer_column = "final", max_len = 300 }'
    assert before.count(line) == 1
    code, output = grpo_skill("set", "--project", str(graded), "--param", "cosine_length.max_len=200",
                              "--param", "cosine_length.min_value_wrong=-0.8")
    assert code == 0, output
    assert "cosine_length.max_len: 300 → 200" in output
    assert "cosine_length.min_value_wrong: (not set) → -0.8" in output
    assert config_text(graded) == before.replace(
        line, 'params = { answer_column = "final", max_len = 200, min_value_wrong = -0.8 }')


def test_param_of_a_reward_without_params_adds_its_params_line(project):
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), "--param", 'thinking.think_end_token="</think>"')
    assert code == 0, output
    assert config_text(project) == before.replace(
        'name = "thinking"\nweight = 1.0\n',
        'name = "thinking"\nweight = 1.0\nparams = { think_end_token = "</think>" }\n')


def test_param_of_a_reward_the_project_does_not_list_is_refused_with_its_rewards(graded):
    before = snapshot(graded)
    code, output = grpo_skill("set", "--project", str(graded), "--param", "format.end_marks=\"!\"")
    assert code == 1
    assert output.strip() == ("Error: --param format.*: 'format' is not one of the project's rewards (accuracy, "
                              "cosine_length); add --reward format")
    assert snapshot(graded) == before


def clipped_run_advice(project: Path, elsewhere: Path, monkeypatch) -> tuple[str, str]:
    """Completions clipped at the project's budget for six steps of train.py's health callback (installed as
    train.py installs it, on the project's model's config), then `grpo-skill metrics` run in ``elsewhere``: its
    clipped advice and the command in it."""
    import types

    from transformers import AutoConfig, TrainerControl, TrainerState

    from grpo_skill import project as projects
    from grpo_skill.runtime import callbacks, health

    config = projects.load_for_run(project)  # as train.py does, then the trainer's callbacks as it installs them
    added = []
    trainer = types.SimpleNamespace(remove_callback=lambda callback: None, add_callback=added.append,
                                    args=types.SimpleNamespace(num_generations=8),
                                    model=types.SimpleNamespace(config=AutoConfig.from_pretrained(config.model_path())))
    callbacks.install(trainer, project / "outputs" / "metrics.jsonl", config)
    (watch,) = [callback for callback in added if isinstance(callback, health.TrainingHealth)]
    watch.console = Console(file=io.StringIO())  # train.py's live warning: metrics reads the row's record instead
    budget = config.grpo["max_completion_length"]
    args, state, control = types.SimpleNamespace(max_completion_length=budget), TrainerState(), TrainerControl()
    rows = []
    for step in range(1, 7):
        state.global_step = step
        logs = {"loss": 0.01, "grad_norm": 0.5, "reward": 0.1 * step, "completions/clipped_ratio": 0.8}
        watch.on_log(args, state, control, logs=logs)
        rows.append({"step": step, **logs})
    (project / "outputs" / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    elsewhere.mkdir(exist_ok=True)
    code, output = grpo_skill("metrics", str(project / "outputs"), cwd=elsewhere, monkeypatch=monkeypatch)
    assert code == 0, output
    (advice,) = [line for line in output.splitlines() if "clipped_ratio" in line]
    return advice, advice.split("e.g. ", 1)[1].split(";", 1)[0]


def test_the_training_health_budget_advice_is_a_set_command_that_works_from_where_metrics_ran(
        project, tmp_path, monkeypatch):
    """Completions clipped at a budget of 120 (79-token prompts, max_seq_length 256): `grpo-skill metrics`, run
    outside the project, advises a command that `set` takes as printed: --project, and max_seq_length raised with
    the doubled budget (240 alone no longer leaves room for the prompts)."""
    import shlex

    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=120")
    assert code == 0, output
    _advice, command = clipped_run_advice(project, tmp_path / "elsewhere", monkeypatch)
    assert command == (f"grpo-skill set --project {project.resolve()} grpo.max_completion_length=240 "
                       "model.max_seq_length=376")
    code, output = grpo_skill(*shlex.split(command)[1:])
    assert code == 0, output
    config = tomllib.loads(config_text(project))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (240, 376)


def test_the_budget_advice_for_a_model_of_few_positions_goes_only_as_far_as_it_reads(
        project, tmp_path, monkeypatch, tiny_model):
    """The model reads 300 positions: twice the budget of 120 (and max_seq_length 376) would be refused, so the
    advice raises both as far as that goes, says so, and `set` takes it."""
    import shlex

    model_of_positions(tiny_model, project / "small-model", 300)
    code, output = grpo_skill("set", "--project", str(project), "model.name=./small-model",
                              "grpo.max_completion_length=120")
    assert code == 0, output
    advice, command = clipped_run_advice(project, tmp_path / "elsewhere", monkeypatch)
    # max_seq_length up to the 300 positions, the budget to what leaves the prompts their 136 tokens
    assert command == (f"grpo-skill set --project {project.resolve()} grpo.max_completion_length=164 "
                       "model.max_seq_length=300")
    assert ("as far as the model reads (300 tokens, its max_position_embeddings; twice the budget does not fit)"
            in advice)
    code, output = grpo_skill(*shlex.split(command)[1:])
    assert code == 0, output
    config = tomllib.loads(config_text(project))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (164, 300)


# --- refusals ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["grpo.max_completion_lenght=64"], "grpo-skill set 'grpo.max_completion_lenght=64': unknown key in [grpo]; did "
                                        "you mean `max_completion_length`?"),
    (["grpo.learning_rate=-1"], "grpo.learning_rate = -1 (given on the command line): must be greater than 0 ("),
    (["lora.r=sixteen"], "grpo-skill set 'lora.r=sixteen': 'sixteen' is not a TOML value"),
    (["grpo.num_generations=3"], "grpo.num_generations (given on the command line): per_device_train_batch_size x "
                                 "gradient_accumulation_steps = 8 is not divisible by num_generations = 3"),
    # the prompts no longer fit: the key to add, or to give another value, in the same command
    (["grpo.max_completion_length=200"], "model.max_seq_length (256) is below the longest prompt (79 tokens) + "
                                         "grpo.max_completion_length (200); add model.max_seq_length=279 to this "
                                         "`grpo-skill set` command, or shorten the prompts ("),
    (["grpo.max_completion_length=200", "model.max_seq_length=260"],
     "give model.max_seq_length=279 instead of 260 in this `grpo-skill set` command, or shorten the prompts ("),
    (['model.adapter="outputs/none"'], "model.adapter (given on the command line): no LoRA adapter in"),
    (["maxsteps=3"], "grpo-skill set 'maxsteps=3': write SECTION.KEY=VALUE, e.g. grpo-skill set "
                     "grpo.max_completion_length=1024"),
    (["rewards.weight=2"], "grpo-skill set 'rewards.weight=2': a reward's weight is set with --reward NAME:WEIGHT"),
    (["--param", "thinking.think_end=x"], "reward 'thinking' has no param 'think_end'; did you mean "
                                          "`think_end_token`?"),
    (["grpo.beta=0.1", "grpo.beta=0.2"], "grpo.beta is given twice"),
    (["dataset.prompt_column=nope"], "dataset.prompt_column (given on the command line): column 'nope' is not in "
                                     "prompts.jsonl (it has: prompt); fix the name or the file"),
    (["sft.response_column=nope"], "sft.response_column (given on the command line): column 'nope' is not in "
                                   "sft.jsonl (it has: prompt, response, thinking); fix the name or the file"),
])
def test_a_refusal_is_one_line_naming_the_key_and_changes_nothing(project, args, message):
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), *args)
    assert code == 1 and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1 and output.startswith("Error: ") and message in output, output
    if "given on the command line" in message:  # refused by the check of the whole project
        assert output.rstrip().endswith("config.toml is unchanged)")
    assert snapshot(project) == before


FIX_MODEL_NAME = "give model.name a model folder (a relative path is read from the project folder) or a hub id"


@pytest.mark.parametrize("name, problem", [
    ("./nope", "no model folder {project}/nope"),
    ("not a model!", "'not a model!' is neither a model folder nor a hub id like 'Qwen/Qwen3-4B'"),
    ("./data", "{project}/data has no config.json, so it is not a model folder"),
])
def test_a_model_name_that_is_no_model_is_fixed_with_set_not_train_pys_flag(project, name, problem):
    """`set` has no --model: its refusal says what to give model.name."""
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), f"model.name={name}")
    assert code == 1 and "--model" not in output
    assert output.strip() == "Error: model.name (given on the command line): {}; {} ({} is unchanged)".format(
        problem.format(project=project.resolve()), FIX_MODEL_NAME, project / "config.toml")
    assert snapshot(project) == before


def test_max_seq_length_past_the_models_positions_is_refused_naming_the_key_as_set_takes_it(project):
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "model.max_seq_length=50000")
    assert code == 1
    assert output.strip() == (
        "Error: model.max_seq_length (given on the command line): the model reads at most 40960 tokens "
        "(max_position_embeddings in its config.json); set model.max_seq_length to 40960 or less "
        f"({project / 'config.toml'} is unchanged)")
    assert snapshot(project) == before


def test_a_budget_whose_raise_would_pass_the_models_positions_is_refused_as_given(project):
    """The budget given, raised by the room the prompts had, would take model.max_seq_length past the 40960 positions
    of the model: `set` does not raise it (no max_seq_length the user never asked for, none past the positions); the
    refusal names the budget as given and lowers it to what fits beside the longest prompt, with max_seq_length at
    the positions; that command is taken."""
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=40900")
    assert code == 1
    assert output.strip() == (
        "Error: grpo.max_completion_length (given on the command line): 40900 leaves no room for the prompt in "
        "model.max_seq_length (256), and the model reads at most 40960 tokens (its max_position_embeddings); give "
        "grpo.max_completion_length=40881 model.max_seq_length=40960 in this `grpo-skill set` command (the longest "
        f"prompt is 79 tokens) ({project / 'config.toml'} is unchanged)")
    assert snapshot(project) == before
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=40881",
                              "model.max_seq_length=40960")
    assert code == 0, output
    assert "model.max_seq_length: 256 → 40960" in output


def test_where_the_prompts_cannot_be_counted_the_fix_leaves_them_the_room_they_had(project, tiny_model, monkeypatch):
    """No tokenizer to count the prompts with (a model folder whose positions are read from its config.json): the
    budget is lowered to what leaves the prompts the 224 tokens they had, max_seq_length at the positions, and that
    command is taken."""
    from grpo_skill.runtime import modelfiles

    model_of_positions(tiny_model, project / "m1024", 1024)
    assert grpo_skill("set", "--project", str(project), "model.name=./m1024")[0] == 0
    monkeypatch.setattr(modelfiles, "longest_prompt", lambda config: None)
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=1000")
    assert code == 1
    assert output.strip() == (
        "Error: grpo.max_completion_length (given on the command line): 1000 leaves no room for the prompt in "
        "model.max_seq_length (256), and the model reads at most 1024 tokens (its max_position_embeddings); give "
        "grpo.max_completion_length=800 model.max_seq_length=1024 in this `grpo-skill set` command (leaving the "
        f"prompts the 224 tokens they had) ({project / 'config.toml'} is unchanged)")
    assert snapshot(project) == before
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=800",
                              "model.max_seq_length=1024")
    assert code == 0, output
    assert "model.max_seq_length: 256 → 1024" in output


def test_where_new_cannot_count_the_prompts_its_fix_leaves_them_the_presets_room(tmp_path, tiny_model, monkeypatch):
    """As for `set`, in `new`'s words: the budget given with --set lowered to what leaves the preset's 224 tokens."""
    from grpo_skill.runtime import modelfiles

    model = model_of_positions(tiny_model, tmp_path / "m1024", 1024)
    monkeypatch.setattr(modelfiles, "longest_prompt", lambda config: None)
    command = ["new", "p", "--preset", "tiny", "--model", str(model), "-o", str(tmp_path)]
    code, output = grpo_skill(*command, "--set", "grpo.max_completion_length=1000")
    assert code == 1 and sorted(path.name for path in tmp_path.iterdir()) == ["m1024"]
    assert output.strip() == (
        "Error: the project would not run: grpo.max_completion_length (given on the command line): 1000 leaves no "
        "room for the prompt in model.max_seq_length (256), and the model reads at most 1024 tokens (its "
        "max_position_embeddings); give --set grpo.max_completion_length=800 --set model.max_seq_length=1024 "
        "(leaving the prompts the preset's 224 tokens)")
    code, output = grpo_skill(*command, "--set", "grpo.max_completion_length=800", "--set",
                              "model.max_seq_length=1024")
    assert code == 0, output
    config = tomllib.loads(config_text(tmp_path / "p"))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (800, 1024)


def paste(given: list[str], fix: str) -> list[str]:
    """The settings ``given`` (SECTION.KEY=VALUE) with a refusal's fix typed in ("k=v k=v" for `set`, "--set k=v ..."
    for `new`): a key the fix names takes its value there, the others stay."""
    fixed = [item for item in fix.split() if item != "--set"]
    named = {item.split("=", 1)[0] for item in fixed}
    settings = [item for item in given if item.split("=", 1)[0] not in named] + fixed
    return [part for item in settings for part in ("--set", item)] if "--set" in fix else settings


@pytest.mark.parametrize("length, completion, budget, problem, fixes, written", [
    # raised by the 300 tokens the prompts had, max_seq_length would pass the 1024 positions: not raised; the budget
    # fits beside the longest prompt, so max_seq_length can make the room, or the budget give it back
    (600, 300, 800, "", ["model.max_seq_length=879", "grpo.max_completion_length=521"], [(800, 879), (521, 600)]),
    # it does not fit beside the prompt: lowered to what does (max_seq_length is at the positions already)
    (1024, 512, 1024, ", and the model reads at most 1024 tokens (its max_position_embeddings)",
     ["grpo.max_completion_length=945"], [(945, 1024)]),
])
def test_a_budget_set_would_raise_past_the_models_positions_is_fixed_by_what_the_prompts_need(
        project, tiny_model, length, completion, budget, problem, fixes, written):
    """A model of 1024 positions; the budget given would raise max_seq_length (``length``) past them. `set` leaves it
    as it is, refuses the budget as given, and sizes the fix by what the longest prompt needs (79 tokens), not by the
    room the prompts had; each fix is taken as printed."""
    model_of_positions(tiny_model, project / "m1024", 1024)
    code, output = grpo_skill("set", "--project", str(project), "model.name=./m1024", f"model.max_seq_length={length}",
                              f"grpo.max_completion_length={completion}")
    assert code == 0, output
    before = snapshot(project)
    given = [f"grpo.max_completion_length={budget}"]
    code, output = grpo_skill("set", "--project", str(project), *given)
    assert code == 1
    assert output.strip() == (
        f"Error: grpo.max_completion_length (given on the command line): {budget} leaves no room for the prompt in "
        f"model.max_seq_length ({length}){problem}; give {' or '.join(fixes)} in this `grpo-skill set` command (the "
        f"longest prompt is 79 tokens) ({project / 'config.toml'} is unchanged)")
    assert snapshot(project) == before
    for fix, values in zip(fixes, written):
        code, output = grpo_skill("set", "--project", str(project), *paste(given, fix))
        assert code == 0, output
        config = tomllib.loads(config_text(project))
        assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == values
        (project / "config.toml").write_bytes(before["config.toml"])


@pytest.mark.parametrize("budget, problem, fixes, written", [
    (900, "", ["--set model.max_seq_length=979", "--set grpo.max_completion_length=177"], [(900, 979), (177, 256)]),
    (1500, ", and the model reads at most 1024 tokens (its max_position_embeddings)",
     ["--set grpo.max_completion_length=945 --set model.max_seq_length=1024"], [(945, 1024)]),
])
def test_a_budget_new_would_raise_past_the_models_positions_is_refused_as_given_and_its_fix_taken(
        tmp_path, tiny_model, budget, problem, fixes, written):
    """`new --set grpo.max_completion_length`, raised by the preset's 224 tokens for the prompt, would take
    max_seq_length past the 1024 positions of the model given: `new` leaves the preset's, refuses the budget as
    given, writes nothing, and its fix, in --set settings, is taken as printed."""
    model = model_of_positions(tiny_model, tmp_path / "m1024", 1024)
    command = ["new", "p", "--preset", "tiny", "--model", str(model), "-o", str(tmp_path)]
    given = [f"grpo.max_completion_length={budget}"]
    code, output = grpo_skill(*command, "--set", *given)
    assert code == 1 and sorted(path.name for path in tmp_path.iterdir()) == ["m1024"]
    assert output.strip() == (
        f"Error: the project would not run: grpo.max_completion_length (given on the command line): {budget} leaves "
        f"no room for the prompt in model.max_seq_length (256){problem}; give {' or '.join(fixes)} (the longest "
        "prompt is 79 tokens)")
    for fix, values in zip(fixes, written):
        code, output = grpo_skill(*command, "--force", *paste(given, fix))
        assert code == 0, output
        config = tomllib.loads(config_text(tmp_path / "p"))
        assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == values


def test_new_writes_no_max_seq_length_past_the_positions_of_the_model_the_preset_builds(tmp_path):
    """The tiny preset's model (built here) reads 40960 positions: `new` raised max_seq_length by the preset's 224
    tokens past them (50224) and wrote a project that `check` then refused. Now it refuses the budget as given and
    writes nothing; its fix is taken as printed."""
    command = ["new", "p", "--preset", "tiny", "-o", str(tmp_path)]
    code, output = grpo_skill(*command, "--set", "grpo.max_completion_length=50000")
    assert code == 1 and list(tmp_path.iterdir()) == []
    assert output.strip() == (
        "Error: the project would not run: grpo.max_completion_length (given on the command line): 50000 leaves no "
        "room for the prompt in model.max_seq_length (256), and the model reads at most 40960 tokens (its "
        "max_position_embeddings); give --set grpo.max_completion_length=40881 --set model.max_seq_length=40960 (the "
        "longest prompt is 79 tokens)")
    code, output = grpo_skill(*command, "--set", "grpo.max_completion_length=40881", "--set",
                              "model.max_seq_length=40960")
    assert code == 0, output
    config = tomllib.loads(config_text(tmp_path / "p"))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (40881, 40960)


@pytest.mark.parametrize("length, budget, fix", [
    # max_seq_length at the positions: it cannot be raised to make room, so only the budget is to lower
    (1024, 1024, "grpo.max_completion_length=945"),
    # past them too: both, as far as the model reads
    (2000, 3000, "grpo.max_completion_length=945 model.max_seq_length=1024"),
])
def test_a_budget_that_leaves_no_room_within_the_models_positions_is_lowered_not_max_seq_length_raised(
        project, tiny_model, length, budget, fix):
    """Both given, the budget fills model.max_seq_length, and the longest prompt (79 tokens) and the budget pass the
    model's 1024 positions: the refusal does not advise raising max_seq_length (it cannot go past them); it lowers the
    budget to what leaves the prompt its room, and `set` takes that as printed."""
    model_of_positions(tiny_model, project / "m1024", 1024)
    assert grpo_skill("set", "--project", str(project), "model.name=./m1024")[0] == 0
    before = snapshot(project)
    given = [f"model.max_seq_length={length}", f"grpo.max_completion_length={budget}"]
    code, output = grpo_skill("set", "--project", str(project), *given)
    assert code == 1
    assert output.strip() == (
        f"Error: grpo.max_completion_length (given on the command line): {budget} leaves no room for the prompt in "
        f"model.max_seq_length ({length}), and the model reads at most 1024 tokens (its max_position_embeddings); "
        f"give {fix} in this `grpo-skill set` command (the longest prompt is 79 tokens) "
        f"({project / 'config.toml'} is unchanged)")
    assert "raise" not in output
    assert snapshot(project) == before
    code, output = grpo_skill("set", "--project", str(project), *paste(given, fix))
    assert code == 0, output
    config = tomllib.loads(config_text(project))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (945, 1024)


def test_a_budget_that_leaves_no_room_where_max_seq_length_can_make_it_gives_both_fixes_with_their_values(project):
    """Within the tiny model's 40960 positions the room can come from max_seq_length (to the budget and the longest
    prompt, 79 tokens) or from the budget (to what max_seq_length leaves beside that prompt): both values are named,
    and `set` takes each."""
    before = snapshot(project)
    given = ["model.max_seq_length=128", "grpo.max_completion_length=4096"]
    code, output = grpo_skill("set", "--project", str(project), *given)
    assert code == 1
    assert output.strip() == (
        "Error: grpo.max_completion_length (given on the command line): 4096 leaves no room for the prompt in "
        "model.max_seq_length (128); give model.max_seq_length=4175 or grpo.max_completion_length=49 in this "
        f"`grpo-skill set` command (the longest prompt is 79 tokens) ({project / 'config.toml'} is unchanged)")
    assert snapshot(project) == before
    for fix, values in (("model.max_seq_length=4175", (4096, 4175)), ("grpo.max_completion_length=49", (49, 128))):
        code, output = grpo_skill("set", "--project", str(project), *paste(given, fix))
        assert code == 0, output
        config = tomllib.loads(config_text(project))
        assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == values
        (project / "config.toml").write_bytes(before["config.toml"])


def test_check_of_a_file_whose_budget_leaves_no_room_names_the_values_that_fit_the_model(project, tiny_model):
    """config.toml edited by hand: the budget fills max_seq_length, and no max_seq_length within the model's 1024
    positions fits it beside the longest prompt. `check` names the keys to set, as far as the model reads; set as
    printed, the project passes."""
    model_of_positions(tiny_model, project / "m1024", 1024)
    assert grpo_skill("set", "--project", str(project), "model.name=./m1024")[0] == 0
    config = project / "config.toml"
    config.write_text(config.read_text().replace("max_seq_length = 256", "max_seq_length = 800").replace(
        "max_completion_length = 32", "max_completion_length = 1024"))
    line = config.read_text().splitlines().index("max_completion_length = 1024") + 1
    before = snapshot(project)
    code, output = grpo_skill("check", str(project))
    assert code == 1 and snapshot(project) == before
    assert output.strip() == (
        f"Error: {config}:{line}: grpo.max_completion_length: 1024 leaves no room for the prompt in "
        "model.max_seq_length (800), and the model reads at most 1024 tokens (its max_position_embeddings); set "
        "grpo.max_completion_length = 945 and model.max_seq_length = 1024 (the longest prompt is 79 tokens)")
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=945",
                              "model.max_seq_length=1024")
    assert code == 0, output
    assert grpo_skill("check", str(project))[0] == 0


def test_new_with_both_given_past_the_models_positions_is_fixed_by_the_budget(tmp_path, tiny_model):
    """`new --set model.max_seq_length=1024 --set grpo.max_completion_length=1024` for a model of 1024 positions: the
    fix lowers the budget (max_seq_length cannot go further), nothing is written, and the fix is taken."""
    model = model_of_positions(tiny_model, tmp_path / "m1024", 1024)
    command = ["new", "p", "--preset", "tiny", "--model", str(model), "-o", str(tmp_path)]
    given = ["model.max_seq_length=1024", "grpo.max_completion_length=1024"]
    code, output = grpo_skill(*command, "--set", given[0], "--set", given[1])
    assert code == 1 and sorted(path.name for path in tmp_path.iterdir()) == ["m1024"]
    assert output.strip() == (
        "Error: the project would not run: grpo.max_completion_length (given on the command line): 1024 leaves no "
        "room for the prompt in model.max_seq_length (1024), and the model reads at most 1024 tokens (its "
        "max_position_embeddings); give --set grpo.max_completion_length=945 (the longest prompt is 79 tokens)")
    code, output = grpo_skill(*command, *paste(given, "--set grpo.max_completion_length=945"))
    assert code == 0, output
    config = tomllib.loads(config_text(tmp_path / "p"))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (945, 1024)


def test_prompts_past_a_max_seq_length_set_raised_name_it_as_raised(project):
    (project / "data" / "long.jsonl").write_text(json.dumps({"prompt": "word " * 300}) + "\n")
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "dataset.path=data/long.jsonl",
                              "grpo.max_completion_length=300")
    assert code == 1 and len(output.strip().splitlines()) == 1
    assert output.startswith(
        "Error: model.max_seq_length (raised to 524 by `grpo-skill set` to fit grpo.max_completion_length=300) is "
        "below the longest prompt ("), output
    assert "; add model.max_seq_length=" in output and "(524)" not in output
    assert snapshot(project) == before


@pytest.mark.parametrize("before, given, shown, completion, fix", [
    # max_seq_length at the positions already: only the budget to lower
    (["model.max_seq_length=1024", "grpo.max_completion_length=200"], ["dataset.path=data/long.jsonl"], "1024", 200,
     "grpo.max_completion_length=103"),
    # raised by `set` for the budget given: given at the positions, else the lower budget would raise it again
    ([], ["dataset.path=data/long.jsonl", "grpo.max_completion_length=300"],
     "raised to 524 by `grpo-skill set` to fit grpo.max_completion_length=300", 300,
     "grpo.max_completion_length=103 model.max_seq_length=1024"),
    ([], ["dataset.path=data/long.jsonl", "grpo.max_completion_length=300", "model.max_seq_length=800"], "800", 300,
     "grpo.max_completion_length=103 model.max_seq_length=1024"),
])
def test_prompts_that_need_more_than_the_models_positions_lower_the_budget(project, tiny_model, before, given, shown,
                                                                           completion, fix):
    """Prompts of 921 tokens and the budget pass the model's 1024 positions: max_seq_length cannot be raised to fit
    them, so the fix lowers the budget to what is left beside them (and gives max_seq_length at the positions where
    it is not there), and `set` takes it as printed."""
    model_of_positions(tiny_model, project / "m1024", 1024)
    (project / "data" / "long.jsonl").write_text(json.dumps({"prompt": "word " * 300}) + "\n")
    code, output = grpo_skill("set", "--project", str(project), "model.name=./m1024", *before)
    assert code == 0, output
    code, output = grpo_skill("set", "--project", str(project), *given)
    assert code == 1
    assert output.strip() == (
        f"Error: model.max_seq_length ({shown}) is below the longest prompt (921 tokens) + grpo.max_completion_length "
        f"({completion}); give {fix} in this `grpo-skill set` command (the model reads at most 1024 tokens), or "
        f"shorten the prompts ({project / 'config.toml'} is unchanged)")
    code, output = grpo_skill("set", "--project", str(project), *paste(given, fix))
    assert code == 0, output
    config = tomllib.loads(config_text(project))
    assert (config["grpo"]["max_completion_length"], config["model"]["max_seq_length"]) == (103, 1024)


def test_a_refusal_names_the_line_of_the_file_as_it_is(project):
    """A key added above a problem shifts it in the text checked; the message names the file's own line."""
    config = project / "config.toml"
    config.write_text(config.read_text() + "nonsense = 1\n")  # a hand edit [sft] does not take
    line = config.read_text().splitlines().index("nonsense = 1") + 1
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.temperature=0.7")
    assert code == 1 and f"config.toml:{line}: sft.nonsense = 1: unknown key in [sft]" in output, output
    assert snapshot(project) == before


def test_a_conflict_left_by_update_is_refused_first(project):
    config = project / "config.toml"
    config.write_text(config.read_text().replace("beta = 0.04\n", "<<<<<<< before updating\nbeta = 0.04\n=======\n"
                                                 "beta = 0.1\n>>>>>>> after updating\n"))
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.beta=0.2")
    assert code == 1 and "a conflict that `grpo-skill update` left unmerged" in output
    assert snapshot(project) == before


def test_a_config_saved_with_a_byte_order_mark_is_refused_naming_it(project):
    config = project / "config.toml"
    config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())  # as some Windows editors save UTF-8
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.beta=0.1")
    assert output.strip() == (f"Error: {config}: starts with a byte-order mark (BOM), which TOML does not allow; save "
                              "it as UTF-8 without BOM") and code == 1
    assert snapshot(project) == before


def test_a_config_that_is_not_utf8_is_refused_naming_it(project):
    config = project / "config.toml"
    config.write_bytes(config.read_bytes() + "# caf\u00e9\n".encode("latin-1"))  # saved in Latin-1 by an editor
    position = config.read_bytes().index(b"\xe9")
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "grpo.beta=0.1")
    assert code == 1 and "Traceback" not in output
    assert output.strip() == f"Error: {config}: not UTF-8 text (byte {position}); save it as UTF-8"
    assert snapshot(project) == before


def test_no_setting_is_a_usage_error(project):
    code, output = grpo_skill("set", "--project", str(project))
    assert code == 2 and ("give at least one SECTION.KEY=VALUE, --param REWARD.PARAM=VALUE, --reward NAME[:WEIGHT] "
                          "or --remove-reward NAME") in output


def test_a_folder_without_a_project(tmp_path):
    code, output = grpo_skill("set", "--project", str(tmp_path), "grpo.beta=0.1")
    assert code == 1 and "no such config file" in output and len(output.strip().splitlines()) == 1


# --- --dry-run and --json ------------------------------------------------------------------------------------


def test_dry_run_says_what_would_change_and_writes_nothing(project):
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "--dry-run", "grpo.max_completion_length=64",
                              "grpo.temperature=0.7")
    assert code == 0, output
    assert "Would change" in output and "nothing written" in output
    assert "grpo.max_completion_length: 32 → 64" in output and "grpo.temperature: (not set) → 0.7" in output
    assert snapshot(project) == before
    code, output = grpo_skill("set", "--project", str(project), "--dry-run", "grpo.learning_rate=-1")
    assert code == 1 and "must be greater than 0" in output  # checked all the same
    assert snapshot(project) == before


def test_json(project):
    code, output = grpo_skill("set", "--project", str(project), "--json", "grpo.max_completion_length=64",
                              "grpo.temperature=0.7", "grpo.learning_rate=0.5")
    assert code == 0, output
    result = json.loads(output)
    assert result["written"] is True and result["dry_run"] is False
    assert result["config"] == str((project / "config.toml").resolve())
    assert result["changes"] == [
        {"key": "grpo.max_completion_length", "old": 32, "new": 64, "added": False, "removed": False},
        {"key": "grpo.temperature", "old": None, "new": 0.7, "added": True, "removed": False},
        {"key": "grpo.learning_rate", "old": 0.005, "new": 0.5, "added": False, "removed": False},
    ]
    assert len(result["warnings"]) == 1 and "learning_rate" in result["warnings"][0]



# --- --reward and --remove-reward --------------------------------------------------------------------------------


def test_reward_changes_a_weight_on_its_line_and_keeps_its_comment(graded):
    config = graded / "config.toml"
    config.write_text(config.read_text().replace("weight = 0.5\n", "weight = 0.5  # the length shaping\n", 1))
    before = config_text(graded)
    code, output = grpo_skill("set", "--project", str(graded), "--reward", "cosine_length:0.25")
    assert code == 0, output
    assert "rewards.cosine_length.weight: 0.5 → 0.25" in output
    assert config_text(graded) == before.replace("weight = 0.5  # the length shaping\n",
                                                 "weight = 0.25  # the length shaping\n")


def test_reward_adds_a_table_after_the_last_one_and_its_param_in_the_same_command(project):
    before = config_text(project)
    code, output = grpo_skill("set", "--project", str(project), "--reward", "format:0.5", "--param",
                              'format.end_marks=".!"')
    assert code == 0, output
    assert "  rewards: + format (weight 0.5)\n" in output and '  format.end_marks: (not set) → ".!"\n' in output
    assert config_text(project) == before.replace(
        'name = "thinking"\nweight = 1.0\n',
        'name = "thinking"\nweight = 1.0\n[[rewards]]\nname = "format"\nweight = 0.5\nparams = { end_marks = ".!" }\n')
    code, output = grpo_skill("check", str(project), "--json")
    assert code == 0, output
    assert [(reward["name"], reward["weight"]) for reward in json.loads(output)["rewards"]] == [
        ("thinking", 1.0), ("format", 0.5)]
    assert json.loads(output)["rewards"][1]["params"] == {"end_marks": ".!"}


def test_a_reward_added_without_a_weight_takes_news_default(project):
    code, output = grpo_skill("set", "--project", str(project), "--reward", "format")
    assert code == 0, output
    assert "rewards: + format (weight 1.0)" in output
    assert tomllib.loads(config_text(project))["rewards"][-1] == {"name": "format", "weight": 1.0}


def test_the_projects_own_reward_takes_the_place_of_its_commented_out_table(project):
    before = config_text(project)
    commented = re.search(r"\n# [^\n]*rewards\.py[^\n]*\n# \[\[rewards\]\]\n# name = \"no_repetition\"\n"
                          r"# weight = 0\.5\n", before)
    assert commented, before
    code, output = grpo_skill("set", "--project", str(project), "--reward", "no_repetition:0.5")
    assert code == 0, output
    assert "rewards: + no_repetition (weight 0.5)" in output
    assert config_text(project) == before.replace(commented.group(0), "").replace(
        'name = "thinking"\nweight = 1.0\n',
        'name = "thinking"\nweight = 1.0\n[[rewards]]\nname = "no_repetition"\nweight = 0.5\n')
    assert grpo_skill("check", str(project))[0] == 0


def test_remove_reward_takes_out_its_table_and_params_and_keeps_the_comments_around_it(graded):
    before = config_text(graded)
    table = '[[rewards]]\nname = "cosine_length"\nweight = 0.5\nparams = { answer_column = "final", max_len = 300 }\n'
    assert before.count(table) == 1
    code, output = grpo_skill("set", "--project", str(graded), "--remove-reward", "cosine_length")
    assert code == 0, output
    assert "  rewards: - cosine_length\n" in output
    assert config_text(graded) == before.replace(table, "")
    assert grpo_skill("check", str(graded))[0] == 0


def test_remove_the_first_reward(graded):
    before = config_text(graded)
    table = '[[rewards]]\nname = "accuracy"\nweight = 1.0\nparams = { answer_column = "final" }\n'
    assert before.count(table) == 1
    code, output = grpo_skill("set", "--project", str(graded), "--remove-reward", "accuracy")
    assert code == 0, output
    assert config_text(graded) == before.replace(table, "")


def test_the_only_reward_replaced_in_one_command(project):
    code, output = grpo_skill("set", "--project", str(project), "--remove-reward", "thinking", "--reward",
                              "format:0.5")
    assert code == 0, output
    assert "rewards: + format (weight 0.5)" in output and "rewards: - thinking" in output
    config = tomllib.loads(config_text(project))
    assert config["rewards"] == [{"name": "format", "weight": 0.5}]
    assert "# [[rewards]]\n# name = \"no_repetition\"" in config_text(project)  # the example kept


def test_a_gold_reward_added_reads_the_column_the_projects_rewards_read(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(DATA)
    code, output = grpo_skill("new", "gold", "--preset", "tiny", "--dataset", str(data), "--prompt-column",
                              "question", "--answer-column", "final", "--reward", "cosine_length:0.5", "-o",
                              str(tmp_path))
    assert code == 0, output
    project = tmp_path / "gold"
    code, output = grpo_skill("set", "--project", str(project), "--reward", "accuracy")
    assert code == 0, output
    assert ("note: accuracy reads its gold answers from the column 'final', the one config.toml gives "
            "cosine_length (answer_column; --param accuracy.answer_column=COL for another)") in output
    assert tomllib.loads(config_text(project))["rewards"][-1] == {
        "name": "accuracy", "weight": 1.0, "params": {"answer_column": "final"}}
    assert grpo_skill("check", str(project))[0] == 0


def test_a_gold_reward_whose_column_the_dataset_lacks_is_refused_with_the_param_to_add(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(DATA)
    code, output = grpo_skill("new", "nogold", "--preset", "tiny", "--dataset", str(data), "--prompt-column",
                              "question", "-o", str(tmp_path))
    assert code == 0, output
    project = tmp_path / "nogold"
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "--reward", "accuracy")
    assert code == 1
    assert output.strip() == (
        "Error: accuracy reward's answer_column (the reward added by this command): column 'answer' is not in "
        "d.jsonl (it has: final, question); give --param accuracy.answer_column=final in this `grpo-skill set` "
        f"command, or add the column to the file ({project / 'config.toml'} is unchanged)")
    assert snapshot(project) == before
    code, output = grpo_skill("set", "--project", str(project), "--reward", "accuracy", "--param",
                              "accuracy.answer_column=final")
    assert code == 0, output
    assert grpo_skill("check", str(project))[0] == 0


@pytest.mark.parametrize("args, message", [
    (["--reward", "thinking"], "--reward thinking: the project has this reward already; give the weight it should "
                               "have, e.g. --reward thinking:2"),
    (["--reward", "acuracy:1"], "unknown reward 'acuracy'; did you mean 'accuracy'?"),
    (["--reward", "thinking:heavy"], "--reward 'thinking:heavy': write a reward as NAME or NAME:WEIGHT"),
    (["--reward", "format", "--reward", "format:2"], "a reward is given twice; give each --reward once"),
    (["--remove-reward", "format"], "--remove-reward format: 'format' is not one of the project's rewards "
                                    "(thinking)"),
    (["--remove-reward", "thinking"], "--remove-reward: a run needs at least one reward, and this would leave "
                                      "[[rewards]] empty; add one in the same command with --reward NAME[:WEIGHT]"),
    (["--reward", "format", "--remove-reward", "format"], "--reward format and --remove-reward format: give one "
                                                          "of them"),
    (["--reward", "format", "--remove-reward", "thinking", "--remove-reward", "thinking"],
     "--remove-reward thinking is given twice; give it once"),
    (["--reward", "format", "--remove-reward", "thinking", "--param", 'thinking.think_end_token="</x>"'],
     "--param thinking.*: --remove-reward thinking removes that reward; give one of them"),
    (["--param", 'format.end_marks="!"'], "--param format.*: 'format' is not one of the project's rewards "
                                         "(thinking); add --reward format"),
    (["rewards[0].weight=2"], "grpo-skill set 'rewards[0].weight=2': a reward's weight is set with --reward "
                              "NAME:WEIGHT (e.g. --reward thinking:2), its params with --param NAME.PARAM=VALUE"),
    (["rewards.weight=2"], "grpo-skill set 'rewards.weight=2': a reward's weight is set with --reward NAME:WEIGHT"),
    (["rewards.thinking.weight=2"], "grpo-skill set 'rewards.thinking.weight=2': give --reward thinking:2 (a "
                                    "reward's weight is set with --reward NAME:WEIGHT"),
    (["rewards.thinking.params.think_end_token=x"], "give --param thinking.think_end_token=x ("),
    (["--reward", "thinking:0"], "every [[rewards]] weight is 0"),
])
def test_a_reward_refusal_is_one_line_and_changes_nothing(project, args, message):
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), *args)
    assert code == 1 and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1 and output.startswith("Error: ") and message in output, output
    assert snapshot(project) == before


def test_reward_dry_run_writes_nothing(project):
    before = snapshot(project)
    code, output = grpo_skill("set", "--project", str(project), "--dry-run", "--reward", "thinking:2", "--reward",
                              "format:0.5")
    assert code == 0, output
    assert "Would change" in output and "rewards.thinking.weight: 1.0 → 2.0" in output
    assert "rewards: + format (weight 0.5)" in output
    assert snapshot(project) == before


def test_reward_changes_in_json(graded):
    code, output = grpo_skill("set", "--project", str(graded), "--json", "--reward", "accuracy:2", "--reward",
                              "format:0.5", "--param", 'format.end_marks="."', "--remove-reward", "cosine_length")
    assert code == 0, output
    result = json.loads(output)
    assert result["written"] is True
    assert result["changes"] == [
        {"key": "rewards.accuracy.weight", "old": 1, "new": 2.0, "added": False, "removed": False},
        {"key": "rewards.format", "old": None, "new": {"name": "format", "weight": 0.5}, "added": True,
         "removed": False},
        {"key": "rewards.cosine_length", "old": {"name": "cosine_length", "weight": 0.5,
                                                 "params": {"answer_column": "final", "max_len": 300}},
         "new": None, "added": False, "removed": True},
        {"key": "format.end_marks", "old": None, "new": ".", "added": True, "removed": False},
    ]
    assert [reward["name"] for reward in tomllib.loads(config_text(graded))["rewards"]] == ["accuracy", "format"]

# --- update after set ----------------------------------------------------------------------------------------

C_COMMENT = "# C: the new template version's own first line"


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """Version A: this template; version B: A whose config.toml starts with another comment line."""
    def add_comment(repo):
        config = repo / "config.toml.jinja"
        config.write_text(f"{C_COMMENT}\n" + config.read_text(encoding="utf-8"), encoding="utf-8")

    return template_versions(tmp_path_factory.mktemp("versions"), add_comment)


def test_update_after_set_keeps_the_values_set(tmp_path, monkeypatch, versions):
    monkeypatch.setattr(history, "templates_dir", lambda: versions["A"])
    code, output = grpo_skill("new", "kept", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0, output
    project = tmp_path / "kept"
    answers_text = (project / ".copier-answers.yml").read_text()
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_completion_length=64",
                              "grpo.temperature=0.7", "model.compile_decoding=false",
                              "--param", 'thinking.think_end_token="</think>"')
    assert code == 0, output
    assert (project / ".copier-answers.yml").read_text() == answers_text  # set writes config.toml alone
    assert git("status", "--porcelain", cwd=project).strip() == "M config.toml"
    after_set = config_text(project)
    git("commit", "-qam", "grpo-skill set", cwd=project)

    monkeypatch.setattr(history, "templates_dir", lambda: versions["B"])
    code, output = grpo_skill("update", str(project))
    assert code == 0, output
    assert config_text(project) == f"{C_COMMENT}\n" + after_set  # the template's change, and every value set
    answers_after = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert {key: value for key, value in answers_after.items() if key != "_commit"} == {
        key: value for key, value in yaml.safe_load(answers_text).items() if key != "_commit"}
    code, output = grpo_skill("check", str(project))
    assert code == 0, output


# --- new --force over a project --------------------------------------------------------------------------------


def test_new_force_names_the_earlier_settings_it_does_not_carry_over(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(DATA)
    code, output = grpo_skill("new", "again", "--preset", "tiny", "--dataset", str(data), "--prompt-column",
                              "question", "--answer-column", "final", "--reward", "accuracy:1", "--lang", "zh-CN",
                              "--set", "grpo.max_completion_length=64", "-o", str(tmp_path))
    assert code == 0, output
    code, output = grpo_skill("new", "again", "--preset", "tiny", "--force", "-o", str(tmp_path))
    assert code == 0, output
    notes = [line for line in output.splitlines() if line.startswith("note: the earlier project")]
    assert len(notes) == 1, output
    note = notes[0]
    for dropped in ('dataset.path = "data/d.jsonl"', 'dataset.prompt_column = "question"',
                    "grpo.max_completion_length = 64", "rewards = accuracy:1", 'lang = "zh-CN"'):
        assert dropped in note, note
    # each with what brings it back: `set` for a setting, `new` for what `set` cannot change
    data_copy = tmp_path / "again" / "data" / "d.jsonl"
    assert note.endswith("; `grpo-skill set SECTION.KEY=VALUE` changes one setting of a project without rendering "
                         "it again; the rewards and their weights come from `grpo-skill new --reward NAME:WEIGHT "
                         f"--dataset {data_copy} --prompt-column question --answer-column final`, with the column of "
                         "gold answers they read (and the dataset `new` copies in); the language comes from `grpo-skill new "
                         "--lang`, else the CLI's language (`set` cannot change it)"), note

    # the same answers: what `set` wrote since is in config.toml alone, which is backed up; named all the same
    project = tmp_path / "again"
    code, output = grpo_skill("set", "--project", str(project), "grpo.beta=0.1", "--param",
                              'thinking.think_end_token="</x>"')
    assert code == 0, output
    code, output = grpo_skill("new", "again", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path))
    assert code == 0, output
    result = json.loads(output)
    assert result["notes"] == [
        "the earlier project's grpo.beta = 0.1, thinking.think_end_token = \"</x>\" are not carried over: this "
        "render takes the preset's values and this command's options; `grpo-skill set SECTION.KEY=VALUE` changes "
        "one setting of a project without rendering it again; `grpo-skill set --param REWARD.PARAM=VALUE` changes a "
        "reward's param"]
    assert result["backed_up"] == ["config.toml"]
    assert "beta = 0.1\n" in (Path(result["backup_dir"]) / "config.toml").read_text()


def test_new_force_with_another_preset_names_only_what_the_user_set(tmp_path, monkeypatch, tiny_model):
    """The earlier preset's own values (model, lengths, LoRA, [grpo]) are replaced by the new preset's by design: the
    note names only what the user set since `new` (set, or a hand edit) that the new render does not keep."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, output = grpo_skill("new", "f2", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0, output
    project = tmp_path / "f2"
    again = ("new", "f2", "--preset", "standard", "--model", str(tiny_model), "--force", "--json", "-o", str(tmp_path))
    code, output = grpo_skill(*again)
    assert code == 0, output
    assert json.loads(output)["notes"] == []  # nothing of the user's: no setting to bring back

    code, output = grpo_skill("new", "f2", "--preset", "tiny", "--force", "-o", str(tmp_path))
    assert code == 0, output
    # grpo.beta = 0.1 is the standard preset's too: kept, so not named
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_steps=7", "grpo.beta=0.1")
    assert code == 0, output
    config = project / "config.toml"
    config.write_text(config.read_text().replace('split = "train"', 'split = "test"', 1))  # by hand
    code, output = grpo_skill(*again)
    assert code == 0, output
    assert json.loads(output)["notes"] == [
        "the earlier project's grpo.max_steps = 7, dataset.split = \"test\" are not carried over: this render takes "
        "the preset's values and this command's options; `grpo-skill set SECTION.KEY=VALUE` changes one setting of "
        "a project without rendering it again"]


def test_new_force_names_no_value_this_command_sets_and_words_one_value_as_one(tmp_path):
    def notes(*args):
        code, output = grpo_skill("new", "f3", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path), *args)
        assert code == 0, output
        return json.loads(output)["notes"]

    notes("--set", "grpo.max_steps=200")
    assert notes("--set", "grpo.max_steps=300") == []  # overridden on purpose: nothing to say
    assert notes() == [
        "the earlier project's grpo.max_steps = 300 is not carried over: this render takes the preset's values and "
        "this command's options; `grpo-skill set SECTION.KEY=VALUE` changes one setting of a project without "
        "rendering it again"]
    notes("--param", 'thinking.think_end_token="</x>"')
    assert notes("--param", 'thinking.think_end_token="</y>"') == []  # a reward's param as well


def test_new_force_compares_with_what_the_earlier_template_version_wrote(tmp_path, monkeypatch, tmp_path_factory):
    """A default that the template itself changed since the project was made is no value of the user's."""
    def plain_generation(repo):
        config = repo / "config.toml.jinja"
        config.write_text(config.read_text(encoding="utf-8").replace('generation = "auto"', 'generation = "plain"', 1),
                          encoding="utf-8")

    changed = template_versions(tmp_path_factory.mktemp("generation"), plain_generation)
    monkeypatch.setattr(history, "templates_dir", lambda: changed["A"])
    code, output = grpo_skill("new", "older", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0, output
    assert 'generation = "auto"' in config_text(tmp_path / "older")
    monkeypatch.setattr(history, "templates_dir", lambda: changed["B"])
    code, output = grpo_skill("new", "older", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path))
    assert code == 0, output
    assert json.loads(output)["notes"] == []
    assert 'generation = "plain"' in config_text(tmp_path / "older")


def test_new_force_says_that_a_value_of_a_project_made_by_another_version_may_be_its_default(tmp_path):
    """In a project made before it recorded what its `new` was given (given_keys), the defaults are this
    grpo-skill's preset's; the preset of the grpo-skill that made the project is nowhere here, and the answers do not
    tell its defaults from the options its `new` was given. A value that differs from this preset's, in a project
    made by another version, is named with that said; one changed since by `set` is the user's all the same."""
    code, output = grpo_skill("new", "older", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0, output
    project = tmp_path / "older"
    answers_file, config = project / ".copier-answers.yml", project / "config.toml"
    # as an earlier grpo-skill whose tiny preset gave beta = 0.0 made it, before given_keys
    answers_text = answers_file.read_text()
    assert "    beta: 0.04\n" in answers_text and "grpo_skill_version: " in answers_text
    assert "\ngiven_keys: []\n" in answers_text
    answers_file.write_text(re.sub(r"(?m)^grpo_skill_version: .*$", "grpo_skill_version: 0.0.9",
                                   answers_text.replace("    beta: 0.04\n", "    beta: 0.0\n").replace(
                                       "\ngiven_keys: []\n", "\n")))
    config.write_text(config.read_text().replace("\nbeta = 0.04\n", "\nbeta = 0.0\n"))
    code, output = grpo_skill("set", "--project", str(project), "grpo.max_steps=7")
    assert code == 0, output
    code, output = grpo_skill("new", "older", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path))
    assert code == 0, output
    assert json.loads(output)["notes"] == [
        "the earlier project's grpo.beta = 0.0, grpo.max_steps = 7 are not carried over: this render takes the "
        "preset's values and this command's options; `grpo-skill set SECTION.KEY=VALUE` changes one setting of a "
        "project without rendering it again",
        "the earlier project was made by grpo-skill 0.0.9, whose defaults may differ from this version's: its "
        "grpo.beta = 0.0 may be such a default rather than a value chosen for it (the project does not record which "
        "values its `new` was given)"]


def test_new_force_gives_the_way_back_of_a_reward_that_reads_a_gold_column(tmp_path):
    """`new --reward accuracy:1` alone reads the column "answer" (or refuses a dataset without it): the way back of a
    reward that read another column names it, and the dataset `new` checks it in where that is not carried over
    either. Following the note gives the earlier project again."""
    data = tmp_path / "d.jsonl"
    data.write_text(DATA)
    dataset = ("--dataset", str(data), "--prompt-column", "question")
    project = tmp_path / "gold"

    def new(*args):
        code, output = grpo_skill("new", "gold", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path), *args)
        assert code == 0, output
        return json.loads(output)["notes"]

    for now, options in ((dataset, "--answer-column final"),  # the dataset kept: the column alone
                         ((), f"--dataset {project / 'data' / 'd.jsonl'} --prompt-column question --answer-column "
                              "final")):
        new(*dataset, "--answer-column", "final", "--reward", "accuracy:1")
        earlier = config_text(project)
        note = [note for note in new(*now) if note.startswith("the earlier project's")][0]
        assert "rewards = accuracy:1 { answer_column = \"final\" }" in note, note
        way = (f"the rewards and their weights come from `grpo-skill new --reward NAME:WEIGHT {options}`, with the "
               "column of gold answers they read (and the dataset `new` copies in)")
        assert note.endswith(way), note
        assert "`grpo-skill set SECTION.KEY=VALUE`" not in note  # the dataset comes back with that `new`
        new(*now, "--reward", "accuracy:1", *shlex.split(options))
        assert config_text(project) == earlier


def test_new_force_names_the_language_only_where_this_command_does_not_give_one(tmp_path):
    """--lang, like --set, sets the language on purpose: the earlier one is not named. Without it the render takes
    the CLI's language, and the note says that the earlier one is not carried over, and why."""
    def notes(*args):
        code, output = grpo_skill("new", "lang", "--preset", "tiny", "--force", "--json", "-o", str(tmp_path), *args)
        assert code == 0, output
        return json.loads(output)["notes"]

    notes()  # the CLI's language, English
    assert notes("--lang", "zh-CN") == []
    assert notes() == [
        "the earlier project's lang = \"zh-CN\" is not carried over: this render takes the preset's values and this "
        "command's options; the language comes from `grpo-skill new --lang`, else the CLI's language (`set` cannot "
        "change it)"]


@pytest.mark.parametrize("recorded", [True, False], ids=["given-keys-recorded", "made-before-the-record"])
def test_new_force_names_no_value_that_this_commands_options_give(tmp_path, monkeypatch, recorded):
    """--model, --dataset, --prompt-column, --answer-column, --reward (and the params of the earlier rewards it leaves
    out) and --backend (even at its default) choose their values on purpose, as --set does: the earlier project's
    values are not named as dropped, whether or not it records what its `new` was given. A value that no option of
    this command gives is named all the same."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text(DATA)  # columns question, final
    second.write_text(DATA.replace('"question"', '"ask"').replace('"final"', '"gold"'))
    code, output = grpo_skill("new", "opts", "--preset", "tiny", "--model", "org/model-a", "--dataset", str(first),
                              "--prompt-column", "question", "--answer-column", "final", "--reward", "accuracy:1",
                              "--reward", "format:0.5", "--param", 'format.end_marks="."', "--backend", "trl",
                              "--set", "grpo.max_steps=7", "-o", str(tmp_path))
    assert code == 0, output
    answers_file = tmp_path / "opts" / ".copier-answers.yml"
    if not recorded:  # as a grpo-skill before given_keys made it
        text = answers_file.read_text()
        answers_file.write_text(re.sub(r"(?m)^given_keys:\n(?:- .*\n)+", "", text))
        assert "given_keys" not in answers_file.read_text()
    code, output = grpo_skill("new", "opts", "--preset", "tiny", "--force", "--model", "org/model-b", "--dataset",
                              str(second), "--prompt-column", "ask", "--answer-column", "gold", "--reward",
                              "accuracy:2", "--backend", "auto", "-o", str(tmp_path))
    assert code == 0, output
    notes = [line for line in output.splitlines() if line.startswith("note: the earlier project")]
    assert notes == [
        "note: the earlier project's grpo.max_steps = 7 is not carried over: this render takes the preset's values and "
        "this command's options; `grpo-skill set SECTION.KEY=VALUE` changes one setting of a project without "
        "rendering it again"], output
    config = tomllib.loads(config_text(tmp_path / "opts"))
    assert (config["model"]["name"], config["model"]["backend"]) == ("org/model-b", "auto")
    assert (config["dataset"]["path"], config["dataset"]["prompt_column"]) == ("data/second.jsonl", "ask")
    assert config["rewards"] == [{"name": "accuracy", "weight": 2.0, "params": {"answer_column": "gold"}}]
    assert "max_steps" not in config["grpo"] or config["grpo"]["max_steps"] != 7
    assert yaml.safe_load(answers_file.read_text())["given_keys"] == [
        "dataset.path", "dataset.prompt_column", "model.backend", "model.name", "rewards",
        "rewards.accuracy.answer_column"]


def test_new_force_names_a_value_of_the_earlier_presets_as_no_choice_of_the_users(tmp_path, monkeypatch):
    """A project records the settings its `new` was given (given_keys in .copier-answers.yml). new --force over it
    names those it drops, and not a value that the preset gave when the project was made and gives no more: a
    development checkout says version 0.1.0 at every commit, and another version's preset is nowhere here either."""
    original = plugins.get_preset

    def earlier_tiny(name):  # the tiny preset as an earlier grpo-skill had it: beta 0.0
        preset = original(name)
        return dataclasses.replace(preset, grpo={**preset.grpo, "beta": 0.0}) if name == "tiny" else preset

    project = tmp_path / "earlier"
    answers_file = project / ".copier-answers.yml"
    for version in (None, "0.0.9"):  # this version's number, and another's
        monkeypatch.setattr(plugins, "get_preset", earlier_tiny)
        code, output = grpo_skill("new", "earlier", "--preset", "tiny", "--set", "grpo.max_steps=7", "--force", "-o",
                                  str(tmp_path))
        assert code == 0, output
        assert yaml.safe_load(answers_file.read_text())["grpo"]["beta"] == 0.0
        assert "\nbeta = 0.0\n" in config_text(project)
        monkeypatch.setattr(plugins, "get_preset", original)
        if version is not None:
            answers_file.write_text(re.sub(r"(?m)^grpo_skill_version: .*$", f"grpo_skill_version: {version}",
                                           answers_file.read_text()))
        code, output = grpo_skill("new", "earlier", "--preset", "tiny", "--force", "-o", str(tmp_path))
        assert code == 0, output
        notes = [line for line in output.splitlines() if line.startswith("note: the earlier project")]
        assert notes == [
            "note: the earlier project's grpo.max_steps = 7 is not carried over: this render takes the preset's "
            "values and this command's options; `grpo-skill set SECTION.KEY=VALUE` changes one setting of a project "
            "without rendering it again"], output
        assert "\nbeta = 0.04\n" in config_text(project)  # this preset's
        assert "\nmax_steps = 7\n" not in config_text(project)
    assert yaml.safe_load(answers_file.read_text())["given_keys"] == []
    monkeypatch.setattr(plugins, "get_preset", earlier_tiny)
    code, output = grpo_skill("new", "earlier", "--preset", "tiny", "--set", "grpo.max_steps=7", "--force", "-o",
                              str(tmp_path))
    assert code == 0, output
    assert yaml.safe_load(answers_file.read_text())["given_keys"] == ["grpo.max_steps"]


def test_new_force_joins_the_ways_back_in_the_cli_language(tmp_path):
    code, output = grpo_skill("new", "zh", "--preset", "tiny", "--lang", "en", "-o", str(tmp_path))
    assert code == 0, output
    code, output = grpo_skill("set", "--project", str(tmp_path / "zh"), "grpo.max_steps=7", "--param",
                              'thinking.think_end_token="</x>"')
    assert code == 0, output
    code, output = grpo_skill("--lang", "zh-CN", "new", "zh", "--preset", "tiny", "--lang", "en", "--force", "--json",
                              "-o", str(tmp_path))
    assert code == 0, output
    note, = json.loads(output)["notes"]
    # the ways back with the Chinese semicolon, as the sentence before them: no ASCII "; " inside Chinese text
    assert note.endswith("；`grpo-skill set SECTION.KEY=VALUE` 修改项目的单个设置，无需重新渲染；"
                         "`grpo-skill set --param REWARD.PARAM=VALUE` 修改某个奖励的参数"), note
    assert "; " not in note
