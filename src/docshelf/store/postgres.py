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

The SQL both stores share is in store/sql/, in SQLite's spelling (``?`` marks),
which ``_q``/``_x``/``_xm``/``_xr`` turn into psycopg's. Here: the pool and the
pinned connection, the writer lock, migrations, tsvector ranking, pgvector and
the claims of leased work; the driver's errors, translated, in store/postgres_errors.py.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from docshelf.errors import DocshelfError, Unavailable
from docshelf.model import Distillate, Job
from docshelf.store.base import SearchFilters
from docshelf.store.notices import CommitNotices
from docshelf.store.postgres_errors import redact as redact  # (shown URLs: portable, tests)
from docshelf.store.postgres_errors import translate
from docshelf.store.postgres_health import (
    DOWN_WAIT_S,
    POOL_LOGGER,
    RECONNECT_S,
    Reachability,
    watched,
)
from docshelf.store.postgres_schema import MIGRATIONS
from docshelf.store.postgres_vectors import VectorIndexSQL
from docshelf.store.rows import JOB_FIELDS, distillate_from_row, job_from_row
from docshelf.store.sql import POSTGRES, Query, Rows

_CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise
_WRITER_WAIT_SECONDS = 30  # how long a transaction waits for the writer lock (SQLite: 30 s)


def _lock_key(purpose: str, schema: str) -> int:
    """A signed 64-bit advisory-lock key per purpose and schema."""
    digest = hashlib.blake2b(f"docshelf:{purpose}:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresStore(VectorIndexSQL):
    """``Store`` on a PostgreSQL database (with the pgvector extension)."""

    dialect = POSTGRES

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
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        # fast failure while the server refuses connections (store/postgres_health.py)
        self._reach = Reachability(self.url, "docshelf", self._scrub)
        self._pool: ConnectionPool[psycopg.Connection[TupleRow]] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs=extra,
            open=False,
            name="docshelf",
            connection_class=watched(self._reach),
            reconnect_timeout=RECONNECT_S,
        )
        logging.getLogger(POOL_LOGGER).addFilter(self._reach)
        try:
            self._pool.open(wait=True, timeout=float(extra.get("connect_timeout", 30)))
        except PoolTimeout as exc:
            self.close()
            raise self._translate(exc) from exc

    # -- plumbing --------------------------------------------------------------------------
    @contextmanager
    def searching(self) -> Iterator[None]:
        """Nothing to ready: the server reads for every client (``Store.searching``)."""
        yield

    def close(self) -> None:
        self._pool.close()
        logging.getLogger(POOL_LOGGER).removeFilter(self._reach)

    def _translate(self, exc: Exception) -> DocshelfError:
        if isinstance(exc, PoolTimeout) and self._reach.down:
            return Unavailable(
                f"The store is unavailable: PostgreSQL at {self.url} refuses connections "
                f"({self._reach.cause}); try again once it takes them"
            )
        return translate(exc, self.url, self._password)

    def _scrub(self, message: str) -> str:
        return message.replace(self._password, "***") if self._password else message

    def _checkout(self) -> psycopg.Connection[TupleRow]:
        """A pooled connection, waited for up to the pool's timeout while the server
        takes connections, briefly while it refuses them (``Reachability``): the wait is
        taken in short turns, so a request already waiting when the server goes down
        is answered at once too. ``PoolTimeout`` when none came."""
        deadline = time.monotonic() + self._pool.timeout
        while True:
            turn = min(DOWN_WAIT_S, deadline - time.monotonic())
            try:
                return self._pool.getconn(timeout=max(turn, 0.001))
            except PoolTimeout:
                if self._reach.down or time.monotonic() >= deadline:
                    raise

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
            conn = self._checkout()
        except PoolTimeout as exc:
            raise self._translate(exc) from exc
        try:
            with conn:  # as the pool's ``connection()``: commit, or roll back on an error
                yield conn
        finally:
            self._pool.putconn(conn)

    @contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[None]:
        """Pin a pooled connection to this thread; nested blocks become savepoints. Every
        commit is ``durable`` here (PostgreSQL's ``synchronous_commit``, left on)."""
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
            conn = self._checkout()
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

    def _q(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> Rows:
        """Run one statement in the shared spelling (``?`` marks, see store/sql/)."""
        try:
            with self._conn() as conn, conn.cursor() as cur:
                cur.execute(_spelled(query), params)
                return cur.fetchall() if cur.description else []
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _x(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> int:
        """Run a write on the transaction's connection; the number of rows it touched."""
        conn = self._require_tx()
        try:
            with conn.cursor() as cur:
                cur.execute(_spelled(query), params)
                return cur.rowcount
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _xm(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        conn = self._require_tx()
        rows = list(rows)
        if not rows:
            return
        try:
            with conn.cursor() as cur:
                cur.executemany(_spelled(query), rows)
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    def _xr(self, query: str, params: Sequence[Any] = ()) -> Rows:
        conn = self._require_tx()
        try:
            with conn.cursor() as cur:
                cur.execute(_spelled(query), params)
                return cur.fetchall()
        except psycopg.Error as exc:
            raise self._translate(exc) from exc

    @contextmanager
    def _reads(self) -> Iterator[Query]:
        """Binary results: pgvector's bytes come as they are, not as hex."""
        with self._snapshot() as conn, conn.cursor(binary=True) as cur:

            def query(text: str, params: Sequence[Any] = ()) -> Rows:
                try:
                    cur.execute(_spelled(text), params)
                    rows: Rows = cur.fetchall()
                    return rows
                except psycopg.Error as exc:
                    raise self._translate(exc) from exc

            yield query

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

    def _insert_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        rows = np.asarray(vectors, dtype=np.float32).tolist()
        self._xm(
            "INSERT INTO vectors(chunk_seq, embedding) "
            "SELECT seq, ?::real[]::vector FROM chunks WHERE id = ? "
            "ON CONFLICT (chunk_seq) DO UPDATE SET embedding = excluded.embedding",
            [(rows[i], cid) for i, cid in enumerate(chunk_ids)],
        )

    # -- retrieval -------------------------------------------------------------------------
    def read(
        self, statement: str, params: Sequence[Any] = (), settings: Sequence[tuple[str, str]] = ()
    ) -> Rows:
        """``SearchReadsSQL.read``, with ``settings`` set locally for the statement (in a
        snapshot of its own, or the caller's transaction)."""
        if not settings:
            return self._q(statement, params)
        with self._snapshot(settings=settings) as conn:
            return list(conn.execute(self.dialect.sql(statement), params).fetchall())

    def search_distillates(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[Distillate, float]]:
        if not terms or limit <= 0:
            return []
        query = " || ".join(["phraseto_tsquery('english', ?)"] * len(terms))
        where, params = self._filters(filters)
        rows = self._q(
            "SELECT x.document_id, x.ord, x.text, x.chunk_ids, x.mode, "
            "ts_rank_cd(x.tsv, q.query) AS rank "
            f"FROM (SELECT {query} AS query) q JOIN distillates x ON x.tsv @@ q.query "
            "JOIN documents d ON d.id = x.document_id "
            f"WHERE d.status = 'complete' {where} "
            "ORDER BY rank DESC, x.document_id, x.ord LIMIT ?",
            [*terms, *params, limit],
        )
        return [(distillate_from_row(r, tuple), float(r[5])) for r in rows]

    def claim_job(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """Atomically lease one due job: queued and due, or running with a lease that is
        over (run out, or its owner died).

        ``FOR UPDATE SKIP LOCKED``: a job row locked by anyone else is passed over.
        """
        returning = ", ".join(f"j.{c}" for c in JOB_FIELDS)
        with self.transaction():
            over, params = self._job_leases_over(now)
            rows = self._xr(
                "WITH due AS (SELECT document_id FROM jobs WHERE "
                "(status = 'queued' AND next_attempt_at <= ?) OR "
                f"(status = 'running' AND {over}) "
                "ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "UPDATE jobs j SET status = 'running', lease_owner = ?, "
                "lease_expires_at = ?, updated_at = ? FROM due "
                f"WHERE j.document_id = due.document_id RETURNING {returning}",
                (now, *params, owner, now + lease_seconds, now),
            )
        return job_from_row(rows[0]) if rows else None

    def claim_enrichment(self, now: float, lease_seconds: float, owner: str) -> str | None:
        with self.transaction():
            free, params = self._enrichment_free(now)
            rows = self._xr(
                "WITH due AS (SELECT id FROM documents WHERE enriched_at IS NULL "
                f"AND status = 'complete' AND {free} ORDER BY added_at, id "
                "LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "UPDATE documents d SET enrich_lease_until = ?, enrich_lease_owner = ? "
                "FROM due WHERE d.id = due.id RETURNING d.id",
                (*params, now + lease_seconds, owner),
            )
        return str(rows[0][0]) if rows else None

    def claim_embedding(
        self, now: float, lease_seconds: float, owner: str, limit: int
    ) -> list[str]:
        with self.transaction():
            free, params = self._embedding_free(now)
            rows = self._xr(
                "WITH due AS (SELECT id FROM documents WHERE embed_pending = 1 "
                f"AND status = 'complete' AND {free} ORDER BY added_at, id "
                "LIMIT ? FOR UPDATE SKIP LOCKED) "
                "UPDATE documents d SET embed_lease_until = ?, embed_lease_owner = ? "
                "FROM due WHERE d.id = due.id RETURNING d.id, d.added_at",
                (*params, limit, now + lease_seconds, owner),
            )
        return [str(r[0]) for r in sorted(rows, key=lambda r: (r[1], r[0]))]


def _spelled(query: str | sql.Composed) -> str | sql.Composed:
    """A statement in the shared spelling as psycopg runs it (a composed one as it is)."""
    return POSTGRES.sql(query) if isinstance(query, str) else query
