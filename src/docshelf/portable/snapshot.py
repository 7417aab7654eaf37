"""Reading a whole store for ``docshelf export``: one read-only snapshot, a page of
documents at a time, each document as its archive line (see ``docshelf.portable``).

The export runs on a connection of its own — a deferred read transaction in
SQLite (one WAL snapshot), a REPEATABLE READ READ ONLY transaction in
PostgreSQL — so writers are never blocked and a library that changes during
the export is dumped as it was when the export began. The SQL is the store's
shared spelling, and the columns the store's own (store/rows.py), spelled for
each engine by its ``Dialect``; the adapters themselves are not used, so the
stores stay closed to this module.
"""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docshelf.errors import Unavailable
from docshelf.model import Notebook, Source, User
from docshelf.store.rows import (
    CHUNK_COLUMNS,
    DOCUMENT_COLUMNS,
    DOCUMENT_FIELDS,
    DOCUMENT_LISTS,
    JOB_COLUMNS,
    JOB_FIELDS,
    SOURCE_COLUMNS,
    USER_COLUMNS,
    decode_breaks,
    decode_inner,
    source_from_row,
    user_from_row,
)
from docshelf.store.sql.dialect import POSTGRES, SQLITE, Dialect

PAGE = 200  # documents per page
log = logging.getLogger("docshelf.portable")


class Reader:
    """Rows of a store, read through one read-only snapshot, in the shared SQL that
    ``dialect`` spells for the engine (lists are JSON text in SQLite and ``text[]``
    in PostgreSQL; vectors are float32 BLOBs or pgvector)."""

    def __init__(self, execute: Callable[[str, Sequence[Any]], list[Any]], dialect: Dialect):
        self._execute = execute
        self.dialect = dialect

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._execute(self.dialect.sql(query), params)

    def _list(self, value: Any) -> list[str]:
        return list(self.dialect.decode_list(value))

    def meta(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self._rows("SELECT key, value FROM meta")}

    def count_documents(self) -> int:
        return int(self._rows("SELECT count(*) FROM documents")[0][0])

    def users(self) -> list[tuple[User, str | None]]:
        rows = self._rows(f"SELECT {USER_COLUMNS}, token_hash FROM users ORDER BY id /*C*/ ")
        return [(user_from_row(r), r[5]) for r in rows]

    def notebooks(self) -> list[Notebook]:
        sets: dict[str, dict[str, list[str]]] = {}
        for table, column in (
            ("notebook_sources", "source_id"),
            ("notebook_documents", "document_id"),
            ("notebook_shares", "user_id"),
        ):
            for nid, value in self._rows(f"SELECT notebook_id, {column} FROM {table}"):
                sets.setdefault(nid, {}).setdefault(table, []).append(value)
        rows = self._rows(
            "SELECT id, name, user_id, filters, created_at, updated_at FROM notebooks "
            "ORDER BY id /*C*/ "
        )
        return [
            Notebook(
                id=r[0],
                name=r[1],
                user_id=r[2],
                sources=tuple(sorted(sets.get(r[0], {}).get("notebook_sources", []))),
                documents=tuple(sorted(sets.get(r[0], {}).get("notebook_documents", []))),
                filters=tuple((str(k), str(v)) for k, v in json.loads(r[3])),
                shared_with=tuple(sorted(sets.get(r[0], {}).get("notebook_shares", []))),
                created_at=float(r[4]),
                updated_at=float(r[5]),
            )
            for r in rows
        ]

    def sources(self) -> list[tuple[Source, list[dict[str, Any]]]]:
        failures: dict[str, list[dict[str, Any]]] = {}
        for path, source_id, reason, seen_at in self._rows(
            "SELECT path, source_id, reason, seen_at FROM failures ORDER BY path /*C*/ "
        ):
            failures.setdefault(source_id, []).append(
                {"path": path, "reason": reason, "seen_at": seen_at}
            )
        rows = self._rows(f"SELECT {SOURCE_COLUMNS} FROM sources ORDER BY id /*C*/ ")
        return [(source_from_row(r), failures.get(r[0], [])) for r in rows]

    def blob_hashes(self) -> Iterator[str]:
        """The bytes uploads came from: every job's blob, and every upload's document."""
        after = ""
        while True:
            rows = self._rows(
                "SELECT sha FROM (SELECT blob_sha256 AS sha FROM jobs UNION "
                "SELECT sha256 AS sha FROM documents WHERE path LIKE ?) u "
                "WHERE sha /*C*/ > ? ORDER BY sha /*C*/ LIMIT ?",
                ("upload://%", after, PAGE * 5),
            )
            for (sha,) in rows:
                yield str(sha)
            if len(rows) < PAGE * 5:
                return
            after = str(rows[-1][0])

    def documents(self) -> Iterator[dict[str, Any]]:
        """Each document as its archive line (a JSON-ready dict), a page at a time."""
        after = ""
        while True:
            rows = self._rows(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id /*C*/ > ? "
                "ORDER BY id /*C*/ LIMIT ?",
                (after, PAGE),
            )
            if not rows:
                return
            yield from self._page(rows)
            after = rows[-1][0]

    def _page(self, rows: Sequence[Any]) -> Iterator[dict[str, Any]]:
        ids = [r[0] for r in rows]
        chunks = self._grouped(
            f"SELECT document_id, {CHUNK_COLUMNS} FROM chunks WHERE {{}} "
            "ORDER BY document_id, tier, ord",
            ids,
        )
        vectors = {
            r[0]: r[1]
            for r in self._among(
                "c.document_id",
                f"SELECT c.id, {self.dialect.vector_bytes} FROM vectors v "
                "JOIN chunks c ON c.seq = v.chunk_seq WHERE {}",
                ids,
            )
        }
        files = self._grouped(
            "SELECT document_id, path, source_id, size, mtime_ns FROM files "
            "WHERE {} ORDER BY path /*C*/ ",
            ids,
        )
        access = self._grouped(
            "SELECT document_id, user_id, title, tags, added_at FROM access "
            "WHERE {} ORDER BY user_id /*C*/ ",
            ids,
        )
        links = self._grouped(
            "SELECT document_id, target, heading, alias, embed FROM links WHERE {} ORDER BY ord",
            ids,
        )
        note_names = self._grouped(
            "SELECT document_id, name, kind FROM note_names WHERE {} ORDER BY kind, name /*C*/ ",
            ids,
        )
        distillates = self._grouped(
            "SELECT document_id, text, chunk_ids, mode FROM distillates "
            "WHERE {} ORDER BY document_id, ord",
            ids,
        )
        jobs = self._grouped(f"SELECT {JOB_COLUMNS} FROM jobs WHERE {{}}", ids)
        for row in rows:
            doc_id = row[0]
            record = {
                n: (self._list(v) if n in DOCUMENT_LISTS else v)
                for n, v in zip(DOCUMENT_FIELDS, row, strict=True)
            }
            job = jobs.get(doc_id)
            yield {
                "document": record,
                "files": [
                    {"path": f[1], "source_id": f[2], "size": f[3], "mtime_ns": f[4]}
                    for f in files.get(doc_id, [])
                ],
                "chunks": [self._chunk(c[1:], vectors.get(c[1])) for c in chunks.get(doc_id, [])],
                "access": [
                    {"user_id": a[1], "title": a[2], "tags": self._list(a[3]), "added_at": a[4]}
                    for a in access.get(doc_id, [])
                ],
                "links": [
                    {"target": k[1], "heading": k[2], "alias": k[3], "embed": bool(k[4])}
                    for k in links.get(doc_id, [])
                ],
                "names": [{"name": n[1], "kind": n[2]} for n in note_names.get(doc_id, [])],
                "distillates": [
                    {"text": x[1], "chunk_ids": self._list(x[2]), "mode": x[3]}
                    for x in distillates.get(doc_id, [])
                ],
                "job": dict(zip(JOB_FIELDS, job[0], strict=True)) if job else None,
            }

    def _among(self, column: str, query: str, ids: Sequence[str]) -> list[Any]:
        """``query`` with ``{}`` where ``column`` is tested to be among ``ids`` (one page:
        few enough for one statement)."""
        condition, params = self.dialect.among(column, ids)
        return self._rows(query.replace("{}", condition), params)

    def _grouped(self, query: str, ids: Sequence[str]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for row in self._among("document_id", query, ids):
            out.setdefault(row[0], []).append(row)
        return out

    def _chunk(self, r: Sequence[Any], vector: Any) -> dict[str, Any]:
        raw = None if vector is None else self.dialect.decode_vector(vector).astype("<f4").tobytes()
        return {
            "id": r[0],
            "tier": r[2],
            "index": r[3],
            "parent_id": r[4],
            "prev_id": r[5],
            "next_id": r[6],
            "heading_path": self._list(r[7]),
            "page_start": r[8],
            "page_end": r[9],
            "start": r[10],
            "end": r[11],
            "token_count": r[12],
            "header": r[13],
            "text": r[14],
            "inner": [[i.start, list(i.heading_path)] for i in decode_inner(r[15])],
            "ocr_confidence": r[16],
            "page_breaks": [[b.start, b.page] for b in decode_breaks(r[17])],
            "vector": base64.b64encode(raw).decode("ascii") if raw is not None else None,
        }


@contextmanager
def open_reader(database_url: str) -> Iterator[Reader]:
    """A reader over one read-only snapshot of the store at ``database_url``."""
    if database_url.startswith("sqlite:///"):
        path = Path(database_url.removeprefix("sqlite:///"))
        if not path.is_file():
            raise Unavailable(f"No library at {path}")
        db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        try:
            db.execute("BEGIN")  # a deferred read transaction: one WAL snapshot for the export
            yield Reader(lambda q, p: db.execute(q, p).fetchall(), SQLITE)
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise Unavailable(f"Reading {path} failed: {exc}") from exc
        finally:
            db.close()
        return
    try:
        import psycopg
        from psycopg import IsolationLevel
    except ImportError as exc:
        raise Unavailable(
            "Exporting from PostgreSQL needs the `postgres` extra: pip install 'docshelf[postgres]'"
        ) from exc
    from docshelf.store.postgres import redact

    try:
        with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as conn:
            conn.isolation_level = IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            with conn.transaction():
                yield Reader(lambda q, p: conn.execute(q, p).fetchall(), POSTGRES)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise Unavailable(f"Reading {redact(database_url)} failed: {first}") from exc


def refresh_statistics(database_url: str) -> None:
    """``ANALYZE`` a PostgreSQL store's tables after a bulk load (best effort)."""
    import psycopg

    from docshelf.store.postgres import redact

    try:
        with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(
                "ANALYZE documents, chunks, vectors, files, access, links, note_names, jobs"
            )
    except psycopg.Error as exc:  # only the plans suffer; autovacuum will do it later
        log.warning("ANALYZE after the import failed on %s: %s", redact(database_url), exc)
