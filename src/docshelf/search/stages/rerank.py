"""Rerank: the top K hits in the order of a stronger model (a cross-encoder or an LLM
judge, docshelf.rerank), when one is configured; if it declines, the fused order stands."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from docshelf.model import Hit
from docshelf.search.pipeline import Fixed, Search


class Rerank(Fixed):
    name: ClassVar[str] = "rerank"

    def __call__(self, search: Search) -> None:
        reranker, hits = search.parts.reranker, search.hits
        if reranker is None or len(hits) < 2:
            return
        top = hits[: search.parts.rerank_top_k]
        scores = reranker.scores(search.parsed.text, [h.chunk.retrieval_text for h in top])
        if scores is None or len(scores) != len(top):
            return
        ranked = sorted(range(len(top)), key=lambda i: (-scores[i], i))
        search.hits = [_reranked(top[i], scores[i]) for i in ranked] + hits[len(top) :]


def _reranked(hit: Hit, score: float) -> Hit:
    """``hit`` with the reranker's score, in the reranker's order: no rule places it now."""
    scores = dataclasses.replace(hit.scores, rerank=score)
    return dataclasses.replace(hit, scores=scores, placed_by=())
