"""Start-up stays light: a verb imports what it uses (docs/architecture.md). `grpo-skill --help` and every verb's
--help load only click and the messages; `new` renders a project without the training stack."""

import json
import sys

from support import run

# What `--help` must not load: the training stack, the template engine, the config schema, the plugin machinery.
NOT_FOR_HELP = {"torch", "transformers", "trl", "datasets", "peft", "accelerate", "copier", "jinja2", "pydantic",
                "pluggy", "rich", "huggingface_hub", "httpx", "yaml", "grpo_skill.core.plugins",
                "grpo_skill.core.schema", "grpo_skill.core.project"}
TRAINING_STACK = {"torch", "transformers", "trl", "datasets", "peft", "accelerate", "unsloth"}


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (which imports grpo_skill.cli as ``cli``)."""
    probe = ("import json, sys\nfrom click.testing import CliRunner\nfrom grpo_skill import cli\n" + code +
             "\nprint(json.dumps(sorted(sys.modules)))\n")
    return set(json.loads(run([sys.executable, "-c", probe]).stdout.splitlines()[-1]))


def test_help_of_every_verb_loads_nothing_heavy():
    code = (
        "commands = [[]] + [[name] for name in cli.main.commands]\n"
        "for name, group in cli.main.commands.items():\n"
        "    commands += [[name, sub] for sub in getattr(group, 'commands', {})]\n"
        "assert len(commands) > 10, commands\n"
        "for args in commands:\n"
        "    result = CliRunner().invoke(cli.main, [*args, '--help'])\n"
        "    assert result.exit_code == 0 and 'Usage:' in result.output, (args, result.output)\n"
    )
    assert loaded_after(code) & NOT_FOR_HELP == set()


def test_the_cli_module_alone_loads_no_plugins():
    assert loaded_after("") & NOT_FOR_HELP == set()


def test_new_renders_without_the_training_stack(tmp_path):
    code = (f"result = CliRunner().invoke(cli.main, ['new', {str(tmp_path / 'run')!r}, '--preset', 'thinking'])\n"
            "assert result.exit_code == 0, result.output\n")
    loaded = loaded_after(code)
    assert (tmp_path / "run" / "train.py").is_file()
    assert "copier" in loaded  # the probe did render
    assert loaded & TRAINING_STACK == set()
