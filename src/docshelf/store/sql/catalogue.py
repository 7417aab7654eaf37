"""The shared SQL of the library itself: settings, sources and their files, documents
with their chunks and vectors, the embedding cache and the counts of ``status``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docshelf.model import Chunk, Document, Failure, Source, Tier
from docshelf.store.base import (
    FACETS,
    LIST_ORDERS,
    ChunkPlace,
    FileRecord,
    Listing,
    NewUpload,
    SearchFilters,
    StoreStats,
    VectorSnapshot,
)
from docshelf.store.rows import (
    CHUNK_COLUMNS,
    DOCUMENT_COLUMNS,
    DOCUMENT_FIELDS,
    FILE_COLUMNS,
    JOB_COLUMNS,
    JOB_FIELDS,
    SOURCE_COLUMNS,
    chunk_from_row,
    chunk_row,
    document_from_row,
    document_row,
    inner_paths,
    job_row,
    like_prefix,
    source_from_row,
    source_row,
)
from docshelf.store.sql.core import DATE_SQL, Rows, SQLBase

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_DOC_UPDATES = ", ".join(f"{c} = excluded.{c}" for c in DOCUMENT_FIELDS[1:])
_DOC_SELECT = (
    ", ".join(f"d.{c}" for c in DOCUMENT_FIELDS)
    + ", (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.tier = 'section')"
    + ", (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.tier = 'snippet')"
)


# The ORDER BY of each ``Listing.order`` (then by path, for a stable order).
_ORDER_SQL = {
    "path": "",
    "title": "lower(d.title) /*C*/, ",
    "type": "d.file_type /*C*/, ",
    "status": "d.status /*C*/, ",
    "added": "d.added_at DESC, ",
    "size": "d.size_bytes DESC, ",
}


# What ``chunk_places`` reads of each chunk (``_place`` turns it into a ChunkPlace).
def _marks(columns: str) -> str:
    """One placeholder per column of ``columns``."""
    return ", ".join("?" * (columns.count(",") + 1))


_PLACE_COLUMNS = (
    "c.document_id, c.parent_id, c.heading_path, c.page_start, c.ord, "
    "CASE WHEN c.ord = 0 THEN c.header END, c.inner_headings"
)


# A heading path as stored (JSON text in SQLite, an array in PostgreSQL) -> decoded.
_PATHS: dict[Any, tuple[str, ...]] = {}


class CatalogueSQL(SQLBase):
    # -- meta -------------------------------------------------------------------------
    def schema_version(self) -> int:
        return int(self._q("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])

    def get_meta(self, key: str) -> str | None:
        def read() -> str | None:
            rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
            return str(rows[0][0]) if rows else None

        return self._memo(("meta", key), read)

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            self._meta_set(key, value)

    def _meta_set(self, key: str, value: str) -> None:
        """What else a setting binds, in its transaction (PostgreSQL: the vector index)."""

    def generation(self) -> int:
        value = self.get_meta("generation")
        return int(value) if value else 0

    def _bump_generation(self) -> None:
        self._x(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)"
        )

    # -- sources and files ----------------------------------------------------------------
    def add_source(self, source: Source) -> None:
        with self.transaction():
            self._x(
                f"INSERT INTO sources({SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                source_row(source),
            )

    def get_source(self, source_id: str) -> Source | None:
        rows = self._q(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE id = ?", (source_id,))
        return source_from_row(rows[0]) if rows else None

    def find_source(self, path: str) -> Source | None:
        rows = self._q(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE path = ?", (path,))
        return source_from_row(rows[0]) if rows else None

    def list_sources(self) -> list[Source]:
        rows = self._q(f"SELECT {SOURCE_COLUMNS} FROM sources ORDER BY path /*C*/")
        return [source_from_row(r) for r in rows]

    def delete_source(self, source_id: str) -> None:
        with self.transaction():
            self._x("DELETE FROM sources WHERE id = ?", (source_id,))

    def set_follow_symlinks(self, source_id: str, follow: bool) -> None:
        with self.transaction():
            self._x("UPDATE sources SET follow_symlinks = ? WHERE id = ?", (follow, source_id))

    def files_of_source(self, source_id: str) -> dict[str, FileRecord]:
        rows = self._q(f"SELECT {FILE_COLUMNS} FROM files WHERE source_id = ?", (source_id,))
        return {r[0]: FileRecord(*r) for r in rows}

    def files_of_document(self, document_id: str) -> list[FileRecord]:
        rows = self._q(
            f"SELECT {FILE_COLUMNS} FROM files WHERE document_id = ? ORDER BY path /*C*/",
            (document_id,),
        )
        return [FileRecord(*r) for r in rows]

    def put_file(self, record: FileRecord) -> None:
        with self.transaction():
            self._x(
                f"INSERT INTO files({FILE_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET "
                "source_id = excluded.source_id, document_id = excluded.document_id, "
                "size = excluded.size, mtime_ns = excluded.mtime_ns",
                (record.path, record.source_id, record.document_id, record.size, record.mtime_ns),
            )

    def delete_file(self, path: str) -> None:
        with self.transaction():
            self._x("DELETE FROM files WHERE path = ?", (path,))

    def record_failures(self, source_id: str, failures: Sequence[Failure]) -> None:
        with self.transaction():
            self._x("DELETE FROM failures WHERE source_id = ?", (source_id,))
            now = time.time()
            self._xm(
                "INSERT INTO failures(path, source_id, reason, seen_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET source_id = excluded.source_id, "
                "reason = excluded.reason, seen_at = excluded.seen_at",
                [(f.path, source_id, f.reason, now) for f in failures],
            )

    def list_failures(self, limit: int = 100) -> list[Failure]:
        rows = self._q("SELECT path, reason FROM failures ORDER BY path /*C*/ LIMIT ?", (limit,))
        return [Failure(r[0], r[1]) for r in rows]

    def count_failures(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM failures")[0][0])

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
        where, params = self._listing(listing, source_id, user_id, document_ids)
        order = _ORDER_SQL[listing.order]
        rows = self._q(
            f"SELECT {_DOC_SELECT} FROM documents d WHERE 1 = 1 {where} "
            f"ORDER BY {order}d.rel_path /*C*/, d.id /*C*/ LIMIT ? OFFSET ?",
            [*params, self.dialect.no_limit if limit is None else limit, offset],
        )
        return [self._document(r) for r in rows]

    def count_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        listing: Listing | None = None,
    ) -> int:
        where, params = self._listing(listing or Listing(), source_id, user_id, ())
        rows = self._q(f"SELECT COUNT(*) FROM documents d WHERE 1 = 1 {where}", params)
        return int(rows[0][0])

    def _listing(
        self,
        listing: Listing,
        source_id: str | None,
        user_id: str | None,
        document_ids: Sequence[str],
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
        for word in (listing.matching or "").split():
            pattern = "%" + like_prefix(word)
            like = self.dialect.like_prefix
            where += f" AND ({like('d.title')} OR {like('d.rel_path')})"
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
            if vectors is not None and len(snippets):
                self._insert_vectors([c.id for c in snippets], vectors)
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
            self._bump_generation()

    def update_document_path(self, document_id: str, path: str, rel_path: str) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET path = ?, rel_path = ?, updated_at = ? WHERE id = ?",
                (path, rel_path, time.time(), document_id),
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

    def documents_matching(self, filters: SearchFilters) -> set[str]:
        where, params = self._filters(filters)
        rows = self._q(f"SELECT d.id FROM documents d WHERE 1 = 1 {where}", params)
        return {r[0] for r in rows}

    def facet_counts(
        self, filters: SearchFilters, facets: Sequence[str] = FACETS
    ) -> dict[str, dict[str, int]]:
        unknown = set(facets) - set(FACETS)
        if unknown:
            raise ValueError(f"Unknown facets {sorted(unknown)}; facets are {FACETS}")
        where, params = self._filters(filters)
        columns = {"type": "d.file_type", "doctype": "d.document_type", "source": "d.source_id"}
        lists = {"tag": "d.tags", "concept": "d.concept_ids"}
        out: dict[str, dict[str, int]] = {}
        with self._reads() as q:
            for facet in facets:
                if facet in columns:
                    column = columns[facet]
                    rows = q(
                        f"SELECT {column}, COUNT(*) FROM documents d "
                        f"WHERE {column} IS NOT NULL {where} GROUP BY {column}",
                        params,
                    )
                elif facet in lists:
                    rows = q(
                        f"SELECT value, COUNT(*) FROM documents d, "
                        f"{self.dialect.elements(lists[facet])} WHERE 1 = 1 {where} "
                        "GROUP BY value",
                        params,
                    )
                else:  # date: by year, counted here (no portable SQL for a calendar year)
                    years: dict[str, int] = {}
                    dates = f"SELECT {DATE_SQL} FROM documents d WHERE 1 = 1 {where}"
                    for (when,) in q(dates, params):
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

    def chunk_places(self, chunk_ids: Sequence[str]) -> dict[str, ChunkPlace]:
        def read(ids: list[str]) -> dict[str, ChunkPlace]:
            rows = self._each_chunk(ids, f"SELECT c.id, {_PLACE_COLUMNS} FROM chunks c WHERE {{}}")
            return {r[0]: self._place(r, 1) for r in rows}

        return self._memo_many("chunk_place", list(dict.fromkeys(chunk_ids)), read)

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        rows = self._each_chunk(chunk_ids, "SELECT c.id, c.text FROM chunks c WHERE {}")
        return dict(rows)

    def _each_chunk(self, chunk_ids: Sequence[str], query: str) -> Rows:
        """``query`` (``{}`` where the test on the chunks ``c`` goes) for the chunks
        ``chunk_ids``: by seq for those whose seq the memo of reads holds (the visibility
        checks put it there: one lookup of the table's key instead of two, through the
        index of ids and then the key), by id for the rest."""
        known, rest = self._known_seqs(chunk_ids)
        rows = self._each_among("c.seq", known, query) if known else []
        return rows + self._each_among("c.id", rest, query) if rest else rows

    def _known_seqs(self, chunk_ids: Sequence[str]) -> tuple[list[int], list[str]]:
        """(the seqs of the chunks whose seq the memo of reads holds, the other ids)."""
        return [], list(chunk_ids)

    def _place(self, r: Sequence[Any], at: int) -> ChunkPlace:
        """A ``ChunkPlace`` from ``_PLACE_COLUMNS`` starting at column ``at`` (heading
        paths decoded once each: a section's snippets share theirs)."""
        raw = r[at + 2]
        key = raw if isinstance(raw, str) else tuple(raw)
        path = _PATHS.get(key)
        if path is None:
            if len(_PATHS) > 20_000:
                _PATHS.clear()
            path = _PATHS[key] = tuple(self.dialect.decode_list(raw))
        inner = () if r[at + 6] == "[]" else inner_paths(r[at + 6])
        return ChunkPlace(r[at], r[at + 1], path, r[at + 3], r[at + 4], r[at + 5], inner)

    def chunks_of_document(self, document_id: str, tier: Tier) -> list[Chunk]:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND tier = ? ORDER BY ord",
            (document_id, tier.value),
        )
        return self._chunks(rows)

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

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        rows = self._each_chunk(
            chunk_ids,
            f"SELECT c.id, {self.dialect.vector_bytes} FROM vectors v "
            "JOIN chunks c ON c.seq = v.chunk_seq WHERE {}",
        )
        return {r[0]: self.dialect.decode_vector(r[1]) for r in rows}

    def vector_snapshot(self) -> VectorSnapshot:
        with self._reads() as q:
            meta = dict(
                q("SELECT key, value FROM meta WHERE key IN ('generation', 'embedding_dim')", ())
            )
            rows = q(
                f"SELECT c.id, c.document_id, {self.dialect.vector_bytes} FROM vectors v "
                "JOIN chunks c ON c.seq = v.chunk_seq JOIN documents d ON d.id = c.document_id "
                "WHERE d.status = 'complete' ORDER BY v.chunk_seq",
                (),
            )
        dim = int(meta.get("embedding_dim") or 0)
        return VectorSnapshot(
            generation=int(meta.get("generation") or 0),
            chunk_ids=[r[0] for r in rows],
            document_ids=[r[1] for r in rows],
            matrix=self.dialect.vector_matrix([r[2] for r in rows], dim),
        )

    # -- embedding cache -------------------------------------------------------------------
    def cached_embeddings(
        self, model: str, text_hashes: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        import numpy as np

        rows = self._each_among(
            "text_hash",
            list(text_hashes),
            "SELECT text_hash, embedding FROM embedding_cache WHERE model = ? AND {}",
            [model],
        )
        return {r[0]: np.frombuffer(bytes(r[1]), dtype=np.float32) for r in rows}

    def cache_embeddings(
        self, model: str, items: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None:
        import numpy as np

        with self.transaction():
            self._xm(
                self.dialect.insert_ignoring(
                    "embedding_cache(model, text_hash, embedding)", "model, text_hash"
                ),
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    # -- upkeep -----------------------------------------------------------------------------
    def tag_counts(self) -> dict[str, int]:
        """How many documents carry each free-form tag."""
        rows = self._q(
            f"SELECT value, COUNT(*) FROM documents d, {self.dialect.elements('d.tags')} "
            "GROUP BY value ORDER BY COUNT(*) DESC, value /*C*/"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def stats(self) -> StoreStats:
        with self._reads() as q:
            one = q(
                "SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM sources), "
                "(SELECT COUNT(*) FROM files), "
                "(SELECT COUNT(*) FROM chunks WHERE tier = 'section'), "
                "(SELECT COUNT(*) FROM chunks WHERE tier = 'snippet'), "
                "(SELECT COUNT(*) FROM vectors), "
                "(SELECT COALESCE(SUM(pages_without_text), 0) FROM documents)",
                (),
            )[0]
            by_status = q("SELECT status, COUNT(*) FROM documents GROUP BY status", ())
            by_type = q("SELECT file_type, COUNT(*) FROM documents GROUP BY file_type", ())
            by_enrichment = q(
                "SELECT CASE WHEN enriched_at IS NULL THEN 'pending' ELSE enrichment_mode END, "
                "COUNT(*) FROM documents WHERE status = 'complete' GROUP BY 1",
                (),
            )
        return StoreStats(
            documents=int(one[0]),
            sources=int(one[1]),
            files=int(one[2]),
            sections=int(one[3]),
            snippets=int(one[4]),
            snippets_with_vectors=int(one[5]),
            pages_without_text=int(one[6]),
            by_status={str(r[0]): int(r[1]) for r in by_status},
            by_file_type={str(r[0]): int(r[1]) for r in by_type},
            by_enrichment={str(r[0]): int(r[1]) for r in by_enrichment},
        )

    def check(self) -> list[str]:
        """Integrity problems (the engine's own first), or an empty list."""
        problems = self._engine_problems()
        orphan = self._q(
            "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.id = c.document_id)"
        )[0][0]
        if orphan:
            problems.append(f"{orphan} chunks belong to no document")
        model = self.get_meta("embedding_model")
        if model and model != "none":
            missing = self._q(
                "SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.tier = 'snippet' AND d.status = 'complete' AND NOT EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq)"
            )[0][0]
            if missing:
                problems.append(f"{missing} snippets of complete documents have no vector")
        return problems + self._vector_problems()

    def _engine_problems(self) -> list[str]:
        """Problems only this engine can see, reported before the shared ones."""
        return []

    def _vector_problems(self) -> list[str]:
        """Problems of the engine's vector index, reported after the shared ones."""
        return []
