"""The domain: plain values that cross module boundaries. No I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePath


class Tier(StrEnum):
    """The two chunk tiers: large sections for context, small snippets for recall."""

    SECTION = "section"
    SNIPPET = "snippet"


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    CODE = "code"
    TABLE = "table"
    QUOTE = "quote"
    OTHER = "other"


def fingerprint(data: bytes) -> str:
    """A document's identity: the SHA-256 of its bytes, as hex.

    The bytes are hashed exactly as stored ("normalised" is the identity): an
    upload can then be fingerprinted while it streams, and a file on disk and
    the same file uploaded get the same fingerprint.
    """
    import hashlib  # (OpenSSL's: not at the start of every command)

    return hashlib.sha256(data).hexdigest()


def document_id(fp: str) -> str:
    """Document ids derive from the fingerprint, so the same bytes are one document."""
    return f"doc_{fp[:16]}"


def chunk_id(fp: str, tier: Tier, index: int) -> str:
    """Deterministic chunk ids: ``chunk_<fp12>_<n>`` for snippets, ``..._s<n>`` for sections."""
    suffix = f"s{index}" if tier is Tier.SECTION else str(index)
    return f"chunk_{fp[:12]}_{suffix}"


# The document types enrichment assigns (``Document.document_type``), and a ``doctype``
# filter may name.
DOCUMENT_TYPES: tuple[str, ...] = (
    "paper",
    "book",
    "report",
    "manual",
    "transcript",
    "article",
    "note",
)


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document, located by character span in its body."""

    kind: BlockKind
    start: int
    end: int
    heading_path: tuple[str, ...]
    level: int = 0  # heading level (1-6) for headings, else 0
    page: int | None = None  # 1-based page for paged formats
    # read by OCR (a scanned page, an image): the mean confidence of its words, 0 to 1
    ocr_confidence: float | None = None


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser returns: the body text, its blocks, and what it learnt about the file."""

    body: str
    blocks: tuple[Block, ...]
    title: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    page_count: int | None = None
    pages_without_text: int = 0
    warnings: tuple[str, ...] = ()
    ocr_pages: int = 0  # pages whose text was read by OCR (each one's blocks say so)


@dataclass(frozen=True)
class InnerHeading:
    """A heading inside a snippet that packs several short sections: where the text under
    it starts (a body offset, the heading's own line included) and its heading path. Its
    part of the snippet runs to the next inner heading's start, or the snippet's end."""

    start: int
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class PageBreak:
    """A later page a snippet runs onto: where that page's text starts in it (a body
    offset) and the page's number. Its part of the snippet runs to the next break's
    start, or the snippet's end."""

    start: int
    page: int


@dataclass(frozen=True)
class Chunk:
    """A section or snippet. ``text`` is the body span; ``header`` the structural prefix.

    ``inner`` are the places of the headings packed inside a snippet after its first
    content (its own heading is ``heading_path``): a search cites the hit under the one
    whose part holds the query's words (``search/citing.py``). ``page_breaks`` are the
    later pages a snippet on pages runs onto: it is cited at the one its words are on."""

    id: str
    document_id: str
    tier: Tier
    index: int  # position within its tier, 0-based
    text: str
    header: str
    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    parent_id: str | None = None
    prev_id: str | None = None
    next_id: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    token_count: int = 0
    inner: tuple[InnerHeading, ...] = ()
    page_breaks: tuple[PageBreak, ...] = ()
    # the mean word confidence (0 to 1) of the text in it that OCR read, None when none did
    ocr_confidence: float | None = None

    @property
    def retrieval_text(self) -> str:
        """What is embedded: the structural header, a blank line, the chunk."""
        return f"{self.header}\n\n{self.text}" if self.header else self.text


@dataclass(frozen=True)
class Source:
    id: str
    path: str
    kind: str  # "folder" or "file"
    host: str
    added_at: float
    user_id: str | None = None  # the owner: the user who added it
    follow_symlinks: bool = False  # follow symlinks that lead outside the folder

    def relative(self, path: str) -> str:
        """A file's ``path`` below this source, with forward slashes (a file source, or
        a path outside it: the file's name)."""
        here, root = PurePath(path), PurePath(self.path)
        return (
            here.relative_to(root).as_posix()
            if here.is_relative_to(root) and here != root
            else here.name
        )


@dataclass(frozen=True)
class Document:
    """The shared record of one file's content (SPEC §9 "Document record")."""

    id: str
    sha256: str
    title: str
    path: str
    rel_path: str
    source_id: str | None
    source_host: str
    file_type: str
    size_bytes: int
    added_at: float
    updated_at: float
    status: str = "complete"
    tags: tuple[str, ...] = ()
    concept_ids: tuple[str, ...] = ()
    primary_concept_id: str | None = None
    concept_source: str | None = None
    taxonomy_version: str | None = None
    document_type: str | None = None
    category: str | None = None
    summary: str | None = None
    page_count: int | None = None
    pages_without_text: int = 0
    chunk_counts: dict[str, int] = field(default_factory=dict)
    embedding_model: str | None = None
    enriched_at: float | None = None  # None: enrichment pending
    enrichment_mode: str | None = None  # "llm" | "offline" | "failed"
    ocr_pages: int = 0  # pages (or an image) whose text OCR read


@dataclass(frozen=True)
class Distillate:
    """One key claim or fact of a document, citing the chunks it came from."""

    document_id: str
    n: int  # its place in the document's list, 0-based
    text: str
    chunk_ids: tuple[str, ...]
    mode: str  # "llm" | "offline"


@dataclass(frozen=True)
class Enrichment:
    """What enrichment learnt about a document, and how (``mode``: llm, offline, or
    manifest: computed elsewhere and backfilled, knowledge/manifest.py)."""

    summary: str
    document_type: str
    category: str
    concept_ids: tuple[str, ...]
    concept_source: str | None  # "llm" | "embedding" | "frontmatter" | "manifest" | None
    taxonomy_version: str | None
    # (text, chunk ids); None: the document's distillates stay as they are (a manifest's)
    claims: tuple[tuple[str, tuple[str, ...]], ...] | None
    mode: str
    model: str | None = None  # the LLM's name, when one made it
    tags: tuple[str, ...] | None = None  # the document's tags anew; None: they stay

    def distillates(self, document_id: str) -> list[Distillate]:
        return [
            Distillate(document_id, n, text, ids, self.mode)
            for n, (text, ids) in enumerate(self.claims or ())
        ]


@dataclass(frozen=True)
class Citation:
    label: str
    path: str
    title: str
    heading_path: tuple[str, ...]
    chunk_index: int
    page_start: int | None
    page_end: int | None
    # where the cited text starts in the document's body: the chunk's start, or the
    # start of the inner heading it is cited under (what a face opens and scrolls to)
    anchor: int = 0

    @classmethod
    def for_chunk(
        cls, chunk: Chunk, doc: Document, at: InnerHeading | PageBreak | None = None
    ) -> Citation:
        """The citation of ``chunk``: under its own heading and on its pages, or at ``at``:
        an inner heading (one of ``chunk.inner``), whose heading path and start it then
        carries, or one page it runs onto (its first, or one of ``chunk.page_breaks``),
        whose number and start it then carries."""
        first, last = chunk.page_start, chunk.page_end
        if isinstance(at, PageBreak):
            first, last = at.page, at.page
        if first is not None:
            pages = f"p.{first}" if last in (None, first) else f"pp.{first}-{last}"
            where = f"{doc.rel_path} {pages}"
        else:
            where = f"{doc.rel_path}#{chunk.index}"
        under = at.heading_path if isinstance(at, InnerHeading) else chunk.heading_path
        return cls(
            label=f"{doc.title} ({where})",
            path=doc.path,
            title=doc.title,
            heading_path=under,
            chunk_index=chunk.index,
            page_start=first,
            page_end=last,
            anchor=at.start if at is not None else chunk.start,
        )


@dataclass(frozen=True)
class Scores:
    lexical: float | None
    vector: float | None
    fused: float
    rerank: float | None = None


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    document: Document
    score: float
    scores: Scores
    citation: Citation
    context: Chunk | None = None  # the parent section, when asked for
    # the rules that rank the hit above hits of higher score, weightiest first ("named",
    # "quoted", "strong", "few": search/candidate.py's Precedence); a hit keeps its score
    placed_by: tuple[str, ...] = ()
    weak: bool = False  # matches the query neither by its words nor by meaning (stages/weak.py)


@dataclass(frozen=True)
class Settled:
    """A file as it failed, when its bytes decide the failure (``failures.decided_by``,
    not a time or memory limit): its stat, fingerprint (None when it was not read: too
    large), what read it (``parser``: docshelf's and its parsers' versions and the
    settings the failure depends on), and when. ``sync`` passes over the file while all
    of these stay the same."""

    size: int
    mtime_ns: int
    sha256: str | None
    parser: str
    tried_at: float


@dataclass(frozen=True)
class Failure:
    path: str
    reason: str
    settled: Settled | None = None  # remembered: sync passes over the file until it changes
    skipped: bool = False  # passed over by this sync: unchanged since it failed


@dataclass
class SyncReport:
    """What ``add`` and ``sync`` did, file by file (SPEC §9)."""

    source_id: str | None
    added: int = 0
    # files whose bytes another file already holds: one document, cited at every path
    copies: int = 0
    updated: int = 0
    unchanged: int = 0
    moved: int = 0
    removed: int = 0
    failures: list[Failure] = field(default_factory=list)
    # the library's check after a sync (``ingest/check.py``): what it mended, what remains
    repaired: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    def merge(self, other: SyncReport) -> None:
        self.added += other.added
        self.copies += other.copies
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.moved += other.moved
        self.removed += other.removed
        self.failures.extend(other.failures)
        self.repaired.extend(other.repaired)
        self.problems.extend(other.problems)


class Stage(StrEnum):
    """Where a job is in the pipeline (SPEC §2); ``failed`` is the dead-letter state."""

    QUEUED = "queued"
    PARSING = "parsing"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXING = "indexing"
    COMPLETE = "complete"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (Stage.COMPLETE, Stage.FAILED)


@dataclass(frozen=True)
class User:
    id: str
    name: str
    is_admin: bool
    created_at: float
    revoked_at: float | None = None


# A notebook's name: up to 80 characters (NOTEBOOK_NAME_MAX), none a control character,
# not all of them white space.
NOTEBOOK_NAME = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
NOTEBOOK_NAME_MAX = 80


@dataclass(frozen=True)
class Notebook:
    """A named, saved set of sources and documents, with optional filters, that a user
    searches and asks within (NotebookLM's notebook). Its owner may share it read-only
    with other users; each reader still sees only the documents they may read."""

    id: str
    name: str
    user_id: str  # the owner
    sources: tuple[str, ...] = ()  # every document a file of these sources holds
    documents: tuple[str, ...] = ()  # and these documents
    # Filters in the public vocabulary (search/filters.py), as (name, value) pairs:
    # ("tag", "x"), ("type", "pdf") …; they narrow what the sets above hold.
    filters: tuple[tuple[str, str], ...] = ()
    shared_with: tuple[str, ...] = ()  # user ids that may read it
    created_at: float = 0.0
    updated_at: float = 0.0


@dataclass(frozen=True)
class Job:
    """The durable record of one document's trip through the pipeline."""

    document_id: str
    stage: Stage
    status: str  # queued | running | complete | failed
    attempts: int
    next_attempt_at: float
    lease_owner: str | None
    lease_expires_at: float | None
    last_error: str | None
    blob_sha256: str
    file_type: str
    name: str
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class Event:
    """A stage change (``kind == "stage"``) or a lifecycle event (``document.*``)."""

    seq: int
    document_id: str
    kind: str
    stage: str | None
    progress_pct: int | None
    message: str
    created_at: float
    user_id: str | None = None
