"""Offline (extractive) answers on docqa-dev: does the answer hold the question's evidence?

docqa-dev's 80 questions each carry an ``evidence`` line, the sentence of the cited
place that answers it. This asks every question of one library holding all four
collections (the vault, the papers, the book, the RST docs — as a person would keep
them, in one library) with no LLM, and counts the answers that hold the evidence: at
least ``--hold`` of its words (lower-cased letters and digits) among the answer's.
Reported overall and per question kind. Deterministic for a given library and code;
run it with another tree first on ``PYTHONPATH`` for the code before a change.

    .venv/bin/python bench/answers.py --home DIR [--docqa ../shared/data/docqa-dev] \\
        [--per-query OUT.jsonl] [--run RUN.jsonl]

With ``--run``, every question of qa.jsonl and every unanswerable one of answers.jsonl
is asked, and the answers are written as docqa-dev's ``score_answers.py`` reads them
(``answered``: the answer's own; each citation's path below its collection):

    python3 ../shared/data/docqa-dev/score_answers.py RUN.jsonl

The library in ``--home`` is built on first use (``docshelf add`` of each collection
with the configured model) and reused after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def build(home: Path, corpora: Path) -> None:
    from docshelf.shelf import Shelf

    with Shelf(home) as shelf:
        for collection in sorted(p for p in corpora.iterdir() if p.is_dir()):
            report = shelf.add(collection)
            print(f"  added {collection.name}: {report.added} documents, {report.failed} failed")


def run_file(shelf: Any, docqa: Path, out: Path) -> None:
    """Every question, answerable or not, asked and written for ``score_answers.py``."""
    corpora = (docqa / "corpora").resolve()
    asked = [json.loads(line) for line in (docqa / "qa.jsonl").open()]
    asked += [
        a for a in map(json.loads, (docqa / "answers.jsonl").open()) if a.get("answerable") is False
    ]
    with out.open("w") as fh:
        for q in asked:
            answer = shelf.ask(q["question"])
            root = corpora / q["collection"]
            cites = [
                {
                    "path": os.path.relpath(c.citation.path, root),
                    "heading": c.citation.heading_path[-1] if c.citation.heading_path else None,
                    "page": c.citation.page_start,
                }
                for c in answer.citations
            ]
            row = {"id": q["id"], "answered": answer.answered, "answer": answer.answer}
            fh.write(json.dumps({**row, "citations": cites}) + "\n")


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True, help="the library (built if empty)")
    ap.add_argument("--docqa", type=Path, default=root.parent / "shared/data/docqa-dev")
    ap.add_argument("--hold", type=float, default=0.8, help="share of the evidence's words")
    ap.add_argument("--per-query", type=Path, help="write each question's answer here")
    ap.add_argument("--run", type=Path, help="write a run file for score_answers.py here")
    args = ap.parse_args()
    os.environ["DOCSHELF_LLM_URL"] = ""  # the offline answer, whatever is configured
    if not (args.home / "docshelf.db").exists():
        build(args.home, args.docqa / "corpora")
    from docshelf.shelf import Shelf

    questions = [json.loads(line) for line in (args.docqa / "qa.jsonl").open()]
    rows = []
    with Shelf(args.home, embed_purpose="query") as shelf:
        for q in questions:
            answer = shelf.ask(q["question"])
            evidence = words(q["evidence"])
            held = len(evidence & words(answer.answer)) / max(1, len(evidence))
            rows.append({"id": q["id"], "kind": q["kind"], "held": held, "answer": answer.answer})
        if args.run:
            run_file(shelf, args.docqa, args.run)
    if args.per_query:
        args.per_query.write_text("".join(json.dumps(r) + "\n" for r in rows))
    kinds = sorted({r["kind"] for r in rows})
    print(f"evidence held (>= {args.hold:.0%} of its words), {len(rows)} questions:")
    print("| group | answers holding it | mean share of its words |")
    print("|---|---|---|")
    for name, group in [("all", rows)] + [(k, [r for r in rows if r["kind"] == k]) for k in kinds]:
        hits = sum(r["held"] >= args.hold for r in group)
        mean = sum(r["held"] for r in group) / len(group)
        print(f"| {name} ({len(group)}) | {hits} | {mean:.3f} |")


if __name__ == "__main__":
    main()
