"""Trigger queries against the skill's description: a static check, not a trigger eval.

An assistant decides from a skill's ``description`` whether to load it. This reads the terms the description says
to trigger on (English: after "Use it when the user mentions" and "also for"; Chinese: after "当用户提到" and
"英文请求同样适用") and requires each should-trigger query in ``triggers/<lang>.jsonl`` to name one of them and each
near-miss to name none. It shows that the description names the words users use and does not claim the
neighbouring tasks' words; it cannot show that an assistant loads the skill (that needs an assistant: see
docs/skill-evals.md).

    python evals/check_triggers.py [--lang en|zh-CN] [--json]

Exit status: 0 when every query is classified as labelled, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKILLS = {"en": REPO / "SKILL.md", "zh-CN": REPO / "i18n" / "zh-CN" / "SKILL.md"}
QUERIES = Path(__file__).resolve().parent / "triggers"
# where each description lists its trigger terms: (start marker, end marker or None)
SECTIONS = {
    "en": [("Use it when the user mentions", ";"), ("also for", None)],
    "zh-CN": [("当用户提到", "时使用"), ("英文请求同样适用：", None)],
}


def description(lang: str) -> str:
    from grpo_skill.skillfiles import frontmatter

    return frontmatter(SKILLS[lang])["description"]


def trigger_terms(text: str, lang: str) -> list[str]:
    """The terms the description names as triggers, in its order."""
    terms = []
    for start, end in SECTIONS[lang]:
        at = text.find(start)
        if at < 0:
            raise ValueError(f"the {lang} description has no {start!r}: update SECTIONS in {Path(__file__).name}")
        part = text[at + len(start):]
        part = part[: part.find(end)] if end and end in part else part
        for item in re.split(r",\s*|、|，", part.strip().rstrip(".。")):
            item = re.sub(r"^(?:or\s+)?(?:asks\s+)?(?:或比较\s*)?", "", item.strip()).strip()
            # "reasoning or thinking models" names two terms
            pair = re.fullmatch(r"(\w+) or (\w+) (.+)", item)
            terms += [f"{pair.group(1)} {pair.group(3)}", f"{pair.group(2)} {pair.group(3)}"] if pair else [item]
    return list(dict.fromkeys(term for term in terms if term))


def hits(query: str, terms: list[str]) -> list[str]:
    found = []
    for term in terms:
        stem = term[:-1] if term.endswith("s") and term.isascii() else term  # "thinking models" ~ "thinking model"
        pattern = re.escape(stem).replace(r"\ ", r"\s*")
        if re.search(rf"(?<![A-Za-z]){pattern}", query, re.IGNORECASE):
            found.append(term)
    return found


def classify(lang: str) -> dict:
    terms = trigger_terms(description(lang), lang)
    rows = [json.loads(line) for line in (QUERIES / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    results = []
    for row in rows:
        matched = hits(row["query"], terms)
        results.append({**row, "matched": matched, "ok": bool(matched) == row["trigger"]})
    used = {term for result in results if result["trigger"] for term in result["matched"]}
    return {"lang": lang, "terms": terms, "queries": results,
            "unused_terms": [term for term in terms if term not in used]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(SKILLS), action="append", help="default: both")
    parser.add_argument("--json", action="store_true", help="print the classification as JSON")
    args = parser.parse_args(argv)
    reports = [classify(lang) for lang in args.lang or sorted(SKILLS)]
    failed = [(report["lang"], query) for report in reports for query in report["queries"] if not query["ok"]]
    if args.json:
        print(json.dumps(reports, ensure_ascii=False, indent=2))
    else:
        for report in reports:
            good = sum(query["ok"] for query in report["queries"])
            print(f"{report['lang']}: {good}/{len(report['queries'])} queries classified as labelled; "
                  f"{len(report['terms'])} trigger terms, never used by a should-trigger query: "
                  f"{', '.join(report['unused_terms']) or 'none'}")
        for lang, query in failed:
            wanted = "should trigger but names no trigger term" if query["trigger"] else \
                f"should not trigger but names {', '.join(query['matched'])}"
            print(f"FAIL {lang}: {query['query']!r} {wanted}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
