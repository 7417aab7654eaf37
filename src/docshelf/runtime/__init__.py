"""``Runtime``: the wiring of one library — settings, store, embedder, derived indexes,
blobs, transport, LLM, reranker, taxonomy, metrics — built once and handed to the parts
that do the work (sync, uploads, workers, the enricher, reindex).

``Shelf`` is the facade over a ``Runtime``; the workers and the enricher take the
runtime (or anything carrying one, as a ``Shelf`` does), never the facade.

Beside it, what it delegates to, each made on first use: the embedding model the
library is bound to and the one a search embeds its query with (``runtime/model.py``),
and the upkeep of the derived indexes (``runtime/indexes.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, overload

from docshelf import progress as _progress
from docshelf.durable import private_dir, tighten
from docshelf.embed import DEFAULT_WINDOW, Embedder
from docshelf.errors import DocshelfError, Unavailable
from docshelf.ingest.writer import DocumentWriter
from docshelf.search.engines import engines_for
from docshelf.shared import open_shared
from docshelf.store import SearchStore, open_store

# What opening a library needs is imported above; the parts a command may never use
# (the retriever, the LLM, the queue, the blob store, metrics) are made on first use,
# with their modules, so a one-shot `sync` or `status` starts without them.
if TYPE_CHECKING:
    from docshelf.chunk import ChunkSettings
    from docshelf.config import Settings
    from docshelf.ingest.held import HeldBlobs
    from docshelf.ingest.prepare import Chunking, EmbedCounts
    from docshelf.knowledge.enricher import Enricher, EnrichResult
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.llm import LLM
    from docshelf.rerank import Reranker
    from docshelf.runtime.model import QueryModel
    from docshelf.search.cache import ResultCache
    from docshelf.search.engines import Engines, LexicalSidecar, VectorSidecar
    from docshelf.search.order import FusionSettings, Ranking
    from docshelf.search.results import SearchResult
    from docshelf.search.retriever import Retriever
    from docshelf.shared.caches import SummaryCache
    from docshelf.telemetry import Metrics, RateLimiter
    from docshelf.transport import Transport

# Long work reports ``ProgressEvent``s (phase, done of total, unit, item, snippets).
Progress = _progress.Progress
ProgressEvent = _progress.ProgressEvent

FROM_SETTINGS = object()  # the embedder the settings name (``Runtime(embedder=...)``)
# What docshelf keeps in the home besides the database and the sidecar indexes beside it
# (those the store and each index tighten): uploads' bytes (blobs/), the ONNX exports
# (embed: models/), evaluation libraries (evaluate: eval/), the resident search helper's
# socket, lock and log (cli/resident.py). Opening a library tightens them (durable.tighten);
# nothing else in the home is touched.
HOME_PARTS = ("blobs", "models", "eval", "search.sock", "search.lock", "search-helper.log")
log = logging.getLogger("docshelf")


class Wired(Protocol):
    """Anything that carries a runtime: a ``Runtime`` itself, or a ``Shelf``."""

    @property
    def runtime(self) -> Runtime: ...


T = TypeVar("T")


class OnRuntime(Generic[T]):
    """A facade's attribute kept on its ``Runtime``: read and set through the facade, so
    a caller that swaps one (``shelf.llm = ...``) changes it for every part."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> OnRuntime[T]: ...
    @overload
    def __get__(self, obj: Wired, owner: type) -> T: ...
    def __get__(self, obj: Wired | None, owner: type) -> T | OnRuntime[T]:
        if obj is None:
            return self
        value: T = getattr(obj.runtime, self.name)
        return value

    def __set__(self, obj: Wired, value: T) -> None:
        setattr(obj.runtime, self.name, value)


class Runtime:
    """The parts of one open library, and the few operations on them all."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | object | None = FROM_SETTINGS,
        fusion: FusionSettings | None = None,
        batch_snippets: int = 1024,
        check_model: bool = True,
        embed_purpose: str = "index",
    ) -> None:
        self.settings = settings
        # "query": this process only embeds queries (a CLI search), so the lean runtime
        # (embed/lean.py: no torch) serves when none is configured
        self.embed_purpose = embed_purpose
        self.batch_snippets = batch_snippets  # snippets parsed per commit of a sync, at most
        # seconds of parsing between two commits of an ingest, about (ingest/batches.py)
        self.commit_seconds = 3.0
        try:
            private_dir(settings.home)  # created 0700: the library is its owner's
        except OSError as exc:
            raise Unavailable(f"Cannot create {settings.home}: {exc.strerror}") from exc
        tighten(settings.home, walk=False)  # an older version's: 0700 now
        for name in HOME_PARTS:
            tighten(settings.home / name)
        # Redis when configured (DOCSHELF_REDIS_URL): event fan-out, shared caches
        self.broadcast, self.shared_cache = open_shared(settings.redis_url)
        self.store: SearchStore = open_store(settings.database_url)
        self.store.notices.listener = self.broadcast.publish
        try:
            self.embedder = self._bind_embedder(embedder, check_model)
        except BaseException:
            self.store.close()
            raise
        self._opened_with = self.embedder  # the chunking and token counts follow it
        # which engines answer recall; on SQLite, the sidecar indexes beside the database
        self._engines: Engines = engines_for(self.store, settings)
        self.vector_index: VectorSidecar | None = self._engines.vector_sidecar
        self.lexical_index: LexicalSidecar | None = self._engines.lexical_sidecar
        self._fusion_given = fusion
        self.enricher_instance: Enricher | None = None
        # The retrieval cache forgets on every change, made or not: a shared (Redis) one
        # tells the other replicas, even from a process that never searched.
        self._on_change: list[Callable[[], None]] = [self._clear_cache]
        self.writer = DocumentWriter(self.store, self.changed)
        # The parts below are made on first use; those set to reach another service or
        # read a file of their own are made now, so a bad setting fails the open as before.
        if settings.blob_url:
            self.blobs  # noqa: B018
        if settings.queue_url not in ("", "local"):
            self.transport  # noqa: B018
        if settings.llm.url:
            self._configured_llm  # noqa: B018
        if settings.taxonomy:
            self.taxonomy  # noqa: B018

    @cached_property
    def chunk_settings(self) -> ChunkSettings:
        from docshelf.chunk import ChunkSettings

        opened = self._opened_with
        return ChunkSettings.for_window(opened.window if opened else DEFAULT_WINDOW)

    @cached_property
    def count_tokens(self) -> Callable[[str], int]:
        if self._opened_with is not None:
            return self._opened_with.count_tokens
        from docshelf.chunk import approx_tokens

        return approx_tokens

    @cached_property
    def summaries(self) -> SummaryCache:
        from docshelf.shared.caches import SummaryCache

        return SummaryCache(self.store, self.shared_cache)

    @cached_property
    def host(self) -> str:
        import socket

        return socket.gethostname()

    @cached_property
    def embed_counts(self) -> EmbedCounts:
        from docshelf.ingest.prepare import EmbedCounts

        return EmbedCounts()

    @cached_property
    def blobs(self) -> HeldBlobs:
        from docshelf.blobs import open_blob_store
        from docshelf.ingest.held import HeldBlobs

        return HeldBlobs(open_blob_store(self.settings.blob_url, self.settings.home), self.store)

    @cached_property
    def metrics(self) -> Metrics:
        from docshelf.telemetry import Metrics

        return Metrics()

    @cached_property
    def rate_limit(self) -> RateLimiter:
        from docshelf.telemetry import RateLimiter

        return RateLimiter(self.settings.embed_rate)

    @cached_property
    def transport(self) -> Transport:
        from docshelf.transport import open_transport

        return open_transport(self.settings.queue_url)

    @cached_property
    def _configured_llm(self) -> LLM | None:
        from docshelf.llm import make_llm

        return make_llm(self.settings.llm)

    @cached_property
    def llm(self) -> LLM | None:
        return self._configured_llm

    @cached_property
    def taxonomy(self) -> Taxonomy:
        from docshelf.knowledge.taxonomy import configured_taxonomy

        return configured_taxonomy(self.settings.taxonomy)

    @cached_property
    def cache(self) -> ResultCache[SearchResult]:
        """Identical searches answered from memory (Redis when configured) until a change."""
        from docshelf.search.cache import RetrievalCache

        settings = self.settings
        cache: ResultCache[SearchResult]
        if self.shared_cache is None:
            cache = RetrievalCache(settings.retrieval_cache_seconds)
        else:
            from docshelf.search.results import SearchResult
            from docshelf.shared.caches import SharedRetrievalCache

            cache = SharedRetrievalCache(
                self.shared_cache,
                settings.redis_retrieval_seconds if settings.retrieval_cache_seconds > 0 else 0.0,
                SearchResult,
            )
        return cache

    def _clear_cache(self) -> None:
        self.cache.clear()

    @cached_property
    def retriever(self) -> Retriever:
        from docshelf.accounts import access
        from docshelf.rerank import make_reranker
        from docshelf.search.order import FusionSettings, product
        from docshelf.search.retriever import Retriever

        settings = self.settings
        fusion = self._fusion_given or FusionSettings.configured(settings.concept_boost)
        return Retriever(
            self.store,
            lexical=self._engines.lexical,
            vector=self._engines.vector,
            embedder=self.query_embedder,
            ranking=product(fusion),
            # the configured LLM, as when the retriever was made with the library
            reranker=make_reranker(settings.reranker, self._configured_llm),
            rerank_top_k=settings.rerank_top_k,
            taxonomy=self.taxonomy,
            cache=self.cache,
            metrics=self.metrics,
            seen_by=lambda docs, user_id: access.seen_by(self.store, docs, user_id),
        )

    @property
    def runtime(self) -> Runtime:
        return self

    # Fusion and the reranker belong to the Retriever; set here, they change what it uses.
    @property
    def fusion(self) -> FusionSettings:
        return self.retriever.fusion

    @fusion.setter
    def fusion(self, value: FusionSettings) -> None:
        self.retriever.fusion = value

    @property
    def ranking(self) -> Ranking:
        return self.retriever.ranking

    @ranking.setter
    def ranking(self, value: Ranking) -> None:
        self.retriever.ranking = value

    @property
    def reranker(self) -> Reranker | None:
        return self.retriever.reranker

    @reranker.setter
    def reranker(self, value: Reranker | None) -> None:
        self.retriever.reranker = value

    # -- lifecycle --------------------------------------------------------------
    def close(self) -> None:
        made = self.__dict__  # what was made on first use (cached_property)
        if "transport" in made:
            self.transport.close()
        if self.vector_index is not None:
            self.vector_index.close()
        self.store.close()
        self.broadcast.close()
        shared = self.summaries.cache if "summaries" in made else self.shared_cache
        if shared is not None:
            shared.close()

    def wake_workers(self, document_id: str) -> None:
        """Tell workers a job is due (after its commit). Losing the message is harmless:
        workers also poll the store."""
        try:
            self.transport.notify(document_id)
        except DocshelfError as exc:
            log.warning("could not notify workers of %s: %s", document_id, exc.message)

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` when what a caller may see changed in a way the store's
        generation does not tell (access, enrichment, a new generation): the retrieval
        cache's invalidation."""
        self._on_change.append(listener)

    def changed(self) -> None:
        for listener in self._on_change:
            listener()

    # -- the embedding model (runtime/model.py) ------------------------------------------
    def _bind_embedder(self, given: Embedder | object | None, check_model: bool) -> Embedder | None:
        """The configured embedder, refused when the library's vectors came from another
        model unless ``check_model`` is off (``reindex``): ``model.bound_embedder``."""
        from docshelf.runtime.model import bound_embedder

        return bound_embedder(
            self.settings,
            self.store,
            given,
            FROM_SETTINGS,
            check_model=check_model,
            purpose=self.embed_purpose,
        )

    @cached_property
    def _query_model(self) -> QueryModel:
        from docshelf.runtime.model import QueryModel

        return QueryModel(self)

    def prepare_query_model(self) -> bool:
        """Make ready what a search embeds its query with, so the first search of a new
        process after an ``add`` does not pay for it: ``model.QueryModel.prepare``."""
        return self._query_model.prepare()

    def query_embedder(self) -> Embedder | None:
        """What a search embeds its query with: ``model.QueryModel.for_search``."""
        return self._query_model.for_search()

    def model_conflict(self, embedder: Embedder | None) -> str | None:
        """Why ``embedder`` cannot write to this library (naming the fix), or None."""
        from docshelf.runtime.model import model_conflict

        return model_conflict(self.store, embedder)

    def check_writable(self) -> None:
        """Refuse writes whose vectors would not match the library's (naming the fix);
        the first write binds the library to the configured model."""
        from docshelf.runtime.model import check_writable

        check_writable(self.store, self.embedder)

    def chunking(self) -> Chunking:
        """Chunking as configured now (a caller may swap ``chunk_settings``)."""
        from docshelf.ingest.prepare import Chunking

        return Chunking(self.chunk_settings, self.count_tokens, self.taxonomy)

    @property
    def model_id(self) -> str | None:
        """The embedding model new documents are made with (None: lexical only)."""
        return self.embedder.model_id if self.embedder else None

    # -- enrichment -------------------------------------------------------------------
    @property
    def enricher(self) -> Enricher:
        if self.enricher_instance is None:
            from docshelf.knowledge.enricher import Enricher  # pydantic and friends, when needed

            self.enricher_instance = Enricher(self)
        return self.enricher_instance

    def enrich_pending(
        self, limit: int | None = None, *, progress: Progress | None = None, expected: int = 0
    ) -> list[EnrichResult]:
        """Enrich documents whose enrichment is pending (what workers do when idle);
        ``expected``: how many the caller knows are pending, for ``progress``. (The
        indexes' upkeep is the caller's: a worker enriches one at a time and keeps them
        when idle; ``add`` after all it enriched.)"""
        done = self.enricher.run_pending(limit, progress=progress, expected=expected)
        if done:
            self.changed()
        return done

    def enriched(self) -> None:
        """After enrichment wrote documents: the caches cleared, and the derived indexes
        brought in line (the vectors it re-embedded; the documents' fields an engine
        holds: Typesense's documents collection, whose filters the store answers until)."""
        self.changed()
        self.maintain_indexes()

    # -- derived indexes (runtime/indexes.py) ------------------------------------------
    def maintain_indexes(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """Bring the derived indexes beside the store up to date (SQLite's tantivy and ANN
        indexes); the ANN index's outcome. Never fails a write."""
        from docshelf.runtime.indexes import maintain_indexes

        return maintain_indexes(
            self.vector_index,
            self.lexical_index,
            force=force,
            rebuild=rebuild,
            progress=progress,
        )

    def maintain_vector_index(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        from docshelf.runtime.indexes import maintain_vector_index

        return maintain_vector_index(
            self.vector_index, force=force, rebuild=rebuild, progress=progress
        )

    def maintain_lexical_index(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """SQLite's tantivy index: switch at the threshold, build, or apply the store's
        log. Never fails a write: until the index has caught up, FTS5 answers."""
        from docshelf.runtime.indexes import maintain_lexical_index

        return maintain_lexical_index(
            self.lexical_index, force=force, rebuild=rebuild, progress=progress
        )
