"""The installed skill: `skill path` names its SKILL.md, and it mentions only files it ships (issue 22)."""

import re
from pathlib import Path

import pytest

from grpo_skill import skillfiles


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_skill_path_prints_the_installed_skill_md(cli, lang):
    printed = cli("skill", "path", "--lang", lang).stdout.strip()
    assert printed == str(skillfiles.skill_files(lang)["SKILL.md"])
    assert printed.endswith("SKILL.md") and skillfiles.skill_name(Path(printed)) == skillfiles.SKILL_NAMES[lang]


def test_skill_help_says_how_to_find_it(cli):
    assert "grpo-skill skill path" in cli("skill", "--help", env={"LANG": "C.UTF-8"}).stdout


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_skill_names_no_repository_file_it_does_not_ship(lang):
    """docs/ is the repository's, not the skill's: a mention of it must be a link to the repository."""
    for name, path in skillfiles.skill_files(lang).items():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(?<![/\w])docs/[\w.-]+\.md", text):
            # the link's text, followed by the repository's address: [docs/x.md](https://github.com/...)
            assert text[match.end():match.end() + 2] == "](", \
                f"{name}: {match.group()} is not in the installed skill; link the repository instead"
