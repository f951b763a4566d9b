"""Start-up stays light: a verb imports what it uses (docs/architecture.md). `grpo-skill --help` and every verb's
--help load only click and the messages; `new` renders a project without the training stack, copier's prompt
libraries (it asks no question) or huggingface_hub's download module (the preset's model is not cached)."""

import json
import os
import shutil
import sys

from support import run

# What `--help` must not load: the training stack, the template engine, the config schema, the plugin machinery.
NOT_FOR_HELP = {"torch", "transformers", "trl", "datasets", "peft", "accelerate", "copier", "jinja2", "pydantic",
                "pluggy", "rich", "huggingface_hub", "httpx", "yaml", "grpo_skill.core.plugins",
                "grpo_skill.core.schema", "grpo_skill.core.project"}
TRAINING_STACK = {"torch", "transformers", "trl", "datasets", "peft", "accelerate", "unsloth"}
# What rendering a project must not load besides: copier's prompt libraries, and the hub client's download module
# with what it brings (httpx, rich) when the model is not in the cache: a third of `new`'s time together.
NOT_FOR_NEW = TRAINING_STACK | {"questionary", "prompt_toolkit", "pygments", "huggingface_hub.file_download", "httpx",
                                "rich"}


def loaded_after(code: str, env=None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (which imports grpo_skill.cli as ``cli``)."""
    probe = ("import json, sys\nfrom click.testing import CliRunner\nfrom grpo_skill import cli\n" + code +
             "\nprint(json.dumps(sorted(sys.modules)))\n")
    return set(json.loads(run([sys.executable, "-c", probe], env=env).stdout.splitlines()[-1]))


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


def test_new_renders_without_the_training_stack_or_copiers_prompts(tmp_path):
    code = (f"result = CliRunner().invoke(cli.main, ['new', {str(tmp_path / 'run')!r}, '--preset', 'thinking'])\n"
            "assert result.exit_code == 0, result.output\n")
    loaded = loaded_after(code, env={"HF_HOME": str(tmp_path / "empty-hf-home")})
    assert (tmp_path / "run" / "train.py").is_file()
    assert {"copier", "pydantic", "grpo_skill.core.project"} <= loaded  # the probe did render and check
    assert loaded & NOT_FOR_NEW == set()


def test_new_builds_an_accuracy_reward_without_loading_math_verify(tmp_path):
    """`new` checks a built-in reward's params by building it, as `check` does; the answer packages (math-verify brings
    sympy: a second) are imported only where golds are read, and a hub dataset has none here. language's factory
    loads py3langid's model (for its language codes): `new` checks its other params and stops before it."""
    new = ["new", "--preset", "tiny", "-r", "accuracy", "-r", "kimi_length", "-r", "language", "--set",
           'dataset.path="openai/gsm8k"']
    code = (f"result = CliRunner().invoke(cli.main, [*{new!r}, {str(tmp_path / 'run')!r}])\n"
            "assert result.exit_code == 0, result.output\n"
            f"result = CliRunner().invoke(cli.main, [*{new!r}, {str(tmp_path / 'bad')!r}, '--param', "
            "'kimi_length.template_opens_think=\"maybe\"'])\n"
            "assert result.exit_code == 1 and \"reward 'kimi_length'\" in result.output, result.output\n"
            f"result = CliRunner().invoke(cli.main, [*{new!r}, {str(tmp_path / 'bad-part')!r}, '--param', "
            "'language.part=\"bogus\"'])\n"
            "assert result.exit_code == 1 and \"params.part = 'bogus'\" in result.output, result.output\n")
    loaded = loaded_after(code, env={"HF_HOME": str(tmp_path / "empty-hf-home")})
    assert 'name = "kimi_length"' in (tmp_path / "run" / "config.toml").read_text()
    assert not (tmp_path / "bad-part").exists()
    assert loaded & (NOT_FOR_NEW | {"math_verify", "sympy", "cn2an", "text_to_num", "py3langid"}) == set()


def test_new_without_the_train_extra_writes_the_project_and_still_checks_the_rewards_params(tmp_path):
    """grpo-skill without its [train] extra: no TRL, math-verify or py3langid. `new` writes the project all the same
    (its requirements.txt brings them), and refuses a bad param of a reward that needs them, as `check` would."""
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{n} x 7?", "answer": str(n * 7)}) + "\n" for n in range(16)))
    rewards = ["-r", "accuracy", "-r", "soft_overlong", "-r", "repetition", "-r", "think_format", "-r", "language"]
    code = (f"for name in {sorted(TRAINING_STACK | {'math_verify', 'text_to_num', 'cn2an', 'py3langid'})!r}:\n"
            "    sys.modules[name] = None  # import raises ImportError; find_spec finds nothing\n"
            f"new = ['new', '--preset', 'thinking', '--dataset', {str(data)!r}, *{rewards!r}]\n"
            f"result = CliRunner().invoke(cli.main, [*new, {str(tmp_path / 'run')!r}])\n"
            "assert result.exit_code == 0, result.output\n"
            f"result = CliRunner().invoke(cli.main, [*new, {str(tmp_path / 'bad')!r}, '--param', "
            "'repetition.max_penalty=1.0'])\n"
            "print(json.dumps([result.exit_code, result.output]))\n")
    probe = "import json, sys\nfrom click.testing import CliRunner\nfrom grpo_skill import cli\n" + code
    exit_code, output = json.loads(run([sys.executable, "-c", probe]).stdout.splitlines()[-1])
    assert (tmp_path / "run" / "train.py").is_file() and not (tmp_path / "bad").exists()
    assert exit_code == 1 and output == (
        "Error: the project would not run: reward 'repetition' (plugin builtin:shaping): params: ngram_size must be "
        "a whole number from 1 up and max_penalty 0 or below (got 3, 1.0)\n")


def test_a_prompt_copier_shows_gets_the_real_prompt_library():
    """The other side of leaving copier's prompt libraries out: a name copier took from them is the library's own
    thing the moment it is used (copier asks through these when a template question has no answer)."""
    code = ("from grpo_skill.scaffold import copying\n"
            "copier = copying.load()\n"
            "assert 'questionary' not in sys.modules and 'prompt_toolkit' not in sys.modules\n"
            "from copier import _main, _user_data\n"
            "choice = _user_data.Choice('zh-CN', 'zh-CN', disabled='')\n"
            "import questionary\n"
            "assert type(choice) is questionary.Choice and choice.value == 'zh-CN', choice\n"
            "assert _main.confirm.resolve() is questionary.confirm and _main.unsafe_prompt.resolve() is "
            "questionary.unsafe_prompt\n"
            "lexer = _user_data.PygmentsLexer(_user_data.YamlLexer)\n"
            "from prompt_toolkit.lexers import PygmentsLexer\n"
            "assert type(lexer) is PygmentsLexer and type(lexer.pygments_lexer).__name__ == 'YamlLexer'\n")
    assert {"questionary", "prompt_toolkit", "pygments.lexers.data"} <= loaded_after(code)


def test_kept_compiled_templates_follow_their_text(tmp_path):
    """Compiled templates are kept by name (`update` renders old template versions from fresh folders): a template
    of the same name with other text renders its own text, from a file or from a string."""
    from jinja2 import FileSystemLoader
    from jinja2.sandbox import SandboxedEnvironment

    from grpo_skill.scaffold import copying

    copying.load()
    rendered = []
    for version in ("one", "two", "one"):
        folder = tmp_path / version
        folder.mkdir(exist_ok=True)
        (folder / "README.md.jinja").write_text(f"{version}: {{{{ name }}}}", encoding="utf-8")
        environment = SandboxedEnvironment(loader=FileSystemLoader(folder))
        copying.keep_compiled(environment)
        assert environment.bytecode_cache is not None
        rendered.append(environment.get_template("README.md.jinja").render(name="x"))
        rendered.append(environment.from_string(f"{version} {{{{ name }}}}").render(name="y"))
        rendered.append(environment.from_string(f"{version} {{{{ name }}}}").render(name="z"))
    assert rendered == ["one: x", "one y", "one z", "two: x", "two y", "two z", "one: x", "one y", "one z"]


def test_new_runs_git_only_for_the_projects_own_repository(tmp_path):
    """copier's git work that cannot matter for a new folder (is the template a repository or a bundle, and one
    index check per file written) is skipped: `new` and `plugin new` run git for the project's repository alone.
    Afterwards copier is as it was, so that `update`, which writes into a repository, still syncs the index."""
    shims, log = tmp_path / "shims", tmp_path / "git.log"
    shims.mkdir()
    real_git = shutil.which("git")
    (shims / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real_git} "$@"\n')
    (shims / "git").chmod(0o755)
    code = (f"result = CliRunner().invoke(cli.main, ['new', {str(tmp_path / 'run')!r}, '--preset', 'thinking'])\n"
            "assert result.exit_code == 0, result.output\n"
            f"result = CliRunner().invoke(cli.main, ['plugin', 'new', 'answer-size', '-o', {str(tmp_path)!r}])\n"
            "assert result.exit_code == 0, result.output\n"
            "from copier import _main, _template, _vcs\n"
            "assert _main.is_git_available is _vcs.is_git_available and _template.get_repo is _vcs.get_repo\n")
    loaded_after(code, env={"PATH": f"{shims}:{os.environ['PATH']}"})
    assert (tmp_path / "run" / "train.py").is_file() and (tmp_path / "grpo-skill-answer-size").is_dir()
    commands = log.read_text().splitlines()
    assert sorted(command.split()[0] for command in commands) == ["-c", "add", "config", "init", "rev-parse"], commands
    assert (tmp_path / "run" / ".git").is_dir()


def test_a_command_called_from_python_freezes_nothing():
    """The CLI run as a program freezes what it built out of the exit's garbage collections (console.Group.main);
    called from Python (tests, other programs), whose process goes on, it must leave the collector as it was."""
    code = ("import gc\n"
            "result = CliRunner().invoke(cli.main, ['presets'])\n"
            "assert result.exit_code == 0 and 'thinking' in result.output, result.output\n"
            "assert gc.get_freeze_count() == 0, gc.get_freeze_count()\n")
    loaded_after(code)
