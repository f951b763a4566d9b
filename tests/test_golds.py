"""`new` and `check` name gold answers the accuracy rewards cannot use: unreadable ones (their completions would score
None all run long) and sentences (read as the number in them), before a run spends hours on them."""

import json

ROWS = [
    {"question": "What is 7 x 6?", "answer": "42"},
    {"question": "What is 2 to the power of?", "answer": "n^"},  # math-verify cannot read it
    {"question": "Is 91 prime?", "answer": "No, 91 is not prime, because 91 = 7 times 13."},  # read as 13
    {"question": "What is 9 x 9?", "answer": "81"},
]
UNREADABLE = ("warning: accuracy: 1 of the first 4 gold answers in 'answer' cannot be read (row 2: \"n^\"): their "
              "completions would score None, left out of the reward; write each as a number, an expression or a "
              "short text")
SENTENCE = ("warning: accuracy: 1 of the first 4 gold answers in 'answer' are sentences (row 3: \"No, 91 is not prime, "
            "because 91 = 7 t...\"); a sentence is read as the number (or the text) found in it, not as its meaning: "
            "give the final answer alone, e.g. 42")


def write_rows(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_new_and_check_name_unreadable_and_sentence_golds(cli, tmp_path, english):
    data = write_rows(tmp_path / "maths.jsonl", ROWS)
    made = cli("new", "maths", "--preset", "thinking", "--dataset", str(data), "--prompt-column", "question",
               "--answer-column", "answer", "--reward", "accuracy:1", cwd=tmp_path)
    assert made.stderr.splitlines() == [UNREADABLE, SENTENCE]  # said, and the project made: it runs
    checked = cli("check", "maths", cwd=tmp_path)
    assert [line for line in checked.stderr.splitlines() if line.startswith("warning:")] == [UNREADABLE, SENTENCE]
    listed = json.loads(cli("check", "maths", "--json", cwd=tmp_path).stdout)["warnings"]
    assert [f"warning: {line}" for line in listed] == [UNREADABLE, SENTENCE]


def test_a_null_gold_is_named_as_unreadable(cli, tmp_path, english):
    """A null in the answer column reaches the reward as None (it scores None all run), not as the text "null"."""
    data = write_rows(tmp_path / "maths.jsonl", [ROWS[0], {"question": "What is 5 + 5?", "answer": None}])
    made = cli("new", "maths", "--preset", "thinking", "--dataset", str(data), "--prompt-column", "question",
               "--answer-column", "answer", "--reward", "accuracy:1", cwd=tmp_path)
    assert made.stderr.splitlines() == [
        "warning: accuracy: 1 of the first 2 gold answers in 'answer' cannot be read (row 2: \"null\"): their "
        "completions would score None, left out of the reward; write each as a number, an expression or a short text"]


def test_golds_every_answer_reward_can_read_are_not_named(cli, tmp_path, english):
    capital = {"question": "Capital of France?", "answer": "Paris"}
    data = write_rows(tmp_path / "maths.jsonl", [ROWS[0], ROWS[3], capital])
    made = cli("new", "maths", "--preset", "thinking", "--dataset", str(data), "--prompt-column", "question",
               "--answer-column", "answer", "--reward", "accuracy:1", cwd=tmp_path)
    assert "warning" not in made.stderr
    assert "warning" not in cli("check", "maths", cwd=tmp_path).stderr
