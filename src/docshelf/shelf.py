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
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from docshelf.config import Settings
from docshelf.progress import counter
from docshelf.runtime import FROM_SETTINGS, OnRuntime, Runtime
from docshelf.runtime import Progress as Progress  # the faces type their callbacks with it

# Only what opening a library needs is imported here: the rest (sync, search,
# uploads, the catalogue, accounts) where a method first uses it, so a one-shot
# `docshelf search` or `status` starts without the others (BENCHMARKS.md, "Start-up").
if TYPE_CHECKING:
    from docshelf.blobs import BlobWriter
    from docshelf.catalogue import DocumentView, Facets, Status
    from docshelf.chunk import ChunkSettings
    from docshelf.embed import Embedder
    from docshelf.errors import DocshelfError
    from docshelf.ingest.held import HeldBlobs
    from docshelf.ingest.prepare import EmbedCounts
    from docshelf.ingest.sync import Sync
    from docshelf.ingest.uploads import Upload, UploadResult, Uploads
    from docshelf.knowledge.answer import Answer, AnswerPiece
    from docshelf.knowledge.enricher import Enricher, EnrichResult
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.llm import LLM
    from docshelf.model import Distillate, Document, Event, Job, Source, SyncReport, User
    from docshelf.portable import ExportReport, ImportReport
    from docshelf.rerank import Reranker
    from docshelf.search.cache import ResultCache
    from docshelf.search.engines.tantivy import SidecarLexicalIndex
    from docshelf.search.engines.usearch import SidecarVectorIndex
    from docshelf.search.order import FusionSettings, Ranking
    from docshelf.search.results import ContextResult, SearchResult
    from docshelf.search.retriever import Retriever
    from docshelf.shared import Broadcast
    from docshelf.shared.caches import SummaryCache
    from docshelf.store import Listing, SearchFilters, Store
    from docshelf.telemetry import Metrics, RateLimiter
    from docshelf.transport import Transport


class Shelf:
    """A library of documents: sources in, cited hits out."""

    settings: OnRuntime[Settings] = OnRuntime("settings")
    store: OnRuntime[Store] = OnRuntime("store")
    embedder: OnRuntime[Embedder | None] = OnRuntime("embedder")
    fusion: OnRuntime[FusionSettings] = OnRuntime("fusion")
    ranking: OnRuntime[Ranking] = OnRuntime("ranking")
    chunk_settings: OnRuntime[ChunkSettings] = OnRuntime("chunk_settings")
    count_tokens: OnRuntime[Callable[[str], int]] = OnRuntime("count_tokens")
    batch_snippets: OnRuntime[int] = OnRuntime("batch_snippets")
    host: OnRuntime[str] = OnRuntime("host")
    summaries: OnRuntime[SummaryCache] = OnRuntime("summaries")
    broadcast: OnRuntime[Broadcast] = OnRuntime("broadcast")
    vector_index: OnRuntime[SidecarVectorIndex | None] = OnRuntime("vector_index")
    lexical_index: OnRuntime[SidecarLexicalIndex | None] = OnRuntime("lexical_index")
    embed_counts: OnRuntime[EmbedCounts] = OnRuntime("embed_counts")
    blobs: OnRuntime[HeldBlobs] = OnRuntime("blobs")
    metrics: OnRuntime[Metrics] = OnRuntime("metrics")
    rate_limit: OnRuntime[RateLimiter] = OnRuntime("rate_limit")
    transport: OnRuntime[Transport] = OnRuntime("transport")
    llm: OnRuntime[LLM | None] = OnRuntime("llm")
    reranker: OnRuntime[Reranker | None] = OnRuntime("reranker")
    taxonomy: OnRuntime[Taxonomy] = OnRuntime("taxonomy")
    _enricher: OnRuntime[Enricher | None] = OnRuntime("enricher_instance")
    retriever: OnRuntime[Retriever] = OnRuntime("retriever")
    _cache: OnRuntime[ResultCache[SearchResult]] = OnRuntime("cache")

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | object | None = FROM_SETTINGS,
        fusion: FusionSettings | None = None,
        batch_snippets: int = 1024,
        check_model: bool = True,
        embed_purpose: str = "index",
    ) -> None:
        """``embed_purpose="query"`` for a process that only searches: the query model
        then loads without torch when no embedding runtime is configured."""
        self.runtime = Runtime(
            settings or Settings.from_env(Path(home) if home else None),
            embedder=embedder,
            fusion=fusion,
            batch_snippets=batch_snippets,
            check_model=check_model,
            embed_purpose=embed_purpose,
        )

    @cached_property
    def _sync(self) -> Sync:
        from docshelf.ingest.sync import Sync  # a search needs none of it

        return Sync(self.runtime)

    @cached_property
    def _uploads(self) -> Uploads:
        from docshelf.ingest.uploads import Uploads

        return Uploads(self.runtime)

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
        listing: Listing | None = None,
    ) -> list[Document]:
        """Documents (only ``user_id``'s when given, under their own names; all for the
        local caller), narrowed and sorted by ``listing``."""
        docs = self.store.list_documents(
            source_id=source_id, user_id=user_id, limit=limit, offset=offset, listing=listing
        )
        return self._seen_by(docs, user_id)

    def facets(self, filters: SearchFilters | None = None, user_id: str | None = None) -> Facets:
        """Counts per file type, document type, source, tag, concept and year over the
        library (``user_id``'s documents only when given) narrowed by ``filters``."""
        from docshelf import catalogue
        from docshelf.store import SearchFilters

        filters = filters or SearchFilters()
        if user_id is not None:
            filters = dataclasses.replace(filters, user_id=user_id)
        return catalogue.library_facets(self.store, filters)

    def _visible(self, document_id: str, user_id: str | None) -> Document:
        from docshelf.accounts import access

        return access.visible(self.store, document_id, user_id)

    def _seen_by(self, docs: Sequence[Document], user_id: str | None) -> list[Document]:
        from docshelf.accounts import access

        return access.seen_by(self.store, docs, user_id)

    def document(self, document_id: str, user_id: str | None = None) -> DocumentView:
        """One document as ``user_id`` sees it: its files, sections, links and claims."""
        from docshelf import catalogue

        return catalogue.document_view(self.store, document_id, user_id)

    def status(self) -> Status:
        from docshelf import catalogue

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
        from docshelf.portable import export_library

        db, blobs, step = self.settings.database_url, self.blobs, counter(progress, "export")
        return export_library(db, blobs, Path(path), overwrite=overwrite, progress=step)

    def import_library(self, path: str | Path, *, progress: Progress | None = None) -> ImportReport:
        """Import an archive made by ``export_library``: nothing is parsed or embedded again."""
        from docshelf.portable import import_into

        return import_into(self.runtime, Path(path), progress=counter(progress, "import"))

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
        from docshelf.ingest.reindex import run

        return run(self.runtime, progress, index_only=index_only, document_id=document_id)

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
        from docshelf.knowledge.enricher import enrich_documents

        return enrich_documents(self.runtime, document_ids, user_id=user_id, progress=progress)

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
        return self.retriever.distillates(
            query, document_id=document_id, limit=limit, user_id=user_id
        )

    # -- search (search/retriever.py) ---------------------------------------------------------
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
        return self.retriever.search(
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

    def context(
        self,
        chunk_id: str,
        mode: str = "snippet-window",
        window: int = 1,
        user_id: str | None = None,
        anchor: int | None = None,
    ) -> ContextResult:
        """Widen a hit: its neighbours, its section, or its section's neighbours; with the
        hit's citation ``anchor``, cited under the same (inner) heading."""
        return self.retriever.context(chunk_id, mode, window, user_id, anchor)

    # -- answers (knowledge/answer.py) -------------------------------------------------------
    def ask(self, question: str, *, limit: int = 5, user_id: str | None = None) -> Answer:
        """A grounded answer: with the configured LLM, else extractive; every [n] verified."""
        from docshelf.knowledge.answer import ask

        return ask(self.retriever, question, limit=limit, user_id=user_id, llm=self.llm)

    def ask_stream(
        self, question: str, *, limit: int = 5, user_id: str | None = None
    ) -> Iterator[AnswerPiece]:
        """``ask`` as it is written: the sources, verified sentences, then the answer."""
        from docshelf.knowledge.answer import ask_stream

        return ask_stream(self.retriever, question, limit=limit, user_id=user_id, llm=self.llm)

    # -- users -------------------------------------------------------------------------------
    def create_user(self, name: str, *, admin: bool = False) -> tuple[User, str]:
        """A new user and their bearer token (shown once; only its hash is kept)."""
        from docshelf.accounts import users as users_mod

        return users_mod.create_user(self.store, name, admin=admin)

    def users(self) -> list[User]:
        return self.store.list_users()

    def revoke_user(self, name_or_id: str) -> User:
        from docshelf.accounts import users as users_mod

        return users_mod.revoke(self.store, name_or_id)

    def authenticate(self, token: str) -> User | None:
        """The user a bearer token names; None if it is unknown or revoked."""
        return self.authenticate_many([token])[0]

    def authenticate_many(self, tokens: Sequence[str]) -> list[User | None]:
        """``authenticate`` of several tokens in one store query (the API's requests that
        arrive together)."""
        from docshelf.accounts import users as users_mod

        return users_mod.authenticate(self.store, tokens)

    def local_admin_token(self) -> str | None:
        """On a home with no token yet, create the local admin's and return it (once)."""
        from docshelf.accounts import users as users_mod

        return users_mod.local_admin_token(self.store)

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

    def register_uploads(self, uploads: Sequence[Upload]) -> list[UploadResult | DocshelfError]:
        """Several ``register_upload`` calls in one durable transaction: one commit for
        all; each one's own refusal is its outcome."""
        return self._uploads.register_many(uploads)

    def receive_uploads(
        self, received: Sequence[tuple[str, str, BlobWriter]]
    ) -> list[UploadResult | BaseException]:
        """Uploads read whole into blob writers (``(user_id, name, writer)`` each), stored
        and recorded together: the API's group commit. One outcome per upload."""
        return self._uploads.receive_many(received)

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
