"""Checks a project made for task.md (invoice emails -> one JSON object, gold object column, Qwen3-4B, 2 x 24 GB).

    python evals/tasks/json-extraction-2gpu/check.py PROJECT [--model STAND_IN]
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from checklib import Task, main  # noqa: E402


def asks_for_json(config):
    if "json" not in (config.dataset.get("system_prompt") or "").lower():
        return ["task: the emails do not ask for JSON; say so in [dataset] system_prompt (one JSON object with "
                "vendor, invoice_number, date, total, currency and nothing else)"]
    return []


def runs_on_two_gpus(config):
    if config.model["backend"] == "unsloth":
        return ["task: backend = 'unsloth' trains on one GPU only; the user has two: 'auto' or 'trl', and "
                "`accelerate launch --config_file accelerate/ddp.yaml --num_processes 2 train.py`"]
    if not (config.project_dir / "accelerate" / "ddp.yaml").is_file():
        return ["task: the project has no accelerate/ddp.yaml to launch on two GPUs"]
    return []


TASK = Task(
    name="json-extraction-2gpu", folder=HERE, data_file="data/invoices.json", prompt_column="email",
    gold_column="expected", model_pattern=r"qwen3-4b(?!-thinking)(?!-base)", model_label="Qwen3-4B",
    gpu_memory_gib=24, gpus=2, extra=(asks_for_json, runs_on_two_gpus),
)

if __name__ == "__main__":
    sys.exit(main(TASK))
