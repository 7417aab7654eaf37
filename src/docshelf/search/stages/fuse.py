"""Fuse: one list of candidates from the engines' lists.

In hybrid search each candidate is scored from both lists, by one of two methods:

``convex``  ``w_v * norm(vector) + w_l * norm(lexical)``, each list's scores min-max
            normalised over its candidates (a candidate missing from a list gets 0
            there) — the default, 0.85 / 0.15, chosen by measurement
            (docs/benchmarks/fusion-study.md);
``rrf``     weighted reciprocal rank fusion, ``sum_i w_i / (k + rank_i)``.

Ties are broken by id, so the order is deterministic. In lexical or vector search the
one list is the candidates, in the engine's order, each with its own score.

While documents wait for their vectors (``ingest/vectors.py``: searchable by their words
first), a snippet that has none yet is scored by its words alone, as if the vector list
agreed with the lexical one: ``(w_v + w_l) * norm(lexical)`` (``rrf``: the lexical rank
standing for both). A document is never ranked lower for lacking its vectors.
"""

from __future__ import annotations

from operator import attrgetter
from typing import NamedTuple

from docshelf.search.candidate import Candidate, Recalled, from_list
from docshelf.search.pipeline import Search


class Fuse(NamedTuple):
    method: str = "convex"
    vector_weight: float = 0.85
    lexical_weight: float = 0.15
    rrf_k: int = 60

    @property
    def name(self) -> str:
        return "fuse"

    def __call__(self, search: Search) -> None:
        w_v, w_l = self.vector_weight, self.lexical_weight
        fuse_into(search, self.method, search.vector, w_v, w_l, self.rrf_k)


def fuse_into(
    search: Search, method: str, vector: Recalled, w_v: float, w_l: float, k: int
) -> None:
    """``search.candidates`` made from the lexical list and ``vector`` (the vector list,
    or one a study scores by instead), fused by ``method`` with these weights."""
    if search.mode != "hybrid":
        search.candidates = from_list(search.lexical, search.told, lexical=True)
        search.candidates += from_list(search.vector, search.told, lexical=False)
        return
    if method == "convex":
        candidates = convex(search.lexical, vector, w_v, w_l, search)
    elif method == "rrf":
        candidates = rrf(search.lexical, vector, w_v, w_l, k, search)
    else:
        raise ValueError(f"unknown fusion method {method!r}")
    if search.backlog is not None:
        _words_alone(search, candidates, method, w_v, w_l, k)
    # by score, best first, ties by id: two stable sorts by C-level keys
    candidates.sort(key=_ID)
    candidates.sort(key=_SCORE, reverse=True)
    search.candidates = candidates


_ID = attrgetter("id")
_SCORE = attrgetter("score")


def convex(
    lexical: Recalled, vector: Recalled, w_v: float, w_l: float, search: Search
) -> list[Candidate]:
    """One candidate per id of either list (the vector list's first), scored
    ``w_v * norm(vector) + w_l * norm(lexical)``: each list's scores min-max normalised
    over it (all 1 when they are equal), 0 where a list lacks the candidate. The vector
    score kept is that of the list searched last (``Search.vector``), whatever list the
    fusion scores by."""
    told = search.told.get
    reported = None if vector is search.vector else dict(search.vector).get
    out: dict[str, Candidate] = {}
    if vector:
        lo, span = _bounds(vector)
        for n, (i, s) in enumerate(vector, start=1):
            norm = (s - lo) / span if span else 1.0
            v = s if reported is None else reported(i)
            out[i] = Candidate(i, w_v * norm, None, v, None, n, 0, told(i))
    if lexical:
        lo, span = _bounds(lexical)
        for n, (i, s) in enumerate(lexical, start=1):
            norm = (s - lo) / span if span else 1.0
            c = out.get(i)
            if c is None:
                out[i] = Candidate(i, w_l * norm, s, None, n, None, 0, told(i))
            else:
                c.score += w_l * norm
                c.lexical, c.lexical_rank = s, n
    return list(out.values())


def rrf(
    lexical: Recalled, vector: Recalled, w_v: float, w_l: float, k: int, search: Search
) -> list[Candidate]:
    """The candidates of both lists scored ``sum_i w_i / (k + rank_i)``."""
    out = convex(lexical, vector, 0.0, 0.0, search)
    for c in out:
        s = 0.0
        if c.lexical_rank is not None:
            s += w_l / (k + c.lexical_rank)
        if c.vector_rank is not None:
            s += w_v / (k + c.vector_rank)
        c.score = s
    return out


def _words_alone(
    search: Search, candidates: list[Candidate], method: str, w_v: float, w_l: float, k: int
) -> None:
    """Candidates found by their words only whose snippets have no vector yet: scored by
    the lexical list for both (module doc)."""
    lexical_only = [c for c in candidates if c.vector_rank is None and c.lexical is not None]
    if not lexical_only:
        return
    embedded = search.parts.store.get_vectors([c.id for c in lexical_only])
    lo, span = _bounds(search.lexical)
    for c in lexical_only:
        if c.id in embedded:
            continue
        assert c.lexical is not None and c.lexical_rank is not None
        if method == "rrf":
            c.score = (w_v + w_l) / (k + c.lexical_rank)
        else:
            c.score = (w_v + w_l) * ((c.lexical - lo) / span if span else 1.0)


def _bounds(ranking: Recalled) -> tuple[float, float]:
    """The lowest score of a list and the span of its scores."""
    scores = [s for _, s in ranking]
    lo = min(scores)
    return lo, max(scores) - lo


def min_max(ranking: Recalled) -> dict[str, float]:
    """Each id's score scaled to 0..1 over the list (all 1 when they are equal)."""
    if not ranking:
        return {}
    lo, span = _bounds(ranking)
    if not span:
        return {i: 1.0 for i, _ in ranking}
    return {i: (s - lo) / span for i, s in ranking}
