"""`new` and `plan` take settings up front: --set, --param, --answer-column (issue 22, item 1)."""

import json
import tomllib

import pytest

DATA = '{"question": "What is 2 + 3?", "final": "5"}\n{"question": "What is 4 + 4?", "final": "8"}\n'


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(DATA)
    return path


def config_of(project):
    return tomllib.loads((project / "config.toml").read_text())


def test_new_writes_exactly_the_settings_given_and_check_passes(cli, tmp_path, data_file, english):
    made = cli("new", "p", "--preset", "tiny", "--dataset", str(data_file), "--prompt-column", "question",
               "--answer-column", "final", "--reward", "accuracy:1", "--reward", "cosine_length:0.5",
               "--param", "cosine_length.max_len=300", "--set", "grpo.max_completion_length=64", cwd=tmp_path)
    assert "note:" not in made.stdout  # the rewards were chosen: nothing added
    config = config_of(tmp_path / "p")
    assert config["rewards"] == [
        {"name": "accuracy", "weight": 1.0, "params": {"answer_column": "final"}},
        {"name": "cosine_length", "weight": 0.5, "params": {"answer_column": "final", "max_len": 300}},
    ]
    assert config["grpo"]["max_completion_length"] == 64
    assert (config["dataset"]["path"], config["dataset"]["prompt_column"]) == ("data/d.jsonl", "question")
    text = (tmp_path / "p" / "config.toml").read_text()
    # written in its place in [grpo], once, not appended at the end
    assert text.count("max_completion_length") == 1
    assert text.index("max_completion_length = 64") < text.index("[sft]")
    checked = cli("check", "p", "--rewards", cwd=tmp_path)
    assert "OK (preset tiny, rewards accuracy:1, cosine_length:0.5)" in checked.stdout


def test_set_writes_into_every_table(cli, tmp_path):
    cli("new", "p", "--preset", "tiny", "--set", "model.backend=\"trl\"", "--set", "model.compile_decoding=true",
        "--set", "lora.r=8", "--set", "dataset.system_prompt=Answer in one line. 用中文",
        "--set", "dataset.chat_template_kwargs={ enable_thinking = false }",
        "--set", "grpo.generation_kwargs={ max_cache_len = 300 }", "--set", "grpo.learning_rate=1e-4",
        "--set", "sft.max_steps=7", cwd=tmp_path)
    config = config_of(tmp_path / "p")
    assert (config["model"]["backend"], config["model"]["compile_decoding"], config["lora"]["r"]) == ("trl", True, 8)
    assert config["dataset"]["system_prompt"] == "Answer in one line. 用中文"
    assert config["dataset"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert config["grpo"]["generation_kwargs"] == {"max_cache_len": 300}
    assert config["grpo"]["learning_rate"] == 1e-4 and config["sft"]["max_steps"] == 7
    cli("check", "p", cwd=tmp_path)


def test_a_bare_word_is_text_only_where_the_key_takes_text_and_that_is_said(cli, tmp_path, english):
    made = cli("new", "p", "--preset", "tiny", "--set", "grpo.optim=adamw_torch", cwd=tmp_path)
    assert "note: --set 'grpo.optim=adamw_torch': taken as the text \"adamw_torch\"" in made.stdout
    assert config_of(tmp_path / "p")["grpo"]["optim"] == "adamw_torch"


def test_the_dataset_gold_column_adds_a_correctness_reward_and_says_so(cli, tmp_path, data_file, english):
    made = cli("new", "p", "--preset", "tiny", "--dataset", str(data_file), "--prompt-column", "question",
               "--answer-column", "final", "--json", cwd=tmp_path)
    result = json.loads(made.stdout)
    assert any("added the reward accuracy:1" in note and "'final'" in note for note in result["notes"])
    assert config_of(tmp_path / "p")["rewards"] == [
        {"name": "thinking", "weight": 1.0}, {"name": "accuracy", "weight": 1.0, "params": {"answer_column": "final"}}]
    cli("check", "p", cwd=tmp_path)

    plain = tmp_path / "answer.jsonl"  # a column named "answer" is a gold column without being named
    plain.write_text('{"prompt": "2 + 2?", "answer": "4"}\n')
    made = cli("new", "q", "--preset", "tiny", "--dataset", str(plain), cwd=tmp_path)
    assert "added the reward accuracy:1" in made.stdout
    assert [reward["name"] for reward in config_of(tmp_path / "q")["rewards"]] == ["thinking", "accuracy"]

    made = cli("new", "r", "--preset", "tiny", cwd=tmp_path)  # the sample prompts have no answers
    assert "added" not in made.stdout and [r["name"] for r in config_of(tmp_path / "r")["rewards"]] == ["thinking"]


@pytest.mark.parametrize("args, message", [
    (["--set", "grpo.learnig_rate=1"], "--set 'grpo.learnig_rate=1': unknown key in [grpo]; did you mean "
                                       "`learning_rate`?"),
    (["--set", "grpo.learning_rate=fast"], "--set 'grpo.learning_rate=fast': 'fast' is not a TOML value"),
    (["--set", "grpo.learning_rate=\"1e-4\""], "grpo.learning_rate = \"1e-4\" (given on the command line): "
                                               "must be a number (no quotes)"),
    (["--set", "grpo.max_completion_length=4096"], "grpo.max_completion_length (given on the command line): 4096 "
                                                   "leaves no room for the prompt"),
    (["--set", "nope=1"], "--set 'nope=1': write SECTION.KEY=VALUE"),
    (["--set", "model.preset=standard"], "use --preset for it"),
    (["--set", "rewards.name=x"], "rewards are chosen with --reward"),
    (["--param", "thinking.think_end=x"], "reward 'thinking' has no param 'think_end'; did you mean "
                                          "`think_end_token`?"),
    (["--param", "cosine_length.max_len=300"], "'cosine_length' is not one of the project's rewards (thinking)"),
    (["-r", "cosine_length", "--param", "cosine_length.max_len=\"300\""], "max_len of reward 'cosine_length' must be "
                                                                         "a whole number"),
    (["--answer-column", "final"], "--answer-column: column 'final' is not in prompts.jsonl (it has: prompt)"),
    (["-r", "length", "--answer-column", "prompt"], "--answer-column prompt: none of the rewards (length) reads a "
                                                    "gold answer"),
])
def test_bad_settings_are_one_line_exit_nonzero_and_write_nothing(cli, tmp_path, english, args, message):
    result = cli("new", "p", "--preset", "tiny", *args, cwd=tmp_path, check=False)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2 and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []
