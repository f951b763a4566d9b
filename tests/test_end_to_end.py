"""Scaffold the tiny preset and train it on the CPU with plain TRL, as a user would."""

import json
import runpy
import signal
import sys

import pytest

from grpo_skill import Reward, hookimpl, plugins
from grpo_skill.runtime import metrics

from support import config_edited, run

GAIN_WANTED = 0.5  # the issue's learning check: last 10 steps' mean reward >= first 10 + 0.5


def run_train_py(project, monkeypatch, *args) -> dict:
    """The project's train.py run in this process with ``args`` (its globals returned: the trainer, the model), the
    SIGINT handler it installs put back afterwards."""
    monkeypatch.setattr(sys, "argv", ["train.py", *args])
    ctrl_c_handler = signal.getsignal(signal.SIGINT)  # train.py installs its own
    try:
        return runpy.run_path(str(project / "train.py"), run_name="__main__")
    finally:
        signal.signal(signal.SIGINT, ctrl_c_handler)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_model):
    """One full run of the tiny preset's train.py (60 steps, about 20 s on 2 cores)."""
    root = tmp_path_factory.mktemp("e2e")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "tiny-run", "--preset", "tiny", "-o", str(root)])
    project = root / "tiny-run"
    result = run([sys.executable, "train.py"], cwd=project)
    return project, json.loads(result.stdout), result


def test_train_reports_where_the_adapter_and_metrics_are(trained):
    project, summary, _ = trained
    assert summary["backend"] == "trl" and summary["preset"] == "tiny"
    assert summary["adapter"] == str(project / "outputs" / "adapter")
    assert summary["metrics"] == str(project / "outputs" / "metrics.jsonl")
    assert (project / "outputs" / "reward.png").stat().st_size > 0


def test_metrics_redraws_the_plots_it_drew(trained, tmp_path):
    from click.testing import CliRunner

    from grpo_skill.cli import main

    project, _, _ = trained
    for target in (tmp_path / "reward.png", tmp_path / "reward.png", project / "outputs" / "reward.png"):
        result = CliRunner().invoke(main, ["metrics", str(project / "outputs"), "--plot", str(target),
                                           "--completions", "0"])
        assert result.exit_code == 0 and f"plot: {target}" in result.output, result.output
        assert target.read_bytes().startswith(b"\x89PNG")


def test_metrics_redraws_a_plot_an_older_grpo_skill_drew_but_no_other_png(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, inches, ours in (("older.png", metrics.PLOT_INCHES, True), ("other.png", (4, 3), False)):
        figure = plt.figure(figsize=inches)
        figure.savefig(tmp_path / name, dpi=metrics.PLOT_DPI)  # matplotlib's own Software tag, as before the tag
        plt.close(figure)
        assert metrics.drawn_by_metrics(tmp_path / name) is ours


def test_the_preset_saves_checkpoints_and_keeps_the_last_two(trained):
    project, _, _ = trained
    assert sorted(path.name for path in (project / "outputs").glob("checkpoint-*")) == ["checkpoint-40",
                                                                                         "checkpoint-60"]


def test_a_second_run_refuses_to_bury_the_first(trained):
    project, summary, _ = trained
    before = (project / "outputs" / "metrics.jsonl").read_bytes()
    result = run([sys.executable, "train.py"], cwd=project, check=False)
    assert result.returncode == 1 and "holds a finished run (60 steps)" in result.stderr
    assert (project / "outputs" / "metrics.jsonl").read_bytes() == before


def test_the_adapter_reloads_onto_the_base_model(trained, tiny_model):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    project, summary, _ = trained
    adapter = project / "outputs" / "adapter"
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 16
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), adapter)
    assert any("lora_A" in name for name, _ in model.named_parameters())


def test_metrics_has_every_step_with_reward_and_reward_per_function(trained):
    project, _, _ = trained
    rows = [row for row in metrics.read_metrics(project / "outputs") if "reward" in row]
    assert [row["step"] for row in rows] == list(range(1, 61))
    assert all("rewards/thinking/mean" in row for row in rows)
    assert all(0 < row["rewards/thinking/seconds"] < 5 for row in rows)  # each reward's time, as the docs say


def test_the_tiny_thinking_run_learns(trained):
    _, summary, _ = trained
    assert summary["steps"] == 60
    assert summary["last_mean_reward"] >= summary["first_mean_reward"] + GAIN_WANTED, summary


def test_the_log_is_readable_lines_not_raw_dicts(trained):
    _, _, result = trained
    assert "step   60  reward" in result.stderr
    assert "{'loss'" not in result.stderr and "{'loss'" not in result.stdout
    assert "pin_memory" not in result.stderr  # torch's warning at each epoch on a machine without an accelerator


def test_the_tiny_run_prints_the_one_health_warning_the_readme_expects(trained):
    # README.md: tiny fills its 32-token budget by design, so the clipped warning is the one it names, said once
    project, _, result = trained
    rows = [json.loads(line) for line in (project / "outputs" / "metrics.jsonl").read_text().splitlines()]
    assert [record["check"] for row in rows for record in row.get("health", [])] == ["clipped"]
    assert result.stderr.count("completions/clipped_ratio has stayed above 0.5") == 1


def test_evaluate_samples_before_and_after(trained):
    project, _, _ = trained
    result = run([sys.executable, "evaluate.py", "--prompts", "3"], cwd=project)
    summary = json.loads(result.stdout)
    samples = [json.loads(line) for line in (project / "outputs" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 3
    assert {"prompt", "before", "before_reward", "after", "after_reward"} <= set(samples[0])
    assert summary["mean_reward_after"] == pytest.approx(sum(s["after_reward"] for s in samples) / 3)


def test_evaluate_says_when_the_dataset_has_fewer_prompts_than_asked(trained):
    project, _, _ = trained
    count = len((project / "data" / "prompts.jsonl").read_text().splitlines())
    result = run([sys.executable, "evaluate.py", "--prompts", str(count + 5)], cwd=project)
    assert f"note: --prompts {count + 5}, but the dataset has {count} prompts: sampling all {count}" in result.stderr
    assert len((project / "outputs" / "samples.jsonl").read_text().splitlines()) == count


def test_evaluate_samples_the_prompts_training_saw_with_the_runs_sampling_settings(trained):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    project, summary, _ = trained
    # temperature 0.01: the likeliest token wins by e^50 or more (the tiny model's first two differ by 0.5 or more),
    # so the completions are the greedy ones; at 1.0 they are random text
    with config_edited(project, "seed = 42", "seed = 42\ntemperature = 0.01"):
        result = run([sys.executable, "evaluate.py", "--prompts", "2"], cwd=project)
    samples = [json.loads(line) for line in (project / "outputs" / "samples.jsonl").read_text().splitlines()]
    questions = [json.loads(line)["prompt"] for line in (project / "data" / "prompts.jsonl").read_text().splitlines()]
    assert [sample["prompt"] for sample in samples] == questions[:2]  # the dataset's first prompts, as written
    # the same prompts as GRPO rendered them in training: its completion traces record them (TRL drops special tokens)
    tokenizer = AutoTokenizer.from_pretrained(summary["model"])
    traces = (project / "outputs" / "completions.jsonl").read_text().splitlines()
    trained_prompts = {json.loads(line)["prompt"] for line in traces}
    shown = [tokenizer.decode(tokenizer(sample["chat_prompt"]).input_ids, skip_special_tokens=True)
             for sample in samples]
    assert [prompt in trained_prompts for prompt in shown] == [True, True], shown

    base = AutoModelForCausalLM.from_pretrained(summary["model"], dtype=torch.float32)

    def greedy(model, prompt):
        inputs = tokenizer(prompt, return_tensors="pt")
        output = model.generate(**inputs, do_sample=False, max_new_tokens=32)
        return tokenizer.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    assert [sample["before"] for sample in samples] == [greedy(base, sample["chat_prompt"]) for sample in samples]
    tuned = PeftModel.from_pretrained(base, summary["adapter"])
    assert [sample["after"] for sample in samples] == [greedy(tuned, sample["chat_prompt"]) for sample in samples]
    assert json.loads(result.stdout)["sampling"]["temperature"] == 0.01  # and it says how it sampled


def test_train_loads_the_tokenizer_once(trained, monkeypatch):
    from transformers import AutoTokenizer

    project, _, _ = trained
    loads = []
    load = AutoTokenizer.from_pretrained.__func__

    def counted(cls, *args, **kwargs):
        loads.append(args[0] if args else kwargs)
        return load(cls, *args, **kwargs)

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", classmethod(counted))
    run_globals = run_train_py(project, monkeypatch, "--max-steps", "1", "--output-dir", "one-tokenizer")
    assert len(loads) == 1, loads
    # the prompts were rendered, the rewards built and GRPO trained with that one tokenizer
    assert run_globals["trainer"].processing_class is run_globals["tokenizer"]


def test_the_generated_projects_own_tests_pass(trained):
    project, _, _ = trained
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project)
    assert "3 passed" in result.stdout


def test_max_steps_and_model_overrides(trained, tiny_model):
    project, _, _ = trained
    run([sys.executable, "train.py", "--max-steps", "3", "--model", str(tiny_model), "--output-dir", "quick"],
        cwd=project)
    rows = [row for row in metrics.read_metrics(project / "quick") if "reward" in row]
    assert [row["step"] for row in rows] == [1, 2, 3]
    assert json.loads((project / "quick" / "summary.json").read_text())["model"] == str(tiny_model)
    # the same run evaluated where it is, whether or not [grpo] output_dir exists
    run([sys.executable, "evaluate.py", "--output-dir", "quick", "--prompts", "2", "--model", str(tiny_model)],
        cwd=project)
    assert len((project / "quick" / "samples.jsonl").read_text().splitlines()) == 2


def test_prompts_longer_than_max_seq_length_stop_before_training(trained):
    project, _, _ = trained
    with config_edited(project, "max_seq_length = 256", "max_seq_length = 40"):
        result = run([sys.executable, "train.py", "--output-dir", "too-long"], cwd=project, check=False)
    assert result.returncode != 0
    assert "model.max_seq_length (40) is below the longest prompt" in result.stderr
    assert not (project / "too-long" / "metrics.jsonl").exists()


class HalfReward:
    calls = 0

    @hookimpl
    def register_rewards(self, register):
        def factory(context):
            def always_half(completions, **kwargs):
                HalfReward.calls += 1
                return [0.5] * len(completions)

            return always_half

        register(Reward("always_half", factory, "0.5 for everything (a test plugin)"))


def test_a_plugin_registered_in_a_test_is_used_by_a_generated_projects_run(trained, monkeypatch):
    project, _, _ = trained
    plugins.register(HalfReward(), name="half")
    try:
        with config_edited(project, 'name = "thinking"', 'name = "always_half"'):
            run_train_py(project, monkeypatch, "--max-steps", "2", "--output-dir", "with-plugin")
    finally:
        plugins.unregister("half")
    rows = [row for row in metrics.read_metrics(project / "with-plugin") if "reward" in row]
    assert [row["rewards/always_half/mean"] for row in rows] == [0.5, 0.5]
    assert HalfReward.calls == 2


def test_completion_traces_are_written_every_step_and_shown_by_metrics(trained, cli):
    project, _, _ = trained
    traces = [json.loads(line) for line in (project / "outputs" / "completions.jsonl").read_text().splitlines()]
    assert sorted({row["step"] for row in traces}) == list(range(1, 61))
    assert all(len([row for row in traces if row["step"] == step]) == 8 for step in (1, 60))  # one whole group
    first = traces[0]
    questions = [json.loads(line)["prompt"] for line in (project / "data" / "prompts.jsonl").read_text().splitlines()]
    assert any(question in first["prompt"] for question in questions)  # the prompt as rendered for the model
    assert isinstance(first["completion"], str) and set(first["rewards"]) == {"thinking"}
    assert first["reward"] == pytest.approx(first["rewards"]["thinking"])
    spread_steps = 0
    for step in range(1, 61):
        group = [row for row in traces if row["step"] == step]
        rewards = [row["reward"] for row in group]
        advantages = [row["advantage"] for row in group]
        if max(rewards) - min(rewards) < 1e-6:
            # no spread: nothing to learn from this group (TRL divides float noise by std + 1e-4)
            assert all(abs(advantage) < 1e-2 for advantage in advantages), (step, advantages)
            continue
        spread_steps += 1
        assert abs(sum(advantages)) < 1e-3, (step, advantages)  # relative to the group's mean
        by_reward = sorted(zip(rewards, advantages))
        assert all(low[1] < high[1] for low, high in zip(by_reward, by_reward[1:]) if low[0] < high[0] - 1e-6)
    assert spread_steps > 0

    shown = json.loads(cli("metrics", str(project / "outputs"), "--completions", "2", "--json").stdout)
    assert [row["completion"] for row in shown["latest_completions"]] == \
        [row["completion"] for row in traces if row["step"] == 60][:2]
    text = cli("metrics", str(project / "outputs")).stdout
    assert "latest completions (step 60" in text


def test_compile_decoding_gives_the_trl_backend_one_static_cache_and_lets_transformers_compile(trained, monkeypatch,
                                                                                              capsys):
    project, _, _ = trained
    with config_edited(project, "# compile_decoding = true", "compile_decoding = true"):  # as a user would
        run_globals = run_train_py(project, monkeypatch, "--max-steps", "2", "--output-dir", "compiled")
    generation = run_globals["trainer"].generation_config
    # one cache size for every generation (max_seq_length), so that a GPU compiles the decode step once
    assert (generation.cache_implementation, generation.max_cache_len, generation.disable_compile) == ("static", 256,
                                                                                                       False)
    assert "compiles the decode step on a GPU only" in capsys.readouterr().err  # this CPU decodes uncompiled
    assert [row["step"] for row in metrics.read_metrics(project / "compiled") if "reward" in row] == [1, 2]


def test_compile_layers_trains_through_compiled_decoder_layers_that_compute_what_the_uncompiled_ones_do(
        trained, monkeypatch, capsys):
    """compile_layers = true (forced: "auto" compiles only on a GPU's fast path for a long run): train.py compiles
    each decoder layer of the policy in place, trains through them, says so and records it; the compiled layers
    give the uncompiled layers' log-probs, so compiling changes the speed, not what is learned."""
    import torch

    project, _, _ = trained
    with config_edited(project, 'compile_layers = "auto"', "compile_layers = true"):  # as a user would
        run_globals = run_train_py(project, monkeypatch, "--max-steps", "2", "--output-dir", "compiled-layers")
    assert "decoder layers compiled for training (compile_layers = true)" in capsys.readouterr().err
    summary = json.loads((project / "compiled-layers" / "summary.json").read_text())
    assert summary["compiled_layers"] is True and summary["global_step"] == 2
    policy = run_globals["trainer"].model
    layers = [module for module in policy.modules() if type(module).__name__.endswith("DecoderLayer")]
    assert len(layers) == 2 and all(layer._compiled_call_impl is not None for layer in layers)
    ids = torch.tensor([[5, 17, 42, 9, 77, 3, 64, 21]])
    with torch.no_grad():
        compiled = policy(input_ids=ids).logits.log_softmax(-1)
        for layer in layers:
            layer._compiled_call_impl = None  # what nn.Module.compile set: back to the eager forward
        eager = policy(input_ids=ids).logits.log_softmax(-1)
    assert torch.allclose(compiled, eager, atol=1e-4), (compiled - eager).abs().max()


def test_the_fast_path_on_a_cpu_trains_from_a_copy_that_computes_the_lora_as_the_trainer(trained, monkeypatch,
                                                                                      capsys):
    """generation = "fast" without a GPU: the copy is installed on the real GRPOTrainer, decodes uncompiled, and
    keeps the adapters in the trainer's precision (no bf16 autocast on a CPU run: their own fp32)."""
    project, _, _ = trained
    with config_edited(project, 'generation = "auto"', 'generation = "fast"'):  # as a user would
        run_train_py(project, monkeypatch, "--max-steps", "2", "--output-dir", "fast")
    said = capsys.readouterr().err
    assert "generation: a float32 copy of the policy, its LoRA beside each layer in float32, as the trainer " \
           "computes it" in said, said[-2000:]
    # the decode step's levers are the fast path's default (the deferred stop check is for CUDA only: not named here)
    assert "in 8 fused matmuls" in said and "reading the cache up to the tokens so far, in steps of 128" in said
    assert "read one step late" not in said
    assert [row["step"] for row in metrics.read_metrics(project / "fast") if "reward" in row] == [1, 2]
    # the summary says how fast the copy sampled: one generation a step here, 8 completions each
    speed = json.loads((project / "fast" / "summary.json").read_text())["generation_speed"]
    assert (speed["generations"], speed["sequences_per_generation"]) == (2, 8.0)
    assert speed["generation_s"] > 0 and speed["ms_per_step"] > 0


def test_a_run_repeats_step_for_step_with_the_same_seed(trained):
    """TRL adds the LoRA adapter before it seeds; train.py seeds first, so its random starting weights repeat."""
    project, _, _ = trained
    run([sys.executable, "train.py", "--max-steps", "3", "--output-dir", "again"], cwd=project)

    def trajectory(folder):
        return [(row["step"], row["reward"], row["loss"], row["grad_norm"])
                for row in metrics.read_metrics(project / folder) if "reward" in row]

    assert trajectory("again") == trajectory("outputs")[:3]
