"""Context sizes on docqa-dev: how much of a file each context mode returns.

For the top hybrid hit of each of docqa-dev's 80 questions, in the four libraries
``docshelf eval`` builds under ``HOME/eval/docqa-<collection>-*``: the characters each
mode of ``Shelf.context`` returns (cited as the search cited it), and their share of the
hit's file (its snippets' text). Run it with another tree first on ``PYTHONPATH`` for the
code before a change.

    .venv/bin/python bench/context_sizes.py --home DIR [--docqa ../shared/data/docqa-dev]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.weak import COLLECTIONS, library

MODES = ("snippet-window", "parent-section", "section-neighborhood")


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True, help="where `docshelf eval` built them")
    ap.add_argument("--docqa", type=Path, default=root.parent / "shared/data/docqa-dev")
    args = ap.parse_args()
    import numpy as np

    from docshelf.model import Tier
    from docshelf.shelf import Shelf

    questions = [json.loads(line) for line in (args.docqa / "qa.jsonl").open()]
    shares: dict[str, list[float]] = {m: [] for m in MODES}
    sizes: dict[str, list[int]] = {m: [] for m in MODES}
    for collection in COLLECTIONS:
        with Shelf(library(args.home, collection), embed_purpose="query") as shelf:
            for q in questions:
                if q["collection"] != collection:
                    continue
                hits = shelf.search(q["question"], limit=1).hits
                if not hits:
                    continue
                hit = hits[0]
                snippets = shelf.store.chunks_of_document(hit.document.id, Tier.SNIPPET)
                whole = sum(len(s.text) for s in snippets) + 2 * (len(snippets) - 1)
                for mode in MODES:
                    text = shelf.context(hit.chunk.id, mode, anchor=hit.citation.anchor).text
                    shares[mode].append(len(text) / whole)
                    sizes[mode].append(len(text))
    print("| mode | share of the file: mean / p50 / p90 | characters: p50 / p90 / max |")
    print("|---|---|---|")
    for mode in MODES:
        share, size = np.array(shares[mode]), np.array(sizes[mode])
        print(
            f"| {mode} | {share.mean():.2f} / {np.median(share):.2f} / "
            f"{np.percentile(share, 90):.2f} | {np.median(size):.0f} / "
            f"{np.percentile(size, 90):.0f} / {size.max()} |"
        )


if __name__ == "__main__":
    main()
