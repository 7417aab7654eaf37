"""Which engine answers lexical and vector recall, chosen once per store.

- lexical: the store's own full-text search (PostgreSQL tsvector, SQLite FTS5), or
  on SQLite the tantivy sidecar (``lexical.py``), which answers from FTS5 itself until
  the library is large and the index has caught up;
- vector: the store's own ANN index (PostgreSQL pgvector HNSW, filters in SQL), or on
  SQLite the usearch sidecar (``ann.py``: exact below its threshold), or else an exact
  scan of the in-memory matrix masked by the filters (``vector.py``).

The choice follows what the store can do (its protocols), never its class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from docshelf.search.engines.exact import ExactVectorIndex
from docshelf.search.engines.sidecar import SidecarStore
from docshelf.search.engines.tantivy import SidecarLexicalIndex
from docshelf.search.engines.usearch import SidecarVectorIndex
from docshelf.search.entries import Known
from docshelf.store.base import NativeVectorSearch, SearchFilters, Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.config import Settings


class LexicalEngine(Protocol):
    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk_id, BM25-like score), best first, filters honoured. An engine that
        knows each hit's document and heading key (the sidecars' entries) puts them in
        ``known``, so search need not read them from the store."""
        ...


@runtime_checkable
class Verbatim(Protocol):
    """A lexical engine that can rule out candidates for the exact-match rule's quoted
    line (the tantivy sidecar): the seqs of the snippets whose text may hold every one
    of ``words`` (unless it is ``entries.wide``), or None when it cannot tell."""

    def may_hold(self, words: Sequence[str], limit: int) -> set[int] | None: ...


class VectorEngine(Protocol):
    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        """(chunk_id, cosine similarity), best first, filters honoured (``known``: as
        for ``LexicalEngine``; ``near``: the query lies among snippets just found, the
        feedback pass's, so an approximate index may search less deeply)."""
        ...


class StoreLexicalSearch:
    """The store's own full-text search."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        return self._store.lexical_search(list(terms), limit, filters)


class NativeVectorEngine:
    """The store's own ANN index (PostgreSQL: pgvector HNSW, filters in SQL)."""

    def __init__(self, store: NativeVectorSearch) -> None:
        self._store = store

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        return self._store.vector_search(query, limit, filters)


class ExactVectorSearch:
    """An exact scan of the store's vectors, masked by the documents the filters allow."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._index = ExactVectorIndex(store)

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        allowed = None if filters.empty else self._store.documents_matching(filters)
        return self._index.search(query, limit, allowed)


@dataclass(frozen=True)
class Engines:
    """The engines that answer recall, and the sidecar indexes among them (for upkeep
    and status; None where the store answers by itself)."""

    lexical: LexicalEngine
    vector: VectorEngine
    lexical_sidecar: SidecarLexicalIndex | None = None
    vector_sidecar: SidecarVectorIndex | None = None


def engines_for(store: Store, settings: Settings) -> Engines:
    """The lexical and vector engines for ``store``: its native ones where it has them,
    the sidecar indexes where it feeds them (SQLite), an exact scan otherwise."""
    lexical_sidecar: SidecarLexicalIndex | None = None
    vector_sidecar: SidecarVectorIndex | None = None
    if isinstance(store, SidecarStore):
        lexical_sidecar = SidecarLexicalIndex(store, settings.lexical_threshold)
        vector_sidecar = SidecarVectorIndex(store, settings.ann_threshold)
    vector: VectorEngine
    if isinstance(store, NativeVectorSearch):
        vector = NativeVectorEngine(store)
    elif vector_sidecar is not None:
        vector = vector_sidecar
    else:
        vector = ExactVectorSearch(store)
    lexical: LexicalEngine = lexical_sidecar or StoreLexicalSearch(store)
    return Engines(lexical, vector, lexical_sidecar, vector_sidecar)
