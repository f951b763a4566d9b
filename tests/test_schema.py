"""The config.toml schema: [grpo] follows the installed TRL, the keys each table accepts, where a key is written,
and nothing heavy on the way."""

import json
import os
import shutil
import sys

import pytest

from grpo_skill import schema
from grpo_skill.core import grpofields

from support import run


def test_the_committed_grpo_fields_are_the_installed_trls():
    """data/grpo_config.json is derived from TRL's GRPOConfig; after a TRL upgrade, regenerate it with
    `python -m grpo_skill.schema --write` (this test then shows what changed)."""
    derived = schema.derive_grpo_fields()  # imports TRL: only here, never on the CLI path
    committed = json.loads(schema.grpo_fields_json(derived))
    assert schema.trl_version() == derived["trl"]
    assert schema.grpo_fields() == committed["fields"]
    assert grpofields.lr_schedulers() == committed["lr_schedulers"]
    assert {name: grpofields.table_fields(name) for name in committed["tables"]} == committed["tables"]
    assert {name: grpofields.table_choices(name) for name in committed["table_choices"]} == committed["table_choices"]
    assert grpofields.sft_fields() == committed["sft_fields"]


def test_every_grpoconfig_field_that_toml_can_express_is_a_grpo_key():
    import dataclasses

    from trl import GRPOConfig

    keys = set(schema.table_keys()["grpo"])
    settable = {spec.name for spec in dataclasses.fields(GRPOConfig) if spec.init} - {"parallelism_config"}
    assert keys == settable
    fields = schema.grpo_fields()
    assert fields["optim"]["choices"][:2] == ["adamw_torch", "adamw_torch_fused"]
    assert fields["learning_rate"] == {"type": ["float"], "default": 1e-06}


def test_sft_takes_every_sftconfig_field_that_toml_can_express_beside_its_own_keys():
    """[sft] says where sft.py's examples are; its other keys go to SFTConfig, as the generated config.toml says."""
    import dataclasses

    from trl import SFTConfig

    settable = {spec.name for spec in dataclasses.fields(SFTConfig) if spec.init} - {"parallelism_config"}
    own = {"path", "split", "prompt_column", "thinking_column", "response_column"}  # output_dir: SFTConfig's too
    assert set(schema.table_keys()["sft"]) == settable | own


def sft_data(source=None, **sft):
    raw = {
        "model": {"preset": "tiny", "name": "m", "max_seq_length": 256},
        "lora": {"r": 16, "alpha": 16, "target_modules": ["q_proj"]},
        "dataset": {"path": "data/p.jsonl"},
        "rewards": [{"name": "thinking"}],
        "grpo": {"output_dir": "out", "num_generations": 8, "max_completion_length": 32},
        "sft": sft,
    }
    return schema.validate(raw, source or schema.Source("config.toml"))


def test_a_max_steps_on_the_command_line_is_a_quick_run_of_a_file_that_counts_epochs():
    """sft.py --max-steps 5 (or train.py's) over num_train_epochs in config.toml: what was asked for, not a clash."""
    quick = sft_data(schema.Source("config.toml", overridden={"sft.max_steps"}), num_train_epochs=2, max_steps=5)
    assert quick["sft"]["max_steps"] == 5
    with pytest.raises(schema.ConfigError, match="max_steps \\(set too\\) decides the run's length"):
        sft_data(schema.Source("config.toml", overridden={"sft.max_steps", "sft.num_train_epochs"}),
                 num_train_epochs=2, max_steps=5)


def test_sft_keeps_the_sftconfig_fields_it_is_given_and_fills_in_only_its_own():
    data = sft_data(warmup_steps=0.1, num_train_epochs=2, optim="adamw_torch", max_length=128, weight_decay=0.01)
    assert data["sft"] == {"path": "data/sft.jsonl", "split": "train", "prompt_column": "prompt",
                           "thinking_column": "thinking", "response_column": "response", "output_dir": "outputs/sft",
                           "warmup_steps": 0.1, "num_train_epochs": 2, "optim": "adamw_torch", "max_length": 128,
                           "weight_decay": 0.01}


@pytest.mark.parametrize("sft, message", [
    ({"warmup_ratio": 0.1}, "sft.warmup_ratio = 0.1: unknown key in [sft]; did you mean `warmup_steps`?"),
    ({"max_length": "long"}, 'sft.max_length = "long": must be a whole number'),
    ({"max_length": 0}, "sft.max_length = 0: must be at least 1"),
    ({"optim": "adamw_torh"}, 'did you mean "adamw_torch"?'),
    ({"beta": 0.1}, "sft.beta = 0.1: not a [sft] key: it belongs in [grpo]"),
    ({"zzz": 1}, "unknown key in [sft]: neither one of its own (path, split, prompt_column, thinking_column, "
                 "response_column, output_dir) nor a field of SFTConfig (TRL 1.14.2)"),
    ({"bf16": True}, "sft.bf16: set by sft.py (from what the GPU supports); remove it from [sft]"),
    ({"completion_only_loss": False}, "sft.completion_only_loss: set by sft.py (it trains on the completions only)"),
    ({"save_steps": 10}, "sft.save_steps: sft.py saves no checkpoints (only the adapter, at the end)"),
    ({"eval_strategy": "steps"}, "sft.eval_strategy: sft.py trains without an eval dataset"),
    ({"max_steps": 30, "num_train_epochs": 2}, "sft.num_train_epochs: max_steps (set too) decides the run's length "
                                               "and transformers ignores num_train_epochs; remove one of the two"),
])
def test_sft_refuses_what_sftconfig_or_sft_py_would(sft, message):
    with pytest.raises(schema.ConfigError) as refused:
        sft_data(**sft)
    assert message in str(refused.value)


def test_a_reward_at_weight_0_beside_one_that_counts_is_kept():
    """TRL still logs a reward at weight 0: a way to watch it without training on it."""
    data = sft_data()
    raw = {**{key: data[key] for key in ("model", "lora", "dataset", "grpo")},
           "rewards": [{"name": "thinking", "weight": 0.0}, {"name": "length"}]}
    assert [entry["weight"] for entry in schema.validate(raw, schema.Source("config.toml"))["rewards"]] == [0.0, 1.0]


def test_a_learning_rate_far_above_the_usual_is_named_in_either_table():
    data = sft_data(learning_rate=0.5)
    assert data["warnings"] == [
        "config.toml: sft.learning_rate = 0.5: far above what LoRA runs use, and likely to diverge (a NaN loss) within "
        "a few steps; SFT with LoRA trains at 1e-5 to 1e-3 (sft.py's default 2e-4)"]
    raw = {key: data[key] for key in ("model", "lora", "dataset", "rewards", "grpo")}
    raw["grpo"] = {**raw["grpo"], "learning_rate": 50.0}
    assert schema.validate(raw, schema.Source("config.toml"))["warnings"] == [
        "config.toml: grpo.learning_rate = 50.0: far above what LoRA runs use, and likely to diverge (a NaN loss) "
        "within a few steps; GRPO with LoRA trains at 1e-6 to 1e-4 (the Qwen3-4B presets at 1e-5)"]
    raw["grpo"]["learning_rate"] = 5e-3  # the tiny preset's, for its 64-wide model
    assert schema.validate(raw, schema.Source("config.toml"))["warnings"] == []


@pytest.mark.parametrize("preset", ["tiny", "standard", "thinking"])
def test_the_presets_projects_raise_no_warning(tmp_path, preset):
    from grpo_skill import generator, project

    generator.render("p", tmp_path, preset_name=preset)
    assert project.load(tmp_path / "p", rewards=False).warnings == []


def test_the_keys_of_our_own_tables():
    keys = schema.table_keys()
    assert keys["model"] == ["preset", "name", "backend", "max_seq_length", "load_in_4bit", "compile_decoding", "generation",
                             "compile_layers", "adapter"]
    assert keys["lora"] == ["r", "alpha", "dropout", "target_modules", "gradient_checkpointing"]
    assert keys["dataset"] == ["path", "split", "prompt_column", "system_prompt", "chat_template_kwargs"]
    assert keys["rewards"] == ["name", "weight", "params"]
    assert list(keys) == ["model", "lora", "dataset", "rewards", "grpo", "sft"]


TEXT = """\
# a comment with name = "not this"
[model]
name = "m"   # the model
"preset" = "tiny"

[[rewards]]
name = "a"

[[rewards]]
name = "b"
params = { x = 1 }

[[rewards]]
name = "c"
[rewards.params]
y = 2

[grpo]
learning_rate = 1e-5
"""


@pytest.mark.parametrize("loc, line", [
    (("model", "name"), 3),
    (("model", "preset"), 4),  # a quoted key
    (("model", "backend"), 2),  # not written: its table's header
    (("rewards", 0, "name"), 7),
    (("rewards", 1, "name"), 10),
    (("rewards", 1, "params", "x"), 11),  # inside an inline table: the line of the table
    (("rewards", 2, "params"), 15),  # a sub-table: its header
    (("rewards", 2, "params", "y"), 16),
    (("rewards", 2, "weight"), 13),
    (("grpo", "learning_rate"), 19),
    (("lora", "r"), None),  # neither key nor table written
])
def test_locate_finds_the_line_a_key_is_written_on(loc, line):
    assert schema.locate(TEXT, loc) == line


def test_validated_data_keeps_the_values_as_written():
    raw = {
        "model": {"preset": "tiny", "name": "m", "max_seq_length": 256},
        "lora": {"r": 16, "alpha": 16, "target_modules": ["q_proj"]},
        "dataset": {"path": "data/p.jsonl"},
        "rewards": [{"name": "thinking"}],
        "grpo": {"output_dir": "out", "num_generations": 8, "max_completion_length": 32, "logging_steps": 1},
    }
    data = schema.validate(raw, schema.Source("config.toml"))
    assert data["lora"]["alpha"] == 16 and isinstance(data["lora"]["alpha"], int)  # not turned into 16.0
    assert data["lora"]["gradient_checkpointing"] == "auto" and data["model"]["backend"] == "auto"
    assert data["rewards"] == [{"name": "thinking", "weight": 1.0, "params": {}}]
    assert data["grpo"] == raw["grpo"]  # only what the file sets: GRPOConfig supplies the rest
    assert data["sft"] is None


def test_loading_a_project_imports_nothing_heavy(tmp_path):
    from grpo_skill import generator

    generator.render("p", tmp_path, preset_name="tiny")
    probe = (
        "import sys\n"
        "from grpo_skill import project\n"
        f"project.load({str(tmp_path / 'p')!r})\n"
        "heavy = {'torch', 'transformers', 'trl', 'datasets', 'peft', 'huggingface_hub'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    assert run([sys.executable, "-c", probe]).stdout.strip() == "[]"


def test_the_keys_command_lists_every_table():
    keys = json.loads(run([sys.executable, "-m", "grpo_skill.schema", "--keys"]).stdout)
    assert "learning_rate" in keys["grpo"] and "learning_rate" in keys["sft"] and "response_column" in keys["sft"]


def test_values_trl_refuses_only_while_training_are_choices_here(cli, tmp_path):
    """scale_rewards, multi_objective_aggregation and importance_sampling_level (TRL's trainer refuses another value
    at its first step) and cache_implementation (transformers refuses one when the trainer builds its
    GenerationConfig) get their choices from those sources, so check refuses a typo before a model loads; and
    scale_rewards takes true and false too, which GRPOConfig maps to "group" and "none"."""
    from trl import GRPOConfig

    fields = schema.grpo_fields()
    assert set(fields["importance_sampling_level"]["choices"]) == {"token", "sequence"}
    assert "static" in fields["cache_implementation"]["choices"]
    cli("new", "p", "--preset", "tiny", "-o", str(tmp_path))
    config = tmp_path / "p" / "config.toml"
    written = config.read_text()
    for value, maps_to in (("true", "group"), ("false", "none"), ('"batch"', "batch")):
        config.write_text(written.replace("[grpo]\n", f"[grpo]\nscale_rewards = {value}\n"))
        assert "OK" in cli("check", str(tmp_path / "p"), "--no-rewards").stdout
        parsed = {"true": True, "false": False}.get(value, value.strip('"'))
        assert GRPOConfig(output_dir=None, use_cpu=True, bf16=False, report_to=[],
                          scale_rewards=parsed).scale_rewards == maps_to


def test_a_table_written_as_a_json_string_is_read_as_the_table(cli, tmp_path):
    """GRPOConfig takes its dict fields as JSON strings too: config.toml may write one so, and the project reads it as
    the table it stands for (plan reads every_n_layers from it; train.py passes GRPOConfig the same values)."""
    from grpo_skill.core import project as projects

    cli("new", "p", "--preset", "tiny", "-o", str(tmp_path))
    config = tmp_path / "p" / "config.toml"
    config.write_text(config.read_text().replace(
        "[grpo]", "[grpo]\ngradient_checkpointing_kwargs = '{\"every_n_layers\": 2}'\n"
                  "generation_kwargs = '{\"sequence_bias\": [[[5], 1.0]]}'  #", 1))
    loaded = projects.load(tmp_path / "p", rewards=False)
    assert loaded.grpo["gradient_checkpointing_kwargs"] == {"every_n_layers": 2}
    assert loaded.grpo["generation_kwargs"] == {"sequence_bias": [[[5], 1.0]]}


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory):
    root = tmp_path_factory.mktemp("schema")
    run([sys.executable, "-m", "grpo_skill.cli", "new", "p", "--preset", "tiny", "-o", str(root)])
    return root / "p"


@pytest.mark.parametrize("lines", [
    'debug = "underflow_overflow"',
    'lr_scheduler_type = "cosine"\nlr_scheduler_kwargs = { num_cycles = 2 }',
    'lr_scheduler_type = "cosine_with_min_lr"\nlr_scheduler_kwargs = { min_lr_rate = 0.1 }',
    'lr_scheduler_type = "warmup_stable_decay"\nlr_scheduler_kwargs = { num_decay_steps = 3 }',
    'lr_scheduler_type = "warmup_stable_decay"\nlr_scheduler_kwargs = { num_decay_steps = 3, decay_type = "1-sqrt" }',
    "accelerator_config = '{\"split_batches\": false}'",
    "accelerator_config = { even_batches = false, gradient_accumulation_kwargs = { sync_each_batch = true } }",
    'lr_scheduler_type = "polynomial"\nlr_scheduler_kwargs = { lr_end = 0.001 }',  # below learning_rate (0.005)
    'lr_scheduler_type = "polynomial"',  # lr_end 1e-07 by default
    'torch_compile_mode = "max-autotune"',
    "use_transformers_continuous_batching = true\ntransformers_continuous_batching_config = { block_size = 32 }",
    "use_transformers_continuous_batching = true\ntransformers_continuous_batching_config = { scheduler_type = "
    '"prefill_first", decode_compile_config = { mode = "max-autotune-no-cudagraphs", fullgraph = true } }',
    "tf32 = true",  # on a machine without an Ampere GPU too: train.py refuses it there, before the model loads
])
def test_library_settings_that_work_pass_check(tiny_project, tmp_path, lines):
    """The other side of test_bad_input's cases for what [grpo] hands to transformers and accelerate: values
    those libraries take pass `check` (its checks run here in-process: the libraries load once for every case)."""
    from grpo_skill.verbs.projects import checked

    project = shutil.copytree(tiny_project, tmp_path / "p")
    config = project / "config.toml"
    text = config.read_text()
    if "lr_scheduler_type" in lines:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("lr_scheduler_type")) + "\n"
    config.write_text(text.replace("seed = 42", "seed = 42\n" + lines, 1))
    _, data = checked(project, run_rewards=False)
    assert data["ok"] and not data["warnings"], data


def test_ddp_backend_is_for_a_launch_of_several_processes(cli, tmp_path):
    cli("new", "p", "--preset", "tiny", cwd=tmp_path)
    config = tmp_path / "p" / "config.toml"
    config.write_text(config.read_text().replace("seed = 42", 'seed = 42\nddp_backend = "gloo"', 1))
    assert cli("check", "p", "--no-rewards", cwd=tmp_path, check=False).returncode == 1
    assert "OK" in cli("check", "p", "--no-rewards", "--gpus", "2", cwd=tmp_path).stdout


def test_continuous_batching_names_are_transformers_own():
    """scheduler_type takes the names of transformers' scheduler mapping (another is taken as FIFO with a log line),
    and a compile config, a table here, becomes transformers' CompileConfig."""
    from transformers.generation import CompileConfig, ContinuousBatchingConfig
    from transformers.generation.continuous_batching.scheduler import SCHEDULER_MAPPING

    name = "transformers_continuous_batching_config"
    assert grpofields.table_choices(name)["scheduler_type"] == list(SCHEDULER_MAPPING)
    assert grpofields.table_fields(name)["decode_compile_config"] == ["dict", "null"]
    built = ContinuousBatchingConfig(scheduler_type="prefill_first", decode_compile_config={"mode": "max-autotune"})
    assert isinstance(built.decode_compile_config, CompileConfig)


def test_an_accelerator_config_file_is_read_from_the_project_folder(cli, tmp_path):
    """A path in accelerator_config is the project folder's, for check and train.py alike (transformers alone would
    open it from the folder train.py runs in): the project reads it as the table it holds and hands that on."""
    from trl import GRPOConfig

    from grpo_skill.core import project as projects

    cli("new", "p", "--preset", "tiny", cwd=tmp_path)
    config = tmp_path / "p" / "config.toml"
    config.write_text(config.read_text().replace("seed = 42", 'seed = 42\naccelerator_config = "accel.json"', 1))
    # accelerate's own files write null for what they leave unset: null is a value, not a wrong type
    (tmp_path / "p" / "accel.json").write_text(
        '{"even_batches": false, "dispatch_batches": null, "gradient_accumulation_kwargs": null}')
    assert "OK" in cli("check", "p", "--no-rewards", cwd=tmp_path).stdout  # run from outside the project
    loaded = projects.load(tmp_path / "p", rewards=False)
    assert loaded.grpo["accelerator_config"] == {"even_batches": False, "dispatch_batches": None,
                                                 "gradient_accumulation_kwargs": None}
    assert GRPOConfig(output_dir=None, use_cpu=True, bf16=False, report_to=[],
                      accelerator_config=loaded.grpo["accelerator_config"]).accelerator_config.even_batches is False


def test_tf32_is_refused_by_train_py_on_a_machine_without_it(tmp_path):
    """tf32 = true passes check anywhere (test_library_settings_that_work_pass_check); train.py's decisions for the
    machine refuse it before the model loads where GRPOConfig would refuse it after (without an Ampere or newer CUDA
    GPU), and loading the model for evaluate.py does not ask."""
    from grpo_skill import generator
    from grpo_skill.core import project as projects
    from grpo_skill.runtime import decoding

    generator.render("p", tmp_path, preset_name="tiny")
    config = tmp_path / "p" / "config.toml"
    config.write_text(config.read_text().replace("seed = 42", "seed = 42\ntf32 = true", 1))
    loaded = projects.load(config, rewards=False)
    with pytest.raises(projects.ConfigError, match="grpo.tf32: needs an Ampere or newer NVIDIA GPU"):
        decoding.choose(loaded, "trl", cuda=False)
    assert decoding.held_4bit(loaded, "trl", cuda=False) is False
    del loaded.grpo["tf32"]
    assert decoding.choose(loaded, "trl", cuda=False).load_in_4bit is False


def test_tf32_on_a_cuda_machine_asks_nvidia_smi_about_this_process_gpu(tmp_path, monkeypatch):
    """On a CUDA machine the tf32 refusal reads the compute capability of the GPU this process will use from nvidia-smi
    (before the run binds its GPU, where torch would start CUDA on the first one): nvidia-smi lists every GPU of the
    host, so CUDA_VISIBLE_DEVICES (an index or a UUID) and the local rank pick the one; a pre-Ampere card is refused,
    an Ampere or newer one passes."""
    import torch

    from grpo_skill import generator
    from grpo_skill.core import project as projects
    from grpo_skill.runtime import decoding

    generator.render("p", tmp_path, preset_name="tiny")
    config = tmp_path / "p" / "config.toml"
    config.write_text(config.read_text().replace("seed = 42", "seed = 42\ntf32 = true", 1))
    loaded = projects.load(config, rewards=False)
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nprintf '0, GPU-aaaa-1111, 7.5\\n1, GPU-bbbb-2222, 8.6\\n'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(torch.version, "cuda", "13.0")  # a CUDA build of torch, as on the GPU machine
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    for visible, refused in ((None, True), ("1", False), ("GPU-bbbb", False), ("0,1", True)):
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        if refused:
            with pytest.raises(projects.ConfigError, match="grpo.tf32: needs an Ampere or newer NVIDIA GPU"):
                decoding.refuse_what_this_machine_lacks(loaded, cuda=True)
        else:
            decoding.refuse_what_this_machine_lacks(loaded, cuda=True)
    monkeypatch.setenv("LOCAL_RANK", "1")  # the second process of a launch over both GPUs: the Ampere one
    decoding.refuse_what_this_machine_lacks(loaded, cuda=True)
