"""The embedded store: one SQLite file in WAL mode, FTS5 for the lexical index,
vectors as float32 BLOBs beside the chunks (scanned exactly by the search layer).

Transactions are explicit: the connection runs in autocommit mode and every
write happens inside ``transaction()``, which issues ``BEGIN IMMEDIATE`` (one
writer at a time, readers never blocked under WAL) or a savepoint when nested.

The SQL both stores share is in store/sql/; the sidecar indexes' feed in
store/sqlite_feed.py. Here: the connection, transactions, migrations, FTS5
ranking, the vector BLOBs, the claims of leased work, and the memo of reads that
holds while nothing commits (``_memo``: see ``_memo_table``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from docshelf.durable import private_dir, private_file, tighten
from docshelf.errors import Conflict, InvalidInput, ReadOnlyStorage, StorageFull, Unavailable
from docshelf.model import Distillate, Job
from docshelf.store.base import SearchFilters
from docshelf.store.notices import CommitNotices
from docshelf.store.rows import JOB_COLUMNS, distillate_from_row, job_from_row
from docshelf.store.sql import SQLITE, Query, Rows, SQLStore
from docshelf.store.sqlite_feed import SQLiteSidecarFeed
from docshelf.store.sqlite_schema import MIGRATIONS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
# Answers kept at most, then all dropped: some 25 MB at worst. A document counts as
# ten (its record is ~1 KB); the chunk places a visibility check adds by the way are
# not counted, and are at most as many as the visibility answers.
MEMO_ENTRIES = 200_000
_MEMO_WEIGHT = {"document": 10}
_ABSENT = object()  # a key read and found to have no answer
MMAP_BYTES = 1 << 31


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


class SQLiteStore(SQLiteSidecarFeed, SQLStore):
    """``Store`` (with its search reads and the sidecars' feed) on a single SQLite file."""

    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self._lock = threading.RLock()
        self._depth = 0
        self.notices = CommitNotices()
        self._commits = 0  # this connection's commits (data_version counts only others')
        self._memo_stamp: tuple[int, int] | None = None
        self._memo_kinds: dict[Hashable, dict[Hashable, Any]] = {}  # kind -> key -> answer
        self._memo_size = 0
        self._mapped = False
        self._searches = threading.local()  # this thread's search: the version it pinned
        try:
            # Private: all text and the token hashes are in it. SQLite gives its -wal
            # and -shm files the database file's permissions.
            private_dir(path.parent)
            private_file(path)
            for made in (path, *(path.with_name(path.name + x) for x in ("-wal", "-shm"))):
                tighten(made)  # an older version's: 0600 now
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
    @contextmanager
    def searching(self) -> Iterator[None]:
        """One search, in this thread. The database is read through a memory map from
        the first search on (as the ANN index is read): a search reads a few hundred rows
        at random, and mapped pages skip a copy out of the page cache each
        (docs/benchmarks/search-latency.md, "Server search near the engines"). Only then:
        mapped pages count in the process's RSS, and a process that writes gains nothing
        by them (issue 17: `add` of a 25 MB line reached 325 MB with 191 MB of them).
        SQLite caps the size at its build's maximum; writes still go through the WAL.

        Meanwhile the memo of reads asks SQLite once whether another connection has
        committed (``PRAGMA data_version``), not at every lookup: the search sees the
        memo as of its start (and this process's own commits at once), its reads from
        the store as they come, as any search racing a commit does."""
        local = self._searches
        if getattr(local, "version", None) is not None:  # a search within a search
            yield
            return
        with self._lock:
            try:
                if not self._mapped:
                    self._db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
                    self._mapped = True
                local.version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise _translate(exc, self.url) from exc
        try:
            yield
        finally:
            local.version = None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[None]:
        with self._lock:
            depth = self._depth
            if durable and depth:
                raise RuntimeError("a durable transaction must be the outermost one")
            try:
                if durable:  # its commit fsyncs the WAL (NORMAL waits for a checkpoint)
                    self._db.execute("PRAGMA synchronous=FULL")
                self._db.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
            except sqlite3.Error as exc:
                self._normal_sync(durable)
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
                self._normal_sync(durable)
                raise
            self._depth -= 1
            try:
                self._db.execute("COMMIT" if depth == 0 else f"RELEASE sp{depth}")
            except sqlite3.Error as exc:
                self.notices.discard()
                raise _translate(exc, self.url) from exc
            finally:
                if depth == 0:
                    self._commits += 1  # the memo of reads no longer holds
                    self._normal_sync(durable)
            committed = self.notices.take() if depth == 0 else []
        self.notices.tell(committed)

    def _normal_sync(self, durable: bool) -> None:
        """Back to the library's usual commits after a durable transaction: a commit is
        atomic and survives the process, and reaches the disk at the next checkpoint."""
        if durable and not self._db.in_transaction:
            with suppress(sqlite3.Error):  # a closed or broken connection
                self._db.execute("PRAGMA synchronous=NORMAL")

    @contextmanager
    def _one_write(self) -> Iterator[None]:
        with self._lock:
            if self._depth:  # this thread's transaction (it holds the lock): no savepoint
                yield
                return
        with self.transaction():
            yield

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Rows:
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

    def _xr(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        self._require_tx()
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _translate(exc, self.url) from exc

    @contextmanager
    def _reads(self) -> Iterator[Query]:
        # Writers of this process wait meanwhile; other processes' commits can still land
        # between two statements, which is as much as the snapshot ever promised here.
        with self._lock:
            yield self._q

    # -- the memo of reads ------------------------------------------------------
    def _memo_table(self, kind: Hashable) -> dict[Hashable, Any] | None:
        """The answers of one kind that still hold (call under ``self._lock``): kept
        while no connection has committed — SQLite's ``data_version`` moves when another
        connection (any process) commits, ``_commits`` when this one does. None inside
        a transaction, whose reads may see its own uncommitted writes."""
        if self._depth:
            return None
        version = getattr(self._searches, "version", None)  # pinned by ``searching``
        if version is None:
            try:
                version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise _translate(exc, self.url) from exc
        stamp = (version, self._commits)
        if stamp != self._memo_stamp or self._memo_size > MEMO_ENTRIES:
            self._memo_kinds = {}
            self._memo_size = 0
            self._memo_stamp = stamp
        table = self._memo_kinds.get(kind)
        if table is None:
            table = self._memo_kinds[kind] = {}
        return table

    def _memo(self, key: Hashable, read: Callable[[], V]) -> V:
        with self._lock:
            table = self._memo_table(None)
            if table is None:
                return read()
            found = table.get(key, _ABSENT)
            if found is _ABSENT:
                found = table[key] = read()
                self._memo_size += 1
            return found  # type: ignore[no-any-return]

    def _memo_many(
        self,
        kind: Hashable,
        keys: Sequence[K],
        read: Callable[[list[K]], Mapping[K, V]],
    ) -> dict[K, V]:
        with self._lock:
            table = self._memo_table(kind)
            if table is None:
                return dict(read(list(keys)))
            out: dict[K, V] = {}
            missing: list[K] = []
            for key in keys:
                found = table.get(key, _ABSENT)
                if found is _ABSENT:
                    missing.append(key)
                elif found is not None:
                    out[key] = found
            if missing:
                got = read(missing)
                for key in missing:
                    table[key] = got.get(key)
                self._memo_size += len(missing) * (
                    _MEMO_WEIGHT.get(kind, 1) if isinstance(kind, str) else 1
                )
                out.update(got)
            return out

    def remember_seqs(self, seqs: Mapping[str, int]) -> None:
        """Chunk id -> seq, as a sidecar index told them (search/entries.py): this
        search's later reads of those chunks go by seq, the table's key. (A seq that
        changed hands since is harmless: every read keys its rows by their own id.)"""
        with self._lock:
            table = self._memo_table("chunk_seq")
            if table is not None:
                table.update(seqs)
                self._memo_size += len(seqs)

    def _known_seqs(self, chunk_ids: Sequence[str]) -> tuple[list[int], list[str]]:
        with self._lock:
            seqs = self._memo_table("chunk_seq")
        if not seqs:
            return [], list(chunk_ids)
        known: list[int] = []
        rest: list[str] = []
        for i in chunk_ids:
            seq = seqs.get(i)
            if seq is None:
                rest.append(i)
            else:
                known.append(seq)
        return known, rest

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

    # -- retrieval ---------------------------------------------------------------------
    def search_distillates(
        self, terms: Sequence[str], limit: int, filters: SearchFilters
    ) -> list[tuple[Distillate, float]]:
        if not terms or limit <= 0:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = self._filters(filters)
        rows = self._q(
            "SELECT x.document_id, x.ord, x.text, x.chunk_ids, x.mode, "
            "bm25(distillates_fts) AS rank FROM distillates_fts "
            "JOIN distillates x ON x.seq = distillates_fts.rowid "
            "JOIN documents d ON d.id = x.document_id "
            f"WHERE distillates_fts MATCH ? AND d.status = 'complete' {where} "
            "ORDER BY rank, x.seq LIMIT ?",
            [match, *params, limit],
        )
        return [(distillate_from_row(r), -float(r[5])) for r in rows]

    def _insert_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        import numpy as np

        blobs = np.ascontiguousarray(vectors, dtype=np.float32)
        self._xm(
            "INSERT OR REPLACE INTO vectors(chunk_seq, embedding) "
            "SELECT seq, ? FROM chunks WHERE id = ?",
            [(blobs[i].tobytes(), cid) for i, cid in enumerate(chunk_ids)],
        )

    def claim_job(self, owner: str, lease_seconds: float, now: float) -> Job | None:
        """Atomically take one due job: queued and due, or running with a lease that is
        over (run out, or its owner died)."""
        with self.transaction():
            over, params = self._job_leases_over(now)
            rows = self._q(
                f"SELECT {JOB_COLUMNS} FROM jobs WHERE "
                "(status = 'queued' AND next_attempt_at <= ?) OR "
                f"(status = 'running' AND {over}) "
                "ORDER BY next_attempt_at LIMIT 1",
                (now, *params),
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

    def claim_enrichment(self, now: float, lease_seconds: float, owner: str) -> str | None:
        with self.transaction():
            free, params = self._enrichment_free(now)
            rows = self._xr(
                "UPDATE documents SET enrich_lease_until = ?, enrich_lease_owner = ? "
                "WHERE id = (SELECT id FROM documents WHERE enriched_at IS NULL "
                f"AND status = 'complete' AND {free} "
                "ORDER BY added_at, id LIMIT 1) RETURNING id",
                (now + lease_seconds, owner, *params),
            )
        return str(rows[0][0]) if rows else None

    def claim_embedding(
        self, now: float, lease_seconds: float, owner: str, limit: int
    ) -> list[str]:
        with self.transaction():
            free, params = self._embedding_free(now)
            rows = self._xr(
                "UPDATE documents SET embed_lease_until = ?, embed_lease_owner = ? "
                "WHERE id IN (SELECT id FROM documents WHERE embed_pending = 1 "
                f"AND status = 'complete' AND {free} ORDER BY added_at, id LIMIT ?) "
                "RETURNING id, added_at",
                (now + lease_seconds, owner, *params, limit),
            )
        return [str(r[0]) for r in sorted(rows, key=lambda r: (r[1], r[0]))]

    def _engine_problems(self) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        result = self._q("PRAGMA integrity_check")
        if [r[0] for r in result] != ["ok"]:
            problems.extend(("database", f"sqlite: {r[0]}") for r in result)
        with self._lock:
            try:  # (rank 1: against the chunks too, not only the index's own structure)
                self._db.execute(
                    "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)"
                )
            except sqlite3.DatabaseError as exc:
                problems.append(("lexical_index", f"lexical index out of step with chunks: {exc}"))
        return problems

    def _engine_repair(self, kind: str) -> str | None:
        """FTS5's index rebuilt from the chunks (the only index of its own it can rebuild)."""
        if kind != "lexical_index":
            return None
        with self.transaction():
            self._x("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        return "rebuilt the FTS5 index from the chunks"


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
