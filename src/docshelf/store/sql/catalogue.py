"""The shared SQL of the library itself: settings, sources and their files, the
embedding cache and the counts and checks of ``status``. Documents and their chunks are
in ``documents.py``; what search engines read, in ``reads.py``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from docshelf.model import Failure, Settled, Source
from docshelf.store.base import FileRecord, StoreStats
from docshelf.store.rows import FILE_COLUMNS, SOURCE_COLUMNS, source_from_row, source_row
from docshelf.store.sql.core import SQLBase
from docshelf.wording import counted

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# A failure, and the file as it failed when its bytes decide it (migration 12).
_SETTLED_COLUMNS = "size, mtime_ns, sha256, parser, tried_at"
_FAILURE_COLUMNS = f"path, source_id, reason, seen_at, {_SETTLED_COLUMNS}"


def _settled_row(s: Settled | None) -> tuple[object, ...]:
    if s is None:
        return (None,) * 5
    return (s.size, s.mtime_ns, s.sha256, s.parser, s.tried_at)


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

    def meta_once(self, key: str, value: str) -> str:
        with self.transaction():  # the first writer's value wins, on every replica
            self._x(self.dialect.insert_ignoring("meta(key, value)", "key"), (key, value))
            return str(self._q("SELECT value FROM meta WHERE key = ?", (key,))[0][0])

    def _meta_set(self, key: str, value: str) -> None:
        """What else a setting binds, in its transaction (PostgreSQL: the vector index)."""

    def generation(self) -> int:
        value = self.get_meta("generation")
        return int(value) if value else 0

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

    def stale_citations(self) -> list[str]:
        rows = self._q(
            "SELECT d.id FROM documents d "
            "WHERE EXISTS (SELECT 1 FROM files f WHERE f.document_id = d.id) "
            "AND NOT EXISTS (SELECT 1 FROM files f WHERE f.document_id = d.id AND f.path = d.path) "
            "ORDER BY d.id"
        )
        return [r[0] for r in rows]

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
                f"INSERT INTO failures({_FAILURE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (path) DO UPDATE SET "
                + ", ".join(f"{c} = excluded.{c}" for c in _FAILURE_COLUMNS.split(", ")[1:]),
                [(f.path, source_id, f.reason, now, *_settled_row(f.settled)) for f in failures],
            )

    def settled_failures(self, source_id: str) -> dict[str, Failure]:
        rows = self._q(
            f"SELECT path, reason, {_SETTLED_COLUMNS} FROM failures "
            "WHERE source_id = ? AND parser IS NOT NULL",
            (source_id,),
        )
        return {
            r[0]: Failure(r[0], r[1], Settled(int(r[2]), int(r[3]), r[4], r[5], float(r[6])))
            for r in rows
        }

    def list_failures(self, limit: int = 100) -> list[Failure]:
        rows = self._q("SELECT path, reason FROM failures ORDER BY path /*C*/ LIMIT ?", (limit,))
        return [Failure(r[0], r[1]) for r in rows]

    def count_failures(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM failures")[0][0])

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
                "(SELECT COALESCE(SUM(pages_without_text), 0) FROM documents), "
                "(SELECT COALESCE(SUM(ocr_pages), 0) FROM documents)",
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
            ocr_pages=int(one[7]),
        )

    def check(self) -> list[str]:
        """Integrity problems (the engine's own first), or an empty list."""
        return [text for _, text in self.problems()]

    def problems(self, *, full: bool = True) -> list[tuple[str, str]]:
        """(kind, what is wrong) of each integrity problem, the engine's own first
        (``full``: with the checks that read every row of a table or index)."""
        problems = self._engine_problems() if full else []
        if orphan := self._orphan_chunks():
            problems.append(
                (
                    "orphan_chunks",
                    f"{counted(orphan, 'chunk')} {'belongs' if orphan == 1 else 'belong'} "
                    "to no document",
                )
            )
        if stale := len(self.stale_citations()):
            problems.append(
                (
                    "stale_citations",
                    f"{counted(stale, 'document')} {'is' if stale == 1 else 'are'} cited at a path "
                    "none of their files is at",
                )
            )
        if empty := len(self.snippetless_documents()):
            problems.append(
                (
                    "no_snippets",
                    f"{counted(empty, 'complete document')} {'has' if empty == 1 else 'have'} "
                    "no snippets: search cannot find them",
                )
            )
        model = self.get_meta("embedding_model")
        if full and model and model != "none":  # reads every snippet: not on each sync
            missing = self._q(
                "SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.tier = 'snippet' AND d.status = 'complete' AND d.embed_pending = 0 "
                "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq)"
            )[0][0]  # (a pending document's are on their way: ingest/vectors.py)
            if missing:
                problems.append(
                    (
                        "missing_vectors",
                        f"{counted(missing, 'snippet')} of complete documents "
                        f"{'has' if missing == 1 else 'have'} no vector",
                    )
                )
        return problems + (self._vector_problems() if full else [])

    def snippetless_documents(self) -> list[str]:
        """Complete documents with no snippet: search can never show them."""
        rows = self._q(
            "SELECT d.id FROM documents d WHERE d.status = 'complete' AND NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.document_id = d.id AND c.tier = 'snippet') "
            "ORDER BY d.id"
        )
        return [r[0] for r in rows]

    def _orphan_chunks(self) -> int:
        return int(
            self._q(
                "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM documents d WHERE d.id = c.document_id)"
            )[0][0]
        )

    def repair(self, kind: str) -> str | None:
        """Mend a problem of ``kind`` (``problems``) the store can mend by itself: what it
        did, or None when it cannot."""
        if kind != "orphan_chunks":
            return self._engine_repair(kind)
        with self.transaction():
            dropped = self._x(
                "DELETE FROM chunks WHERE NOT EXISTS "
                "(SELECT 1 FROM documents d WHERE d.id = chunks.document_id)"
            )
            if dropped:
                self._bump_generation()
        return f"dropped {counted(dropped, 'chunk')} of no document"

    def _engine_problems(self) -> list[tuple[str, str]]:
        """Problems only this engine can see, reported before the shared ones."""
        return []

    def _vector_problems(self) -> list[tuple[str, str]]:
        """Problems of the engine's vector index, reported after the shared ones."""
        return []

    def _engine_repair(self, kind: str) -> str | None:
        """Mend a problem of the engine's own (``_engine_problems``, ``_vector_problems``)."""
        return None
