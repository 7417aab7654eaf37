"""Pseudo-relevance feedback variants for hybrid search, scored on passages and long files.

Each variant replays hybrid search through the shelf's own steps (its lexical and
vector recall, the fusion stages, and the ``Cite`` stage for deduplication and citations), so the
``default`` row equals ``docshelf eval`` exactly, on the same cached indexes
(``$DOCSHELF_HOME/eval``; build them once with ``docshelf eval DATASET`` and
``docshelf eval DATASET --long-doc``). Used for the issue-6 study in
docs/benchmarks/fusion-study.md.

    .venv/bin/python bench/feedback.py [DATASET_DIR]   # default ../shared/data/dbpedia-5k

Families (M = feedback snippets, B = feedback weight, w = vector weight):

    v:SRC:WEIGHT:M:B    vector feedback, query + B * weighted mean of M snippet vectors;
                        SRC fused (the first fusion's top), agree (top candidates found
                        by both lists) or vector (the vector list's own top);
                        WEIGHT uniform, score (fused score), rank (1/r), log (1/log2(r+1))
    it:R:M:B            the feedback mean re-estimated from the refused list, R rounds
    lex:...             lexical RM3: the top T terms of the first fusion's top M snippets
                        (sum of tf/length, optionally x idf; terms in more than 10% of
                        snippets dropped) searched as a second lexical query, its
                        min-max scores mixed in with weight lam ("sum"), or the terms
                        added to the OR query ("or"); with or without vector feedback,
                        and alone on the lexical side (w = 0)

It prints every setting, then per family: the median and best, the best against the
default with the paired test, the long-file figures, and the split check (the best
setting chosen on the odd-numbered queries, scored on the even ones, and vice versa).
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from docshelf.config import Settings
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
from docshelf.evaluate.long import build_long_index, hit_sections, long_corpus
from docshelf.search.candidate import Candidate as Fused
from docshelf.search.order import FusionSettings, fusion
from docshelf.search.pipeline import run
from docshelf.search.query import STOPWORDS, ParsedQuery, lexical_terms, parse_query
from docshelf.search.results import CANDIDATE_POOL
from docshelf.search.stages.cite import Cite
from docshelf.search.stages.concepts import ConceptBoost
from docshelf.search.stages.exact import ExactFirst
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters

WORD = re.compile(r"\w+", re.UNICODE)
Ranking = list[tuple[str, float]]
Scores = dict[str, dict[str, float]]  # query id -> metric -> value


@dataclass(frozen=True)
class LexicalFeedback:
    docs: int
    terms: int
    lam: float
    idf: bool = True
    mode: str = "sum"  # or "or"
    df_max: float = 0.1


@dataclass(frozen=True)
class Variant:
    w: float = 0.85
    docs: int = 5
    weight: float = 1.0
    source: str = "fused"
    weighting: str = "uniform"
    rounds: int = 1
    lexical: LexicalFeedback | None = None


@dataclass
class Index:
    shelf: Shelf
    long: bool
    mapping: dict[str, str]
    qrels: dict[str, dict[Any, int]]
    headings: dict[str, tuple[str, ...]]
    queries: dict[str, str]
    df: Counter[str]
    snippets: int
    cache: dict[str, tuple[ParsedQuery, list[str], Ranking, npt.NDArray[np.float32], Ranking]] = (
        field(default_factory=dict)
    )


def tokens(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def open_index(ds: Dataset, long: bool) -> Index:
    embedder = make_embedder("local")
    assert embedder is not None
    home = eval_home(Settings.from_env().home, ds, embedder.model_id, "long" if long else "")
    shelf = Shelf(settings=eval_settings(home, embedder.model_id), embedder=embedder)
    headings: dict[str, tuple[str, ...]] = {}
    qrels: dict[str, dict[Any, int]]
    if long:
        corpus = long_corpus(ds)
        mapping = build_long_index(shelf, corpus)
        qrels = dict(corpus.qrels(ds))
        headings = {f.name: f.headings for f in corpus.files}
    else:
        mapping = build_index(shelf, ds)
        qrels = dict(ds.qrels)
    df: Counter[str] = Counter()
    rows = shelf.store._q("SELECT header, text FROM chunks WHERE tier = 'snippet'")  # type: ignore[attr-defined]
    for header, text in rows:
        df.update(set(tokens(f"{header} {text}")))
    return Index(shelf, long, mapping, qrels, headings, ds.queries, df, len(rows))


def first_stage(
    ix: Index, qid: str
) -> tuple[ParsedQuery, list[str], Ranking, npt.NDArray[np.float32], Ranking]:
    if qid not in ix.cache:
        parsed = parse_query(ix.queries[qid])
        terms = lexical_terms(parsed.text)
        lex = ix.shelf.retriever.lexical.search(terms, CANDIDATE_POOL, SearchFilters())
        assert ix.shelf.embedder is not None
        qvec = np.asarray(ix.shelf.embedder.embed([parsed.text])[0], dtype=np.float32)
        vec = ix.shelf.retriever.vector.search(qvec, CANDIDATE_POOL, SearchFilters())
        ix.cache[qid] = (parsed, terms, lex, qvec, vec)
    return ix.cache[qid]


def doc_weights(scores: Sequence[float], how: str) -> list[float]:
    n = len(scores)
    w = {
        "uniform": lambda: [1.0] * n,
        "score": lambda: [max(s, 0.0) for s in scores],
        "rank": lambda: [1.0 / (r + 1) for r in range(n)],
        "log": lambda: [1.0 / math.log2(r + 2) for r in range(n)],
    }[how]()
    total = sum(w) or 1.0
    return [x / total for x in w]


def _minmax(r: Ranking) -> dict[str, float]:
    if not r:
        return {}
    lo, hi = min(s for _, s in r), max(s for _, s in r)
    return {i: (s - lo) / (hi - lo) if hi > lo else 1.0 for i, s in r}


def expansion(ix: Index, top: list[tuple[str, float]], query: list[str], lf: LexicalFeedback):
    """RM3's relevance model over the feedback snippets, top ``lf.terms`` new terms."""
    chunks = {c.id: c for c in ix.shelf.store.get_chunks([i for i, _ in top])}
    weight: dict[str, float] = {}
    for cid, p in top:
        chunk = chunks.get(cid)
        words = tokens(f"{chunk.header} {chunk.text}") if chunk else []
        for t, n in Counter(words).items():
            weight[t] = weight.get(t, 0.0) + p * n / len(words)
    scored = []
    for t, value in weight.items():
        d = ix.df.get(t, 0)
        if t in query or t in STOPWORDS or len(t) < 2 or t.isdigit() or not d:
            continue
        if d / ix.snippets > lf.df_max:
            continue
        scored.append((t, value * (math.log(ix.snippets / d) if lf.idf else 1.0)))
    scored.sort(key=lambda tv: (-tv[1], tv[0]))
    return [t for t, _ in scored[: lf.terms]]


def feedback_top(ix: Index, fused: list[Fused], vec: Ranking, v: Variant) -> Ranking:
    if v.source == "vector":
        return vec[: v.docs]
    if v.source == "agree":
        both = [(f.id, f.score) for f in fused if f.lexical is not None and f.vector is not None]
        rest = [(f.id, f.score) for f in fused if f.lexical is None or f.vector is None]
        return (both + rest)[: v.docs] if len(both) < v.docs else both[: v.docs]
    return [(f.id, f.score) for f in fused[: v.docs]]


def search(ix: Index, qid: str, v: Variant) -> list[Any]:
    _, terms, lex, qvec, vec = first_stage(ix, qid)
    fs = FusionSettings(vector_weight=v.w, lexical_weight=round(1 - v.w, 6))
    prepared, _ = ix.shelf.retriever.prepare(ix.queries[qid], limit=50)
    assert prepared is not None

    def fuse(lexical: Ranking, vector: Ranking, settings: FusionSettings) -> list[Fused]:
        assert prepared is not None
        prepared.lexical, prepared.vector = list(lexical), list(vector)
        run(fusion(settings), prepared)
        return list(prepared.candidates)

    first = fused = fuse(lex, vec, fs)
    for _ in range(v.rounds if v.docs > 0 and v.weight > 0 and v.w > 0 else 0):
        top = feedback_top(ix, fused, vec, v)
        found = ix.shelf.store.get_vectors([i for i, _ in top])
        pairs = [
            (found[i], p)
            for (i, _), p in zip(top, doc_weights([s for _, s in top], v.weighting), strict=True)
            if i in found
        ]
        if pairs:
            total = sum(p for _, p in pairs)
            mean = np.sum([vv * np.float32(p / total) for vv, p in pairs], axis=0)
            moved = qvec + np.float32(v.weight) * mean.astype(np.float32)
            moved = (moved / np.linalg.norm(moved)).astype(np.float32)
            vec = ix.shelf.retriever.vector.search(moved, CANDIDATE_POOL, SearchFilters())
        fused = fuse(lex, vec, fs)
    lf = v.lexical
    if lf is not None:
        ids = [f.id for f in first[: lf.docs]]
        extra = expansion(ix, [(i, 1.0 / len(ids)) for i in ids], terms, lf)
        if extra:
            if lf.mode == "sum":
                second = ix.shelf.retriever.lexical.search(extra, CANDIDATE_POOL, SearchFilters())
                a, b = _minmax(lex), _minmax(second)
                mixed = {i: (1 - lf.lam) * a.get(i, 0.0) + lf.lam * b.get(i, 0.0) for i in a | b}
                new = sorted(mixed.items(), key=lambda kv: (-kv[1], kv[0]))[:CANDIDATE_POOL]
            else:
                new = ix.shelf.retriever.lexical.search(
                    terms + extra, CANDIDATE_POOL, SearchFilters()
                )
            fused = fuse(new, vec, fs)
    prepared.candidates = fused
    run([ConceptBoost(fs.concept_boost), ExactFirst(), Cite()], prepared)
    return prepared.hits


def score(ix: Index, v: Variant) -> Scores:
    out: Scores = {}
    for qid in ix.queries:
        hits = search(ix, qid, v)
        grades = ix.qrels.get(qid, {})
        if ix.long:
            cited = [(ix.mapping.get(h.document.id, ""), h.citation.heading_path) for h in hits]
            ranked: list[Any] = hit_sections(cited, ix.headings)
            out[qid] = {"hit1": float(recall_at_k(ranked, grades, 1) > 0)}
        else:
            ranked = list(dict.fromkeys(ix.mapping.get(h.document.id, "") for h in hits))
        out[qid] = {
            **out.get(qid, {}),
            "ndcg": ndcg_at_k(ranked, grades, 10),
            "mrr": mrr_at_k(ranked, grades, 10),
        }
    return out


def variants() -> dict[str, Variant]:
    base = Variant()
    out: dict[str, Variant] = {"default": base, "no feedback": replace(base, docs=0)}
    out["lexical only"] = replace(base, w=0.0, docs=0)
    for src in ("fused", "agree"):
        for how in ("uniform", "score", "rank", "log"):
            for m in (3, 5, 8, 10):
                for b in (0.75, 1.0, 1.5):
                    out[f"v:{src}:{how}:M{m}:B{b}"] = Variant(
                        docs=m, weight=b, source=src, weighting=how
                    )
    for m in (4, 5, 6, 8):
        for b in (0.75, 1.0, 1.5):
            out[f"v:vector:uniform:M{m}:B{b}"] = Variant(docs=m, weight=b, source="vector")
    for r in (2, 3):
        for m in (4, 5, 6):
            for b in (0.5, 0.75, 1.0):
                out[f"it:{r}:M{m}:B{b}"] = Variant(docs=m, weight=b, rounds=r)
    for vfb in (True, False):
        for m in (3, 5, 10):
            for t in (5, 10, 20):
                for idf in (False, True):
                    for lam in (0.2, 0.35, 0.5):
                        lf = LexicalFeedback(m, t, lam, idf)
                        name = f"lex:{'vfb' if vfb else 'novfb'}:sum:M{m}:T{t}:idf{int(idf)}:{lam}"
                        out[name] = replace(base, docs=5 if vfb else 0, lexical=lf)
                    lf = LexicalFeedback(m, t, 0.0, idf, "or")
                    name = f"lex:{'vfb' if vfb else 'novfb'}:or:M{m}:T{t}:idf{int(idf)}"
                    out[name] = replace(base, docs=5 if vfb else 0, lexical=lf)
    for w in (0.7, 0.75, 0.8, 0.0):
        for m in (3, 5, 10):
            for t in (10, 20, 40):
                for lam in (0.35, 0.5, 0.65):
                    lf = LexicalFeedback(m, t, lam, True)
                    out[f"lex:w{w}:M{m}:T{t}:{lam}"] = Variant(w=w, docs=5 if w else 0, lexical=lf)
    return out


FAMILIES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "vector feedback, weighting x source x M x B": (
        "default",
        lambda n: n.startswith("v:"),
    ),
    "vector feedback re-estimated, 2-3 rounds": ("default", lambda n: n.startswith("it:")),
    "lexical RM3 + vector feedback": (
        "default",
        lambda n: n.startswith("lex:vfb") or n.startswith(("lex:w0.7", "lex:w0.75", "lex:w0.8")),
    ),
    "lexical RM3, no vector feedback": ("default", lambda n: n.startswith("lex:novfb")),
    "lexical RM3 on lexical-only search": ("lexical only", lambda n: n.startswith("lex:w0.0")),
}


def report(passages: dict[str, Scores], long: dict[str, Scores]) -> None:
    qids = list(passages["default"])
    odd, even = qids[0::2], qids[1::2]  # the 1st, 3rd, … query; the 2nd, 4th, …

    def mean(r: dict[str, Scores], name: str, metric: str = "ndcg", qs: list[str] = qids):
        return statistics.fmean(r[name][q][metric] for q in qs)

    def p(r: dict[str, Scores], a: str, b: str, metric: str = "ndcg", qs: list[str] = qids):
        xs, ys = ([r[n][q][metric] for q in qs] for n in (a, b))
        return paired_randomization_test(xs, ys)

    for fam, (ref, member) in FAMILIES.items():
        names = [n for n in passages if member(n)]
        best = max(names, key=lambda n: (mean(passages, n), n))
        print(f"\n{fam}: {len(names)} settings, reference {ref!r}")
        print(
            f"  passages nDCG@10: reference {mean(passages, ref):.4f}, median "
            f"{statistics.median(mean(passages, n) for n in names):.4f}, best "
            f"{mean(passages, best):.4f} ({best}, p = {p(passages, ref, best):.3f})"
        )
        print(
            f"  long files at that best: nDCG@10 {mean(long, best):.4f} "
            f"(reference {mean(long, ref):.4f}, p = {p(long, ref, best):.2f}), hit@1 "
            f"{mean(long, best, 'hit1'):.3f} ({mean(long, ref, 'hit1'):.3f}), MRR@10 "
            f"{mean(long, best, 'mrr'):.3f} ({mean(long, ref, 'mrr'):.3f}, "
            f"p = {p(long, ref, best, 'mrr'):.2f})"
        )
        for pick, rest, label in ((odd, even, "odd -> even"), (even, odd, "even -> odd")):
            chosen = max(names, key=lambda n: (mean(passages, n, qs=pick), n))
            print(
                f"  split {label}: {chosen} scores {mean(passages, chosen, qs=rest):.4f} "
                f"on the other half; reference {mean(passages, ref, qs=rest):.4f} "
                f"(p = {p(passages, ref, chosen, qs=rest):.2f}), no feedback "
                f"{mean(passages, 'no feedback', qs=rest):.4f}"
            )


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?", default=root.parent / "shared/data/dbpedia-5k")
    args = ap.parse_args()
    ds = load_beir(args.dataset)
    grid = variants()
    results: dict[str, dict[str, Scores]] = {}
    for label, long in (("passages", False), ("long files", True)):
        ix = open_index(ds, long)
        with ix.shelf:
            results[label] = {}
            for name, v in grid.items():
                results[label][name] = r = score(ix, v)
                extra = statistics.fmean(q["hit1"] for q in r.values()) if long else None
                hit1 = f"  hit@1 {extra:.3f}" if extra is not None else ""
                ndcg = statistics.fmean(q["ndcg"] for q in r.values())
                print(f"{label:<10} {name:<40} nDCG@10 {ndcg:.4f}{hit1}", flush=True)
    report(results["passages"], results["long files"])


if __name__ == "__main__":
    main()
