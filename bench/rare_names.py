"""A rare name searched alone: does the document it names come first?

The dev sets' questions hold several words, most of them common, so none of them tells
how fusion treats a query of one rare word: a tool's, a person's or a module's name.
This builds such queries from a library's own titles: each word of a document's title
(five characters or more) that fewer than ``--holders`` snippets hold, the titled
document among them, is searched alone. It reports, per mode, how often a snippet of
that document is first (hit@1), in the top five (hit@5), and MRR@10; then the hybrid
search with the rare word's few holders put first (``FusionSettings.few_lexical``) and
without, query by query (better, worse, the same).

    DOCSHELF_HOME=DIR .venv/bin/python bench/rare_names.py [--holders 10] [--few 10]
    # DIR: any library, e.g. the docqa-dev collections `docshelf eval` caches
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics

from docshelf.shelf import Shelf

TITLE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{4,}")


def rare_title_words(shelf: Shelf, holders: int) -> list[tuple[str, str]]:
    """(word, document id): a word of the document's title that fewer than ``holders``
    snippets hold, the document among them (each word once, from its first title)."""
    seen: set[str] = set()
    cases = []
    for doc in shelf.documents():
        for word in TITLE_WORD.findall(doc.title):
            word = word.lower()
            if word in seen:
                continue
            seen.add(word)
            held = shelf.search(word, limit=holders, mode="lexical").hits
            if len(held) < holders and any(h.chunk.document_id == doc.id for h in held):
                cases.append((word, doc.id))
    return cases


def rank(shelf: Shelf, query: str, document_id: str, mode: str) -> int:
    """The place (1-based) of the document's first snippet in the top 10; 11 if absent."""
    for n, hit in enumerate(shelf.search(query, limit=10, mode=mode).hits, start=1):
        if hit.chunk.document_id == document_id:
            return n
    return 11


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--holders", type=int, default=10, help="a word rarer than this")
    ap.add_argument("--few", type=int, default=None, help="few_lexical when on (the default's)")
    args = ap.parse_args()
    with Shelf() as shelf:
        retriever = shelf.retriever
        on = retriever.fusion
        if args.few is not None:
            on = dataclasses.replace(on, few_lexical=args.few)
        off = dataclasses.replace(on, few_lexical=0)
        cases = rare_title_words(shelf, args.holders)
        if not cases:
            print("no title word is that rare here")
            return
        ranks: dict[str, list[int]] = {}
        for label, mode, fusion in (
            ("lexical", "lexical", off),
            ("vector", "vector", off),
            ("hybrid, few holders not first", "hybrid", off),
            (f"hybrid, few holders first (few_lexical {on.few_lexical})", "hybrid", on),
        ):
            retriever.fusion = fusion
            ranks[label] = [rank(shelf, word, doc, mode) for word, doc in cases]
    print(f"{len(cases)} title words that fewer than {args.holders} snippets hold, each alone")
    print("| mode | hit@1 | hit@5 | MRR@10 |\n|---|---|---|---|")
    for label, got in ranks.items():
        hit1 = sum(r == 1 for r in got) / len(got)
        hit5 = sum(r <= 5 for r in got) / len(got)
        mrr = statistics.mean(1 / r if r <= 10 else 0.0 for r in got)
        print(f"| {label} | {hit1:.3f} | {hit5:.3f} | {mrr:.3f} |")
    before, after = list(ranks.values())[2:]
    better = sum(a < b for b, a in zip(before, after, strict=True))
    worse = sum(a > b for b, a in zip(before, after, strict=True))
    print(f"few holders first, against not: {better} better, {worse} worse, the rest the same")


if __name__ == "__main__":
    main()
