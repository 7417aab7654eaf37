"""The shared SQL of what is kept about the documents: enrichment and its caches,
reindex staging, links between notes, users and their access, jobs and events."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from docshelf.model import Distillate, Enrichment, Event, Job, User
from docshelf.parse.links import WikiLink
from docshelf.store.base import AccessLink, NewEvent
from docshelf.store.rows import (
    DISTILLATE_COLUMNS,
    JOB_COLUMNS,
    JOB_FIELDS,
    USER_COLUMNS,
    distillate_from_row,
    job_from_row,
    job_row,
    user_from_row,
)
from docshelf.store.sql.core import SQLBase


class RecordsSQL(SQLBase):
    # -- enrichment ------------------------------------------------------------------------
    def put_enrichment(self, document_id: str, enrichment: Enrichment, at: float) -> bool:
        e = enrichment
        encode = self.dialect.encode_list
        tags = ("tags = ?, ", [encode(e.tags)]) if e.tags is not None else ("", [])
        with self.transaction():
            changed = self._x(
                "UPDATE documents SET summary = ?, document_type = ?, category = ?, "
                "concept_ids = ?, primary_concept_id = ?, concept_source = ?, "
                f"taxonomy_version = ?, enriched_at = ?, enrichment_mode = ?, {tags[0]}"
                "enrich_lease_until = NULL, enrich_lease_owner = NULL WHERE id = ?",
                (
                    e.summary,
                    e.document_type,
                    e.category,
                    encode(e.concept_ids),
                    e.concept_ids[0] if e.concept_ids else None,
                    e.concept_source,
                    e.taxonomy_version,
                    at,
                    e.mode,
                    *tags[1],
                    document_id,
                ),
            )
            if not changed:
                return False
            self._bump_generation()  # its tags, type and concepts are what filters read
            if e.claims is None:  # a manifest's: the distillates stay
                return True
            self._x("DELETE FROM distillates WHERE document_id = ?", (document_id,))
            self._xm(
                f"INSERT INTO distillates({DISTILLATE_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                [
                    (d.document_id, d.n, d.text, encode(d.chunk_ids), d.mode)
                    for d in e.distillates(document_id)
                ],
            )
        return True

    def enrichment_failed(self, document_id: str, at: float) -> None:
        with self.transaction():
            self._x(
                "UPDATE documents SET enriched_at = ?, enrichment_mode = 'failed', "
                "enrich_lease_until = NULL, enrich_lease_owner = NULL WHERE id = ?",
                (at, document_id),
            )

    def reset_enrichment(self, document_ids: Sequence[str] | None = None) -> int:
        reset = (
            "UPDATE documents SET enriched_at = NULL, enrich_lease_until = NULL, "
            "enrich_lease_owner = NULL WHERE "
        )
        with self.transaction():
            if document_ids is None:
                return self._x(reset + "enriched_at IS NOT NULL")
            n = 0
            for batch in self.dialect.batches(list(document_ids)):
                condition, params = self.dialect.among("id", batch)
                n += self._x(reset + condition, params)
            return n

    def distillates_of(self, document_id: str) -> list[Distillate]:
        rows = self._q(
            f"SELECT {DISTILLATE_COLUMNS} FROM distillates WHERE document_id = ? ORDER BY ord",
            (document_id,),
        )
        return [distillate_from_row(r, self.dialect.decode_list) for r in rows]

    def cached_enrichment(self, sha256: str, locale: str, producer: str) -> str | None:
        rows = self._q(
            "SELECT data FROM enrichment_cache WHERE sha256 = ? AND locale = ? AND producer = ?",
            (sha256, locale, producer),
        )
        return str(rows[0][0]) if rows else None

    def cache_enrichment(self, sha256: str, locale: str, producer: str, data: str) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO enrichment_cache(sha256, locale, producer, data, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (sha256, locale, producer) "
                "DO UPDATE SET data = excluded.data, created_at = excluded.created_at",
                (sha256, locale, producer, data, time.time()),
            )

    # -- reindex staging ---------------------------------------------------------------------
    def stage_reindex(
        self, document_id: str, target: str, data: str, vectors: bytes | None
    ) -> None:
        with self.transaction():
            self._x("DELETE FROM reindex_staging WHERE document_id = ?", (document_id,))
            self._x(
                "INSERT INTO reindex_staging(document_id, target, data, vectors) "
                "VALUES (?, ?, ?, ?)",
                (document_id, target, data, vectors),
            )

    def staged_reindex(self, target: str) -> set[str]:
        rows = self._q("SELECT document_id FROM reindex_staging WHERE target = ?", (target,))
        return {str(r[0]) for r in rows}

    def take_staged(self, document_id: str) -> tuple[str, bytes | None] | None:
        rows = self._q(
            "SELECT data, vectors FROM reindex_staging WHERE document_id = ?", (document_id,)
        )
        if not rows:
            return None
        with self.transaction():
            self._x("DELETE FROM reindex_staging WHERE document_id = ?", (document_id,))
        return str(rows[0][0]), (bytes(rows[0][1]) if rows[0][1] is not None else None)

    def clear_reindex(self, keep_target: str | None = None) -> int:
        with self.transaction():
            if keep_target is None:
                return self._x("DELETE FROM reindex_staging")
            return self._x("DELETE FROM reindex_staging WHERE target <> ?", (keep_target,))

    # -- links between notes ---------------------------------------------------------------
    def put_links(self, document_id: str, links: Sequence[WikiLink]) -> None:
        with self.transaction():
            self._x("DELETE FROM links WHERE document_id = ?", (document_id,))
            self._xm(
                "INSERT INTO links(document_id, ord, target, heading, alias, embed) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (document_id, n, k.target, k.heading, k.alias, bool(k.embed))
                    for n, k in enumerate(links)
                ],
            )

    def put_names(self, document_id: str, names: Sequence[str], kind: str) -> None:
        """Replace the document's names of one kind (``path`` or ``title``)."""
        with self.transaction():
            self._x(
                "DELETE FROM note_names WHERE document_id = ? AND kind = ?", (document_id, kind)
            )
            self._xm(
                self.dialect.insert_ignoring(
                    "note_names(document_id, name, kind)", "document_id, name"
                ),
                [(document_id, name, kind) for name in names],
            )

    def links_of(self, document_id: str) -> list[tuple[WikiLink, list[str]]]:
        """Each link of the document with the ids of the documents its name resolves to."""
        rows = self._q(
            "SELECT l.ord, l.target, l.heading, l.alias, l.embed, n.document_id FROM links l "
            "LEFT JOIN note_names n ON n.name = l.target WHERE l.document_id = ? ORDER BY l.ord",
            (document_id,),
        )
        links: dict[int, tuple[WikiLink, set[str]]] = {}
        for r in rows:
            link = links.setdefault(r[0], (WikiLink(r[1], r[2], r[3], bool(r[4])), set()))
            if r[5] is not None:
                link[1].add(r[5])
        return [(link, sorted(ids)) for link, ids in links.values()]

    def backlinks(self, document_id: str) -> list[str]:
        """Ids of the documents that link to any name of this one."""
        rows = self._q(
            "SELECT DISTINCT l.document_id /*C*/ FROM links l JOIN note_names n "
            "ON n.name = l.target WHERE n.document_id = ? AND l.document_id <> ? ORDER BY 1",
            (document_id, document_id),
        )
        return [r[0] for r in rows]

    # -- users and access ---------------------------------------------------------------------
    def put_user(self, user: User, token_hash: str | None) -> None:
        with self.transaction():
            self._x(
                "INSERT INTO users(id, name, token_hash, is_admin, created_at, revoked_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "token_hash = excluded.token_hash, revoked_at = excluded.revoked_at",
                (user.id, user.name, token_hash, user.is_admin, user.created_at, user.revoked_at),
            )

    def get_user(self, user_id_or_name: str) -> User | None:
        rows = self._q(  # an id before a name, should one user's name be another's id
            f"SELECT {USER_COLUMNS} FROM users WHERE id = ? OR name = ? "
            "ORDER BY (id = ?) DESC LIMIT 1",
            (user_id_or_name, user_id_or_name, user_id_or_name),
        )
        return user_from_row(rows[0]) if rows else None

    def users_for_tokens(self, token_hashes: Sequence[str]) -> dict[str, User]:
        rows = self._each_among(
            "token_hash",
            list(dict.fromkeys(token_hashes)),
            f"SELECT token_hash, {USER_COLUMNS} FROM users WHERE revoked_at IS NULL AND {{}}",
        )
        return {r[0]: user_from_row(r[1:]) for r in rows}

    def has_token(self, user_id: str) -> bool:
        return bool(
            self._q("SELECT 1 FROM users WHERE id = ? AND token_hash IS NOT NULL", (user_id,))
        )

    def list_users(self) -> list[User]:
        rows = self._q(f"SELECT {USER_COLUMNS} FROM users ORDER BY name /*C*/")
        return [user_from_row(r) for r in rows]

    def grant(self, user_id: str, document_id: str, title: str | None = None) -> bool:
        """Give a user access to a document; False if they had it already."""
        with self._one_write():
            added = self._x(
                self.dialect.insert_ignoring(
                    "access(user_id, document_id, title, added_at)", "user_id, document_id"
                ),
                (user_id, document_id, title, time.time()),
            )
        return added > 0

    def access_titles(self, user_id: str, document_ids: Sequence[str]) -> dict[str, str]:
        rows = self._each_among(
            "document_id",
            list(dict.fromkeys(document_ids)),
            "SELECT document_id, title FROM access WHERE user_id = ? AND title IS NOT NULL AND {}",
            [user_id],
        )
        return {r[0]: r[1] for r in rows}

    def access_links(self, user_id: str, document_ids: Sequence[str]) -> dict[str, AccessLink]:
        rows = self._each_among(
            "document_id",
            list(dict.fromkeys(document_ids)),
            "SELECT document_id, title, added_at FROM access WHERE user_id = ? AND {}",
            [user_id],
        )
        return {r[0]: AccessLink(r[1], float(r[2])) for r in rows}

    def revoke_access(self, user_id: str, document_id: str) -> bool:
        with self.transaction():
            removed = self._x(
                "DELETE FROM access WHERE user_id = ? AND document_id = ?", (user_id, document_id)
            )
        return removed > 0

    def has_access(self, user_id: str, document_id: str) -> bool:
        return bool(
            self._q(
                "SELECT 1 FROM access WHERE user_id = ? AND document_id = ?",
                (user_id, document_id),
            )
        )

    def access_count(self, document_id: str) -> int:
        return int(
            self._q("SELECT COUNT(*) FROM access WHERE document_id = ?", (document_id,))[0][0]
        )

    # -- jobs -----------------------------------------------------------------------------------
    def put_job(self, job: Job) -> None:
        """Insert or replace a job; replacing drops its payload."""
        with self.transaction():
            self._x("DELETE FROM jobs WHERE document_id = ?", (job.document_id,))
            self._x(
                f"INSERT INTO jobs({JOB_COLUMNS}) VALUES ({', '.join('?' * len(JOB_FIELDS))})",
                job_row(job),
            )

    def get_job(self, document_id: str) -> Job | None:
        rows = self._q(f"SELECT {JOB_COLUMNS} FROM jobs WHERE document_id = ?", (document_id,))
        return job_from_row(rows[0]) if rows else None

    def renew_lease(self, document_id: str, owner: str, until: float) -> bool:
        with self.transaction():
            renewed = self._x(
                "UPDATE jobs SET lease_expires_at = ? WHERE document_id = ? AND lease_owner = ? "
                "AND status = 'running'",
                (until, document_id, owner),
            )
        return renewed > 0

    def update_job(self, document_id: str, **fields: Any) -> None:
        if not fields:
            return
        fields["updated_at"] = time.time()
        sets = ", ".join(f"{_identifier(name)} = ?" for name in fields)
        with self.transaction():
            self._x(
                f"UPDATE jobs SET {sets} WHERE document_id = ?", [*fields.values(), document_id]
            )

    def job_counts(self) -> dict[str, int]:
        rows = self._q("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        return {str(r[0]): int(r[1]) for r in rows}

    def oldest_unfinished_jobs(self) -> dict[str, float]:
        rows = self._q(
            "SELECT stage, MIN(updated_at) FROM jobs WHERE status IN ('queued', 'running') "
            "GROUP BY stage"
        )
        return {str(r[0]): float(r[1]) for r in rows}

    def put_payload(self, document_id: str, stage: str, payload: bytes) -> None:
        with self._one_write():
            self._x(
                "INSERT INTO job_payloads(document_id, stage, payload) VALUES (?, ?, ?) "
                "ON CONFLICT (document_id) DO UPDATE SET stage = excluded.stage, "
                "payload = excluded.payload",
                (document_id, stage, payload),
            )

    def get_payload(self, document_id: str, stage: str) -> bytes | None:
        rows = self._q(
            "SELECT payload FROM job_payloads WHERE document_id = ? AND stage = ?",
            (document_id, stage),
        )
        return bytes(rows[0][0]) if rows else None

    def delete_payload(self, document_id: str, stage: str | None = None) -> None:
        with self._one_write():
            if stage is None:
                self._x("DELETE FROM job_payloads WHERE document_id = ?", (document_id,))
            else:
                self._x(
                    "DELETE FROM job_payloads WHERE document_id = ? AND stage = ?",
                    (document_id, stage),
                )

    # -- events -----------------------------------------------------------------------------------
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
        with self._one_write():
            rows = self._xr(
                "INSERT INTO events(document_id, user_id, kind, stage, progress_pct, message, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq",
                (document_id, user_id, kind, stage, progress_pct, message, time.time()),
            )
            self.notices.note(document_id)
        return int(rows[0][0])

    def add_events(self, events: Sequence[NewEvent]) -> None:
        now = time.time()
        with self._one_write():
            self._xm(
                "INSERT INTO events(document_id, user_id, kind, stage, progress_pct, message, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (e.document_id, e.user_id, e.kind, e.stage, e.progress_pct, e.message, now)
                    for e in events
                ],
            )
            for e in events:
                self.notices.note(e.document_id)

    def events_after(
        self,
        after: int,
        *,
        document_id: str | None = None,
        kinds: str | None = None,
        user_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Event]:
        where = ["seq > ?"]
        params: list[Any] = [after]
        if document_id is not None:
            where.append("document_id = ?")
            params.append(document_id)
        if kinds is not None:
            where.append(f"kind {self.dialect.like} ?")
            params.append(kinds)
        since = (  # the user's access to the event's document began before the event
            "EXISTS (SELECT 1 FROM access a WHERE a.document_id = events.document_id "
            "AND a.user_id = ? AND a.added_at <= events.created_at)"
        )
        if user_id is not None and document_id is not None:
            # one document's stream as the user sees it: theirs since their access began
            # (not what an earlier access of theirs to the same bytes was told)
            where.append(f"(user_id IS NULL OR user_id = ?) AND {since}")
            params += [user_id, user_id]
        elif user_id is not None:  # addressed to them (a removal outlives the access)
            where.append(f"(user_id = ? OR (user_id IS NULL AND {since}))")
            params += [user_id, user_id]
        rows = self._q(
            "SELECT seq, document_id, kind, stage, progress_pct, message, created_at, user_id "
            f"FROM events WHERE {' AND '.join(where)} ORDER BY seq LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [Event(*r) for r in rows]


def _identifier(name: str) -> str:
    """A column name quoted for SQL (both engines quote with double quotes)."""
    return '"' + name.replace('"', '""') + '"'
