"""A local data file reaches the rewards as the user wrote it (skill/runtime/data.py): datasets' readers would turn a
date string into a timestamp, 007 into 7 and give objects one another's keys."""

import json
import shutil
from pathlib import Path

from grpo_skill import project
from grpo_skill.runtime import data

TASKS = Path(__file__).resolve().parents[1] / "evals" / "tasks"
INVOICES = TASKS / "json-extraction-2gpu" / "data" / "invoices.json"


def test_a_gold_object_column_scores_its_own_gold_full_marks_end_to_end(cli, tmp_path, english):
    (tmp_path / "data").mkdir()
    shutil.copy(INVOICES, tmp_path / "data" / "invoices.json")
    cli("new", "invoice", "--preset", "standard", "--dataset", "data/invoices.json", "--prompt-column", "email",
        "--answer-column", "expected", "--reward", "json_match:1", cwd=tmp_path)
    config = project.load(tmp_path / "invoice" / "config.toml")
    dataset = data.load_dataset(config)  # as train.py loads it
    golds = dataset["expected"]
    assert golds == [row["expected"] for row in json.loads(INVOICES.read_text(encoding="utf-8"))]
    assert golds[0]["date"] == "2026-01-01"  # a string, as in the file
    [json_match] = config.build_rewards(None)
    perfect = [json.dumps(gold) for gold in golds]  # the thinking is off (preset standard): all of it is the answer
    scores = json_match(prompts=dataset["email"], completions=perfect, completion_ids=None, expected=golds)
    assert scores == [1.0] * 24


def test_json_values_keep_their_kind_and_objects_their_own_keys(tmp_path):
    rows = [{"q": "a", "answer": "2024-03-05", "gold": {"a": 1}, "mixed": 5},
            {"q": "b", "answer": "2024-03-06", "gold": {"b": [2, 3]}, "mixed": "five"},
            {"q": "c", "answer": "007", "gold": {"c": None}, "mixed": None}]
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    as_list = tmp_path / "rows.json"
    as_list.write_text(json.dumps(rows))
    as_columns = tmp_path / "columns.json"
    as_columns.write_text(json.dumps({key: [row[key] for row in rows] for key in rows[0]}))
    for path in (jsonl, as_list, as_columns):
        assert data.load_file(path).to_list() == rows, path.name


def test_csv_cells_stay_text_as_written(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("题目,答案\n小丽几点到校？,8点05分\n邮编是多少？,007\n对吗？,True\n空的？,\n\n", encoding="utf-8")
    loaded = data.load_file(path)
    assert loaded["答案"] == ["8点05分", "007", "True", ""]
    words = data.load_file(TASKS / "zh-csv-word-problems" / "data" / "word_problems.csv")
    assert "8点05分" in words["答案"] and len(words) == 24
