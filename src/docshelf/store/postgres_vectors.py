"""The PostgreSQL store's vector index: pgvector's HNSW index bound to the library's
embedding size, and what ``status --check`` finds wrong with it and mends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg import sql

from docshelf.errors import Conflict, InvalidInput
from docshelf.store.sql import Rows, SQLStore
from docshelf.wording import counted

_HNSW_MAX_DIM = 2000  # pgvector's HNSW limit for the vector type


class VectorIndexSQL(SQLStore):
    """The HNSW index's part of ``PostgresStore`` (which runs composed statements)."""

    if TYPE_CHECKING:

        def _q(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> Rows: ...
        def _x(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> int: ...

    def _meta_set(self, key: str, value: str) -> None:
        """Setting ``embedding_dim`` also (re)creates the HNSW index for that dimension."""
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
            "SELECT vector_dims(embedding) FROM vectors WHERE vector_dims(embedding) <> ? LIMIT 1",
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

    def _vector_problems(self) -> list[tuple[str, str]]:
        """Mis-sized vectors, and a missing or invalid vector index."""
        problems: list[tuple[str, str]] = []
        dim = int(self.get_meta("embedding_dim") or 0)
        if dim:
            wrong = self._q(
                "SELECT count(*) FROM vectors WHERE vector_dims(embedding) <> ?", (dim,)
            )[0][0]
            if wrong:
                problems.append(
                    (
                        "vector_size",
                        f"{counted(wrong, 'vector')} {'is' if wrong == 1 else 'are'} "
                        f"not {dim}-dimensional",
                    )
                )
            if dim <= _HNSW_MAX_DIM and f"vectors_hnsw_{dim}" not in self._hnsw_indexes():
                problems.append(
                    (
                        "vector_index",
                        f"the HNSW index for {dim}-dimensional vectors is missing "
                        f"(set_meta('embedding_dim', '{dim}') creates it)",
                    )
                )
        problems.extend(
            ("invalid_index", f"index {name} is invalid; rebuild it with REINDEX")
            for name in self._invalid_indexes()
        )
        return problems

    def _engine_repair(self, kind: str) -> str | None:
        """The HNSW index created again, or the invalid indexes rebuilt (REINDEX)."""
        if kind == "vector_index":
            dim = self.get_meta("embedding_dim")
            if not dim:
                return None
            with self.transaction():
                self._bind_vector_index(int(dim))
            return f"created the HNSW index for {dim}-dimensional vectors"
        if kind == "invalid_index":
            names = self._invalid_indexes()
            with self.transaction():
                for name in names:
                    self._x(sql.SQL("REINDEX INDEX {}").format(sql.Identifier(name)))
            return f"rebuilt {', '.join(names)} (REINDEX)" if names else None
        return None

    def _hnsw_indexes(self) -> set[str]:
        return {r[0] for r in self._q(_HNSW_INDEXES_SQL)}

    def _invalid_indexes(self) -> list[str]:
        return [
            r[0]
            for r in self._q(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid "
                "ORDER BY c.relname"
            )
        ]


_HNSW_INDEXES_SQL = (
    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
    "AND tablename = 'vectors' AND indexname LIKE 'vectors\\_hnsw\\_%'"
)
_DIM_CHECKS_SQL = (
    "SELECT conname FROM pg_constraint WHERE conrelid = 'vectors'::regclass "
    "AND conname LIKE 'vectors\\_dim\\_%'"
)
