"""A shared document as one user sees it (SPEC §9: per-user fields live on the access link).

Identical bytes are one document, however many users hold them; each user's
access link keeps the name they gave it (for an upload, the file name they
sent). That name, not the first uploader's, is what the user sees as the
document's file name — in its record, citation labels and downloads — and,
when the shared title was only made from a file name (the content has no
title of its own), their title is made from their name too. Its times are theirs
as well: ``added_at`` is when they got it (their access link's), and no later time
of the shared record (its update, its enrichment) reads earlier than that — so
nothing shown to them says when another holder sent the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from docshelf.errors import NotFound
from docshelf.model import Document

if TYPE_CHECKING:
    from docshelf.model import Job, Source
    from docshelf.store import AccessLink, FileRecord, Store

__all__ = [
    "as_named",
    "as_seen",
    "described",
    "files_seen",
    "job_seen",
    "seen_by",
    "title_from_name",
    "visible",
]


def title_from_name(name: str) -> str:
    """The title a document gets from its file name when its content gives none."""
    return PurePosixPath(name).stem or name


def as_named(doc: Document, name: str | None) -> Document:
    """``doc`` with ``name`` (a user's own name for it) in place of the shared one."""
    if not name or name == doc.rel_path:
        return doc
    named_after_file = doc.title == title_from_name(doc.rel_path)
    title = title_from_name(name) if named_after_file else doc.title
    return dataclasses.replace(doc, rel_path=name, title=title)


def as_seen(doc: Document, link: AccessLink | None) -> Document:
    """``doc`` as the holder of ``link`` sees it: under their name (``as_named``), added
    when they got it, changed and enriched no earlier than that."""
    if link is None:
        return doc
    doc = as_named(doc, link.title)
    since = link.added_at
    if since == doc.added_at:
        return doc
    enriched = None if doc.enriched_at is None else max(doc.enriched_at, since)
    return dataclasses.replace(
        doc, added_at=since, updated_at=max(doc.updated_at, since), enriched_at=enriched
    )


def job_seen(job: Job, link: AccessLink | None) -> Job:
    """A document's ingest job as the holder of ``link`` sees it: created when they got
    the document, its times no earlier than that."""
    if link is None:
        return job
    since = link.added_at
    return dataclasses.replace(
        job,
        created_at=since,
        updated_at=max(job.updated_at, since),
        next_attempt_at=max(job.next_attempt_at, since),
    )


def described(doc: Document) -> str:
    """The shared record as it may be described to anything every holder sees (an LLM
    writing the summary): an upload's file name, and a title made from it, belong to
    the user who sent it, so they are left out."""
    if doc.source_id is not None or not doc.path.startswith("upload://"):
        return f"{doc.title} ({doc.file_type}, {doc.rel_path})"
    if doc.title == title_from_name(doc.rel_path):
        return f"an uploaded {doc.file_type} document"
    return f"{doc.title} ({doc.file_type})"


def seen_by(store: Store, docs: Sequence[Document], user_id: str | None) -> list[Document]:
    """Shared records with each one's per-user name and times (``as_seen``), each where
    its holder keeps it (``_placed``)."""
    if user_id is None or not docs:
        return list(docs)
    links = store.access_links(user_id, [d.id for d in docs])
    owners = _owners(store) if any(d.source_id for d in docs) else {}
    return [
        _placed(store, as_seen(d, links.get(d.id)), links.get(d.id), user_id, owners) for d in docs
    ]


def _owners(store: Store) -> dict[str, Source]:
    """The library's sources by id (a few rows, read once for a list of documents)."""
    return {s.id: s for s in store.list_sources()}


def _placed(
    store: Store,
    doc: Document,
    link: AccessLink | None,
    user_id: str,
    sources: dict[str, Source],
) -> Document:
    """``doc`` where its holder keeps it: at a file of a folder they added (not at another
    user's path), else, for a user who named it (an upload), as their upload."""
    held = sources.get(doc.source_id) if doc.source_id else None
    if held is None or held.user_id == user_id:
        return doc
    for file in files_seen(store, doc.id, user_id, link, sources):
        return dataclasses.replace(
            doc,
            path=file.path,
            rel_path=sources[file.source_id].relative(file.path),
            source_id=file.source_id,
        )
    if link is not None and link.title is not None:
        return dataclasses.replace(doc, path=f"upload://{doc.sha256}", source_id=None)
    return doc


def files_seen(
    store: Store,
    document_id: str,
    user_id: str | None,
    link: AccessLink | None,
    sources: dict[str, Source] | None = None,
) -> list[FileRecord]:
    """The files holding a document that ``user_id`` may be told of: those of folders they
    added (and of a folder no one owns, to a holder with no name of their own for it)."""
    files = store.files_of_document(document_id)
    if user_id is None:
        return files
    sources = _owners(store) if sources is None else sources
    unnamed = link is None or link.title is None  # may be told of a folder no one owns
    owners: set[str | None] = {user_id, None} if unnamed else {user_id}
    return [f for f in files if f.source_id in sources and sources[f.source_id].user_id in owners]


def visible(store: Store, document_id: str, user_id: str | None) -> Document:
    """The document as the caller sees it (their own name for it), if they may see it;
    another user's is answered as unknown."""
    doc = store.get_document(document_id)
    if doc is None or (user_id is not None and not store.has_access(user_id, doc.id)):
        raise NotFound(f"No document {document_id!r}")
    return seen_by(store, [doc], user_id)[0]
