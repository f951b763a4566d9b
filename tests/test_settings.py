"""`new` and `plan` take settings up front: --set, --param, --answer-column (issue 22, item 1)."""

import json
import re
import tempfile
import tomllib

import pytest

from grpo_skill.schema import toml_text

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
    # the same check for a program (an assistant reading it): the rewards with the params they will be built with
    checked = json.loads(cli("check", "p", "--json", "--gpus", "2", cwd=tmp_path).stdout)
    assert checked["ok"] is True and checked["config"] == str(tmp_path / "p" / "config.toml")
    assert (checked["preset"], checked["backend"], checked["processes"]) == ("tiny", "auto", 2)
    assert checked["rewards"] == config["rewards"] and checked["unchecked"] == []



def test_check_json_writes_a_toml_date_param_as_its_text(cli, tmp_path):
    """A param TOML reads as a date (a project reward's, untyped) is its ISO text in check --json, not a traceback."""
    cli("new", "p", "--preset", "tiny", cwd=tmp_path)
    project = tmp_path / "p"
    rewards = project / "rewards.py"
    rewards.write_text(rewards.read_text().replace('params={"ngram": 3},', 'params={"ngram": 3, "since": None},'))
    config = project / "config.toml"
    config.write_text(config.read_text() + '\n[[rewards]]\nname = "no_repetition"\nweight = 0.0\n'
                      "params = { since = 2024-01-01 }\n")
    checked = json.loads(cli("check", "p", "--json", cwd=tmp_path).stdout)
    assert {"name": "no_repetition", "weight": 0.0, "params": {"since": "2024-01-01"}} in checked["rewards"]


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


def test_settings_the_template_writes_itself_take_the_value_given(cli, tmp_path):
    """output_dir, seed and report_to are written by the template, not the preset: a --set one replaces it."""
    cli("new", "p", "--preset", "tiny", "--set", "grpo.seed=1", "--set", "grpo.output_dir=\"runs\"",
        "--set", "grpo.report_to=[\"none\"]", cwd=tmp_path)
    grpo = config_of(tmp_path / "p")["grpo"]
    assert (grpo["seed"], grpo["output_dir"], grpo["report_to"]) == (1, "runs", ["none"])
    cli("check", "p", cwd=tmp_path)
    assert plan_json(cli, "--preset", "tiny", "--set", "grpo.output_dir=\"runs\"", cwd=tmp_path)["set"] == {
        "grpo.output_dir": "runs"}


def another(dotted, value):
    """A value of the same kind as ``value``, unlike it."""
    if dotted == "model.backend":  # `new` keeps the preset's backend where the given one is not a backend
        return "trl"
    if isinstance(value, bool) or value == "auto":
        return not value if isinstance(value, bool) else True
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "-given"
    return [*value, "given"] if isinstance(value, list) else {**value, "given": 1}


def written_keys(text):
    """(table, key, value) of every key config.toml writes, or shows commented out ("# adapter = ..."), outside
    [[rewards]]."""
    found, table = [], None
    for line in text.splitlines():
        if line.startswith("[") and not line.startswith("[["):
            table = line.strip("[").split("]")[0]
        elif line.startswith("[["):
            table = None
        elif table and re.match(r"(# )?[a-z_0-9]+ = ", line):
            key, value = next(iter(tomllib.loads(line.removeprefix("# ")).items()))
            found.append((table, key, value))
    return found


@pytest.mark.parametrize("preset", ["tiny", "standard", "thinking"])
def test_every_key_the_template_writes_can_be_set_and_is_written_once_with_the_value_given(tmp_path, preset):
    from grpo_skill.scaffold import copying, generator, settings

    def render(folder, items=()):
        data = generator.answers("run", preset, settings=settings.parse(items))
        copying.load().run_copy(str(generator.template_dir()), tmp_path / folder, data=data, defaults=True,
                                quiet=True, overwrite=True, unsafe=True)
        return (tmp_path / folder / "config.toml").read_text()

    # preset and prompt_column have options of their own (--preset, --prompt-column)
    keys = [(table, key, value) for table, key, value in written_keys(render("default"))
            if f"{table}.{key}" not in settings.OWN_OPTIONS]
    given = {(table, key): another(f"{table}.{key}", value) for table, key, value in keys}
    assert {"grpo", "sft", "model", "lora", "dataset"} <= {table for table, _key in given}
    text = render("given", [f"{table}.{key}={toml_text(value)}" for (table, key), value in given.items()])
    config = tomllib.loads(text)  # a key written twice is not TOML
    assert {(table, key): config[table][key] for table, key in given} == given


def test_set_grpo_epochs_leaves_out_the_presets_max_steps_and_says_so(cli, tmp_path):
    result = cli("new", "p", "--preset", "tiny", "--set", "grpo.num_train_epochs=2", cwd=tmp_path)
    assert "grpo.max_steps (60, the preset's) left out: grpo.num_train_epochs decides the run's length" in (
        result.stdout + result.stderr)
    grpo = config_of(tmp_path / "p")["grpo"]
    assert grpo["num_train_epochs"] == 2 and "max_steps" not in grpo
    cli("check", "p", cwd=tmp_path)
    # both given: the user's max_steps stays and the config check refuses the pair, naming it
    both = cli("new", "q", "--preset", "tiny", "--set", "grpo.num_train_epochs=2", "--set", "grpo.max_steps=5",
               cwd=tmp_path, check=False)
    assert both.returncode == 1 and "max_steps (set too) decides the run's length" in both.stderr
    assert not (tmp_path / "q").exists()


def test_new_names_a_surprising_value_as_check_and_train_py_do(cli, tmp_path, english):
    made = cli("new", "p", "--preset", "tiny", "--set", "grpo.learning_rate=0.5", cwd=tmp_path)
    assert made.stderr.splitlines() == [
        "warning: grpo.learning_rate = 0.5 (given on the command line): far above what LoRA runs use, and likely to "
        "diverge (a NaN loss) within a few steps; GRPO with LoRA trains at 1e-6 to 1e-4 (the Qwen3-4B presets at 1e-5)"]
    assert config_of(tmp_path / "p")["grpo"]["learning_rate"] == 0.5  # it runs: written as given
    listed = json.loads(cli("new", "q", "--preset", "tiny", "--set", "sft.learning_rate=0.5", "--json",
                            cwd=tmp_path).stdout)
    [warning] = listed["warnings"]
    assert warning.startswith("sft.learning_rate = 0.5 (given on the command line): far above")
    assert not json.loads(cli("new", "r", "--preset", "tiny", "--json", cwd=tmp_path).stdout)["warnings"]


def test_set_sft_epochs_writes_no_default_max_steps_that_would_override_them(cli, tmp_path):
    made = cli("new", "p", "--preset", "tiny", "--set", "sft.num_train_epochs=2", "--set", "sft.warmup_steps=0.1",
               cwd=tmp_path)
    assert "sft.max_steps (the template's) left out: sft.num_train_epochs decides sft.py's length" in (
        made.stdout + made.stderr)
    sft = config_of(tmp_path / "p")["sft"]
    assert sft["num_train_epochs"] == 2 and sft["warmup_steps"] == 0.1 and "max_steps" not in sft
    both = cli("new", "q", "--preset", "tiny", "--set", "sft.num_train_epochs=2", "--set", "sft.max_steps=5",
               cwd=tmp_path, check=False)
    assert both.returncode == 1 and "sft.num_train_epochs (given on the command line): max_steps (set too) decides " \
        "the run's length" in both.stderr and not (tmp_path / "q").exists()


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

    # ... unless it is the prompt column: scored against what it was shown, a model learns to copy it
    made = cli("new", "s", "--preset", "tiny", "--dataset", str(plain), "--prompt-column", "answer", cwd=tmp_path)
    assert "added" not in made.stdout and [r["name"] for r in config_of(tmp_path / "s")["rewards"]] == ["thinking"]
    gold_in_prompt = "the accuracy reward's answer_column and dataset.prompt_column are both 'prompt'"
    refused = cli("new", "t", "--preset", "tiny", "--dataset", str(plain), "--answer-column", "prompt",
                  cwd=tmp_path, check=False)
    assert refused.returncode == 1 and gold_in_prompt in refused.stderr and not (tmp_path / "t").exists()
    before = (tmp_path / "q" / "config.toml").read_text()
    refused = cli("set", "--project", str(tmp_path / "q"), "--param", "accuracy.answer_column=prompt", check=False)
    assert refused.returncode == 1 and gold_in_prompt in refused.stderr
    assert (tmp_path / "q" / "config.toml").read_text() == before


@pytest.mark.parametrize("args, message", [
    (["--set", "grpo.learnig_rate=1"], "--set 'grpo.learnig_rate=1': unknown key in [grpo]; did you mean "
                                       "`learning_rate`?"),
    (["--set", "grpo.learning_rate=fast"], "--set 'grpo.learning_rate=fast': 'fast' is not a TOML value"),
    (["--set", "grpo.learning_rate=\"1e-4\""], "grpo.learning_rate = \"1e-4\" (given on the command line): "
                                               "must be a number (no quotes)"),
    (["--set", "model.max_seq_length=128", "--set", "grpo.max_completion_length=4096"],
     "grpo.max_completion_length (given on the command line): 4096 leaves no room for the prompt"),
    (["--set", "nope=1"], "--set 'nope=1': write SECTION.KEY=VALUE"),
    (["--set", "grpo.max_steps=5", "--set", "grpo.max_steps = 6"], "--set 'grpo.max_steps = 6': grpo.max_steps is "
                                                                  "given twice (also --set 'grpo.max_steps=5')"),
    (["-r", "cosine_length", "--param", "cosine_length.max_len=3", "--param", "cosine_length.max_len=4"],
     "--param 'cosine_length.max_len=4': cosine_length.max_len is given twice"),
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


def test_a_longer_completion_budget_raises_max_seq_length_and_says_so(cli, tmp_path, english):
    made = cli("new", "p", "--preset", "tiny", "--set", "grpo.max_completion_length=300", cwd=tmp_path)
    assert "model.max_seq_length raised to 524" in made.stdout  # 300 + the preset's 256 - 32 for the prompt
    assert config_of(tmp_path / "p")["model"]["max_seq_length"] == 524


def plan_json(cli, *args, **kwargs):
    return json.loads(cli("plan", *args, "--json", **kwargs).stdout)


def test_plan_what_if_differs_from_the_default_plan(cli, tmp_path, english):
    default = plan_json(cli, "--preset", "thinking", cwd=tmp_path)
    longer = plan_json(cli, "--preset", "thinking", "--set", "grpo.max_completion_length=4096", cwd=tmp_path)
    assert (default["settings"]["max_completion_length"], longer["settings"]["max_completion_length"]) == (2048, 4096)
    assert longer["peak_allocated_gib"] > default["peak_allocated_gib"]
    assert longer["s_per_step"] > default["s_per_step"]
    assert longer["set"] == {"grpo.max_completion_length": 4096} and longer["max_seq_length"] == 4096 + 512
    text = cli("plan", "--preset", "thinking", "--set", "grpo.num_generations=16", cwd=tmp_path).stdout
    assert text.startswith("preset thinking with grpo.num_generations = 16:")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_plan_of_a_project_with_set_touches_no_file(cli, tmp_path):
    cli("new", "p", "--preset", "tiny", cwd=tmp_path)
    project = tmp_path / "p"
    before = {path: path.read_bytes() for path in project.rglob("*") if path.is_file()}
    what_if = plan_json(cli, "p", "--set", "grpo.per_device_train_batch_size=16", cwd=tmp_path)
    assert what_if["settings"]["per_device_train_batch_size"] == 16
    assert plan_json(cli, "p", cwd=tmp_path)["settings"]["per_device_train_batch_size"] == 8
    assert {path: path.read_bytes() for path in project.rglob("*") if path.is_file()} == before
    refused = cli("plan", "p", "--set", "grpo.num_generations=3", cwd=tmp_path, check=False)
    assert refused.returncode != 0 and "(given on the command line)" in refused.stderr


@pytest.mark.parametrize("setting, message", [
    ("dataset.path=\"missing.jsonl\"", "the project would not run: dataset.path (given on the command line): "
                                       "missing.jsonl does not exist"),
    ("grpo.per_device_train_batch_size=3", "the project would not run with --set grpo.per_device_train_batch_size=3: "
                                           "grpo.num_generations: per_device_train_batch_size x "),
])
def test_a_what_if_that_would_not_run_names_no_temporary_file(cli, tmp_path, english, setting, message):
    """plan --preset renders the project in a temporary folder: a refusal names the setting, not that folder."""
    refused = cli("plan", "--preset", "tiny", "--set", setting, cwd=tmp_path, check=False)
    assert refused.returncode == 1 and message in refused.stderr, refused.stderr
    assert tempfile.gettempdir() not in refused.stderr and "config.toml" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_refusal_names_only_the_settings_it_is_about(cli, tmp_path, english):
    refused = cli("new", "p", "--preset", "tiny", "--set", "grpo.beta=0.1", "--set", "model.max_seq_length=16",
                  cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "would not run with --set model.max_seq_length=16: " in refused.stderr
    assert "grpo.beta" not in refused.stderr
    refused = cli("new", "q", "--preset", "tiny", "--set", "grpo.beta=0.1", "--reward", "thinking:0", cwd=tmp_path,
                  check=False)  # the weight is --reward's, not --set's
    assert refused.returncode == 1 and "the project would not run: rewards[0].weight: every [[rewards]] weight is 0" \
        in refused.stderr and "--set" not in refused.stderr


def test_plan_counts_the_system_prompt_and_the_chat_template(cli, tmp_path, tiny_tokenizer, english):
    plain = plan_json(cli, "--preset", "tiny", "--set", "grpo.beta=0.04", cwd=tmp_path)
    system = "You are a careful assistant. Show each step of the arithmetic before the answer."
    told = plan_json(cli, "--preset", "tiny", "--set", f"dataset.system_prompt={json.dumps(system)}", cwd=tmp_path)
    assert "measured with grpo-skill/tiny-qwen3's tokenizer and chat template" in plain["prompt_tokens_source"]
    assert "system prompt included" in told["prompt_tokens_source"]
    # the longest sample prompt, rendered as train.py renders it, is what the planner counts
    from importlib import resources

    prompts = [json.loads(line)["prompt"] for line in resources.files("grpo_skill.templates").joinpath(
        "project/_i18n/data/prompts.en.jsonl").read_text().splitlines() if line.strip()]
    rendered = [tiny_tokenizer.apply_chat_template([{"role": "system", "content": system},
                                                    {"role": "user", "content": text}],
                                                   tokenize=False, add_generation_prompt=True) for text in prompts]
    assert told["settings"]["prompt_tokens"] == max(len(tiny_tokenizer(text).input_ids) for text in rendered)
    assert told["settings"]["prompt_tokens"] > plain["settings"]["prompt_tokens"]


def test_plan_without_a_tokenizer_says_its_prompt_length_is_a_guess(cli, tmp_path, english):
    text = cli("plan", "--preset", "standard", cwd=tmp_path, env={"HF_HOME": str(tmp_path / "empty")}).stdout
    assert "prompt length: guessed: ~4 characters a token (1 per CJK character) + 12 for the chat template; no " \
           "tokenizer for unsloth/Qwen3-4B-unsloth-bnb-4bit on this machine" in text


def test_plan_scales_its_times_to_the_gpu_named(cli, tmp_path, english):
    # the same settings on both ("auto" checkpointing would turn on for the smaller card only)
    same = ("--set", "lora.gradient_checkpointing=true")
    h200 = plan_json(cli, "--preset", "standard", "--gpu", "H200", *same, cwd=tmp_path)  # known memory, as L4's
    l4 = plan_json(cli, "--preset", "standard", "--gpu", "NVIDIA L4", *same, cwd=tmp_path)
    assert l4["gpu"]["name"] == "L4" and l4["gpu_memory_gib"] == 22.49 and l4["fits"] is not None
    # generation is memory-bound (16x less bandwidth than an H200), training compute-bound (8x less bf16)
    assert l4["generation_s_per_cycle"] == pytest.approx(h200["generation_s_per_cycle"] * 4800 / 300, rel=0.02)
    assert 4 < l4["s_per_step"] / h200["s_per_step"] < 16
    assert l4["peak_allocated_gib"] == h200["peak_allocated_gib"]  # memory does not depend on the card
    text = cli("plan", "--preset", "standard", "--gpu", "4090", cwd=tmp_path).stdout
    assert "scaled to RTX 4090 (--gpu) from spec sheets: decoding x4.8 by memory bandwidth" in text
    assert "fits in 24.0 GiB" in text
    from grpo_skill import gpus

    for name, card in (("NVIDIA A100-SXM4-80GB", "A100 80GB"), ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
                       ("NVIDIA A10", "A10"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H200", "H200"),
                       ("NVIDIA GeForce RTX 3090", "RTX 3090"), ("NVIDIA L40S", "L40S"), ("l4", "L4")):
        assert gpus.find(name).name == card, name  # nvidia-smi's names, and short ones
    refused = cli("plan", "--preset", "tiny", "--gpu", "A100", cwd=tmp_path, check=False)
    assert refused.returncode != 0 and "say A100-40 or A100-80" in refused.stderr
    refused = cli("plan", "--preset", "tiny", "--gpu", "voodoo5", cwd=tmp_path, check=False)
    assert refused.returncode != 0 and "--gpu 'voodoo5': not a GPU plan knows" in refused.stderr


ZH_MATH = [("小明有5个苹果，又买了3个，一共有几个？", "8"), ("一本书12元，买3本要多少元？", "36"),
           ("一辆车每小时行60千米，3小时行多少千米？", "180"), ("24除以6等于多少？", "4"),
           ("一个班有20个男生和18个女生，一共有多少人？", "38"), ("3个盒子每个装7支笔，一共有多少支笔？", "21"),
           ("小红有10元，花了4元，还剩多少元？", "6"), ("一个正方形边长5厘米，周长是多少厘米？", "20"),
           ("100减去37等于多少？", "63"), ("9乘以8等于多少？", "72")]
CHINESE_NOTE = ('rewards fitted to Chinese text ({why}): {params} (the defaults are for English); --param '
                'REWARD.PARAM=VALUE gives another value')


@pytest.fixture
def zh_math(tmp_path):
    path = tmp_path / "zh_math.csv"
    path.write_text("prompt,answer\n" + "".join(f"{prompt},{answer}\n" for prompt, answer in ZH_MATH),
                    encoding="utf-8")
    return path


def notes_of(made) -> list[str]:
    return [line.removeprefix("note: ") for line in made.stdout.splitlines() if line.startswith("note: ")]


def test_a_chinese_project_gets_the_params_that_read_chinese_and_a_note(cli, tmp_path, zh_math, english):
    """The standard preset's length and format count words at spaces and want a final ".": on Chinese answers every
    completion scored the same. `new --lang zh-CN` writes the params that read Chinese, and says so."""
    made = cli("new", "zhstd", "--preset", "standard", "--lang", "zh-CN", "--dataset", str(zh_math), cwd=tmp_path)
    assert CHINESE_NOTE.format(why="--lang zh-CN", params='length.count = "cjk", format.end_marks = ".。！？!?"') in (
        notes_of(made))
    assert config_of(tmp_path / "zhstd")["rewards"] == [
        {"name": "length", "weight": 0.5, "params": {"count": "cjk"}},
        {"name": "format", "weight": 0.5, "params": {"end_marks": ".。！？!?"}},
        {"name": "accuracy", "weight": 1.0}]
    assert "OK (preset standard" in cli("check", "zhstd", "--rewards", cwd=tmp_path).stdout
    completions = ["小明有5个苹果，又买了3个，所以一共有8个苹果。答案是8。", "5加3等于8，答案是8", "答案是9。"]
    scored = json.loads(cli("rewards", "try", "--project", "zhstd", "length", "format", "accuracy", "--json",
                            "--column", "answer=8", *[arg for text in completions for arg in ("-c", text)],
                            cwd=tmp_path).stdout)
    assert [sample["scores"] for sample in scored["samples"]] == [
        {"length": 1.0, "format": 1.0, "accuracy": 1.0},  # 27 characters, ends with 。
        {"length": 1.0, "format": 0.5, "accuracy": 1.0},  # no end mark
        {"length": -1.0, "format": 1.0, "accuracy": 0.0}]  # 4 characters: too short


def test_chinese_prompts_fit_the_rewards_whatever_the_lang(tmp_path, zh_math):
    """--lang en with a dataset of Chinese prompts: the same params, and the language reward's target is Chinese."""
    from grpo_skill.scaffold import generator

    made = generator.render_project("p", tmp_path, preset_name="tiny", lang="en", dataset=zh_math,
                                    reward_options=("length", "format", "language", "accuracy"))
    rewards = config_of(tmp_path / "p")["rewards"]
    assert [reward.get("params") for reward in rewards] == [
        {"count": "cjk"}, {"end_marks": ".。！？!?"}, {"language": "zh"}, None]
    assert CHINESE_NOTE.format(why="the dataset's prompts are mostly Chinese", params=(
        'length.count = "cjk", format.end_marks = ".。！？!?", language.language = "zh"')) in made.notes


def test_a_param_given_with_param_wins_over_the_chinese_one(cli, tmp_path, zh_math, english):
    made = cli("new", "p", "--preset", "tiny", "--lang", "zh-CN", "--dataset", str(zh_math), "-r", "length",
               "-r", "format", "--param", "length.count=tokens", "--param", "format.end_marks=。", "--json",
               cwd=tmp_path)
    assert not any("Chinese" in note for note in json.loads(made.stdout)["notes"])  # nothing written for them
    assert config_of(tmp_path / "p")["rewards"] == [
        {"name": "length", "weight": 1.0, "params": {"count": "tokens"}},
        {"name": "format", "weight": 1.0, "params": {"end_marks": "。"}}]
    made = cli("new", "q", "--preset", "tiny", "--lang", "zh-CN", "--dataset", str(zh_math), "-r", "length",
               "-r", "format", "--param", "length.too_short=3", cwd=tmp_path)
    assert config_of(tmp_path / "q")["rewards"][0]["params"] == {"too_short": 3, "count": "cjk"}
    assert CHINESE_NOTE.format(why="--lang zh-CN", params='length.count = "cjk", format.end_marks = ".。！？!?"') in (
        notes_of(made))


def test_english_prompts_keep_the_defaults_and_lang_zh_cn_writes_no_chinese_target(tmp_path):
    from grpo_skill.scaffold import generator

    english = tmp_path / "en.jsonl"  # one Chinese prompt of three: mostly English
    english.write_text('{"prompt": "What is 2 + 3?"}\n{"prompt": "Name a prime."}\n{"prompt": "2加3等于几？"}\n',
                       encoding="utf-8")
    options = {"preset_name": "tiny", "dataset": english, "reward_options": ("length", "format", "language")}
    made = generator.render_project("en", tmp_path, lang="en", **options)
    assert made.notes == [] and all("params" not in reward for reward in config_of(tmp_path / "en")["rewards"])
    # --lang zh-CN: length and format read Chinese too (English scores the same), but the prompts are English, so the
    # language reward keeps its English target
    made = generator.render_project("zh", tmp_path, lang="zh-CN", **options)
    assert [reward.get("params") for reward in config_of(tmp_path / "zh")["rewards"]] == [
        {"count": "cjk"}, {"end_marks": ".。！？!?"}, None]
    assert len(made.notes) == 1 and "language.language" not in made.notes[0]


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet"])
def test_the_share_of_chinese_prompts_is_read_from_every_kind_of_file(tmp_path, suffix):
    import pandas

    from grpo_skill.core import datafile

    prompts = ["2加3等于几？", "What is 2 + 3?", "日本語の問題です。", "一共有几个？"]  # kana: Japanese, no Chinese
    frame = pandas.DataFrame({"prompt": prompts})
    path = tmp_path / f"d{suffix}"
    {".jsonl": lambda: frame.to_json(path, orient="records", lines=True, force_ascii=False),
     ".json": lambda: frame.to_json(path, orient="records", force_ascii=False),
     ".csv": lambda: frame.to_csv(path, index=False), ".parquet": lambda: frame.to_parquet(path)}[suffix]()
    wanted = [("prompt", "prompt")]
    assert datafile.scan(path, str(path), wanted, chinese=True).chinese_share == 0.5
    assert datafile.scan(path, str(path), wanted).chinese_share is None  # read only when asked


def test_a_budget_past_what_a_presets_model_reads_is_refused_before_the_model_is_here(cli, tmp_path, english):
    """The presets declare their models' positions (Qwen3-4B 40960, Qwen3-4B-Thinking-2507 262144), so a budget the
    model cannot read is refused by `new` and `set` without its config.json; it was accepted, and train.py failed."""
    env = {"HF_HOME": str(tmp_path / "empty-hf-home")}
    refused = cli("new", "p", "--preset", "standard", "--set", "grpo.max_completion_length=100000", cwd=tmp_path,
                  env=env, check=False)
    assert refused.returncode == 1 and not (tmp_path / "p").exists()
    assert ("the model reads at most 40960 tokens (its max_position_embeddings); give --set "
            "grpo.max_completion_length=40448 --set model.max_seq_length=40960") in refused.stderr, refused.stderr
    cli("new", "t", "--preset", "thinking", "--set", "grpo.max_completion_length=100000", cwd=tmp_path, env=env)
    refused = cli("set", "--project", str(tmp_path / "t"), "grpo.max_completion_length=300000", cwd=tmp_path,
                  env=env, check=False)
    assert refused.returncode == 1 and "the model reads at most 262144 tokens" in refused.stderr, refused.stderr
    config = tmp_path / "t" / "config.toml"  # and check, of a hand edit past them
    config.write_text(config.read_text().replace("max_seq_length = 100512", "max_seq_length = 300000"))
    refused = cli("check", str(tmp_path / "t"), env=env, check=False)
    assert refused.returncode == 1 and "the model reads at most 262144 tokens" in refused.stderr, refused.stderr
    config.write_text(config.read_text().replace("max_seq_length = 300000", "max_seq_length = 100512"))
    # another model of the preset is not the one it declares: unchecked until train.py has it, and said so
    cli("set", "--project", str(tmp_path / "t"), "model.name=Qwen/Qwen3-8B", env=env)
    checked = cli("check", str(tmp_path / "t"), env=env)
    assert "the model is not on this machine" in checked.stderr


def test_check_plan_and_doctor_take_the_config_file_as_set_and_train_py_do(cli, tmp_path, english):
    cli("new", "p", "--preset", "tiny", cwd=tmp_path)
    config = tmp_path / "p" / "config.toml"
    assert f"{config}: OK" in cli("check", str(config)).stdout
    planned = json.loads(cli("plan", str(config), "--gpu-memory", "24", "--json").stdout)
    assert planned["settings"]["max_completion_length"] == 32  # the project's, not a preset's
    doctor = json.loads(cli("doctor", str(config), "--json", check=False).stdout)
    assert doctor["facts"]["model"] is not None  # the project's model, as for its folder
