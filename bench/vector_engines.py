"""Vector search by each engine of the user's own (search/engines/external.py) next to the
default (the usearch sidecar, search/engines/usearch.py) and the exact scan, on one
synthetic library, in one run.

The library is bench/search.py's (documents of ten snippets, Zipf vocabulary, 384-d
vectors around 200 centres, spread 1.0). For each engine, in turn on the same store:

- ``build_s``: the engine filled from the store (``maintain(force=True)``);
- ``recall@10``: the vector stage's top 10 against an exact scan;
- ``vector p50/p95``: the vector stage alone, as hybrid search asks it (110 candidates),
  unfiltered and with a filter of 1% of the documents (pushed down to the engine);
- ``hybrid p50/p95``: whole hybrid searches (``limit=10``; 2 to 5 words and a
  precomputed query vector), warm: 20 first, then ``--queries`` timed. With Typesense
  (``--typesense KEY@HOST:PORT``, a running server) both lists are its; otherwise the
  lexical list is FTS5's (tantivy below its threshold).

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/vector_engines.py --size 100000 \
        [--typesense KEY@127.0.0.1:8108]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search import DIM, FixedQueries, synthetic_library, unit
from docshelf.config import Settings
from docshelf.search.engines import VectorEngine
from docshelf.search.engines.exact import ExactVectorSearch
from docshelf.shelf import Shelf
from docshelf.store.base import SearchFilters

ENGINES = {
    "usearch": None,  # the default: the sidecar graph, on from the first vector here
    "qdrant": "qdrant+local://{home}/qdrant",
    "milvus": "milvus://{home}/milvus.db",
    "chroma": "chroma://{home}/chroma",
    "typesense": "typesense://{typesense}",  # both lists (DOCSHELF_SEARCH_URL): --typesense
}


def cuts(values: list[float]) -> tuple[float, float]:
    """p50 and p95, in ms."""
    q = statistics.quantiles(values, n=20)
    return statistics.median(values) * 1000, q[18] * 1000


def timed(call: Callable[[], object], n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return cuts(times)


def pair(value: Any) -> str:
    return f"{value[0]:.1f} / {value[1]:.1f}" if value else "-"


def settings_for(home: Path, engine: str, typesense: str = "") -> Settings:
    url = ENGINES[engine]
    url = url.format(home=home, typesense=typesense) if url else None
    base = Settings(home, f"sqlite:///{home / 'docshelf.db'}", embedder="none")
    both = engine == "typesense"
    return dataclasses.replace(
        base,
        ann_threshold=1,
        vector_url=None if both else url,
        search_url=url if both else None,
        retrieval_cache_seconds=0.0,  # every search searched
        enrich="off",
    )


def measure(
    home: Path,
    engine: str,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    exact_top: list[set[str]],
    few: SearchFilters,
    n: int,
    typesense: str,
) -> dict[str, Any]:
    embedder = FixedQueries(dict(zip(texts, vectors, strict=True)))
    out: dict[str, Any] = {"engine": engine}
    with Shelf(settings=settings_for(home, engine, typesense), embedder=embedder) as shelf:
        index = shelf.vector_index
        assert index is not None
        if shelf.lexical_index is not None:
            shelf.lexical_index.maintain(force=True)  # tantivy past its threshold, or Typesense
        t = time.perf_counter()
        out["built"] = index.maintain(force=True)
        out["build_s"] = round(time.perf_counter() - t, 1)
        out["path"] = index.path
        engine_: VectorEngine = index
        found = sum(
            len({c for c, _ in engine_.search(q, 10, SearchFilters())} & want)
            for q, want in zip(vectors, exact_top, strict=True)
        )
        out["recall@10"] = round(found / (10 * len(vectors)), 3)
        none = SearchFilters()
        for q in vectors[:20]:  # warm
            engine_.search(q, 110, none)
            shelf.search(texts[0], limit=10)
        qs = iter(np.resize(vectors, (n, DIM)))
        out["vector"] = timed(lambda: engine_.search(next(qs), 110, none), n)
        qs = iter(np.resize(vectors, (n, DIM)))
        out["vector_filtered"] = timed(lambda: engine_.search(next(qs), 110, few), n)
        words = iter(texts * (n // len(texts) + 1))
        out["hybrid"] = timed(lambda: shelf.search(next(words), limit=10), n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    parser.add_argument("--typesense", default="", help="API_KEY@HOST:PORT of a Typesense")
    args = parser.parse_args()
    if not args.typesense and "typesense" in args.engines:
        args.engines.remove("typesense")
    rng = np.random.default_rng(3)
    rows = []
    with tempfile.TemporaryDirectory(prefix="docshelf-engines-") as tmp:
        home = Path(tmp)
        t = time.perf_counter()
        with Shelf(settings=settings_for(home, "usearch"), embedder=FixedQueries({})) as shelf:
            vocab, centres = synthetic_library(shelf, args.size, rng, spread=1.0)
            store = shelf.store
            documents = sorted({d for d in store.vector_snapshot().document_ids})
        library_s = time.perf_counter() - t
        n_q = 100
        texts = [" ".join(rng.choice(vocab, size=int(rng.integers(2, 6)))) for _ in range(n_q)]
        picks = centres[rng.integers(len(centres), size=n_q)]
        vectors = unit(picks + rng.normal(size=(n_q, DIM)).astype(np.float32) / np.sqrt(DIM))
        few = SearchFilters(document_ids=tuple(documents[:: max(1, len(documents) // 100)]))
        with Shelf(settings=settings_for(home, "usearch"), embedder=FixedQueries({})) as shelf:
            exact = ExactVectorSearch(shelf.store)
            exact_top = [{c for c, _ in exact.search(q, 10, SearchFilters())} for q in vectors]
            none = SearchFilters()
            qs = iter(np.resize(vectors, (args.queries, DIM)))
            exact.search(vectors[0], 110, none)
            rows.append(
                {
                    "engine": "exact",
                    "vector": timed(lambda: exact.search(next(qs), 110, none), args.queries),
                    "recall@10": 1.0,
                }
            )
        for engine in args.engines:
            rows.append(
                measure(home, engine, texts, vectors, exact_top, few, args.queries, args.typesense)
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(
        f"library: {args.size} snippets, {len(documents)} documents, written in {library_s:.0f} s"
    )
    print(
        "| engine | build s | recall@10 | vector p50/p95 ms | 1% filter p50/p95 | hybrid p50/p95 |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        cells = [pair(r.get(key)) for key in ("vector", "vector_filtered", "hybrid")]
        print(
            f"| {r['engine']} | {r.get('build_s', '-')} | {r['recall@10']} | {' | '.join(cells)} |"
        )


if __name__ == "__main__":
    main()
