"""Every reward plugin shown in README.md, SKILL.md and references/ (and their zh-CN twins) keeps the reward contract: each python block
that registers rewards is run, and each reward it registers is checked with grpo_skill.testing.check_reward
(awkward completions, as strings and as chat messages)."""

import re
import types
from pathlib import Path

import pytest

from grpo_skill import plugins
from grpo_skill.testing import check_reward

REPO = Path(__file__).resolve().parents[1]
ZH = REPO / "i18n" / "zh-CN"
DOCS = [REPO / "README.md", REPO / "SKILL.md", *sorted((REPO / "references").glob("*.md")),
        *[ZH / name for name in ("README.md", "SKILL.md") if (ZH / name).is_file()],
        *sorted((ZH / "references").glob("*.md"))]  # the twins' code carries its own comments
REGISTERS = re.compile(r"register\(Reward\(\s*[\"'\w]")  # a real registration, not "register(Reward(...))"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def reward_plugin_blocks():
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            code = match.group(1)
            if "@hookimpl" in code and REGISTERS.search(code):
                line = text[: match.start()].count("\n") + 1
                found.append(pytest.param(code, id=f"{path.relative_to(REPO)}:{line}"))
    return found


def test_the_docs_show_reward_plugins():
    assert len(reward_plugin_blocks()) >= 3  # README's shouting, SKILL.md's concise, references' examples


@pytest.mark.parametrize("code", reward_plugin_blocks())
def test_doc_reward_plugins_keep_the_contract(code):
    before = set(plugins.rewards())
    module = types.ModuleType("doc_plugin")
    exec(compile(code, "doc_plugin", "exec"), module.__dict__)
    plugins.register(module, "doc-plugin")
    try:
        added = set(plugins.rewards()) - before
        assert added, "the block registers no reward"
        for name in sorted(added):
            # answer: a dataset column as the examples' datasets have it; extra columns reach **kwargs unused
            scores = check_reward(name, answer="42")
            assert len(scores) > 1
    finally:
        plugins.unregister("doc-plugin")
