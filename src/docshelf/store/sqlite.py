"""The embedded store: one SQLite file in WAL mode, FTS5 for the lexical index,
vectors as float32 BLOBs beside the chunks (scanned exactly by the search layer).

Transactions are explicit: the connection runs in autocommit mode and every
write happens inside ``transaction()``, which issues ``BEGIN IMMEDIATE`` (one
writer at a time, readers never blocked under WAL) or a savepoint when nested.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from docshelf.durable import private_dir, private_file
from docshelf.errors import Conflict, InvalidInput, ReadOnlyStorage, StorageFull, Unavailable
from docshelf.links import WikiLink
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
from docshelf.store.base import (
    FileRecord,
    SearchFilters,
    StoreStats,
    VectorSnapshot,
    iter_batches,
)
from docshelf.store.notices import CommitNotices
from docshelf.store.rows import (
    CHUNK_COLUMNS,
    JOB_COLUMNS,
    SOURCE_COLUMNS,
    USER_COLUMNS,
    chunk_from_row,
    chunk_row,
    job_from_row,
    job_row,
    like_prefix,
    source_from_row,
    source_row,
    user_from_row,
)
from docshelf.store.sqlite_schema import MIGRATIONS

_DOC_COLUMNS = (
    "id, sha256, title, path, rel_path, source_id, source_host, file_type, size_bytes, "
    "added_at, updated_at, status, tags, concept_ids, primary_concept_id, concept_source, "
    "taxonomy_version, document_type, category, summary, page_count, pages_without_text, "
    "embedding_model, enriched_at, enrichment_mode"
)
_DOC_UPDATES = ", ".join(
    f"{c.strip()} = excluded.{c.strip()}" for c in _DOC_COLUMNS.split(",")[1:] if c.strip()
)
# bm25() weights for (header, text): a match in the title/heading path counts double.
_BM25_WEIGHTS = (2.0, 1.0)
_MAX_VARS = 500  # stay well below SQLite's bound-parameter limit


def _translate(exc: sqlite3.Error, url: str) -> Exception:
    msg = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL:
        return StorageFull(f"The database {url} is full ({msg}): free some disk space")
    if code == sqlite3.SQLITE_READONLY:
        return ReadOnlyStorage(f"The database {url} is read-only ({msg})")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in msg:
        return Unavailable(f"The database {url} is busy (another writer holds it); try again")
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in msg:
        return InvalidInput(f"{url} is not a docshelf database (SQLite says: {msg})")
    if isinstance(exc, sqlite3.IntegrityError):
        return Conflict(f"Store constraint violated: {msg}")
    return Unavailable(f"SQLite error on {url}: {msg}")


class SQLiteStore:
    """``Store`` on a single SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self._lock = threading.RLock()
        self._depth = 0
        self.notices = CommitNotices()
        try:
            # Private: all text and the token hashes are in it. SQLite gives its -wal
            # and -shm files the database file's permissions.
            private_dir(path.parent)
            private_file(path)
            self._db = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as exc:
            raise _translate(exc, self.url) from exc
        except OSError as exc:
            raise Unavailable(f"Cannot open the database at {path}: {exc.strerror}") from exc

    # -- plumbing ---------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            depth = self._depth
            try:
                self._db.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
            except sqlite3.Error as exc:
                raise _translate(exc, self.url) from exc
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if depth == 0:
                    # SQLite has rolled back by itself after some errors (a full disk)
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    self.notices.discard()
                elif self._db.in_transaction:  # the savepoint went with the transaction
                    self._db.execute(f"ROLLBACK TO sp{depth}")
                    self._db.execute(f"RELEASE sp{depth}")
                raise
            self._depth -= 1
            try:
                self._db.execute("COMMIT" if depth == 0 else f"RELEASE sp{depth}")
            except sqlite3.Error as exc:
                self.notices.discard()
                raise _translate(exc, self.url) from exc
            committed = self.notices.take() if depth == 0 else []
        self.notices.tell(committed)

    def _q(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                cur = self._db.execute(sql, params)
                return cur.fetchall()
            except sqlite3.Error as exc:
                raise _translate(exc, self.url) from exc

    def _x(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write; the number of rows it changed."""
        self._require_tx()
        try:
            return self._db.execute(sql, params).rowcount
        except sqlite3.Error as exc:
            raise _translate(exc, self.url) from exc

    def _xm(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._require_tx()
        try:
            self._db.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise _translate(exc, self.url) from exc

    def _require_tx(self) -> None:
        if self._depth == 0:
            raise RuntimeError("store writes must run inside store.transaction()")

    def _migrate(self) -> None:
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        done = {row[0] for row in self._db.execute("SELECT version FROM schema_migrations")}
        for m in MIGRATIONS:
            if m.version in done:
                continue
            self._db.execute("BEGIN IMMEDIATE")
            try:
                # executescript would COMMIT first; run statement by statement instead.
                for stmt in _split_sql(m.sql):
                    self._db.execute(stmt)
                self._db.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (m.version, m.name, time.time()),
                )
            except BaseException:
                if self._db.in_transaction:  # not rolled back by SQLite itself (a full disk)
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def schema_version(self) -> int:
        return int(self._q("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])

    # -- meta -------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def generation(self) -> int:
        value = self.get_meta("generation")
        return int(value) if value else 0

    def _bump_generation(self) -> None:
        self._x(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )

    # -- sources and files --------------------------------------------------------
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
        rows = self._q(f"SELECT {SOURCE_COLUMNS} FROM sources ORDER BY path")
        return [source_from_row(r) for r in rows]

    def delete_source(self, source_id: str) -> None:
        with self.transaction():
            self._x("DELETE FROM sources WHERE id = ?", (source_id,))

    def set_follow_symlinks(self, source_id: str, follow: bool) -> None:
        with self.transaction():
            self._x("UPDATE sources SET follow_symlinks = ? WHERE id = ?", (follow, source_id))

    def files_of_source(self, source_id: str) -> dict[str, FileRecord]:
        rows = self._q(
            "SELECT path, source_id, document_id, size, mtime_ns FROM files WHERE source_id = ?",
            (source_id,),
        )
        return {r[0]: FileRecord(*r) for r in rows}

    def files_of_document(self, document_id: str) -> list[FileRecord]:
        rows = self._q(
            "SELECT path, source_id, document_id, size, mtime_ns FROM files "
            "WHERE document_id = ? ORDER BY path",
            (document_id,),
        )
        return [FileRecord(*r) for r in rows]

    def put_file(self, record: FileRecord) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO files(path, source_id, document_id, size, mtime_ns) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
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
                "INSERT OR REPLACE INTO failures(path, source_id, reason, seen_at) "
                "VALUES (?, ?, ?, ?)",
                [(f.path, source_id, f.reason, now) for f in failures],
            )

    def list_failures(self, limit: int = 100) -> list[Failure]:
        rows = self._q("SELECT path, reason FROM failures ORDER BY path LIMIT ?", (limit,))
        return [Failure(r[0], r[1]) for r in rows]

    def count_failures(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM failures")[0][0])

    # -- documents ----------------------------------------------------------------
    def get_document(self, document_id: str) -> Document | None:
        rows = self._q(f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (document_id,))
        if not rows:
            return None
        return self._documents(rows)[0]

    def list_documents(
        self,
        *,
        source_id: str | None = None,
        user_id: str | None = None,
        document_ids: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Document]:
        where, params = _filter_sql(
            SearchFilters(source_id=source_id, user_id=user_id, document_ids=tuple(document_ids))
        )
        rows = self._q(
            f"SELECT {_DOC_COLUMNS} FROM documents d WHERE 1 = 1 {where} "
            "ORDER BY rel_path, id LIMIT ? OFFSET ?",
            [*params, -1 if limit is None else limit, offset],
        )
        return self._documents(rows)

    def _documents(self, rows: Sequence[sqlite3.Row]) -> list[Document]:
        ids = [r[0] for r in rows]
        counts: dict[str, dict[str, int]] = {i: {"section": 0, "snippet": 0} for i in ids}
        for batch in iter_batches(ids, _MAX_VARS):
            marks = ",".join("?" * len(batch))
            for doc_id, tier, n in self._q(
                f"SELECT document_id, tier, COUNT(*) FROM chunks WHERE document_id IN ({marks}) "
                "GROUP BY document_id, tier",
                batch,
            ):
                counts[doc_id][tier] = n
        return [_document_from_row(r, counts[r[0]]) for r in rows]

    def put_document(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        snippets = [c for c in chunks if c.tier is Tier.SNIPPET]
        if vectors is not None and len(vectors) != len(snippets):
            raise ValueError(f"{len(vectors)} vectors for {len(snippets)} snippets")
        d = document
        with self.transaction():
            self._delete_chunks(d.id)
            # An upsert, not INSERT OR REPLACE: a replace would delete the row
            # and cascade to the files that point at it.
            self._x(
                f"INSERT INTO documents({_DOC_COLUMNS}) VALUES ({','.join('?' * 25)}) "
                f"ON CONFLICT(id) DO UPDATE SET {_DOC_UPDATES}",
                (
                    d.id,
                    d.sha256,
                    d.title,
                    d.path,
                    d.rel_path,
                    d.source_id,
                    d.source_host,
                    d.file_type,
                    d.size_bytes,
                    d.added_at,
                    d.updated_at,
                    d.status,
                    json.dumps(list(d.tags)),
                    json.dumps(list(d.concept_ids)),
                    d.primary_concept_id,
                    d.concept_source,
                    d.taxonomy_version,
                    d.document_type,
                    d.category,
                    d.summary,
                    d.page_count,
                    d.pages_without_text,
                    d.embedding_model,
                    d.enriched_at,
                    d.enrichment_mode,
                ),
            )
            self._xm(
                f"INSERT INTO chunks({CHUNK_COLUMNS}) VALUES ({','.join('?' * 15)})",
                (chunk_row(c) for c in chunks),  # rows made as they are written
            )
            if vectors is not None and len(snippets):
                self._insert_vectors([c.id for c in snippets], vectors)
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
        # Explicit, so the FTS delete triggers fire row by row before the cascade.
        # Distillates cite chunks: they go with them.
        self._x("DELETE FROM distillates WHERE document_id = ?", (document_id,))
        self._x(
            "DELETE FROM vectors WHERE chunk_seq IN (SELECT seq FROM chunks WHERE document_id = ?)",
            (document_id,),
        )
        self._x("DELETE FROM chunks WHERE document_id = ?", (document_id,))

    # -- chunks -----------------------------------------------------------------------
    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        found: dict[str, Chunk] = {}
        for batch in iter_batches(list(chunk_ids), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            for r in self._q(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", batch):
                found[r[0]] = chunk_from_row(r)
        return [found[i] for i in chunk_ids if i in found]

    def chunks_of_document(self, document_id: str, tier: Tier) -> list[Chunk]:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND tier = ? ORDER BY ord",
            (document_id, tier.value),
        )
        return [chunk_from_row(r) for r in rows]

    def snippets_without_vectors(self, limit: int, document_id: str | None = None) -> list[Chunk]:
        where, params = ("AND document_id = ?", [document_id]) if document_id else ("", [])
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE tier = 'snippet' {where} AND NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq) ORDER BY seq LIMIT ?",
            [*params, limit],
        )
        return [chunk_from_row(r) for r in rows]

    def put_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        with self.transaction():
            self._insert_vectors(chunk_ids, vectors)
            self._bump_generation()

    def _insert_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        blobs = np.ascontiguousarray(vectors, dtype=np.float32)
        self._xm(
            "INSERT OR REPLACE INTO vectors(chunk_seq, embedding) "
            "SELECT seq, ? FROM chunks WHERE id = ?",
            [(blobs[i].tobytes(), cid) for i, cid in enumerate(chunk_ids)],
        )

    def drop_vectors(self) -> None:
        with self.transaction():
            self._x("DELETE FROM vectors")
            self._bump_generation()

    # -- retrieval ---------------------------------------------------------------------
    def lexical_search(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[str, float]]:
        if not terms:
            return []
        # Every term is quoted, so no user input is ever parsed as FTS5 syntax.
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = _filter_sql(filters)
        if filters.empty:
            # Rank inside the FTS index alone and join only the best 2 * limit, not
            # every match (common terms match much of the library). If at least
            # `limit` of them are visible, they are exactly the visible top `limit`.
            best = self._q(
                "SELECT c.id, r.rank FROM (SELECT rowid, "
                f"bm25(chunks_fts, {_BM25_WEIGHTS[0]}, {_BM25_WEIGHTS[1]}) AS rank "
                "FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?) r "
                "JOIN chunks c ON c.seq = r.rowid JOIN documents d ON d.id = c.document_id "
                "WHERE d.status = 'complete' ORDER BY r.rank",
                [match, 2 * limit],
            )
            if len(best) >= limit:
                return [(r[0], -float(r[1])) for r in best[:limit]]
        rows = self._q(
            f"SELECT c.id, bm25(chunks_fts, {_BM25_WEIGHTS[0]}, {_BM25_WEIGHTS[1]}) AS rank "
            "FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid "
            "JOIN documents d ON d.id = c.document_id "
            f"WHERE chunks_fts MATCH ? AND d.status = 'complete' {where} ORDER BY rank LIMIT ?",
            [match, *params, limit],
        )
        # FTS5's bm25() is negative (lower is better); flip it so higher is better.
        return [(r[0], -float(r[1])) for r in rows]

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        out: dict[str, npt.NDArray[np.float32]] = {}
        for batch in iter_batches(list(chunk_ids), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            for cid, blob in self._q(
                "SELECT c.id, v.embedding FROM vectors v JOIN chunks c ON c.seq = v.chunk_seq "
                f"WHERE c.id IN ({marks})",
                list(batch),
            ):
                out[cid] = np.frombuffer(blob, dtype=np.float32)
        return out

    def vector_snapshot(self) -> VectorSnapshot:
        with self._lock:
            generation = self.generation()
            rows = self._q(
                "SELECT c.id, c.document_id, v.embedding FROM vectors v "
                "JOIN chunks c ON c.seq = v.chunk_seq JOIN documents d ON d.id = c.document_id "
                "WHERE d.status = 'complete' ORDER BY v.chunk_seq"
            )
        dim = int(self.get_meta("embedding_dim") or 0)
        if rows:
            matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, dim), dtype=np.float32)
        return VectorSnapshot(
            generation=generation,
            chunk_ids=[r[0] for r in rows],
            document_ids=[r[1] for r in rows],
            matrix=matrix,
        )

    def documents_matching(self, filters: SearchFilters) -> set[str]:
        where, params = _filter_sql(filters)
        rows = self._q(f"SELECT d.id FROM documents d WHERE 1 = 1 {where}", params)
        return {r[0] for r in rows}

    # -- the sidecar ANN index's feed (search/ann.py); vectors are keyed by chunk seq ----
    def vector_count(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM vectors")[0][0])

    def vector_log_position(self) -> int:
        """The last vector_log entry ever written (0 when none)."""
        rows = self._q("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'")
        return int(rows[0][0]) if rows else 0

    def vector_changes(self, after: int) -> tuple[int, list[int]]:
        """(log position, chunk seqs whose vector changed after ``after``). Raises
        ``LookupError`` when entries after ``after`` were pruned (read a newer checkpoint)."""
        rows = self._q("SELECT seq, chunk_seq FROM vector_log WHERE seq > ? ORDER BY seq", (after,))
        # Read the prune mark after the rows: a prune that raced the read shows here.
        if int(self.get_meta("vector_log_pruned") or 0) > after:
            raise LookupError(f"vector_log was pruned past {after}")
        position = int(rows[-1][0]) if rows else after
        return position, list(dict.fromkeys(int(r[1]) for r in rows))

    def prune_vector_log(self, through: int) -> None:
        with self.transaction():
            self._x("DELETE FROM vector_log WHERE seq <= ?", (through,))
            self._x(
                "INSERT INTO meta(key, value) VALUES ('vector_log_pruned', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = "
                "MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                (str(through),),
            )

    def vectors_by_seq(
        self, seqs: Sequence[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The vectors of those chunk seqs that still have one (in seq order)."""
        rows: list[sqlite3.Row] = []
        for batch in iter_batches(list(seqs), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            rows += self._q(
                f"SELECT chunk_seq, embedding FROM vectors WHERE chunk_seq IN ({marks})", batch
            )
        rows.sort(key=lambda r: int(r[0]))
        return self._seq_matrix(rows)

    def iter_vectors(
        self, batch: int = 20_000
    ) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        """Every vector, ``batch`` rows at a time in seq order (never all in memory)."""
        last = -1
        while True:
            rows = self._q(
                "SELECT chunk_seq, embedding FROM vectors WHERE chunk_seq > ? "
                "ORDER BY chunk_seq LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield self._seq_matrix(rows)

    def _seq_matrix(
        self, rows: Sequence[sqlite3.Row]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        dim = int(self.get_meta("embedding_dim") or 0)
        seqs = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return seqs, np.zeros((0, dim), dtype=np.float32)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return seqs, matrix.reshape(len(rows), -1)

    def visible_snippets(self, seqs: Sequence[int], filters: SearchFilters) -> dict[int, str]:
        """chunk seq -> chunk id, for those seqs that search may show: a snippet with a
        vector, of a complete document matching the filters."""
        where, params = _filter_sql(filters)
        found: dict[int, str] = {}
        for batch in iter_batches(list(seqs), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            for r in self._q(
                "SELECT c.seq, c.id FROM chunks c JOIN vectors v ON v.chunk_seq = c.seq "
                "JOIN documents d ON d.id = c.document_id "
                f"WHERE c.seq IN ({marks}) AND d.status = 'complete' {where}",
                [*batch, *params],
            ):
                found[int(r[0])] = r[1]
        return found

    def vectors_matching(
        self, filters: SearchFilters
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The vectors search may show under these filters (for very selective ones)."""
        where, params = _filter_sql(filters)
        rows = self._q(
            "SELECT v.chunk_seq, v.embedding FROM vectors v JOIN chunks c ON c.seq = v.chunk_seq "
            f"JOIN documents d ON d.id = c.document_id WHERE d.status = 'complete' {where} "
            "ORDER BY v.chunk_seq",
            params,
        )
        return self._seq_matrix(rows)

    # -- the sidecar lexical index's feed (search/lexical.py); snippets keyed by seq -------
    def snippet_count(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM chunks WHERE tier = 'snippet'")[0][0])

    def lexical_log_position(self) -> int:
        """The last lexical_log entry ever written (0 when none)."""
        rows = self._q("SELECT seq FROM sqlite_sequence WHERE name = 'lexical_log'")
        return int(rows[0][0]) if rows else 0

    def lexical_changes(self, after: int) -> tuple[int, list[int]]:
        """(log position, snippet seqs added or removed after ``after``). Raises
        ``LookupError`` when entries after ``after`` were pruned (rebuild instead)."""
        rows = self._q(
            "SELECT seq, chunk_seq FROM lexical_log WHERE seq > ? ORDER BY seq", (after,)
        )
        if int(self.get_meta("lexical_log_pruned") or 0) > after:
            raise LookupError(f"lexical_log was pruned past {after}")
        position = int(rows[-1][0]) if rows else after
        return position, list(dict.fromkeys(int(r[1]) for r in rows))

    def prune_lexical_log(self, through: int) -> None:
        with self.transaction():
            self._x("DELETE FROM lexical_log WHERE seq <= ?", (through,))
            self._x(
                "INSERT INTO meta(key, value) VALUES ('lexical_log_pruned', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = "
                "MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                (str(through),),
            )

    def snippets_by_seq(self, seqs: Sequence[int]) -> list[tuple[int, str, str]]:
        """(seq, header, text) of those snippet seqs that still exist, in seq order."""
        rows: list[tuple[int, str, str]] = []
        for batch in iter_batches(list(seqs), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            rows += [
                (int(r[0]), r[1], r[2])
                for r in self._q(
                    f"SELECT seq, header, text FROM chunks WHERE seq IN ({marks}) "
                    "AND tier = 'snippet'",
                    batch,
                )
            ]
        rows.sort()
        return rows

    def iter_snippets(self, batch: int = 20_000) -> Iterator[list[tuple[int, str, str]]]:
        """Every snippet's (seq, header, text), ``batch`` rows at a time in seq order."""
        last = -1
        while True:
            rows = self._q(
                "SELECT seq, header, text FROM chunks WHERE seq > ? AND tier = 'snippet' "
                "ORDER BY seq LIMIT ?",
                (last, batch),
            )
            if not rows:
                return
            last = int(rows[-1][0])
            yield [(int(r[0]), r[1], r[2]) for r in rows]

    def lexical_visible(self, seqs: Sequence[int], filters: SearchFilters) -> dict[int, str]:
        """chunk seq -> chunk id, for those seqs lexical search may show: a snippet of a
        complete document matching the filters."""
        where, params = _filter_sql(filters)
        found: dict[int, str] = {}
        for batch in iter_batches(list(seqs), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            for r in self._q(
                "SELECT c.seq, c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
                f"WHERE c.seq IN ({marks}) AND c.tier = 'snippet' AND d.status = 'complete' "
                f"{where}",
                [*batch, *params],
            ):
                found[int(r[0])] = r[1]
        return found

    # -- embedding cache -----------------------------------------------------------------
    def cached_embeddings(
        self, model: str, text_hashes: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        out: dict[str, npt.NDArray[np.float32]] = {}
        for batch in iter_batches(list(text_hashes), _MAX_VARS):
            marks = ",".join("?" * len(batch))
            for h, blob in self._q(
                "SELECT text_hash, embedding FROM embedding_cache "
                f"WHERE model = ? AND text_hash IN ({marks})",
                [model, *batch],
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def cache_embeddings(
        self, model: str, items: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None:
        with self.transaction():
            self._xm(
                "INSERT OR IGNORE INTO embedding_cache(model, text_hash, embedding) "
                "VALUES (?, ?, ?)",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    # -- enrichment ----------------------------------------------------------------------
    def put_enrichment(self, document_id: str, enrichment: Enrichment, at: float) -> bool:
        e = enrichment
        with self.transaction():
            changed = self._x(
                "UPDATE documents SET summary = ?, document_type = ?, category = ?, "
                "concept_ids = ?, primary_concept_id = ?, concept_source = ?, "
                "taxonomy_version = ?, enriched_at = ?, enrichment_mode = ?, "
                "enrich_lease_until = NULL WHERE id = ?",
                (
                    e.summary,
                    e.document_type,
                    e.category,
                    json.dumps(list(e.concept_ids)),
                    e.concept_ids[0] if e.concept_ids else None,
                    e.concept_source,
                    e.taxonomy_version,
                    at,
                    e.mode,
                    document_id,
                ),
            )
            if not changed:
                return False
            self._x("DELETE FROM distillates WHERE document_id = ?", (document_id,))
            self._xm(
                "INSERT INTO distillates(document_id, ord, text, chunk_ids, mode) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (d.document_id, d.n, d.text, json.dumps(list(d.chunk_ids)), d.mode)
                    for d in e.distillates(document_id)
                ],
            )
        return True

    def enrichment_failed(self, document_id: str, at: float) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET enriched_at = ?, enrichment_mode = 'failed', "
                "enrich_lease_until = NULL WHERE id = ?",
                (at, document_id),
            )

    def reset_enrichment(self, document_ids: Sequence[str] | None = None) -> int:
        with self.transaction():
            if document_ids is None:
                return self._x(
                    "UPDATE documents SET enriched_at = NULL, enrich_lease_until = NULL "
                    "WHERE enriched_at IS NOT NULL"
                )
            n = 0
            for batch in iter_batches(list(document_ids), _MAX_VARS):
                n += self._x(
                    "UPDATE documents SET enriched_at = NULL, enrich_lease_until = NULL "
                    f"WHERE id IN ({','.join('?' * len(batch))})",
                    batch,
                )
            return n

    def claim_enrichment(self, now: float, lease_seconds: float) -> str | None:
        with self.transaction():
            rows = self._q(
                "UPDATE documents SET enrich_lease_until = ? WHERE id = ("
                "SELECT id FROM documents WHERE enriched_at IS NULL AND status = 'complete' "
                "AND (enrich_lease_until IS NULL OR enrich_lease_until < ?) "
                "ORDER BY added_at, id LIMIT 1) RETURNING id",
                (now + lease_seconds, now),
            )
        return str(rows[0][0]) if rows else None

    def distillates_of(self, document_id: str) -> list[Distillate]:
        rows = self._q(
            "SELECT document_id, ord, text, chunk_ids, mode FROM distillates "
            "WHERE document_id = ? ORDER BY ord",
            (document_id,),
        )
        return [_distillate(r) for r in rows]

    def search_distillates(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[Distillate, float]]:
        if not terms or limit <= 0:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = _filter_sql(filters)
        rows = self._q(
            "SELECT x.document_id, x.ord, x.text, x.chunk_ids, x.mode, "
            "bm25(distillates_fts) AS rank FROM distillates_fts "
            "JOIN distillates x ON x.seq = distillates_fts.rowid "
            "JOIN documents d ON d.id = x.document_id "
            f"WHERE distillates_fts MATCH ? AND d.status = 'complete' {where} "
            "ORDER BY rank, x.seq LIMIT ?",
            [match, *params, limit],
        )
        return [(_distillate(r), -float(r[5])) for r in rows]

    def cached_enrichment(self, sha256: str, locale: str, producer: str) -> str | None:
        rows = self._q(
            "SELECT data FROM enrichment_cache WHERE sha256 = ? AND locale = ? AND producer = ?",
            (sha256, locale, producer),
        )
        return str(rows[0][0]) if rows else None

    def cache_enrichment(self, sha256: str, locale: str, producer: str, data: str) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO enrichment_cache(sha256, locale, producer, data, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(sha256, locale, producer) "
                "DO UPDATE SET data = excluded.data, created_at = excluded.created_at",
                (sha256, locale, producer, data, time.time()),
            )

    # -- reindex staging ---------------------------------------------------------------
    def stage_reindex(
        self, document_id: str, target: str, data: str, vectors: bytes | None
    ) -> None:
        with self.transaction():
            self._x("DELETE FROM reindex_staging WHERE document_id = ?", (document_id,))
            self._x(
                "INSERT INTO reindex_staging(document_id, target, data, vectors) "
                "VALUES (?, ?, ?, ?)",
                (document_id, target, data, vectors),
            )

    def staged_reindex(self, target: str) -> set[str]:
        rows = self._q("SELECT document_id FROM reindex_staging WHERE target = ?", (target,))
        return {str(r[0]) for r in rows}

    def take_staged(self, document_id: str) -> tuple[str, bytes | None] | None:
        rows = self._q(
            "SELECT data, vectors FROM reindex_staging WHERE document_id = ?", (document_id,)
        )
        if not rows:
            return None
        with self.transaction():
            self._x("DELETE FROM reindex_staging WHERE document_id = ?", (document_id,))
        return str(rows[0][0]), (bytes(rows[0][1]) if rows[0][1] is not None else None)

    def clear_reindex(self, keep_target: str | None = None) -> int:
        with self.transaction():
            if keep_target is None:
                return self._x("DELETE FROM reindex_staging")
            return self._x("DELETE FROM reindex_staging WHERE target <> ?", (keep_target,))

    # -- links between notes -----------------------------------------------------------------
    def put_links(self, document_id: str, links: Sequence[WikiLink]) -> None:
        with self.transaction():
            self._x("DELETE FROM links WHERE document_id = ?", (document_id,))
            self._xm(
                "INSERT INTO links(document_id, ord, target, heading, alias, embed) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (document_id, n, k.target, k.heading, k.alias, int(k.embed))
                    for n, k in enumerate(links)
                ],
            )

    def put_names(self, document_id: str, names: Sequence[str], kind: str) -> None:
        """Replace the document's names of one kind (``path`` or ``title``)."""
        with self.transaction():
            self._x(
                "DELETE FROM note_names WHERE document_id = ? AND kind = ?", (document_id, kind)
            )
            self._xm(
                "INSERT OR IGNORE INTO note_names(document_id, name, kind) VALUES (?, ?, ?)",
                [(document_id, name, kind) for name in names],
            )

    def links_of(self, document_id: str) -> list[tuple[WikiLink, list[str]]]:
        """Each link of the document with the ids of the documents its name resolves to."""
        rows = self._q(
            "SELECT l.target, l.heading, l.alias, l.embed, "
            "(SELECT group_concat(DISTINCT n.document_id) FROM note_names n "
            "WHERE n.name = l.target) FROM links l WHERE l.document_id = ? ORDER BY l.ord",
            (document_id,),
        )
        return [
            (WikiLink(r[0], r[1], r[2], bool(r[3])), sorted(r[4].split(",")) if r[4] else [])
            for r in rows
        ]

    def backlinks(self, document_id: str) -> list[str]:
        """Ids of the documents that link to any name of this one."""
        rows = self._q(
            "SELECT DISTINCT l.document_id FROM links l JOIN note_names n ON n.name = l.target "
            "WHERE n.document_id = ? AND l.document_id != ? ORDER BY l.document_id",
            (document_id, document_id),
        )
        return [r[0] for r in rows]

    # -- users and access --------------------------------------------------------------------
    def put_user(self, user: User, token_hash: str | None) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO users(id, name, token_hash, is_admin, created_at, revoked_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "token_hash = excluded.token_hash, revoked_at = excluded.revoked_at",
                (
                    user.id,
                    user.name,
                    token_hash,
                    int(user.is_admin),
                    user.created_at,
                    user.revoked_at,
                ),
            )

    def get_user(self, user_id_or_name: str) -> User | None:
        rows = self._q(
            f"SELECT {USER_COLUMNS} FROM users WHERE id = ? OR name = ?",
            (user_id_or_name, user_id_or_name),
        )
        return user_from_row(rows[0]) if rows else None

    def user_for_token(self, token_hash: str) -> User | None:
        rows = self._q(
            f"SELECT {USER_COLUMNS} FROM users WHERE token_hash = ? AND revoked_at IS NULL",
            (token_hash,),
        )
        return user_from_row(rows[0]) if rows else None

    def has_token(self, user_id: str) -> bool:
        return bool(
            self._q("SELECT 1 FROM users WHERE id = ? AND token_hash IS NOT NULL", (user_id,))
        )

    def list_users(self) -> list[User]:
        return [
            user_from_row(r) for r in self._q(f"SELECT {USER_COLUMNS} FROM users ORDER BY name")
        ]

    def grant(self, user_id: str, document_id: str, title: str | None = None) -> bool:
        """Give a user access to a document; False if they had it already."""
        with self.transaction():
            before = self._db.total_changes
            self._x(
                "INSERT OR IGNORE INTO access(user_id, document_id, title, added_at) "
                "VALUES (?, ?, ?, ?)",
                (user_id, document_id, title, time.time()),
            )
            return self._db.total_changes > before

    def access_titles(self, user_id: str, document_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for batch in iter_batches(list(dict.fromkeys(document_ids)), _MAX_VARS):
            rows = self._q(
                f"SELECT document_id, title FROM access WHERE user_id = ? AND title IS NOT NULL "
                f"AND document_id IN ({','.join('?' * len(batch))})",
                [user_id, *batch],
            )
            out.update((r[0], r[1]) for r in rows)
        return out

    def revoke_access(self, user_id: str, document_id: str) -> bool:
        with self.transaction():
            before = self._db.total_changes
            self._x(
                "DELETE FROM access WHERE user_id = ? AND document_id = ?", (user_id, document_id)
            )
            return self._db.total_changes > before

    def has_access(self, user_id: str, document_id: str) -> bool:
        return bool(
            self._q(
                "SELECT 1 FROM access WHERE user_id = ? AND document_id = ?",
                (user_id, document_id),
            )
        )

    def access_count(self, document_id: str) -> int:
        return int(
            self._q("SELECT COUNT(*) FROM access WHERE document_id = ?", (document_id,))[0][0]
        )

    # -- jobs ------------------------------------------------------------------------------------
    def put_job(self, job: Job) -> None:
        with self.transaction():
            self._x(
                f"INSERT OR REPLACE INTO jobs({JOB_COLUMNS}) VALUES ({','.join('?' * 13)})",
                job_row(job),
            )

    def get_job(self, document_id: str) -> Job | None:
        rows = self._q(f"SELECT {JOB_COLUMNS} FROM jobs WHERE document_id = ?", (document_id,))
        return job_from_row(rows[0]) if rows else None

    def claim_job(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """Atomically take one due job: queued and due, or running with an expired lease."""
        with self.transaction():
            rows = self._q(
                f"SELECT {JOB_COLUMNS} FROM jobs WHERE "
                "(status = 'queued' AND next_attempt_at <= ?) OR "
                "(status = 'running' AND lease_expires_at < ?) "
                "ORDER BY next_attempt_at LIMIT 1",
                (now, now),
            )
            if not rows:
                return None
            job = job_from_row(rows[0])
            self._x(
                "UPDATE jobs SET status = 'running', lease_owner = ?, lease_expires_at = ?, "
                "updated_at = ? WHERE document_id = ?",
                (owner, now + lease_seconds, now, job.document_id),
            )
        return self.get_job(job.document_id)

    def renew_lease(self, document_id: str, owner: str, until: float) -> bool:
        with self.transaction():
            before = self._db.total_changes
            self._x(
                "UPDATE jobs SET lease_expires_at = ? WHERE document_id = ? AND lease_owner = ? "
                "AND status = 'running'",
                (until, document_id, owner),
            )
            return self._db.total_changes > before

    def update_job(self, document_id: str, **fields: Any) -> None:
        if not fields:
            return
        fields["updated_at"] = time.time()
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.transaction():
            self._x(
                f"UPDATE jobs SET {sets} WHERE document_id = ?", [*fields.values(), document_id]
            )

    def job_counts(self) -> dict[str, int]:
        rows = self._q("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        return {str(r[0]): int(r[1]) for r in rows}

    def oldest_unfinished_jobs(self) -> dict[str, float]:
        rows = self._q(
            "SELECT stage, MIN(updated_at) FROM jobs WHERE status IN ('queued', 'running') "
            "GROUP BY stage"
        )
        return {str(r[0]): float(r[1]) for r in rows}

    def put_payload(self, document_id: str, stage: str, payload: bytes) -> None:
        with self.transaction():
            self._x(
                "INSERT OR REPLACE INTO job_payloads(document_id, stage, payload) VALUES (?, ?, ?)",
                (document_id, stage, payload),
            )

    def get_payload(self, document_id: str, stage: str) -> bytes | None:
        rows = self._q(
            "SELECT payload FROM job_payloads WHERE document_id = ? AND stage = ?",
            (document_id, stage),
        )
        return bytes(rows[0][0]) if rows else None

    def delete_payload(self, document_id: str) -> None:
        with self.transaction():
            self._x("DELETE FROM job_payloads WHERE document_id = ?", (document_id,))

    def set_document_status(self, document_id: str, status: str) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET status = ?, updated_at = ? WHERE id = ?",
                (status, time.time(), document_id),
            )
            self._bump_generation()

    # -- events ----------------------------------------------------------------------------------
    def add_event(
        self,
        document_id: str,
        kind: str,
        *,
        stage: str | None = None,
        progress_pct: int | None = None,
        message: str = "",
        user_id: str | None = None,
    ) -> int:
        with self.transaction():
            cur = self._db.execute(
                "INSERT INTO events(document_id, user_id, kind, stage, progress_pct, message, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (document_id, user_id, kind, stage, progress_pct, message, time.time()),
            )
            self.notices.note(document_id)
            return int(cur.lastrowid or 0)

    def events_after(
        self,
        after: int,
        *,
        document_id: str | None = None,
        kinds: str | None = None,
        user_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        """Events with ``seq > after``, oldest first. ``kinds`` is a LIKE pattern; with
        ``user_id``, only events of documents the user can see or addressed to them."""
        where = ["seq > ?"]
        params: list[Any] = [after]
        if document_id is not None:
            where.append("document_id = ?")
            params.append(document_id)
        if kinds is not None:
            where.append("kind LIKE ?")
            params.append(kinds)
        if user_id is not None:
            where.append(  # a shared event only from when the user's access began
                "(user_id = ? OR (user_id IS NULL AND EXISTS (SELECT 1 FROM access a "
                "WHERE a.document_id = events.document_id AND a.user_id = ? "
                "AND a.added_at <= events.created_at)))"
            )
            params += [user_id, user_id]
        rows = self._q(
            f"SELECT seq, document_id, kind, stage, progress_pct, message, created_at, user_id "
            f"FROM events WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?",
            [*params, limit],
        )
        return [Event(*r) for r in rows]

    # -- upkeep ------------------------------------------------------------------------------
    def tag_counts(self) -> dict[str, int]:
        """How many documents carry each free-form tag."""
        rows = self._q(
            "SELECT value, COUNT(*) FROM documents d, json_each(d.tags) GROUP BY value "
            "ORDER BY COUNT(*) DESC, value"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def stats(self) -> StoreStats:
        one = self._q(
            "SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM sources), "
            "(SELECT COUNT(*) FROM files), "
            "(SELECT COUNT(*) FROM chunks WHERE tier = 'section'), "
            "(SELECT COUNT(*) FROM chunks WHERE tier = 'snippet'), "
            "(SELECT COUNT(*) FROM vectors), "
            "(SELECT COALESCE(SUM(pages_without_text), 0) FROM documents)"
        )[0]
        by_status = {
            str(r[0]): int(r[1])
            for r in self._q("SELECT status, COUNT(*) FROM documents GROUP BY status")
        }
        by_type = {
            str(r[0]): int(r[1])
            for r in self._q("SELECT file_type, COUNT(*) FROM documents GROUP BY file_type")
        }
        by_enrichment = {
            str(r[0]): int(r[1])
            for r in self._q(
                "SELECT CASE WHEN enriched_at IS NULL THEN 'pending' ELSE enrichment_mode END, "
                "COUNT(*) FROM documents WHERE status = 'complete' GROUP BY 1"
            )
        }
        return StoreStats(
            documents=one[0],
            sources=one[1],
            files=one[2],
            sections=one[3],
            snippets=one[4],
            snippets_with_vectors=one[5],
            pages_without_text=one[6],
            by_status=by_status,
            by_file_type=by_type,
            by_enrichment=by_enrichment,
        )

    def check(self) -> list[str]:
        problems: list[str] = []
        result = self._q("PRAGMA integrity_check")
        if [r[0] for r in result] != ["ok"]:
            problems.extend(f"sqlite: {r[0]}" for r in result)
        with self._lock:
            try:
                self._db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"lexical index out of step with chunks: {exc}")
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
        return problems


def _split_sql(script: str) -> list[str]:
    """Split a migration script into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements


def _filter_sql(f: SearchFilters) -> tuple[str, list[Any]]:
    """SQL conditions on the ``documents d`` alias for the given filters."""
    parts: list[str] = []
    params: list[Any] = []
    if f.user_id:
        parts.append("EXISTS (SELECT 1 FROM access a WHERE a.document_id = d.id AND a.user_id = ?)")
        params.append(f.user_id)
    if f.source_id:
        parts.append("d.source_id = ?")
        params.append(f.source_id)
    if f.path_prefix:
        column = "d.path" if f.path_prefix.startswith("/") else "d.rel_path"
        parts.append(f"{column} LIKE ? ESCAPE '\\'")
        params.append(like_prefix(f.path_prefix))
    if f.file_type:
        parts.append("d.file_type = ?")
        params.append(f.file_type)
    for tag in f.tags:
        parts.append("EXISTS (SELECT 1 FROM json_each(d.tags) WHERE lower(value) = lower(?))")
        params.append(tag)
    for group in f.concept_groups:
        parts.append(
            "EXISTS (SELECT 1 FROM json_each(d.concept_ids) "
            f"WHERE value IN ({','.join('?' * len(group)) or 'NULL'}))"
        )
        params.extend(group)
    if f.document_ids:
        parts.append(f"d.id IN ({','.join('?' * len(f.document_ids))})")
        params.extend(f.document_ids)
    return "".join(f" AND {p}" for p in parts), params


def _distillate(r: Sequence[Any]) -> Distillate:
    return Distillate(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4])


def _document_from_row(r: Sequence[Any], counts: dict[str, int]) -> Document:
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
        tags=tuple(json.loads(r[12])),
        concept_ids=tuple(json.loads(r[13])),
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
        chunk_counts=counts,
    )
