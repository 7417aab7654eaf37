"""The ``Store`` port: one transactional home for everything docshelf derives.

Documents, sources, the files that point at documents, chunks of both tiers,
their vectors, the lexical index and the embedding cache live together, so a
document's chunks, vectors and index entries appear and disappear in one
transaction. Adapters translate their driver's errors into ``docshelf.errors``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from docshelf.model import (
    Chunk,
    Distillate,
    Document,
    Enrichment,
    Event,
    Failure,
    Job,
    Source,
    Tier,
    User,
)
from docshelf.parse.links import WikiLink
from docshelf.store.conversations import ConversationRecords
from docshelf.store.notebooks import NotebookRecords
from docshelf.store.notices import CommitNotices

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class NewUpload:
    """An upload's first rows (``Store.add_uploads``): a document no one has yet, its
    queued job, the bytes held with it (None: they are in the blob store), and the
    uploader's access under their own name for it."""

    document: Document
    job: Job
    held: bytes | None
    user_id: str
    title: str


@dataclass(frozen=True)
class AccessLink:
    """A user's own side of a document they hold (the ``access`` row): the name they
    gave it (None: the shared one) and when they got it."""

    title: str | None
    added_at: float


@dataclass(frozen=True)
class NewEvent:
    """An event to record (``Store.add_events``); see ``Store.add_event``."""

    document_id: str
    kind: str
    stage: str | None = None
    progress_pct: int | None = None
    message: str = ""
    user_id: str | None = None


@dataclass(frozen=True)
class FileRecord:
    """A file on disk that currently holds a document's bytes (the connector's view)."""

    path: str
    source_id: str
    document_id: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class SearchFilters:
    """Metadata filters applied before ranking (SPEC §4)."""

    user_id: str | None = None  # only documents this user has access to
    source_id: str | None = None
    path_prefix: str | None = None
    file_type: str | None = None
    document_type: str | None = None  # the enrichment's document type (paper, note, …)
    tags: tuple[str, ...] = ()
    document_ids: tuple[str, ...] = ()
    # Each group: concept ids of which a document must have at least one (a concept
    # and its narrower ones); all groups must match.
    concept_groups: tuple[tuple[str, ...], ...] = ()
    # The document's date (DATE_SQL: its file's last change, an upload's arrival), in
    # epoch seconds: at or after ``dated_from``, before ``dated_before``.
    dated_from: float | None = None
    dated_before: float | None = None
    # A notebook's documents only: its id, and when it last changed (a new cache key).
    notebook: tuple[str, float] | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.user_id
            or self.dated_from is not None
            or self.dated_before is not None
            or self.source_id
            or self.path_prefix
            or self.file_type
            or self.document_type
            or self.tags
            or self.document_ids
            or self.concept_groups
            or self.notebook
        )


# How a library list may be sorted (``Listing.order``): by path, title, type, status,
# newest first, largest first.
LIST_ORDERS: tuple[str, ...] = ("path", "title", "type", "status", "added", "size")


@dataclass(frozen=True)
class Listing:
    """A library list narrowed and sorted: by ``filters`` (the search filters), words
    in the title or path (``matching``, any case), a ``status``, only documents with
    pages that have no text (``pages_without_text``), in ``order``."""

    filters: SearchFilters = field(default_factory=SearchFilters)
    matching: str | None = None
    status: str | None = None
    order: str = "path"
    pages_without_text: bool = False


# The facets a library can be counted by (``Store.facet_counts``), by their filter names.
FACETS: tuple[str, ...] = ("type", "doctype", "source", "tag", "concept", "date")


@dataclass
class VectorSnapshot:
    """All snippet vectors at one generation, for an exact scan (``chunk_ids[i]`` and
    ``document_ids[i]`` describe row ``i`` of ``matrix``)."""

    generation: int
    chunk_ids: list[str]
    document_ids: list[str]
    matrix: npt.NDArray[np.float32]


@dataclass(frozen=True)
class StoreStats:
    documents: int
    sources: int
    files: int
    sections: int
    snippets: int
    snippets_with_vectors: int
    pages_without_text: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    by_file_type: dict[str, int] = field(default_factory=dict)
    # complete documents by enrichment: pending, llm, offline, failed
    by_enrichment: dict[str, int] = field(default_factory=dict)
    ocr_pages: int = 0  # pages (and images) whose text OCR read


@dataclass(frozen=True)
class ChunkPlace:
    """Where a chunk sits: what search needs of every candidate before it reads the
    text of the few it cites (their document, section, heading path and page, and what
    its own heading is made of: ``evidence.own_heading``)."""

    document_id: str
    parent_id: str | None
    heading_path: tuple[str, ...]
    page_start: int | None
    index: int = 0  # its position in its tier
    # Its header, kept only for the first chunk of its tier (index 0): the one place the
    # text evidence reads it (a file's title as the heading of its top, evidence.own_heading).
    header: str | None = None
    # the heading paths of its inner headings (``Chunk.inner``): the other places it may
    # be cited under, which the de-duplication of citations must know before reading it
    inner: tuple[tuple[str, ...], ...] = ()


class Store(NotebookRecords, ConversationRecords, Protocol):
    """What the rest of docshelf may ask of a store."""

    url: str
    notices: CommitNotices  # who to tell, after each commit, which documents got events

    def close(self) -> None: ...
    def schema_version(self) -> int:
        """The highest migration applied (migrations run when the store is opened)."""
        ...

    def transaction(self, *, durable: bool = False) -> AbstractContextManager[None]:
        """Group writes atomically; nests (inner blocks become savepoints). A ``durable``
        one (the outermost only) is on disk when its commit returns, power cut or not;
        others may wait for the engine's next checkpoint (SQLite's WAL), though a crash
        of the process never loses a commit."""
        ...

    # -- settings that bind the store ------------------------------------
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def meta_once(self, key: str, value: str) -> str:
        """Set ``key`` to ``value`` unless it is set already; the value it holds."""
        ...

    def generation(self) -> int:
        """Bumped by every committed change to chunks or vectors."""
        ...

    def searching(self) -> AbstractContextManager[None]:
        """One search, in this thread (entered by each; cheap after the first): the store
        may ready its reads for searches — SQLite maps its file then, so a process that
        only writes (``add``, ``sync``, a worker) maps nothing — and trust its memo of
        reads for the search's length."""
        ...

    # -- sources and files -------------------------------------------------
    def add_source(self, source: Source) -> None: ...
    def get_source(self, source_id: str) -> Source | None: ...
    def find_source(self, path: str) -> Source | None: ...
    def list_sources(self) -> list[Source]: ...
    def delete_source(self, source_id: str) -> None: ...
    def set_follow_symlinks(self, source_id: str, follow: bool) -> None: ...
    def files_of_source(self, source_id: str) -> dict[str, FileRecord]: ...
    def files_of_document(self, document_id: str) -> list[FileRecord]: ...
    def stale_citations(self) -> list[str]:
        """Documents cited at a path that none of their files is at any more (yet held by
        others): the ids, for ``DocumentWriter.repoint``."""
        ...

    def put_file(self, record: FileRecord) -> None: ...
    def delete_file(self, path: str) -> None: ...

    def record_failures(self, source_id: str, failures: Sequence[Failure]) -> None:
        """Replace the source's remembered failures with these (with the file as it
        failed, for those that carry it: ``Failure.settled``)."""
        ...

    def settled_failures(self, source_id: str) -> dict[str, Failure]:
        """The source's failures that its files' bytes decide (each with ``settled``), by
        path: what ``sync`` passes over while the file stays the same."""
        ...

    def list_failures(self, limit: int = 100) -> list[Failure]: ...
    def count_failures(self) -> int: ...

    # -- documents and chunks ----------------------------------------------
    def get_document(self, document_id: str) -> Document | None: ...
    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """Documents by id (the ones that exist), in one read; for citing hits."""
        ...

    def document_ids_starting(self, prefix: str, limit: int) -> list[str]:
        """The ids that start with ``prefix`` (taken literally), in order, at most ``limit``."""
        ...

    def list_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        document_ids: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
        listing: Listing | None = None,
    ) -> list[Document]: ...
    def count_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        listing: Listing | None = None,
    ) -> int:
        """How many documents ``list_documents`` would list with no limit (a page's total)."""
        ...

    def put_document(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        """Insert or replace a document with its chunks and (snippet) vectors.

        ``vectors`` rows follow the order of the snippets in ``chunks``. Call
        inside ``transaction()`` together with the file change that caused it.
        """
        ...

    def add_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None:
        """Add chunks to a document that ``put_document`` wrote (a large document's rest,
        in more transactions than one, while it is not yet complete and so not seen)."""
        ...

    def update_document_path(
        self, document_id: str, path: str, rel_path: str, source_id: str | None = None
    ) -> None:
        """Cite a document at ``path`` (``rel_path`` in its source; with ``source_id``,
        that source's)."""
        ...

    def delete_document(self, document_id: str) -> None:
        """Remove a document with its chunks, vectors and index entries."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order asked; unknown ids are skipped."""
        ...

    def chunks_of_document(self, document_id: str, tier: Tier) -> list[Chunk]: ...
    def chunks_after(self, document_id: str, tier: Tier, after: int, limit: int) -> list[Chunk]:
        """The first ``limit`` chunks of one tier of a document whose position is past
        ``after`` (-1: from the first), in order: a large document read a page at a
        time, never whole."""
        ...

    def replace_chunks(
        self,
        document_id: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
        at: float,
    ) -> None:
        """Replace some of a document's chunks by new versions of them (the same ids: a
        new header), with their index entries, and the snippets among them by their
        vectors (``vectors`` rows follow those snippets; None: they have none); the
        document's ``updated_at`` becomes ``at``. Chunks are immutable: each one goes and
        its new version comes, as ``put_document`` does for all of them."""
        ...

    def snippets_without_vectors(
        self, limit: int, document_id: str | None = None
    ) -> list[Chunk]: ...
    def put_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None: ...
    def drop_vectors(self) -> None: ...

    # -- vectors after the words (ingest/vectors.py): ``put_document`` without vectors, of
    # a document with an ``embedding_model``, leaves it pending (searchable by its words)
    def claim_embedding(
        self, now: float, lease_seconds: float, owner: str, limit: int
    ) -> list[str]:
        """Lease up to ``limit`` pending complete documents to ``owner``, oldest first: with
        no lease, or one that is over (``claim_enrichment``)."""
        ...

    def renew_embedding(self, document_ids: Sequence[str], owner: str, until: float) -> None: ...
    def finish_embedding(self, document_ids: Sequence[str]) -> None:
        """Those of the documents with every snippet's vector: no longer pending."""
        ...

    def pending_embedding(self, now: float | None = None) -> int:
        """Pending complete documents (with ``now``: those free to take then); a read."""
        ...

    def pending_snippets(self) -> int: ...  # of pending documents, still without vectors
    def embedding_backlog(self, user_id: str | None = None) -> tuple[int, int] | None:
        """The complete documents (``user_id`` may read, when given) and how many of them
        are pending; None when none of them is."""
        ...

    # -- the library counted ---------------------------------------------------
    def facet_counts(
        self, filters: SearchFilters, facets: Sequence[str] = FACETS
    ) -> dict[str, dict[str, int]]:
        """For each of ``facets`` (``FACETS``), how many documents matching ``filters``
        have each value: file type, document type, source id, tag, concept id, and the
        year (UTC) of the document's date. A document without a value is not counted."""
        ...

    # -- embedding cache -----------------------------------------------------
    def cached_embeddings(
        self, model: str, text_hashes: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]: ...
    def cache_embeddings(
        self, model: str, items: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None: ...

    # -- enrichment ------------------------------------------------------------
    def put_enrichment(self, document_id: str, enrichment: Enrichment, at: float) -> bool:
        """Record a document's enrichment (tags when given; distillates replaced unless
        ``claims`` is None) in one transaction; False when the document no longer exists."""
        ...

    def enrichment_failed(self, document_id: str, at: float) -> None:
        """Mark enrichment as done-and-failed, so it is not picked up again by itself."""
        ...

    def reset_enrichment(self, document_ids: Sequence[str] | None = None) -> int:
        """Mark documents (all when None) as waiting for enrichment; how many were."""
        ...

    def claim_enrichment(self, now: float, lease_seconds: float, owner: str) -> str | None:
        """Atomically lease one complete document whose enrichment is pending to ``owner``
        (``owners.this_process()``): one with no lease, or one whose lease is over — run
        out, or held by a process of this host that has died (``owners.gone``)."""
        ...

    def pending_enrichment(self, now: float) -> int:
        """How many complete documents wait for enrichment with no lease on them at
        ``now`` (none, one run out, or one whose owner died); a read, no lock."""
        ...

    def distillates_of(self, document_id: str) -> list[Distillate]: ...
    def search_distillates(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[Distillate, float]]:
        """Full-text search over distillates (any term), best first, filters applied."""
        ...

    def cached_enrichment(self, sha256: str, locale: str, producer: str) -> str | None: ...
    def cache_enrichment(self, sha256: str, locale: str, producer: str, data: str) -> None: ...

    # -- reindex staging: the next generation, swapped in whole --------------------
    def stage_reindex(
        self, document_id: str, target: str, data: str, vectors: bytes | None
    ) -> None: ...
    def staged_reindex(self, target: str) -> set[str]:
        """Documents staged for ``target``."""
        ...

    def take_staged(self, document_id: str) -> tuple[str, bytes | None] | None:
        """A staged document's (data, vectors), removed from the staging area (call it
        inside the transaction that writes them to the live tables)."""
        ...

    def clear_reindex(self, keep_target: str | None = None) -> int:
        """Drop staged documents (all, or those made for another target)."""
        ...

    # -- links between notes ------------------------------------------------------
    def put_links(self, document_id: str, links: Sequence[WikiLink]) -> None: ...
    def put_names(self, document_id: str, names: Sequence[str], kind: str) -> None: ...
    def links_of(self, document_id: str) -> list[tuple[WikiLink, list[str]]]: ...
    def backlinks(self, document_id: str) -> list[str]: ...

    # -- users and access ------------------------------------------------------
    def put_user(self, user: User, token_hash: str | None) -> None: ...
    def get_user(self, user_id_or_name: str) -> User | None: ...
    def users_for_tokens(self, token_hashes: Sequence[str]) -> dict[str, User]:
        """The users holding these tokens, unless revoked, by token hash (one query)."""
        ...

    def has_token(self, user_id: str) -> bool: ...
    def list_users(self) -> list[User]: ...
    def grant(self, user_id: str, document_id: str, title: str | None = None) -> bool:
        """Give a user access; ``title`` is the user's own name for the document (for an
        upload, the file name they sent). False if they had access already."""
        ...

    def access_titles(self, user_id: str, document_ids: Sequence[str]) -> dict[str, str]:
        """The user's own names for these documents (those that have one)."""
        ...

    def access_links(self, user_id: str, document_ids: Sequence[str]) -> dict[str, AccessLink]:
        """The user's access to these documents (those they hold), by document id."""
        ...

    def revoke_access(self, user_id: str, document_id: str) -> bool: ...
    def has_access(self, user_id: str, document_id: str) -> bool: ...
    def access_count(self, document_id: str) -> int: ...

    # -- jobs and events ---------------------------------------------------------
    def put_job(self, job: Job) -> None: ...
    def get_job(self, document_id: str) -> Job | None: ...
    def claim_job(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """Atomically lease one due job (queued and due, or running with a lease that is
        over: run out, or held by a worker whose name starts with the token of a process
        of this host that has died, ``owners.gone``)."""
        ...

    def renew_lease(self, document_id: str, owner: str, until: float) -> bool: ...
    def update_job(self, document_id: str, **fields: Any) -> None: ...
    def job_counts(self) -> dict[str, int]: ...
    def oldest_unfinished_jobs(self) -> dict[str, float]:
        """Per stage, the ``updated_at`` of the longest-unchanged queued or running job."""
        ...

    def add_uploads(self, uploads: Sequence[NewUpload]) -> None:
        """Record new uploads (inside the caller's transaction, having checked that none
        of their documents exists): documents, queued jobs, held bytes (as each job's
        payload) and access, a statement per table for all of them, not one per row."""
        ...

    def put_payload(self, document_id: str, stage: str, payload: bytes) -> None: ...
    def get_payload(self, document_id: str, stage: str) -> bytes | None: ...
    def delete_payload(self, document_id: str, stage: str | None = None) -> None:
        """Drop the job's payload (only if it is ``stage``'s, when given)."""
        ...

    def set_document_status(self, document_id: str, status: str) -> None: ...
    def add_event(
        self,
        document_id: str,
        kind: str,
        *,
        stage: str | None = None,
        progress_pct: int | None = None,
        message: str = "",
        user_id: str | None = None,
    ) -> int: ...
    def add_events(self, events: Sequence[NewEvent]) -> None:
        """Record several events in one statement, in order (their seqs unreturned)."""
        ...

    def events_after(
        self,
        after: int,
        *,
        document_id: str | None = None,
        kinds: str | None = None,
        user_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Event]:
        """Events with ``seq > after``, oldest first, the first ``offset`` of them skipped.
        ``kinds`` is a LIKE pattern. With ``user_id``: one document's events are those
        addressed to the user and the shared ones, both from when their access began (the
        stream of their own upload); without ``document_id``, the events addressed to
        them and the shared ones of documents they hold, from when their access began."""
        ...

    # -- upkeep ----------------------------------------------------------------
    def stats(self) -> StoreStats: ...
    def tag_counts(self) -> dict[str, int]:
        """How many documents carry each free-form tag."""
        ...

    def check(self) -> list[str]:
        """Integrity problems, or an empty list when the store is sound."""
        ...

    def problems(self, *, full: bool = True) -> list[tuple[str, str]]:
        """``check``'s problems as (kind, what is wrong): ``database``, ``lexical_index``,
        ``orphan_chunks``, ``stale_citations``, ``no_snippets``, ``missing_vectors``,
        ``vector_size``, ``vector_index``, ``invalid_index`` (``full``: with the checks
        that read every row of a table or index)."""
        ...

    def snippetless_documents(self) -> list[str]:
        """The ids of complete documents with no snippet (search can never show them)."""
        ...

    def repair(self, kind: str) -> str | None:
        """Mend a problem of ``kind`` the store can mend alone (``orphan_chunks``, its own
        lexical or vector index): what it did; None when it cannot."""
        ...


@runtime_checkable
class SearchReads(Protocol):
    """What search reads of a store beyond the ``Store`` port: the places, texts and
    vectors of candidates, the documents filters let through, the blocks many documents
    repeat, every vector for an exact scan, and plain reads of its SQL for the engines
    over its own indexes (search/engines/: FTS5, PostgreSQL full text, pgvector)."""

    url: str

    def chunk_places(self, chunk_ids: Sequence[str]) -> dict[str, ChunkPlace]:
        """chunk id -> where it sits, for the chunks that exist, without their text
        (search groups and pools every candidate, but cites only a few)."""
        ...

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """chunk id -> its text alone, for the chunks that exist (for the exact-match rule)."""
        ...

    def repeated(self, keys: Sequence[str], least: int) -> set[str]:
        """The keys (``plaintext.repeat_key``) held by ``least`` or more documents' snippets."""
        ...

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The vectors of these snippets (those that have one), by chunk id."""
        ...

    def documents_matching(self, filters: SearchFilters) -> set[str]: ...
    def vector_snapshot(self) -> VectorSnapshot: ...
    def read(
        self, statement: str, params: Sequence[Any] = (), settings: Sequence[tuple[str, str]] = ()
    ) -> list[Any]:
        """The rows of one read statement in the store's SQL (``?`` marks); ``settings``:
        the engine's own, set for that statement alone (PostgreSQL's)."""
        ...

    def filter_sql(self, filters: SearchFilters) -> tuple[str, list[Any]]:
        """SQL conditions on the ``documents d`` alias for ``filters`` (each with a leading
        ``AND``), and their parameters."""
        ...


@runtime_checkable
class SearchStore(Store, SearchReads, Protocol):
    """A store search can read: the port and its search reads (both stores are)."""
