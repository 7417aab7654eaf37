"""The stores' column lists, and rows to values and back: the one place that knows
them, for the SQL layer (store/sql/) and the export snapshot alike. Lists (tags,
concepts, heading paths, a distillate's chunks) are stored differently — JSON
text in SQLite, a text array in PostgreSQL — hence the encode/decode parameters
(a ``Dialect``'s ``encode_list`` and ``decode_list``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from docshelf.model import (
    Chunk,
    Distillate,
    Document,
    InnerHeading,
    Job,
    PageBreak,
    Source,
    Stage,
    Tier,
    User,
)

DOCUMENT_FIELDS = (
    *("id", "sha256", "title", "path", "rel_path", "source_id", "source_host", "file_type"),
    *("size_bytes", "added_at", "updated_at", "status", "tags", "concept_ids"),
    *("primary_concept_id", "concept_source", "taxonomy_version", "document_type", "category"),
    *("summary", "page_count", "pages_without_text", "embedding_model", "enriched_at"),
    *("enrichment_mode", "ocr_pages"),
)
DOCUMENT_COLUMNS = ", ".join(DOCUMENT_FIELDS)
DOCUMENT_LISTS = frozenset({"tags", "concept_ids"})  # the list-valued document columns
SOURCE_COLUMNS = "id, path, kind, host, added_at, user_id, follow_symlinks"
USER_COLUMNS = "id, name, is_admin, created_at, revoked_at"
JOB_COLUMNS = (
    "document_id, stage, status, attempts, next_attempt_at, lease_owner, lease_expires_at, "
    "last_error, blob_sha256, file_type, name, created_at, updated_at"
)
CHUNK_COLUMNS = (
    "id, document_id, tier, ord, parent_id, prev_id, next_id, heading_path, page_start, "
    "page_end, char_start, char_end, token_count, header, text, inner_headings, ocr_confidence, "
    "page_breaks"
)


JOB_FIELDS = tuple(c.strip() for c in JOB_COLUMNS.split(","))
FILE_COLUMNS = "path, source_id, document_id, size, mtime_ns"
DISTILLATE_COLUMNS = "document_id, ord, text, chunk_ids, mode"

Encode = Callable[[Sequence[str]], Any]
Decode = Callable[[Any], Sequence[str]]


def json_list(values: Sequence[str]) -> str:
    return json.dumps(list(values))


def from_json_list(raw: Any) -> Sequence[str]:
    return tuple(json.loads(raw))


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching ``prefix`` literally (``%`` and ``_`` escaped with ``\\``)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def source_row(s: Source) -> tuple[Any, ...]:
    return (s.id, s.path, s.kind, s.host, s.added_at, s.user_id, s.follow_symlinks)


def source_from_row(r: Sequence[Any]) -> Source:
    return Source(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]))


def document_row(d: Document, encode_list: Encode = json_list) -> tuple[Any, ...]:
    """The values of ``DOCUMENT_FIELDS``, in that order."""
    return tuple(
        encode_list(getattr(d, name)) if name in DOCUMENT_LISTS else getattr(d, name)
        for name in DOCUMENT_FIELDS
    )


def document_from_row(
    r: Sequence[Any], counts: dict[str, int], decode_list: Decode = from_json_list
) -> Document:
    """A document from the values of ``DOCUMENT_FIELDS`` and its chunk counts by tier."""
    return Document(
        id=r[0],
        sha256=r[1],
        title=r[2],
        path=r[3],
        rel_path=r[4],
        source_id=r[5],
        source_host=r[6],
        file_type=r[7],
        size_bytes=r[8],
        added_at=r[9],
        updated_at=r[10],
        status=r[11],
        tags=tuple(decode_list(r[12])),
        concept_ids=tuple(decode_list(r[13])),
        primary_concept_id=r[14],
        concept_source=r[15],
        taxonomy_version=r[16],
        document_type=r[17],
        category=r[18],
        summary=r[19],
        page_count=r[20],
        pages_without_text=r[21],
        embedding_model=r[22],
        enriched_at=r[23],
        enrichment_mode=r[24],
        ocr_pages=r[25],
        chunk_counts=counts,
    )


def distillate_from_row(r: Sequence[Any], decode_list: Decode = from_json_list) -> Distillate:
    """A distillate from the values of ``DISTILLATE_COLUMNS``."""
    return Distillate(r[0], r[1], r[2], tuple(decode_list(r[3])), r[4])


def chunk_row(c: Chunk, encode_path: Encode = json_list) -> tuple[Any, ...]:
    return (
        c.id,
        c.document_id,
        c.tier.value,
        c.index,
        c.parent_id,
        c.prev_id,
        c.next_id,
        encode_path(c.heading_path),
        c.page_start,
        c.page_end,
        c.start,
        c.end,
        c.token_count,
        c.header,
        c.text,
        encode_inner(c.inner),
        c.ocr_confidence,
        encode_breaks(c.page_breaks),
    )


def encode_inner(inner: Sequence[InnerHeading]) -> str:
    """A chunk's inner headings as stored (JSON text in both stores): ``[[start, [path…]]…]``."""
    return json.dumps([[i.start, list(i.heading_path)] for i in inner]) if inner else "[]"


def decode_inner(raw: Any) -> tuple[InnerHeading, ...]:
    """``encode_inner``'s value back (a row of a store before the column: none)."""
    if raw is None or raw == "[]":
        return ()
    return tuple(InnerHeading(int(s), tuple(p)) for s, p in json.loads(raw))


def encode_breaks(breaks: Sequence[PageBreak]) -> str:
    """A snippet's page breaks as stored (JSON text in both stores): ``[[start, page]…]``."""
    return json.dumps([[b.start, b.page] for b in breaks]) if breaks else "[]"


def decode_breaks(raw: Any) -> tuple[PageBreak, ...]:
    """``encode_breaks``'s value back (a row of a store before the column: none)."""
    if raw is None or raw == "[]":
        return ()
    return tuple(PageBreak(int(s), int(p)) for s, p in json.loads(raw))


def inner_paths(raw: Any) -> tuple[tuple[str, ...], ...]:
    """The heading paths alone of a stored ``inner_headings`` value."""
    return tuple(i.heading_path for i in decode_inner(raw))


def chunk_from_row(r: Sequence[Any], decode_path: Decode = from_json_list) -> Chunk:
    return Chunk(
        id=r[0],
        document_id=r[1],
        tier=Tier(r[2]),
        index=r[3],
        parent_id=r[4],
        prev_id=r[5],
        next_id=r[6],
        heading_path=tuple(decode_path(r[7])),
        page_start=r[8],
        page_end=r[9],
        start=r[10],
        end=r[11],
        token_count=r[12],
        header=r[13],
        text=r[14],
        inner=decode_inner(r[15]) if len(r) > 15 else (),
        ocr_confidence=r[16] if len(r) > 16 else None,
        page_breaks=decode_breaks(r[17]) if len(r) > 17 else (),
    )


def user_from_row(r: Sequence[Any]) -> User:
    return User(id=r[0], name=r[1], is_admin=bool(r[2]), created_at=r[3], revoked_at=r[4])


def job_row(j: Job) -> tuple[Any, ...]:
    return (
        j.document_id,
        j.stage.value,
        j.status,
        j.attempts,
        j.next_attempt_at,
        j.lease_owner,
        j.lease_expires_at,
        j.last_error,
        j.blob_sha256,
        j.file_type,
        j.name,
        j.created_at,
        j.updated_at,
    )


def job_from_row(r: Sequence[Any]) -> Job:
    return Job(
        document_id=r[0],
        stage=Stage(r[1]),
        status=r[2],
        attempts=r[3],
        next_attempt_at=r[4],
        lease_owner=r[5],
        lease_expires_at=r[6],
        last_error=r[7],
        blob_sha256=r[8],
        file_type=r[9],
        name=r[10],
        created_at=r[11],
        updated_at=r[12],
    )
