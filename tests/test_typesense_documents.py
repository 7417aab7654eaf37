"""The library's documents in Typesense (search/engines/typesense_documents.py), on a real
server: the collection holds each document's fields, follows the store (an enrichment,
a delete, a lost collection), answers search's filters said in Typesense's syntax with
the documents the store's SQL lets through, and counts facets as the store does."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docshelf.model import Enrichment, Source
from docshelf.search.engines import typesense_documents
from docshelf.search.engines.typesense import TypesenseServer
from docshelf.search.engines.typesense_documents import filter_by, folders, store_part
from docshelf.search.engines.typesense_lexical import TypesenseLexicalIndex
from docshelf.store import SearchFilters, open_store
from docshelf.store.base import FACETS
from docshelf.store.sqlite import SQLiteStore
from tests.test_store import make_doc, user, vecs

YEAR_2020, YEAR_2024 = 1_590_000_000.0, 1_717_000_000.0

# n, words, tags, file type, rel path, source, added
LIBRARY = [
    (
        1,
        "raft leader election",
        ("Raft", "consensus", "raft"),  # (one tag in two cases: counted once)
        "markdown",
        "notes/raft.md",
        "src_a",
        YEAR_2020,
    ),
    (2, "bread flour", ("baking",), "markdown", "notes/kitchen/bread.md", "src_a", YEAR_2024),
    (
        3,
        "raft log replication",
        ("consensus", "a, b && [c]", "RAFT"),
        "pdf",
        "papers/raft.pdf",
        "src_b",
        YEAR_2024,
    ),
    (4, "plumber", (), "text", "misc.txt", None, YEAR_2020),
    (5, "paxos made simple", ("consensus",), "pdf", "papers/paxos.pdf", "src_b", YEAR_2024),
]


def put_library(store: SQLiteStore) -> dict[int, str]:
    store.add_source(Source("src_a", "/lib/notes", "folder", "h", 1.0))
    store.add_source(Source("src_b", "/lib/papers", "folder", "h", 1.0))
    ids: dict[int, str] = {}
    for n, words, tags, kind, rel, source, added in LIBRARY:
        doc, chunks = make_doc(n, words, tags=tags, file_type=kind, rel_path=rel)
        doc = dataclasses.replace(doc, source_id=source, added_at=added)
        with store.transaction():
            store.put_document(doc, chunks, vecs(2, seed=n))
        ids[n] = doc.id
    return ids


def enrich(store: SQLiteStore, document_id: str, kind: str, tags: tuple[str, ...]) -> None:
    enrichment = Enrichment("a summary", kind, "science", ("cs.dc",), "llm", "1", (), "llm")
    store.put_enrichment(document_id, dataclasses.replace(enrichment, tags=tags), 2.0)


@pytest.fixture
def library(
    typesense_address: str, tmp_path: Path
) -> Iterator[tuple[SQLiteStore, TypesenseLexicalIndex, dict[int, str]]]:
    store = open_store(f"sqlite:///{tmp_path / 'docshelf.db'}")
    assert isinstance(store, SQLiteStore)
    store.set_meta("embedding_dim", "4")
    ids = put_library(store)
    enrich(store, ids[5], "paper", ("consensus", "classic"))
    server = TypesenseServer.from_url(f"typesense://{typesense_address}/d{tmp_path.name[-8:]}")
    index = TypesenseLexicalIndex(store, server, strict=True)
    assert index.maintain() == "built" and index.documents.held() is not None
    yield store, index, ids
    for name in server.names():
        if name.startswith(server.prefix or "-"):
            server.drop(name)
    store.close()


def exported(index: TypesenseLexicalIndex) -> dict[str, dict[str, object]]:
    lines = index.server.client.collections[index.documents.collection].documents.export()
    rows = [json.loads(line) for line in lines.splitlines() if line]
    return {str(r["document_id"]): r for r in rows}


Library = tuple[SQLiteStore, TypesenseLexicalIndex, dict[int, str]]


def test_each_document_is_held_with_its_fields(library: Library) -> None:
    store, index, ids = library
    rows = exported(index)
    assert set(rows) == set(ids.values())
    paper = rows[ids[5]]
    assert paper["title"] == "Doc 5" and paper["file_name"] == "paxos.pdf"
    assert paper["file_type"] == "pdf" and paper["document_type"] == "paper"
    assert paper["category"] == "science" and paper["summary"] == "a summary"
    assert paper["tags"] == ["consensus", "classic"] and paper["concept_ids"] == ["cs.dc"]
    assert paper["folders"] == ["/", "/lib/", "/lib/papers/", "papers/"]
    assert paper["year"] == "2024" and paper["source_id"] == "src_b"
    stored = store.get_document(ids[5])
    assert stored is not None and paper["sha256"] == stored.sha256
    assert paper["size"] == stored.size_bytes and paper["path"] == stored.path
    assert "document_type" not in rows[ids[4]]  # (not enriched: no value, not a blank)


def test_it_follows_the_store(library: Library) -> None:
    """An enrichment moves the store's generation: until the upkeep has it, the store
    answers the filters; then Typesense does. A deleted document leaves it; a lost
    collection is filled again."""
    store, index, ids = library
    enrich(store, ids[2], "recipe", ("baking", "Sourdough"))
    assert index.documents.held() is None  # behind: the store answers
    assert index.documents.pushed(SearchFilters(tags=("sourdough",)), 100) == frozenset({ids[2]})
    assert index.maintain() == "updated" and index.documents.held() is not None
    assert exported(index)[ids[2]]["tag_keys"] == ["baking", "sourdough"]
    store.delete_document(ids[4])
    assert index.maintain() == "updated"
    assert set(exported(index)) == set(ids.values()) - {ids[4]}
    index.server.drop(index.documents.collection)
    assert index.documents.sync() == 4  # not what it was: filled again from the store
    assert set(exported(index)) == set(ids.values()) - {ids[4]}


# Filters Typesense says whole, and filters with a part only the store can say
FILTERS = [
    SearchFilters(file_type="pdf"),
    SearchFilters(document_type="paper"),
    SearchFilters(tags=("CONSENSUS",)),
    SearchFilters(tags=("consensus", "raft")),
    SearchFilters(tags=("a, b && [c]",)),
    SearchFilters(concept_groups=(("cs.dc", "cs.ai"),)),
    SearchFilters(source_id="src_b"),
    SearchFilters(path_prefix="notes/"),
    SearchFilters(path_prefix="/lib/papers/"),
    SearchFilters(path_prefix="notes/kit"),  # not a folder: the store's part
    SearchFilters(dated_from=YEAR_2024),
    SearchFilters(dated_before=YEAR_2024, file_type="text"),
    SearchFilters(file_type="pdf", tags=("classic",)),
    SearchFilters(tags=("nothing",)),
    SearchFilters(user_id="u1"),
    SearchFilters(user_id="u1", file_type="pdf", dated_from=YEAR_2024),
]


@pytest.mark.parametrize("filters", FILTERS, ids=repr)
def test_filters_said_in_typesenses_syntax_let_through_what_the_stores_sql_does(
    library: Library, filters: SearchFilters, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, index, ids = library
    store.put_user(user("u1", "ann"), None)
    for n in (1, 3, 5):
        store.grant("u1", ids[n])
    expected = store.matching_documents(filters)
    if store_part(filters).empty:  # said whole in Typesense: the store is not asked
        monkeypatch.setattr(store, "matching_documents", _not_asked)
    said = index.documents.pushed(filters, 100)
    assert said == expected


def _not_asked(filters: SearchFilters) -> frozenset[str]:
    raise AssertionError(f"the store was asked {filters}")


@pytest.mark.parametrize("filters", [f for f in FILTERS if store_part(f).empty], ids=repr)
def test_facets_counted_by_typesense_are_the_stores(
    library: Library, filters: SearchFilters
) -> None:
    store, index, _ = library
    assert index.documents.facet_counts(filters, FACETS) == store.facet_counts(filters, FACETS)
    if filters == SearchFilters():
        assert store.facet_counts(filters, ["tag"])["tag"]["raft"] == 2  # Raft, raft; RAFT
    assert index.documents.facet_counts(SearchFilters(user_id="u1"), FACETS) is None


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tag=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12))
def test_any_tag_is_said_or_left_to_the_store(library: Library, tag: str) -> None:
    """Whatever a tag holds (commas, brackets, ``&&``, quotes), Typesense finds the
    documents holding it as the store does, or the filter is left to the store."""
    store, index, _ = library
    said = filter_by(SearchFilters(tags=(tag,)))
    assert said is None if "`" in tag else said is not None
    found = index.documents.pushed(SearchFilters(tags=(tag,)), 100)
    assert found == store.matching_documents(SearchFilters(tags=(tag,)))


def test_the_syntax() -> None:
    filters = SearchFilters(
        file_type="pdf", tags=("A b", "c"), concept_groups=(("x", "y"),), dated_from=1.5
    )
    assert filter_by(filters, ["doc_2", "doc_1"]) == (
        "file_type:=[`pdf`] && tag_keys:=[`a b`] && tag_keys:=[`c`] && "
        "concept_ids:=[`x`, `y`] && dated:>=1.500000 && document_id:=[`doc_1`, `doc_2`]"
    )
    assert filter_by(SearchFilters()) == ""
    assert filter_by(SearchFilters(tags=("a`b",))) is None
    with_caller = SearchFilters(user_id="u", source_id="s", path_prefix="a/", dated_from=1.0)
    assert filter_by(with_caller) == ""  # (all the caller's: store_part)
    assert store_part(with_caller) == with_caller
    assert folders("a/b/c.md") == ["a/", "a/b/"] and folders("/x/y.md") == ["/", "/x/"]
    assert typesense_documents.year(float("inf")) == ""


@given(
    path=st.lists(st.sampled_from(["a", "b", "", "x y", "é"]), min_size=1, max_size=5),
    prefix=st.lists(st.sampled_from(["a", "b", "", "x y", "é"]), min_size=1, max_size=4),
)
def test_a_folder_filter_is_the_stores_prefix(path: list[str], prefix: list[str]) -> None:
    """A path prefix ending in "/" lets through what the store's LIKE does: the paths
    that start with it."""
    p, f = "/".join(path), "/".join(prefix) + "/"
    assert (f in folders(p)) == p.startswith(f)
