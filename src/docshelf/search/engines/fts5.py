"""FTS5: the SQLite store's own full-text index over snippets (kept in the store's
transactions by its triggers, store/sqlite_schema.py), searched by BM25 over the three
fields every backend weighs alike (store/lexical_fields.py)."""

from __future__ import annotations

from collections.abc import Sequence

from docshelf.search.entries import Known
from docshelf.store.base import SearchFilters, SearchReads
from docshelf.store.lexical_fields import WEIGHTS

# bm25() weights of the index's columns (title, headings, text); bench/fusion.py varies them.
BM25_WEIGHTS = (WEIGHTS.title, WEIGHTS.headings, WEIGHTS.body)


def bm25() -> str:
    """FTS5's weighted bm25() over the fields (read at each query, so bench/ can vary it)."""
    return "bm25(chunks_fts, " + ", ".join(f"{w:g}" for w in BM25_WEIGHTS) + ")"


class Fts5:
    """Lexical search by SQLite's FTS5 index: (chunk id, score), higher is better."""

    def __init__(self, store: SearchReads) -> None:
        self._store = store

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        if not terms:
            return []
        read = self._store.read
        # Every term is quoted, so no user input is ever parsed as FTS5 syntax.
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        if filters.empty:
            # Rank inside the FTS index alone and join only the best 2 * limit, not
            # every match (common terms match much of the library). If at least
            # `limit` of them are visible, they are exactly the visible top `limit`.
            best = read(
                "SELECT c.id, r.rank FROM (SELECT rowid, "
                f"{bm25()} AS rank "
                "FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?) r "
                "JOIN chunks c ON c.seq = r.rowid JOIN documents d ON d.id = c.document_id "
                "WHERE d.status = 'complete' ORDER BY r.rank",
                [match, 2 * limit],
            )
            if len(best) >= limit:
                return [(r[0], -float(r[1])) for r in best[:limit]]
        where, params = self._store.filter_sql(filters)
        rows = read(
            f"SELECT c.id, {bm25()} AS rank "
            "FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid "
            "JOIN documents d ON d.id = c.document_id "
            f"WHERE chunks_fts MATCH ? AND d.status = 'complete' {where} ORDER BY rank LIMIT ?",
            [match, *params, limit],
        )
        # FTS5's bm25() is negative (lower is better); flip it so higher is better.
        return [(r[0], -float(r[1])) for r in rows]
