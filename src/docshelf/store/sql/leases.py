"""The shared SQL of leases: when one is over, so that its work may be taken again.

A lease is over when its time has run out, or when its owner is a process of this host
that has died (``owners.gone``: a token names the process that took it). The second
lets the next process on the host take a killed one's work at once (issue 41). The
claims themselves differ by engine (store/sqlite.py, store/postgres.py); both read
the condition from here, in the claim's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docshelf import owners
from docshelf.store.sql.core import SQLBase


class LeasesSQL(SQLBase):
    """Leases of enrichment and of embedding (on documents) and of jobs: when they are
    over; the documents waiting for vectors."""

    def pending_embedding(self, now: float | None = None) -> int:
        free, params = self._embedding_free(now) if now is not None else ("1 = 1", [])
        rows = self._q(
            f"SELECT COUNT(*) FROM documents WHERE embed_pending = 1 AND status = 'complete' "
            f"AND {free}",
            params,
        )
        return int(rows[0][0])

    def pending_snippets(self) -> int:
        rows = self._q(
            "SELECT COUNT(*) FROM documents d JOIN chunks c ON c.document_id = d.id "
            "WHERE d.embed_pending = 1 AND c.tier = 'snippet' "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq)"
        )
        return int(rows[0][0])

    def embedding_backlog(self, user_id: str | None = None) -> tuple[int, int] | None:
        if not self._q("SELECT 1 FROM documents WHERE embed_pending = 1 LIMIT 1"):
            return None
        seen, params = "", []
        if user_id is not None:
            seen = (
                "AND EXISTS (SELECT 1 FROM access a WHERE a.document_id = d.id AND a.user_id = ?)"
            )
            params = [user_id]
        rows = self._q(
            "SELECT COUNT(*), COALESCE(SUM(embed_pending), 0) FROM documents d "
            f"WHERE status = 'complete' {seen}",
            params,
        )
        documents, pending = int(rows[0][0]), int(rows[0][1])
        return (documents, pending) if pending else None  # (another user's are not theirs)

    def renew_embedding(self, document_ids: Sequence[str], owner: str, until: float) -> None:
        if not document_ids:
            return
        among, params = self.dialect.among("id", list(document_ids))
        with self.transaction():
            self._x(
                "UPDATE documents SET embed_lease_until = ? "
                f"WHERE embed_lease_owner = ? AND {among}",
                [until, owner, *params],
            )

    def finish_embedding(self, document_ids: Sequence[str]) -> None:
        if not document_ids:
            return
        among, params = self.dialect.among("id", list(document_ids))
        with self.transaction():  # (one rewritten meanwhile has new snippets: still pending)
            self._x(
                "UPDATE documents SET embed_pending = 0, embed_lease_owner = NULL, "
                f"embed_lease_until = NULL WHERE {among} AND NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.document_id = documents.id "
                "AND c.tier = 'snippet' AND NOT EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.chunk_seq = c.seq))",
                params,
            )

    def _embedding_free(self, now: float) -> tuple[str, list[Any]]:
        """The condition that a document's embedding lease leaves it free at ``now``."""
        over, params = self._leases_over("documents", "embed_lease_owner", "embed_lease_until", now)
        return f"(embed_lease_until IS NULL OR {over})", params

    def pending_enrichment(self, now: float) -> int:
        free, params = self._enrichment_free(now)
        rows = self._q(
            "SELECT COUNT(*) FROM documents WHERE enriched_at IS NULL AND status = 'complete' "
            f"AND {free}",
            params,
        )
        return int(rows[0][0])

    def _enrichment_free(self, now: float) -> tuple[str, list[Any]]:
        """The condition (and its parameters) that a document's enrichment lease leaves it
        free to take at ``now``: none, one run out, or one whose owner has died."""
        over, params = self._leases_over(
            "documents", "enrich_lease_owner", "enrich_lease_until", now
        )
        return f"(enrich_lease_until IS NULL OR {over})", params

    def _job_leases_over(self, now: float) -> tuple[str, list[Any]]:
        """The condition that a running job's lease is over (``_leases_over``)."""
        held = "AND status = 'running'"
        return self._leases_over("jobs", "lease_owner", "lease_expires_at", now, held)

    def _leases_over(
        self, table: str, owner: str, until: str, now: float, held: str = ""
    ) -> tuple[str, list[Any]]:
        """The condition (and its parameters) that a lease of ``table`` is over at ``now``:
        its time (``until``) has run out, or its ``owner`` is a process of this host that
        has died (``owners.gone``). The owners are read from the leases still running
        (``held`` narrows them to an index): a few rows, one for each process at work."""
        rows = self._q(
            f"SELECT DISTINCT {owner} FROM {table} WHERE {owner} IS NOT NULL "
            f"AND {until} >= ? {held}",
            (now,),
        )
        dead = [str(r[0]) for r in rows if owners.gone(str(r[0]))]
        if not dead:
            return f"{until} < ?", [now]
        among, params = self.dialect.among(owner, dead)
        return f"({until} < ? OR {among})", [now, *params]
