"""``DocumentWriter``: the one path by which documents reach the store.

Sync, uploads, the worker's stages, reindex, the enricher, filing and import all
write through it: a document with its chunks and vectors, its wikilinks and
names, the file that holds it, a move of that file, a file dropped. The
writer never opens a transaction for a document write: the caller's stage
decides what commits together (STYLE §7); each call here is meant to run
inside one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING

from docshelf.model import Chunk, Document
from docshelf.parse.links import WikiLink, names_for
from docshelf.store import FileRecord, NewUpload, Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def _nothing() -> None:
    return None


class DocumentWriter:
    def __init__(self, store: Store, on_change: Callable[[], None] = _nothing) -> None:
        self.store = store
        self._on_change = on_change

    def put(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None = None,
        *,
        links: Sequence[WikiLink] | None = None,
        aliases: Sequence[str] = (),
        file: FileRecord | None = None,
        previous: FileRecord | None = None,
    ) -> None:
        """Write ``doc`` with its chunks (and their vectors): the old content leaves as
        the new arrives. With ``links``, its wikilinks and its path and title names are
        written too; with ``file``, the file that holds it (``point_file``)."""
        self.store.put_document(doc, chunks, vectors)
        if links is not None:
            self.store.put_links(doc.id, links)
            self.store.put_names(doc.id, names_for(doc.rel_path, "", ()), "path")
            self.store.put_names(doc.id, names_for("", doc.title, aliases), "title")
        if file is not None:
            self.point_file(file, previous)

    def add_uploads(self, uploads: Sequence[NewUpload]) -> None:
        """New uploaded documents with their queued jobs, held bytes and first access,
        together (``Store.add_uploads``)."""
        self.store.add_uploads(uploads)

    def add_chunks(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        """More chunks of ``doc``, written by ``put`` with the first of them: a large
        document's chunks go in several transactions, so that no one holds the store
        for the whole of it (call while ``doc`` is not complete: search does not see it)."""
        self.store.add_chunks(doc.id, chunks)

    def replace_chunks(
        self,
        doc: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
        at: float,
    ) -> None:
        """New versions of some of ``doc``'s chunks (a new header: the enricher's concepts),
        with the snippets' ``vectors``; ``doc`` is updated ``at`` (``Store.replace_chunks``).
        A large document is re-headed a batch of chunks at a time, never whole."""
        self.store.replace_chunks(doc.id, chunks, vectors, at)

    def add_vectors(
        self,
        chunk_ids: Sequence[str],
        vectors: npt.NDArray[np.float32] | None,
        finished: Sequence[str] = (),
    ) -> None:
        """Vectors for snippets written without them (``ingest/vectors.py``), and the
        ``finished`` documents no longer pending: searchable by meaning from this commit."""
        if vectors is not None and len(chunk_ids):
            self.store.put_vectors(chunk_ids, vectors)
        self.store.finish_embedding(finished)

    def point_file(self, record: FileRecord, previous: FileRecord | None = None) -> None:
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

    def relocate(
        self,
        record: FileRecord,
        rel_path: str,
        *,
        previous: FileRecord | None = None,
        moved_from: Sequence[str] = (),
        repoint: bool = True,
    ) -> None:
        """Known bytes at a new path (a move, or a copy): the file is recorded, and with
        ``repoint`` the document's path and path names follow it; the files it
        ``moved_from`` are forgotten. Nothing is parsed or embedded again."""
        with self.store.transaction():
            self.point_file(record, previous)
            if repoint:
                self.store.update_document_path(record.document_id, record.path, rel_path)
                self.store.put_names(record.document_id, names_for(rel_path, "", ()), "path")
            for path in moved_from:
                self.store.delete_file(path)

    def drop_file(self, record: FileRecord) -> int:
        """Forget a file; its document goes too when no other file holds it (returns 1 if
        so), else it is cited at a file that holds it still."""
        with self.store.transaction():
            self.store.delete_file(record.path)
            if not self.store.files_of_document(record.document_id):
                self.store.delete_document(record.document_id)
                return 1
            self.repoint(record.document_id)
        return 0

    def repoint(self, document_id: str) -> None:
        """Cite ``document_id`` at a file that holds its bytes, when the path it is cited
        at holds them no more: the first of its files by path, with that file's source
        (a copy's owner, once the first copy is gone) and path names."""
        doc = self.store.get_document(document_id)
        files = self.store.files_of_document(document_id)
        if doc is None or not files or doc.path in {f.path for f in files}:
            return
        file = files[0]
        source = self.store.get_source(file.source_id)
        rel_path = source.relative(file.path) if source else PurePath(file.path).name
        with self.store.transaction():
            self.store.update_document_path(document_id, file.path, rel_path, file.source_id)
            self.store.put_names(document_id, names_for(rel_path, "", ()), "path")
        self._on_change()

    def changed(self) -> None:
        """What callers may see changed beyond the store's generation (access, enrichment,
        a new generation): cached search results go."""
        self._on_change()
