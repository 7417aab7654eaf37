"""The lexical stage alone on a library built by bench/ann.py (``--home DIR``): FTS5 as
it is, FTS5 with the most common query words dropped (cheaper FTS5 usage: a word in
more than a fraction of the snippets adds almost nothing to BM25 but makes FTS5 score
every row it matches), and the tantivy sidecar (search/engines/tantivy.py). Reports p50/p95
of each over bench/ann.py's 200 queries (100 candidates, as hybrid search asks) and
the overlap of each variant's top 100 with FTS5's.

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/lexical.py --home DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search import FixedQueries
from docshelf.search.engines import own_engines
from docshelf.search.query import lexical_terms
from docshelf.shelf import Shelf
from docshelf.store.base import SearchFilters
from docshelf.store.sqlite import SQLiteStore

NONE = SearchFilters()
LIMIT = 100


def cuts(values: list[float]) -> tuple[float, float]:
    c = statistics.quantiles(values, n=100)
    return c[49], c[94]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True)
    args = ap.parse_args()
    queries = [lexical_terms(q) for q in json.loads((args.home / "queries.json").read_text())]
    with Shelf(args.home, embedder=FixedQueries({})) as shelf:
        store = shelf.store
        assert isinstance(store, SQLiteStore)
        index = shelf.lexical_index
        assert index is not None and index.path == "tantivy", "build the lexical index first"
        total = store.snippet_count()
        words = {w for q in queries for w in q}
        df = {  # untimed: how many snippets each query word matches
            w: int(store._q("SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", [w])[0][0])
            for w in words
        }

        def dropping(share: float) -> Callable[[list[str]], list[tuple[str, float]]]:
            def run(terms: list[str]) -> list[tuple[str, float]]:
                kept = [t for t in terms if df[t] <= share * total] or [
                    min(terms, key=lambda t: df[t])
                ]
                return own_engines(store).lexical.search(kept, LIMIT, NONE)

            return run

        variants: dict[str, Callable[[list[str]], list[tuple[str, float]]]] = {
            "FTS5": lambda terms: own_engines(store).lexical.search(terms, LIMIT, NONE),
            "FTS5, words in > 50% dropped": dropping(0.5),
            "FTS5, words in > 10% dropped": dropping(0.1),
            "FTS5, words in > 2% dropped": dropping(0.02),
            "tantivy": lambda terms: index.search(terms, LIMIT, NONE),
        }
        reference = {
            i: {c for c, _ in own_engines(store).lexical.search(q, LIMIT, NONE)}
            for i, q in enumerate(queries)
        }
        print(
            f"{total:,} snippets; query words matching > 10% of them: "
            f"{sum(df[w] > 0.1 * total for w in words)} of {len(words)}"
        )
        for name, run in variants.items():
            for q in queries[:20]:
                run(q)
            times = []
            overlap = 0
            for i, q in enumerate(queries):
                t = time.perf_counter()
                hits = run(q)
                times.append((time.perf_counter() - t) * 1000)
                overlap += len({c for c, _ in hits} & reference[i])
            p50, p95 = cuts(times)
            share = overlap / max(1, sum(len(r) for r in reference.values()))
            print(f"  {name:<32} p50 / p95 {p50:6.1f} / {p95:6.1f} ms; top-100 overlap {share:.3f}")


if __name__ == "__main__":
    main()
