"""`grpo-skill new`: what it writes, what it refuses, and `grpo-skill check` on the result."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grpo_skill import plugins

SKILL_FILES = {"SKILL.md", "references/cli.md", "references/grpo-config.md", "references/plugins.md",
               "references/rewards.md", "references/troubleshooting.md", "references/presets.md",
               "references/by-hand.md"}
PROJECT_FILES = {
    ".copier-answers.yml", ".env.example", ".gitignore", "README.md", "config.toml", "data/prompts.jsonl",
    "data/sft.jsonl", "evaluate.py", "requirements.txt", "rewards.py", "sft.py", "tests/test_project.py", "train.py",
    "accelerate/ddp.yaml", "accelerate/cpu-ddp.yaml", "accelerate/fsdp.yaml", "accelerate/zero2.yaml",
} | {f"{skills}/grpo-skill/{name}" for skills in (".claude/skills", ".agents/skills") for name in SKILL_FILES}


def files_under(folder):
    return {str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and ".git" not in p.parts}


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
    assert answers["_src_path"] == "git+grpo-skill://templates/project"  # the template, not a path here
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
        (["9lives"], "project name '9lives' (the last part of the path) is not allowed"),
        (["a/-b"], "project name '-b' (the last part of the path) is not allowed"),
        (["{{ 7*7 }}"], "is not allowed"),
        (["ok", "--model", "./no-such-model"], "--model ./no-such-model: no such folder"),
        (["ok", "--preset", "huge"], "unknown preset 'huge'"),
        (["ok", "-r", "nonsense"], "unknown reward 'nonsense'"),
        (["ok", "-r", "length:heavy"], "--reward 'length:heavy': write a reward as NAME or NAME:WEIGHT"),
        (["ok", "-r", "length", "-r", "length:2"], "a reward is given twice"),
    ],
)
def test_bad_input_is_one_line_exit_nonzero_and_writes_nothing(cli, tmp_path, args, message):
    result = cli("new", *args, "-o", str(tmp_path), check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_project_that_would_not_run_is_named_where_it_was_to_go_and_leaves_nothing(cli, tmp_path):
    """`new` renders beside the target and moves the project in whole: a refusal after rendering names the
    project's own path (never the scratch folder, nor a line of a config.toml that was not written) and leaves no
    trace; a project that runs is all there is afterwards."""
    for cwd in (tmp_path, tmp_path.parent):
        result = cli("new", "run", "--preset", "tiny", "--set", "model.max_seq_length=16", "-o", str(tmp_path),
                     check=False, cwd=cwd)
        assert result.returncode == 1
        assert result.stderr.startswith("Error: the project would not run with --set model.max_seq_length=16: "
                                        "grpo.max_completion_length: 32 leaves no room for the prompt in "
                                        "model.max_seq_length (16)"), result.stderr
        result = cli("new", "run", "--preset", "tiny", "--set", 'dataset.path="prompts.csv"', "-o", str(tmp_path),
                     check=False, cwd=cwd)
        shown = Path("run") if cwd == tmp_path else Path(tmp_path.name) / "run"
        assert result.returncode == 1 and f"{shown / 'prompts.csv'} does not exist" in result.stderr, result.stderr
        assert ".grpo-skill-new-" not in result.stderr
        assert list(tmp_path.iterdir()) == []
    cli("new", "run", "--preset", "tiny", "-o", str(tmp_path))
    assert [path.name for path in tmp_path.iterdir()] == ["run"]
    assert (tmp_path / "run" / "train.py").is_file()


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
    result = cli("new", "mine", "--preset", "tiny", "-o", str(tmp_path), "--force", "--json")
    assert (target / "notes.md").read_text() == "keep me\n"
    assert "GRPOTrainer" in (target / "train.py").read_text()
    reported = json.loads(result.stdout)
    assert reported["backed_up"] == ["train.py"]
    backup = Path(reported["backup_dir"])
    assert backup.parent == target / ".grpo-skill-backup" and (backup / "train.py").read_text() == "old\n"
    assert files_under(target) == PROJECT_FILES | {"notes.md", str((backup / "train.py").relative_to(target))}


def test_force_over_a_generated_project_backs_up_only_what_the_user_changed(cli, tmp_path):
    from support import run

    cli("new", "run", "--preset", "tiny", "-o", str(tmp_path))
    project = tmp_path / "run"
    first_commit = run(["git", "rev-parse", "HEAD"], cwd=project).stdout
    edit(project, "seed = 42", "seed = 7")
    before = snapshot(project)
    result = cli("new", "run", "--preset", "tiny", "-r", "thinking:0.5", "-o", str(tmp_path), "--force")
    assert "your versions are in" in result.stderr and "config.toml" in result.stderr
    backups = list((project / ".grpo-skill-backup").iterdir())
    # train.py, the answers file and the skill copies were as generated
    assert len(backups) == 1 and files_under(backups[0]) == {"config.toml"}
    assert (backups[0] / "config.toml").read_bytes() == before["config.toml"]
    assert "weight = 0.5" in (project / "config.toml").read_text()
    # the project's own repository is kept as it was: the changes wait in the work tree, the backup is ignored
    assert "git repository is kept" in result.stderr
    assert run(["git", "rev-parse", "HEAD"], cwd=project).stdout == first_commit
    status = run(["git", "status", "--porcelain"], cwd=project).stdout.splitlines()
    assert " M config.toml" in status and not [line for line in status if line.startswith("??")]
    # once more with nothing changed since: nothing is backed up
    cli("new", "run", "--preset", "tiny", "-r", "thinking:0.5", "-o", str(tmp_path), "--force")
    assert len(list((project / ".grpo-skill-backup").iterdir())) == 1


@pytest.mark.parametrize("options", [
    (),
    # keys given in an order of their own: the answers file keeps it
    ("--set", "grpo.top_p=0.9", "--set", "grpo.temperature=0.8", "--set", "model.generation=\"plain\"",
     "--set", "model.compile_decoding=true", "-r", "repetition", "--param", "repetition.max_penalty=-0.5",
     "--param", "repetition.ngram_size=2"),
])
def test_force_over_an_unedited_project_backs_up_nothing(cli, tmp_path, options):
    cli("new", "run", "--preset", "tiny", *options, "-o", str(tmp_path))
    result = cli("new", "run", "--preset", "standard", "-o", str(tmp_path), "--force", "--json")
    assert json.loads(result.stdout)["backed_up"] == [] and "you had changed" not in result.stderr
    assert not (tmp_path / "run" / ".grpo-skill-backup").exists()


def sort_the_answers(project):
    """The answers file as grpo-skill wrote it before it kept the order of the answers: keys sorted."""
    from grpo_skill import update

    path = project / update.ANSWERS_FILE
    recorded = yaml.safe_load(path.read_text())
    path.write_text(path.read_text().splitlines(keepends=True)[0] + yaml.dump(
        {key: value for key, value in recorded.items() if not key.startswith("_")}, indent=4, allow_unicode=True,
        default_flow_style=False, sort_keys=True))
    update.write_origin(project, recorded.get("_commit"))


def test_force_over_a_project_whose_answers_file_sorted_the_keys_backs_up_only_what_the_user_changed(cli, tmp_path):
    """[grpo] is in the preset's order, which such an answers file does not keep."""
    project = tmp_path / "run"
    cli("new", "run", "--preset", "standard", "-o", str(tmp_path))
    sort_the_answers(project)
    result = cli("new", "run", "--preset", "tiny", "-o", str(tmp_path), "--force", "--json")
    assert json.loads(result.stdout)["backed_up"] == []

    cli("new", "run", "--preset", "standard", "-o", str(tmp_path), "--force")
    sort_the_answers(project)
    edit(project, "seed = 42", "seed = 7")
    result = json.loads(cli("new", "run", "--preset", "tiny", "-o", str(tmp_path), "--force", "--json").stdout)
    assert result["backed_up"] == ["config.toml"]
    assert "seed = 7" in (Path(result["backup_dir"]) / "config.toml").read_text()


@pytest.mark.parametrize("path, where", [
    ("~/runs/my-run", "home/runs/my-run"),
    ("./a/b", "cwd/a/b"),
    ("deep/er/proj", "out/deep/er/proj"),
])
def test_new_takes_a_path_whose_last_part_is_the_name(cli, tmp_path, path, where):
    (tmp_path / "home").mkdir()
    (tmp_path / "cwd").mkdir()
    extra = ["-o", str(tmp_path / "out")] if where.startswith("out/") else []
    cli("new", path, "--preset", "tiny", *extra, cwd=tmp_path / "cwd", env={"HOME": str(tmp_path / "home")})
    project = tmp_path / where
    assert files_under(project) == PROJECT_FILES
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["project_name"] == project.name


@contextlib.contextmanager
def read_only_folder(tmp_path):
    """A folder this process cannot write into: a chmod-ed one, or /sys for root (whom chmod does not stop)."""
    if os.geteuid() == 0:
        yield Path("/sys")
        return
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        yield locked
    finally:
        locked.chmod(0o700)


def test_a_read_only_parent_is_one_line_and_nothing_written(cli, tmp_path):
    with read_only_folder(tmp_path) as locked:
        before = sorted(locked.iterdir())
        result = cli("new", str(locked / "grpo-skill-test" / "proj"), "--preset", "tiny", check=False)
        assert sorted(locked.iterdir()) == before
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "choose a folder you can write to" in result.stderr and str(locked) in result.stderr
    assert "Traceback" not in result.stderr


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


@pytest.mark.parametrize("question, answer", [("backend", "tensorflow"), ("lang", "fr")])
def test_the_template_refuses_an_answer_it_cannot_render(tmp_path, question, answer):
    """copier.yml checks these answers itself, for whoever runs copier on templates/project without `new`."""
    from grpo_skill.scaffold import copying, generator

    answers = {**generator.answers("run", "tiny"), question: answer}
    with pytest.raises(ValueError, match=f"Validation error for question '{question}': one of "):
        copying.load().run_copy(str(generator.template_dir()), tmp_path / "run", data=answers, defaults=True,
                                quiet=True, overwrite=True, unsafe=True)
    assert not (tmp_path / "run" / "train.py").exists()


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
    "old, new, line_of, message",
    [
        ('preset = "tiny"', 'preset = "huge"', True, "model.preset: unknown preset 'huge'"),
        ('name = "thinking"', 'name = "thinkin"', True, "rewards[0].name: unknown reward 'thinkin'; did you mean 'thinking'?"),
        ("seed = 42", "seed = 42\nreward_weights = [0.5, 0.5]", True, "grpo.reward_weights: set by train.py"),
        ("per_device_train_batch_size = 8", "per_device_train_batch_size = 6", "num_generations =",
         "per_device_train_batch_size x gradient_accumulation_steps = 6 is not divisible by num_generations = 8"),
        ("max_completion_length = 32", "max_completion_length = 300", True,
         "grpo.max_completion_length: 300 leaves no room for the prompt in model.max_seq_length (256)"),
        ('prompt_column = "prompt"', 'prompt_column = "question"', None, "column 'question' is not in prompts.jsonl"),
        ('backend = "auto"', 'backend = "jax"', True, 'model.backend = "jax": must be one of "auto", "unsloth", "trl"'),
        ("[lora]", "[lora", True, "not valid TOML"),
        ('path = "data/prompts.jsonl"', 'path = "data/missing.jsonl"', True, "dataset.path: "),
        ("weight = 1.0", 'weight = "heavy"', True, 'rewards[0].weight = "heavy": must be a number'),
        ("weight = 1.0", "weight = 1.0\nparams = { bogus = 1 }", True,
         "rewards[0].params.bogus: reward 'thinking' has no param 'bogus'"),
        ("num_generations = 8", "num_generations = 1", True, "grpo.num_generations = 1: must be at least 2"),
        ("seed = 42", "seed = 42\nbf16 = true", True, "grpo.bf16: set by train.py"),
        ("learning_rate = 0.005", "learnin_rate = 0.005", True, "grpo.learnin_rate = 0.005: unknown key in [grpo]; did "
                                                               "you mean `learning_rate`?"),
        ("load_in_4bit = false", "load_in_4bits = false", True, "did you mean `load_in_4bit`?"),
    ],
)
def test_check_reports_bad_configs(project, old, new, line_of, message):
    from click.testing import CliRunner

    from grpo_skill.cli import main

    edit(project, old, new)
    result = CliRunner().invoke(main, ["check", str(project)])
    assert result.exit_code == 1
    assert message in result.stderr
    if line_of:  # the line of the key named, or of the edit's last line, where the offending key now stands
        text = (project / "config.toml").read_text()
        if isinstance(line_of, str):
            line = text.split("\n" + line_of)[0].count("\n") + 2
        else:
            line = text.split(new)[0].count("\n") + new.count("\n") + 1
        assert f"{project / 'config.toml'}:{line}: " in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_check_accepts_llm_judge_without_a_reference_column(cli, project):
    edit(project, 'name = "thinking"', 'name = "llm_judge"')  # reference_column = "": the judge sees no reference
    assert "rewards llm_judge:1" in cli("check", str(project)).stdout


def test_check_finds_the_projects_own_rewards(cli, project):
    edit(project, 'name = "thinking"', 'name = "no_repetition"')
    assert "rewards no_repetition:1" in cli("check", str(project)).stdout


def test_new_takes_a_reward_that_the_projects_rewards_py_defines(cli, tmp_path):
    """no_repetition is installed nowhere: the rewards.py that `new` writes registers it, so --reward may name it."""
    import tomllib

    cli("new", "own", "--preset", "tiny", "-r", "thinking", "-r", "no_repetition:0.5", "--param",
        "no_repetition.ngram=4", "-o", str(tmp_path))
    project = tmp_path / "own"
    text = (project / "config.toml").read_text()
    assert tomllib.loads(text)["rewards"] == [{"name": "thinking", "weight": 1.0},
                                              {"name": "no_repetition", "weight": 0.5, "params": {"ngram": 4}}]
    assert text.count('name = "no_repetition"') == 1  # no commented example of it under the chosen one
    assert "rewards thinking:1, no_repetition:0.5" in cli("check", str(project)).stdout
    # scored by the project's rewards.py with the param given: 5 word 4-grams, 4 distinct (trigrams: -1/3)
    scored = json.loads(cli("rewards", "try", "no_repetition", "-c", "a b c d a b c d", "--project", str(project),
                            "--json").stdout)
    assert scored["samples"][0]["scores"]["no_repetition"] == pytest.approx(-0.2)


def test_new_names_the_rewards_py_reward_in_its_refusals(cli, tmp_path):
    typo = cli("new", "own", "--preset", "tiny", "-r", "no_repetiton", "-o", str(tmp_path), check=False)
    assert typo.returncode == 1 and "unknown reward 'no_repetiton'; did you mean 'no_repetition'?" in typo.stderr
    param = cli("new", "own", "--preset", "tiny", "-r", "no_repetition", "--param", "no_repetition.ngrm=3",
                "-o", str(tmp_path), check=False)
    assert param.returncode == 1 and "reward 'no_repetition' has no param 'ngrm'; did you mean `ngram`?" in \
        param.stderr
    unchosen = cli("new", "own", "--preset", "tiny", "--param", "no_repetition.ngram=4", "-o", str(tmp_path),
                   check=False)
    assert unchosen.returncode == 1 and "add --reward no_repetition" in unchosen.stderr
    assert not (tmp_path / "own").exists()


def test_the_projects_no_repetition_refuses_an_ngram_below_1(cli, tmp_path):
    """A word n-gram of 0 or fewer words scores nonsense: its factory refuses it, so `new` writes no project and
    `check` (and train.py) stops, each in one line."""
    for ngram in ("0", "-2"):
        refused = cli("new", "own", "--preset", "tiny", "-r", "no_repetition", "--param",
                      f"no_repetition.ngram={ngram}", "-o", str(tmp_path), check=False)
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert refused.stderr.startswith("Error: the project would not run: reward 'no_repetition' (plugin ")
        assert refused.stderr.rstrip().endswith(
            f"rewards.py): params.ngram must be a whole number from 1 up (got {ngram})"), refused.stderr
        assert not (tmp_path / "own").exists()
    cli("new", "own", "--preset", "tiny", "-r", "no_repetition", "-o", str(tmp_path))
    project = tmp_path / "own"
    edit(project, 'name = "no_repetition"\nweight = 1.0', 'name = "no_repetition"\nweight = 1.0\n'
                                                           'params = { ngram = 0 }')
    refused = cli("check", str(project), check=False)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert refused.stderr.rstrip().endswith("rewards.py): params.ngram must be a whole number from 1 up (got 0)")


def test_the_projects_no_repetition_scores_0_not_minus_0_when_nothing_repeats(cli, tmp_path):
    import math

    cli("new", "own", "--preset", "tiny", "-o", str(tmp_path))
    scored = json.loads(cli("rewards", "try", "no_repetition", "-c", "the cat sat on the mat", "-c", "go go go go go",
                            "-c", "hi", "--project", str(tmp_path / "own"), "--json").stdout)
    scores = [sample["scores"]["no_repetition"] for sample in scored["samples"]]
    assert scores == [0.0, pytest.approx(-2 / 3), 0.0]  # "hi" is shorter than a trigram: nothing to repeat
    assert [math.copysign(1.0, score) for score in scores] == [1.0, -1.0, 1.0]  # -0.0 would print as a penalty


def test_new_in_a_process_leaves_no_reward_of_the_template_registered(tmp_path):
    """The template's rewards are known while `new` checks its options, not after: no_repetition is not taken for
    an installed reward by what runs next in the same process."""
    from grpo_skill import generator

    generator.render("own", tmp_path, preset_name="tiny", reward_options=("no_repetition:0.5",))
    assert "no_repetition" not in plugins.rewards()


def test_a_run_scores_the_reward_new_took_from_rewards_py(cli, tmp_path):
    from grpo_skill.runtime import metrics

    cli("new", "own", "--preset", "tiny", "-r", "no_repetition:0.5", "-o", str(tmp_path))
    project = tmp_path / "own"
    subprocess.run([sys.executable, "train.py", "--max-steps", "1"], cwd=project, check=True, capture_output=True)
    logged = [row for row in metrics.read_metrics(project / "outputs") if "reward" in row]
    assert [row["step"] for row in logged] == [1] and "rewards/no_repetition/mean" in logged[0]


def test_the_projects_own_reward_reads_every_completion_form_trl_passes(cli, project, tmp_path):
    # a tool-using turn (several assistant messages) and content given as parts: grpo_skill.completion_text reads both
    turn = [{"role": "assistant", "content": "the cat sat the cat sat the cat sat"},
            {"role": "tool", "content": "ok"}, {"role": "assistant", "content": "done"}]
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a b c a b c a b c"}]}]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"completion": completion, "prompt": [{"role": "user", "content": "hi"}]})
                               + "\n" for completion in (turn, parts)))
    result = json.loads(cli("rewards", "try", "no_repetition", "--project", str(project), "--file", str(samples),
                            "--json").stdout)
    # 8 word trigrams, 4 of them distinct (the last one runs into "done"); 7 trigrams, 3 distinct
    assert [sample["scores"]["no_repetition"] for sample in result["samples"]] == [-0.5, pytest.approx(-4 / 7)]


def test_check_names_the_rewards_py_rewards_whose_params_it_did_not_check(cli, project, english):
    # rewards.py registers no_repetition, but config.toml does not use it: nothing went unchecked, nothing to say
    quiet = cli("check", str(project), "--no-rewards")
    assert "OK" in quiet.stdout and quiet.stderr == ""
    edit(project, "[grpo]", '[[rewards]]\nname = "no_repetition"\nweight = 0.5\nparams = { ngrm = 4 }\n\n[grpo]')
    unrun = cli("check", str(project), "--no-rewards")  # a typo that only running rewards.py finds: named
    assert unrun.stderr.splitlines() == [
        "reward 'no_repetition' is from rewards.py, which was not run, so its params were not checked; "
        "`grpo-skill check` without --no-rewards checks them"]
    refused = cli("check", str(project), check=False)  # plain check runs the project's rewards.py
    assert refused.returncode == 1 and "reward 'no_repetition' has no param 'ngrm'; did you mean `ngram`?" in \
        refused.stderr


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
        (["--dataset", "missing.jsonl"], "--dataset missing.jsonl: no such file"),
        (["--prompt-column", "question"], "column 'question' is not in prompts.jsonl"),
    ],
)
def test_bad_dataset_options_write_nothing(cli, tmp_path, extra, message):
    result = cli("new", "d", "--preset", "tiny", *extra, "-o", str(tmp_path), check=False, cwd=tmp_path)
    assert result.returncode != 0 and message in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_generated_tests_pass_on_a_hub_dataset_and_say_why_offline(cli, tmp_path):
    """The project's own dataset test reads a local file's rows, and for a hub dataset asks what check and
    train.py ask: nothing online (train.py loads it), and to be in the cache when HF_HUB_OFFLINE is set."""
    cli("new", "hub", "--preset", "tiny", "-o", str(tmp_path))
    project = tmp_path / "hub"
    edit(project, 'path = "data/prompts.jsonl"', 'path = "grpo-skill-tests/prompts"')
    from support import run

    pytest_in_project = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    assert "3 passed" in run(pytest_in_project, cwd=project).stdout
    offline = run(pytest_in_project, cwd=project, check=False,
                  env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")})
    assert offline.returncode == 1 and "1 failed, 2 passed" in offline.stdout
    assert "dataset 'grpo-skill-tests/prompts' is not in the Hugging Face cache" in offline.stdout


def test_a_4bit_preset_on_a_machine_without_cuda_says_it_loads_full_precision(cli, tmp_path, capsys, monkeypatch):
    from grpo_skill import project as projects
    from grpo_skill.runtime import machine

    monkeypatch.setattr(machine, "cuda_available", lambda: False)  # the same on a GPU machine
    cli("new", "four-bit", "--preset", "standard", "--set", "model.load_in_4bit=true", "-o", str(tmp_path))
    config = projects.load(tmp_path / "four-bit")
    assert config.model["load_in_4bit"] is True
    assert machine.quantization_config(config, None) is None
    assert "note: load_in_4bit needs a CUDA GPU; loading the model in full precision" in capsys.readouterr().err


def test_auto_checkpointing_is_resolved_per_backend_without_importing_transformers_before_unsloth(
        cli, tmp_path, tiny_model):
    """gradient_checkpointing = "auto" is settled before train.py imports unsloth: on Unsloth it is Unsloth's own, on
    TRL it asks plan (which reads the tokenizer); the Unsloth answer must not import transformers, or unsloth could
    not patch it."""
    cli("new", "ckpt", "--preset", "standard", "--model", str(tiny_model), "-o", str(tmp_path))
    script = (
        "import sys, json\n"
        "from grpo_skill import project as projects\n"
        "from grpo_skill.runtime import decoding, planning\n"
        "planning.gpu_memory_gib = lambda: 141.0\n"
        f"config = projects.load({str(tmp_path / 'ckpt')!r}, {{'model.backend': 'unsloth'}}, rewards=False)\n"
        "unsloth = decoding.choose(config, 'unsloth', cuda=True)\n"
        "imported = 'transformers' in sys.modules\n"
        "trl = decoding.choose(config, 'trl', cuda=True)\n"
        "cpu = decoding.choose(config, 'trl', cuda=False)\n"
        "print(json.dumps([imported, [unsloth.gradient_checkpointing, unsloth.checkpointing_why],\n"
        "                  [trl.gradient_checkpointing, trl.checkpointing_why], [cpu.gradient_checkpointing]]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ,
                          "GRPO_SKILL_LANG": "en"}, check=True)
    imported, unsloth, trl, cpu = json.loads(done.stdout.splitlines()[-1])
    assert imported is False
    assert unsloth == ["unsloth", "Unsloth's own, which keeps the activations in CPU memory"]
    assert trl[0] is False and trl[1].startswith("plan without it: ")  # the tiny model fits a 141 GiB card
    assert cpu == [True]  # on, as the TRL backend takes it: transformers' own (GRPOConfig gradient_checkpointing)


def test_auto_4bit_holds_16_bit_weights_where_the_fast_path_decodes_with_them_and_4_bit_elsewhere(
        cli, tmp_path, monkeypatch, english):
    """The presets' load_in_4bit = "auto": on a GPU where plan fits the fast path, the copy decodes with the base's
    own 16-bit weights (less memory than a 4-bit base plus the copy's 16-bit layers); where it does not fit, the
    backend's own generation on 4-bit weights; without CUDA, full precision and no note."""
    from grpo_skill import project as projects
    from grpo_skill.runtime import decoding, planning

    cli("new", "auto-bits", "--preset", "standard", "-o", str(tmp_path))
    config = projects.load(tmp_path / "auto-bits", rewards=False)
    assert config.model["load_in_4bit"] == "auto"
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 141.0)
    roomy = decoding.choose(config, "unsloth", cuda=True)
    assert (roomy.backend, roomy.fast, roomy.load_in_4bit) == ("trl", True, False)
    assert 'weights: 16-bit (load_in_4bit = "auto"): the fast path\'s copy decodes with the base\'s own 16-bit ' \
           "weights" in roomy.describe()
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 12.0)
    small = decoding.choose(config, "unsloth", cuda=True)
    assert (small.backend, small.fast, small.load_in_4bit) == ("unsloth", False, True)
    assert 'weights: 4-bit (load_in_4bit = "auto"): the unsloth backend\'s own generation' in small.describe()
    cpu = decoding.choose(config, "trl", cuda=False)
    assert (cpu.fast, cpu.load_in_4bit) == (False, False)
    from grpo_skill.runtime import distributed

    monkeypatch.setattr(distributed, "shards_weights", lambda: True)  # FSDP or ZeRO-3 shard 16-bit weights only
    assert decoding.choose(config, "trl", cuda=True).load_in_4bit is False
    fast = projects.load(tmp_path / "auto-bits", {"model.generation": "fast"}, rewards=False)
    with pytest.raises(projects.ConfigError, match="FSDP and ZeRO-3 shard; set generation = 'plain'"):
        decoding.choose(fast, "trl", cuda=True)  # the copy would read sharded weights
    monkeypatch.setattr(distributed, "shards_weights", lambda: False)
    forced = projects.load(tmp_path / "auto-bits", {"model.load_in_4bit": True}, rewards=False)
    assert decoding.choose(forced, "unsloth", cuda=True).load_in_4bit is True  # true stays true on the fast path
    assert decoding.choose(forced, "unsloth", cuda=True).weights_why is None


def test_the_fast_path_compiles_its_decode_step_with_max_autotune_where_the_run_repays_it(
        cli, tmp_path, monkeypatch, english):
    """On the fast path the decode step compiles with torch.compile's max-autotune where plan says the run's
    generations repay its longer first compile (a long run, or one whose epochs decide its length), with
    transformers' reduce-overhead where they do not (the preset's 100 steps, a smoke run); train.py says which and
    why, hands it to the copy and records it in summary.json. Off the fast path or without a GPU: none."""
    from grpo_skill import project as projects
    from grpo_skill.runtime import decoding, planning

    cli("new", "modes", "--preset", "thinking", "-o", str(tmp_path))
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 141.0)
    chosen = {}
    for steps in (5, 100, 2000, None):
        config = projects.load(tmp_path / "modes", {"grpo.max_steps": steps} if steps else {}, rewards=False)
        if steps is None:  # a run by epochs (num_train_epochs): its length is known only from the data
            config.grpo.pop("max_steps")
        chosen[steps] = decoding.choose(config, "trl", cuda=True)
        assert chosen[steps].fast
    assert [chosen[steps].compile_mode for steps in (5, 100, 2000, None)] == [
        "reduce-overhead", "reduce-overhead", "max-autotune", "reduce-overhead"]
    assert "decode step: torch.compile reduce-overhead: 2 generations, " in chosen[5].describe()
    assert "too few to repay max-autotune's longer first compile" in chosen[100].describe()
    assert "decode step: torch.compile max-autotune: 500 generations, " in chosen[2000].describe()
    assert "max_steps not set" in chosen[None].describe()  # a run by epochs: its length is not known here
    monkeypatch.setattr(decoding, "_tunes_matmuls", lambda card: False)  # a GPU with few SMs (an L4): nothing to tune
    config = projects.load(tmp_path / "modes", {"grpo.max_steps": 2000}, rewards=False)
    small = decoding.choose(config, "trl", cuda=True)
    assert small.compile_mode == "reduce-overhead" and "too few streaming multiprocessors" in small.describe()
    monkeypatch.setattr(decoding, "_tunes_matmuls", lambda card: True)
    # plan's time on the card nvidia-smi names: 250 steps are too few on an H200, enough on an A100 (less bandwidth,
    # slower generations), and train.py decides as `plan --gpu` says
    from grpo_skill import gpus

    config = projects.load(tmp_path / "modes", {"grpo.max_steps": 250}, rewards=False)
    by_card = {}
    for name, card in (("NVIDIA H200", "H200"), ("NVIDIA A100-SXM4-80GB", "A100-80")):
        monkeypatch.setattr(gpus, "detected_name", lambda name=name: name)
        by_card[card] = decoding.choose(config, "trl", cuda=True).compile_mode
        planned = json.loads(cli("plan", str(tmp_path / "modes"), "--gpu", card, "--gpu-memory", "141", "--set",
                                 "grpo.max_steps=250", "--json").stdout)
        assert planned["decode_compile_mode"] == by_card[card]
    assert by_card == {"H200": "reduce-overhead", "A100-80": "max-autotune"}
    # a card whose matmuls inductor does not tune (an L4's 58 SMs): plan says what train.py takes there (above)
    for card, mode in (("L4", "reduce-overhead"), ("A10", "max-autotune")):
        planned = json.loads(cli("plan", str(tmp_path / "modes"), "--gpu", card, "--gpu-memory", "141", "--set",
                                 "grpo.max_steps=2000", "--json").stdout)
        assert planned["decode_compile_mode"] == mode, card
        assert ("too few streaming multiprocessors" in planned["decode_compile_why"]) == (card == "L4")
    config = projects.load(tmp_path / "modes", {"grpo.max_steps": 2000}, rewards=False)
    assert decoding.choose(config, "trl", cuda=False).compile_mode is None
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 8.0)  # no room for the fast path
    plain = decoding.choose(config, "trl", cuda=True)
    assert not plain.fast and plain.compile_mode is None and "decode step" not in plain.describe()
    for steps, mode in ((100, "reduce-overhead"), (2000, "max-autotune")):  # plan says what train.py takes
        planned = json.loads(cli("plan", str(tmp_path / "modes"), "--gpu-memory", "141", "--set",
                                 f"grpo.max_steps={steps}", "--json").stdout)
        assert planned["generation_path"] == "fast" and planned["decode_compile_mode"] == mode
    said = cli("plan", str(tmp_path / "modes"), "--gpu-memory", "8").stdout
    assert "decode step" not in said  # not on the fast path: no decode step of its own
    train_py = (tmp_path / "modes" / "train.py").read_text(encoding="utf-8")
    assert "compile_mode=generation.compile_mode" in train_py
    # what the copy compiled with, as the summary records it (a benchmark's lever may change train.py's choice)
    assert '"decode_compile_mode": sampler.compile_mode if sampler is not None else None' in train_py


# A project's script under a CUDA GPU that is not there: torch says a GPU is available, and the moment CUDA would
# start (torch's lazy init, where the allocator reads PYTORCH_ALLOC_CONF once and a context opens on the current
# device) the script prints what it had set by then and ends
CUDA_START_SPY = """
import os, runpy, sys
import torch

def cuda_starts():
    print("cuda starts: PYTORCH_ALLOC_CONF=%s bound=%s" % (os.environ.get("PYTORCH_ALLOC_CONF"), bound), flush=True)
    os._exit(0)

bound = []
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 2
torch.cuda._lazy_init = cuda_starts
torch.cuda.set_device = lambda device: bound.append(device)
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("script, launched", [("train.py", False), ("train.py", True), ("sft.py", False)],
                         ids=["one process", "second process of a launch", "sft.py"])
def test_the_scripts_set_the_allocator_and_bind_the_gpu_before_anything_starts_cuda(cli, tmp_path, script, launched):
    """Expandable segments (less fragmentation: the 24 GiB card's peak reserved memory) take effect only if
    PYTORCH_ALLOC_CONF is set before CUDA starts, and a launched process must bind its own GPU before then (else a
    context on GPU 0). train.py's fast-path choices, made before the model loads, ask about the card: the question
    of max-autotune started CUDA first, and the runs went without expandable segments (an H100, 2026-12-07: peak
    reserved 23.3 GiB for 19.3 allocated). sft.py, a warm start on the same GPU, sets it too."""
    cli("new", "p", "--preset", "tiny", "-o", str(tmp_path))
    fake = tmp_path / "bin" / "nvidia-smi"  # an H200 as nvidia-smi names it, so that the fast path is chosen
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\ncase "$*" in *memory.total*) echo 143771 ;; *name*) echo "NVIDIA H200" ;; esac\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    env.pop("PYTORCH_ALLOC_CONF", None)
    if launched:
        env.update(LOCAL_RANK="1", RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2")
    (tmp_path / "spy.py").write_text(CUDA_START_SPY)
    said = subprocess.run([sys.executable, str(tmp_path / "spy.py"), script], cwd=tmp_path / "p", env=env,
                          capture_output=True, text=True, timeout=300)
    assert said.stdout.strip().splitlines()[-1] == (
        f"cuda starts: PYTORCH_ALLOC_CONF=expandable_segments:True bound={[1] if launched else []}"), said.stderr


def test_a_long_run_compiles_its_decoder_layers_where_the_steps_repay_the_compile_and_says_why(
        cli, tmp_path, monkeypatch, english):
    """[model] compile_layers = "auto" (what `new` writes): on a GPU's fast path the policy's decoder layers compile
    for scoring and training where plan says the run's steps save more training time than the compile costs (a long
    run; not the preset's 100 steps, not a run by epochs); never with 4-bit layers, off the fast path, on Unsloth or
    without a GPU. plan says the same as train.py; true and false force it (true: on the TRL backend only)."""
    from grpo_skill import project as projects
    from grpo_skill.runtime import decoding, planning

    cli("new", "layers", "--preset", "thinking", "-o", str(tmp_path))
    project = tmp_path / "layers"
    assert 'compile_layers = "auto"' in (project / "config.toml").read_text(encoding="utf-8")
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 141.0)
    chosen = {}
    for steps in (100, 2000, None):
        config = projects.load(project, {"grpo.max_steps": steps} if steps else {}, rewards=False)
        if steps is None:
            config.grpo.pop("max_steps")
        chosen[steps] = decoding.choose(config, "trl", cuda=True)
        assert chosen[steps].fast
    assert [chosen[steps].compiled_layers for steps in (100, 2000, None)] == [False, True, False]
    assert "decoder layers compiled for training: no (compile_layers = \"auto\"): 100 steps would save ~" \
        in chosen[100].describe()
    assert "too few to repay ~90 s of compiling" in chosen[100].describe()
    assert "decoder layers compiled for training: yes (compile_layers = \"auto\"): 2000 steps save ~" \
        in chosen[2000].describe()
    assert "max_steps not set" in chosen[None].compiled_layers_why
    for steps, compiled in ((100, False), (2000, True)):  # plan says what train.py takes
        planned = json.loads(cli("plan", str(project), "--gpu-memory", "141", "--set", f"grpo.max_steps={steps}",
                                 "--json").stdout)
        assert (planned["compiled_layers"], planned["settings"]["compiled_layers"]) == (compiled, compiled)
        assert planned["compiled_layers_why"] == chosen[steps].compiled_layers_why
    # compiled training passes make plan's step shorter, and only its training part
    short, long = (json.loads(cli("plan", str(project), "--gpu-memory", "141", "--set", f"grpo.max_steps={steps}",
                                  "--json").stdout) for steps in (100, 2000))
    assert long["train_s_per_step"] < short["train_s_per_step"] and \
        long["generation_s_per_cycle"] == short["generation_s_per_cycle"]
    assert "decoder layers compiled for training: yes (2000 steps save ~" in cli(
        "plan", str(project), "--gpu-memory", "141", "--set", "grpo.max_steps=2000").stdout
    # a resumed run weighs the compile against the steps left (train.py --resume passes the checkpoint's step)
    config = projects.load(project, {"grpo.max_steps": 2000}, rewards=False)
    near_the_end, halfway = (decoding.choose(config, "trl", cuda=True, steps_done=done) for done in (1990, 1000))
    assert (near_the_end.compiled_layers, halfway.compiled_layers) == (False, True)
    assert near_the_end.compiled_layers_why.startswith("10 steps would save ~")
    assert near_the_end.compiled_layers_why.endswith("(resumed at step 1990: 10 steps left)")
    assert "1000 steps save ~" in halfway.compiled_layers_why
    assert (chosen[2000].compile_mode, near_the_end.compile_mode) == ("max-autotune", "reduce-overhead")
    assert "(resumed at step 1990: 10 steps left)" in near_the_end.describe()
    resumed_4bit = decoding.choose(projects.load(project, {"grpo.max_steps": 2000, "model.load_in_4bit": True},
                                                 rewards=False), "trl", cuda=True, steps_done=1990)
    assert "4-bit layers" in resumed_4bit.compiled_layers_why and "resumed" not in resumed_4bit.compiled_layers_why
    assert "steps_done = resume.steps_done(output_dir) if args.resume else 0" in (  # --overwrite starts afresh
        project / "train.py").read_text(encoding="utf-8")
    assert "decoding.choose(config, backend, machine.cuda_available(), steps_done)" in (
        project / "train.py").read_text(encoding="utf-8")
    long_run = {"grpo.max_steps": 2000}
    assert decoding.choose(projects.load(project, long_run, rewards=False), "trl", cuda=False).compiled_layers is False
    four_bit = decoding.choose(projects.load(project, {**long_run, "model.load_in_4bit": True}, rewards=False), "trl",
                               cuda=True)
    assert four_bit.fast and not four_bit.compiled_layers and "4-bit layers" in four_bit.compiled_layers_why
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 8.0)  # no room for the fast path
    plain = decoding.choose(projects.load(project, long_run, rewards=False), "trl", cuda=True)
    assert not plain.fast and not plain.compiled_layers and "off the fast path" in plain.compiled_layers_why
    on_unsloth = decoding.choose(projects.load(project, long_run, rewards=False), "unsloth", cuda=True)
    assert on_unsloth.backend == "unsloth" and not on_unsloth.compiled_layers and on_unsloth.compiled_layers_why is None
    assert "decoder layers" not in cli("plan", str(project), "--gpu-memory", "8", "--backend", "unsloth",
                                       "--set", "grpo.max_steps=2000").stdout  # Unsloth: its own kernels, no line
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 141.0)
    whole = decoding.choose(projects.load(project, {**long_run, "grpo.torch_compile": True}, rewards=False), "trl",
                            cuda=True)
    assert not whole.compiled_layers and "torch_compile" in whole.compiled_layers_why
    planned = json.loads(cli("plan", str(project), "--gpu-memory", "141", "--set", "grpo.max_steps=2000", "--set",
                             "grpo.torch_compile=true", "--json").stdout)
    assert (planned["compiled_layers"], planned["compiled_layers_why"]) == (False, whole.compiled_layers_why)
    from grpo_skill.runtime import distributed

    with monkeypatch.context() as launched:  # accelerate launch, two processes, the fast path asked for by name
        launched.setattr(distributed, "world_size", lambda: 2)
        launched.setattr(distributed, "is_launched", lambda: True)
        several = decoding.choose(projects.load(project, {**long_run, "model.generation": "fast"}, rewards=False),
                                  "trl", cuda=True)
    assert several.fast and not several.compiled_layers and "several processes" in several.compiled_layers_why
    planned = json.loads(cli("plan", str(project), "--gpu-memory", "141", "--gpus", "2", "--set",
                             "grpo.max_steps=2000", "--set", 'model.generation="fast"', "--json").stdout)
    assert (planned["compiled_layers"], planned["compiled_layers_why"]) == (False, several.compiled_layers_why)
    # a project made before the key: its train.py compiles nothing, and nothing says it does
    config_file = project / "config.toml"
    text = config_file.read_text(encoding="utf-8")
    config_file.write_text("\n".join(line for line in text.splitlines() if not line.startswith("compile_layers")),
                           encoding="utf-8")
    older = decoding.choose(projects.load(project, long_run, rewards=False), "trl", cuda=True)
    assert older.compiled_layers is False and "decoder layers" not in older.describe()
    config_file.write_text(text, encoding="utf-8")
    said = cli("plan", str(project), "--gpu-memory", "8", "--backend", "unsloth", "--set",
               "model.compile_layers=true").stdout
    assert "note: compile_layers applies to the TRL backend; Unsloth trains with its own kernels" in said
    forced = projects.load(project, {"model.compile_layers": True}, rewards=False)  # 100 steps, yet on
    assert decoding.choose(forced, "trl", cuda=True).compiled_layers is True
    assert decoding.choose(forced, "trl", cuda=False).compiled_layers is True  # asked for: a CPU compiles too
    off = projects.load(project, {**long_run, "model.compile_layers": False}, rewards=False)
    assert decoding.choose(off, "trl", cuda=True).compiled_layers is False
    for value in ("false", "true"):  # plan says a value set by hand as set, on the backend it applies to
        asked = ("plan", str(project), "--gpu-memory", "141", "--set", "grpo.max_steps=2000", "--set",
                 f"model.compile_layers={value}")
        assert f"decoder layers compiled for training: {'no' if value == 'false' else 'yes'} (compile_layers = " \
               f"{value})" in cli(*asked).stdout
        assert json.loads(cli(*asked, "--json").stdout)["compiled_layers_why"] == f"compile_layers = {value}"
    train_py = (project / "train.py").read_text(encoding="utf-8")
    assert "model_loading.compile_decoder_layers(trainer.model)" in train_py
    assert '"compiled_layers": generation.compiled_layers' in train_py


def test_auto_checkpointing_checkpoints_the_fewest_layers_that_fit_and_train_py_asks_for_them(
        cli, tmp_path, monkeypatch, english):
    """[lora] gradient_checkpointing = "auto" on the TRL backend: off where the run fits without it; where it does
    not, on for every n-th layer only (transformers' every_n_layers), the largest n that fits, so that the other
    layers keep their activations and the backward recomputes fewer; every layer where nothing less fits. The
    choice reaches GRPOConfig through gradient_checkpointing_kwargs, the user's own options kept."""
    from dataclasses import replace

    from grpo_skill import project as projects
    from grpo_skill.runtime import decoding, estimate, planning

    cli("new", "partial", "--preset", "standard", "-o", str(tmp_path), "--set", "grpo.per_device_train_batch_size=8",
        "--set", "grpo.gradient_accumulation_steps=1", "--set", "grpo.steps_per_generation=4",
        "--set", "grpo.gradient_checkpointing_kwargs={use_reentrant = false}")
    config = projects.load(tmp_path / "partial", rewards=False)
    settings = planning.from_config(config, backend="trl")[0]
    fast = replace(settings, generation="fast", backend="trl", load_in_4bit=False)

    def needed(every_n_layers, checkpointing="unsloth"):
        return estimate.needed_gib(estimate.estimate(replace(fast, gradient_checkpointing=checkpointing,
                                                             checkpoint_every_n_layers=every_n_layers)))

    for card, expected in ((needed(1, False) / 0.85, False), (needed(4) / 0.89, "partial"),
                           (needed(1) / 0.89, "every layer")):
        monkeypatch.setattr(planning, "gpu_memory_gib", lambda card=card: card)
        chosen = decoding.choose(config, "trl", cuda=True)
        assert chosen.fast, card
        grpo = decoding.with_checkpointed_layers(config.grpo, chosen)
        if expected is False:
            assert chosen.gradient_checkpointing is False and grpo == config.grpo
        elif expected == "every layer":
            assert chosen.gradient_checkpointing and chosen.checkpoint_every_n_layers == 1 and grpo == config.grpo
        else:
            every = chosen.checkpoint_every_n_layers
            assert chosen.gradient_checkpointing and every > 1
            assert f"on for one layer in {every} (" in chosen.describe()
            assert grpo["gradient_checkpointing_kwargs"] == {"use_reentrant": False, "every_n_layers": every}
            assert needed(every) <= card * 0.9  # it fits, and no choice with fewer checkpointed layers does
            assert all(needed(n) > card * 0.9 for n in planning.PARTIAL_CHECKPOINTING if n > every)


def test_auto_generation_splits_the_micro_batch_where_only_that_lets_the_fast_path_fit(
        cli, tmp_path, monkeypatch, english):
    """[model] generation = "auto" on a card where the fast path does not fit the micro-batch of 8 x 1024 tokens but
    fits it in smaller ones: train.py's GRPOConfig gets those (each optimizer step the same 8 completions, each
    generation the same 32), its generation line says so, checkpointing is chosen for them, and the summary records
    them. The user's config.toml is not changed; on a card with room nothing is."""
    from grpo_skill import project as projects
    from grpo_skill.runtime import decoding, planning

    cli("new", "split", "--preset", "thinking", "-o", str(tmp_path), "--set", "grpo.per_device_train_batch_size=8",
        "--set", "grpo.gradient_accumulation_steps=1", "--set", "grpo.steps_per_generation=4",
        "--set", "grpo.max_completion_length=1024", "--set", "model.max_seq_length=1280")
    before = (tmp_path / "split" / "config.toml").read_bytes()
    config = projects.load(tmp_path / "split", rewards=False)
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 24.0)
    chosen = decoding.choose(config, "unsloth", cuda=True)  # a GPU machine with Unsloth: its generation the fallback
    grpo = decoding.with_micro_batches(config.grpo, chosen)
    assert chosen.backend == "trl" and chosen.fast
    assert chosen.micro_batches == {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
                                    "steps_per_generation": 8}
    assert {key: grpo[key] for key in chosen.micro_batches} == chosen.micro_batches
    assert {key: value for key, value in grpo.items() if key not in chosen.micro_batches} == {
        key: value for key, value in config.grpo.items() if key not in chosen.micro_batches}
    assert "in 2 micro-batches it fits" in chosen.describe()
    from trl import GRPOConfig  # TRL takes the split, and samples as many completions per generation as before

    taken = GRPOConfig(**{**grpo, "output_dir": str(tmp_path / "out")}, bf16=False, use_cpu=True)
    as_written = GRPOConfig(**{**config.grpo, "output_dir": str(tmp_path / "out")}, bf16=False, use_cpu=True)
    assert (taken.per_device_train_batch_size, taken.gradient_accumulation_steps) == (4, 2)
    assert taken.generation_batch_size == as_written.generation_batch_size == 32
    planned = json.loads(cli("plan", str(tmp_path / "split"), "--gpu-memory", "24", "--json").stdout)  # what plan says
    assert planned["generation_path"] == "fast" and bool(chosen.gradient_checkpointing) == planned[
        "gradient_checkpointing"] is True
    assert {key: planned["settings"][key] for key in chosen.micro_batches} == chosen.micro_batches
    assert (tmp_path / "split" / "config.toml").read_bytes() == before
    monkeypatch.setattr(planning, "gpu_memory_gib", lambda: 141.0)
    roomy = decoding.choose(config, "trl", cuda=True)
    assert roomy.fast and roomy.micro_batches == {} and decoding.with_micro_batches(config.grpo, roomy) == config.grpo
    train_py = (tmp_path / "split" / "train.py").read_text(encoding="utf-8")
    assert "decoding.with_micro_batches(grpo_settings, generation)" in train_py
    assert '"micro_batches": generation.micro_batches' in train_py


def test_requirements_name_bitsandbytes_where_the_preset_needs_it_whatever_the_backend(cli, tmp_path):
    """The standard and thinking presets load a checkpoint stored in 4 bits (unsloth/...-bnb-4bit) and train with
    adamw_8bit: bitsandbytes is needed with the TRL backend too (an assistant installing grpo-skill[train] and the
    project's requirements on a GPU box found the load refused). tiny needs none of it."""
    def required(project: str) -> list[str]:
        lines = (tmp_path / project / "requirements.txt").read_text().splitlines()
        return [line.split(">=")[0] for line in lines if line and not line.startswith("#")]

    for preset in ("tiny", "standard", "thinking"):
        cli("new", preset, "--preset", preset, "--backend", "trl", cwd=tmp_path)
    assert "bitsandbytes" not in required("tiny")
    assert "bitsandbytes" in required("standard") and "bitsandbytes" in required("thinking")


def test_a_project_on_the_users_data_carries_no_unused_sample_prompts(cli, tmp_path):
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(f'{{"prompt": "question {i}"}}\n' for i in range(16)))
    cli("new", "own", "--preset", "tiny", "--dataset", str(data), cwd=tmp_path)
    cli("new", "sample", "--preset", "tiny", cwd=tmp_path)
    assert sorted(p.name for p in (tmp_path / "own" / "data").iterdir()) == ["mine.jsonl", "sft.jsonl"]
    assert (tmp_path / "sample" / "data" / "prompts.jsonl").is_file()
    same_name = tmp_path / "elsewhere" / "prompts.jsonl"  # the user's file named like the sample replaces it
    same_name.parent.mkdir()
    same_name.write_text(data.read_text())
    cli("new", "named", "--preset", "tiny", "--dataset", str(same_name), cwd=tmp_path)
    assert (tmp_path / "named" / "data" / "prompts.jsonl").read_text() == data.read_text()


def test_config_toml_keeps_a_chinese_column_name_readable(cli, tmp_path):
    data = tmp_path / "题库.csv"
    data.write_text("题目,答案\n" + "".join(f"{i}加{i}等于几？,{2 * i}\n" for i in range(16)), encoding="utf-8")
    cli("new", "zh", "--preset", "tiny", "--dataset", str(data), "--prompt-column", "题目", "-r", "accuracy",
        "--answer-column", "答案", cwd=tmp_path)
    text = (tmp_path / "zh" / "config.toml").read_text(encoding="utf-8")
    assert 'prompt_column = "题目"' in text and 'path = "data/题库.csv"' in text and "\\u" not in text


def test_the_next_command_new_prints_works_pasted_for_a_folder_with_a_space(cli, tmp_path):
    result = cli("new", "my runs/first", "--preset", "tiny", cwd=tmp_path)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("Next:")]
    cd = line.removeprefix("Next:").strip().split(" && ")[0]
    shell = subprocess.run(["bash", "-c", f"{cd} && pwd"], cwd=tmp_path, capture_output=True, text=True)
    assert shell.returncode == 0, shell.stderr
    assert Path(shell.stdout.strip()) == (tmp_path / "my runs" / "first").resolve()
