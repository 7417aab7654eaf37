"""Sweep fusion methods and weights on a BEIR dataset, on one shared index.

Recall runs once per query (lexical and vector candidates); every fusion
setting is then scored offline on the same candidates, so the comparison is
exact and fast. Used to pick docshelf's default fusion (see BENCHMARKS.md).

    .venv/bin/python bench/fusion.py [DATASET_DIR] [--pool N ...]
    # default ../shared/data/dbpedia-5k, pools 50 100 250
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from docshelf.config import Settings
from docshelf.embed import make_embedder
from docshelf.evaluate import Dataset, build_index, eval_home, load_beir, ndcg_at_k
from docshelf.search.fusion import FusionSettings, as_fused, fuse
from docshelf.search.query import lexical_terms
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?", default=root.parent / "shared/data/dbpedia-5k")
    ap.add_argument("--pool", type=int, nargs="+", default=[50, 100, 250])
    args = ap.parse_args()
    ds = load_beir(args.dataset)
    for pool in args.pool:
        sweep(ds, pool)


def sweep(ds: Dataset, pool: int) -> None:
    embedder = make_embedder("local")
    assert embedder is not None
    base = Settings.from_env()
    home = eval_home(base.home, ds, embedder.model_id)
    settings = Settings(home, f"sqlite:///{home / 'docshelf.db'}", embedder="local")
    with Shelf(settings=settings, embedder=embedder) as shelf:
        mapping = build_index(shelf, ds)
        chunk_doc: dict[str, str] = {}
        runs = []
        for qid, text in ds.queries.items():
            lex = shelf.store.lexical_search(lexical_terms(text), pool, SearchFilters())
            vec = shelf._vectors.search(embedder.embed([text])[0], pool)
            for cid, _ in lex + vec:
                if cid not in chunk_doc:
                    chunk = shelf.store.get_chunks([cid])[0]
                    chunk_doc[cid] = mapping.get(chunk.document_id, "")
            runs.append((qid, lex, vec))

    def score(method: str, w_vec: float) -> float:
        values = []
        for qid, lex, vec in runs:
            if method == "lexical":
                fused = as_fused(lex, [])
            elif method == "vector":
                fused = as_fused([], vec)
            else:
                fused = fuse(
                    lex,
                    vec,
                    FusionSettings(method=method, vector_weight=w_vec, lexical_weight=1 - w_vec),
                )
            ranked = list(dict.fromkeys(chunk_doc[f.id] for f in fused))
            values.append(ndcg_at_k(ranked, ds.qrels[qid], 10))
        return statistics.fmean(values)

    print(f"{ds.name}: {len(runs)} queries, candidate pool {pool} per side")
    print(f"lexical only   nDCG@10 {score('lexical', 0):.4f}")
    print(f"vector only    nDCG@10 {score('vector', 1):.4f}")
    for method in ("rrf", "convex"):
        for w in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
            print(f"{method:<7} w_vec={w:<4} nDCG@10 {score(method, w):.4f}")


if __name__ == "__main__":
    main()
