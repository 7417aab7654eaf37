"""Fuse: one list of candidates from the engines' lists.

In hybrid search each candidate is scored from both lists, by one of two methods:

``convex``  ``w_v * norm(vector) + w_l * norm(lexical)``, each list's scores min-max
            normalised over its candidates (a candidate missing from a list gets 0
            there) — the default, 0.85 / 0.15, chosen by measurement
            (docs/benchmarks/fusion-study.md);
``rrf``     weighted reciprocal rank fusion, ``sum_i w_i / (k + rank_i)``.

Ties are broken by id, so the order is deterministic. In lexical or vector search the
one list is the candidates, in the engine's order, each with its own score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from docshelf.search.candidate import Candidate, Recalled, from_list
from docshelf.search.pipeline import Search


@dataclass(frozen=True)
class Fuse:
    method: str = "convex"
    vector_weight: float = 0.85
    lexical_weight: float = 0.15
    rrf_k: int = 60

    name: ClassVar[str] = "fuse"

    def __call__(self, search: Search) -> None:
        if search.mode != "hybrid":
            search.candidates = from_list(search.lexical, search.told, lexical=True)
            search.candidates += from_list(search.vector, search.told, lexical=False)
            return
        candidates = joined(search.lexical, self.vector_list(search), search)
        self.score(candidates, search)
        candidates.sort(key=lambda c: (-c.score, c.id))
        search.candidates = candidates

    def vector_list(self, search: Search) -> Recalled:
        """The vector list to score by (a study may blend in the query's own, after
        feedback)."""
        return search.vector

    def weights(self, search: Search) -> tuple[float, float]:
        """(vector weight, lexical weight) for this search (a study may adapt them)."""
        return self.vector_weight, self.lexical_weight

    def score(self, candidates: list[Candidate], search: Search) -> None:
        """Each candidate's fused score, from ``vector_list`` and the lexical list."""
        w_v, w_l = self.weights(search)
        if self.method == "rrf":
            k = self.rrf_k
            for c in candidates:
                s = 0.0
                if c.lexical_rank is not None:
                    s += w_l / (k + c.lexical_rank)
                if c.vector_rank is not None:
                    s += w_v / (k + c.vector_rank)
                c.score = s
            return
        if self.method != "convex":
            raise ValueError(f"unknown fusion method {self.method!r}")
        lex = min_max(search.lexical).get
        vec = min_max(self.vector_list(search)).get
        for c in candidates:
            c.score = w_v * vec(c.id, 0.0) + w_l * lex(c.id, 0.0)


def joined(lexical: Recalled, vector: Recalled, search: Search) -> list[Candidate]:
    """One candidate per id of either list (the vector list's first), each with its
    score and rank in each list that holds it. The vector score kept is that of the list
    searched last (``Search.vector``), whatever list the fusion scores by."""
    told = search.told.get
    reported = dict(search.vector)
    out: dict[str, Candidate] = {}
    for n, (i, _) in enumerate(vector, start=1):
        out[i] = Candidate(i, vector=reported.get(i), vector_rank=n, told=told(i))
    for n, (i, s) in enumerate(lexical, start=1):
        c = out.get(i)
        if c is None:
            c = out[i] = Candidate(i, vector=reported.get(i), told=told(i))
        c.lexical, c.lexical_rank = s, n
    return list(out.values())


def min_max(ranking: Recalled) -> dict[str, float]:
    """Each id's score scaled to 0..1 over the list (all 1 when they are equal)."""
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return {i: 1.0 for i, _ in ranking}
    return {i: (s - lo) / (hi - lo) for i, s in ranking}
