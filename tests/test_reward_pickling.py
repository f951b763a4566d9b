"""Every built-in reward pickles and works in another process: TRL's async GRPO trainer sends its reward functions
to a spawned rollout worker (a closure would fail there). A built reward pickles as the recipe that built it."""

import json
import pickle
import subprocess
import sys
import warnings

import pytest

from grpo_skill import plugins

# One batch every built-in can score: a prompt, token ids, and the columns the gold-answer rewards read.
BATCH = {
    "prompts": ["6 x 7?", "6 x 7?"],
    "completions": ["6 x 7 = 42.</think><answer>42</answer> {\"x\": 42}",
                    "Maybe 41.</think>```python\ndef f(): return 41\n```"],
    "completion_ids": [[5, 6, 7, 8], [5, 5, 5, 5, 5, 5]],
    "answer": ["42", "42"],
    "tests": ["assert f() == 42", ["assert f() == 41"]],
    "record": ['{"x": 42}', {"x": 41}],
}
# Params a reward needs to be built here (llm_judge: a judge that is not called)
PARAMS = {"llm_judge": {"backend": "http", "judge": {"url": "http://127.0.0.1:9/v1"}},
          "json_match": {"answer_column": "record"}}
NOT_CALLED = {"llm_judge"}  # it would ask a server


def builtins():
    return sorted(name for name, registered in plugins.rewards().items() if registered.plugin.startswith("builtin:"))


def build(name, tokenizer=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # code_tests' network warning where unshare is missing
        return plugins.get_reward(name).build(tokenizer=tokenizer, preset=plugins.get_preset("tiny"),
                                              params=PARAMS.get(name))


def test_the_new_rewards_are_among_the_builtins():
    assert {"answer_format", "kimi_length", "json_match", "code_tests", "accuracy"} <= set(builtins())


@pytest.mark.parametrize("name", builtins())
def test_each_builtin_pickles_and_scores_the_same_after(name, tiny_tokenizer):
    reward = build(name, tiny_tokenizer)
    copy = pickle.loads(pickle.dumps(reward))
    assert copy.__name__ == name and copy is not reward
    if name not in NOT_CALLED:
        assert copy(**BATCH) == reward(**BATCH)


def test_the_builtins_work_in_a_spawned_process(tiny_tokenizer):
    names = builtins()
    rewards = {name: build(name, tiny_tokenizer) for name in names}
    expected = {name: reward(**BATCH) for name, reward in rewards.items() if name not in NOT_CALLED}
    child = (
        "import json, pickle, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "rewards, batch, skip = pickle.load(sys.stdin.buffer)\n"
        "print(json.dumps({name: [reward.__name__, None if name in skip else reward(**batch)]\n"
        "                  for name, reward in rewards.items()}))\n"
    )
    payload = pickle.dumps((rewards, BATCH, NOT_CALLED))
    result = subprocess.run([sys.executable, "-c", child], input=payload, capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    scored = json.loads(result.stdout)
    assert {name: names_scores[0] for name, names_scores in scored.items()} == {name: name for name in names}
    assert {name: scored[name][1] for name in expected} == expected


def test_a_projects_own_reward_pickles_by_its_folder(tmp_path):
    from grpo_skill import generator

    generator.render("proj", tmp_path, preset_name="tiny")
    project = tmp_path / "proj"
    plugins.register_project(project)
    try:
        reward = plugins.get_reward("no_repetition").build()
        expected = reward(completions=["a b c", "a a a a"])
        child = ("import pickle, sys\n"
                 "reward = pickle.load(sys.stdin.buffer)\n"
                 "print(reward(completions=['a b c', 'a a a a']))\n")
        result = subprocess.run([sys.executable, "-c", child], input=pickle.dumps(reward), capture_output=True,
                                timeout=120)
    finally:
        plugins.unregister(plugins.project_plugin_name(project))
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert result.stdout.decode().strip() == repr(expected)
