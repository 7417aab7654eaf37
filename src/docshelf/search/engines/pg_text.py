"""PostgreSQL full text: the store's own stored, weighted ``tsvector`` column with its GIN
index (store/postgres_schema.py), ranked by ``ts_rank_cd`` over the three fields every
backend weighs alike (store/lexical_fields.py)."""

from __future__ import annotations

from collections.abc import Sequence

from docshelf.search.entries import Known
from docshelf.store.base import SearchFilters, SearchReads
from docshelf.store.lexical_fields import WEIGHTS

# ts_rank_cd weights for {D, C, B, A}: the fields title (A), headings (B) and text (C).
# Normalisation 1 divides by 1 + log(length), so long snippets do not win by size alone.
RANK = f"ts_rank_cd('{WEIGHTS.ts_rank_array()}'::real[], c.fts, q.query, 1)"


class PostgresText:
    """Lexical search by PostgreSQL's full-text index: (chunk id, rank), higher is better."""

    def __init__(self, store: SearchReads) -> None:
        self._store = store

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """Each term becomes its own ``phraseto_tsquery`` (a quoted phrase, as FTS5's),
        OR-ed with ``||``: no user text is ever parsed as tsquery syntax."""
        if not terms or limit <= 0:
            return []
        query = " || ".join(["phraseto_tsquery('english', ?)"] * len(terms))
        where, params = self._store.filter_sql(filters)
        rows = self._store.read(
            f"SELECT c.id, {RANK} AS rank FROM (SELECT {query} AS query) q "
            "JOIN chunks c ON c.fts @@ q.query JOIN documents d ON d.id = c.document_id "
            f"WHERE d.status = 'complete' {where} ORDER BY rank DESC, c.seq LIMIT ?",
            [*terms, *params, limit],
        )
        return [(r[0], float(r[1])) for r in rows]
