"""One search as it moves through the ranking stages: the request, what the stages have
found so far, and the parts they use (``Search``), the stage protocol, and the loop that
runs an order of stages (``run``).

A stage is a small immutable value (its settings: a ``NamedTuple``, or a ``Fixed`` when
it has none) with a ``name`` and a call that reads and changes a ``Search``: recall
fills the engines' lists, fusion turns them into ``Candidate``s, later stages re-order
candidates, ``Cite`` turns them into hits, and the last stages shape the hits. The order
the product uses is ``search/order.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

from docshelf.model import Document, Hit
from docshelf.search.candidate import Candidate
from docshelf.search.entries import Told
from docshelf.search.query import ParsedQuery
from docshelf.search.reader import Reader
from docshelf.store.base import SearchFilters, SearchStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.embed import Embedder
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.rerank import Reranker
    from docshelf.search.engines import LexicalEngine, VectorEngine

# The caller's view of shared documents: each with their own name for it (access.as_named).
SeenBy = Callable[[Sequence[Document], str | None], list[Document]]


class Parts(NamedTuple):
    """What the stages use besides the search itself: the store, the engines, the query
    embedder (read at each search: the caller may swap it), the taxonomy, the reranker
    (None: the fused order stands) and the per-user view of documents."""

    store: SearchStore
    lexical: LexicalEngine
    vector: VectorEngine
    embedder: Callable[[], Embedder | None]
    taxonomy: Taxonomy
    reranker: Reranker | None
    rerank_top_k: int
    seen_by: SeenBy


class Search:
    """One search: the request (``parsed`` query, ``mode``, ``filters``, ``limit`` hits,
    ``size`` candidates asked of each engine, one hit per ``group``, ``expand``,
    ``facets_wanted``, ``user_id``) and what the stages made of it so far: each engine's
    list (chunk id, score; best first) and what the engines told of the candidates
    (``told``), the vector list the query itself found once feedback has replaced it
    (``before_feedback``), the candidates, the hits, the candidates' documents in order
    (``pool``), the facets and each stage's time. (A plain class: a search's state,
    mutable, made once a search.)"""

    __slots__ = (
        "_reader",
        "backlog",
        "before_feedback",
        "candidates",
        "expand",
        "facets",
        "facets_wanted",
        "filters",
        "group",
        "hits",
        "lexical",
        "limit",
        "mode",
        "parsed",
        "parts",
        "pool",
        "query_vector",
        "size",
        "timings",
        "told",
        "user_id",
        "vector",
    )

    def __init__(
        self,
        parts: Parts,
        parsed: ParsedQuery,
        mode: str,
        filters: SearchFilters,
        limit: int,
        size: int,
        group: str = "snippet",
        expand: str | None = None,
        facets_wanted: bool = False,
        user_id: str | None = None,
    ) -> None:
        self.parts = parts
        self.parsed = parsed
        self.mode = mode
        self.filters = filters
        self.limit = limit
        self.size = size
        self.group = group
        self.expand = expand
        self.facets_wanted = facets_wanted
        self.user_id = user_id
        self.lexical: list[tuple[str, float]] = []
        self.vector: list[tuple[str, float]] = []
        self.before_feedback: list[tuple[str, float]] | None = None
        self.query_vector: npt.NDArray[np.float32] | None = None
        self.told = Told()
        self.candidates: list[Candidate] = []
        self.hits: list[Hit] = []
        self.pool: list[str] = []
        self.facets: dict[str, dict[str, int]] = {}
        self.timings: dict[str, float] = {}
        # documents seen, and of them waiting for vectors (None: none waits; ingest/vectors.py)
        self.backlog: tuple[int, int] | None = None
        self._reader: Reader | None = None

    @property
    def wanted(self) -> int:
        """How many hits to cite: the limit, or the reranker's top K when it is more."""
        reranker, top_k = self.parts.reranker, self.parts.rerank_top_k
        return max(self.limit, top_k) if reranker is not None else self.limit

    @property
    def reader(self) -> Reader:
        """What the stages read of the candidates, read on first use (``Reader``)."""
        if self._reader is None:
            self._reader = Reader(self.parts.store, self.wanted)
        return self._reader


class Stage(Protocol):
    """A ranking stage: its ``name`` (in ``SearchResult.timings_ms``) and what it does to
    a search."""

    @property
    def name(self) -> str: ...

    def __call__(self, search: Search) -> None: ...


class Fixed:
    """A stage with no settings: every one of a kind is equal to every other (rankings
    compare, and key the retrieval cache, by their stages)."""

    __slots__ = ()
    name: ClassVar[str]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def run(stages: Sequence[Stage], search: Search) -> None:
    """Each stage in turn, each timed."""
    timings = search.timings
    clock = time.perf_counter
    for stage in stages:
        started = clock()
        stage(search)
        name = stage.name
        timings[name] = timings.get(name, 0.0) + (clock() - started) * 1000


@contextmanager
def timed(timings: dict[str, float], name: str) -> Iterator[None]:
    """Add how long the block took, in ms, to ``timings[name]``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + (time.perf_counter() - started) * 1000
