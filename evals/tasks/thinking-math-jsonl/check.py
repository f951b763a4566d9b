"""Checks a project made for task.md (maths JSONL, gold column `final`, Qwen3-4B-Thinking-2507, one 24 GB card).

    python evals/tasks/thinking-math-jsonl/check.py PROJECT [--model STAND_IN]
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from checklib import Task, main  # noqa: E402

MIN_COMPLETION_TOKENS = 1024  # Thinking-2507 reasons for hundreds to thousands of tokens before </think>


def thinking_budget(config):
    budget = config.grpo.get("max_completion_length", config.preset.grpo.get("max_completion_length"))
    if budget is None or budget < MIN_COMPLETION_TOKENS:
        return [f"task: max_completion_length = {budget}: the model thinks before it answers, and completions cut "
                f"before </think> all score alike; give it at least {MIN_COMPLETION_TOKENS}"]
    return []


TASK = Task(
    name="thinking-math-jsonl", folder=HERE, data_file="data/problems.jsonl", prompt_column="question",
    gold_column="final", model_pattern=r"qwen3-4b-thinking-2507", model_label="Qwen3-4B-Thinking-2507",
    gpu_memory_gib=24, extra=(thinking_budget,),
)

if __name__ == "__main__":
    sys.exit(main(TASK))
