"""Typesense as a library's full text and vectors (DOCSHELF_SEARCH_URL), on a real server:
the text collection kept in step with the store (FTS5 answers while it is behind, or
failing), rebuilt into a new collection, and a library searched through it end to end.
The search contract is tests/test_engines.py's; the vector side's upkeep is
tests/test_vector_engines.py's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from docshelf.config import Settings
from docshelf.errors import InvalidInput
from docshelf.search.engines import engines_for
from docshelf.search.engines.external import ExternalVectorIndex
from docshelf.search.engines.tantivy import SidecarLexicalIndex
from docshelf.search.engines.typesense import TypesenseServer
from docshelf.search.engines.typesense_lexical import TypesenseLexicalIndex
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters, open_store
from docshelf.store.sqlite import SQLiteStore
from tests.fakes import HashEmbedder
from tests.test_store import doc_of, make_doc, vecs

TEXTS = ["raft leader election", "bread flour", "raft log replication", "plumber"]


def put(store: SQLiteStore, n: int, text: str) -> None:
    doc, chunks = make_doc(n, text)
    with store.transaction():
        store.put_document(doc, chunks, vecs(2, seed=n))


@pytest.fixture
def text(
    typesense_address: str, tmp_path: Path
) -> Iterator[tuple[SQLiteStore, TypesenseLexicalIndex]]:
    store = open_store(f"sqlite:///{tmp_path / 'docshelf.db'}")
    assert isinstance(store, SQLiteStore)
    store.set_meta("embedding_dim", "4")
    for n, words in enumerate(TEXTS, start=1):
        put(store, n, words)
    index = TypesenseLexicalIndex(
        store, TypesenseServer.from_url(f"typesense://{typesense_address}"), strict=True
    )
    assert index.maintain() == "built" and index.path == "typesense"
    yield store, index
    store.close()


def test_a_change_is_fts5s_until_typesense_has_it(
    text: tuple[SQLiteStore, TypesenseLexicalIndex],
) -> None:
    store, index = text
    none = SearchFilters()
    put(store, 6, "raft snapshots")
    assert index.path == "fts5"  # behind the store: never answers
    assert doc_of(index.search(["snapshots"], 10, none)) == {"6"}
    assert index.maintain() == "updated" and index.path == "typesense"
    assert doc_of(index.search(["snapshots"], 10, none)) == {"6"}
    store.delete_document(make_doc(1, "")[0].id)
    assert index.maintain() == "updated"
    assert doc_of(index.search(["raft"], 10, none)) == {"3", "6"}
    assert not index.audit().problems()  # type: ignore[union-attr]


def test_a_rebuild_and_a_lost_collection(
    text: tuple[SQLiteStore, TypesenseLexicalIndex],
) -> None:
    _, index = text
    assert index.maintain(rebuild=True) == "rebuilt"
    mine = [n for n in index.server.names() if "_text_" in n and n.startswith("docshelf_")]
    record = index._usable(index.epoch_of(index.mode()))
    assert record is not None and record.collection in mine
    lost = sorted(index.server.keys(record.collection))[:2]
    index.server.delete(record.collection, lost)  # the engine lost documents
    assert index.audit().missing == 2  # type: ignore[union-attr]
    assert index.maintain(force=True) == "rebuilt"
    assert doc_of(index.search(["raft"], 10, SearchFilters())) == {"1", "3"}


def test_a_failing_typesense_is_answered_by_fts5(
    text: tuple[SQLiteStore, TypesenseLexicalIndex],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, index = text
    index.strict = False

    def down(*args: object, **kwargs: object) -> object:
        raise ConnectionError("typesense down")

    monkeypatch.setattr(index.server, "search_each", down)
    with caplog.at_level(logging.WARNING):
        assert doc_of(index.search(["flour"], 10, SearchFilters())) == {"2"}
    assert "typesense down" in caplog.text


def test_a_search_url_is_checked(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'docshelf.db'}")
    try:
        for url, says in [
            ("http://127.0.0.1:8108", "typesense://API_KEY@HOST:PORT"),
            ("typesense://127.0.0.1:8108", "typesense://API_KEY@HOST:PORT"),
            ("typesense://k@127.0.0.1:8108/my-notes", "must be a letter"),
        ]:
            settings = Settings(tmp_path, "", "none", search_url=url)
            with pytest.raises(InvalidInput, match=says):
                engines_for(store, settings)
        both = Settings(
            tmp_path, "", "none", search_url="typesense://k@h:1", vector_url="chroma:///x"
        )
        with pytest.raises(InvalidInput, match="set one"):
            engines_for(store, both)
    finally:
        store.close()


def test_a_library_searches_through_typesense(
    typesense_address: str, isolated_home: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: a folder added with DOCSHELF_SEARCH_URL set; status names Typesense for
    both lists, and every mode finds the note by its words and meaning."""
    monkeypatch.setenv("DOCSHELF_SEARCH_URL", f"typesense://{typesense_address}/e2e")
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        lexical, vector = shelf.lexical_index, shelf.vector_index
        assert isinstance(lexical, TypesenseLexicalIndex)
        assert isinstance(vector, ExternalVectorIndex)
        lexical.strict = vector.strict = True
        status = shelf.status()
        assert status.lexical_index["path"] == "typesense"
        assert status.vector_index["path"] == "typesense"
        for mode in ("lexical", "vector", "hybrid"):
            hits = shelf.search("leader election heartbeat", mode=mode).hits
            assert hits and hits[0].document.rel_path == "projects/raft.md", mode
        names = set(lexical.server.names())
        assert any(n.startswith("e2e_text_") for n in names)
        assert any(n.startswith("e2e_") and "_text_" not in n for n in names)
        assert "e2e_documents" in names and status.lexical_index["documents"] == "e2e_documents"
        # the facets and a filtered search are Typesense's, the store's facet SQL not asked
        by_store = shelf.store.facet_counts(SearchFilters())
        monkeypatch.setattr(shelf.store, "facet_counts", _not_asked)
        assert shelf.facets().counts == by_store and by_store["type"]
        found = shelf.search("leader election", filters=SearchFilters(path_prefix="projects/"))
        assert {h.document.rel_path for h in found.hits} == {"projects/raft.md"}
        # enrichment writes types and concepts: its upkeep brings them to Typesense
        assert shelf.enrich() and lexical.documents.held() is not None
        doctypes = shelf.facets().counts["doctype"]
        assert doctypes and sum(doctypes.values()) == len(shelf.documents())


def _not_asked(*args: object) -> dict[str, dict[str, int]]:
    raise AssertionError("the store counted the facets")


def test_a_snippet_in_typesense_carries_its_place_and_text(
    text: tuple[SQLiteStore, TypesenseLexicalIndex],
) -> None:
    """What the text collection holds of a snippet, read back with Typesense's own client:
    its ids and place, its text as written, and the words the index searches (stems)."""
    _, index = text
    record = index._usable(index.epoch_of(index.mode()))
    assert record is not None
    exported = index.server.client.collections[record.collection].documents.export()
    rows = [json.loads(line) for line in exported.splitlines()]
    assert len(rows) == 8
    chunks = {c.id: c for n in range(1, 5) for c in make_doc(n, TEXTS[n - 1])[1]}
    for row in rows:
        chunk = chunks[row["chunk_id"]]
        assert row["document_id"] == chunk.document_id and row["content"] == chunk.text
        assert row["heading_path"] == list(chunk.heading_path)
    election = next(r for r in rows if "election" in r["content"])
    assert "elect" in election["body"].split()  # the English stem, as FTS5 and tantivy make


def test_a_bad_url_never_shows_its_key(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'docshelf.db'}")
    try:
        for settings in [
            Settings(tmp_path, "", "none", search_url="http://secret-key@h:1"),
            Settings(tmp_path, "", "none", vector_url="secret-key@h"),
        ]:
            with pytest.raises(InvalidInput) as caught:
                engines_for(store, settings)
            assert "secret-key" not in caught.value.message
    finally:
        store.close()


def test_back_to_the_default_a_small_library_searches_fts5(
    text: tuple[SQLiteStore, TypesenseLexicalIndex],
) -> None:
    """Typesense switched the store's lexical log on; without DOCSHELF_SEARCH_URL the
    tantivy index finds it on below its threshold and switches off instead of building
    itself for a library FTS5 answers (it would rank differently)."""
    store, _ = text
    tantivy = SidecarLexicalIndex(store, threshold=50_000)
    assert tantivy.maintain() == "switched to fts5"
    assert tantivy.path == "fts5" and tantivy.mode() == "fts5"
    assert not list(tantivy.directory.glob("index-*"))


def test_an_add_that_enriches_leaves_typesenses_documents_in_step(
    typesense_address: str, isolated_home: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``add`` enriches after it indexed (the types and concepts it writes move the
    store on): its upkeep after enrichment brings them to Typesense's documents."""
    monkeypatch.setenv("DOCSHELF_SEARCH_URL", f"typesense://{typesense_address}/enriched")
    monkeypatch.setenv("DOCSHELF_ENRICH", "offline")
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        lexical = shelf.lexical_index
        assert isinstance(lexical, TypesenseLexicalIndex)
        assert lexical.documents.held() is not None
        counted = lexical.documents.facet_counts(SearchFilters(), ["doctype"])
        assert counted is not None and sum(counted["doctype"].values()) == len(shelf.documents())
