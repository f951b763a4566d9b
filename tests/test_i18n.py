"""The CLI and generated projects in English and Chinese: gettext catalogs, --lang, the locale."""

from __future__ import annotations

import ast
import inspect
import io
import os
import re
import string
import subprocess
import sys
import unicodedata
from gettext import GNUTranslations
from pathlib import Path

import pytest
from click.testing import CliRunner

from grpo_skill import cli, console, i18n, plugins
from grpo_skill.generator import render

REPO = Path(__file__).resolve().parents[1]
LOCALE = REPO / "i18n" / "locale"
PO = LOCALE / "zh_CN" / "LC_MESSAGES" / "grpo_skill.po"
MO = PO.with_suffix(".mo")
CJK = re.compile(r"[\u4e00-\u9fff]")
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

try:
    from babel.messages.extract import extract, extract_from_dir, extract_from_file
    from babel.messages.frontend import parse_mapping_cfg
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
except ImportError:  # the CLI tests run without it
    read_po = None
needs_babel = pytest.mark.skipif(read_po is None, reason="the catalog tests need Babel: pip install 'grpo-skill[dev]'")


def drop_project_plugins():
    """config.load() leaves a project's rewards.py registered; a second project's same-named reward would then
    clash with it, so tests that render projects start without those left by earlier tests."""
    for info in plugins.plugin_infos():
        if info.source == "project":
            plugins.unregister(info.name)


@pytest.fixture(autouse=True)
def english_locale(monkeypatch):
    """Each test starts from an English locale and no --lang, whatever the machine's locale is."""
    drop_project_plugins()
    for variable in LOCALE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    i18n.set_language(None)
    yield
    i18n.set_language(None)


def invoke(*args, env=None):
    result = CliRunner().invoke(cli.main, list(args), env=env, catch_exceptions=False, prog_name="grpo-skill")
    return result.exit_code, result.output


def catalog():
    with PO.open("rb") as handle:
        return read_po(handle, locale="zh_CN")


# --- the CLI in both languages --------------------------------------------------------------------------


@pytest.mark.parametrize("args, env", [
    (["--lang", "zh-CN"], None),
    (["--lang=zh-CN"], None),
    ([], {"LANG": "zh_CN.UTF-8"}),
    ([], {"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}),
    ([], {"LANGUAGE": "fr:zh_CN", "LANG": "en_US.UTF-8"}),
])
def test_help_in_chinese_from_the_option_or_the_locale(args, env):
    code, output = invoke(*args, "--help", env=env)
    assert code == 0
    assert output.startswith("用法: grpo-skill")
    assert "用 TRL 和 Unsloth 搭建大语言模型的 GRPO 训练" in output
    assert "显示此帮助信息并退出。" in output  # click's own option, from our catalog
    assert "列出奖励函数。" in output  # a command's short help
    assert "Usage:" not in output and "List the reward functions." not in output


@pytest.mark.parametrize("args, env", [
    ([], None),
    (["--lang", "en"], {"LANG": "zh_CN.UTF-8"}),  # the option beats the locale
    ([], {"LANG": "zh_TW.UTF-8"}),  # no Traditional Chinese catalog: English, not Simplified
    ([], {"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}),  # LC_ALL wins over LANG, as in gettext
])
def test_help_in_english(args, env):
    code, output = invoke(*args, "--help", env=env)
    assert code == 0
    assert output.startswith("Usage: grpo-skill")
    assert "Show this message and exit." in output
    assert not CJK.search(output)


def test_help_after_the_option_and_in_a_subcommand():
    assert invoke("--help", "--lang", "zh-CN")[1].startswith("用法:")  # --lang read before --help acts
    code, output = invoke("--lang", "zh-CN", "new", "--help")
    assert code == 0
    assert "根据预设在PATH（例如my-run或~/runs/my-run）创建一个可直接运行的GRPO项目；PATH的最后一段即项目名。" \
        in "".join(output.split())  # wrapped by display width
    assert "[默认：standard]" in output  # click's "default: {default}"
    assert "[默认：(界面语言)]" in "".join(output.split())  # new --lang defaults to the CLI's language
    code, output = invoke("--lang", "zh-CN", "skill", "install", "--help")
    assert code == 0 and output.startswith("用法: grpo-skill skill install")
    assert "--copy" in output and "显示此帮助信息并退出。" in output


@pytest.mark.parametrize("command", [[], ["new"], ["skill", "install"], ["build-model"]])
def test_chinese_help_fits_the_terminal(command):
    """Chinese characters take two columns: the help is wrapped by display width, not by character count."""
    code, output = invoke("--lang", "zh-CN", *command, "--help")
    assert code == 0
    widths = [sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)
              for line in output.splitlines()]
    assert max(widths) <= 80, output  # CliRunner makes click's help 80 columns wide
    assert CJK.search(output)


def test_errors_in_both_languages():
    code, output = invoke("--lang", "zh-CN", "new", "x", "--preset", "nope")
    assert code == 1
    assert "错误：未知的预设 'nope'；可选：" in output
    code, output = invoke("new", "x", "--preset", "nope")
    assert code == 1
    assert "Error: unknown preset 'nope'; choose one of:" in output

    code, output = invoke("--lang", "zh-CN", "--bogus")  # a parse error, raised inside click
    assert code == 2
    assert "错误：没有选项 '--bogus'。" in output and "运行 'grpo-skill --help' 查看帮助。" in output

    code, output = invoke("--lang", "zh-CN", "new", "--backend", "gpu", "x")  # a click.Choice
    assert code == 2
    assert "'--backend' 的值无效：'gpu' 不是 'auto', 'unsloth', 'trl' 之一。" in output


def test_config_errors_in_both_languages(tmp_path):
    code, output = invoke("--lang", "zh-CN", "check", str(tmp_path))
    assert code == 1 and "没有这个配置文件" in output
    code, output = invoke("check", str(tmp_path))
    assert code == 1 and "no such config file" in output


def test_listings_in_both_languages():
    code, output = invoke("--lang", "zh-CN", "rewards")
    assert code == 0
    assert "名称" in output and "说明" in output
    assert "补全以 '.' 结尾 +0.5" in output  # a built-in description, from the catalog
    code, output = invoke("rewards")
    assert code == 0
    assert "name" in output and "description" in output
    assert "+0.5 when the completion ends with '.'" in output
    assert not CJK.search(output)
    code, output = invoke("--lang", "zh-CN", "presets", "--json")
    assert '"description": "Qwen3-4B, thinking off' in output  # JSON stays data: untranslated


def test_the_language_does_not_leak_between_invocations():
    invoke("--lang", "zh-CN", "--help")
    assert invoke("--help")[1].startswith("Usage:")
    assert i18n.chosen() is None


def test_a_real_process_follows_lang():
    env = {key: value for key, value in os.environ.items() if key not in LOCALE_VARIABLES}
    result = subprocess.run([sys.executable, "-m", "grpo_skill.cli", "new", "x", "--preset", "nope"],
                            env={**env, "LANG": "zh_CN.UTF-8"}, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "错误：未知的预设 'nope'" in result.stderr


@pytest.mark.parametrize("value, lang", [
    ("zh_CN.UTF-8", "zh-CN"), ("zh_CN", "zh-CN"), ("zh", "zh-CN"), ("zh-CN", "zh-CN"), ("zh_SG.utf8", "zh-CN"),
    ("en_US.UTF-8", "en"), ("C", "en"), ("POSIX", "en"), ("C.UTF-8", "en"), ("zh_TW.UTF-8", None), ("fr_FR", None),
])
def test_locale_names(value, lang):
    assert i18n.normalize(value) == lang


@pytest.mark.parametrize("written", ["zh-cn", "zh_CN", "zh", "ZH-CN"])
def test_lang_takes_the_language_as_a_locale_writes_it(written, tmp_path):
    code, output = invoke("--lang", written, "rewards")
    assert code == 0 and "名称" in output
    code, output = invoke("new", "p", "--preset", "tiny", "--lang", written, "-o", str(tmp_path), "--json")
    assert code == 0 and '"lang": "zh-CN"' in output
    code, output = invoke("--lang", "fr", "rewards")
    assert code == 2 and "'fr' is not one of 'en', 'zh-CN'" in output


def test_locale_variables_in_gettext_order():
    assert i18n.from_locale({}) == "en"
    assert i18n.from_locale({"LANG": "zh_CN.UTF-8"}) == "zh-CN"
    assert i18n.from_locale({"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}) == "en"
    assert i18n.from_locale({"LANG": "en_US.UTF-8", "LANGUAGE": "de:zh_CN:en"}) == "zh-CN"
    assert i18n.from_locale({"LANG": "zh_CN.UTF-8", "LC_ALL": "fr_FR.UTF-8"}) == "en"  # fr has no catalog
    assert i18n.from_locale({"LANG": "zh_CN.UTF-8", "LC_ALL": ""}) == "zh-CN"  # empty counts as unset


# --- the catalogs ---------------------------------------------------------------------------------------


@needs_babel
def test_every_message_is_translated():
    untranslated = [message.id for message in catalog() if message.id and (
        not all(message.string if isinstance(message.string, tuple) else (message.string,)) or message.fuzzy
    )]
    assert not untranslated, f"translate these in {PO.relative_to(REPO)}: {untranslated}"


def _fields(text: str) -> set[str]:
    return {name for _literal, name, _spec, _conv in string.Formatter().parse(text) if name is not None}


@needs_babel
def test_translations_keep_the_placeholders():
    for message in catalog():
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        try:
            known = set().union(*(_fields(text) for text in ids))
            for text in ids:
                text.format(**{name: "x" for name in known})
        except (ValueError, KeyError, IndexError):  # braces that are no placeholders, e.g. [{"role": ...}]
            known = None
        if "python-brace-format" in message.flags and known is not None:
            for text in strings:
                assert _fields(text) <= known, f"{message.id!r}: {text!r} uses unknown fields"
                text.format(**{name: "x" for name in known})
        else:
            assert "{" not in "".join(strings) or "{" in "".join(ids), message.id


@needs_babel
def test_the_mo_file_is_compiled_from_the_po_file():
    """The committed .mo must say what the .po says: run `pybabel compile` (see grpo_skill/i18n.py)."""
    compiled = io.BytesIO()
    write_mo(compiled, catalog())
    expected = GNUTranslations(io.BytesIO(compiled.getvalue()))
    with MO.open("rb") as handle:
        committed = GNUTranslations(handle)
    assert committed._catalog == expected._catalog, "i18n .mo is stale: run `pybabel compile -d i18n/locale -D grpo_skill`"


def _source_messages() -> set:
    method_map, options_map = parse_mapping_cfg(io.StringIO((REPO / "i18n" / "babel.cfg").read_text()))
    found = set()
    for _filename, _lineno, message, _comments, _context in extract_from_dir(
        str(REPO), method_map, options_map, keywords={"_": None, "N_": None, "ngettext": (1, 2)}
    ):
        found.add(message if isinstance(message, str) else message[0])
    return found


@needs_babel
def test_the_catalog_has_every_message_of_the_sources():
    """A new or changed _("...") needs `pybabel extract` + `pybabel update` + a translation (see grpo_skill/i18n.py)."""
    in_sources = _source_messages()
    in_catalog = {message.id if isinstance(message.id, str) else message.id[0] for message in catalog() if message.id}
    assert not in_sources - in_catalog, "not in the .po: " + repr(sorted(in_sources - in_catalog))
    assert not in_catalog - in_sources, "in the .po but no longer in the sources: " + repr(sorted(in_catalog - in_sources))


@needs_babel
def test_our_click_messages_are_clicks():
    """The click messages we translate must be spelled exactly as the installed click spells them."""
    import click

    keywords = {"_": None, "ngettext": (1, 2)}
    source = inspect.getsource(console._click_messages)
    ours = {message for _line, message, _comments, _context in extract("python", io.BytesIO(source.encode()), keywords)}
    click_dir = Path(click.__file__).parent
    modules = ("core", "exceptions", "formatting", "parser", "types", "decorators")
    theirs = {message for module in modules
              for _line, message, _comments, _context in extract_from_file("python", str(click_dir / f"{module}.py"),
                                                                            keywords)}
    click_source = "".join((click_dir / f"{module}.py").read_text() for module in modules)
    missing = {message for message in ours - theirs if f'"{message}"' not in click_source}  # _(variable) in click
    assert len(ours) > 20 and not missing, f"not (or no longer) in click {click.__version__}: {missing}"


# --- generated projects ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    parent = tmp_path_factory.mktemp("projects")
    drop_project_plugins()
    made = {}
    for lang in i18n.LANGS:
        target, _files = render(f"run-{lang}", parent, preset_name="tiny", lang=lang)
        made[lang] = target
    return made


def _comments(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[1].strip() for line in lines if "#" in line and "noqa" not in line]


def test_project_readme_in_both_languages(projects):
    english = (projects["en"] / "README.md").read_text(encoding="utf-8")
    chinese = (projects["zh-CN"] / "README.md").read_text(encoding="utf-8")
    assert english.startswith("# run-en\n") and chinese.startswith("# run-zh-CN\n")
    for needle in ("pip install -r requirements.txt", "python train.py --max-steps 5", "--model",
                   "outputs/metrics.jsonl", "grpo-skill metrics outputs --plot reward.png", "python evaluate.py",
                   "rewards.py", "pytest", "python train.py --smoke", "`config.toml`", "grpo-skill check ."):
        assert needle in english and needle in chinese, needle
    assert "## Train" in english and "## Add a reward" in english and not CJK.search(english)
    assert "## 训练" in chinese and "## 添加奖励函数" in chinese
    assert "{{" not in english + chinese and "{%" not in english + chinese


def _structure(markdown: str):
    """Heading levels, table shapes and code blocks (their comments aside): what both languages share."""
    blocks = re.findall(r"```(\w*)\n(.*?)```", markdown, re.DOTALL)
    code = [(kind, [re.sub(r"\s+#.*$", "", line) for line in body.splitlines()]) for kind, body in blocks]
    headings = [len(match) for match in re.findall(r"^(#+) ", re.sub(r"```.*?```", "", markdown, flags=re.DOTALL),
                                                    re.MULTILINE)]
    tables = [line.count("|") for line in markdown.splitlines() if line.startswith("|")]
    return headings, tables, code


def test_project_readmes_have_the_same_structure(projects):
    english = (projects["en"] / "README.md").read_text(encoding="utf-8")
    chinese = (projects["zh-CN"] / "README.md").read_text(encoding="utf-8")
    assert _structure(english) == _structure(chinese)


def test_project_comments_in_both_languages(projects):
    for relative in ("train.py", "rewards.py", "config.toml", "evaluate.py", ".env.example", "requirements.txt",
                     "tests/test_project.py", ".copier-answers.yml"):
        english = _comments(projects["en"] / relative)
        chinese = _comments(projects["zh-CN"] / relative)
        assert english and not any(CJK.search(comment) for comment in english), relative
        assert any(CJK.search(comment) for comment in chinese), relative
    train = (projects["zh-CN"] / "train.py").read_text(encoding="utf-8")
    assert "# 1. 设置：" in train and "# 10. 保存 LoRA 适配器" in train
    assert '"""run-zh-CN: GRPO 训练，自上而下阅读即可。' in train
    for numbered in range(1, 11):  # every step of the walkthrough is translated
        assert re.search(rf"^# {numbered}\. .*[\u4e00-\u9fff]", train, re.MULTILINE), numbered


def test_both_projects_are_the_same_code(projects):
    """Only comments, docstrings and the text the scripts show (help, messages, the language they speak) change
    with the language: the code is identical."""
    for relative in ("train.py", "rewards.py", "evaluate.py", "sft.py", "tests/test_project.py"):
        trees = []
        for lang in i18n.LANGS:
            tree = ast.parse((projects[lang] / relative).read_text(encoding="utf-8"))
            for node in ast.walk(tree):  # drop docstrings and the text of string literals
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    node.value = ""
            trees.append(ast.dump(tree))
        assert trees[0] == trees[1], relative
    import tomllib

    configs = [tomllib.loads((projects[lang] / "config.toml").read_text(encoding="utf-8")) for lang in i18n.LANGS]
    assert configs[0] == configs[1]


def test_a_projects_scripts_speak_its_language_whatever_the_locale(projects):
    def train_with_zero_steps(lang, **env):
        environment = {key: value for key, value in os.environ.items() if key != "GRPO_SKILL_LANG"}
        environment.update({"LANG": "C.UTF-8", "LANGUAGE": "", "LC_ALL": "", **env})
        return subprocess.run([sys.executable, "train.py", "--max-steps", "0"], cwd=projects[lang], env=environment,
                              capture_output=True, text=True)

    chinese = train_with_zero_steps("zh-CN")
    assert chinese.returncode == 1 and chinese.stderr.startswith("错误：grpo.max_steps = 0"), chinese.stderr
    english = train_with_zero_steps("zh-CN", GRPO_SKILL_LANG="en")  # the override
    assert english.stderr.startswith("error: grpo.max_steps = 0")
    assert train_with_zero_steps("en", LANG="zh_CN.UTF-8").stderr.startswith("error: ")  # an English project


def test_new_takes_the_cli_language_unless_told(tmp_path):
    code, output = invoke("--lang", "zh-CN", "new", "a", "--preset", "tiny", "-o", str(tmp_path))
    assert code == 0 and output.startswith("已创建 ")
    assert "## 训练" in (tmp_path / "a" / "README.md").read_text(encoding="utf-8")

    code, output = invoke("--lang", "zh-CN", "new", "b", "--preset", "tiny", "--lang", "en", "-o", str(tmp_path))
    assert code == 0 and output.startswith("已创建 ")  # messages in Chinese, the project in English
    assert "## Train" in (tmp_path / "b" / "README.md").read_text(encoding="utf-8")

    code, output = invoke("new", "c", "--preset", "tiny", "--lang", "zh-CN", "-o", str(tmp_path), "--json")
    assert code == 0 and '"lang": "zh-CN"' in output
    assert "## 训练" in (tmp_path / "c" / "README.md").read_text(encoding="utf-8")


def _rows(path: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_chinese_project_starts_from_chinese_sample_data(tmp_path):
    """The prompts a project trains on without --dataset, and sft.py's worked examples, in the project's language:
    the same rows in the same shape. The tiny preset keeps the English ones: its tokenizer has no Chinese."""
    drop_project_plugins()
    samples = REPO / "templates" / "project" / "_i18n" / "data"
    made = {}
    for lang in i18n.LANGS:
        made[lang] = render(f"std-{lang}", tmp_path, preset_name="standard", lang=lang,
                            reward_options=("length", "language"))[0]
    for name in ("prompts.jsonl", "sft.jsonl"):
        english, chinese = (_rows(made[lang] / "data" / name) for lang in i18n.LANGS)
        assert (made["en"] / "data" / name).read_bytes() == (samples / name.replace(".", ".en.")).read_bytes()
        assert [list(row) for row in english] == [list(row) for row in chinese]
        assert not any(CJK.search(value) for row in english for value in row.values())
        assert all(CJK.search(value) for row in chinese for value in row.values())
    # the thinking asks itself a question where the English does, with the full-width mark
    english, chinese = (_rows(made[lang] / "data" / "sft.jsonl") for lang in i18n.LANGS)
    assert [("?" in row["thinking"], "？" in other["thinking"]) for row, other in zip(english, chinese)] == [
        ("?" in row["thinking"],) * 2 for row in english]
    # the Chinese sample prompts are Chinese prompts: the language reward's target is Chinese, English's English
    import tomllib

    targets = [tomllib.loads((made[lang] / "config.toml").read_text(encoding="utf-8"))["rewards"][1].get(
        "params", {}).get("language") for lang in i18n.LANGS]
    assert targets == [None, "zh"]
    tiny, _files = render("tiny-zh-CN", tmp_path, preset_name="tiny", lang="zh-CN")
    for name in ("prompts.jsonl", "sft.jsonl"):
        assert (tiny / "data" / name).read_bytes() == (made["en"] / "data" / name).read_bytes()


def test_a_template_message_an_earlier_version_used_still_renders_in_chinese():
    """`update` renders a project's old template version with today's catalogs: a template message that changed since
    is kept, translated, in grpo_skill_retired.po (scripts/retire_template_messages.py), which only the template reads.
    sft.py's last line until 2026-12-06 is one: without it an untouched zh-CN project's sft.py conflicted."""
    from babel.messages.pofile import read_po

    from grpo_skill import i18n

    folder = Path(i18n.locale_dir()) / "zh_CN" / "LC_MESSAGES"
    retired = {m.id: m.string for m in read_po((folder / "grpo_skill_retired.po").open("rb")) if m.id}
    current = {m.id for m in read_po((folder / "grpo_skill.po").open("rb")) if m.id}
    old_line = ("next: set  {setting}  under [model] in config.toml, then run python train.py (with --overwrite if the "
                "output folder holds an earlier GRPO run: it keeps this adapter)")
    assert old_line in retired and not set(retired) & current and all(retired.values())
    template = i18n.template_translations("zh-CN")
    assert template.gettext(old_line) == retired[old_line] != old_line
    assert i18n.translations("zh-CN").gettext(old_line) == old_line  # the CLI's own catalog does not carry them
    assert template.gettext("(not set)") == i18n.translations("zh-CN").gettext("(not set)")  # today's come first
