"""Ranking stages run on engine lists given by hand, with no library behind them: what
the fusion studies (bench/fusion.py, bench/feedback.py) and the stages' own tests fuse.
Only the stages that need no store run so (the fusion stages and their rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from docshelf.search.candidate import Candidate, Recalled
from docshelf.search.order import FusionSettings, fusion
from docshelf.search.pipeline import Parts, Search, Stage
from docshelf.search.query import parse_query
from docshelf.store.base import SearchFilters


def bare_search(
    lexical: Recalled = (),
    vector: Recalled = (),
    *,
    mode: str = "hybrid",
    query: str = "q",
    before: Recalled | None = None,
) -> Search:
    """A search whose engines answered ``lexical`` and ``vector`` (and, before
    feedback, ``before``), with no store, engines or model behind it."""
    none = cast(Any, None)
    parts = Parts(none, none, none, lambda: None, none, None, 0, lambda docs, user: list(docs))
    search = Search(parts, parse_query(query), mode, SearchFilters(), 10, 100)
    search.lexical, search.vector = list(lexical), list(vector)
    search.before_feedback = None if before is None else list(before)
    return search


def fused(
    lexical: Recalled,
    vector: Recalled,
    settings: FusionSettings | None = None,
    *,
    before: Recalled | None = None,
    stages: Sequence[Stage] | None = None,
) -> list[Candidate]:
    """The candidates after the fusion stages of ``settings`` (or ``stages``)."""
    search = bare_search(lexical, vector, before=before)
    for stage in stages if stages is not None else fusion(settings or FusionSettings()):
        stage(search)
    return search.candidates


def ids(candidates: Sequence[Candidate]) -> list[str]:
    """The candidates' ids, in order."""
    return [c.id for c in candidates]
