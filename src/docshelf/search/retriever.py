"""``Retriever``: runs a search through the ranking's stages (search/order.py), answers
identical searches from the retrieval cache while the library has not changed, and
reads around a hit (search/around.py).

Its parts are handed to it (the store, the engines, the embedder, the ranking, reranker,
taxonomy, cache, metrics and the per-user view of documents): it knows nothing of how
they were wired.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from docshelf.errors import InvalidInput
from docshelf.model import Distillate, Document
from docshelf.search.around import Around
from docshelf.search.cache import ResultCache
from docshelf.search.filters import SEARCH_MODES, with_query_fields
from docshelf.search.order import FusionSettings, Ranking, product
from docshelf.search.pipeline import Parts, Search, SeenBy, run
from docshelf.search.query import parse_query
from docshelf.search.results import (
    CACHED_LIMIT,
    CANDIDATE_POOL,
    GROUPS,
    MAX_LIMIT,
    ContextResult,
    SearchResult,
)
from docshelf.store.base import SearchFilters, SearchStore
from docshelf.wording import counted

if TYPE_CHECKING:
    from docshelf.embed import Embedder
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.rerank import Reranker
    from docshelf.search.engines import LexicalEngine, VectorEngine
    from docshelf.telemetry import Metrics

NO_EMBEDDER = (
    "No embedding model for this library: results are lexical only "
    "(install `docshelf[local]` and run `docshelf reindex` for hybrid search)"
)


class Retriever:
    """Search, context and distillates over one store."""

    def __init__(
        self,
        store: SearchStore,
        *,
        lexical: LexicalEngine,
        vector: VectorEngine,
        embedder: Callable[[], Embedder | None],
        ranking: Ranking,
        reranker: Reranker | None,
        rerank_top_k: int,
        taxonomy: Taxonomy,
        cache: ResultCache[SearchResult],
        metrics: Metrics,
        seen_by: SeenBy,
    ) -> None:
        self.store = store
        self.lexical = lexical
        self.vector = vector
        self._embedder = embedder  # read at each query: the caller may swap its embedder
        self.ranking = ranking
        self.reranker = reranker
        self.rerank_top_k = rerank_top_k
        self.taxonomy = taxonomy
        self.cache = cache
        self.metrics = metrics
        self.seen_by = seen_by
        self.around = Around(store, seen_by, taxonomy)

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder()

    @property
    def fusion(self) -> FusionSettings:
        """The settings of the ranking; set, the product's ranking with these."""
        return self.ranking.settings

    @fusion.setter
    def fusion(self, value: FusionSettings) -> None:
        self.ranking = product(value)

    def can_embed_queries(self) -> bool:
        """An embedder, of the model the library's vectors were made with (or the library
        has none yet): a query vector from another model would not be comparable."""
        embedder = self.embedder
        if embedder is None:
            return False
        return self.store.get_meta("embedding_model") in (None, embedder.model_id)

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        candidates: int | None = None,
        user_id: str | None = None,
        group: str = "snippet",
        expand: str | None = None,
        facets: bool = False,
    ) -> SearchResult:
        """Snippet-first hybrid search (``Shelf.search`` tells the query syntax and
        options). An identical search within the cache's TTL is answered from it, unless
        the library changed since."""
        _check_search(query, limit, mode, group, expand)
        request = (query, limit, mode, filters, candidates, user_id, group, expand, facets)

        def compute() -> SearchResult:
            return self._search(*request)

        with self.store.searching():
            if expand is not None or limit > CACHED_LIMIT:
                return compute()  # large results are not kept: the cache stays a few MB at most
            # What else shapes the result: the ranking (eval compares rankings on one
            # Shelf), the reranker (the object itself: a freed reranker's id is reused).
            key = (*request[:-2], facets, self.ranking, self.reranker, self.rerank_top_k)
            generation = self.store.generation()
            return self.cache.get_or_compute(key, generation, compute, user_id=user_id)

    def _search(
        self,
        query: str,
        limit: int,
        mode: str,
        filters: SearchFilters | None,
        candidates: int | None,
        user_id: str | None,
        group: str,
        expand: str | None,
        facets: bool,
    ) -> SearchResult:
        started = time.perf_counter()
        request = (query, limit, mode, filters, candidates, user_id, group, expand, facets)
        search, notice = self.prepare(*request)
        if search is None:  # any string is a valid query; this one asks for nothing
            return SearchResult(query=query, mode=mode, hits=[], notice=notice)
        run(self.ranking.stages, search)
        self.metrics.searched(search.mode, (time.perf_counter() - started) * 1000)
        hits, pool = search.hits, search.pool
        return SearchResult(
            query, search.mode, hits, notice, search.timings, pool, search.facets, search.backlog
        )

    def prepare(
        self,
        query: str,
        limit: int = 10,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        candidates: int | None = None,
        user_id: str | None = None,
        group: str = "snippet",
        expand: str | None = None,
        facets: bool = False,
    ) -> tuple[Search | None, str | None]:
        """The search the stages will run (None when the query has no words to search
        for), and the notice to show with its result (no query model: lexical)."""
        parsed = parse_query(query)
        if not parsed.text:
            return None, "The query has only filters or exclusions; add words to search for"
        filters = with_query_fields(
            filters or SearchFilters(), parsed.fields, user_id, self.taxonomy
        )
        notice: str | None = None
        if mode != "lexical" and not self.can_embed_queries():
            notice, mode = NO_EMBEDDER, "lexical"
        # A fixed pool: min-max fusion normalises over the candidates, so the
        # pool must not move with `limit` (bench/fusion.py measured 100 best).
        size = max(candidates or CANDIDATE_POOL, limit)
        if parsed.constrained or group in ("section", "document"):
            size *= 3  # phrases, exclusions and grouping discard candidates
        parts = Parts(
            self.store,
            self.lexical,
            self.vector,
            self._embedder,
            self.taxonomy,
            self.reranker,
            self.rerank_top_k,
            self.seen_by,
        )
        search = Search(parts, parsed, mode, filters, limit, size, group, expand, facets, user_id)
        if mode != "lexical" and (backlog := self.store.embedding_backlog(user_id)) is not None:
            search.backlog = backlog
            notice = notice or still_embedding(*backlog)
        return search, notice

    def unheld(
        self,
        words: Sequence[str],
        *,
        user_id: str | None = None,
        filters: SearchFilters | None = None,
    ) -> list[str]:
        """The ``words`` that no snippet within ``filters`` the user may read holds, each
        asked of the lexical engine alone (so a word counts as held in the forms that
        engine matches: "clobbering" holds for a text of "clobber")."""
        scope = with_query_fields(filters or SearchFilters(), (), user_id, self.taxonomy)
        with self.store.searching():
            return [w for w in words if not self.lexical.search([w], 1, scope)]

    # -- around a hit (search/around.py) -----------------------------------------------------
    def visible(self, document_id: str, user_id: str | None) -> Document:
        return self.around.visible(document_id, user_id)

    def context(
        self,
        chunk_id: str,
        mode: str = "snippet-window",
        window: int = 1,
        user_id: str | None = None,
        anchor: int | None = None,
    ) -> ContextResult:
        return self.around.context(chunk_id, mode, window, user_id, anchor)

    def distillates(
        self,
        query: str | None = None,
        *,
        document_id: str | None = None,
        limit: int = 20,
        user_id: str | None = None,
    ) -> list[tuple[Distillate, Document]]:
        return self.around.distillates(query, document_id=document_id, limit=limit, user_id=user_id)


def still_embedding(documents: int, pending: int) -> str:
    """What a search over a library partly embedded covers (ingest/vectors.py)."""
    return (
        f"Searching {counted(documents, 'document')} by their words; by meaning "
        f"{documents - pending:,} of {documents:,} so far (the rest are being embedded)"
    )


def _check_search(query: str, limit: int, mode: str, group: str, expand: str | None) -> None:
    if not query or not query.strip():
        raise InvalidInput("The query is empty; give some words to search for")
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"Unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    if group not in GROUPS:
        raise InvalidInput(f"Unknown grouping {group!r}; use one of {', '.join(GROUPS)}")
    if expand not in (None, "parent-section"):
        raise InvalidInput(f"Unknown expansion {expand!r}; use parent-section")
