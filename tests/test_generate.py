"""`grpo-skill new`: what it writes, what it refuses, and `grpo-skill check` on the result."""

import json
import sys

import pytest
import yaml

from grpo_skill import plugins

PROJECT_FILES = {
    ".copier-answers.yml", ".env.example", ".gitignore", "README.md", "config.toml", "data/prompts.jsonl",
    "data/sft.jsonl", "evaluate.py", "requirements.txt", "rewards.py", "sft.py", "tests/test_project.py", "train.py",
}


def files_under(folder):
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("preset", ["standard", "thinking", "tiny"])
def test_each_preset_renders_the_exact_file_set(cli, tmp_path, preset):
    result = cli("new", "run1", "--preset", preset, "-o", str(tmp_path), "--json")
    reported = json.loads(result.stdout)
    assert files_under(tmp_path / "run1") == PROJECT_FILES == set(reported["files"])
    answers = yaml.safe_load((tmp_path / "run1" / ".copier-answers.yml").read_text())
    registered = plugins.get_preset(preset)
    assert answers["project_name"] == "run1" and answers["preset"] == preset
    assert answers["model_name"] == registered.model_id
    assert answers["max_seq_length"] == registered.max_seq_length
    assert answers["rewards"] == [{"name": n, "weight": w} for n, w in registered.rewards]
    assert answers["grpo"] == dict(registered.grpo)
    assert "_src_path" in answers
    cli("check", str(tmp_path / "run1"))


def test_rewards_and_weights_from_the_command_line(cli, tmp_path):
    cli("new", "mix", "--preset", "standard", "-r", "length:0.3", "-r", "format:0.7", "--backend", "trl",
        "-o", str(tmp_path))
    import tomllib

    config = tomllib.loads((tmp_path / "mix" / "config.toml").read_text())
    assert config["rewards"] == [{"name": "length", "weight": 0.3}, {"name": "format", "weight": 0.7}]
    assert config["model"]["backend"] == "trl"


def test_a_local_model_folder_is_stored_as_an_absolute_path(cli, tmp_path, tiny_model):
    cli("new", "local", "--preset", "tiny", "--model", str(tiny_model), "-o", str(tmp_path))
    import tomllib

    assert tomllib.loads((tmp_path / "local" / "config.toml").read_text())["model"]["name"] == str(tiny_model)


@pytest.mark.parametrize(
    "args, message",
    [
        (["../escape"], "project name '../escape' is not allowed"),
        (["a/b"], "is not allowed"),
        (["{{ 7*7 }}"], "is not allowed"),
        (["ok", "--preset", "huge"], "unknown preset 'huge'"),
        (["ok", "-r", "nonsense"], "unknown reward 'nonsense'"),
        (["ok", "-r", "length:heavy"], "weight 'heavy' is not a number"),
        (["ok", "-r", "length", "-r", "length:2"], "a reward is given twice"),
    ],
)
def test_bad_input_is_one_line_exit_nonzero_and_writes_nothing(cli, tmp_path, args, message):
    result = cli("new", *args, "-o", str(tmp_path), check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_non_empty_folder_is_refused_and_left_alone(cli, tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "train.py").write_text("my own work\n")
    before = snapshot(target)
    result = cli("new", "mine", "--preset", "tiny", "-o", str(tmp_path), check=False)
    assert result.returncode != 0 and "--force" in result.stderr
    assert snapshot(target) == before


def test_force_writes_into_a_non_empty_folder_and_keeps_other_files(cli, tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.md").write_text("keep me\n")
    (target / "train.py").write_text("old\n")
    cli("new", "mine", "--preset", "tiny", "-o", str(tmp_path), "--force")
    assert (target / "notes.md").read_text() == "keep me\n"
    assert "GRPOTrainer" in (target / "train.py").read_text()
    assert files_under(target) == PROJECT_FILES | {"notes.md"}


def test_help_and_listings_import_nothing_heavy(tmp_path):
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from grpo_skill.cli import main\n"
        "for args in (['--help'], ['presets'], ['rewards'], ['plugins'], ['new', '--help']):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0, args\n"
        "heavy = {'torch', 'transformers', 'trl', 'unsloth', 'datasets', 'peft'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    from support import run

    assert run([sys.executable, "-c", probe]).stdout.strip() == "[]"


# ---- grpo-skill check: every bad config is one line that names the field and the fix -----------------

@pytest.fixture
def project(cli, tmp_path):
    cli("new", "proj", "--preset", "tiny", "-o", str(tmp_path))
    return tmp_path / "proj"


def edit(project, old, new):
    path = project / "config.toml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('preset = "tiny"', 'preset = "huge"', "model.preset: unknown preset 'huge'"),
        ('name = "thinking"', 'name = "thinkin"', "rewards: unknown reward 'thinkin'"),
        ("seed = 42", "seed = 42\nreward_weights = [0.5, 0.5]", "grpo.reward_weights has 2 weights for 1 rewards"),
        ("per_device_train_batch_size = 8", "per_device_train_batch_size = 6", "is not divisible by num_generations = 8"),
        ("max_completion_length = 32", "max_completion_length = 300", "grpo.max_completion_length (300) leaves no room"),
        ('prompt_column = "prompt"', 'prompt_column = "question"', "column 'question' is not in prompts.jsonl"),
        ('backend = "auto"', 'backend = "jax"', "model.backend = 'jax' is not one of"),
        ("[lora]", "[lora", "not valid TOML"),
        ('path = "data/prompts.jsonl"', 'path = "data/missing.jsonl"', "dataset.path"),
        ("weight = 1.0", 'weight = "heavy"', "rewards[0].weight = 'heavy' must be a number"),
        ("weight = 1.0", "weight = 1.0\nparams = { bogus = 1 }", "rewards[0].params.bogus"),
        ("num_generations = 8", "num_generations = 1", "use at least 2"),
        ("seed = 42", "seed = 42\nbf16 = true", "grpo.bf16 is set by train.py"),
        ("seed = 42", "seed = 42\nreward_weights = [2.0]", "grpo.reward_weights is set by train.py"),
    ],
)
def test_check_reports_bad_configs(cli, project, old, new, message):
    edit(project, old, new)
    result = cli("check", str(project), check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_check_finds_the_projects_own_rewards(cli, project):
    edit(project, 'name = "thinking"', 'name = "no_repetition"')
    assert "rewards no_repetition:1" in cli("check", str(project)).stdout


def test_a_dataset_of_ones_own_is_copied_in_and_enables_the_accuracy_reward(cli, tmp_path):
    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "What is 2 + 3?", "answer": "5"}\n{"question": "What is 4 + 4?", "answer": "8"}\n')
    refused = cli("new", "math", "--preset", "tiny", "-r", "accuracy", "-o", str(tmp_path / "out"), check=False)
    assert refused.returncode != 0 and "column 'answer' is not in prompts.jsonl" in refused.stderr
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []

    cli("new", "math", "--preset", "tiny", "-r", "accuracy", "--dataset", str(data), "--prompt-column", "question",
        "-o", str(tmp_path / "out"))
    project = tmp_path / "out" / "math"
    assert (project / "data" / "math.jsonl").read_bytes() == data.read_bytes()
    import tomllib

    dataset = tomllib.loads((project / "config.toml").read_text())["dataset"]
    assert (dataset["path"], dataset["prompt_column"]) == ("data/math.jsonl", "question")
    cli("check", str(project))


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dataset", "missing.jsonl"], "--dataset missing.jsonl: not a .jsonl"),
        (["--prompt-column", "question"], "column 'question' is not in prompts.jsonl"),
    ],
)
def test_bad_dataset_options_write_nothing(cli, tmp_path, extra, message):
    result = cli("new", "d", "--preset", "tiny", *extra, "-o", str(tmp_path), check=False, cwd=tmp_path)
    assert result.returncode != 0 and message in result.stderr
    assert list(tmp_path.iterdir()) == []
