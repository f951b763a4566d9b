"""`grpo-skill rewards try` and `rewards show`, as a user runs them."""

import json
import shlex

import pytest
from click.testing import CliRunner

from grpo_skill import plugins
from grpo_skill.cli import main

ONE_RIGHT = ["--completion", "6 x 7 = 42.</think>\\boxed{42}", "--completion", "</think>41",
             "--completion", "</think>40", "--completion", "</think>I give up on this one", "--column", "answer=42"]


def invoke(*args):
    result = CliRunner().invoke(main, ["rewards", "try", *args], catch_exceptions=False)
    return result.exit_code, result.stdout if result.exit_code == 0 else result.output


def test_text_output_through_the_command_line(cli):
    result = cli("rewards", "try", "accuracy", *ONE_RIGHT)
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "accuracy ×1" in line)
    assert "total" in header and "advantage" in header
    rows = [line for line in lines if line.startswith("│")]
    # one right of four: mean 0.25, std 0.5; advantages 0.75 / 0.5001 and -0.25 / 0.5001
    assert [row.split("│")[-2].strip() for row in rows] == ["1.5", "-0.4999", "-0.4999", "-0.4999"]
    assert "mean 0.25, std 0.5 (scale_rewards = group)" in result.stdout
    assert "ZERO SPREAD" not in result.stdout


def test_json_output_through_the_command_line(cli):
    data = json.loads(cli("rewards", "try", "accuracy:2", "length:0.5", *ONE_RIGHT, "--json").stdout)
    assert [(r["name"], r["weight"], r["plugin"]) for r in data["rewards"]] == [
        ("accuracy", 2.0, "builtin:verifiable"), ("length", 0.5, "builtin:seed")]
    assert [s["scores"] for s in data["samples"]] == [
        {"accuracy": 1.0, "length": 1.0}, {"accuracy": 0.0, "length": -1.0},
        {"accuracy": 0.0, "length": -1.0}, {"accuracy": 0.0, "length": 1.0}]
    # 2 x accuracy + 0.5 x length: totals 2.5, -0.5, -0.5, 0.5; mean 0.5, deviations 2, -1, -1, 0, std sqrt(2)
    assert [s["total"] for s in data["samples"]] == [2.5, -0.5, -0.5, 0.5]
    assert [s["advantage"] for s in data["samples"]] == pytest.approx(
        [2 / 1.41431, -1 / 1.41431, -1 / 1.41431, 0.0], abs=1e-5)
    assert data["groups"][0]["zero_spread"] is False
    assert all(r["seconds"] >= 0 for r in data["rewards"])


def test_the_standard_presets_rewards_rank_completions_as_the_seed_combined_reward():
    # the seed's combined_reward: 0.5 x length + 0.5 x format, the standard preset's rewards and weights
    specs = [f"{name}:{weight}" for name, weight in plugins.get_preset("standard").rewards]
    completions = ["Short.", " " + " ".join(["word"] * 20) + ".", " ".join(["word"] * 60)]
    code, output = invoke(*specs, *[arg for c in completions for arg in ("-c", c)], "--json")
    data = json.loads(output)
    # Short.: -1 + 1; the 20 words: 1 + 0.5; the 60 words: 0.5 + 0.5 -> halves: 0.0, 0.75, 0.5
    assert [s["total"] for s in data["samples"]] == [0.0, 0.75, 0.5]
    assert [s["advantage"] for s in data["samples"]] == pytest.approx([-1.0908, 0.87264, 0.21816], abs=1e-4)


def test_zero_spread_is_shown_loudly():
    code, output = invoke("accuracy", "-c", "</think>41", "-c", "</think>40", "--column", "answer=42")
    assert code == 0
    assert "ZERO SPREAD: every completion of this group gets the same total" in output
    assert "same score for every completion (adds nothing to the spread): accuracy" in output
    data = json.loads(invoke("accuracy", "-c", "</think>41", "-c", "</think>40", "--column", "answer=42",
                             "--json")[1])
    assert data["groups"][0]["zero_spread"] is True and [s["advantage"] for s in data["samples"]] == [0.0, 0.0]


def test_none_scores_are_left_out_as_trl_does(tmp_path):
    samples = tmp_path / "samples.jsonl"
    rows = [{"completion": "</think>1", "answer": "\\frac{1}{"}, {"completion": "</think>2", "answer": "\\frac{1}{"},
            {"completion": "</think>42", "answer": "42"}, {"completion": "</think>41", "answer": "42"}]
    samples.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    code, output = invoke("accuracy", "--file", str(samples), "--json")
    data = json.loads(output)
    # every reward abstained on the first two: no total, advantage 0; the rest: mean 0.5, std sqrt(0.5)
    assert [s["total"] for s in data["samples"]] == [None, None, 1.0, 0.0]
    assert [s["advantage"] for s in data["samples"]] == pytest.approx([0.0, 0.0, 0.70701, -0.70701], abs=1e-4)
    assert data["warnings"] and "cannot be read" in data["warnings"][0]
    # with a second reward that scores them, the None is left out of the sum instead
    data = json.loads(invoke("accuracy", "format:0.5", "--file", str(samples), "--json")[1])
    assert [s["total"] for s in data["samples"]] == [0.25, 0.25, 1.25, 0.25]  # format: 0.5 each, no final "."


def test_scale_rewards_none_keeps_the_raw_differences():
    data = json.loads(invoke("accuracy", *ONE_RIGHT, "--scale-rewards", "none", "--json")[1])
    assert [s["advantage"] for s in data["samples"]] == [0.75, -0.25, -0.25, -0.25]


def test_groups_follow_the_prompts(tmp_path):
    samples = tmp_path / "samples.jsonl"
    rows = [{"prompt": "6 x 7?", "completion": "</think>42", "answer": "42"},
            {"prompt": "6 x 7?", "completion": "</think>41", "answer": "42"},
            {"prompt": [{"role": "user", "content": "2 + 2?"}], "completion": [{"role": "assistant",
                                                                                "content": "</think>4"}],
             "answer": "4"},
            {"prompt": [{"role": "user", "content": "2 + 2?"}], "completion": "</think>4", "answer": "4"}]
    samples.write_text("\n".join(json.dumps(row) for row in rows))
    data = json.loads(invoke("accuracy", "--file", str(samples), "--json")[1])
    assert [s["group"] for s in data["samples"]] == [0, 0, 1, 1]
    assert [g["zero_spread"] for g in data["groups"]] == [False, True]
    code, output = invoke("accuracy", "--file", str(samples))
    assert "group 2" in output and "ZERO SPREAD" in output


def test_token_rewards_need_a_tokenizer_and_tiny_gives_one():
    code, output = invoke("thinking", "-c", "Let me see.</think>42")
    assert code == 1 and "this reward counts tokens" in output and "--tokenizer tiny" in output
    data = json.loads(invoke("thinking", "-c", "Let me see.</think>42", "-c", "no end", "--tokenizer", "tiny",
                             "--json")[1])
    assert data["samples"][0]["scores"]["thinking"] > 0 and data["samples"][1]["scores"]["thinking"] == -1.0


def test_params_and_presets_change_how_a_reward_is_built():
    data = json.loads(invoke("length", "-c", "one two three", "--param", "length.too_short=3", "--json")[1])
    assert data["samples"][0]["scores"]["length"] == 1.0 and data["rewards"][0]["params"]["too_short"] == 3
    # the thinking preset's template opens <think>: unfinished thinking has no answer
    data = json.loads(invoke("accuracy", "-c", "it is 42", "--column", "answer=42", "--preset", "thinking",
                             "--json")[1])
    assert data["samples"][0]["scores"]["accuracy"] == 0.0


@pytest.mark.parametrize("args, message", [
    (["accuracy:heavy", "-c", "x"], "'accuracy:heavy': write a reward as NAME or NAME:WEIGHT"),
    (["accuracy:nan", "-c", "x"], "NAME:WEIGHT, the weight a finite number"),
    (["length:1e308", "format:1e308", "-c", "x"], "'length:1e308': a weight from -1000 to 1000"),
    (["length:", "-c", "x"], "'length:': write a reward as NAME or NAME:WEIGHT"),
    (["nosuch", "-c", "x"], "unknown reward 'nosuch'; choose one of:"),
    (["length"], "give the completions with --completion TEXT"),
    (["length", "-c", "x", "--param", "format.x=1"], "'format' is not one of the rewards tried"),
    (["length", "-c", "x", "--param", "length=1"], "write REWARD.KEY=VALUE"),
    (["length", "-c", "x", "--param", "length.bogus=1"], "reward 'length' has no parameter 'bogus'"),
    (["length", "-c", "x", "--column", "answer"], "write KEY=VALUE"),
    (["length", "-c", "x", "--tokenizer", "/no/such/folder"], "no such folder"),
    # no dataset here: the missing column is one --column away (the reward's own message speaks of a dataset)
    (["accuracy", "-c", "</think>42"], "reward 'accuracy' reads the 'answer' column, which these samples lack "
                                       "(they have: none); give it with --column answer=VALUE"),
    (["accuracy", "-c", "</think>42", "--column", "solution=42"], "(they have: solution); give it with --column "
                                                                  "answer=VALUE"),
    (["llm_judge", "-c", "</think>42", "--param", "llm_judge.reference_column=ref"],
     "reward 'llm_judge' reads the 'ref' column, which these samples lack (they have: none); give it with "
     "--column ref=VALUE"),
    (["length", "length:2", "-c", "x"], "a reward is named twice"),
    (["length", "-c", "x", "--file", "samples.jsonl"], "give the completions one way, not both"),
    (["length", "-c", "x", "--param", "length.too_short=abc"], "too_short = 'abc' must be a whole number"),
    # bands no completion can fall in: the reward would never score what its params say
    (["length", "-c", "x", "--param", "length.too_short=-3"], "params.too_short = -3 is below 0, and no completion "
                                                              "is shorter than 0; give 0 or more"),
    (["length", "-c", "x", "--param", "length.long_from=5"], "params: long_from = 5 is not above too_short = 5, so "
                                                             "no completion scores 1.0"),
])
def test_bad_input_gets_one_line(args, message):
    code, output = invoke(*args)
    assert code != 0 and message in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1, output


def test_a_reward_of_the_rewards_py_here_says_to_add_project(cli, tmp_path):
    cli("new", "proj", "--preset", "tiny", "-o", str(tmp_path))
    project = tmp_path / "proj"  # its rewards.py registers no_repetition
    for command in (["try", "no_repetition", "-c", "a b c", "-c", "a a a"], ["show", "no_repetition"]):
        refused = cli("rewards", *command, cwd=project, check=False)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        # how to load rewards.py, and no "did you mean" naming another reward (the built-in repetition)
        assert refused.stderr.splitlines() == [
            "Error: the rewards.py here is not loaded: if it registers 'no_repetition', add --project ."]
        assert "no_repetition" in cli("rewards", *command, "--project", ".", cwd=project).stdout
    # a typo of it: suggested, with how to load the rewards.py that has it
    typo = cli("rewards", "show", "no_repetiton", cwd=project, check=False)
    assert typo.returncode == 1 and typo.stderr.splitlines()[0].startswith(
        "Error: unknown reward 'no_repetiton'; did you mean 'no_repetition'? Choose one of: ")
    assert typo.stderr.splitlines()[1] == (
        "the rewards.py here is not loaded: if it registers 'no_repetition', add --project .")

    # installed nowhere, but every new project's rewards.py has it: said in one line, with how to choose it
    elsewhere = cli("rewards", "show", "no_repetition", cwd=tmp_path, check=False)  # no rewards.py there
    assert elsewhere.returncode == 1 and elsewhere.stderr.splitlines() == [
        "Error: 'no_repetition' is a reward of the rewards.py that `grpo-skill new` writes into every project: "
        "`grpo-skill new PATH --reward no_repetition` chooses it, and --project PATH finds it in a project"]
    typo = cli("rewards", "show", "no_repetiton", cwd=tmp_path, check=False)
    assert typo.returncode == 1 and typo.stderr.splitlines()[0].startswith(
        "Error: unknown reward 'no_repetiton'; did you mean 'no_repetition'? Choose one of: ")
    assert typo.stderr.splitlines()[1] == (
        "'no_repetition' is a reward of the rewards.py that `grpo-skill new` writes into every project: "
        "`grpo-skill new PATH --reward no_repetition` chooses it, and --project PATH finds it in a project")
    # a typo of a built-in reward is suggested as before, without the template's line
    near = cli("rewards", "show", "repetiton", cwd=tmp_path, check=False)
    assert near.returncode == 1 and len(near.stderr.splitlines()) == 1
    assert near.stderr.startswith("Error: unknown reward 'repetiton'; did you mean 'repetition'? Choose one of: ")
    unknown = cli("rewards", "show", "no_such_reward", cwd=tmp_path, check=False)
    assert unknown.returncode == 1 and len(unknown.stderr.splitlines()) == 1
    assert "did you mean" not in unknown.stderr


def test_the_projects_no_repetition_reads_chinese_character_by_character(cli, tmp_path):
    """Chinese has no spaces: split at spaces, a whole Chinese answer was one word and never repeated."""
    cli("new", "proj", "--preset", "tiny", "-o", str(tmp_path))
    english = ["-c", "the cat sat on the mat today", "-c", "go go go go go go go"]
    chinese = ["-c", "小明有五个苹果又买了三个", "-c", "好的好的好的好的好的"]
    scored = json.loads(cli("rewards", "try", "no_repetition", *english, *chinese, "--project", ".", "--json",
                            cwd=tmp_path / "proj").stdout)
    # trigrams of characters: 8 in the loop, two distinct (好的好, 的好的); the English as before
    assert [sample["scores"]["no_repetition"] for sample in scored["samples"]] == [0.0, -0.8, 0.0, -0.75]


def test_a_folder_without_a_tokenizer_is_one_line(tmp_path):
    code, output = invoke("thinking", "-c", "x", "--tokenizer", str(tmp_path))
    assert code == 1 and "cannot load a tokenizer there" in output and len(output.strip().splitlines()) == 1


def test_a_bad_samples_file_names_the_line(tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"completion": "a"}\n{"completion": \n')
    code, output = invoke("length", "--file", str(samples))
    assert code == 1 and "samples.jsonl:2: not valid JSON" in output
    samples.write_text('{"text": "a"}\n')
    assert "samples.jsonl:1: each line is an object with a \"completion\" key" in invoke("length", "--file",
                                                                                       str(samples))[1]


def test_plain_rewards_still_lists():
    result = CliRunner().invoke(main, ["rewards", "--json"])
    names = {row["name"] for row in json.loads(result.output)}
    assert {"accuracy", "llm_judge", "language", "soft_overlong", "length"} <= names


def test_show_gives_description_params_config_and_an_example():
    result = CliRunner().invoke(main, ["rewards", "show", "accuracy"])
    assert result.exit_code == 0
    assert "accuracy  (plugin builtin:verifiable)" in result.output
    assert 'answer_column = "answer"  the dataset column with the gold answer' in result.output
    assert '[[rewards]]\n  name = "accuracy"' in result.output
    assert "grpo-skill rewards try accuracy --completion" in result.output
    data = json.loads(CliRunner().invoke(main, ["rewards", "show", "llm_judge", "--json"]).output)
    assert [judge["name"] for judge in data["judges"]] == ["http", "local"]
    assert {"name": "api_key_env", "default": ""}.items() <= data["judges"][0]["params"][2].items()
    unknown = CliRunner().invoke(main, ["rewards", "show", "nosuch"])
    assert unknown.exit_code == 1 and "unknown reward 'nosuch'" in unknown.output


@pytest.mark.parametrize("name", sorted(name for name, reg in plugins.rewards().items()
                                        if reg.plugin.startswith("builtin:")))
def test_every_builtin_has_documented_params_and_an_example_that_runs(name):
    reward = plugins.get_reward(name)
    assert reward.description and set(reward.param_help) == set(reward.params), "every param has a line of help"
    shown = json.loads(CliRunner().invoke(main, ["rewards", "show", name, "--json"]).output)
    args = shlex.split(shown["example"])
    assert args[:4] == ["grpo-skill", "rewards", "try", name]
    code, output = invoke(*args[3:], "--json")
    assert code == 0, output
    scores = [sample["scores"][name] for sample in json.loads(output)["samples"]]
    assert len(scores) >= 2 and len(set(scores)) > 1, f"the example of {name} shows no difference: {scores}"


def test_batch_scaling_and_normalize_then_sum(tmp_path):
    samples = tmp_path / "samples.jsonl"
    rows = [("a", "</think>42"), ("a", "</think>41"), ("b", "</think>42"), ("b", "</think>42")]
    samples.write_text("\n".join(json.dumps({"prompt": p, "completion": c, "answer": "42"}) for p, c in rows))
    data = json.loads(invoke("accuracy", "--file", str(samples), "--scale-rewards", "batch", "--json")[1])
    # totals 1, 0 | 1, 1: the batch's std is 0.5, each group keeps its own mean (0.5 | 1.0)
    assert [s["advantage"] for s in data["samples"]] == pytest.approx([0.5 / 0.5001, -0.5 / 0.5001, 0.0, 0.0],
                                                                     abs=1e-5)
    assert [g["zero_spread"] for g in data["groups"]] == [False, True]
    data = json.loads(invoke("accuracy", *ONE_RIGHT, "--aggregation", "normalize_then_sum", "--json")[1])
    # per reward z-scores in the group (0.75 / 0.5001, -0.25 / 0.5001), then scaled by the batch's std of them
    z = [0.75 / 0.5001, -0.25 / 0.5001]
    spread = 0.5 / 0.5001 + 1e-4
    assert [s["advantage"] for s in data["samples"]] == pytest.approx(
        [z[0] / spread, z[1] / spread, z[1] / spread, z[1] / spread], abs=1e-5)


def test_a_project_gives_its_preset_settings_params_and_tokenizer(cli, tmp_path, tiny_model):
    cli("new", "proj", "--preset", "tiny", "-o", str(tmp_path))
    config = tmp_path / "proj" / "config.toml"
    config.write_text(config.read_text().replace(
        'name = "thinking"\nweight = 1.0\n',
        'name = "thinking"\nweight = 1.0\n\n[[rewards]]\nname = "soft_overlong"\nweight = 0.5\n'
        'params = { soft_punish_cache = 4 }\n', 1))
    long = " ".join(["word"] * 40)  # past the tiny preset's 32-token budget
    done = cli("rewards", "try", "soft_overlong", "--project", str(tmp_path / "proj"), "-c", long, "-c", "short",
               "--json")  # no --tokenizer: the project's local model has one
    data = json.loads(done.stdout)
    assert data["rewards"][0]["params"]["soft_punish_cache"] == 4  # from config.toml
    assert [sample["scores"]["soft_overlong"] for sample in data["samples"]] == [-1.0, 0.0]


def test_a_project_without_names_tries_its_own_rewards_with_their_weights(cli, tmp_path, english):
    """`rewards try --project .` scores with the rewards config.toml lists, at their weights, so its totals and
    advantages are the run's; a listed reward named without a weight takes the project's, one with a weight its own."""
    cli("new", "proj", "--preset", "standard", "-r", "length:0.5", "-r", "format:0.25", "-o", str(tmp_path))
    project = tmp_path / "proj"
    texts = ["-c", "It is 42.", "-c", "forty-two, I think, or maybe not"]
    own = json.loads(cli("rewards", "try", "--project", ".", *texts, "--json", cwd=project).stdout)
    assert [(entry["name"], entry["weight"]) for entry in own["rewards"]] == [("length", 0.5), ("format", 0.25)]
    named = json.loads(cli("rewards", "try", "--project", ".", "format", "length:2", *texts, "--json",
                           cwd=project).stdout)
    assert [(entry["name"], entry["weight"]) for entry in named["rewards"]] == [("format", 0.25), ("length", 2.0)]
    for sample in own["samples"]:  # the weighted total, as the run adds it
        assert sample["total"] == 0.5 * sample["scores"]["length"] + 0.25 * sample["scores"]["format"]
    nothing = cli("rewards", "try", "-c", "x", check=False)
    assert nothing.returncode == 1 and nothing.stderr.strip() == (
        "Error: name the rewards to try (NAME[:WEIGHT] ...), or give --project DIR to try a project's own, with "
        "their weights")


def test_a_reward_the_project_does_not_list_reads_the_projects_gold_column(cli, tmp_path):
    """--project gives the rewards config.toml lists their params, the gold answer's column among them (`new
    --answer-column final`); a gold-reading reward tried that config.toml does not list reads that column too (it
    read its default 'answer', which the project's samples lack: an assistant's `rewards try --project . accuracy:0`,
    2026-12-06). Where the listed rewards read several columns, it is asked which."""
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {n} x 7?", "final": str(7 * n),
                                        "answer": f"{n} x 7 = {7 * n}"}) + "\n" for n in range(1, 11)))
    cli("new", "proj", "--preset", "tiny", "--dataset", str(data), "--prompt-column", "question", "--answer-column",
        "final", "--reward", "reasoning_accuracy:1", "-o", str(tmp_path))
    project = tmp_path / "proj"
    right_and_wrong = ["-c", "</think>42", "-c", "</think>41", "--column", "final=42"]
    said = ("accuracy is not in config.toml: it reads the gold answers from the column 'final', the one config.toml "
            "gives reasoning_accuracy (answer_column; --param accuracy.answer_column=COLUMN for another)")
    data = json.loads(cli("rewards", "try", "--project", ".", "accuracy:0", *right_and_wrong, "--json",
                          cwd=project).stdout)
    assert data["rewards"][0]["params"]["answer_column"] == "final"
    assert [sample["scores"]["accuracy"] for sample in data["samples"]] == [1.0, 0.0]
    assert data["notes"] == [said]
    text = cli("rewards", "try", "--project", ".", "accuracy:0", *right_and_wrong, cwd=project).stdout
    assert "note: " + said in " ".join(text.split())  # the table's console wraps long lines
    # --param says otherwise: that column, and nothing said
    given = json.loads(cli("rewards", "try", "--project", ".", "accuracy:0", "--param", "accuracy.answer_column=gold",
                           "-c", "</think>42", "--column", "gold=42", "--json", cwd=project).stdout)
    assert given["samples"][0]["scores"]["accuracy"] == 1.0 and given["notes"] == []
    # two listed rewards, two gold columns: which one is not guessed
    config = project / "config.toml"
    config.write_text(config.read_text().replace("[grpo]", '[[rewards]]\nname = "cosine_length"\nweight = 0.5\n'
                                                           'params = { answer_column = "answer" }\n\n[grpo]', 1))
    refused = cli("rewards", "try", "--project", ".", "accuracy:0", *right_and_wrong, cwd=project, check=False)
    assert refused.returncode == 1 and refused.stderr.strip() == (
        "Error: 'accuracy' is not in config.toml, and its rewards read gold answers from several columns (final "
        "(reasoning_accuracy), answer (cosine_length)); say which with --param accuracy.answer_column=COLUMN")


def test_the_tiny_preset_brings_its_tokenizer():
    code, output = invoke("thinking", "--preset", "tiny", "-c", "Let me see.</think>42", "-c", "no end", "--json")
    assert code == 0, output
    assert [sample["scores"]["thinking"] for sample in json.loads(output)["samples"]][1] == -1.0


def test_the_std_of_the_advantages_is_trls():
    """`rewards try` keeps its own nanstd (TRL's import is seconds); its numbers must be TRL's, NaNs and lone
    values included."""
    import torch
    from trl.trainer.utils import nanstd

    from grpo_skill.advisors.grposcoring import _nanstd

    torch.manual_seed(0)
    cases = [torch.randn(8), torch.tensor([1.0, float("nan"), 3.0, 3.5]), torch.tensor([2.0]),
             torch.tensor([float("nan"), 4.0]), torch.randn(6, 3)]
    for tensor in cases:  # per column, as the trainer takes each reward's std in a group
        assert torch.allclose(_nanstd(tensor), nanstd(tensor, dim=0), equal_nan=True), tensor
