"""The skill docs against the code: SKILL.md and references/, in English and in the zh-CN twin.

What is checked:

- the frontmatter follows the Agent Skills spec (allowed keys, name, lengths), the body stays under 500
  lines, every reference file is linked from SKILL.md, exists, and sits one level deep;
- the two languages have the same structure: headings (count, levels, order), code blocks (byte-equal once
  ``#`` comments are removed), table shapes, links and reference files;
- the preset and reward tables are what ``python -m grpo_skill.docs --write`` makes from the registry;
- every ```python block compiles; blocks with an ``assert`` run (so the scores the text claims are
  the scores the code gives); blocks that define ``@hookimpl`` plugins register cleanly; a block whose first
  line is ``# rewards.py`` is a project's rewards.py, saved where the following runnable blocks can find it;
- the figures quoted from ``plan`` and the benchmark are what ``grpo_skill.docs`` makes from the code and
  docs/benchmarks.json, and what ``grpo-skill plan`` prints;
- every ``grpo-skill ...`` command, in ```bash blocks or inline, runs and exits 0, and prints what a ```text block
  right after its bash block shows (each line of it, in order; ``...`` stands for lines left out). A bash block starts in an
  empty folder next to a copy of the trained quick-start project (``my-run``); an inline command runs inside
  that copy. The quick-start block itself (the first bash block of SKILL.md that runs ``python train.py``)
  makes that project: ``python train.py`` always runs with ``--max-steps 2``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tokenize
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import grpo_skill
from grpo_skill import docs, plugins
from grpo_skill.scaffold import figures
from grpo_skill.cli import main

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"en": REPO, "zh-CN": REPO / "i18n" / "zh-CN"}
SKILL = "SKILL.md"
REFERENCES = "references"
ALLOWED_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
TRIGGERS = ("GRPO", "RLHF", "reward function", "GRPOTrainer", "KL penalty", "强化学习", "奖励函数")
PROJECT_PREFIX = plugins.PROJECT_PLUGIN_PREFIX
SKILL_NAMES = {"en": "grpo-skill", "zh-CN": "grpo-skill-zh-cn"}


# --- reading the markdown ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


@dataclass(frozen=True)
class Doc:
    path: Path
    frontmatter: dict | None
    body: str  # without the frontmatter
    blocks: tuple[Block, ...]
    prose: tuple[str, ...]  # body lines outside code blocks


def read_doc(path: Path) -> Doc:
    text = path.read_text(encoding="utf-8")
    frontmatter, body, offset = None, text, 0
    match = re.match(r"\A---\n(.*?)\n---\n", text, re.DOTALL)
    if match:
        frontmatter = yaml.safe_load(match.group(1))
        body = text[match.end():]
        offset = text[: match.end()].count("\n")
    blocks, prose, fence = [], [], None
    for number, line in enumerate(body.splitlines(), start=offset + 1):
        if fence is None:
            opening = re.match(r"^```(\S*)\s*$", line)
            if opening:
                fence = (number, opening.group(1), [])
            else:
                prose.append(line)
        elif line.rstrip() == "```":
            blocks.append(Block(path, fence[0], fence[1], "\n".join(fence[2]) + "\n"))
            fence = None
        else:
            fence[2].append(line)
    assert fence is None, f"{path}:{fence[0]}: a code block is never closed"
    return Doc(path, frontmatter, body, tuple(blocks), tuple(prose))


def doc_paths(lang: str) -> list[Path]:
    root = ROOTS[lang]
    return [root / SKILL] + sorted((root / REFERENCES).glob("*.md"))


def all_docs() -> list[Path]:
    return [path for lang in ROOTS for path in doc_paths(lang) if path.exists()]


def headings(doc: Doc) -> list[int]:
    return [len(m.group(1)) for line in doc.prose if (m := re.match(r"^(#{1,6}) ", line))]


def table_shapes(doc: Doc) -> list[tuple[int, int]]:
    shapes, rows = [], []
    for line in list(doc.prose) + [""]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            columns = len(re.split(r"(?<!\\)\|", rows[0].strip().strip("|")))
            shapes.append((len(rows), columns))
            rows = []
    return shapes


def links(doc: Doc) -> list[str]:
    found = []
    for line in doc.prose:
        found += [target for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", line)
                  if not re.match(r"^[a-z]+:", target) and not target.startswith("#")]
    return found


def inline_commands(doc: Doc) -> list[str]:
    text = "\n".join(doc.prose)
    return [command for command in re.findall(r"`(grpo-skill\s[^`]+)`", text)]


def strip_comments(block: Block) -> str:
    """The block without ``#`` comments (the only part translators may change)."""
    lines = block.code.splitlines()
    cuts: dict[int, int] = {}
    if block.lang == "python":
        for token in tokenize.generate_tokens(io.StringIO(block.code).readline):
            if token.type == tokenize.COMMENT:
                cuts[token.start[0] - 1] = token.start[1]
    else:
        for index, line in enumerate(lines):
            match = re.search(r"(^|\s)#", line)
            if match:
                cuts[index] = match.start()
    kept = []
    for index, line in enumerate(lines):
        if index in cuts:
            line = line[: cuts[index]].rstrip()
            if not line:
                continue  # a comment-only line
        kept.append(line.rstrip())
    return "\n".join(kept)


DOCS = {path: read_doc(path) for path in all_docs()}


def doc_id(path: Path) -> str:
    return str(path.relative_to(REPO))


# --- frontmatter, size and links ----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", list(ROOTS))
def test_frontmatter_follows_the_agent_skills_spec(lang):
    doc = read_doc(ROOTS[lang] / SKILL)
    meta = doc.frontmatter
    assert isinstance(meta, dict), "SKILL.md must start with YAML frontmatter between '---' lines"
    assert set(meta) <= ALLOWED_KEYS, f"keys the spec does not allow: {sorted(set(meta) - ALLOWED_KEYS)}"
    assert meta["name"] == SKILL_NAMES[lang]  # the folder it ships and is installed in
    assert len(meta["name"]) <= 64 and NAME_PATTERN.match(meta["name"])
    description = meta["description"]
    assert isinstance(description, str) and 0 < len(description) <= 1024, len(description)
    assert "<" not in description and ">" not in description  # the Agent Skills validator refuses them
    for word in TRIGGERS:
        assert word in description, f"description lacks the trigger {word!r}"
    if "compatibility" in meta:
        assert isinstance(meta["compatibility"], str) and 0 < len(meta["compatibility"]) <= 500
    if "license" in meta:
        assert isinstance(meta["license"], str) and meta["license"]
    if "allowed-tools" in meta:
        assert isinstance(meta["allowed-tools"], str)
    if "metadata" in meta:
        assert isinstance(meta["metadata"], dict)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta["metadata"].items())
        assert meta["metadata"].get("version") == grpo_skill.__version__
        assert meta["metadata"].get("language") == lang


@pytest.mark.parametrize("lang", list(ROOTS))
def test_body_is_under_500_lines(lang):
    doc = read_doc(ROOTS[lang] / SKILL)
    assert len(doc.body.splitlines()) < 500


@pytest.mark.parametrize("lang", list(ROOTS))
def test_every_reference_is_linked_exists_and_is_one_level_deep(lang):
    root = ROOTS[lang]
    skill = read_doc(root / SKILL)
    linked = set()
    for target in links(skill):
        assert re.fullmatch(rf"{REFERENCES}/[A-Za-z0-9_.-]+\.md", target), f"SKILL.md links {target!r}"
        assert (root / target).is_file(), f"SKILL.md links {target}, which does not exist"
        linked.add(target)
    references = root / REFERENCES
    assert not [p for p in references.iterdir() if p.is_dir()], "references/ must be flat (one level deep)"
    present = {f"{REFERENCES}/{p.name}" for p in references.iterdir()}
    assert present == linked, f"not linked from SKILL.md: {sorted(present - linked)}"
    for path in sorted(references.glob("*.md")):
        for target in links(read_doc(path)):
            resolved = (path.parent / target).resolve()
            assert resolved.is_file(), f"{path.name} links {target}, which does not exist"
            assert resolved.parent in (references, root), f"{path.name} links {target}: deeper than one level"


# --- the zh-CN twin -------------------------------------------------------------------------------------------


def twin_pairs() -> list[tuple[Path, Path]]:
    en = ROOTS["en"]
    return [(path, ROOTS["zh-CN"] / path.relative_to(en)) for path in doc_paths("en")]


def test_the_twin_has_the_same_files():
    assert [p.relative_to(ROOTS["en"]) for p in doc_paths("en")] == \
        [p.relative_to(ROOTS["zh-CN"]) for p in doc_paths("zh-CN")]


@pytest.mark.parametrize("en_path, zh_path", twin_pairs(), ids=lambda p: doc_id(p))
def test_the_twin_has_the_same_structure(en_path, zh_path):
    assert zh_path.is_file(), f"{zh_path.relative_to(REPO)} is missing"
    en, zh = read_doc(en_path), read_doc(zh_path)
    assert headings(zh) == headings(en), "headings differ in number, level or order"
    assert table_shapes(zh) == table_shapes(en), "tables differ in number or shape (rows x columns)"
    assert links(zh) == links(en), "links differ"
    assert [b.lang for b in zh.blocks] == [b.lang for b in en.blocks], "code blocks differ in number or language"
    for en_block, zh_block in zip(en.blocks, zh.blocks):
        assert strip_comments(zh_block) == strip_comments(en_block), (
            f"{zh_block.where} differs from {en_block.where} outside comments"
        )


# --- generated tables -------------------------------------------------------------------------------------------


def test_generated_tables_are_current():
    assert docs.stale() == [], "run: python -m grpo_skill.docs --write"


def copy_generated_docs(root: Path) -> None:
    for relative in [*docs.DOC_FILES, figures.BENCHMARK_FILE]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / relative, root / relative)


def test_docs_check_reports_a_stale_table_and_write_fixes_it(tmp_path, capsys):
    copy_generated_docs(tmp_path)
    en = tmp_path / docs.SKILL_FILES["en"]
    en.write_text(en.read_text(encoding="utf-8").replace("| `tiny` |", "| `tiny-old` |"), encoding="utf-8")

    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    message = capsys.readouterr().err
    assert message.count("\n") == 1 and "SKILL.md: the presets table is stale" in message
    assert docs.main(["--write", "--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0
    assert en.read_bytes() == (REPO / docs.SKILL_FILES["en"]).read_bytes()


def test_docs_check_refuses_a_file_without_markers(tmp_path, capsys):
    copy_generated_docs(tmp_path)
    for relative in docs.SKILL_FILES.values():
        (tmp_path / relative).write_text("# no tables here\n", encoding="utf-8")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert "<!-- BEGIN presets -->" in capsys.readouterr().err


def test_a_new_benchmark_row_makes_the_quoted_figures_stale(tmp_path, capsys):
    """A figure typed from the benchmark would survive a new measurement; a generated one is flagged, then rewritten."""
    copy_generated_docs(tmp_path)
    report_file = tmp_path / figures.BENCHMARK_FILE
    report = json.loads(report_file.read_text(encoding="utf-8"))
    rows = [row for row in report["rows"] if (row["case"], row["name"]) == ("thinking", figures.GENERATED)]
    figure = f"{rows[0]['s_per_step'] + 1.11:.2f}"  # a figure the committed report cannot already quote
    for row in rows:
        row["s_per_step"] = float(figure)
    report_file.write_text(json.dumps(report), encoding="utf-8")

    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    message = capsys.readouterr().err
    for stale in ("SKILL.md: the speed table is stale", "i18n/zh-CN/SKILL.md: the speed table is stale",
                  "references/grpo-config.md: the benchmark table is stale"):
        assert stale in message
    assert docs.main(["--write", "--root", str(tmp_path)]) == 0
    [line] = [line for line in (tmp_path / "references" / "grpo-config.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("| `thinking` | the project `new` makes, as it is | G 8, batch 8, 1024 tokens, ")]
    assert f" | {figure} |" in line  # the settings cell says what the row ran with (4-bit or bf16), as measured
    assert f"{figure} s/step" in (tmp_path / "SKILL.md").read_text(encoding="utf-8")


def test_the_speed_note_says_when_the_measured_default_is_no_longer_the_presets(tmp_path):
    """Rows measured before a preset's load_in_4bit changed are named as such under the table, until new rows come."""
    copy_generated_docs(tmp_path)
    stale = "Those rows held the base in 4 bits: the presets' default then"
    report_file = tmp_path / figures.BENCHMARK_FILE
    report = json.loads(report_file.read_text(encoding="utf-8"))
    defaults = [row for row in report["rows"] if row["name"] == figures.GENERATED]
    for value, said in ((True, True), ("auto", False)):  # 4-bit as before 2026-12-05; "auto" as run.py records now
        for row in defaults:
            row["settings"]["model"]["load_in_4bit"] = value
        report_file.write_text(json.dumps(report), encoding="utf-8")
        assert (stale in figures.render_speed("en", tmp_path)[2]) is said


def test_the_speed_note_names_a_later_measurement_on_another_card(tmp_path):
    """Rows merged from another GPU stay out of the table (it names the page's card), but when they measured the
    project `new` makes after the table's rows, the note says what they measured and on which card."""
    copy_generated_docs(tmp_path)
    report_file = tmp_path / figures.BENCHMARK_FILE
    report = json.loads(report_file.read_text(encoding="utf-8"))
    gpu = report["environment"]["gpu"]
    report["rows"] = [row for row in report["rows"] if row.get("run_gpu") in (None, gpu)]
    page_row = figures.measured(report, "thinking", figures.GENERATED)
    elsewhere = {**page_row, "s_per_step": 2.5, "peak_reserved_gib": 30.0, "run_gpu": "NVIDIA A100-SXM4-80GB"}
    for rows, said in (([], None), ([{**elsewhere, "run_date": "2026-01-01 00:00 UTC"}], None),
                       ([{**elsewhere, "run_date": "2099-01-01 00:00 UTC"}],
                        "Measured since on other cards, as `new` makes them now: `thinking` 2.50 s/step, 30.0 GiB "
                        "reserved (A100-SXM4-80GB, 2099-01-01).")):
        report_file.write_text(json.dumps({**report, "rows": report["rows"] + rows}), encoding="utf-8")
        header, table, note = figures.render_speed("en", tmp_path)
        assert ("Measured since" in note) is bool(said) and (said is None or note.endswith(said))
        assert [cells[2] for cells in table][1].startswith(f"{page_row['s_per_step']:.2f} s/step")
    # the hand-written loop measured on that card is quoted beside it; one of another card is not
    hand_written = figures.measured(report, "thinking", figures.HAND_WRITTEN)
    later = {**elsewhere, "run_date": "2099-01-01 00:00 UTC"}
    beside = [later, {**hand_written, "s_per_step": 9.0, "run_gpu": elsewhere["run_gpu"], "run_date": "2098-12-31"},
              {**hand_written, "s_per_step": 7.0, "run_gpu": "NVIDIA L4", "run_date": "2099-02-01"}]
    report_file.write_text(json.dumps({**report, "rows": report["rows"] + beside}), encoding="utf-8")
    assert figures.render_speed("en", tmp_path)[2].endswith(
        "`thinking` 2.50 s/step, 30.0 GiB reserved, against the hand-written Unsloth loop's 9.00 s/step on the same "
        "card (A100-SXM4-80GB, 2099-01-01; the loop 2098-12-31).")  # each with its own date


def test_docs_name_a_benchmark_row_they_quote_that_is_gone(tmp_path, capsys):
    copy_generated_docs(tmp_path)
    report_file = tmp_path / figures.BENCHMARK_FILE
    report = json.loads(report_file.read_text(encoding="utf-8"))
    report["rows"] = [row for row in report["rows"] if row["name"] != figures.HAND_WRITTEN]
    report_file.write_text(json.dumps(report), encoding="utf-8")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error: {figures.BENCHMARK_FILE} has no finished row standard/hand-written unsloth, which SKILL.md quotes\n")


@pytest.mark.parametrize("preset", figures.SPEED_PRESETS)
def test_the_speed_table_quotes_what_plan_prints(preset):
    """The estimate column against `grpo-skill plan` itself, run as the sentence under the table says."""
    result = CliRunner().invoke(main, ["plan", "--preset", preset, "--gpu", figures.PLAN_GPU, "--prompt-tokens",
                                       str(figures.PLAN_PROMPT_TOKENS)], env={"LANG": "C.UTF-8"})
    assert result.exit_code == 0, result.output
    reserved = re.search(r"~([\d.]+) GiB reserved", result.output).group(1)
    seconds = re.search(r"~([\d.]+) s per optimizer step", result.output).group(1)
    row = next(line for line in (REPO / SKILL).read_text(encoding="utf-8").splitlines()
               if line.startswith(f"| `{preset}` | ~"))
    assert f"~{reserved} GiB reserved, ~{seconds} s/step" in row


def test_docs_module_runs_as_a_script():
    result = subprocess.run([sys.executable, "-m", "grpo_skill.docs", "--check"], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr


def test_generated_tables_list_every_builtin():
    for lang in ROOTS:
        text = (ROOTS[lang] / SKILL).read_text(encoding="utf-8")
        for name, registered in {**plugins.presets(), **plugins.rewards()}.items():
            if registered.plugin.startswith(docs.BUILTIN_PREFIX):
                assert f"| `{name}` |" in text, f"{lang}: {name} is not in the generated tables"


# --- python blocks ----------------------------------------------------------------------------------------------


def python_blocks() -> list[Block]:
    return [block for doc in DOCS.values() for block in doc.blocks if block.lang == "python"]


def runnable(block: Block) -> bool:
    return re.search(r"^\s*assert ", block.code, re.MULTILINE) is not None


def is_rewards_file(block: Block) -> bool:
    return block.code.startswith("# rewards.py\n")


@pytest.fixture
def clean_registry():
    """Whatever a block registers (a project's rewards.py, a hand-registered plugin) is gone afterwards."""
    before = {name for name, _ in plugins.manager().list_name_plugin()}
    try:
        yield
    finally:
        for name, _ in plugins.manager().list_name_plugin():
            if name not in before:
                plugins.unregister(name)


@pytest.mark.parametrize("block", python_blocks(), ids=lambda b: b.where)
def test_python_blocks_compile(block):
    compile(block.code, block.where, "exec")


def runnable_blocks() -> list[tuple[Block, Block | None]]:
    """(block, the ``# rewards.py`` block before it in the same file, if any)."""
    found = []
    for doc in DOCS.values():
        rewards_file = None
        for block in doc.blocks:
            if block.lang != "python":
                continue
            if is_rewards_file(block):
                rewards_file = block
            elif runnable(block):
                found.append((block, rewards_file))
    return found


@pytest.mark.parametrize("block, rewards_file", runnable_blocks(), ids=lambda b: b.where if b else "")
def test_runnable_blocks_give_the_scores_they_claim(block, rewards_file, tmp_path, monkeypatch, clean_registry):
    if rewards_file is not None:
        (tmp_path / "rewards.py").write_text(rewards_file.code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(block.code, block.where, "exec"), {"__name__": "__docs__"})


def plugin_blocks() -> list[Block]:
    return [b for b in python_blocks() if "@hookimpl" in b.code and not runnable(b)]


@pytest.mark.parametrize("block", plugin_blocks(), ids=lambda b: b.where)
def test_plugin_blocks_register_cleanly(block, tmp_path, clean_registry):
    from grpo_skill import generator

    known_rewards, known_presets = set(plugins.rewards()), set(plugins.presets())
    module = types.ModuleType("docs_plugin")
    exec(compile(block.code, block.where, "exec"), module.__dict__)
    plugins.register(module, f"docs:{block.where}")
    new_rewards = set(plugins.rewards()) - known_rewards
    new_presets = set(plugins.presets()) - known_presets
    for name in new_rewards:
        reward = plugins.get_reward(name)
        assert reward.description and callable(reward.build())
    for name in new_presets:  # the preset renders a project whose config validates
        generator.render("from-preset", tmp_path, preset_name=name)


def test_rewards_files_in_the_docs_are_followed_by_a_runnable_try():
    for doc in DOCS.values():
        blocks = [b for b in doc.blocks if b.lang == "python"]
        for index, block in enumerate(blocks):
            if is_rewards_file(block) and "register_rewards" in block.code:
                rest = blocks[index + 1:]
                assert any(runnable(b) for b in rest) or "judge" in block.code, (
                    f"{block.where}: a rewards.py with no runnable block after it"
                )


# --- grpo-skill commands ------------------------------------------------------------------------------------------

QUICKSTART_PROJECT = "my-run"


def command_lines(block: Block) -> tuple[str, ...]:
    lines = []
    for line in strip_comments(Block(block.path, block.line, "bash", block.code)).splitlines():
        if line.strip():
            lines.append(line.strip())
    return tuple(lines)


def bash_blocks() -> list[Block]:
    return [b for doc in DOCS.values() for b in doc.blocks if b.lang in ("bash", "sh", "console", "shell")]


def quickstart_block() -> Block:
    for block in read_doc(REPO / SKILL).blocks:
        if block.lang == "bash" and any(line.startswith("python train.py") for line in command_lines(block)):
            return block
    raise AssertionError("SKILL.md has no bash block that runs python train.py (the quick start)")


class Runner:
    """Runs the lines of a docs bash block: cd, grpo-skill (in process), python train.py, git and printf into a file
    (subprocesses)."""

    def __init__(self, cwd: Path, monkeypatch):
        self.cwd = cwd
        self.monkeypatch = monkeypatch
        self.output = []  # what the grpo-skill commands printed, stdout and stderr, line by line

    def run_line(self, line: str, where: str) -> None:
        words = shlex.split(line)
        env = {}
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        words = [os.path.expanduser(word) for word in words]
        if words[0] == "cd":
            self.cwd = (self.cwd / words[1]).resolve()
            assert self.cwd.is_dir(), f"{where}: cd {words[1]}: no such folder"
        elif words[0] == "grpo-skill":
            self.grpo_skill(words[1:], env, where)
        elif words[:2] == ["python", "train.py"]:
            self.train(words[2:], env, where)
        elif words[0] == "pip":
            pass  # installing is not tested here
        elif words[0] == "printf" and ">" in words:  # a small data file, written by the shell as a reader's would be
            result = subprocess.run(["bash", "-c", line], cwd=self.cwd, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, f"{where}: {line} failed in {self.cwd}\n{result.stderr}"
        elif words[0] == "git":
            identity = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
                        for what, value in (("NAME", "docs"), ("EMAIL", "docs@localhost"))}
            result = subprocess.run(words, cwd=self.cwd, capture_output=True, text=True,
                                    env={**os.environ, **identity, **env}, timeout=60)
            assert result.returncode == 0, f"{where}: {line} failed in {self.cwd}\n{result.stderr}"
        else:
            raise AssertionError(f"{where}: the docs test does not know how to run {line!r}; teach it")

    def grpo_skill(self, args: list[str], env: dict, where: str) -> None:
        self.monkeypatch.chdir(self.cwd)
        before = {name for name, _ in plugins.manager().list_name_plugin()}
        try:
            result = CliRunner().invoke(main, args, prog_name="grpo-skill", env=env, catch_exceptions=True)
        finally:
            for name, _ in plugins.manager().list_name_plugin():
                if name not in before and name.startswith(PROJECT_PREFIX):
                    plugins.unregister(name)
        self.output += result.output.splitlines()
        assert result.exit_code == 0, (
            f"{where}: grpo-skill {shlex.join(args)} exited {result.exit_code} in {self.cwd}\n{result.output}"
            + (f"\n{result.exception!r}" if result.exception and not isinstance(result.exception, SystemExit) else "")
        )

    def train(self, args: list[str], env: dict, where: str) -> None:
        if "--max-steps" in args:
            index = args.index("--max-steps")
            del args[index:index + 2]
        result = subprocess.run(
            [sys.executable, "train.py", *args, "--max-steps", "2"], cwd=self.cwd, capture_output=True, text=True,
            env={**os.environ, **env}, timeout=600,
        )
        assert result.returncode == 0, f"{where}: python train.py failed in {self.cwd}\n{result.stderr[-3000:]}"


@pytest.fixture(autouse=True)
def english_locale(monkeypatch, tmp_path_factory):
    """A fixed language and a throw-away HOME (skill install writes to ~/.claude/skills by default)."""
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory):
    """Runs SKILL.md's quick start in an empty folder; the trained project it leaves is the other tests'."""
    block = quickstart_block()
    monkeypatch = pytest.MonkeyPatch()
    try:
        for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("LANG", "C.UTF-8")
        monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        runner = Runner(tmp_path_factory.mktemp("quickstart"), monkeypatch)
        for line in command_lines(block):
            runner.run_line(line, block.where)
    finally:
        monkeypatch.undo()
    project = runner.cwd
    assert project.name == QUICKSTART_PROJECT, f"the quick start should end inside {QUICKSTART_PROJECT}/"
    assert (project / "outputs" / "metrics.jsonl").is_file()
    return project


def unique_bash_blocks() -> list[Block]:
    seen, unique = set(), []
    for block in bash_blocks():
        lines = command_lines(block)
        if lines and lines not in seen:
            seen.add(lines)
            unique.append(block)
    return unique


def shown_outputs() -> dict[tuple[str, ...], list[Block]]:
    """The ```text blocks right after a bash block (blank lines between them at most), by the bash block's commands
    (the twins show the same commands' output)."""
    shown = {}
    for doc in DOCS.values():
        lines = doc.path.read_text(encoding="utf-8").splitlines()
        for block, after in zip(doc.blocks, doc.blocks[1:]):
            block_end = block.line + len(block.code.splitlines())  # its closing fence (0-based: the line after)
            between = lines[block_end + 1:after.line - 1]
            if block.lang == "bash" and after.lang == "text" and not any(line.strip() for line in between):
                shown.setdefault(command_lines(block), []).append(after)
    return shown


SHOWN = shown_outputs()


def assert_shows(output: list[str], shown: Block) -> None:
    """Each line of ``shown`` is in ``output``, in order (a line of ``...`` skips any number)."""
    rest = [line.rstrip() for line in output]
    for expected in (line.rstrip() for line in shown.code.splitlines()):
        if not expected or expected == "...":
            continue
        found = next((index for index, line in enumerate(rest) if expected.strip() in line), None)
        assert found is not None, f"{shown.where}: the commands did not print {expected!r}:\n" + "\n".join(output)
        rest = rest[found + 1:]


def test_the_docs_show_output_that_is_checked():
    """A ```text block under its commands is what they print (test_bash_blocks_run): at least the reward scores."""
    assert any(commands[0].startswith("grpo-skill rewards try") for commands in SHOWN)


@pytest.mark.parametrize("block", unique_bash_blocks(), ids=lambda b: b.where)
def test_bash_blocks_run(block, quickstart, tmp_path, monkeypatch):
    if command_lines(block) == command_lines(quickstart_block()):
        return  # the quickstart fixture ran this very block
    shutil.copytree(quickstart, tmp_path / QUICKSTART_PROJECT)
    runner = Runner(tmp_path, monkeypatch)
    for line in command_lines(block):
        runner.run_line(line, block.where)
    for shown in SHOWN.get(command_lines(block), []):
        assert_shows(runner.output, shown)


def unique_inline_commands() -> list[tuple[str, str]]:
    seen, unique = set(), []
    for path, doc in DOCS.items():
        for command in inline_commands(doc):
            if command not in seen:
                seen.add(command)
                unique.append((command, doc_id(path)))
    return unique


@pytest.mark.parametrize("command, where", unique_inline_commands(), ids=lambda v: v)
def test_inline_commands_run(command, where, quickstart, tmp_path, monkeypatch):
    shutil.copytree(quickstart, tmp_path / QUICKSTART_PROJECT)
    Runner(tmp_path / QUICKSTART_PROJECT, monkeypatch).run_line(command, where)


def test_every_grpo_skill_command_in_the_docs_is_tested():
    """No command hides where the tests above do not look (a ```text block, a table cell's synopsis)."""
    for doc in DOCS.values():
        for block in doc.blocks:
            if block.lang not in ("bash", "sh", "console", "shell"):
                for line in block.code.splitlines():
                    assert not line.lstrip().startswith("grpo-skill "), f"{block.where}: {line!r} is never run"
