"""Sweep fusion methods, weights and lexical settings on a BEIR dataset, on one index.

Recall runs once per query and lexical setting (lexical candidates, vector
candidates, and the exact cosine of every snippet); every fusion setting is then
scored offline on the same candidates, so the comparison is exact and fast.
Used to pick docshelf's default fusion (see docs/benchmarks/fusion-study.md).

    .venv/bin/python bench/fusion.py [DATASET_DIR] [--pool N ...] [--header-weights W ...]
        [--question-words] [--full] [--feedback]
    # default ../shared/data/dbpedia-5k, pool 100, header weights 2; the default
    # fusion's feedback is not applied here, only in the feedback rows

Methods (w = the vector weight; the lexical weight is 1 - w):

    rrf:K        weighted reciprocal rank fusion with constant K
    minmax       convex combination of min-max normalised scores (docshelf's, before feedback)
    minmax@N     the same, normalised over each list's top N only (clipped at 0)
    zscore       convex combination of z-scores over each list
    maxnorm      lexical / top lexical, vector cosine as it is
    fill         minmax over the union, every candidate with its exact cosine
    mnz          minmax, times the number of lists a candidate is in
    gap:A        minmax with a per-query lexical weight: scaled by (1 + A * (g - median g)),
                 g = the lexical list's top-1 / top-10 normalised gap
    agree:A      minmax; lexical weight raised by A * overlap of the two top 10s
    prf:M:B      minmax, then feedback: the query vector + B * mean of the top M fused
                 snippets' vectors, searched again (exact), fused again
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docshelf.embed import make_embedder
from docshelf.evaluate.beir import (
    Dataset,
    build_index,
    eval_home,
    eval_settings,
    load_beir,
    mrr_at_k,
    ndcg_at_k,
    paired_randomization_test,
    recall_at_k,
)
from docshelf.evaluate.lists import fused as fuse
from docshelf.search.engines import fts5, own_engines
from docshelf.search.order import FusionSettings
from docshelf.search.query import lexical_terms
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters

Ranking = list[tuple[str, float]]

# Words of question-like queries that say how to answer, not what about (tried as
# extra stopwords on the lexical side).
QUESTION_WORDS = frozenset(
    [
        "all",
        "any",
        "list",
        "give",
        "me",
        "show",
        "tell",
        "find",
        "name",
        "most",
        "famous",
        "some",
        "other",
        "there",
        "their",
        "they",
        "been",
        "being",
        "has",
        "had",
        "into",
        "than",
        "then",
        "these",
        "those",
        "whose",
    ]
)


@dataclass
class Run:
    qid: str
    lex: dict[str, Ranking]  # lexical setting -> ranking
    vec: Ranking
    cosine: dict[str, float]  # exact cosine of every candidate of any list
    qvec: np.ndarray | None = None


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?", default=root.parent / "shared/data/dbpedia-5k")
    ap.add_argument("--pool", type=int, nargs="+", default=[100])
    ap.add_argument("--header-weights", type=float, nargs="+", default=[2.0])
    ap.add_argument("--question-words", action="store_true", help="also try QUESTION_WORDS")
    ap.add_argument("--full", action="store_true", help="every method and weight")
    ap.add_argument(
        "--feedback", action="store_true", help="only the feedback grid, with paired p-values"
    )
    args = ap.parse_args()
    ds = load_beir(args.dataset)
    for pool in args.pool:
        sweep(ds, pool, args.header_weights, args.question_words, args.full, args.feedback)


def lexical_settings(weights: Sequence[float], question_words: bool) -> list[str]:
    out = [f"h{w:g}" for w in weights]
    if question_words:
        out += [f"h{w:g}+q" for w in weights]
    return out


def _terms(text: str, setting: str) -> list[str]:
    if setting.endswith("+q"):
        words = lexical_terms(text)
        kept = [w for w in words if w not in QUESTION_WORDS]
        return kept or words
    return lexical_terms(text)


def sweep(
    ds: Dataset,
    pool: int,
    weights: Sequence[float],
    question_words: bool,
    full: bool,
    feedback_only: bool = False,
) -> None:
    from docshelf.config import Settings

    embedder = make_embedder("local")
    assert embedder is not None
    home = eval_home(Settings.from_env().home, ds, embedder.model_id)
    settings = lexical_settings(weights, question_words)
    runs: list[Run] = []
    chunk_doc: dict[str, str] = {}
    with Shelf(settings=eval_settings(home, embedder.model_id), embedder=embedder) as shelf:
        mapping = build_index(shelf, ds)
        snap = shelf.store.vector_snapshot()
        row = {cid: i for i, cid in enumerate(snap.chunk_ids)}
        chunk_doc.update(
            (c, mapping.get(d, "")) for c, d in zip(snap.chunk_ids, snap.document_ids, strict=True)
        )
        saved = fts5.BM25_WEIGHTS
        for qid, text in ds.queries.items():
            lex: dict[str, Ranking] = {}
            for setting in settings:
                w = float(setting[1:].split("+")[0])
                fts5.BM25_WEIGHTS = (w, w, 1.0)  # title and headings at w
                lex[setting] = own_engines(shelf.store).lexical.search(
                    _terms(text, setting), pool, SearchFilters()
                )
            qvec = embedder.embed([text])[0]
            scores = snap.matrix @ np.asarray(qvec, dtype=np.float32)
            top = np.argsort(-scores, kind="stable")[:pool]
            vec = [(snap.chunk_ids[i], float(scores[i])) for i in top]
            ids = {c for r in lex.values() for c, _ in r} | {c for c, _ in vec}
            cosine = {c: float(scores[row[c]]) for c in ids if c in row}
            for cid in ids - chunk_doc.keys():  # snippets without a vector
                chunk = shelf.store.get_chunks([cid])[0]
                chunk_doc[cid] = mapping.get(chunk.document_id, "")
            runs.append(Run(qid, lex, vec, cosine, np.asarray(qvec, dtype=np.float32)))
    fts5.BM25_WEIGHTS = saved

    def per_query(fused: Callable[[Run], list[str]]) -> list[float]:
        return [
            ndcg_at_k(list(dict.fromkeys(chunk_doc[c] for c in fused(run))), ds.qrels[run.qid], 10)
            for run in runs
        ]

    if feedback_only:
        base = per_query(fused_by(m_minmax(), settings[0], 0.8, 0.0))
        print(f"baseline minmax w=0.8 [{settings[0]}] nDCG@10 {statistics.fmean(base):.4f}")
        for s in settings:
            for m_docs in (3, 4, 5, 6, 8):
                for beta in (0.5, 0.75, 1.0, 1.5, 2.0):
                    for w in (0.75, 0.8, 0.85, 0.9):
                        f = feedback(snap.matrix, snap.chunk_ids, s, w, m_docs, beta, pool)
                        vals = per_query(f)
                        p = paired_randomization_test(base, vals, rounds=2000)
                        print(
                            f"feedback m={m_docs} beta={beta} w={w} [{s}] "
                            f"nDCG@10 {statistics.fmean(vals):.4f} p={p:.3f}"
                        )
        return

    def score(fused: Callable[[Run], list[str]]) -> tuple[float, float, float]:
        n, r, m = [], [], []
        for run in runs:
            ranked = list(dict.fromkeys(chunk_doc[c] for c in fused(run)))
            grades = ds.qrels[run.qid]
            n.append(ndcg_at_k(ranked, grades, 10))
            r.append(recall_at_k(ranked, grades, 10))
            m.append(mrr_at_k(ranked, grades, 10))
        return statistics.fmean(n), statistics.fmean(r), statistics.fmean(m)

    def show(label: str, fused: Callable[[Run], list[str]]) -> None:
        n, r, m = score(fused)
        print(f"{label:<34} nDCG@10 {n:.4f}  recall@10 {r:.4f}  MRR@10 {m:.4f}")

    print(f"{ds.name}: {len(runs)} queries, candidate pool {pool} per side")
    show("vector only", lambda run: [c for c, _ in run.vec])
    for s in settings:
        show(f"lexical only [{s}]", lexical_only(s))
    grid = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9) if full else (0.7, 0.75, 0.8, 0.85)
    for m_docs, beta in ((3, 0.5), (3, 1.0), (5, 0.5), (5, 1.0), (10, 0.5)):
        for w in grid:
            for s in settings[:1]:
                show(
                    f"prf:{m_docs}:{beta} w={w:<4} [{s}]",
                    feedback(snap.matrix, snap.chunk_ids, s, w, m_docs, beta, pool),
                )
    methods = METHODS if full else {k: v for k, v in METHODS.items() if k in QUICK}
    gaps = {s: statistics.median(_gap(run.lex[s]) for run in runs) for s in settings}
    for s in settings:
        for name, method in methods.items():
            for w in grid:
                show(f"{name} w={w:<4} [{s}]", fused_by(method, s, w, gaps[s]))


def feedback(
    matrix: np.ndarray,
    chunk_ids: Sequence[str],
    setting: str,
    w: float,
    m_docs: int,
    beta: float,
    pool: int,
) -> Callable[[Run], list[str]]:
    """Pseudo-relevance feedback on the vector side: the query vector moved toward the
    mean of the first fusion's top ``m_docs`` snippets, searched again, fused again."""

    def run(r: Run) -> list[str]:
        assert r.qvec is not None
        first = _combine(_minmax(r.lex[setting]), _minmax(r.vec), w)[:m_docs]
        rows = [chunk_index[c] for c in first if c in chunk_index]
        q = r.qvec + beta * matrix[rows].mean(axis=0)
        q /= np.linalg.norm(q)
        scores = matrix @ q
        top = np.argsort(-scores, kind="stable")[:pool]
        vec = [(chunk_ids[i], float(scores[i])) for i in top]
        return _combine(_minmax(r.lex[setting]), _minmax(vec), w)

    chunk_index = {c: i for i, c in enumerate(chunk_ids)}
    return run


def lexical_only(setting: str) -> Callable[[Run], list[str]]:
    return lambda run: [c for c, _ in run.lex[setting]]


def fused_by(method: Method, setting: str, w: float, gap: float) -> Callable[[Run], list[str]]:
    return lambda run: method(run.lex[setting], run.vec, run.cosine, w, gap)


# -- fusion methods, scored offline ---------------------------------------------------------


def _order(scores: dict[str, float]) -> list[str]:
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def _minmax(r: Ranking, top: int | None = None) -> dict[str, float]:
    if not r:
        return {}
    vals = [s for _, s in r[:top]] if top else [s for _, s in r]
    lo, hi = min(vals), max(vals)
    if hi == lo:
        return {i: 1.0 for i, _ in r}
    return {i: max(0.0, (s - lo) / (hi - lo)) for i, s in r}


def _zscore(r: Ranking) -> dict[str, float]:
    if len(r) < 2:
        return {i: 1.0 for i, _ in r}
    vals = [s for _, s in r]
    mu, sd = statistics.fmean(vals), statistics.pstdev(vals) or 1.0
    return {i: (s - mu) / sd for i, s in r}


def _combine(
    lex: dict[str, float], vec: dict[str, float], w: float, floor: float = 0.0
) -> list[str]:
    ids = set(lex) | set(vec)
    return _order({i: w * vec.get(i, floor) + (1 - w) * lex.get(i, floor) for i in ids})


def _gap(r: Ranking) -> float:
    if len(r) < 10 or r[0][1] <= 0:
        return 0.0
    return (r[0][1] - r[9][1]) / r[0][1]


Method = Callable[[Ranking, Ranking, dict[str, float], float, float], list[str]]


def m_rrf(k: int) -> Method:
    def run(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
        s = FusionSettings(method="rrf", vector_weight=w, lexical_weight=1 - w, rrf_k=k)
        return [f.id for f in fuse(lex, vec, s)]

    return run


def m_minmax(top: int | None = None) -> Method:
    def run(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
        return _combine(_minmax(lex, top), _minmax(vec, top), w)

    return run


def m_zscore(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
    lz, vz = _zscore(lex), _zscore(vec)
    floor = min([*lz.values(), *vz.values(), 0.0])
    return _combine(lz, vz, w, floor)


def m_maxnorm(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
    top = lex[0][1] if lex and lex[0][1] > 0 else 1.0
    return _combine({i: s / top for i, s in lex}, dict(vec), w)


def m_fill(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
    ids = {i for i, _ in lex} | {i for i, _ in vec}
    full = sorted(((i, cos.get(i, 0.0)) for i in ids), key=lambda t: -t[1])
    return _combine(_minmax(lex), _minmax(full), w)


def m_mnz(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
    ln, vn = _minmax(lex), _minmax(vec)
    ids = set(ln) | set(vn)
    return _order(
        {i: (w * vn.get(i, 0.0) + (1 - w) * ln.get(i, 0.0)) * ((i in ln) + (i in vn)) for i in ids}
    )


def m_gap(alpha: float) -> Method:
    def run(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
        lw = min(1.0, max(0.0, (1 - w) * (1 + alpha * (_gap(lex) - g))))
        return _combine(_minmax(lex), _minmax(vec), 1 - lw)

    return run


def m_agree(alpha: float) -> Method:
    def run(lex: Ranking, vec: Ranking, cos: dict[str, float], w: float, g: float) -> list[str]:
        overlap = len({i for i, _ in lex[:10]} & {i for i, _ in vec[:10]}) / 10
        lw = min(1.0, (1 - w) + alpha * overlap)
        return _combine(_minmax(lex), _minmax(vec), 1 - lw)

    return run


METHODS: dict[str, Method] = {
    "rrf:10": m_rrf(10),
    "rrf:60": m_rrf(60),
    "minmax": m_minmax(),
    "minmax@10": m_minmax(10),
    "minmax@30": m_minmax(30),
    "zscore": m_zscore,
    "maxnorm": m_maxnorm,
    "fill": m_fill,
    "mnz": m_mnz,
    "gap:1": m_gap(1.0),
    "gap:3": m_gap(3.0),
    "agree:0.3": m_agree(0.3),
}
QUICK = ("minmax", "minmax@30", "zscore", "fill", "gap:1", "gap:3", "agree:0.3")


if __name__ == "__main__":
    main()
