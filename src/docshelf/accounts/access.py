"""A shared document as one user sees it (SPEC §9: per-user fields live on the access link).

Identical bytes are one document, however many users hold them; each user's
access link keeps the name they gave it (for an upload, the file name they
sent). That name, not the first uploader's, is what the user sees as the
document's file name — in its record, citation labels and downloads — and,
when the shared title was only made from a file name (the content has no
title of its own), their title is made from their name too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from docshelf.errors import NotFound
from docshelf.model import Document

if TYPE_CHECKING:
    from docshelf.store import Store

__all__ = ["as_named", "described", "seen_by", "title_from_name", "visible"]


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
    """Shared records with each one's per-user name (``as_named``)."""
    if user_id is None or not docs:
        return list(docs)
    names = store.access_titles(user_id, [d.id for d in docs])
    return [as_named(d, names.get(d.id)) for d in docs]


def visible(store: Store, document_id: str, user_id: str | None) -> Document:
    """The document as the caller sees it (their own name for it), if they may see it;
    another user's is answered as unknown."""
    doc = store.get_document(document_id)
    if doc is None or (user_id is not None and not store.has_access(user_id, doc.id)):
        raise NotFound(f"No document {document_id!r}")
    return seen_by(store, [doc], user_id)[0]
