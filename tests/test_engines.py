"""The engine contract, once, run against every engine (search/engines/): each lexical
engine and each vector engine answers the same library alike — best first, filters
honoured, unfinished documents never shown, the limit kept, no user text taken as
syntax. A new engine joins by its line in ``LEXICAL`` or ``VECTOR``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docshelf.search.engines import LexicalEngine, VectorEngine
from docshelf.search.engines.exact import ExactVectorSearch
from docshelf.search.engines.external import ExternalVectorIndex, open_backend
from docshelf.search.engines.fts5 import Fts5
from docshelf.search.engines.pg_text import PostgresText
from docshelf.search.engines.pgvector import PgVector
from docshelf.search.engines.tantivy import SidecarLexicalIndex
from docshelf.search.engines.typesense import TypesenseServer
from docshelf.search.engines.typesense_lexical import TypesenseLexicalIndex
from docshelf.search.engines.usearch import SidecarVectorIndex
from docshelf.search.entries import Told
from docshelf.search.query import lexical_terms
from docshelf.store import SearchFilters, SearchStore, open_store
from docshelf.store.sqlite import SQLiteStore
from tests import pg
from tests.test_store import doc_of, make_doc, vecs

DIM = 4


def _tantivy(store: SearchStore) -> LexicalEngine:
    assert isinstance(store, SQLiteStore)
    index = SidecarLexicalIndex(store, threshold=1)
    index.maintain(force=True)
    assert index.path == "tantivy"  # the sidecar answers, not the FTS5 it falls back on
    return index


def _usearch(store: SearchStore) -> VectorEngine:
    assert isinstance(store, SQLiteStore)
    index = SidecarVectorIndex(store, threshold=1)
    index.maintain(force=True)
    assert index.path == "ann"
    return index


class External:
    """An engine of the user's own (search/engines/external.py; typesense_lexical.py for
    ``lexical``) at ``url``: ``{dir}`` the library's folder, ``{chroma}`` and
    ``{typesense}`` the test servers; built, then searched with its failures raised
    (never answered by the store's own engine it falls back on)."""

    def __init__(self, url: str, *, lexical: bool = False) -> None:
        self.url = url
        self.lexical = lexical

    def __call__(self, store: SearchStore, request: pytest.FixtureRequest) -> Any:
        assert isinstance(store, SQLiteStore)
        servers = {
            name: request.getfixturevalue(f"{name}_address") if f"{{{name}}}" in self.url else ""
            for name in ("chroma", "typesense")
        }
        url = self.url.format(dir=store.path.parent, **servers)
        index: ExternalVectorIndex | TypesenseLexicalIndex
        if self.lexical:
            index = TypesenseLexicalIndex(store, TypesenseServer.from_url(url), strict=True)
            kind = "typesense"
        else:
            backend, name = open_backend(url)
            index = ExternalVectorIndex(store, backend, name, strict=True)
            kind = backend.kind
        request.addfinalizer(index.close)
        assert index.maintain(force=True) == "built"
        assert index.path == kind
        return index


EXTERNAL = {
    "qdrant-local": External("qdrant+local://{dir}/qdrant"),
    "milvus-lite": External("milvus://{dir}/milvus.db"),
    "chroma": External("chroma://{dir}/chroma"),
    "chroma-server": External("chroma://{chroma}"),
    "typesense": External("typesense://{typesense}"),
}

# name: (the store it runs on, the engine made once the library is written)
LEXICAL: dict[str, tuple[str, Callable[[SearchStore], LexicalEngine] | External]] = {
    "fts5": ("sqlite", Fts5),
    "tantivy": ("sqlite", _tantivy),
    "postgres-text": ("postgres", PostgresText),
    "typesense": ("sqlite", External("typesense://{typesense}", lexical=True)),
}
VECTOR: dict[str, tuple[str, Callable[[SearchStore], VectorEngine] | External]] = {
    "exact": ("sqlite", ExactVectorSearch),
    "usearch": ("sqlite", _usearch),
    "pgvector": ("postgres", PgVector),
    **{name: ("sqlite", made) for name, made in EXTERNAL.items()},
}


@pytest.fixture
def library(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SearchStore]:
    """Five documents (two snippets each, 4-d vectors): 1 and 3 tagged ``dist``, 2 a
    text file, 5 still being parsed (never shown)."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / 'docshelf.db'}"
        else:
            url = stack.enter_context(pg.fresh_schema())
        store = open_store(url)
        stack.callback(store.close)
        store.set_meta("embedding_dim", str(DIM))
        words = ["raft leader election", "bread flour", "raft log replication", "plumber", "raft"]
        for n, text in enumerate(words, start=1):
            tags = ("dist",) if n in (1, 3) else ()
            kind = "text" if n == 2 else "markdown"
            status = "parsing" if n == 5 else "complete"
            doc, chunks = make_doc(n, text, tags=tags, file_type=kind, status=status)
            with store.transaction():
                store.put_document(doc, chunks, vecs(2, dim=DIM, seed=n))
        yield store


def _lexical_cases() -> list[object]:
    return [pytest.param(name, store, id=name) for name, (store, _) in LEXICAL.items()]


def _vector_cases() -> list[object]:
    return [pytest.param(name, store, id=name) for name, (store, _) in VECTOR.items()]


@pytest.mark.parametrize(("engine", "library"), _lexical_cases(), indirect=["library"])
def test_a_lexical_engine_finds_words_by_the_contract(
    engine: str, library: SearchStore, request: pytest.FixtureRequest
) -> None:
    made = LEXICAL[engine][1]
    search = (made(library, request) if isinstance(made, External) else made(library)).search
    none = SearchFilters()
    hits = search(["raft"], 10, none)
    assert doc_of(hits) == {"1", "3"}  # 5 holds the word but is not complete
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert doc_of(search(["leader"], 10, none)) == {"1"}
    assert len(search(["raft"], 1, none)) == 1
    assert search([], 10, none) == []
    assert search(["zebra"], 10, none) == []
    assert search(["NEAR(", "*", '"', "-"], 10, none) == []  # never syntax
    assert doc_of(search(['raft" OR "zebra'], 10, none)) <= {"1", "3"}  # words at most
    assert doc_of(search(["raft", "flour"], 10, none)) == {"1", "2", "3"}  # any word
    assert doc_of(search(["raft", "flour"], 10, SearchFilters(file_type="text"))) == {"2"}
    assert doc_of(search(["raft", "flour"], 10, SearchFilters(tags=("DIST",)))) == {"1", "3"}
    one = make_doc(3, "")[0].id
    assert doc_of(search(["raft"], 10, SearchFilters(document_ids=(one,)))) == {"3"}
    told = Told()
    found = search(["raft"], 10, none, told)
    for chunk_id, entry in told.items():  # what an engine tells of a hit is its own
        assert chunk_id in dict(found) and entry[0] in {make_doc(n, "")[0].id for n in (1, 3)}


@pytest.mark.parametrize(("engine", "library"), _lexical_cases(), indirect=["library"])
def test_a_lexical_engine_finds_an_identifier_by_its_words(
    engine: str, library: SearchStore, request: pytest.FixtureRequest
) -> None:
    """A word written with punctuation (``__name__``, ``--port``) reaches every engine as
    its word characters and finds the snippets that hold it, whatever the engine's own
    tokenizer makes of the punctuation (search/stages/written.py then orders them)."""
    doc, chunks = make_doc(6, "app = Flask(__name__) then flask run --port 5001")
    with library.transaction():
        library.put_document(doc, chunks, vecs(2, dim=DIM, seed=6))
    made = LEXICAL[engine][1]
    search = (made(library, request) if isinstance(made, External) else made(library)).search
    none = SearchFilters()
    for typed in ("__name__", "Flask(__name__)", "--port", "5001"):
        assert "6" in doc_of(search(lexical_terms(typed), 10, none)), typed


@pytest.mark.parametrize(("engine", "library"), _vector_cases(), indirect=["library"])
def test_a_vector_engine_finds_the_nearest_by_the_contract(
    engine: str, library: SearchStore, request: pytest.FixtureRequest
) -> None:
    made = VECTOR[engine][1]
    search = (made(library, request) if isinstance(made, External) else made(library)).search
    none = SearchFilters()
    shown = [make_doc(n, "")[0].id for n in range(1, 5)]
    for seed in range(4):
        q = np.random.default_rng(100 + seed).normal(size=DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        hits = search(q, 10, none)
        assert len(hits) == 8 and doc_of(hits) == {"1", "2", "3", "4"}
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True)
        # the cosine of each, as the exact scan has it
        exact = dict(ExactVectorSearch(library).search(q, 10, none))
        assert all(abs(exact[c] - s) < 1e-3 for c, s in hits)
        assert len(search(q, 3, none)) == 3
        assert search(q, 0, none) == []
        assert doc_of(search(q, 10, SearchFilters(tags=("dist",)))) == {"1", "3"}
        only = SearchFilters(document_ids=(shown[1],))
        assert doc_of(search(q, 10, only)) == {"2"}
        assert search(q, 10, SearchFilters(document_ids=("doc_nothing",))) == []
        assert doc_of(search(q, 10, none, Told(), near=True)) == {"1", "2", "3", "4"}
