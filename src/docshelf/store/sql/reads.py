"""What search engines read from the store: which documents pass the filters, the
places and texts of candidate chunks, and vectors (a few, or a snapshot of them all).
Written once over the dialect; the lexical and vector searches each engine runs itself
are in its store (store/sqlite.py, store/postgres.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docshelf.store.base import ChunkPlace, SearchFilters, VectorSnapshot
from docshelf.store.rows import inner_paths
from docshelf.store.sql.core import SQLBase

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# What ``chunk_places`` reads of each chunk (``_place`` turns it into a ChunkPlace).
PLACE_COLUMNS = (
    "c.document_id, c.parent_id, c.heading_path, c.page_start, c.ord, "
    "CASE WHEN c.ord = 0 THEN c.header END, c.inner_headings"
)


# A heading path as stored (JSON text in SQLite, an array in PostgreSQL) -> decoded.
_PATHS: dict[Any, tuple[str, ...]] = {}


class SearchReadsSQL(SQLBase):
    """What search engines read from the store."""

    def read(
        self, statement: str, params: Sequence[Any] = (), settings: Sequence[tuple[str, str]] = ()
    ) -> list[Any]:
        """The rows of one read statement in the shared spelling (``?`` marks), for an
        engine over the store's own indexes; ``settings``: the engine's own, set for that
        statement alone (PostgreSQL's; SQLite has none)."""
        if settings:
            raise ValueError(f"{self.dialect.name} takes no settings for a read")
        return self._q(statement, params)

    def filter_sql(self, filters: SearchFilters) -> tuple[str, list[Any]]:
        """SQL conditions on the ``documents d`` alias for ``filters`` (each with a
        leading ``AND``), and their parameters."""
        return self._filters(filters)

    def documents_matching(self, filters: SearchFilters) -> set[str]:
        where, params = self._filters(filters)
        rows = self._q(f"SELECT d.id FROM documents d WHERE 1 = 1 {where}", params)
        return {r[0] for r in rows}

    def chunk_places(self, chunk_ids: Sequence[str]) -> dict[str, ChunkPlace]:
        def read(ids: list[str]) -> dict[str, ChunkPlace]:
            rows = self._each_chunk(ids, f"SELECT c.id, {PLACE_COLUMNS} FROM chunks c WHERE {{}}")
            return {r[0]: self._place(r, 1) for r in rows}

        return self._memo_many("chunk_place", list(dict.fromkeys(chunk_ids)), read)

    def repeated(self, keys: Sequence[str], least: int) -> set[str]:
        out: set[str] = set()
        for batch in self.dialect.batches(sorted(set(keys))):
            among, params = self.dialect.among("key", batch)
            rows = self._q(
                f"SELECT key FROM repeats WHERE {among} GROUP BY key HAVING COUNT(*) >= ?",
                [*params, least],
            )
            out.update(r[0] for r in rows)
        return out

    def chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        rows = self._each_chunk(chunk_ids, "SELECT c.id, c.text FROM chunks c WHERE {}")
        return dict(rows)

    def _place(self, r: Sequence[Any], at: int) -> ChunkPlace:
        """A ``ChunkPlace`` from ``PLACE_COLUMNS`` starting at column ``at`` (heading
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
