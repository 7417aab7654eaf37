"""``Shelf``: the one facade the CLI, the HTTP API, the MCP server and Python users call.

with Shelf() as shelf:
    shelf.add("~/notes")
    for hit in shelf.search("raft leader election").hits:
        print(hit.citation.label)

The facade delegates: the wiring lives in ``Runtime`` (runtime.py), sources in
``ingest/sync.py``, uploads and jobs in ``ingest/uploads.py``, reindex in
``ingest/reindex.py``, enrichment in ``knowledge/``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Literal, TypeVar, overload

from docshelf import access, catalogue
from docshelf import users as users_mod
from docshelf.blobs import BlobStore
from docshelf.catalogue import DocumentView, Status
from docshelf.chunk import ChunkSettings
from docshelf.config import Settings
from docshelf.embed import Embedder
from docshelf.errors import InvalidInput, NotFound
from docshelf.ingest.prepare import EmbedCounts
from docshelf.ingest.sync import Sync
from docshelf.ingest.uploads import UploadResult, Uploads
from docshelf.llm import LLM
from docshelf.model import (
    Chunk,
    Citation,
    Distillate,
    Document,
    Event,
    Hit,
    Job,
    Scores,
    Source,
    SyncReport,
    Tier,
    User,
)
from docshelf.rerank import Reranker
from docshelf.runtime import FROM_SETTINGS, Runtime
from docshelf.runtime import Progress as Progress  # the faces type their callbacks with it
from docshelf.search.ann import SidecarVectorIndex
from docshelf.search.cache import RetrievalCache
from docshelf.search.fusion import (
    Fused,
    FusionSettings,
    as_fused,
    boost,
    feedback_query,
    fuse,
)
from docshelf.search.lexical import SidecarLexicalIndex
from docshelf.search.query import STOPWORDS, ParsedQuery, lexical_terms, parse_query, satisfies
from docshelf.search.vector import ExactVectorIndex
from docshelf.shared import Broadcast
from docshelf.shared.caches import SharedRetrievalCache, SummaryCache
from docshelf.store import SearchFilters, Store
from docshelf.store.base import NativeVectorSearch
from docshelf.taxonomy import Taxonomy
from docshelf.telemetry import Metrics, RateLimiter
from docshelf.transport import Transport

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.answer import Answer, AnswerPiece
    from docshelf.knowledge.enricher import Enricher, EnrichResult
    from docshelf.portable import ExportReport, ImportReport

SearchMode = Literal["hybrid", "lexical", "vector"]
SEARCH_MODES: tuple[str, ...] = ("hybrid", "lexical", "vector")
ContextMode = Literal["snippet-window", "parent-section", "section-neighborhood"]
CONTEXT_MODES: tuple[str, ...] = ("snippet-window", "parent-section", "section-neighborhood")
MAX_LIMIT = 200
CACHED_LIMIT = 50  # searches asking for more hits (or expanded sections) are not cached
CANDIDATE_POOL = 100  # candidates per side (lexical, vector) before fusion
GROUPS: tuple[str, ...] = ("snippet", "section", "document")

T = TypeVar("T")


class _OnRuntime(Generic[T]):
    """A ``Shelf`` attribute kept on its ``Runtime``: read and set through the facade, so
    a caller that swaps one (``shelf.llm = ...``) changes it for every part."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _OnRuntime[T]: ...
    @overload
    def __get__(self, obj: Shelf, owner: type) -> T: ...
    def __get__(self, obj: Shelf | None, owner: type) -> T | _OnRuntime[T]:
        if obj is None:
            return self
        value: T = getattr(obj.runtime, self.name)
        return value

    def __set__(self, obj: Shelf, value: T) -> None:
        setattr(obj.runtime, self.name, value)


def _with_fields(
    filters: SearchFilters, parsed: ParsedQuery, user_id: str | None, taxonomy: Taxonomy
) -> SearchFilters:
    """Filters from the query string (``tag:x`` …) and the caller, on top of ``filters``;
    a field in the query replaces the same single-valued filter, tags and concepts add up
    (a concept includes its narrower concepts)."""
    given = dict(parsed.fields)
    tags = (*filters.tags, *(value for name, value in parsed.fields if name == "tags"))
    concepts = [value for name, value in parsed.fields if name == "concepts"]
    groups = (*filters.concept_groups, *(concept_group(taxonomy, c) for c in concepts))
    return SearchFilters(
        user_id=user_id if user_id is not None else filters.user_id,
        source_id=given.get("source_id", filters.source_id),
        path_prefix=given.get("path_prefix", filters.path_prefix),
        file_type=given.get("file_type", filters.file_type),
        tags=tags,
        document_ids=filters.document_ids,
        concept_groups=groups,
    )


def concept_group(taxonomy: Taxonomy, name: str) -> tuple[str, ...]:
    """The concept ids a filter on ``name`` (an id or a label) matches; an unknown name
    matches nothing."""
    concept = taxonomy.resolve(name)
    return tuple(sorted(taxonomy.narrower_or_same(concept))) if concept else (name,)


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    notice: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    candidates: list[str] = field(default_factory=list)  # document ids of the fused pool
    facets: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class ContextResult:
    chunk_id: str
    mode: str
    chunks: list[Chunk]
    citation: Citation

    @property
    def text(self) -> str:
        return "\n\n".join(c.text for c in self.chunks)


class Shelf:
    """A library of documents: sources in, cited hits out."""

    settings: _OnRuntime[Settings] = _OnRuntime("settings")
    store: _OnRuntime[Store] = _OnRuntime("store")
    embedder: _OnRuntime[Embedder | None] = _OnRuntime("embedder")
    fusion: _OnRuntime[FusionSettings] = _OnRuntime("fusion")
    chunk_settings: _OnRuntime[ChunkSettings] = _OnRuntime("chunk_settings")
    count_tokens: _OnRuntime[Callable[[str], int]] = _OnRuntime("count_tokens")
    batch_snippets: _OnRuntime[int] = _OnRuntime("batch_snippets")
    host: _OnRuntime[str] = _OnRuntime("host")
    summaries: _OnRuntime[SummaryCache] = _OnRuntime("summaries")
    broadcast: _OnRuntime[Broadcast] = _OnRuntime("broadcast")
    vector_index: _OnRuntime[SidecarVectorIndex | None] = _OnRuntime("vector_index")
    lexical_index: _OnRuntime[SidecarLexicalIndex | None] = _OnRuntime("lexical_index")
    _vectors: _OnRuntime[ExactVectorIndex] = _OnRuntime("vectors")
    embed_counts: _OnRuntime[EmbedCounts] = _OnRuntime("embed_counts")
    blobs: _OnRuntime[BlobStore] = _OnRuntime("blobs")
    metrics: _OnRuntime[Metrics] = _OnRuntime("metrics")
    rate_limit: _OnRuntime[RateLimiter] = _OnRuntime("rate_limit")
    transport: _OnRuntime[Transport] = _OnRuntime("transport")
    llm: _OnRuntime[LLM | None] = _OnRuntime("llm")
    reranker: _OnRuntime[Reranker | None] = _OnRuntime("reranker")
    taxonomy: _OnRuntime[Taxonomy] = _OnRuntime("taxonomy")
    _enricher: _OnRuntime[Enricher | None] = _OnRuntime("enricher_instance")

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | object | None = FROM_SETTINGS,
        fusion: FusionSettings | None = None,
        batch_snippets: int = 1024,
        check_model: bool = True,
    ) -> None:
        self.runtime = Runtime(
            settings or Settings.from_env(Path(home) if home else None),
            embedder=embedder,
            fusion=fusion,
            batch_snippets=batch_snippets,
            check_model=check_model,
        )
        self._sync = Sync(self.runtime)
        self._uploads = Uploads(self.runtime)
        shared = self.runtime.shared_cache
        self._cache: RetrievalCache[SearchResult] | SharedRetrievalCache[SearchResult] = (
            RetrievalCache(self.settings.retrieval_cache_seconds)
            if shared is None
            else SharedRetrievalCache(
                shared,
                self.settings.redis_retrieval_seconds
                if self.settings.retrieval_cache_seconds > 0
                else 0.0,
                SearchResult,
            )
        )
        self.runtime.on_change(self._cache.clear)

    # -- lifecycle --------------------------------------------------------------
    def close(self) -> None:
        self.runtime.close()

    def wake_workers(self, document_id: str) -> None:
        self.runtime.wake_workers(document_id)

    def __enter__(self) -> Shelf:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _model_conflict(self, embedder: Embedder | None) -> str | None:
        return self.runtime.model_conflict(embedder)

    # -- sources (ingest/sync.py) ---------------------------------------------------
    def add(
        self,
        path: str | Path,
        progress: Progress | None = None,
        *,
        user_id: str | None = None,
        follow_symlinks: bool | None = None,
    ) -> SyncReport:
        """Register a file or folder (indexed where it lives) and index it.

        The source belongs to ``user_id`` (the local admin when None): its
        documents are that user's. Symlinks leading outside a folder are not
        followed unless ``follow_symlinks`` (remembered on the source; None
        keeps what a source already registered has)."""
        return self._sync.add(path, progress, user_id=user_id, follow_symlinks=follow_symlinks)

    def sync(self, source_id: str | None = None, progress: Progress | None = None) -> SyncReport:
        """Re-read registered sources: new, changed and deleted files are followed."""
        return self._sync.sync(source_id, progress)

    def remove(self, target: str) -> SyncReport:
        """Unregister a source (by id or path); its documents leave the index everywhere."""
        return self._sync.remove(target)

    def sources(self) -> list[Source]:
        return self.store.list_sources()

    def add_documents(
        self, items: Iterable[tuple[str, bytes, str | None]], progress: Progress | None = None
    ) -> SyncReport:
        """Index documents given as bytes, not files: ``(name, data, title or None)``.

        ``name`` is shown as the document's path (its extension picks the
        parser). Bytes already in the library are not indexed again.
        """
        return self._sync.add_documents(items, progress)

    # -- documents -------------------------------------------------------------------
    def documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Document]:
        """Documents (only ``user_id``'s when given, under their own names; all for the
        local caller)."""
        docs = self.store.list_documents(
            source_id=source_id, user_id=user_id, limit=limit, offset=offset
        )
        return self._seen_by(docs, user_id)

    def _visible(self, document_id: str, user_id: str | None) -> Document:
        return access.visible(self.store, document_id, user_id)

    def _seen_by(self, docs: Sequence[Document], user_id: str | None) -> list[Document]:
        return access.seen_by(self.store, docs, user_id)

    def _hits_seen_by(self, hits: list[Hit], user_id: str | None) -> list[Hit]:
        if user_id is None:
            return hits
        docs = list({h.document.id: h.document for h in hits}.values())
        seen = {d.id: d for d in self._seen_by(docs, user_id)}
        out = []
        for h in hits:
            doc = seen[h.document.id]
            if doc is not h.document:
                h = dataclasses.replace(h, document=doc, citation=Citation.for_chunk(h.chunk, doc))
            out.append(h)
        return out

    def document(self, document_id: str, user_id: str | None = None) -> DocumentView:
        """One document as ``user_id`` sees it: its files, sections, links and claims."""
        return catalogue.document_view(self.store, document_id, user_id)

    def status(self) -> Status:
        return catalogue.status(self.runtime)

    def check(self) -> list[str]:
        return self.store.check()

    def maintain_indexes(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """The derived indexes beside the store brought up to date (``Runtime``)."""
        return self.runtime.maintain_indexes(force=force, rebuild=rebuild, progress=progress)

    def maintain_vector_index(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        return self.runtime.maintain_vector_index(force=force, rebuild=rebuild, progress=progress)

    def maintain_lexical_index(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        return self.runtime.maintain_lexical_index(force=force, rebuild=rebuild, progress=progress)

    def export_library(
        self, path: str | Path, *, overwrite: bool = False, progress: Progress | None = None
    ) -> ExportReport:
        """Write the whole library to one portable archive (see ``docshelf.portable``)."""
        from docshelf import portable

        return portable.export_library(
            self.settings.database_url,
            self.blobs,
            Path(path),
            overwrite=overwrite,
            progress=progress,
        )

    def import_library(self, path: str | Path, *, progress: Progress | None = None) -> ImportReport:
        """Import an archive made by ``export_library``: nothing is parsed or embedded again."""
        from docshelf import portable

        report = portable.import_library(
            self.store,
            self.blobs,
            Path(path),
            database_url=self.settings.database_url,
            progress=progress,
        )
        for doc_id in report.requeued:
            self.wake_workers(doc_id)
        self.maintain_indexes()
        return report

    def reindex(
        self,
        progress: Progress | None = None,
        *,
        index_only: bool = False,
        document_id: str | None = None,
    ) -> dict[str, object]:
        """Rebuild chunks and vectors with the current model and chunking settings, then the
        derived indexes (see ``docshelf.ingest.reindex``): search answers from the old
        generation until the new one is complete. Resumable. ``document_id``: that
        document alone. ``index_only``: rebuild just the derived indexes (repair)."""
        if index_only:
            lexical = self.maintain_lexical_index(rebuild=True, progress=progress)
            vector = self.maintain_vector_index(rebuild=True, progress=progress)
            return {"vector_index": vector, "lexical_index": lexical}
        from docshelf.ingest.reindex import reindex

        report = reindex(self.runtime, document_id=document_id, progress=progress)
        self.runtime.changed()
        return report.as_json()

    # -- knowledge ----------------------------------------------------------------------
    @property
    def enricher(self) -> Enricher:
        return self.runtime.enricher

    def enrich(
        self,
        document_ids: Sequence[str] | None = None,
        *,
        user_id: str | None = None,
        progress: Progress | None = None,
    ) -> list[EnrichResult]:
        """Enrich documents now (all visible ones when ``document_ids`` is None): summary,
        type, concepts and distillates, from the LLM when configured, else offline.
        Unchanged documents are answered from the enrichment cache."""
        if document_ids is None:  # the indexed ones: a queued or failed upload has no text
            docs = self.store.list_documents(user_id=user_id)
            ids = [d.id for d in docs if d.status == "complete"]
        else:
            ids = [self._visible(i, user_id).id for i in document_ids]
        results = []
        for n, doc_id in enumerate(ids):
            if progress:
                progress(n, len(ids), doc_id)
            results.append(self.enricher.enrich(doc_id))
        self.runtime.changed()
        if progress and ids:
            progress(len(ids), len(ids), "done")
        return results

    def queue_enrichment(self, user_id: str | None = None) -> int:
        """Mark the (user's) documents for enrichment again; workers take them when idle."""
        ids = [d.id for d in self.store.list_documents(user_id=user_id)]
        return self.store.reset_enrichment(ids) if ids else 0

    def enrich_pending(self, limit: int | None = None) -> list[EnrichResult]:
        """Enrich documents whose enrichment is pending (what workers do when idle)."""
        return self.runtime.enrich_pending(limit)

    def distillates(
        self,
        query: str | None = None,
        *,
        document_id: str | None = None,
        limit: int = 20,
        user_id: str | None = None,
    ) -> list[tuple[Distillate, Document]]:
        """Key claims: a document's (``document_id``), or those matching ``query``."""
        if document_id is not None:
            doc = self._visible(document_id, user_id)
            return [(d, doc) for d in self.store.distillates_of(doc.id)[:limit]]
        if not query or not query.strip():
            raise InvalidInput("Give a query or a document id to list distillates")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        parsed = parse_query(query)
        filters = _with_fields(SearchFilters(), parsed, user_id, self.taxonomy)
        found = self.store.search_distillates(lexical_terms(parsed.text), limit, filters)
        listed = self.store.list_documents(
            document_ids=tuple(dict.fromkeys(x.document_id for x, _ in found))
        )
        docs = {d.id: d for d in self._seen_by(listed, user_id)}
        return [(x, docs[x.document_id]) for x, _ in found if x.document_id in docs]

    # -- search -------------------------------------------------------------------------
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
        """Snippet-first hybrid search: lexical and vector recall, fused, then cited.

        The query may hold ``"phrases"``, ``-exclusions`` and ``tag:``/``path:``/
        ``type:``/``source:`` filters. ``group`` keeps the best snippet per
        ``section`` or ``document``; ``expand="parent-section"`` adds each hit's
        section text, so a caller gets whole arguments in one call. ``facets`` adds
        counts per tag, concept and type over the candidates' documents.

        An identical search within ``DOCSHELF_RETRIEVAL_CACHE_SECONDS`` is answered
        from memory, unless the library changed since (``search/cache.py``)."""

        def run() -> SearchResult:
            return self._search(
                query,
                limit=limit,
                mode=mode,
                filters=filters,
                candidates=candidates,
                user_id=user_id,
                group=group,
                expand=expand,
                facets=facets,
            )

        if expand is not None or limit > CACHED_LIMIT:
            return run()  # large results are not kept: the cache stays a few MB at most
        # What else shapes the result: fusion (eval compares settings on one Shelf), reranker
        # (the object itself, not its id(): a freed reranker's id is reused by the next).
        args: tuple[object, ...] = (query, limit, mode, filters, candidates, user_id, group)
        args += (facets, self.fusion, self.reranker, self.settings.rerank_top_k)
        return self._cache.get_or_compute(args, self.store.generation(), run, user_id=user_id)

    def _search(
        self,
        query: str,
        *,
        limit: int,
        mode: str,
        filters: SearchFilters | None,
        candidates: int | None,
        user_id: str | None,
        group: str,
        expand: str | None,
        facets: bool,
    ) -> SearchResult:
        if not query or not query.strip():
            raise InvalidInput("The query is empty; give some words to search for")
        if mode not in SEARCH_MODES:
            raise InvalidInput(
                f"Unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}"
            )
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        if group not in GROUPS:
            raise InvalidInput(f"Unknown grouping {group!r}; use one of {', '.join(GROUPS)}")
        if expand not in (None, "parent-section"):
            raise InvalidInput(f"Unknown expansion {expand!r}; use parent-section")
        parsed = parse_query(query)
        if not parsed.text:  # any string is a valid query; this one asks for nothing
            empty = "The query has only filters or exclusions; add words to search for"
            return SearchResult(query=query, mode=mode, hits=[], notice=empty)
        filters = _with_fields(filters or SearchFilters(), parsed, user_id, self.taxonomy)
        started = time.perf_counter()
        notice: str | None = None
        if mode != "lexical" and not self._can_embed_queries():
            notice = (
                "No embedding model for this library: results are lexical only "
                "(install `docshelf[local]` and run `docshelf reindex` for hybrid search)"
            )
            mode = "lexical"
        # A fixed pool: min-max fusion normalises over the candidates, so the
        # pool must not move with `limit` (bench/fusion.py measured 100 best).
        size = max(candidates or CANDIDATE_POOL, limit)
        if parsed.constrained or group != "snippet":
            size *= 3  # phrases, exclusions and grouping discard candidates
        timings: dict[str, float] = {}
        lexical: list[tuple[str, float]] = []
        vector: list[tuple[str, float]] = []
        if mode in ("hybrid", "lexical"):
            t = time.perf_counter()
            lexical = self._lexical_search(lexical_terms(parsed.text), size, filters)
            timings["lexical"] = (time.perf_counter() - t) * 1000
        if mode in ("hybrid", "vector"):
            assert self.embedder is not None
            t = time.perf_counter()
            qvec = self.embedder.embed([parsed.text])[0]
            timings["embed"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            vector = self._vector_search(qvec, size, filters)
            timings["vector"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        fused = (
            fuse(lexical, vector, self.fusion) if mode == "hybrid" else as_fused(lexical, vector)
        )
        timings["fusion"] = (time.perf_counter() - t) * 1000
        if mode == "hybrid" and self.fusion.feedback_docs > 0 and vector:
            t = time.perf_counter()
            vector = self._feedback(qvec, fused, size, filters)
            fused = fuse(lexical, vector, self.fusion)
            timings["feedback"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        wanted = max(limit, self.settings.rerank_top_k) if self.reranker else limit
        hits, pool = self._hits(fused, wanted, parsed, group, expand, self._named_concepts(parsed))
        timings["fetch"] = (time.perf_counter() - t) * 1000
        if self.reranker is not None and len(hits) > 1:
            t = time.perf_counter()
            hits = self._rerank(parsed.text, hits)
            timings["rerank"] = (time.perf_counter() - t) * 1000
        hits = self._hits_seen_by(hits[:limit], filters.user_id)
        self.metrics.searched(mode, (time.perf_counter() - started) * 1000)
        counts: dict[str, dict[str, int]] = {}
        if facets:
            t = time.perf_counter()
            counts = self._facets(pool)
            timings["facets"] = (time.perf_counter() - t) * 1000
        return SearchResult(query, mode, hits, notice, timings, pool, counts)

    def _facets(self, document_ids: list[str]) -> dict[str, dict[str, int]]:
        """Counts per tag, concept and file type over the documents of the candidates."""
        unique = tuple(dict.fromkeys(document_ids))
        docs = self.store.list_documents(document_ids=unique) if unique else []
        facets: dict[str, dict[str, int]] = {"tag": {}, "concept": {}, "type": {}}
        for doc in docs:
            for key, values in (
                ("tag", doc.tags),
                ("concept", doc.concept_ids),
                ("type", (doc.file_type,)),
            ):
                for value in values:
                    facets[key][value] = facets[key].get(value, 0) + 1
        return {
            k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in facets.items()
        }

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        """The top-K hits in the reranker's order; if it declines, the fused order stands."""
        assert self.reranker is not None
        top = hits[: self.settings.rerank_top_k]
        scores = self.reranker.scores(query, [h.chunk.retrieval_text for h in top])
        if scores is None or len(scores) != len(top):
            return hits
        ranked = sorted(range(len(top)), key=lambda i: (-scores[i], i))
        reranked = [
            dataclasses.replace(top[i], scores=dataclasses.replace(top[i].scores, rerank=scores[i]))
            for i in ranked
        ]
        return reranked + hits[len(top) :]

    def _lexical_search(
        self, terms: list[str], limit: int, filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """SQLite: the tantivy index beside the store when the library is large and the
        index has caught up with the store, else FTS5; PostgreSQL: its full-text search."""
        if self.lexical_index is not None:
            return self.lexical_index.search(terms, limit, filters)
        return self.store.lexical_search(terms, limit, filters)

    def _vector_search(
        self, query: npt.NDArray[np.float32], limit: int, filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """The store's own ANN index when it has one (PostgreSQL: pgvector HNSW, filters in
        SQL); else an exact scan of the in-memory matrix, masked by the filters."""
        if isinstance(self.store, NativeVectorSearch):
            return self.store.vector_search(query, limit, filters)
        if self.vector_index is not None:
            return self.vector_index.search(query, limit, filters)
        allowed = None if filters.empty else self.store.documents_matching(filters)
        return self._vectors.search(query, limit, allowed)

    def _feedback(
        self,
        query: npt.NDArray[np.float32],
        fused: Sequence[Fused],
        limit: int,
        filters: SearchFilters,
    ) -> list[tuple[str, float]]:
        """Vector recall again, for the query moved toward the first fusion's top snippets
        (pseudo-relevance feedback: no model call, one more vector search)."""
        top = [f.id for f in fused[: self.fusion.feedback_docs]]
        found = self.store.get_vectors(top)
        moved = feedback_query(
            query, [found[i] for i in top if i in found], self.fusion.feedback_weight
        )
        return self._vector_search(moved, limit, filters)

    def _can_embed_queries(self) -> bool:
        return self.embedder is not None and self._model_conflict(self.embedder) is None

    def _hits(
        self,
        fused: Sequence[Fused],
        limit: int,
        parsed: ParsedQuery,
        group: str,
        expand: str | None,
        concepts: tuple[str, ...] = (),
    ) -> tuple[list[Hit], list[str]]:
        """Fused candidates to cited hits, in order: the concept boost, phrase/exclusion
        checks, near-identical snippets dropped, one hit per group, optionally with the
        parent section. Also the document ids of all the candidates, in fused order (what
        evaluation measures)."""
        chunks = {c.id: c for c in self.store.get_chunks([f.id for f in fused])}
        if concepts:
            fused = self._boost_concepts(fused, chunks, concepts)
        pool = [chunks[f.id].document_id for f in fused if f.id in chunks]
        docs: dict[str, Document] = {}
        groups: set[str] = set()
        texts: set[str] = set()
        hits: list[Hit] = []
        for f in fused:
            chunk = chunks.get(f.id)
            if chunk is None:
                continue  # deleted between recall and fetch
            if parsed.constrained and not satisfies(chunk.text, parsed):
                continue
            same_text = " ".join(chunk.text.casefold().split())[:400]
            key = {"document": chunk.document_id, "section": chunk.parent_id or chunk.id}.get(
                group, chunk.id
            )
            if same_text in texts or key in groups:
                continue
            doc = docs.get(chunk.document_id) or self.store.get_document(chunk.document_id)
            if doc is None:
                continue
            docs[doc.id] = doc
            texts.add(same_text)
            groups.add(key)
            hits.append(
                Hit(
                    chunk=chunk,
                    document=doc,
                    score=f.score,
                    scores=Scores(lexical=f.lexical, vector=f.vector, fused=f.score),
                    citation=Citation.for_chunk(chunk, doc),
                )
            )
            if len(hits) == limit:
                break
        if expand == "parent-section":
            parents = {
                c.id: c for c in self.store.get_chunks([h.chunk.parent_id or "" for h in hits])
            }
            hits = [
                dataclasses.replace(h, context=parents.get(h.chunk.parent_id or "")) for h in hits
            ]
        return hits, pool

    def _named_concepts(self, parsed: ParsedQuery) -> tuple[str, ...]:
        """The concepts the query names — in its words (a label or alternative label of the
        taxonomy) or a ``concept:`` field — with their narrower ones; () when the boost is
        off."""
        if self.fusion.concept_boost <= 0:
            return ()
        named = self.taxonomy.mentioned(parsed.text, STOPWORDS)
        for name, value in parsed.fields:
            concept = self.taxonomy.resolve(value) if name == "concepts" else None
            if concept is not None:
                named.append(concept)
        return tuple(sorted({c for n in named for c in self.taxonomy.narrower_or_same(n)}))

    def _boost_concepts(
        self, fused: Sequence[Fused], chunks: dict[str, Chunk], concepts: tuple[str, ...]
    ) -> list[Fused]:
        """Raise the candidates whose document carries one of ``concepts`` (SPEC §4)."""
        docs = list(dict.fromkeys(c.document_id for c in chunks.values()))
        marked: set[str] = set()
        for start in range(0, len(docs), 400):
            marked |= self.store.documents_matching(
                SearchFilters(
                    document_ids=tuple(docs[start : start + 400]), concept_groups=(concepts,)
                )
            )
        ids = {f.id for f in fused if f.id in chunks and chunks[f.id].document_id in marked}
        return boost(fused, ids, self.fusion.concept_boost)

    # -- context ---------------------------------------------------------------------------
    def context(
        self,
        chunk_id: str,
        mode: str = "snippet-window",
        window: int = 1,
        user_id: str | None = None,
    ) -> ContextResult:
        """Widen a hit: its neighbours, its section, or its section's neighbours."""
        if mode not in CONTEXT_MODES:
            raise InvalidInput(
                f"Unknown context mode {mode!r}; use one of {', '.join(CONTEXT_MODES)}"
            )
        if not 0 <= window <= 20:
            raise InvalidInput(f"window must be between 0 and 20, not {window}")
        found = self.store.get_chunks([chunk_id])
        if not found:
            raise NotFound(f"No chunk {chunk_id!r}")
        chunk = found[0]
        try:
            doc = self._visible(chunk.document_id, user_id)
        except NotFound:
            raise NotFound(f"No chunk {chunk_id!r}") from None
        if mode == "snippet-window":
            chunks = self._neighbours(chunk, window)
        else:
            section = chunk
            if chunk.tier is Tier.SNIPPET and chunk.parent_id:
                section = self.store.get_chunks([chunk.parent_id])[0]
            chunks = [section] if mode == "parent-section" else self._neighbours(section, 1)
        return ContextResult(chunk_id, mode, chunks, Citation.for_chunk(chunk, doc))

    def _neighbours(self, chunk: Chunk, window: int) -> list[Chunk]:
        tier = self.store.chunks_of_document(chunk.document_id, chunk.tier)
        lo, hi = max(0, chunk.index - window), chunk.index + window + 1
        return tier[lo:hi]

    # -- answers ---------------------------------------------------------------------------
    def ask(self, question: str, *, limit: int = 5, user_id: str | None = None) -> Answer:
        """A grounded answer: with the configured LLM, else extractive; every [n] verified."""
        from docshelf.answer import ask

        return ask(self, question, limit=limit, user_id=user_id, llm=self.llm)

    def ask_stream(
        self, question: str, *, limit: int = 5, user_id: str | None = None
    ) -> Iterator[AnswerPiece]:
        """``ask`` as it is written: the sources, verified sentences, then the answer."""
        from docshelf.answer import ask_stream

        if not question or not question.strip():
            raise InvalidInput("The question is empty")
        return ask_stream(self, question, limit=limit, user_id=user_id, llm=self.llm)

    # -- users -------------------------------------------------------------------------------
    def create_user(self, name: str, *, admin: bool = False) -> tuple[User, str]:
        """A new user and their bearer token (shown once; only its hash is kept)."""
        return users_mod.create_user(self.store, name, admin=admin)

    def users(self) -> list[User]:
        return self.store.list_users()

    def revoke_user(self, name_or_id: str) -> User:
        user = self.store.get_user(name_or_id)
        if user is None:
            raise NotFound(f"No user {name_or_id!r}")
        revoked = dataclasses.replace(user, revoked_at=time.time())
        self.store.put_user(revoked, None)
        return revoked

    def authenticate(self, token: str) -> User | None:
        return users_mod.authenticate(self.store, token)

    def local_admin_token(self) -> str | None:
        """On a home with no token yet, create the local admin's and return it (once)."""
        admin = users_mod.ensure_local_admin(self.store)
        if self.store.has_token(admin.id):
            return None
        return users_mod.issue_token(self.store, admin)

    # -- uploads and jobs (ingest/uploads.py) --------------------------------------------
    def register_upload(self, user_id: str, name: str, sha256: str, size: int) -> UploadResult:
        """Record uploaded bytes (already in the blob store) for ``user_id``.

        New bytes get a document and a queued job; bytes this user already has
        are answered with the same document; bytes another user already has
        get an access link for this one — nothing is parsed or embedded again.
        The caller's name for it is kept on their access link; the answer to a new
        link says ``queued``, as for new bytes, so no one learns what others hold.
        """
        return self._uploads.register(user_id, name, sha256, size)

    def upload(self, user_id: str, name: str, data: bytes) -> UploadResult:
        """Store ``data`` as an upload named ``name`` (the library form of POST /v1/documents)."""
        return self._uploads.upload(user_id, name, data)

    def job(self, document_id: str, user_id: str | None = None) -> Job:
        return self._uploads.job(document_id, user_id)

    def retry(self, document_id: str, user_id: str | None = None) -> Job:
        """Re-queue a failed job at the stage where it failed."""
        return self._uploads.retry(document_id, user_id)

    def delete_document(self, document_id: str, user_id: str | None = None) -> bool:
        """Remove the caller's access; the last access removes the data. True if data went."""
        return self._uploads.delete_document(document_id, user_id)

    def events(
        self,
        after: int = 0,
        *,
        document_id: str | None = None,
        lifecycle: bool = False,
        user_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        """Stage events of one document, or lifecycle events (``document.*``), after ``after``."""
        return self._uploads.events(
            after, document_id=document_id, lifecycle=lifecycle, user_id=user_id, limit=limit
        )
