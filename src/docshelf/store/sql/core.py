"""What the shared SQL stands on: the few primitives each engine's store provides
(statements, transactions, a consistent read) and the filters, written once."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from docshelf.store.base import SearchFilters
from docshelf.store.notices import CommitNotices
from docshelf.store.rows import like_prefix
from docshelf.store.sql.dialect import Dialect

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Rows = list[Any]
# A document's date, in epoch seconds: the newest change of a file holding it, or (an
# upload, which has no file) when it arrived. On the ``documents d`` alias.
DATE_SQL = (
    "COALESCE((SELECT MAX(f.mtime_ns) FROM files f WHERE f.document_id = d.id) / 1e9, d.added_at)"
)


def date_sql(user_id: str | None) -> tuple[str, list[Any]]:
    """The document's date (``DATE_SQL``) as ``user_id`` knows it, with its parameters:
    their own files' last change, else when they got the document (their upload), so
    that when another holder's file changed or their upload came is never filtered on."""
    if not user_id:
        return DATE_SQL, []
    return (
        "COALESCE((SELECT MAX(f.mtime_ns) FROM files f JOIN sources s ON s.id = f.source_id "
        "WHERE f.document_id = d.id AND s.user_id = ?) / 1e9, (SELECT a.added_at FROM access a "
        "WHERE a.document_id = d.id AND a.user_id = ?), d.added_at)",
        [user_id, user_id],
    )


Query = Callable[[str, Sequence[Any]], Rows]
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SQLBase(ABC):
    """The port between the shared SQL and one engine. Every statement given here is
    in the shared spelling (see ``dialect``); the engine translates it, and its
    driver's errors, on the way through."""

    dialect: Dialect
    url: str
    notices: CommitNotices  # who to tell, after each commit, which documents got events

    @abstractmethod
    def transaction(self, *, durable: bool = False) -> AbstractContextManager[None]:
        """Group writes atomically; nests (inner blocks become savepoints). A ``durable``
        one (the outermost only) is on disk when its commit returns, power cut or not;
        others may wait for the engine's next checkpoint (SQLite's WAL), though a crash
        of the process never loses a commit."""
        raise NotImplementedError

    def _one_write(self) -> AbstractContextManager[None]:
        """Around a method that writes with one statement: ``transaction()``, which an
        engine may skip inside an open transaction (one statement is atomic by itself,
        so a savepoint around it adds two statements and nothing else)."""
        return self.transaction()

    @abstractmethod
    def _q(self, query: str, params: Sequence[Any] = ()) -> Rows:
        """Run one read (inside a transaction: on its connection)."""
        raise NotImplementedError

    @abstractmethod
    def _x(self, query: str, params: Sequence[Any] = ()) -> int:
        """Run one write inside ``transaction()``; the number of rows it changed."""
        raise NotImplementedError

    @abstractmethod
    def _xm(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one write for each of ``rows`` inside ``transaction()``."""
        raise NotImplementedError

    @abstractmethod
    def _xr(self, query: str, params: Sequence[Any] = ()) -> Rows:
        """Run one write inside ``transaction()`` and return its rows (``RETURNING``)."""
        raise NotImplementedError

    @abstractmethod
    def _reads(self) -> AbstractContextManager[Query]:
        """A query function whose statements all see one state of the store."""
        raise NotImplementedError

    @abstractmethod
    def _insert_vectors(self, chunk_ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Store (or replace) the vectors of these snippets, inside ``transaction()``."""
        raise NotImplementedError

    # -- reads answered from memory while nothing has committed ------------------------
    # The search path asks the same small questions many times (meta, which candidates
    # are visible, which document a chunk belongs to, the document to cite). An engine
    # that can tell cheaply whether anything committed since (SQLite: its data_version)
    # keeps the answers until then; here, with no such signal, every read goes to the
    # store.
    def _memo(self, key: Hashable, read: Callable[[], V]) -> V:
        """``read()``, or what it returned for ``key`` while nothing has committed since."""
        return read()

    def _memo_table(self, kind: Hashable) -> dict[Hashable, Any] | None:
        """The answers of ``kind`` held now, to add to what a read taught by the way
        (take it before that read); None when nothing is held."""
        return None

    def _memo_many(
        self,
        kind: Hashable,
        keys: Sequence[K],
        read: Callable[[list[K]], Mapping[K, V]],
    ) -> dict[K, V]:
        """``read(keys)`` (a mapping that leaves out the keys with no answer), with the
        keys answered while nothing has committed since left out of the read."""
        return dict(read(list(keys)))

    # -- helpers over the dialect ----------------------------------------------------
    def _each_among(
        self,
        column: str,
        values: Sequence[Any],
        query: str,
        before: Sequence[Any] = (),
        after: Sequence[Any] = (),
    ) -> Rows:
        """``query``, with ``{}`` where the test that ``column`` is among ``values``
        goes (its parameters between ``before`` and ``after``), run over ``values`` a
        batch at a time (the dialect's): all the rows."""
        rows: Rows = []
        for batch in self.dialect.batches(values):
            condition, params = self.dialect.among(column, batch)
            rows += self._q(query.replace("{}", condition), [*before, *params, *after])
        return rows

    def _each_chunk(self, chunk_ids: Sequence[str], query: str) -> Rows:
        """``query`` (``{}`` where the test on the chunks ``c`` goes) for the chunks
        ``chunk_ids``: by seq for those whose seq the memo of reads holds (the visibility
        checks put it there: one lookup of the table's key instead of two, through the
        index of ids and then the key), by id for the rest."""
        known, rest = self._known_seqs(chunk_ids)
        rows = self._each_among("c.seq", known, query) if known else []
        return rows + self._each_among("c.id", rest, query) if rest else rows

    def _known_seqs(self, chunk_ids: Sequence[str]) -> tuple[list[int], list[str]]:
        """(the seqs of the chunks whose seq the memo of reads holds, the other ids)."""
        return [], list(chunk_ids)

    def _bump_generation(self) -> None:
        """Count one more change of what search sees (meta ``generation``), inside the
        transaction that makes it: derived indexes and caches compare against it."""
        self._x(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)"
        )

    def _filters(self, f: SearchFilters) -> tuple[str, list[Any]]:
        """SQL conditions on the ``documents d`` alias for the given filters (each
        with a leading ``AND``), and their parameters."""
        d = self.dialect
        parts: list[str] = []
        params: list[Any] = []
        if f.user_id:
            parts.append(
                "EXISTS (SELECT 1 FROM access a WHERE a.document_id = d.id AND a.user_id = ?)"
            )
            params.append(f.user_id)
        if f.source_id and f.user_id:  # a source of the caller's, holding the document
            parts.append(f"EXISTS ({held_by()} AND pf.source_id = ?)")
            params += [f.user_id, f.user_id, f.source_id]
        elif f.source_id:
            parts.append("d.source_id = ?")
            params.append(f.source_id)
        if f.path_prefix and f.user_id:
            condition, values = _own_paths(d, f.user_id, f.path_prefix)
            parts.append(condition)
            params += values
        elif f.path_prefix:
            column = "d.path" if f.path_prefix.startswith("/") else "d.rel_path"
            parts.append(d.like_prefix(column))
            params.append(like_prefix(f.path_prefix))
        if f.file_type:
            parts.append("d.file_type = ?")
            params.append(f.file_type)
        if f.document_type:
            parts.append("d.document_type = ?")
            params.append(f.document_type)
        for tag in f.tags:
            parts.append(
                f"EXISTS (SELECT 1 FROM {d.elements('d.tags')} WHERE lower(value) = lower(?))"
            )
            params.append(tag)
        for group in f.concept_groups:
            condition, values = d.overlaps("d.concept_ids", group)
            parts.append(condition)
            params.extend(values)
        date, date_params = date_sql(f.user_id)
        if f.dated_from is not None:
            parts.append(f"{date} >= ?")
            params += [*date_params, f.dated_from]
        if f.dated_before is not None:
            parts.append(f"{date} < ?")
            params += [*date_params, f.dated_before]
        if f.document_ids:
            condition, values = d.among("d.id", f.document_ids)
            parts.append(condition)
            params.extend(values)
        if f.notebook:
            parts.append(IN_NOTEBOOK)
            params += [f.notebook[0]] * 3
        return "".join(f" AND {p}" for p in parts), params


# A document ``d`` a notebook (the three parameters: its id) holds: one it names, one a
# file of its sources holds, or one that came by a source of its (an upload's).
IN_NOTEBOOK = (
    "(EXISTS (SELECT 1 FROM notebook_documents nd WHERE nd.notebook_id = ? "
    "AND nd.document_id = d.id) "
    "OR EXISTS (SELECT 1 FROM notebook_sources ns JOIN files nf ON nf.source_id = ns.source_id "
    "WHERE ns.notebook_id = ? AND nf.document_id = d.id) "
    "OR EXISTS (SELECT 1 FROM notebook_sources nb WHERE nb.notebook_id = ? "
    "AND nb.source_id = d.source_id))"
)


def held_by(pf: str = "pf", ps: str = "ps") -> str:
    """The files ``pf`` (of sources ``ps``) holding the document ``d`` that a user (the
    two parameters) is told of (``accounts.access.files_seen``): in folders they added,
    or that no one did when they gave the bytes no name of their own."""
    unnamed = (
        "NOT EXISTS (SELECT 1 FROM access pn WHERE pn.document_id = d.id "
        "AND pn.user_id = ? AND pn.title IS NOT NULL)"
    )
    return (
        f"SELECT 1 FROM files {pf} JOIN sources {ps} ON {ps}.id = {pf}.source_id "
        f"WHERE {pf}.document_id = d.id "
        f"AND ({ps}.user_id = ? OR ({ps}.user_id IS NULL AND {unnamed}))"
    )


def _own_paths(d: Dialect, user_id: str, prefix: str) -> tuple[str, list[Any]]:
    """A path prefix matched against the paths ``user_id`` is shown (``accounts.access``):
    their files in folders they added (or no one did, when they gave the bytes no name
    of their own), and the names they uploaded under; never the shared record's path,
    which may be another user's (a prefix at a time, it would spell out their folders)."""
    pattern = like_prefix(prefix)
    held = held_by()
    if prefix.startswith("/"):
        return f"EXISTS ({held} AND {d.like_prefix('pf.path')})", [user_id, user_id, pattern]
    below = "substr(pf.path, length(ps.path) + 2)"  # a folder's file, below the folder
    named = (
        "EXISTS (SELECT 1 FROM access pa WHERE pa.document_id = d.id AND pa.user_id = ? "
        f"AND {d.like_prefix('pa.title')})"
    )
    return (
        f"(EXISTS ({held} AND ((ps.kind = 'folder' AND {d.like_prefix(below)}) "
        f"OR (ps.kind = 'file' AND d.source_id = ps.id AND {d.like_prefix('d.rel_path')}))) "
        f"OR {named})",
        [user_id, user_id, pattern, pattern, user_id, pattern],
    )
