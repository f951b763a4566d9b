"""The warm start: worked examples in the model's own chat template, sft.py's adapter, and train.py continuing
from it ([model] adapter) on the tiny preset (CPU)."""

import json
import re
import shlex
import sys

import pytest

from grpo_skill import warmstart
from support import config_edited, run

ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # tiny models: spare threads on a busy CPU only slow them down


@pytest.fixture(scope="module")
def chat_tokenizer():
    from transformers import AutoTokenizer

    from grpo_skill import modelbuild

    return AutoTokenizer.from_pretrained(modelbuild.build("tiny", opens_think=False))


def render(tokenizer, **kwargs):
    return tokenizer.apply_chat_template([{"role": "user", "content": "What is 2 + 3?"}], tokenize=False,
                                         add_generation_prompt=True, **kwargs)


def test_the_completion_follows_what_the_template_did_with_thinking(tiny_tokenizer, chat_tokenizer):
    opened = render(tiny_tokenizer)  # Thinking-2507 style: the prompt ends inside <think>
    hybrid_on, hybrid_off = render(chat_tokenizer), render(chat_tokenizer, enable_thinking=False)
    assert [warmstart.thinking_state(p) for p in (opened, hybrid_on, hybrid_off)] == ["open", "model", "off"]
    assert warmstart.completion_for(opened, "2 + 3 = 5.", "It is 5.") == "2 + 3 = 5.\n</think>\n\nIt is 5."
    assert warmstart.completion_for(hybrid_on, "2 + 3 = 5.", "It is 5.") == \
        "<think>\n2 + 3 = 5.\n</think>\n\nIt is 5."
    assert warmstart.completion_for(hybrid_off, "2 + 3 = 5.", "It is 5.") == "It is 5."
    assert warmstart.completion_for(hybrid_on, "", "It is 5.") == "It is 5."


def test_arithmetic_examples_vary_the_thinking_and_the_answer_style():
    from grpo_skill import arithmetic

    rows = arithmetic.problems(200, seed=3)
    examples = warmstart.arithmetic_examples(rows, seed=3)
    assert [e["prompt"] for e in examples] == [r["prompt"] for r in rows]
    assert len({e["thinking"].count(".") for e in examples}) == 4  # the four depths
    assert sum("Is that right?" in e["thinking"] for e in examples) > 20
    for example, row in zip(examples, rows):
        assert str(row["answer"]) in example["response"] and str(row["answer"]) in example["thinking"]
    assert len({e["response"].replace(e["answer"], "") for e in examples}) >= 5


def test_rechecks_make_thinking_of_widely_varying_length_that_still_closes_on_the_answer():
    from grpo_skill import arithmetic

    rows = arithmetic.problems(400, seed=3)
    short = warmstart.arithmetic_examples(rows, seed=3)
    long = warmstart.arithmetic_examples(rows, seed=3, recheck_mean=8, recheck_max=30)
    lengths = sorted(len(e["thinking"]) for e in long)
    assert lengths[len(lengths) // 2] > 2 * max(len(e["thinking"]) for e in short)  # most think longer than any
    assert lengths[-1] > 4 * lengths[len(lengths) // 2] > 4 * lengths[0]  # and the length varies widely
    for example, row in zip(long, rows):
        assert example["thinking"].startswith("First the tens") and str(row["answer"]) in example["response"]


@pytest.fixture(scope="module")
def warmed(tmp_path_factory, tiny_model):
    """A tiny project, sft.py for a few steps, then train.py continuing from its adapter."""
    root = tmp_path_factory.mktemp("sft")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "warm", "--preset", "tiny", "-o", str(root)])
    project = root / "warm"
    sft = run([sys.executable, "sft.py", "--max-steps", "4"], cwd=project, env=ONE_THREAD)
    config = project / "config.toml"
    assert '# adapter = "outputs/sft/adapter"' in config.read_text() and "beta = 0.04" in config.read_text()
    # the command sft.py prints, as printed, and beta as the 4B presets have it (a reference to stay near)
    command = shlex.split(re.search(r"next: (grpo-skill set .*?) \(it sets", sft.stderr).group(1))
    run([sys.executable, "-m", "grpo_skill.cli", *command[1:], "grpo.beta=0.1"], cwd=project)
    text = config.read_text()
    assert 'adapter = "outputs/sft/adapter"  # continue from' in text and "# adapter =" not in text
    trained = run([sys.executable, "train.py", "--max-steps", "2"], cwd=project, env=ONE_THREAD)
    return project, json.loads(sft.stdout), sft, trained


def test_sft_writes_an_adapter_and_says_how_to_use_it(warmed):
    project, summary, sft, _ = warmed
    assert summary["adapter"] == str(project / "outputs" / "sft" / "adapter")
    assert summary["examples"] == 24 and summary["steps"] == 4
    assert (project / "outputs" / "sft" / "adapter" / "adapter_config.json").is_file()
    assert "next: grpo-skill set 'model.adapter=\"outputs/sft/adapter\"' (it sets adapter under [model]" in sft.stderr
    bars = [line.lstrip() for line in sft.stderr.splitlines()]
    assert any(bar.startswith("SFT") for bar in bars) and not any(bar.startswith("GRPO") for bar in bars)  # its own bar
    assert "pin_memory" not in sft.stderr  # no pinned memory without an accelerator, so no warning about it


def test_train_continues_from_the_sft_adapter(warmed):
    from peft.utils import load_peft_weights

    project, _, _, trained = warmed
    summary = json.loads(trained.stdout)
    assert summary["steps"] == 2
    sft_adapter = project / "outputs" / "sft" / "adapter"
    assert summary["continued_from"] == str(sft_adapter)  # said at the start and in the summary
    assert f"continues from: {sft_adapter}" in trained.stderr
    start = load_peft_weights(str(project / "outputs" / "sft" / "adapter"), device="cpu")
    end = load_peft_weights(str(project / "outputs" / "adapter"), device="cpu")
    lora_a = sorted(key for key in start if "lora_A" in key)
    assert lora_a and set(lora_a) <= set(end)

    def relative_change(keys):
        change = sum(float((end[k].float() - start[k].float()).norm()) ** 2 for k in keys) ** 0.5
        return change / sum(float(start[k].float().norm()) ** 2 for k in keys) ** 0.5

    # LoRA A starts random: a new adapter would differ from sft.py's by about sqrt(2); two GRPO steps move it little
    assert relative_change(lora_a) < 0.5


def run_with_config_edit(project, old, new, *script):
    """Run a project script with one edit to config.toml, then put the file back."""
    with config_edited(project, old, new):
        return run([sys.executable, *script], cwd=project, check=False, env=ONE_THREAD)


def test_a_missing_adapter_stops_train_py_with_one_line(warmed):
    project, _, _, _ = warmed
    result = run_with_config_edit(project, 'adapter = "outputs/sft/adapter"', 'adapter = "outputs/none"',
                                  "train.py", "--max-steps", "1", "--output-dir", "no-adapter")
    assert result.returncode != 0
    assert "model.adapter" in result.stderr and "adapter_config.json" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project / "no-adapter").exists()


def test_a_missing_examples_file_stops_sft_py_in_one_line_before_the_model_loads(warmed):
    project, _, _, _ = warmed
    line = (project / "config.toml").read_text().splitlines().index('path = "data/sft.jsonl"') + 1
    result = run_with_config_edit(project, 'path = "data/sft.jsonl"', 'path = "data/none.jsonl"',
                                  "sft.py", "--max-steps", "1")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: config.toml:{line}: sft.path: {project / 'data' / 'none.jsonl'} does not exist; point it at your "
        "worked examples"]


def test_check_refuses_an_examples_column_the_file_lacks_as_sft_py_does(warmed):
    """`grpo-skill check` reads [sft]'s examples as sft.py does before its model loads: the same one line."""
    project, _, _, _ = warmed
    with config_edited(project, 'response_column = "response"', 'response_column = "answer"'):
        checked = run([sys.executable, "-m", "grpo_skill.cli", "check", str(project)], check=False)
        trained = run([sys.executable, "sft.py", "--max-steps", "1"], cwd=project, check=False, env=ONE_THREAD)
    message = ("sft.response_column: column 'answer' is not in sft.jsonl (it has: prompt, response, thinking); fix "
               "the name or the file")
    assert checked.returncode == 1 and checked.stderr.strip() == f"Error: {message}"
    assert trained.returncode == 1 and trained.stderr.strip().splitlines() == [f"error: {message}"]


def test_sftconfig_fields_in_sft_reach_the_trainer(tmp_path):
    """The generated config.toml says other [sft] keys are SFTConfig fields: sft.py passes them on."""
    run([sys.executable, "-m", "grpo_skill.cli", "new", "fields", "--preset", "tiny", "-o", str(tmp_path)])
    project = tmp_path / "fields"
    config = project / "config.toml"
    text = config.read_text()
    assert "max_steps = 30\n" in text and "per_device_train_batch_size = 4\nlogging_steps = 5" in text  # [sft]'s
    # one epoch of the 24 examples in batches of 8, at a constant rate, each cut to 80 tokens (all are longer; their
    # prompts, at most 72, shorter)
    text = text.replace("max_steps = 30\n", 'num_train_epochs = 1\nlr_scheduler_type = "constant"\nmax_length = 80\n')
    config.write_text(text.replace("per_device_train_batch_size = 4\nlogging_steps = 5",
                                   "per_device_train_batch_size = 8\nlogging_steps = 1"))
    summary = json.loads(run([sys.executable, "sft.py"], cwd=project, env=ONE_THREAD).stdout)
    assert summary["steps"] == 3  # the epoch decides, not a default max_steps
    logged = [json.loads(line) for line in (project / "outputs" / "sft" / "metrics.jsonl").read_text().splitlines()]
    steps = [row for row in logged if "loss" in row]
    assert [row["learning_rate"] for row in steps] == [2e-3] * 3
    assert steps[0]["num_tokens"] == 8 * 80  # the first batch's 8 examples, cut to max_length


    # a second run over the first is refused before the model loads, and changes nothing; --overwrite replaces it
    sft_dir = project / "outputs" / "sft"
    before = {path: path.read_bytes() for path in sft_dir.rglob("*") if path.is_file()}
    again = run([sys.executable, "sft.py"], cwd=project, check=False, env=ONE_THREAD)
    assert again.returncode == 1 and again.stderr.strip().splitlines() == [
        f"error: {sft_dir} holds an earlier SFT run: replace it with python sft.py --overwrite, or set another "
        "sft.output_dir in config.toml"]
    assert {path: path.read_bytes() for path in sft_dir.rglob("*") if path.is_file()} == before
    replaced = run([sys.executable, "sft.py", "--overwrite", "--max-steps", "1"], cwd=project, env=ONE_THREAD)
    assert f"--overwrite: removed the earlier run in {sft_dir} (adapter, metrics.jsonl)" in replaced.stderr
    assert json.loads(replaced.stdout)["steps"] == 1
    rows = [json.loads(line) for line in (sft_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows if "loss" in row] == [1]  # the new run's rows only


def test_examples_render_with_the_projects_chat_template_kwargs(tmp_path, chat_tokenizer):
    from grpo_skill import project as projects

    run([sys.executable, "-m", "grpo_skill.cli", "new", "plain", "--preset", "standard", "-o", str(tmp_path)])
    config = projects.load(tmp_path / "plain")
    assert config.dataset["chat_template_kwargs"] == {"enable_thinking": False}
    examples = warmstart.load_examples(config, chat_tokenizer)
    assert len(examples) == 24
    for example in examples:
        assert example["prompt"].endswith("<think>\n\n</think>\n\n")  # thinking off, as GRPO renders it
        assert "</think>" not in example["completion"] and example["completion"].endswith(".")


def test_evaluate_compares_the_trained_adapter_with_the_sft_one(warmed):
    project, _, _, _ = warmed
    result = run([sys.executable, "evaluate.py", "--prompts", "2"], cwd=project, env=ONE_THREAD)
    summary = json.loads(result.stdout)
    samples = [json.loads(line) for line in (project / "outputs" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 and {"before", "after"} <= set(samples[0])
    assert summary["mean_reward_before"] == sum(s["before_reward"] for s in samples) / 2


def test_overwrite_continues_from_the_adapter_model_adapter_names_and_writes_it_anew(warmed):
    """[model] adapter names sft.py's own adapter (the command sft.py prints): --overwrite removes the earlier run only
    once that adapter has loaded, so the new run starts from it and the project keeps an adapter (it was deleted
    first, and every command then failed on the missing adapter)."""
    project, _, _, _ = warmed
    adapter = project / "outputs" / "sft" / "adapter"
    before = (adapter / "adapter_model.safetensors").read_bytes()
    again = run([sys.executable, "sft.py", "--overwrite", "--max-steps", "1"], cwd=project, env=ONE_THREAD)
    assert f"--overwrite: removed the earlier run in {adapter.parent}" in again.stderr
    assert json.loads(again.stdout)["steps"] == 1
    assert (adapter / "adapter_config.json").is_file()
    assert (adapter / "adapter_model.safetensors").read_bytes() != before  # trained on from it, and saved
