"""`rewards try` scores as training would: the run's tokenizer and chat template, and it says which (issue 22)."""

import json


def try_json(cli, *args, cwd):
    return json.loads(cli("rewards", "try", *args, "--json", cwd=cwd).stdout)


def test_with_a_project_it_uses_the_projects_tokenizer_and_template(cli, tmp_path, english):
    from grpo_skill import modelbuild

    chat_model = modelbuild.build("tiny", opens_think=False)  # a template that does not open <think>
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "2 + 3?", "answer": "5"}\n')
    cli("new", "think", "--preset", "tiny", "--dataset", str(data), "-r", "accuracy", cwd=tmp_path)
    cli("new", "chat", "--preset", "tiny", "--model", str(chat_model), "--dataset", str(data), "-r", "accuracy",
        cwd=tmp_path)
    args = ("accuracy", "-c", "The answer is \\boxed{5}", "--column", "answer=5")
    thinking = try_json(cli, *args, "--project", "think", cwd=tmp_path)
    chatting = try_json(cli, *args, "--project", "chat", cwd=tmp_path)
    assert thinking["tokenizer"]["how"] == "grpo-skill/tiny-qwen3's, as the project trains it"
    assert chatting["tokenizer"]["how"] == f"{chat_model}'s, as the project trains it"
    assert (thinking["tokenizer"]["template_opens_think"], chatting["tokenizer"]["template_opens_think"]) == (True, False)
    # the thinking model has not closed its thinking, so there is no answer yet; the chat model answered 5
    assert thinking["samples"][0]["scores"]["accuracy"] == 0.0
    assert chatting["samples"][0]["scores"]["accuracy"] == 1.0
    text = cli("rewards", "try", *args, "--project", "chat", cwd=tmp_path).stdout
    assert "tokenizer:" in text and "does not open <think>" in text


def test_it_says_when_a_tokenizer_is_not_the_runs(cli, tmp_path, english):
    result = try_json(cli, "format", "-c", "No.", "--preset", "standard", "--tokenizer", "tiny", cwd=tmp_path)
    assert result["tokenizer"]["how"].startswith("tiny (--tokenizer): not unsloth/Qwen3-4B-unsloth-bnb-4bit's; the "
                                                 "tiny tokenizer's template opens the thinking block")
    result = try_json(cli, "format", "-c", "No.", "--preset", "standard", cwd=tmp_path)
    assert result["tokenizer"]["name"] is None
    assert result["tokenizer"]["how"].startswith("none: the preset's model unsloth/Qwen3-4B-unsloth-bnb-4bit is not "
                                                 "on this machine")
    assert try_json(cli, "format", "-c", "No.", "--preset", "tiny", cwd=tmp_path)["tokenizer"]["how"] == \
        "grpo-skill/tiny-qwen3's (preset tiny)"


def test_prompts_reach_the_rewards_through_the_chat_template(tmp_path, tiny_tokenizer, cli):
    from grpo_skill import project, rewardtry

    cli("new", "p", "--preset", "tiny", "--set", "dataset.system_prompt=\"Be brief.\"", cwd=tmp_path)
    config = project.load(tmp_path / "p")
    rendered = rewardtry.chat_prompts(["What is 2 + 3?", ""], tiny_tokenizer, config)
    assert rendered[0] == tiny_tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 3?"}],
        tokenize=False, add_generation_prompt=True)
    assert rendered[1] == ""  # no prompt given: nothing to render
