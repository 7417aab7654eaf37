"""The engines that answer recall, behind one narrow interface each, one file an engine:

=========================  =========================================================
lexical                    ``search(terms, limit, filters, known)``
``fts5.py``                SQLite's FTS5 index (the store's own)
``pg_text.py``             PostgreSQL's ``tsvector`` index (the store's own)
``tantivy.py``             a tantivy index beside a SQLite store (a sidecar; FTS5
                           answers until the library is large and it has caught up)
``typesense_lexical.py``   Typesense beside a SQLite store (``DOCSHELF_SEARCH_URL``:
                           its vectors too, ``typesense.py``; FTS5 while it is behind)
vector                     ``search(query, limit, filters, known, near)``
``pgvector.py``            PostgreSQL's HNSW index (the store's own)
``usearch.py``             a usearch graph beside a SQLite store (a sidecar; the exact
                           scan answers below its threshold)
``exact.py``               an exact scan of every vector, masked by the filters
``external.py``            an engine of the user's own beside a SQLite store
                           (``DOCSHELF_VECTOR_URL``): ``qdrant.py``, ``milvus.py``,
                           ``chroma.py``, ``typesense.py``, one ``VectorBackend``
                           each (``backend.py``)
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
    from docshelf.search.engines.typesense_lexical import TypesenseLexicalIndex
    from docshelf.search.engines.usearch import SidecarVectorIndex

    VectorSidecar = SidecarVectorIndex | ExternalVectorIndex
    LexicalSidecar = SidecarLexicalIndex | TypesenseLexicalIndex


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
    lexical_sidecar: LexicalSidecar | None = None
    vector_sidecar: VectorSidecar | None = None


def engines_for(store: SearchStore, settings: Settings) -> Engines:
    """The engines for ``store``: on SQLite the sidecar indexes (FTS5 and the exact scan
    answer below their thresholds), Typesense's both when ``DOCSHELF_SEARCH_URL`` names
    one, an engine of the user's own for vectors when ``DOCSHELF_VECTOR_URL`` does;
    elsewhere the store's own (``own_engines``)."""
    from docshelf.errors import InvalidInput

    if settings.search_url and settings.vector_url:
        raise InvalidInput(
            "DOCSHELF_SEARCH_URL (Typesense: full text and vectors) and DOCSHELF_VECTOR_URL "
            "both name a vector engine: set one"
        )
    if _scheme(store) == "sqlite":
        from docshelf.search.engines.sidecar import SidecarStore

        if isinstance(store, SidecarStore):
            if settings.search_url:
                return _typesense(store, settings.search_url)
            from docshelf.search.engines.tantivy import SidecarLexicalIndex

            lexical = SidecarLexicalIndex(store, settings.lexical_threshold)
            vector = _vector_sidecar(store, settings)
            return Engines(lexical, vector, lexical, vector)
    for key, value in (
        ("DOCSHELF_SEARCH_URL", settings.search_url),
        ("DOCSHELF_VECTOR_URL", settings.vector_url),
    ):
        if value:
            raise InvalidInput(
                f"{key} names an engine for the SQLite store; with {_scheme(store)}, the "
                f"store's own indexes answer (unset {key})"
            )
    return own_engines(store)


def _typesense(store: SidecarStore, url: str) -> Engines:
    """Typesense for both lists, one client (``typesense.py``, ``typesense_lexical.py``)."""
    from urllib.parse import urlparse

    from docshelf.errors import InvalidInput, Unavailable
    from docshelf.search.engines.external import ExternalVectorIndex
    from docshelf.search.engines.typesense import Typesense, TypesenseServer
    from docshelf.search.engines.typesense_lexical import TypesenseLexicalIndex

    parsed = urlparse(url)
    if parsed.scheme not in ("typesense", "typesenses"):
        raise InvalidInput(
            "DOCSHELF_SEARCH_URL: typesense://API_KEY@HOST:PORT[/prefix], not "
            f"{parsed.scheme or 'a URL without a scheme'}://…"
        )
    try:
        server = TypesenseServer(parsed)
    except ImportError as exc:
        raise Unavailable(
            f"Typesense's client is not installed (the typesense extra): {exc}"
        ) from exc
    lexical = TypesenseLexicalIndex(store, server)
    vector = ExternalVectorIndex(store, Typesense(server), server.prefix)
    vector.push = lexical.documents.pushed  # filters said in Typesense's syntax
    return Engines(lexical, vector, lexical, vector)


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
