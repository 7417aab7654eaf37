"""Weak results on docqa-dev: do nonsense queries come out weak, and answerable ones not?

Asks each of docqa-dev's four libraries (those ``docshelf eval`` builds under
``HOME/eval/docqa-<collection>-*``) its answerable questions (qa.jsonl), its
unanswerable ones (answers.jsonl, ``answerable: false``) and ``NONSENSE``, twenty
queries no library answers (letter salad, and everyday questions off every topic), in
hybrid mode, 10 hits each. Reports, per group: results called weak (every hit weak,
search/stages/weak.py), the best cosine of a top-10 hit with the query as typed, the best
share of the query's content words a top-10 hit holds, and how many answerable
questions' gold hits (right file and heading or page, in the top 10) were called weak.

    .venv/bin/python bench/weak.py --home DIR [--docqa ../shared/data/docqa-dev]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

COLLECTIONS = ("vault", "pdfs", "rust-book", "flask-docs")
NONSENSE = (
    "xqzv blorf wibble",
    "asdf qwerty zxcv",
    "flurbo gnarp snizzle",
    "klaatu barada nikto",
    "purple monkey dishwasher",
    "best pizza dough recipe for neapolitan pizza",
    "how tall is mount kilimanjaro",
    "who won the 1986 football world cup",
    "symptoms of vitamin d deficiency",
    "train times from berlin to munich",
    "knitting a scarf with cable stitches",
    "how to repot an orchid",
    "lyrics of bohemian rhapsody",
    "price of bitcoin today",
    "zzzz",
    "qwpoeiruty",
    "banana bread without eggs",
    "capital city of mongolia",
    "yoga poses for back pain",
    "the weather in lisbon in april",
)


def gold_rank(question: dict[str, Any], hits: list[Any]) -> int | None:
    for i, h in enumerate(hits):
        c = h.citation
        for a in question["answers"]:
            if not h.document.path.endswith(a["path"]):
                continue
            if a.get("page") is not None:
                if c.page_start is not None and c.page_start <= a["page"] <= (c.page_end or 0):
                    return i
            elif a.get("heading") in c.heading_path:
                return i
    return None


def library(home: Path, collection: str) -> Path:
    found = sorted((home / "eval").glob(f"docqa-{collection}-*"))
    if not found:
        raise SystemExit(f"no library for {collection} under {home}/eval: run `docshelf eval`")
    return found[-1]


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True, help="where `docshelf eval` built them")
    ap.add_argument("--docqa", type=Path, default=root.parent / "shared/data/docqa-dev")
    args = ap.parse_args()
    import numpy as np

    from docshelf.search.citing import query_words
    from docshelf.search.evidence import stem, words
    from docshelf.shelf import Shelf

    questions = [json.loads(line) for line in (args.docqa / "qa.jsonl").open()]
    answers = [json.loads(line) for line in (args.docqa / "answers.jsonl").open()]
    unanswerable = [a for a in answers if a.get("answerable") is False]
    groups: dict[str, list[tuple[bool, float, float]]] = {}
    gold_weak = gold_found = 0
    for collection in COLLECTIONS:
        asked = [
            (q["question"], "answerable", q) for q in questions if q["collection"] == collection
        ]
        asked += [
            (u["question"], "unanswerable", u)
            for u in unanswerable
            if u["collection"] == collection
        ]
        asked += [(text, "nonsense", None) for text in NONSENSE]
        with Shelf(library(args.home, collection), embed_purpose="query") as shelf:
            embedder = shelf.retriever.embedder
            assert embedder is not None
            for text, group, question in asked:
                result = shelf.search(text, limit=10)
                hits = result.hits
                query = embedder.embed([text])[0]
                vectors = shelf.retriever.store.get_vectors([h.chunk.id for h in hits])
                cosine = max((float(query @ v) for v in vectors.values()), default=0.0)
                wanted = query_words(text)
                held = max(
                    (len(wanted & {stem(w) for w in words(h.chunk.retrieval_text)}) for h in hits),
                    default=0,
                ) / max(len(wanted), 1)
                groups.setdefault(group, []).append((result.weak, cosine, held))
                if question is not None and group == "answerable":
                    rank = gold_rank(question, hits)
                    if rank is not None:
                        gold_found += 1
                        gold_weak += hits[rank].weak
    cosine_head = "best cosine: min / p10 / p50 / p90 / max"
    print(f"| queries | weak results | {cosine_head} | best word share: p50 / p90 |")
    print("|---|---|---|---|")
    for group in ("answerable", "unanswerable", "nonsense"):
        rows = groups[group]
        cos = np.array([c for _, c, _ in rows])
        share = np.array([w for _, _, w in rows])
        weak = sum(w for w, _, _ in rows)
        print(
            f"| {group} ({len(rows)}) | {weak} | "
            + " / ".join(f"{v:.3f}" for v in np.percentile(cos, [0, 10, 50, 90, 100]))
            + f" | {np.median(share):.2f} / {np.percentile(share, 90):.2f} |"
        )
    print(f"gold hits in the top 10 called weak: {gold_weak} of {gold_found}")


if __name__ == "__main__":
    main()
