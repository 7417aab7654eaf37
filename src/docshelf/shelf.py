"""``Shelf``: the one facade the CLI, the HTTP API, the MCP server and Python users call.

with Shelf() as shelf:
    shelf.add("~/notes")
    for hit in shelf.search("raft leader election").hits:
        print(hit.citation.label)
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from docshelf import users as users_mod
from docshelf.access import as_named, title_from_name
from docshelf.blobs import BlobStore, open_blob_store
from docshelf.chunk import ChunkSettings, approx_tokens
from docshelf.config import Settings
from docshelf.durable import private_dir
from docshelf.embed import DEFAULT_WINDOW, Embedder, make_embedder
from docshelf.errors import (
    Conflict,
    DocshelfError,
    InvalidInput,
    NotFound,
    Unavailable,
    UnsupportedType,
)
from docshelf.ingest import EmbedCounts, Prepared, embed_texts, prepare, read_file
from docshelf.links import WikiLink, names_for
from docshelf.llm import LLM, make_llm
from docshelf.model import (
    Chunk,
    Distillate,
    Document,
    Event,
    Failure,
    Job,
    Source,
    Stage,
    SyncReport,
    Tier,
    User,
    document_id,
    fingerprint,
)
from docshelf.parse import FILE_TYPES, file_type_for
from docshelf.rerank import Reranker, make_reranker
from docshelf.search.ann import SidecarVectorIndex
from docshelf.search.cache import RetrievalCache
from docshelf.search.engines import engines_for
from docshelf.search.fusion import FusionSettings
from docshelf.search.lexical import SidecarLexicalIndex

# search's bounds and results, importable from here as before they moved to search/
from docshelf.search.results import CACHED_LIMIT as CACHED_LIMIT
from docshelf.search.results import CANDIDATE_POOL as CANDIDATE_POOL
from docshelf.search.results import CONTEXT_MODES as CONTEXT_MODES
from docshelf.search.results import GROUPS as GROUPS
from docshelf.search.results import MAX_LIMIT as MAX_LIMIT
from docshelf.search.results import SEARCH_MODES as SEARCH_MODES
from docshelf.search.results import ContextResult as ContextResult
from docshelf.search.results import SearchResult as SearchResult
from docshelf.search.results import concept_group as concept_group
from docshelf.search.retriever import Retriever
from docshelf.shared import open_shared
from docshelf.shared.caches import SharedRetrievalCache, SummaryCache
from docshelf.sources import BAD_NAME, FoundFile, is_utf8, printable_path, walk
from docshelf.store import FileRecord, SearchFilters, Store, open_store
from docshelf.taxonomy import Taxonomy, configured_taxonomy
from docshelf.telemetry import Metrics, RateLimiter
from docshelf.transport import Transport, open_transport

if TYPE_CHECKING:
    from docshelf.enricher import Enricher, EnrichResult
    from docshelf.knowledge.answer import Answer, AnswerPiece
    from docshelf.portable import ExportReport, ImportReport

SearchMode = Literal["hybrid", "lexical", "vector"]
ContextMode = Literal["snippet-window", "parent-section", "section-neighborhood"]
MAX_NAME_CHARS = 200  # an upload's name, cut to this (sanitize_filename)

# Progress callback: (files done, files to do, what is happening now).
Progress = Callable[[int, int, str], None]

_FROM_SETTINGS = object()
log = logging.getLogger("docshelf")


@dataclass(frozen=True)
class _Pending:
    """A prepared document waiting for its vectors, and the file it came from (if any)."""

    prepared: Prepared
    record: FileRecord | None
    previous: FileRecord | None


@dataclass(frozen=True)
class UploadResult:
    document_id: str
    status: str
    fingerprint: str
    created: bool  # a new document and job
    linked: bool  # the caller got access by this upload


def sanitize_filename(name: str) -> str:
    """A display name from an uploaded file name: never a path.

    Only the last component survives (``/`` and ``\\`` both separate), control
    characters and NUL are dropped, ``..`` and leading dots are stripped.
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable())
    base = base.strip().lstrip(".").strip()
    return _cut_name(base) or "upload"


def _cut_name(name: str, limit: int = MAX_NAME_CHARS) -> str:
    """``name`` in at most ``limit`` characters: the stem is cut, the extension (which
    picks the parser) is kept."""
    if len(name) <= limit:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) >= limit // 2:
        return name[:limit].rstrip()
    return f"{stem[: limit - len(ext) - 1].rstrip()}.{ext}"


def unsupported_type_message(name: str) -> str:
    return f"{name}: unsupported file type; supported: {', '.join(sorted(FILE_TYPES))}"


@dataclass
class DocumentView:
    document: Document
    files: list[str]
    sections: list[Chunk]
    links: list[tuple[WikiLink, list[str]]] = field(default_factory=list)
    backlinks: list[Document] = field(default_factory=list)
    distillates: list[Distillate] = field(default_factory=list)


@dataclass
class Status:
    home: str
    database: str
    embedding_model: str
    documents: int
    sources: int
    sections: int
    snippets: int
    snippets_with_vectors: int
    by_status: dict[str, int]
    by_file_type: dict[str, int]
    pages_without_text: int
    unmapped_tags: dict[str, int]
    failures: list[Failure]
    failure_count: int
    # which vector search answers: {"path": "ann"|"exact"|"native", ...} (search/ann.py)
    vector_index: dict[str, object] = field(default_factory=dict)
    lexical_index: dict[str, object] = field(default_factory=dict)
    enrichment: dict[str, int] = field(default_factory=dict)  # pending, llm, offline, failed

    @property
    def embedding_coverage(self) -> float:
        return self.snippets_with_vectors / self.snippets if self.snippets else 1.0


class Shelf:
    """A library of documents: sources in, cited hits out."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | object | None = _FROM_SETTINGS,
        fusion: FusionSettings | None = None,
        batch_snippets: int = 1024,
        check_model: bool = True,
    ) -> None:
        self.settings = settings or Settings.from_env(Path(home) if home else None)
        try:
            private_dir(self.settings.home)  # created 0700: the library is its owner's
        except OSError as exc:
            raise Unavailable(f"Cannot create {self.settings.home}: {exc.strerror}") from exc
        # Redis when configured (DOCSHELF_REDIS_URL): event fan-out, shared caches
        self.broadcast, shared_cache = open_shared(self.settings.redis_url)
        self.store: Store = open_store(self.settings.database_url)
        self.store.notices.listener = self.broadcast.publish
        self.summaries = SummaryCache(self.store, shared_cache)
        self.host = socket.gethostname()
        fusion = fusion or FusionSettings.from_env()
        self.batch_snippets = batch_snippets
        try:
            self.embedder = self._bind_embedder(embedder, check_model)
        except BaseException:
            self.store.close()
            raise
        window = self.embedder.window if self.embedder else DEFAULT_WINDOW
        self.chunk_settings = ChunkSettings.for_window(window)
        self.count_tokens = self.embedder.count_tokens if self.embedder else approx_tokens
        # which engines answer recall; on SQLite, the sidecar indexes beside the database
        engines = engines_for(self.store, self.settings)
        self.vector_index: SidecarVectorIndex | None = engines.vector_sidecar
        self.lexical_index: SidecarLexicalIndex | None = engines.lexical_sidecar
        self.embed_counts = EmbedCounts()
        self.blobs: BlobStore = open_blob_store(self.settings.blob_url, self.settings.home)
        self.metrics = Metrics()
        self.rate_limit = RateLimiter(self.settings.embed_rate)
        self.transport: Transport = open_transport(self.settings.queue_url)
        self.llm: LLM | None = make_llm()
        reranker: Reranker | None = make_reranker(self.settings.reranker, self.llm)
        self.taxonomy: Taxonomy = configured_taxonomy()
        self._enricher: Enricher | None = None
        self._cache: RetrievalCache[SearchResult] | SharedRetrievalCache[SearchResult] = (
            RetrievalCache(self.settings.retrieval_cache_seconds)
            if shared_cache is None
            else SharedRetrievalCache(
                shared_cache,
                self.settings.redis_retrieval_seconds
                if self.settings.retrieval_cache_seconds > 0
                else 0.0,
                SearchResult,
            )
        )
        self.retriever = Retriever(
            self.store,
            lexical=engines.lexical,
            vector=engines.vector,
            embedder=lambda: self.embedder,
            fusion=fusion,
            reranker=reranker,
            rerank_top_k=self.settings.rerank_top_k,
            taxonomy=self.taxonomy,
            cache=self._cache,
            metrics=self.metrics,
            seen_by=self._seen_by,
        )

    # -- lifecycle --------------------------------------------------------------
    def close(self) -> None:
        self.transport.close()
        self.store.close()
        self.broadcast.close()
        if self.summaries.cache is not None:
            self.summaries.cache.close()

    def wake_workers(self, document_id: str) -> None:
        """Tell workers a job is due (after its commit). Losing the message is harmless:
        workers also poll the store."""
        try:
            self.transport.notify(document_id)
        except DocshelfError as exc:
            log.warning("could not notify workers of %s: %s", document_id, exc.message)

    def __enter__(self) -> Shelf:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _bind_embedder(self, given: Embedder | object | None, check_model: bool) -> Embedder | None:
        """The configured embedder. A library whose vectors came from another model is
        refused, since its vectors and the query's would not be comparable — unless
        ``check_model`` is off (``reindex``), which also lets ``auto`` pick the local
        model for a lexical-only library instead of following it."""
        if given is _FROM_SETTINGS:
            bound = self.store.get_meta("embedding_model")
            if self.settings.embedder == "auto" and bound == "none" and check_model:
                given = None  # a lexical-only library stays lexical until reindexed
            else:
                given = make_embedder(
                    self.settings.embedder,
                    batch_size=self.settings.embed_batch_size,
                    home=self.settings.home,
                    library_model=bound,
                )
        embedder: Embedder | None = given  # type: ignore[assignment]
        conflict = self._model_conflict(embedder)
        if check_model and conflict and embedder is not None:
            raise Conflict(conflict)
        return embedder

    def _model_conflict(self, embedder: Embedder | None) -> str | None:
        bound = self.store.get_meta("embedding_model")
        model = embedder.model_id if embedder else "none"
        if bound is None or bound == model:
            return None
        if model == "none":
            return (
                f"This library is indexed with {bound}; without an embedder new documents "
                "would get no vectors. Set DOCSHELF_EMBEDDER=local (install `docshelf[local]`), "
                "or run `DOCSHELF_EMBEDDER=none docshelf reindex` to make the library lexical-only."
            )
        return (
            f"This library's vectors were made with {bound}, but the configured embedder is "
            f"{model}. Run `docshelf reindex` to re-embed everything with {model}, or set "
            "DOCSHELF_EMBEDDER to match the library."
        )

    def _check_writable(self) -> None:
        """Refuse writes whose vectors would not match the library's (naming the fix);
        the first write binds the library to the configured model."""
        conflict = self._model_conflict(self.embedder)
        if conflict:
            raise Conflict(conflict)
        if self.store.get_meta("embedding_model") is None:
            with self.store.transaction():
                self.store.set_meta(
                    "embedding_model", self.embedder.model_id if self.embedder else "none"
                )
                if self.embedder:
                    self.store.set_meta("embedding_dim", str(self.embedder.dim))

    # -- sources -----------------------------------------------------------------
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
        target = Path(path).expanduser()
        try:
            target = target.resolve(strict=True)
        except FileNotFoundError:
            raise NotFound(f"No such file or folder: {printable_path(path)}") from None
        except (OSError, RuntimeError) as exc:
            raise InvalidInput(f"Cannot resolve {printable_path(path)}: {exc}") from None
        if not is_utf8(str(target)):
            raise InvalidInput(f"{printable_path(target)}: {BAD_NAME}")
        if not target.is_dir() and file_type_for(target.name) is None:
            raise InvalidInput(unsupported_type_message(target.name))
        owner = user_id or users_mod.ensure_local_admin(self.store).id
        source = self.store.find_source(str(target))
        if source is not None and source.user_id not in (None, owner):
            raise Conflict(f"{target} is already a source of another user")
        if source and follow_symlinks is not None and follow_symlinks != source.follow_symlinks:
            self.store.set_follow_symlinks(source.id, follow_symlinks)
            source = dataclasses.replace(source, follow_symlinks=follow_symlinks)
        if source is None:
            for other in self.store.list_sources():
                other_path = Path(other.path)
                if other.kind == "folder" and target.is_relative_to(other_path):
                    return self._sync_source(other, progress)
                if target.is_dir() and other_path.is_relative_to(target):
                    raise Conflict(
                        f"{other.path} is already a source inside {target}; remove it first "
                        f"(`docshelf remove {other.id}`), then add the larger folder"
                    )
            self._check_writable()
            source = Source(
                id="src_" + hashlib.sha256(str(target).encode()).hexdigest()[:12],
                path=str(target),
                kind="folder" if target.is_dir() else "file",
                host=self.host,
                added_at=time.time(),
                user_id=owner,
                follow_symlinks=bool(follow_symlinks),
            )
            self.store.add_source(source)
        return self._sync_source(source, progress)

    def sync(self, source_id: str | None = None, progress: Progress | None = None) -> SyncReport:
        """Re-read registered sources: new, changed and deleted files are followed."""
        sources = [self._source(source_id)] if source_id else self.store.list_sources()
        report = SyncReport(source_id=source_id)
        for source in sources:
            report.merge(self._sync_source(source, progress))
        return report

    def _enrich_after_ingest(self, report: SyncReport, progress: Progress | None) -> None:
        """Enrichment follows indexing when it is on (DOCSHELF_ENRICH), for what is pending."""
        if self.settings.enrich == "off" or not (report.added or report.updated):
            return
        if progress:
            progress(0, report.added + report.updated, "enriching")
        self.enrich_pending()

    def remove(self, target: str) -> SyncReport:
        """Unregister a source (by id or path); its documents leave the index everywhere."""
        source = self.store.get_source(target) or self.store.find_source(
            str(Path(target).expanduser().resolve())
        )
        if source is None:
            raise NotFound(f"No source {target!r}; `docshelf list` shows the sources")
        report = SyncReport(source_id=source.id)
        with self.store.transaction():
            for record in self.store.files_of_source(source.id).values():
                report.removed += self._drop_file(record)
            self.store.delete_source(source.id)
        self.maintain_indexes()
        return report

    def sources(self) -> list[Source]:
        return self.store.list_sources()

    def _source(self, source_id: str) -> Source:
        source = self.store.get_source(source_id)
        if source is None:
            raise NotFound(f"No source {source_id!r}; `docshelf list` shows the sources")
        return source

    def _scan(self, source: Source) -> Iterator[FoundFile | Failure]:
        root = Path(source.path)
        if source.kind == "folder":
            if not root.is_dir():
                yield Failure(source.path, "source folder is missing or unreadable")
                return
            yield from walk(root, follow_symlinks=source.follow_symlinks)
            return
        try:
            yield FoundFile(root, root.name, root.stat())
        except OSError as exc:
            yield Failure(source.path, f"unreadable: {exc.strerror or exc}")

    def _sync_source(self, source: Source, progress: Progress | None) -> SyncReport:
        report = SyncReport(source_id=source.id)
        known = self.store.files_of_source(source.id)
        seen: set[str] = set()
        todo: list[FoundFile] = []
        source_missing = False
        for found in self._scan(source):
            if isinstance(found, Failure):
                report.failures.append(found)
                source_missing = source_missing or found.path == source.path
                continue
            key = str(found.path)
            seen.add(key)
            rec = known.get(key)
            if rec and rec.size == found.stat.st_size and rec.mtime_ns == found.stat.st_mtime_ns:
                report.unchanged += 1
            else:
                todo.append(found)
        if todo:
            self._check_writable()
        gone = {} if source_missing else {p: r for p, r in known.items() if p not in seen}
        self._ingest(source, todo, known, gone, report, progress)
        with self.store.transaction():
            for record in gone.values():
                report.removed += self._drop_file(record)
            self.store.record_failures(source.id, report.failures)
        self.maintain_indexes()
        self._enrich_after_ingest(report, progress)
        return report

    def _drop_file(self, record: FileRecord) -> int:
        """Forget a file; its document goes too when no other file holds it. Returns 1 if so."""
        with self.store.transaction():
            self.store.delete_file(record.path)
            if not self.store.files_of_document(record.document_id):
                self.store.delete_document(record.document_id)
                return 1
        return 0

    # -- ingest --------------------------------------------------------------------
    def _ingest(
        self,
        source: Source,
        todo: list[FoundFile],
        known: dict[str, FileRecord],
        gone: dict[str, FileRecord],
        report: SyncReport,
        progress: Progress | None,
    ) -> None:
        def items() -> Iterator[_Pending | None]:
            for n, found in enumerate(todo):
                if progress:
                    progress(n, len(todo), found.rel_path)
                yield self._prepare_file(source, found, known, gone, report)

        # Parsed here, between the model's batches: parsing ahead in a thread or in a
        # process of its own was measured and gained nothing, as the model keeps both
        # cores busy (BENCHMARKS.md, "Ingest").
        self._write_batched(items(), report)
        if progress and todo:
            progress(len(todo), len(todo), "done")

    def add_documents(
        self, items: Iterable[tuple[str, bytes, str | None]], progress: Progress | None = None
    ) -> SyncReport:
        """Index documents given as bytes, not files: ``(name, data, title or None)``.

        ``name`` is shown as the document's path (its extension picks the
        parser). Bytes already in the library are not indexed again.
        """
        self._check_writable()
        report = SyncReport(source_id=None)
        listed = list(items)

        def pending() -> Iterator[_Pending | None]:
            for n, (name, data, title) in enumerate(listed):
                if progress:
                    progress(n, len(listed), name)
                file_type = file_type_for(name)
                if file_type is None:
                    report.failures.append(Failure(name, "unsupported file type"))
                    continue
                if self.store.get_document(document_id(fingerprint(data))) is not None:
                    report.unchanged += 1
                    continue
                try:
                    yield _Pending(
                        self._prepare(data, file_type, name, name, None, title), None, None
                    )
                except InvalidInput as exc:
                    report.failures.append(Failure(name, exc.message))

        self._write_batched(pending(), report)
        self._enrich_after_ingest(report, progress)
        return report

    def _prepare(
        self,
        data: bytes,
        file_type: str,
        path: str,
        rel_path: str,
        source_id: str | None,
        title: str | None = None,
    ) -> Prepared:
        return prepare(
            data,
            file_type=file_type,
            path=path,
            rel_path=rel_path,
            source_id=source_id,
            host=self.host,
            settings=self.chunk_settings,
            count_tokens=self.count_tokens,
            title=title,
            embedding_model=self.embedder.model_id if self.embedder else None,
            taxonomy=self.taxonomy,
        )

    def _prepare_file(
        self,
        source: Source,
        found: FoundFile,
        known: dict[str, FileRecord],
        gone: dict[str, FileRecord],
        report: SyncReport,
    ) -> _Pending | None:
        path = str(found.path)
        try:
            data, st = read_file(found.path, self.settings.max_file_bytes)
            doc_id = document_id(fingerprint(data))
            record = FileRecord(path, source.id, doc_id, st.st_size, st.st_mtime_ns)
            previous = known.get(path)
            if previous is not None and previous.document_id == doc_id:
                self.store.put_file(record)  # touched, same bytes: remember the new stat
                report.unchanged += 1
                return None
            existing = self.store.get_document(doc_id)
            if existing is not None:
                self._link_existing(existing, record, found, previous, gone, report)
                return None
            file_type = file_type_for(found.path.name)
            assert file_type is not None  # walk() only yields supported files
            prepared = self._prepare(data, file_type, path, found.rel_path, source.id)
        except InvalidInput as exc:
            report.failures.append(Failure(path, exc.message))
            return None
        return _Pending(prepared, record, previous)

    def _link_existing(
        self,
        existing: Document,
        record: FileRecord,
        found: FoundFile,
        previous: FileRecord | None,
        gone: dict[str, FileRecord],
        report: SyncReport,
    ) -> None:
        """Bytes we already have under another path: a move, or a copy. Nothing is re-parsed."""
        moved_from = [p for p, r in gone.items() if r.document_id == existing.id]
        with self.store.transaction():
            self._point_file(record, previous)
            if moved_from or not Path(existing.path).exists():
                self.store.update_document_path(existing.id, record.path, found.rel_path)
                self.store.put_names(existing.id, names_for(found.rel_path, "", ()), "path")
            for p in moved_from:
                self.store.delete_file(p)
                del gone[p]
        if moved_from:
            report.moved += 1
        else:
            report.unchanged += 1

    def _point_file(self, record: FileRecord, previous: FileRecord | None) -> None:
        """Record which document a file holds (and give the source's owner access to it);
        the document it held before goes if now orphaned."""
        self.store.put_file(record)
        source = self.store.get_source(record.source_id)
        if source is not None and source.user_id:
            self.store.grant(source.user_id, record.document_id)
        if (
            previous is not None
            and previous.document_id != record.document_id
            and not self.store.files_of_document(previous.document_id)
        ):
            self.store.delete_document(previous.document_id)

    def _write_batched(self, items: Iterable[_Pending | None], report: SyncReport) -> None:
        """Embed many documents' snippets per model call; write each document on its own."""
        batch: list[_Pending] = []
        pending = 0
        for item in items:
            if item is not None:
                batch.append(item)
                pending += len(item.prepared.snippets)
            if pending >= self.batch_snippets:
                self._write_batch(batch, report)
                batch, pending = [], 0
        self._write_batch(batch, report)

    def _write_batch(self, batch: list[_Pending], report: SyncReport) -> None:
        if not batch:
            return
        vectors = None
        if self.embedder is not None:
            texts = [c.retrieval_text for item in batch for c in item.prepared.snippets]
            vectors = embed_texts(self.store, self.embedder, texts, self.embed_counts)
        offset = 0
        for item in batch:
            n = len(item.prepared.snippets)
            doc_vectors = vectors[offset : offset + n] if vectors is not None else None
            offset += n
            # One transaction: the old content leaves as the new arrives.
            with self.store.transaction():
                self.store.put_document(item.prepared.document, item.prepared.chunks, doc_vectors)
                item.prepared.record_links(self.store)
                if item.record is not None:
                    self._point_file(item.record, item.previous)
            if item.previous is None:
                report.added += 1
            else:
                report.updated += 1

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
        """The document as the caller sees it (their own name for it), if they may see it;
        another user's is answered as unknown."""
        doc = self.store.get_document(document_id)
        if doc is None or (user_id is not None and not self.store.has_access(user_id, doc.id)):
            raise NotFound(f"No document {document_id!r}")
        return self._seen_by([doc], user_id)[0]

    def _seen_by(self, docs: Sequence[Document], user_id: str | None) -> list[Document]:
        """Shared records with each one's per-user name (``access.as_named``)."""
        if user_id is None or not docs:
            return list(docs)
        names = self.store.access_titles(user_id, [d.id for d in docs])
        return [as_named(d, names.get(d.id)) for d in docs]

    def document(self, document_id: str, user_id: str | None = None) -> DocumentView:
        doc = self._visible(document_id, user_id)
        files = [r.path for r in self.store.files_of_document(document_id)]
        links = [
            (link, [d for d in targets if self._may_see(d, user_id)])
            for link, targets in self.store.links_of(doc.id)
        ]
        backlinks = [
            d
            for d in map(self.store.get_document, self.store.backlinks(doc.id))
            if d is not None and self._may_see(d.id, user_id)
        ]
        sections = self.store.chunks_of_document(document_id, Tier.SECTION)
        distillates = self.store.distillates_of(doc.id)
        return DocumentView(doc, files, sections, links, backlinks, distillates)

    def _may_see(self, document_id: str, user_id: str | None) -> bool:
        return user_id is None or self.store.has_access(user_id, document_id)

    def status(self) -> Status:
        s = self.store.stats()
        return Status(
            home=str(self.settings.home),
            database=self.store.url,
            embedding_model=self.store.get_meta("embedding_model")
            or (self.embedder.model_id if self.embedder else "none"),
            documents=s.documents,
            sources=s.sources,
            sections=s.sections,
            snippets=s.snippets,
            snippets_with_vectors=s.snippets_with_vectors,
            by_status=s.by_status,
            by_file_type=s.by_file_type,
            pages_without_text=s.pages_without_text,
            unmapped_tags={
                tag: n
                for tag, n in self.store.tag_counts().items()
                if self.taxonomy.resolve(tag) is None
            },
            failures=self.store.list_failures(limit=20),
            failure_count=self.store.count_failures(),
            enrichment=s.by_enrichment,
            vector_index=self.vector_index.state() if self.vector_index else {"path": "native"},
            lexical_index=self.lexical_index.state() if self.lexical_index else {"path": "native"},
        )

    def check(self) -> list[str]:
        return self.store.check()

    def maintain_indexes(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """Bring the derived indexes beside the store up to date: SQLite's tantivy index
        (``maintain_lexical_index``) and its ANN index (switch at the threshold, build,
        or checkpoint the delta; its outcome is returned). Never fails a write: search
        stays correct without them, only slower (the ANN overlays the delta exactly)."""
        self.maintain_lexical_index(rebuild=rebuild, progress=progress)
        return self.maintain_vector_index(force=force, rebuild=rebuild, progress=progress)

    def maintain_vector_index(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        index = self.vector_index
        if index is None:
            return "native"
        return _derived(
            "vector", lambda: index.maintain(force=force, rebuild=rebuild, progress=progress)
        )

    def maintain_lexical_index(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """SQLite's tantivy index: switch at the threshold, build, or apply the store's
        log. Never fails a write: until the index has caught up, FTS5 answers."""
        index = self.lexical_index
        if index is None:
            return "native"
        return _derived(
            "lexical", lambda: index.maintain(force=force, rebuild=rebuild, progress=progress)
        )

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
        derived indexes (see ``docshelf.reindex``): search answers from the old generation
        until the new one is complete. Resumable. ``document_id``: that document alone.
        ``index_only``: rebuild just the derived indexes beside the store (repair)."""
        if index_only:
            lexical = self.maintain_lexical_index(rebuild=True, progress=progress)
            vector = self.maintain_vector_index(rebuild=True, progress=progress)
            return {"vector_index": vector, "lexical_index": lexical}
        from docshelf.reindex import reindex

        report = reindex(self, document_id=document_id, progress=progress)
        self._cache.clear()
        return report.as_json()

    # -- knowledge ----------------------------------------------------------------------
    @property
    def enricher(self) -> Enricher:
        if self._enricher is None:
            from docshelf.enricher import Enricher  # pydantic and friends, only when needed

            self._enricher = Enricher(self)
        return self._enricher

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
        self._cache.clear()
        if progress and ids:
            progress(len(ids), len(ids), "done")
        return results

    def queue_enrichment(self, user_id: str | None = None) -> int:
        """Mark the (user's) documents for enrichment again; workers take them when idle."""
        ids = [d.id for d in self.store.list_documents(user_id=user_id)]
        return self.store.reset_enrichment(ids) if ids else 0

    def enrich_pending(self, limit: int | None = None) -> list[EnrichResult]:
        """Enrich documents whose enrichment is pending (what workers do when idle)."""
        done = self.enricher.run_pending(limit)
        if done:
            self._cache.clear()
        return done

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
    @property
    def fusion(self) -> FusionSettings:
        """How lexical and vector recall are fused (evaluation swaps it on one Shelf)."""
        return self.retriever.fusion

    @fusion.setter
    def fusion(self, value: FusionSettings) -> None:
        self.retriever.fusion = value

    @property
    def reranker(self) -> Reranker | None:
        return self.retriever.reranker

    @reranker.setter
    def reranker(self, value: Reranker | None) -> None:
        self.retriever.reranker = value

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
    ) -> ContextResult:
        """Widen a hit: its neighbours, its section, or its section's neighbours."""
        return self.retriever.context(chunk_id, mode, window, user_id)

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

    # -- uploads and jobs ----------------------------------------------------------------------
    def register_upload(self, user_id: str, name: str, sha256: str, size: int) -> UploadResult:
        """Record uploaded bytes (already in the blob store) for ``user_id``.

        New bytes get a document and a queued job; bytes this user already has
        are answered with the same document; bytes another user already has
        get an access link for this one — nothing is parsed or embedded again.
        The caller's name for it is kept on their access link; the answer to a new
        link says ``queued``, as for new bytes, so no one learns what others hold.
        """
        file_type = file_type_for(name)
        if file_type is None:
            raise UnsupportedType(unsupported_type_message(name))
        doc_id = document_id(sha256)
        now = time.time()
        with self.store.transaction():
            if not self.blobs.exists(sha256):
                # the same bytes were deleted between the blob write and this transaction
                raise Unavailable(
                    "The upload raced with a deletion of the same file; send it again"
                )
            doc = self.store.get_document(doc_id)
            if doc is not None:
                linked = self.store.grant(user_id, doc_id, title=name)
                if linked:
                    self._cache.clear()  # the user sees one more document
                    self.metrics.upload_dedup("linked")
                    self._link_events(doc, name, user_id)
                else:
                    self.metrics.upload_dedup("same_user")
                status = Stage.QUEUED.value if linked else doc.status
                return UploadResult(doc_id, status, sha256, created=False, linked=linked)
            self._check_writable()
            self.store.put_document(
                Document(
                    id=doc_id,
                    sha256=sha256,
                    title=title_from_name(name),
                    path=f"upload://{sha256}",
                    rel_path=name,
                    source_id=None,
                    source_host=self.host,
                    file_type=file_type,
                    size_bytes=size,
                    added_at=now,
                    updated_at=now,
                    status=Stage.QUEUED.value,
                    embedding_model=self.embedder.model_id if self.embedder else None,
                ),
                [],
                None,
            )
            self.store.put_job(
                Job(
                    doc_id,
                    Stage.QUEUED,
                    "queued",
                    0,
                    now,
                    None,
                    None,
                    None,
                    sha256,
                    file_type,
                    name,
                    now,
                    now,
                )
            )
            self.store.grant(user_id, doc_id, title=name)
            self.store.add_event(doc_id, "stage", stage="queued", progress_pct=0, message="queued")
            self.store.add_event(doc_id, "document.queued", stage="queued", message=name)
        self.wake_workers(doc_id)
        return UploadResult(doc_id, Stage.QUEUED.value, sha256, created=True, linked=True)

    def _link_events(self, doc: Document, name: str, user_id: str) -> None:
        """A new link's own events, addressed to its user (they see no earlier ones)."""
        self.store.add_event(
            doc.id,
            "stage",
            stage=Stage.QUEUED.value,
            progress_pct=0,
            message="queued",
            user_id=user_id,
        )
        self.store.add_event(
            doc.id, "document.queued", stage=Stage.QUEUED.value, message=name, user_id=user_id
        )
        if doc.status in (Stage.COMPLETE.value, Stage.FAILED.value):
            self.store.add_event(
                doc.id,
                "stage",
                stage=doc.status,
                progress_pct=100,
                message=doc.status,
                user_id=user_id,
            )
            kind = "document.completed" if doc.status == Stage.COMPLETE.value else "document.failed"
            self.store.add_event(
                doc.id, kind, stage=doc.status, progress_pct=100, message=name, user_id=user_id
            )

    def upload(self, user_id: str, name: str, data: bytes) -> UploadResult:
        """Store ``data`` as an upload named ``name`` (the library form of POST /v1/documents)."""
        clean = sanitize_filename(name)
        if file_type_for(clean) is None:
            raise UnsupportedType(unsupported_type_message(clean))
        with self.blobs.writer(self.settings.max_upload_bytes) as writer:
            writer.write(data)
            sha = writer.commit()
        return self.register_upload(user_id, clean, sha, len(data))

    def job(self, document_id: str, user_id: str | None = None) -> Job:
        self._visible(document_id, user_id)
        job = self.store.get_job(document_id)
        if job is None:
            raise NotFound(f"Document {document_id!r} has no ingest job (it came from a source)")
        return job

    def retry(self, document_id: str, user_id: str | None = None) -> Job:
        """Re-queue a failed job at the stage where it failed."""
        job = self.job(document_id, user_id)
        if job.status != "failed":
            raise Conflict(f"Document {document_id} is {job.status}, not failed; nothing to retry")
        with self.store.transaction():
            self.store.update_job(
                document_id,
                status="queued",
                attempts=0,
                next_attempt_at=time.time(),
                last_error=None,
            )
            self.store.set_document_status(document_id, job.stage.value)
            self.store.add_event(
                document_id,
                "stage",
                stage=Stage.QUEUED.value,
                progress_pct=0,
                message=f"retry requested; resuming at {job.stage.value}",
            )
            self.store.add_event(document_id, "document.queued", stage="queued", message="retry")
        self.wake_workers(document_id)
        return self.job(document_id, user_id)

    def delete_document(self, document_id: str, user_id: str | None = None) -> bool:
        """Remove the caller's access; the last access removes the data. True if data went."""
        doc = self._visible(document_id, user_id)
        self._cache.clear()  # whatever happens next, this user sees one document fewer
        with self.store.transaction():
            if user_id is not None:
                self.store.revoke_access(user_id, doc.id)
            self.store.add_event(doc.id, "document.removed", message=doc.rel_path, user_id=user_id)
            if user_id is not None and self.store.access_count(doc.id):
                return False
            if self.store.files_of_document(doc.id):
                return False  # still held by a file in a source; sync decides
            self.store.delete_document(doc.id)
            # inside the transaction: an upload of the same bytes registering
            # concurrently either comes first (and keeps the data) or sees the
            # blob gone and asks for the upload again
            self.blobs.delete(doc.sha256)
        return True

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
        if document_id is not None:
            self._visible(document_id, user_id)
        return self.store.events_after(
            after,
            document_id=document_id,
            kinds="document.%" if lifecycle else "stage",
            user_id=user_id,  # their own, and shared ones from when their access began
            limit=limit,
        )


def _derived(name: str, maintain: Callable[[], str]) -> str:
    """Run a derived index's upkeep; a failure is logged, never raised: the index is
    rebuilt from the store, and the write that led here stands."""
    try:
        return maintain()
    except Exception as exc:
        log.warning("could not update the %s index: %s", name, exc, exc_info=True)
        return f"failed: {exc}"
