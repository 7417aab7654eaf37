"""The shared store: PostgreSQL through psycopg 3 and a connection pool, pgvector
for the snippet vectors (HNSW, cosine), full-text search for the lexical index.

Transactions are explicit. ``transaction()`` checks a connection out of the
pool and pins it to the calling thread until the outermost block ends: every
read and write that thread makes meanwhile runs on it, and inner blocks become
savepoints. Outside a transaction a read borrows a connection for one
autocommit statement, and each write method opens its own transaction.

One writer at a time, as in the SQLite store: the outermost ``transaction()``
first takes a transaction-scoped advisory lock (the writer lock, one per
schema; waits give up after 30 s with ``Unavailable``, like SQLite's busy
timeout) and holds it to commit. Readers are never blocked. This is what the
layers above rely on: a transaction that reads and then writes (the worker's
lease fencing, the dedup of concurrent uploads) sees no concurrent change in
between. It also makes event ``seq`` order commit order, so an SSE client that
resumes after a seq never skips a late commit, and the generation counter
moves in commit order. Row locks still matter where other programs touch the
tables: ``claim_job`` skips rows locked by anyone (``FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from docshelf.errors import (
    Conflict,
    DocshelfError,
    InvalidInput,
    ReadOnlyStorage,
    StorageFull,
    Unavailable,
)
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
from docshelf.store.base import FileRecord, SearchFilters, StoreStats, VectorSnapshot
from docshelf.store.notices import CommitNotices
from docshelf.store.postgres_schema import MIGRATIONS
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

_DOC_FIELDS = (
    "id, sha256, title, path, rel_path, source_id, source_host, file_type, size_bytes, "
    "added_at, updated_at, status, tags, concept_ids, primary_concept_id, concept_source, "
    "taxonomy_version, document_type, category, summary, page_count, pages_without_text, "
    "embedding_model, enriched_at, enrichment_mode"
)
_DOC_NAMES = [c.strip() for c in _DOC_FIELDS.split(",")]
_DOC_UPDATES = ", ".join(f"{c} = excluded.{c}" for c in _DOC_NAMES[1:])
_DOC_SELECT = (
    ", ".join(f"d.{c}" for c in _DOC_NAMES)
    + ", (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.tier = 'section')"
    + ", (SELECT count(*) FROM chunks c WHERE c.document_id = d.id AND c.tier = 'snippet')"
)
# ts_rank_cd weights for {D, C, B, A}: a match in the header (A) counts twice one in
# the text (B), as the SQLite store's bm25 weights do. Normalisation 1 divides by
# 1 + log(length), so long snippets do not win by size alone.
_RANK = "ts_rank_cd('{0.1, 0.2, 0.5, 1.0}'::real[], c.fts, q.query, 1)"
_HNSW_MAX_DIM = 2000  # pgvector's HNSW limit for the vector type
_CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise
_WRITER_WAIT_SECONDS = 30  # how long a transaction waits for the writer lock (SQLite: 30 s)


def redact(url: str) -> str:
    """The URL (or ``key=value`` conninfo) without its password, fit for messages."""
    if "://" not in url:
        params = conninfo_to_dict(url)
        if "password" in params:
            params["password"] = "***"
        return make_conninfo("", **params)
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = "&".join(
        "password=***" if q.lower().startswith("password=") else q
        for q in parts.query.split("&")
        if q
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _lock_key(purpose: str, schema: str) -> int:
    """A signed 64-bit advisory-lock key per purpose and schema."""
    digest = hashlib.blake2b(f"docshelf:{purpose}:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresStore:
    """``Store`` on a PostgreSQL database (with the pgvector extension)."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.url = redact(url)
        self._conninfo = url
        self._password = str(conninfo_to_dict(url).get("password") or "")
        self._local = threading.local()
        self._writer = threading.Lock()
        self.notices = CommitNotices()
        extra: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in conninfo_to_dict(url):
            extra["connect_timeout"] = _CONNECT_TIMEOUT
        try:
            with psycopg.connect(url, **extra) as conn:
                row = conn.execute("SELECT current_schema()").fetchone()
                if row is None or row[0] is None:
                    raise Unavailable(
                        f"No schema to create docshelf's tables in at {self.url}: create the "
                        "schema named in search_path, or fix the URL's options"
                    )
                self.schema = str(row[0])
                self._writer_key = _lock_key("writer", self.schema)
                self._migrate(conn)
                self._iterative_scan = _has_iterative_scan(conn)
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        self._pool: ConnectionPool[psycopg.Connection[TupleRow]] = ConnectionPool(
            url, min_size=1, max_size=pool_size, kwargs=extra, open=False, name="docshelf"
        )
        try:
            self._pool.open(wait=True, timeout=float(extra.get("connect_timeout", 30)))
        except PoolTimeout as exc:
            self._pool.close()
            raise self._translate(exc) from exc

    # -- plumbing --------------------------------------------------------------------------
    def close(self) -> None:
        self._pool.close()

    def _translate(self, exc: Exception) -> DocshelfError:
        """A psycopg or pool error as one of docshelf's, never showing the password."""
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if self._password:
            msg = msg.replace(self._password, "***")
        state = getattr(exc, "sqlstate", None) or ""
        if isinstance(exc, PoolTimeout):
            return Unavailable(
                f"No PostgreSQL connection could be had at {self.url} in time ({msg}); "
                "check that the server runs and accepts connections"
            )
        if isinstance(exc, pg_errors.IntegrityError):
            constraint = exc.diag.constraint_name or ""
            if constraint.startswith("vectors_dim_"):
                return Conflict(
                    f"Vectors must be {constraint.removeprefix('vectors_dim_')}-dimensional, "
                    "the library's embedding size; run `docshelf reindex` after changing models"
                )
            return Conflict(f"Store constraint violated: {msg}")
        if state.startswith("40") or state == "55P03":  # deadlock, serialization, lock timeout
            return Unavailable(f"The database {self.url} is busy ({msg}); try again")
        if state == "57014":  # statement_timeout
            return Unavailable(f"A query on {self.url} took too long ({msg}); try again")
        if (state in ("58P01", "0A000") and "vector" in msg) or 'type "vector"' in msg:
            return Unavailable(
                f"pgvector is not available in the database {self.url} ({msg}): install it "
                "(Debian: postgresql-<major>-pgvector, or scripts/setup-pgvector.sh) and run "
                "CREATE EXTENSION vector there as a superuser"
            )
        if state == "53100":  # disk_full
            return StorageFull(f"The database {self.url} is out of space ({msg})")
        if state == "25006":  # read_only_sql_transaction (a hot standby, or read-only mode)
            return ReadOnlyStorage(f"The database {self.url} is read-only ({msg})")
        if state == "42501":
            return Unavailable(f"Permission denied on {self.url}: {msg}")
        if state == "3D000":
            return Unavailable(
                f"The database named in {self.url} does not exist; create it or fix "
                "DOCSHELF_DATABASE_URL"
            )
        if state.startswith("28"):
            return Unavailable(f"PostgreSQL refused the credentials for {self.url}: {msg}")
        if isinstance(exc, pg_errors.DataError):
            return InvalidInput(f"Invalid value for the store: {msg}")
        if isinstance(exc, psycopg.OperationalError) and (
            not state or state.startswith(("08", "57P"))
        ):
            return Unavailable(
                f"Cannot reach PostgreSQL at {self.url} ({msg}); check DOCSHELF_DATABASE_URL "
                "and that the server runs"
            )
        return Unavailable(f"PostgreSQL error on {self.url}: {msg}")

    def _pinned(self) -> psycopg.Connection[TupleRow] | None:
        conn: psycopg.Connection[TupleRow] | None = getattr(self._local, "conn", None)
        return conn

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[TupleRow]]:
        """The thread's transaction connection, or a pooled one for this call."""
        pinned = self._pinned()
        if pinned is not None:
            yield pinned
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise self._translate(exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Pin a pooled connection to this thread; nested blocks become savepoints."""
        pinned = self._pinned()
        if pinned is not None:
            try:
                with pinned.transaction():
                    yield
            except psycopg.Error as exc:
                raise self._translate(exc) from exc
            return
        # Threads of this process queue here, not on a pooled connection each.
        if not self._writer.acquire(timeout=_WRITER_WAIT_SECONDS):
            raise Unavailable(
                f"The database {self.url} is busy (another writer holds it); try again"
            )
        try:
            conn = self._pool.getconn()
        except PoolTimeout as exc:
            self._writer.release()
            raise self._translate(exc) from exc
        self._local.conn = conn
        committed: list[str] = []
        try:
            with conn.transaction():
                conn.execute(
                    "SELECT set_config('lock_timeout', %s, true), pg_advisory_xact_lock(%s)",
                    (f"{_WRITER_WAIT_SECONDS}s", self._writer_key),
                )
                yield
            committed = self.notices.take()
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        finally:
            self.notices.discard()  # a rollback's events never happened
            self._local.conn = None
            self._pool.putconn(conn)
            self._writer.release()
        self.notices.tell(committed)

    @contextmanager
    def _snapshot(self, *, settings: Sequence[tuple[str, str]] = ()) -> Iterator[Any]:
        """A connection whose statements share one snapshot (a read-only repeatable-read
        transaction, or the caller's own transaction), with ``settings`` set locally."""
        pinned = self._pinned()
        try:
            if pinned is not None:
                with pinned.transaction():
                    for name, value in settings:
                        pinned.execute("SELECT set_config(%s, %s, true)", (name, value))
                    yield pinned
                return
            with self._conn() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                for name, value in settings:
                    conn.execute("SELECT set_config(%s, %s, true)", (name, value))
                yield conn
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _q(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> list[TupleRow]:
        try:
            with self._conn() as conn, conn.cursor() as cur:
                cur.execute(query, params)
                return cur.fetchall() if cur.description else []
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _x(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> int:
        """Run a write on the transaction's connection; the number of rows it touched."""
        conn = self._require_tx()
        try:
            with conn.cursor() as cur:
                cur.execute(query, params)
                return cur.rowcount
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _xm(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        conn = self._require_tx()
        if not rows:
            return
        try:
            with conn.cursor() as cur:
                cur.executemany(query, rows)
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _require_tx(self) -> psycopg.Connection[TupleRow]:
        conn = self._pinned()
        if conn is None:
            raise RuntimeError("store writes must run inside store.transaction()")
        return conn

    def _migrate(self, conn: psycopg.Connection[TupleRow]) -> None:
        key = _lock_key("migrate", self.schema)
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                "name text NOT NULL, applied_at double precision NOT NULL)"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for m in MIGRATIONS:
                if m.version in done:
                    continue
                with conn.transaction():
                    conn.execute(m.sql)  # several statements: allowed without parameters
                    conn.execute(
                        "INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                        (m.version, m.name, time.time()),
                    )
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def schema_version(self) -> int:
        return int(self._q("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])

    # -- meta ------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        """Setting ``embedding_dim`` also (re)creates the HNSW index for that dimension."""
        with self.transaction():
            self._x(
                "INSERT INTO meta(key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            if key == "embedding_dim":
                self._bind_vector_index(int(value))

    def _bind_vector_index(self, dim: int) -> None:
        """Bind the vectors to ``dim``: a CHECK on their size and one partial HNSW index on
        ``embedding::vector(dim)``; the constraint and index of another size go.

        Partial (``WHERE vector_dims(embedding) = dim``) so that building it never
        casts rows of another size that are deleted but not yet vacuumed away."""
        if dim <= 0:
            raise InvalidInput(f"embedding_dim must be a positive number, not {dim}")
        index, check = f"vectors_hnsw_{dim}", f"vectors_dim_{dim}"
        indexes = {r[0] for r in self._q(_HNSW_INDEXES_SQL)}
        checks = {r[0] for r in self._q(_DIM_CHECKS_SQL)}
        for name in sorted(indexes - {index}):
            self._x(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        for name in sorted(checks - {check}):
            self._x(sql.SQL("ALTER TABLE vectors DROP CONSTRAINT {}").format(sql.Identifier(name)))
        other = self._q(
            "SELECT vector_dims(embedding) FROM vectors WHERE vector_dims(embedding) <> %s LIMIT 1",
            (dim,),
        )
        if other:
            raise Conflict(
                f"The store holds {other[0][0]}-dimensional vectors, not {dim}: drop them "
                "first (`docshelf reindex` does) before binding another embedding size"
            )
        if check not in checks:
            self._x(
                f"ALTER TABLE vectors ADD CONSTRAINT {check} CHECK (vector_dims(embedding) = {dim})"
            )
        if index not in indexes and dim <= _HNSW_MAX_DIM:  # wider: vector_search scans exactly
            self._x(
                f"CREATE INDEX {index} ON vectors USING hnsw "
                f"((embedding::vector({dim})) vector_cosine_ops) "
                f"WHERE vector_dims(embedding) = {dim}"
            )

    def generation(self) -> int:
        value = self.get_meta("generation")
        return int(value) if value else 0

    def _bump_generation(self) -> None:
        self._x(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text"
        )

    # -- sources and files -----------------------------------------------------------------
    def add_source(self, source: Source) -> None:
        with self.transaction():
            self._x(
                f"INSERT INTO sources({SOURCE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                source_row(source),
            )

    def get_source(self, source_id: str) -> Source | None:
        rows = self._q(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE id = %s", (source_id,))
        return source_from_row(rows[0]) if rows else None

    def find_source(self, path: str) -> Source | None:
        rows = self._q(f"SELECT {SOURCE_COLUMNS} FROM sources WHERE path = %s", (path,))
        return source_from_row(rows[0]) if rows else None

    def list_sources(self) -> list[Source]:
        rows = self._q(f'SELECT {SOURCE_COLUMNS} FROM sources ORDER BY path COLLATE "C"')
        return [source_from_row(r) for r in rows]

    def delete_source(self, source_id: str) -> None:
        with self.transaction():
            self._x("DELETE FROM sources WHERE id = %s", (source_id,))

    def set_follow_symlinks(self, source_id: str, follow: bool) -> None:
        with self.transaction():
            self._x("UPDATE sources SET follow_symlinks = %s WHERE id = %s", (follow, source_id))

    def files_of_source(self, source_id: str) -> dict[str, FileRecord]:
        rows = self._q(
            "SELECT path, source_id, document_id, size, mtime_ns FROM files WHERE source_id = %s",
            (source_id,),
        )
        return {r[0]: FileRecord(*r) for r in rows}

    def files_of_document(self, document_id: str) -> list[FileRecord]:
        rows = self._q(
            "SELECT path, source_id, document_id, size, mtime_ns FROM files "
            'WHERE document_id = %s ORDER BY path COLLATE "C"',
            (document_id,),
        )
        return [FileRecord(*r) for r in rows]

    def put_file(self, record: FileRecord) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO files(path, source_id, document_id, size, mtime_ns) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET "
                "source_id = excluded.source_id, document_id = excluded.document_id, "
                "size = excluded.size, mtime_ns = excluded.mtime_ns",
                (record.path, record.source_id, record.document_id, record.size, record.mtime_ns),
            )

    def delete_file(self, path: str) -> None:
        with self.transaction():
            self._x("DELETE FROM files WHERE path = %s", (path,))

    def record_failures(self, source_id: str, failures: Sequence[Failure]) -> None:
        with self.transaction():
            self._x("DELETE FROM failures WHERE source_id = %s", (source_id,))
            now = time.time()
            self._xm(
                "INSERT INTO failures(path, source_id, reason, seen_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (path) DO UPDATE SET source_id = excluded.source_id, "
                "reason = excluded.reason, seen_at = excluded.seen_at",
                [(f.path, source_id, f.reason, now) for f in failures],
            )

    def list_failures(self, limit: int = 100) -> list[Failure]:
        rows = self._q(
            'SELECT path, reason FROM failures ORDER BY path COLLATE "C" LIMIT %s', (limit,)
        )
        return [Failure(r[0], r[1]) for r in rows]

    def count_failures(self) -> int:
        return int(self._q("SELECT count(*) FROM failures")[0][0])

    # -- documents -------------------------------------------------------------------------
    def get_document(self, document_id: str) -> Document | None:
        rows = self._q(f"SELECT {_DOC_SELECT} FROM documents d WHERE d.id = %s", (document_id,))
        return _document_from_row(rows[0]) if rows else None

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
            f"SELECT {_DOC_SELECT} FROM documents d WHERE true {where} "
            'ORDER BY d.rel_path COLLATE "C", d.id COLLATE "C" LIMIT %s OFFSET %s',
            [*params, limit, offset],
        )
        return [_document_from_row(r) for r in rows]

    def put_document(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32] | None,
    ) -> None:
        """Insert or replace a document with its chunks and (snippet) vectors."""
        snippets = [c for c in chunks if c.tier is Tier.SNIPPET]
        if vectors is not None and len(vectors) != len(snippets):
            raise ValueError(f"{len(vectors)} vectors for {len(snippets)} snippets")
        d = document
        with self.transaction():
            self._x("DELETE FROM chunks WHERE document_id = %s", (d.id,))  # vectors cascade
            # An upsert, not delete-and-insert: that would cascade to the files and jobs.
            self._x(
                f"INSERT INTO documents({_DOC_FIELDS}) VALUES ({', '.join(['%s'] * 25)}) "
                f"ON CONFLICT (id) DO UPDATE SET {_DOC_UPDATES}",
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
                    list(d.tags),
                    list(d.concept_ids),
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
            self._x("DELETE FROM distillates WHERE document_id = %s", (d.id,))
            self._xm(
                f"INSERT INTO chunks({CHUNK_COLUMNS}) VALUES ({', '.join(['%s'] * 15)})",
                [chunk_row(c, list) for c in chunks],
            )
            if vectors is not None and len(snippets):
                self._insert_vectors([c.id for c in snippets], vectors)
            self._bump_generation()

    def update_document_path(self, document_id: str, path: str, rel_path: str) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET path = %s, rel_path = %s, updated_at = %s WHERE id = %s",
                (path, rel_path, time.time(), document_id),
            )

    def delete_document(self, document_id: str) -> None:
        with self.transaction():
            self._x("DELETE FROM documents WHERE id = %s", (document_id,))  # chunks cascade
            self._bump_generation()

    # -- chunks ----------------------------------------------------------------------------
    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        rows = self._q(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id = ANY(%s)", (list(chunk_ids),))
        found = {r[0]: chunk_from_row(r, tuple) for r in rows}
        return [found[i] for i in chunk_ids if i in found]

    def chunks_of_document(self, document_id: str, tier: Tier) -> list[Chunk]:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = %s AND tier = %s ORDER BY ord",
            (document_id, tier.value),
        )
        return [chunk_from_row(r, tuple) for r in rows]

    def snippets_without_vectors(self, limit: int, document_id: str | None = None) -> list[Chunk]:
        where, params = ("AND document_id = %s", [document_id]) if document_id else ("", [])
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c WHERE tier = 'snippet' {where} "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq) "
            "ORDER BY seq LIMIT %s",
            [*params, limit],
        )
        return [chunk_from_row(r, tuple) for r in rows]

    def put_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        with self.transaction():
            self._insert_vectors(chunk_ids, vectors)
            self._bump_generation()

    def _insert_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        rows = np.asarray(vectors, dtype=np.float32).tolist()
        self._xm(
            "INSERT INTO vectors(chunk_seq, embedding) "
            "SELECT seq, %s::real[]::vector FROM chunks WHERE id = %s "
            "ON CONFLICT (chunk_seq) DO UPDATE SET embedding = excluded.embedding",
            [(rows[i], cid) for i, cid in enumerate(chunk_ids)],
        )

    def drop_vectors(self) -> None:
        with self.transaction():
            self._x("DELETE FROM vectors")
            self._bump_generation()

    # -- retrieval -------------------------------------------------------------------------
    def lexical_search(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """Full-text search over snippets' header and text: (chunk_id, rank), higher is better.

        Each term becomes its own ``phraseto_tsquery`` (a quoted phrase, as in the
        SQLite store), OR-ed with ``||``: no user text is ever parsed as tsquery syntax.
        """
        if not terms or limit <= 0:
            return []
        query = " || ".join(["phraseto_tsquery('english', %s)"] * len(terms))
        where, params = _filter_sql(filters)
        rows = self._q(
            f"SELECT c.id, {_RANK} AS rank FROM (SELECT {query} AS query) q "
            "JOIN chunks c ON c.fts @@ q.query JOIN documents d ON d.id = c.document_id "
            f"WHERE d.status = 'complete' {where} ORDER BY rank DESC, c.seq LIMIT %s",
            [*terms, *params, limit],
        )
        return [(r[0], float(r[1])) for r in rows]

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        if not chunk_ids:
            return {}
        # vector_send: int16 dim, int16 unused, then big-endian float4s.
        rows = self._q(
            "SELECT c.id, substr(vector_send(v.embedding), 5) FROM vectors v "
            "JOIN chunks c ON c.seq = v.chunk_seq WHERE c.id = ANY(%s)",
            (list(chunk_ids),),
        )
        return {r[0]: np.frombuffer(bytes(r[1]), dtype=">f4").astype(np.float32) for r in rows}

    def vector_snapshot(self) -> VectorSnapshot:
        with self._snapshot() as conn, conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT (SELECT value FROM meta WHERE key = 'generation'), "
                "(SELECT value FROM meta WHERE key = 'embedding_dim')"
            )
            meta = cur.fetchone()
            # vector_send: int16 dim, int16 unused, then big-endian float4s.
            cur.execute(
                "SELECT c.id, c.document_id, substr(vector_send(v.embedding), 5) FROM vectors v "
                "JOIN chunks c ON c.seq = v.chunk_seq JOIN documents d ON d.id = c.document_id "
                "WHERE d.status = 'complete' ORDER BY v.chunk_seq"
            )
            rows = cur.fetchall()
        generation = int(meta[0]) if meta and meta[0] else 0
        dim = int(meta[1]) if meta and meta[1] else 0
        if rows:
            raw = np.frombuffer(b"".join(bytes(r[2]) for r in rows), dtype=">f4")
            matrix = raw.astype(np.float32).reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, dim), dtype=np.float32)
        return VectorSnapshot(
            generation=generation,
            chunk_ids=[r[0] for r in rows],
            document_ids=[r[1] for r in rows],
            matrix=matrix,
        )

    def vector_search(
        self, query: npt.NDArray[np.float32], limit: int, filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """Nearest snippets by cosine similarity through the HNSW index, filters in SQL:
        (chunk_id, similarity), best first — what ``ExactVectorIndex.search`` returns.

        Approximate where the index is used (pgvector's iterative scan keeps going
        until ``limit`` rows pass the filters); exact where the planner prefers a scan.
        """
        q = np.asarray(query, dtype=np.float32).ravel()
        if limit <= 0 or q.size == 0:
            return []
        where, params = _filter_sql(filters)
        # ef_search 4 x limit (at least 200): recall@100 was 0.998 at ef 400, 0.90 at 200
        # on 20k clustered 384-d vectors, for about a millisecond more.
        settings = [("hnsw.ef_search", str(min(max(200, 4 * limit), 1000)))]
        if self._iterative_scan:
            settings.append(("hnsw.iterative_scan", "strict_order"))
        vec = q.tolist()
        with self._snapshot(settings=settings) as conn:
            rows = conn.execute(
                _vector_search_sql(q.size, where), [vec, *params, vec, limit]
            ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def documents_matching(self, filters: SearchFilters) -> set[str]:
        where, params = _filter_sql(filters)
        rows = self._q(f"SELECT d.id FROM documents d WHERE true {where}", params)
        return {r[0] for r in rows}

    # -- embedding cache -------------------------------------------------------------------
    def cached_embeddings(
        self, model: str, text_hashes: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        if not text_hashes:
            return {}
        rows = self._q(
            "SELECT text_hash, embedding FROM embedding_cache "
            "WHERE model = %s AND text_hash = ANY(%s)",
            (model, list(text_hashes)),
        )
        return {r[0]: np.frombuffer(bytes(r[1]), dtype=np.float32) for r in rows}

    def cache_embeddings(
        self, model: str, items: Sequence[tuple[str, npt.NDArray[np.float32]]]
    ) -> None:
        with self.transaction():
            self._xm(
                "INSERT INTO embedding_cache(model, text_hash, embedding) VALUES (%s, %s, %s) "
                "ON CONFLICT (model, text_hash) DO NOTHING",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    # -- enrichment --------------------------------------------------------------------------
    def put_enrichment(self, document_id: str, enrichment: Enrichment, at: float) -> bool:
        e = enrichment
        with self.transaction():
            changed = self._x(
                "UPDATE documents SET summary = %s, document_type = %s, category = %s, "
                "concept_ids = %s, primary_concept_id = %s, concept_source = %s, "
                "taxonomy_version = %s, enriched_at = %s, enrichment_mode = %s, "
                "enrich_lease_until = NULL WHERE id = %s",
                (
                    e.summary,
                    e.document_type,
                    e.category,
                    list(e.concept_ids),
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
            self._x("DELETE FROM distillates WHERE document_id = %s", (document_id,))
            self._xm(
                "INSERT INTO distillates(document_id, ord, text, chunk_ids, mode) "
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    (d.document_id, d.n, d.text, list(d.chunk_ids), d.mode)
                    for d in e.distillates(document_id)
                ],
            )
        return True

    def enrichment_failed(self, document_id: str, at: float) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET enriched_at = %s, enrichment_mode = 'failed', "
                "enrich_lease_until = NULL WHERE id = %s",
                (at, document_id),
            )

    def reset_enrichment(self, document_ids: Sequence[str] | None = None) -> int:
        with self.transaction():
            if document_ids is None:
                return self._x(
                    "UPDATE documents SET enriched_at = NULL, enrich_lease_until = NULL "
                    "WHERE enriched_at IS NOT NULL"
                )
            return self._x(
                "UPDATE documents SET enriched_at = NULL, enrich_lease_until = NULL "
                "WHERE id = ANY(%s)",
                (list(document_ids),),
            )

    def claim_enrichment(self, now: float, lease_seconds: float) -> str | None:
        with self.transaction():
            rows = self._q(
                "WITH due AS (SELECT id FROM documents WHERE enriched_at IS NULL "
                "AND status = 'complete' AND (enrich_lease_until IS NULL "
                "OR enrich_lease_until < %s) ORDER BY added_at, id "
                "LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "UPDATE documents d SET enrich_lease_until = %s FROM due "
                "WHERE d.id = due.id RETURNING d.id",
                (now, now + lease_seconds),
            )
        return str(rows[0][0]) if rows else None

    def distillates_of(self, document_id: str) -> list[Distillate]:
        rows = self._q(
            "SELECT document_id, ord, text, chunk_ids, mode FROM distillates "
            "WHERE document_id = %s ORDER BY ord",
            (document_id,),
        )
        return [Distillate(r[0], r[1], r[2], tuple(r[3]), r[4]) for r in rows]

    def search_distillates(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[Distillate, float]]:
        if not terms or limit <= 0:
            return []
        query = " || ".join(["phraseto_tsquery('english', %s)"] * len(terms))
        where, params = _filter_sql(filters)
        rows = self._q(
            "SELECT x.document_id, x.ord, x.text, x.chunk_ids, x.mode, "
            "ts_rank_cd(x.tsv, q.query) AS rank "
            f"FROM (SELECT {query} AS query) q JOIN distillates x ON x.tsv @@ q.query "
            "JOIN documents d ON d.id = x.document_id "
            f"WHERE d.status = 'complete' {where} "
            "ORDER BY rank DESC, x.document_id, x.ord LIMIT %s",
            [*terms, *params, limit],
        )
        return [(Distillate(r[0], r[1], r[2], tuple(r[3]), r[4]), float(r[5])) for r in rows]

    def cached_enrichment(self, sha256: str, locale: str, producer: str) -> str | None:
        rows = self._q(
            "SELECT data FROM enrichment_cache WHERE sha256 = %s AND locale = %s AND producer = %s",
            (sha256, locale, producer),
        )
        return str(rows[0][0]) if rows else None

    def cache_enrichment(self, sha256: str, locale: str, producer: str, data: str) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO enrichment_cache(sha256, locale, producer, data, created_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (sha256, locale, producer) "
                "DO UPDATE SET data = excluded.data, created_at = excluded.created_at",
                (sha256, locale, producer, data, time.time()),
            )

    # -- reindex staging ---------------------------------------------------------------
    def stage_reindex(
        self, document_id: str, target: str, data: str, vectors: bytes | None
    ) -> None:
        with self.transaction():
            self._x("DELETE FROM reindex_staging WHERE document_id = %s", (document_id,))
            self._x(
                "INSERT INTO reindex_staging(document_id, target, data, vectors) "
                "VALUES (%s, %s, %s, %s)",
                (document_id, target, data, vectors),
            )

    def staged_reindex(self, target: str) -> set[str]:
        rows = self._q("SELECT document_id FROM reindex_staging WHERE target = %s", (target,))
        return {str(r[0]) for r in rows}

    def take_staged(self, document_id: str) -> tuple[str, bytes | None] | None:
        rows = self._q(
            "SELECT data, vectors FROM reindex_staging WHERE document_id = %s", (document_id,)
        )
        if not rows:
            return None
        with self.transaction():
            self._x("DELETE FROM reindex_staging WHERE document_id = %s", (document_id,))
        return str(rows[0][0]), (bytes(rows[0][1]) if rows[0][1] is not None else None)

    def clear_reindex(self, keep_target: str | None = None) -> int:
        with self.transaction():
            if keep_target is None:
                return self._x("DELETE FROM reindex_staging")
            return self._x("DELETE FROM reindex_staging WHERE target <> %s", (keep_target,))

    # -- links between notes ---------------------------------------------------------------
    def put_links(self, document_id: str, links: Sequence[WikiLink]) -> None:
        with self.transaction():
            self._x("DELETE FROM links WHERE document_id = %s", (document_id,))
            self._xm(
                "INSERT INTO links(document_id, ord, target, heading, alias, embed) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (document_id, n, k.target, k.heading, k.alias, bool(k.embed))
                    for n, k in enumerate(links)
                ],
            )

    def put_names(self, document_id: str, names: Sequence[str], kind: str) -> None:
        """Replace the document's names of one kind (``path`` or ``title``)."""
        with self.transaction():
            self._x(
                "DELETE FROM note_names WHERE document_id = %s AND kind = %s", (document_id, kind)
            )
            self._xm(
                "INSERT INTO note_names(document_id, name, kind) VALUES (%s, %s, %s) "
                "ON CONFLICT (document_id, name) DO NOTHING",
                [(document_id, name, kind) for name in names],
            )

    def links_of(self, document_id: str) -> list[tuple[WikiLink, list[str]]]:
        """Each link of the document with the ids of the documents its name resolves to."""
        rows = self._q(
            "SELECT l.target, l.heading, l.alias, l.embed, ARRAY(SELECT DISTINCT n.document_id "
            "FROM note_names n WHERE n.name = l.target) FROM links l WHERE l.document_id = %s "
            "ORDER BY l.ord",
            (document_id,),
        )
        return [(WikiLink(r[0], r[1], r[2], bool(r[3])), sorted(r[4])) for r in rows]

    def backlinks(self, document_id: str) -> list[str]:
        """Ids of the documents that link to any name of this one."""
        rows = self._q(
            'SELECT DISTINCT l.document_id COLLATE "C" FROM links l JOIN note_names n '
            "ON n.name = l.target WHERE n.document_id = %s AND l.document_id <> %s ORDER BY 1",
            (document_id, document_id),
        )
        return [r[0] for r in rows]

    # -- users and access ------------------------------------------------------------------
    def put_user(self, user: User, token_hash: str | None) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO users(id, name, token_hash, is_admin, created_at, revoked_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "token_hash = excluded.token_hash, revoked_at = excluded.revoked_at",
                (user.id, user.name, token_hash, user.is_admin, user.created_at, user.revoked_at),
            )

    def get_user(self, user_id_or_name: str) -> User | None:
        rows = self._q(
            f"SELECT {USER_COLUMNS} FROM users WHERE id = %s OR name = %s "
            "ORDER BY (id = %s) DESC LIMIT 1",
            (user_id_or_name, user_id_or_name, user_id_or_name),
        )
        return user_from_row(rows[0]) if rows else None

    def user_for_token(self, token_hash: str) -> User | None:
        rows = self._q(
            f"SELECT {USER_COLUMNS} FROM users WHERE token_hash = %s AND revoked_at IS NULL",
            (token_hash,),
        )
        return user_from_row(rows[0]) if rows else None

    def has_token(self, user_id: str) -> bool:
        return bool(
            self._q("SELECT 1 FROM users WHERE id = %s AND token_hash IS NOT NULL", (user_id,))
        )

    def list_users(self) -> list[User]:
        rows = self._q(f'SELECT {USER_COLUMNS} FROM users ORDER BY name COLLATE "C"')
        return [user_from_row(r) for r in rows]

    def grant(self, user_id: str, document_id: str, title: str | None = None) -> bool:
        """Give a user access to a document; False if they had it already."""
        with self.transaction():
            return (
                self._x(
                    "INSERT INTO access(user_id, document_id, title, added_at) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (user_id, document_id) DO NOTHING",
                    (user_id, document_id, title, time.time()),
                )
                > 0
            )

    def access_titles(self, user_id: str, document_ids: Sequence[str]) -> dict[str, str]:
        rows = self._q(
            "SELECT document_id, title FROM access WHERE user_id = %s AND title IS NOT NULL "
            "AND document_id = ANY(%s)",
            (user_id, list(document_ids)),
        )
        return {r[0]: r[1] for r in rows}

    def revoke_access(self, user_id: str, document_id: str) -> bool:
        with self.transaction():
            return (
                self._x(
                    "DELETE FROM access WHERE user_id = %s AND document_id = %s",
                    (user_id, document_id),
                )
                > 0
            )

    def has_access(self, user_id: str, document_id: str) -> bool:
        return bool(
            self._q(
                "SELECT 1 FROM access WHERE user_id = %s AND document_id = %s",
                (user_id, document_id),
            )
        )

    def access_count(self, document_id: str) -> int:
        return int(
            self._q("SELECT count(*) FROM access WHERE document_id = %s", (document_id,))[0][0]
        )

    # -- jobs ------------------------------------------------------------------------------
    def put_job(self, job: Job) -> None:
        """Insert or replace a job; replacing drops its payload (as in the SQLite store)."""
        with self.transaction():
            self._x("DELETE FROM jobs WHERE document_id = %s", (job.document_id,))
            self._x(
                f"INSERT INTO jobs({JOB_COLUMNS}) VALUES ({', '.join(['%s'] * 13)})",
                job_row(job),
            )

    def get_job(self, document_id: str) -> Job | None:
        rows = self._q(f"SELECT {JOB_COLUMNS} FROM jobs WHERE document_id = %s", (document_id,))
        return job_from_row(rows[0]) if rows else None

    def claim_job(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """Atomically lease one due job: queued and due, or running with an expired lease.

        ``FOR UPDATE SKIP LOCKED``: a job row locked by anyone else is passed over.
        """
        returning = ", ".join(f"j.{c.strip()}" for c in JOB_COLUMNS.split(","))
        with self.transaction():
            rows = self._q(
                "WITH due AS (SELECT document_id FROM jobs WHERE "
                "(status = 'queued' AND next_attempt_at <= %s) OR "
                "(status = 'running' AND lease_expires_at < %s) "
                "ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "UPDATE jobs j SET status = 'running', lease_owner = %s, "
                "lease_expires_at = %s, updated_at = %s FROM due "
                f"WHERE j.document_id = due.document_id RETURNING {returning}",
                (now, now, owner, now + lease_seconds, now),
            )
        return job_from_row(rows[0]) if rows else None

    def renew_lease(self, document_id: str, owner: str, until: float) -> bool:
        with self.transaction():
            return (
                self._x(
                    "UPDATE jobs SET lease_expires_at = %s WHERE document_id = %s "
                    "AND lease_owner = %s AND status = 'running'",
                    (until, document_id, owner),
                )
                > 0
            )

    def update_job(self, document_id: str, **fields: Any) -> None:
        if not fields:
            return
        fields["updated_at"] = time.time()
        sets = sql.SQL(", ").join(
            sql.SQL("{} = %s").format(sql.Identifier(name)) for name in fields
        )
        with self.transaction():
            self._x(
                sql.SQL("UPDATE jobs SET {} WHERE document_id = %s").format(sets),
                [*fields.values(), document_id],
            )

    def job_counts(self) -> dict[str, int]:
        rows = self._q("SELECT status, count(*) FROM jobs GROUP BY status")
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
                "INSERT INTO job_payloads(document_id, stage, payload) VALUES (%s, %s, %s) "
                "ON CONFLICT (document_id) DO UPDATE SET stage = excluded.stage, "
                "payload = excluded.payload",
                (document_id, stage, payload),
            )

    def get_payload(self, document_id: str, stage: str) -> bytes | None:
        rows = self._q(
            "SELECT payload FROM job_payloads WHERE document_id = %s AND stage = %s",
            (document_id, stage),
        )
        return bytes(rows[0][0]) if rows else None

    def delete_payload(self, document_id: str) -> None:
        with self.transaction():
            self._x("DELETE FROM job_payloads WHERE document_id = %s", (document_id,))

    def set_document_status(self, document_id: str, status: str) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET status = %s, updated_at = %s WHERE id = %s",
                (status, time.time(), document_id),
            )
            self._bump_generation()

    # -- events ----------------------------------------------------------------------------
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
        """Record an event; seqs are allocated under the writer lock, so they become
        visible in increasing order."""
        with self.transaction():
            rows = self._q(
                "INSERT INTO events(document_id, user_id, kind, stage, progress_pct, message, "
                "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING seq",
                (
                    document_id,
                    user_id,
                    kind,
                    stage,
                    progress_pct,
                    message,
                    time.time(),
                ),
            )
            self.notices.note(document_id)
        return int(rows[0][0])

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
        where = ["seq > %s"]
        params: list[Any] = [after]
        if document_id is not None:
            where.append("document_id = %s")
            params.append(document_id)
        if kinds is not None:
            where.append("kind ILIKE %s")  # SQLite's LIKE ignores ASCII case too
            params.append(kinds)
        if user_id is not None:
            where.append(  # a shared event only from when the user's access began
                "(user_id = %s OR (user_id IS NULL AND EXISTS (SELECT 1 FROM access a "
                "WHERE a.document_id = events.document_id AND a.user_id = %s "
                "AND a.added_at <= events.created_at)))"
            )
            params += [user_id, user_id]
        rows = self._q(
            "SELECT seq, document_id, kind, stage, progress_pct, message, created_at, user_id "
            f"FROM events WHERE {' AND '.join(where)} ORDER BY seq LIMIT %s",
            [*params, limit],
        )
        return [Event(*r) for r in rows]

    # -- upkeep ----------------------------------------------------------------------------
    def tag_counts(self) -> dict[str, int]:
        """How many documents carry each free-form tag."""
        rows = self._q(
            "SELECT t, count(*) FROM documents d, unnest(d.tags) t GROUP BY t "
            'ORDER BY count(*) DESC, t COLLATE "C"'
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def stats(self) -> StoreStats:
        with self._snapshot() as conn:
            one = conn.execute(
                "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM sources), "
                "(SELECT count(*) FROM files), "
                "(SELECT count(*) FROM chunks WHERE tier = 'section'), "
                "(SELECT count(*) FROM chunks WHERE tier = 'snippet'), "
                "(SELECT count(*) FROM vectors), "
                "(SELECT COALESCE(sum(pages_without_text), 0) FROM documents)"
            ).fetchone()
            by_status = conn.execute(
                "SELECT status, count(*) FROM documents GROUP BY status"
            ).fetchall()
            by_type = conn.execute(
                "SELECT file_type, count(*) FROM documents GROUP BY file_type"
            ).fetchall()
            by_enrichment = conn.execute(
                "SELECT CASE WHEN enriched_at IS NULL THEN 'pending' ELSE enrichment_mode END, "
                "count(*) FROM documents WHERE status = 'complete' GROUP BY 1"
            ).fetchall()
        assert one is not None
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
        """Orphans, missing or mis-sized vectors, and a missing or invalid vector index."""
        problems: list[str] = []
        orphan = self._q(
            "SELECT count(*) FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.id = c.document_id)"
        )[0][0]
        if orphan:
            problems.append(f"{orphan} chunks belong to no document")
        model = self.get_meta("embedding_model")
        if model and model != "none":
            missing = self._q(
                "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.tier = 'snippet' AND d.status = 'complete' AND NOT EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq)"
            )[0][0]
            if missing:
                problems.append(f"{missing} snippets of complete documents have no vector")
        dim = int(self.get_meta("embedding_dim") or 0)
        if dim:
            wrong = self._q(
                "SELECT count(*) FROM vectors WHERE vector_dims(embedding) <> %s", (dim,)
            )[0][0]
            if wrong:
                problems.append(f"{wrong} vectors are not {dim}-dimensional")
            names = {r[0] for r in self._q(_HNSW_INDEXES_SQL)}
            if dim <= _HNSW_MAX_DIM and f"vectors_hnsw_{dim}" not in names:
                problems.append(
                    f"the HNSW index for {dim}-dimensional vectors is missing "
                    f"(set_meta('embedding_dim', '{dim}') creates it)"
                )
        invalid = self._q(
            "SELECT i.indexrelid::regclass::text FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid"
        )
        problems.extend(f"index {r[0]} is invalid; rebuild it with REINDEX" for r in invalid)
        return problems


_HNSW_INDEXES_SQL = (
    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
    "AND tablename = 'vectors' AND indexname LIKE 'vectors\\_hnsw\\_%%'"
)
_DIM_CHECKS_SQL = (
    "SELECT conname FROM pg_constraint WHERE conrelid = 'vectors'::regclass "
    "AND conname LIKE 'vectors\\_dim\\_%%'"
)


def _vector_search_sql(dim: int, where: str) -> str:
    """The nearest-neighbour query; its ORDER BY matches the HNSW index expression."""
    distance = f"v.embedding::vector({dim}) <=> %s::real[]::vector({dim})"
    return (
        f"SELECT c.id, 1 - ({distance}) AS score FROM vectors v "
        "JOIN chunks c ON c.seq = v.chunk_seq JOIN documents d ON d.id = c.document_id "
        f"WHERE vector_dims(v.embedding) = {dim} AND d.status = 'complete' {where} "
        f"ORDER BY {distance} LIMIT %s"
    )


def _has_iterative_scan(conn: psycopg.Connection[TupleRow]) -> bool:
    """pgvector >= 0.8 can keep an HNSW scan going until enough rows pass the filters."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        return False
    parts = tuple(int(p) for p in str(row[0]).split(".")[:2] if p.isdigit())
    return parts >= (0, 8)


def _filter_sql(f: SearchFilters) -> tuple[str, list[Any]]:
    """SQL conditions on the ``documents d`` alias (the semantics of the SQLite store's)."""
    parts: list[str] = []
    params: list[Any] = []
    if f.user_id:
        parts.append(
            "EXISTS (SELECT 1 FROM access a WHERE a.document_id = d.id AND a.user_id = %s)"
        )
        params.append(f.user_id)
    if f.source_id:
        parts.append("d.source_id = %s")
        params.append(f.source_id)
    if f.path_prefix:
        column = "d.path" if f.path_prefix.startswith("/") else "d.rel_path"
        # ILIKE: SQLite's LIKE ignores ASCII case, and the two stores answer alike.
        parts.append(f"{column} ILIKE %s")
        params.append(like_prefix(f.path_prefix))
    if f.file_type:
        parts.append("d.file_type = %s")
        params.append(f.file_type)
    for group in f.concept_groups:
        parts.append("d.concept_ids && %s::text[]")
        params.append(list(group))
    for tag in f.tags:
        parts.append("EXISTS (SELECT 1 FROM unnest(d.tags) t WHERE lower(t) = lower(%s))")
        params.append(tag)
    if f.document_ids:
        parts.append("d.id = ANY(%s)")
        params.append(list(f.document_ids))
    return "".join(f" AND {p}" for p in parts), params


def _document_from_row(r: Sequence[Any]) -> Document:
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
        tags=tuple(r[12]),
        concept_ids=tuple(r[13]),
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
        chunk_counts={"section": int(r[25]), "snippet": int(r[26])},
    )
