"""``Shelf``: the front door of a library, which the CLI, the HTTP API, the MCP server,
the web page, evaluation and Python users call.

    with Shelf() as shelf:
        shelf.add("~/notes")
        for hit in shelf.search("raft leader election").hits:
            print(hit.citation.label)

What passes through it: every operation on the library is a method here (sources,
documents, search and answers, index upkeep, enrichment, users, uploads and their jobs)
or on ``shelf.service``, what a serving process runs beside them (ingest workers, upload
intake, wake-ups, news of commits, a background reindex, the metrics' gauges:
``ingest/service.py``). A face reads ``settings``, ``taxonomy``, ``embedder`` and
``metrics``; the other parts of the open library (``Parts``: the store, the blob store,
the transport, ...) are for tests and tuning, and no face reaches into them or into
``runtime``.

What a face imports besides: the kernel (errors, settings, the data model, ``terminal``,
``progress``, ...); the values it names, from where they live (the filter vocabulary,
result and view types, the parts' settings); ``views``, to render; and the long-running
work it hosts, built from its module and handed the Shelf (ingest workers, watching
sources, filing an inbox, the server's shutdown). Three more, by name: the web reader
parses a document's bytes to show it, ``migrate`` opens the store alone, evaluation
makes the one embedder its libraries share. tests/test_front_door.py holds these rules.

The facade delegates: the wiring lives in ``Runtime`` (runtime/), sources in
``ingest/sync.py``, uploads and jobs in ``ingest/uploads.py``, reindex in
``ingest/reindex.py``, enrichment in ``knowledge/``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from docshelf.config import Settings
from docshelf.progress import counter
from docshelf.runtime import FROM_SETTINGS, OnRuntime, Runtime
from docshelf.runtime import Progress as Progress  # the faces type their callbacks with it
from docshelf.shelf_accounts import Accounts
from docshelf.shelf_asking import Asking

# Only what opening a library needs is imported here: the rest (sync, search,
# uploads, the catalogue, accounts) where a method first uses it, so a one-shot
# `docshelf search` or `status` starts without the others (docs/benchmarks/start-up.md).
if TYPE_CHECKING:
    from docshelf.blobs import BlobWriter
    from docshelf.catalogue import DocumentView, Facets, Status
    from docshelf.chunk import ChunkSettings
    from docshelf.embed import Embedder
    from docshelf.errors import DocshelfError
    from docshelf.ingest.check import Problem
    from docshelf.ingest.held import HeldBlobs
    from docshelf.ingest.prepare import EmbedCounts
    from docshelf.ingest.service import Service
    from docshelf.ingest.sync import Sync
    from docshelf.ingest.uploads import Upload, UploadResult, Uploads
    from docshelf.knowledge.enricher import Enricher, EnrichResult
    from docshelf.knowledge.manifest import ManifestReport
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.llm import LLM
    from docshelf.model import (
        Chunk,
        Distillate,
        Document,
        Event,
        Failure,
        Job,
        Source,
        SyncReport,
    )
    from docshelf.portable import ExportReport, ImportReport
    from docshelf.rerank import Reranker
    from docshelf.search.cache import ResultCache
    from docshelf.search.engines import LexicalSidecar, VectorSidecar
    from docshelf.search.order import FusionSettings, Ranking
    from docshelf.search.results import ContextResult, SearchResult
    from docshelf.search.retriever import Retriever
    from docshelf.shared import Broadcast
    from docshelf.shared.caches import SummaryCache
    from docshelf.store import Listing, SearchFilters, SearchStore
    from docshelf.telemetry import Metrics, RateLimiter
    from docshelf.transport import Transport


class Parts:
    """The parts of an open library (``Runtime``), read and swapped through the facade,
    so a swap (``shelf.llm = ...``) reaches every part. Faces read ``settings``,
    ``taxonomy``, ``embedder`` (whether the library embeds) and ``metrics`` (the counters
    they add to); evaluation swaps ``ranking`` and ``chunk_settings``; the rest is for
    tests and tools."""

    runtime: Runtime
    settings: OnRuntime[Settings] = OnRuntime("settings")
    taxonomy: OnRuntime[Taxonomy] = OnRuntime("taxonomy")
    metrics: OnRuntime[Metrics] = OnRuntime("metrics")
    store: OnRuntime[SearchStore] = OnRuntime("store")
    embedder: OnRuntime[Embedder | None] = OnRuntime("embedder")
    fusion: OnRuntime[FusionSettings] = OnRuntime("fusion")
    ranking: OnRuntime[Ranking] = OnRuntime("ranking")
    chunk_settings: OnRuntime[ChunkSettings] = OnRuntime("chunk_settings")
    count_tokens: OnRuntime[Callable[[str], int]] = OnRuntime("count_tokens")
    batch_snippets: OnRuntime[int] = OnRuntime("batch_snippets")
    host: OnRuntime[str] = OnRuntime("host")
    summaries: OnRuntime[SummaryCache] = OnRuntime("summaries")
    broadcast: OnRuntime[Broadcast] = OnRuntime("broadcast")
    vector_index: OnRuntime[VectorSidecar | None] = OnRuntime("vector_index")
    lexical_index: OnRuntime[LexicalSidecar | None] = OnRuntime("lexical_index")
    embed_counts: OnRuntime[EmbedCounts] = OnRuntime("embed_counts")
    blobs: OnRuntime[HeldBlobs] = OnRuntime("blobs")
    rate_limit: OnRuntime[RateLimiter] = OnRuntime("rate_limit")
    transport: OnRuntime[Transport] = OnRuntime("transport")
    llm: OnRuntime[LLM | None] = OnRuntime("llm")
    reranker: OnRuntime[Reranker | None] = OnRuntime("reranker")
    _enricher: OnRuntime[Enricher | None] = OnRuntime("enricher_instance")
    retriever: OnRuntime[Retriever] = OnRuntime("retriever")
    _cache: OnRuntime[ResultCache[SearchResult]] = OnRuntime("cache")

    @property
    def enricher(self) -> Enricher:
        return self.runtime.enricher


class Shelf(Parts, Accounts, Asking):
    """A library of documents: sources in, cited hits out."""

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

    def __enter__(self) -> Shelf:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sources (ingest/sync.py) ---------------------------------------------------
    def add(
        self,
        path: str | Path,
        progress: Progress | None = None,
        *,
        user_id: str | None = None,
        follow_symlinks: bool | None = None,
        background: bool = False,
    ) -> SyncReport:
        """Register a file or folder (indexed where it lives, as ``user_id``'s; the local
        admin's when None) and index it. Symlinks leading outside a folder are followed
        only with ``follow_symlinks`` (kept on the source; None keeps what it has). With
        ``background``, return once its words are searchable: its vectors (and enrichment)
        are left for ``embed_pending`` in another process."""
        return self._sync.add(
            path, progress, user_id=user_id, follow_symlinks=follow_symlinks, background=background
        )

    def sync(
        self,
        source_id: str | None = None,
        progress: Progress | None = None,
        *,
        full: bool = False,
        background: bool = False,
    ) -> SyncReport:
        """Re-read registered sources; ``full``: read every file, retry every failure;
        ``background``: as ``add``'s."""
        return self._sync.sync(source_id, progress, full=full, background=background)

    def waiting_for_vectors(self, user_id: str | None = None) -> int:
        """Documents (``user_id`` may read) searchable by their words only, for now."""
        backlog = self.store.embedding_backlog(user_id)
        return backlog[1] if backlog else 0

    def embed_pending(self, progress: Progress | None = None) -> int:
        """Vectors for the documents searchable by their words only (an ``add`` killed, or
        run with ``background``), then enrichment when it is on; how many were embedded."""
        return self._sync.finish_pending(progress)

    def remove(self, target: str) -> SyncReport:
        """Unregister a source (by id or path); its documents leave the index everywhere."""
        return self._sync.remove(target)

    def sources(self) -> list[Source]:
        return self.store.list_sources()

    def source(self, target: str) -> Source:
        """The source ``target`` names: its id, or the path it was added with."""
        from docshelf.ingest.sync import named

        return named(self.store, target)

    def add_documents(
        self, items: Iterable[tuple[str, bytes, str | None]], progress: Progress | None = None
    ) -> SyncReport:
        """Index documents given as bytes, ``(name, data, title or None)``: ``name`` is
        shown as the path (its extension picks the parser); known bytes are skipped."""
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
        """Documents (``user_id``'s under their own names; all when None), by ``listing``."""
        from docshelf.accounts import access

        docs = self.store.list_documents(
            source_id=source_id, user_id=user_id, limit=limit, offset=offset, listing=listing
        )
        return access.seen_by(self.store, docs, user_id)

    def count_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        listing: Listing | None = None,
    ) -> int:
        """How many documents ``documents`` lists without a limit."""
        return self.store.count_documents(source_id=source_id, user_id=user_id, listing=listing)

    def facets(self, filters: SearchFilters | None = None, user_id: str | None = None) -> Facets:
        """Counts per file type, type, source, tag, concept and year (of ``user_id``'s)."""
        from docshelf import catalogue
        from docshelf.search.engines.typesense_lexical import TypesenseLexicalIndex
        from docshelf.store import SearchFilters

        filters = filters or SearchFilters()
        if user_id is not None:
            filters = dataclasses.replace(filters, user_id=user_id)
        index = self.lexical_index
        engine = index.documents if isinstance(index, TypesenseLexicalIndex) else None
        return catalogue.library_facets(self.store, filters, engine)

    def document(self, document_id: str, user_id: str | None = None) -> DocumentView:
        """One document as ``user_id`` sees it: its files, sections, links and claims."""
        from docshelf import catalogue

        return catalogue.document_view(self.store, document_id, user_id)

    def document_id(self, given: str) -> str:
        """The one document whose id is or starts with ``given`` (``catalogue.document_id``)."""
        from docshelf import catalogue

        return catalogue.document_id(self.store, given)

    def chunk(self, chunk_id: str) -> Chunk | None:
        """A chunk by id (None: unknown); ``document`` says whether a caller may see it."""
        found = self.store.get_chunks([chunk_id])
        return found[0] if found else None

    def original(self, sha256: str) -> BinaryIO | None:
        """An upload's bytes, to read and close; None when a folder document's file has them."""
        return self.blobs.open(sha256) if self.blobs.exists(sha256) else None

    def status(self) -> Status:
        from docshelf import catalogue

        return catalogue.status(self.runtime)

    def failures(self, limit: int = 100) -> list[Failure]:
        """Files of the sources that could not be added, with why (``status`` has the first)."""
        return self.store.list_failures(limit=limit)

    def check(self, *, repair: bool = False) -> list[Problem]:
        """What is untrue to files, chunks or indexes (ingest/check.py); ``repair`` mends."""
        from docshelf.ingest.check import check

        return check(self.runtime, repair=repair)

    def generation(self) -> int:
        """Bumped by every committed change to chunks or vectors."""
        return self.store.generation()

    def bound_model(self) -> str | None:
        """The model the library's vectors are made with ("none": lexical; None: unwritten)."""
        return self.store.get_meta("embedding_model")

    @property
    def database(self) -> str:
        """The store's URL as shown to people (no password)."""
        return self.store.url

    # -- index upkeep ------------------------------------------------------------------
    def maintain_indexes(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """The derived indexes beside the store brought up to date (``Runtime``)."""
        return self.runtime.maintain_indexes(force=force, rebuild=rebuild, progress=progress)

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
        derived indexes (``docshelf.ingest.reindex``: resumable; search answers from the old
        generation meanwhile). ``document_id``: that one alone; ``index_only``: the indexes."""
        from docshelf.ingest.reindex import run

        return run(self.runtime, progress, index_only=index_only, document_id=document_id)

    # -- knowledge ----------------------------------------------------------------------
    def enrich(
        self,
        document_ids: Sequence[str] | None = None,
        *,
        user_id: str | None = None,
        progress: Progress | None = None,
    ) -> list[EnrichResult]:
        """Enrich documents now (all visible ones when ``document_ids`` is None): summary,
        type, concepts, distillates; by the LLM when configured, else offline (cached)."""
        from docshelf.knowledge.enricher import enrich_documents

        return enrich_documents(self.runtime, document_ids, user_id=user_id, progress=progress)

    def enrich_from_manifest(
        self,
        manifest: str | Path | BinaryIO,
        *,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ManifestReport:
        """Write enrichment computed elsewhere, a JSON Lines manifest (a file or a stream of
        its bytes: knowledge/manifest.py), with no LLM call; ``dry_run``: report only."""
        from docshelf.knowledge.manifest import backfill

        return backfill(self.runtime, manifest, dry_run=dry_run, progress=progress)

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
        notebook: str | None = None,
    ) -> SearchResult:
        """Snippet-first hybrid search, each hit cited (docs/search.md: the query's
        syntax, ``group``, ``expand``, ``facets``, the retrieval cache), within a
        ``notebook`` (its id or name) when one is given."""
        if notebook:
            filters = self.notebooks.narrowed(filters, notebook, user_id)
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
        notebook: str | None = None,
    ) -> ContextResult:
        """Widen a hit: its neighbours, its section, or its section's neighbours; with the
        hit's citation ``anchor``, cited under the same (inner) heading; NotFound for a
        hit outside the ``notebook`` given."""
        if notebook:
            self.notebooks.holding(notebook, chunk_id, user_id)
        return self.retriever.context(chunk_id, mode, window, user_id, anchor)

    def prepare_query_model(self) -> bool:
        """Make ready, off any search's path, what searches embed their queries with
        (``Runtime.prepare_query_model``); True when it is ready."""
        return self.runtime.prepare_query_model()

    # -- uploads and jobs (ingest/uploads.py) --------------------------------------------
    def register_upload(self, user_id: str, name: str, sha256: str, size: int) -> UploadResult:
        """Record uploaded bytes (already in the blob store) for ``user_id``: new bytes get
        a document and a queued job; known ones, this user's document or an access link
        (nothing parsed or embedded again), answered alike (``Uploads.register_many``)."""
        return self._uploads.register(user_id, name, sha256, size)

    def register_uploads(self, uploads: Sequence[Upload]) -> list[UploadResult | DocshelfError]:
        """Several ``register_upload`` calls in one durable transaction: one commit for
        all; each one's own refusal is its outcome."""
        return self._uploads.register_many(uploads)

    def blob_writer(self, max_bytes: int) -> BlobWriter:
        """Where an upload's bytes go as they arrive (hashed on the way), for
        ``receive_uploads``; more than ``max_bytes`` is refused."""
        return self.blobs.writer(max_bytes)

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

    # -- what a serving process runs beside it (ingest/service.py) -----------------------
    @cached_property
    def service(self) -> Service:
        """What ``serve`` and ``worker`` run beside the library: ingest workers in a child
        process, upload intake, workers' wake-ups, news of commits, a background reindex,
        the metrics' gauges."""
        from docshelf.ingest.service import Service

        return Service(self.runtime)
