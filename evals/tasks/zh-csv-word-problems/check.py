"""Checks a project made for task.md (a Chinese CSV with Chinese answers, Qwen3-1.7B without thinking, 24 GB).

    python evals/tasks/zh-csv-word-problems/check.py PROJECT [--model STAND_IN]
"""

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from checklib import Task, main  # noqa: E402


def thinking_off(config):
    if (config.dataset.get("chat_template_kwargs") or {}).get("enable_thinking") is not False:
        return ["task: the user asked for answers without thinking; set [dataset] chat_template_kwargs = "
                "{ enable_thinking = false } (Qwen3-1.7B thinks unless its template is told not to)"]
    return []


def speaks_chinese(config):
    answers = config.project_dir / ".copier-answers.yml"
    lang = (yaml.safe_load(answers.read_text(encoding="utf-8")) or {}).get("lang") if answers.is_file() else None
    if lang != "zh-CN":
        return [f"task: the project's language is {lang!r}; the user writes Chinese: `grpo-skill new --lang zh-CN`"]
    return []


TASK = Task(
    name="zh-csv-word-problems", folder=HERE, data_file="data/word_problems.csv", prompt_column="题目",
    gold_column="答案", model_pattern=r"qwen3-1\.7b(?!-base)", model_label="Qwen3-1.7B", gpu_memory_gib=24,
    extra=(thinking_off, speaks_chinese),
)

if __name__ == "__main__":
    sys.exit(main(TASK))
