"""The shared SQL of documents and their chunks and vectors: reading and listing
documents, writing a document with its chunks in one transaction, facets."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docshelf.model import Chunk, Document, Tier
from docshelf.plaintext import repeat_key
from docshelf.store.base import FACETS, LIST_ORDERS, Listing, NewUpload, SearchFilters
from docshelf.store.rows import (
    CHUNK_COLUMNS,
    DOCUMENT_COLUMNS,
    DOCUMENT_FIELDS,
    JOB_COLUMNS,
    JOB_FIELDS,
    chunk_from_row,
    chunk_row,
    document_from_row,
    document_row,
    job_row,
    like_prefix,
)
from docshelf.store.sql.core import Rows, SQLBase, date_sql, held_by

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_DOC_UPDATES = ", ".join(f"{c} = excluded.{c}" for c in DOCUMENT_FIELDS[1:])
_DOC_SELECT = (
    ", ".join(f"d.{c}" for c in DOCUMENT_FIELDS)
    + ", (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.tier = 'section')"
    + ", (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.tier = 'snippet')"
)


# The ORDER BY of each ``Listing.order`` (then by path, for a stable order); {title} and
# {path} are the names the caller sees, {added} when they got it (``_Names``).
_ORDER_SQL = {
    "path": "",
    "title": "lower({title}) /*C*/, ",
    "type": "d.file_type /*C*/, ",
    "status": "d.status /*C*/, ",
    "added": "{added} DESC, ",
    "size": "d.size_bytes DESC, ",
}


@dataclasses.dataclass(frozen=True)
class _Names:
    """A listing's view of documents' names: for a user, their own (``accounts.access``:
    the name on their access link when they gave one, and a title made from it when the
    shared title was made from the shared file name), so that what another holder named
    the same bytes is neither matched nor sorted by; and when they got it (their link's
    ``added_at``), so that when another holder did is not sorted by either."""

    join: str = ""
    params: tuple[Any, ...] = ()
    title: str = "d.title"
    path: str = "d.rel_path"
    added: str = "d.added_at"

    @classmethod
    def of(cls, user_id: str | None) -> _Names:
        if not user_id:
            return cls()
        own = "ua.title IS NULL OR ua.title = d.rel_path"
        # the shared title made from the shared name: "report" of "report.txt" (as_named)
        made = (
            "(d.title = d.rel_path OR substr(d.rel_path, 1, length(d.title) + 1) = d.title || '.')"
        )
        return cls(
            " LEFT JOIN access ua ON ua.document_id = d.id AND ua.user_id = ?",
            (user_id,),
            f"(CASE WHEN {own} OR NOT {made} THEN d.title ELSE ua.title END)",
            "COALESCE(ua.title, d.rel_path)",
            "COALESCE(ua.added_at, d.added_at)",
        )


def _marks(columns: str) -> str:
    """One placeholder per column of ``columns``."""
    return ", ".join("?" * (columns.count(",") + 1))


# A document written without the vectors of its model waits for them (ingest/vectors.py).
PENDING = (
    "UPDATE documents SET embed_pending = ?, embed_lease_owner = NULL, "
    "embed_lease_until = NULL WHERE id = ?"
)


class DocumentsSQL(SQLBase):
    # -- documents ----------------------------------------------------------------------
    def _document(self, r: Sequence[Any]) -> Document:
        counts = {"section": int(r[-2]), "snippet": int(r[-1])}
        return document_from_row(r, counts, self.dialect.decode_list)

    def get_document(self, document_id: str) -> Document | None:
        return self.get_documents([document_id]).get(document_id)

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        def read(ids: list[str]) -> dict[str, Document]:
            rows = self._each_among(
                "d.id", ids, f"SELECT {_DOC_SELECT} FROM documents d WHERE {{}}"
            )
            return {d.id: d for d in map(self._document, rows)}

        return self._memo_many("document", list(dict.fromkeys(document_ids)), read)

    def document_ids_starting(self, prefix: str, limit: int) -> list[str]:
        rows = self._q(
            f"SELECT d.id FROM documents d WHERE {self.dialect.like_prefix('d.id')} "
            "ORDER BY d.id /*C*/ LIMIT ?",
            [like_prefix(prefix), limit],
        )
        return [r[0] for r in rows]

    def list_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        document_ids: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
        listing: Listing | None = None,
    ) -> list[Document]:
        listing = listing or Listing()
        names = _Names.of(user_id)
        where, params = self._listing(listing, source_id, user_id, document_ids, names)
        order = _ORDER_SQL[listing.order].format(title=names.title, added=names.added)
        rows = self._q(
            f"SELECT {_DOC_SELECT} FROM documents d{names.join} WHERE 1 = 1 {where} "
            f"ORDER BY {order}{names.path} /*C*/, d.id /*C*/ LIMIT ? OFFSET ?",
            [*names.params, *params, self.dialect.no_limit if limit is None else limit, offset],
        )
        return [self._document(r) for r in rows]

    def count_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        listing: Listing | None = None,
    ) -> int:
        names = _Names.of(user_id)
        where, params = self._listing(listing or Listing(), source_id, user_id, (), names)
        rows = self._q(
            f"SELECT COUNT(*) FROM documents d{names.join} WHERE 1 = 1 {where}",
            [*names.params, *params],
        )
        return int(rows[0][0])

    def _listing(
        self,
        listing: Listing,
        source_id: str | None,
        user_id: str | None,
        document_ids: Sequence[str],
        names: _Names,
    ) -> tuple[str, list[Any]]:
        if listing.order not in LIST_ORDERS:
            raise ValueError(f"Unknown order {listing.order!r}; orders are {LIST_ORDERS}")
        f = listing.filters
        where, params = self._filters(
            dataclasses.replace(
                f,
                source_id=source_id or f.source_id,
                user_id=user_id or f.user_id,
                document_ids=tuple(document_ids) or f.document_ids,
            )
        )
        if listing.status:
            where += " AND d.status = ?"
            params.append(listing.status)
        if listing.pages_without_text:
            where += " AND d.pages_without_text > 0"
        for word in (listing.matching or "").split():
            pattern = "%" + like_prefix(word)
            like = self.dialect.like_prefix
            where += f" AND ({like(names.title)} OR {like(names.path)})"
            params += [pattern, pattern]
        return where, params

    def put_document(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        snippets = [c for c in chunks if c.tier is Tier.SNIPPET]
        if vectors is not None and len(vectors) != len(snippets):
            raise ValueError(f"{len(vectors)} vectors for {len(snippets)} snippets")
        encode = self.dialect.encode_list
        with self.transaction():
            self._delete_chunks(document.id)
            # An upsert, not a replace or delete-and-insert: that would delete the row
            # and cascade to the files and jobs that point at it.
            self._x(
                f"INSERT INTO documents({DOCUMENT_COLUMNS}) "
                f"VALUES ({', '.join('?' * len(DOCUMENT_FIELDS))}) "
                f"ON CONFLICT (id) DO UPDATE SET {_DOC_UPDATES}",
                document_row(document, encode),
            )
            if chunks:  # none for an upload, which the worker parses later
                self._xm(
                    f"INSERT INTO chunks({CHUNK_COLUMNS}) VALUES ({_marks(CHUNK_COLUMNS)})",
                    (chunk_row(c, encode) for c in chunks),  # rows made as they are written
                )
            self._put_repeats(document.id, snippets, replace=True)
            if vectors is not None and len(snippets):
                self._insert_vectors([c.id for c in snippets], vectors)
            # without the vectors its model makes, the document waits for them (Store)
            pending = vectors is None and bool(snippets) and document.embedding_model is not None
            self._x(PENDING, (int(pending), document.id))
            self._bump_generation()

    def add_uploads(self, uploads: Sequence[NewUpload]) -> None:
        if not uploads:
            return
        encode = self.dialect.encode_list
        with self.transaction():
            self._xm(
                f"INSERT INTO documents({DOCUMENT_COLUMNS}) "
                f"VALUES ({', '.join('?' * len(DOCUMENT_FIELDS))})",
                [document_row(u.document, encode) for u in uploads],
            )
            self._xm(
                f"INSERT INTO jobs({JOB_COLUMNS}) VALUES ({', '.join('?' * len(JOB_FIELDS))})",
                [job_row(u.job) for u in uploads],
            )
            self._xm(
                "INSERT INTO job_payloads(document_id, stage, payload) VALUES (?, ?, ?)",
                [(u.job.document_id, u.job.stage.value, u.held) for u in uploads if u.held],
            )
            self._xm(
                self.dialect.insert_ignoring(
                    "access(user_id, document_id, title, added_at)", "user_id, document_id"
                ),
                [(u.user_id, u.document.id, u.title, u.document.added_at) for u in uploads],
            )
            self._bump_generation()

    def add_chunks(self, document_id: str, chunks: Sequence[Chunk]) -> None:
        if any(c.document_id != document_id for c in chunks):
            raise ValueError(f"chunks of another document than {document_id}")
        encode = self.dialect.encode_list
        with self.transaction():
            self._xm(
                f"INSERT INTO chunks({CHUNK_COLUMNS}) VALUES ({_marks(CHUNK_COLUMNS)})",
                (chunk_row(c, encode) for c in chunks),
            )
            self._put_repeats(document_id, [c for c in chunks if c.tier is Tier.SNIPPET], False)
            self._bump_generation()

    def _put_repeats(self, document_id: str, snippets: Sequence[Chunk], replace: bool) -> None:
        """The keys of the blocks these snippets of the document hold (``repeats``; with
        ``replace``, its only ones: a deleted document's go with it, by cascade)."""
        if replace:
            self._x("DELETE FROM repeats WHERE document_id = ?", (document_id,))
        keys = {k for k in (repeat_key(c.text) for c in snippets) if k}
        if keys:
            self._xm(
                self.dialect.insert_ignoring("repeats(key, document_id)", "key, document_id"),
                [(k, document_id) for k in sorted(keys)],
            )

    def update_document_path(
        self, document_id: str, path: str, rel_path: str, source_id: str | None = None
    ) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET path = ?, rel_path = ?, "
                "source_id = COALESCE(?, source_id), updated_at = ? WHERE id = ?",
                (path, rel_path, source_id, time.time(), document_id),
            )

    def delete_document(self, document_id: str) -> None:
        with self.transaction():
            self._delete_chunks(document_id)
            self._x("DELETE FROM documents WHERE id = ?", (document_id,))
            self._bump_generation()

    def _delete_chunks(self, document_id: str) -> None:
        # Explicit, so SQLite's delete triggers (its FTS index, the sidecars' logs) fire
        # row by row before any cascade. Distillates cite chunks: they go with them.
        self._x("DELETE FROM distillates WHERE document_id = ?", (document_id,))
        self._x(
            "DELETE FROM vectors WHERE chunk_seq IN (SELECT seq FROM chunks WHERE document_id = ?)",
            (document_id,),
        )
        self._x("DELETE FROM chunks WHERE document_id = ?", (document_id,))

    def set_document_status(self, document_id: str, status: str) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET status = ?, updated_at = ? WHERE id = ?",
                (status, time.time(), document_id),
            )
            self._bump_generation()

    def facet_counts(
        self, filters: SearchFilters, facets: Sequence[str] = FACETS
    ) -> dict[str, dict[str, int]]:
        unknown = set(facets) - set(FACETS)
        if unknown:
            raise ValueError(f"Unknown facets {sorted(unknown)}; facets are {FACETS}")
        where, params = self._filters(filters)
        date, date_params = date_sql(filters.user_id)
        columns = {"type": "d.file_type", "doctype": "d.document_type", "source": "d.source_id"}
        lists = {"tag": "d.tags", "concept": "d.concept_ids"}
        out: dict[str, dict[str, int]] = {}
        with self._reads() as q:
            for facet in facets:
                if facet == "source" and filters.user_id:  # the caller's sources, not another's
                    rows = q(
                        "SELECT ff.source_id, COUNT(DISTINCT d.id) FROM documents d "
                        "JOIN files ff ON ff.document_id = d.id WHERE EXISTS ("
                        f"{held_by()} AND pf.path = ff.path) {where} GROUP BY ff.source_id",
                        [filters.user_id, filters.user_id, *params],
                    )
                elif facet in columns:
                    column = columns[facet]
                    rows = q(
                        f"SELECT {column}, COUNT(*) FROM documents d "
                        f"WHERE {column} IS NOT NULL {where} GROUP BY {column}",
                        params,
                    )
                elif facet in lists:  # a tag in any case, as the tag filter matches it
                    value = "lower(value)" if facet == "tag" else "value"
                    rows = q(
                        f"SELECT {value}, COUNT(DISTINCT d.id) FROM documents d, "
                        f"{self.dialect.elements(lists[facet])} WHERE 1 = 1 {where} "
                        f"GROUP BY {value}",
                        params,
                    )
                else:  # date: by year, counted here (no portable SQL for a calendar year)
                    years: dict[str, int] = {}
                    dates = f"SELECT {date} FROM documents d WHERE 1 = 1 {where}"
                    for (when,) in q(dates, [*date_params, *params]):
                        try:
                            year = str(time.gmtime(float(when)).tm_year)
                        except (OverflowError, OSError, ValueError):  # no calendar date
                            continue
                        years[year] = years.get(year, 0) + 1
                    rows = list(years.items())
                counts = {str(r[0]): int(r[1]) for r in rows}
                order = (lambda kv: kv[0]) if facet == "date" else (lambda kv: (-kv[1], kv[0]))
                out[facet] = dict(sorted(counts.items(), key=order, reverse=facet == "date"))
        return out

    # -- chunks and vectors -------------------------------------------------------------------
    def _chunks(self, rows: Rows) -> list[Chunk]:
        return [chunk_from_row(r, self.dialect.decode_list) for r in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        rows = self._each_chunk(chunk_ids, f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE {{}}")
        found = {c.id: c for c in self._chunks(rows)}
        return [found[i] for i in chunk_ids if i in found]

    def chunks_of_document(self, document_id: str, tier: Tier) -> list[Chunk]:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND tier = ? ORDER BY ord",
            (document_id, tier.value),
        )
        return self._chunks(rows)

    def chunks_after(self, document_id: str, tier: Tier, after: int, limit: int) -> list[Chunk]:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND tier = ? AND ord > ? "
            "ORDER BY ord LIMIT ?",
            (document_id, tier.value, after, limit),
        )
        return self._chunks(rows)

    def replace_chunks(
        self,
        document_id: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
        at: float,
    ) -> None:
        if any(c.document_id != document_id for c in chunks):
            raise ValueError(f"chunks of another document than {document_id}")
        snippets = [c.id for c in chunks if c.tier is Tier.SNIPPET]
        if vectors is not None and len(vectors) != len(snippets):
            raise ValueError(f"{len(vectors)} vectors for {len(snippets)} snippets")
        encode = self.dialect.encode_list
        with self.transaction():
            # by id alone (``id`` is unique, and made of the document's fingerprint: the
            # chunks were checked to be ``document_id``'s), vectors first, then the rows
            for batch in self.dialect.batches([c.id for c in chunks]):
                among, params = self.dialect.among("id", batch)
                seqs = f"SELECT seq FROM chunks WHERE {among}"
                self._x(f"DELETE FROM vectors WHERE chunk_seq IN ({seqs})", params)
                self._x(f"DELETE FROM chunks WHERE {among}", params)
            self._xm(
                f"INSERT INTO chunks({CHUNK_COLUMNS}) VALUES ({_marks(CHUNK_COLUMNS)})",
                (chunk_row(c, encode) for c in chunks),
            )
            if vectors is not None and snippets:
                self._insert_vectors(snippets, vectors)
            self._x("UPDATE documents SET updated_at = ? WHERE id = ?", (at, document_id))
            self._bump_generation()

    def snippets_without_vectors(self, limit: int, document_id: str | None = None) -> list[Chunk]:
        where, params = ("AND document_id = ?", [document_id]) if document_id else ("", [])
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE tier = 'snippet' {where} "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq) "
            "ORDER BY seq LIMIT ?",
            [*params, limit],
        )
        return self._chunks(rows)

    def put_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        with self.transaction():
            self._insert_vectors(chunk_ids, vectors)
            self._bump_generation()

    def drop_vectors(self) -> None:
        with self.transaction():
            self._x("DELETE FROM vectors")
            self._bump_generation()
