"""The engines that answer recall, behind one narrow interface each, one file an engine:

=========================  =========================================================
lexical                    ``search(terms, limit, filters, known)``
``fts5.py``                SQLite's FTS5 index (the store's own)
``pg_text.py``             PostgreSQL's ``tsvector`` index (the store's own)
``tantivy.py``             a tantivy index beside a SQLite store (a sidecar; FTS5
                           answers until the library is large and it has caught up)
vector                     ``search(query, limit, filters, known, near)``
``pgvector.py``            PostgreSQL's HNSW index (the store's own)
``usearch.py``             a usearch graph beside a SQLite store (a sidecar; the exact
                           scan answers below its threshold)
``exact.py``               an exact scan of every vector, masked by the filters
``external.py``            an engine of the user's own beside a SQLite store
                           (``DOCSHELF_VECTOR_URL``): ``qdrant.py``, ``milvus.py``,
                           ``chroma.py``, one ``VectorBackend`` each
                           (``backend.py``)
=========================  =========================================================

Each answers (chunk id, score), best first, filters honoured; an engine that knows each
hit's document and heading key (the sidecars' entries, ``search/entries.py``) puts
them in ``known``, so search need not read them from the store. ``engines_for``
chooses once per store, by the store's URL scheme. Adding an engine is one file here
plus its line in ``engines_for`` and its contract test (tests/test_engines.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlparse

from docshelf.search.entries import Known
from docshelf.store.base import SearchFilters, SearchStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.config import Settings
    from docshelf.search.engines.external import ExternalVectorIndex
    from docshelf.search.engines.sidecar import SidecarStore
    from docshelf.search.engines.tantivy import SidecarLexicalIndex
    from docshelf.search.engines.usearch import SidecarVectorIndex

    VectorSidecar = SidecarVectorIndex | ExternalVectorIndex


class LexicalEngine(Protocol):
    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk_id, BM25-like score), best first, filters honoured (``known``: what it
        tells of each hit, when it can)."""
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


@dataclass(frozen=True)
class Engines:
    """The engines that answer recall, and the sidecar indexes among them (for upkeep
    and status; None where the store answers by itself)."""

    lexical: LexicalEngine
    vector: VectorEngine
    lexical_sidecar: SidecarLexicalIndex | None = None
    vector_sidecar: VectorSidecar | None = None


def engines_for(store: SearchStore, settings: Settings) -> Engines:
    """The engines for ``store``: on SQLite the sidecar indexes (FTS5 and the exact scan
    answer below their thresholds), the vector one an external engine's when
    ``DOCSHELF_VECTOR_URL`` names one; elsewhere the store's own (``own_engines``)."""
    if _scheme(store) == "sqlite":
        from docshelf.search.engines.sidecar import SidecarStore
        from docshelf.search.engines.tantivy import SidecarLexicalIndex

        if isinstance(store, SidecarStore):
            lexical = SidecarLexicalIndex(store, settings.lexical_threshold)
            vector = _vector_sidecar(store, settings)
            return Engines(lexical, vector, lexical, vector)
    if settings.vector_url:
        from docshelf.errors import InvalidInput

        raise InvalidInput(
            "DOCSHELF_VECTOR_URL names a vector engine for the SQLite store; with "
            f"{_scheme(store)}, the store's own index answers (unset DOCSHELF_VECTOR_URL)"
        )
    return own_engines(store)


def _vector_sidecar(store: SidecarStore, settings: Settings) -> VectorSidecar:
    if not settings.vector_url:
        from docshelf.search.engines.usearch import SidecarVectorIndex

        return SidecarVectorIndex(store, settings.ann_threshold)
    from docshelf.search.engines.external import ExternalVectorIndex, open_backend

    backend, name = open_backend(settings.vector_url)
    return ExternalVectorIndex(store, backend, name)


def own_engines(store: SearchStore) -> Engines:
    """The store's own engines: PostgreSQL's full-text and HNSW indexes; SQLite's FTS5 and
    the exact scan."""
    scheme = _scheme(store)
    if scheme == "postgres":
        from docshelf.search.engines.pg_text import PostgresText
        from docshelf.search.engines.pgvector import PgVector

        return Engines(PostgresText(store), PgVector(store))
    if scheme == "sqlite":
        from docshelf.search.engines.exact import ExactVectorSearch
        from docshelf.search.engines.fts5 import Fts5

        return Engines(Fts5(store), ExactVectorSearch(store))
    raise ValueError(f"No search engines for a store at {store.url!r}")


def _scheme(store: SearchStore) -> str:
    scheme = urlparse(store.url).scheme
    return "postgres" if scheme == "postgresql" else scheme
