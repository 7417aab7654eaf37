"""The Store contract, run against every backend: SQLite always, PostgreSQL when
``DOCSHELF_TEST_POSTGRES_URL`` names a server (see tests/pg.py). Backend-specific
tests at the end cover only what is truly specific to one backend."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docshelf.errors import Conflict, DocshelfError, InvalidInput, Unavailable
from docshelf.model import (
    Chunk,
    Document,
    Failure,
    Job,
    Settled,
    Source,
    Stage,
    Tier,
    User,
    chunk_id,
    document_id,
)
from docshelf.parse.links import WikiLink
from docshelf.search.engines import own_engines
from docshelf.search.engines.exact import ExactVectorIndex
from docshelf.store import (
    FileRecord,
    Listing,
    NewEvent,
    NewUpload,
    SearchFilters,
    SearchStore,
    Store,
    open_store,
    postgres_schema,
    sqlite_schema,
)
from tests import pg


@pytest.fixture
def pg_url() -> Iterator[str]:
    with pg.fresh_schema() as url:
        yield url


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Any]:
    s = open_store(pg_url)
    yield s
    s.close()


# Headers as the chunker writes them, and odd ones: the index must split each the way
# store/lexical_fields.header_fields does.
ODD_HEADERS = [
    "[DOC: Team meeting notes]",
    "[DOC: Manual]\n[PATH: Setup > Configuration]",
    "[DOC: Café]\n[PATH: Ünïcode > 🗃️ Folding]\n[CONCEPTS: raft, paxos]",
    "[PATH: only a path]",
    "",
    "[doc: lower case is not a title]",
]


# -- builders ------------------------------------------------------------------------------


def make_doc(
    n: int,
    words: str,
    *,
    tags: tuple[str, ...] = (),
    status: str = "complete",
    title: str | None = None,
    rel_path: str | None = None,
    file_type: str = "markdown",
    source_id: str | None = None,
) -> tuple[Document, list[Chunk]]:
    fp = hashlib.sha256(str(n).encode()).hexdigest()
    did = document_id(fp)
    title = title or f"Doc {n}"
    rel = rel_path or f"d{n}.md"
    doc = Document(
        id=did,
        sha256=fp,
        title=title,
        path=f"/lib/{rel}",
        rel_path=rel,
        source_id=source_id,
        source_host="h",
        file_type=file_type,
        size_bytes=10,
        added_at=1.0,
        updated_at=1.0,
        status=status,
        tags=tags,
    )
    section = Chunk(
        id=chunk_id(fp, Tier.SECTION, 0),
        document_id=did,
        tier=Tier.SECTION,
        index=0,
        text=words,
        header=f"[DOC: {title}]",
        start=0,
        end=len(words),
    )
    snippets = [
        Chunk(
            id=chunk_id(fp, Tier.SNIPPET, i),
            document_id=did,
            tier=Tier.SNIPPET,
            index=i,
            text=f"{words} part{i}",
            header=f"[DOC: {title}]",
            start=0,
            end=len(words),
            parent_id=section.id,
            heading_path=("H",),
        )
        for i in range(2)
    ]
    return doc, [section, *snippets]


def vecs(n: int, dim: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def put(store: Store, n: int, words: str, **kw: Any) -> Document:
    doc, chunks = make_doc(n, words, **kw)
    with store.transaction():
        store.put_document(doc, chunks, vecs(2, seed=n))
    return doc


def doc_of(hits: list[tuple[str, float]]) -> set[str]:
    """Which test documents (by n) the hits came from."""
    by_prefix = {make_doc(n, "")[0].sha256[:12]: n for n in range(1, 20)}
    return {str(by_prefix[h[0].split("_")[1]]) for h in hits}


def make_job(n: int, *, next_at: float = 0.0, status: str = "queued") -> Job:
    doc = make_doc(n, "")[0]
    return Job(doc.id, Stage.QUEUED, status, 0, next_at, None, None, None, "ab", "text", "x", 1, 1)


def user(uid: str, name: str, **kw: Any) -> User:
    return User(id=uid, name=name, is_admin=False, created_at=1.0, **kw)


# -- settings and generation ---------------------------------------------------------------


def test_meta_and_generation(store: SearchStore) -> None:
    assert store.get_meta("embedding_model") is None and store.generation() == 0
    store.set_meta("embedding_model", "m1")
    store.set_meta("embedding_model", "m2")
    assert store.get_meta("embedding_model") == "m2"
    doc = put(store, 1, "a")
    bumps = [store.generation()]
    store.put_vectors([store.chunks_of_document(doc.id, Tier.SNIPPET)[0].id], vecs(1))
    bumps.append(store.generation())
    store.set_document_status(doc.id, "embedding")
    bumps.append(store.generation())
    store.drop_vectors()
    bumps.append(store.generation())
    store.delete_document(doc.id)
    bumps.append(store.generation())
    assert bumps == sorted(set(bumps)) and bumps[0] > 0
    with pytest.raises(RuntimeError), store.transaction():
        put(store, 2, "b")
        raise RuntimeError
    assert store.generation() == bumps[-1]


# -- documents and chunks ------------------------------------------------------------------


def test_document_round_trip(store: SearchStore) -> None:
    doc = put(store, 1, "alpha beta", tags=("t1",))
    got = store.get_document(doc.id)
    assert got is not None
    assert got.title == "Doc 1" and got.tags == ("t1",)
    assert got.chunk_counts == {"section": 1, "snippet": 2}
    chunks = store.chunks_of_document(doc.id, Tier.SNIPPET)
    assert [c.index for c in chunks] == [0, 1]
    assert chunks[0].heading_path == ("H",) and chunks[0].parent_id
    assert store.get_chunks([chunks[1].id, "nope", chunks[0].id]) == [chunks[1], chunks[0]]
    assert store.get_chunks([]) == []
    assert [c.tier for c in store.chunks_of_document(doc.id, Tier.SECTION)] == [Tier.SECTION]
    assert store.get_document("doc_nope") is None


def test_chunk_places_and_documents_by_id(store: SearchStore) -> None:
    """What search reads of every candidate (its place) and of the hits it cites (their
    documents, in one read): the chunks' own fields, unknown ids left out."""
    from docshelf.search.reader import chunk_place
    from docshelf.store.base import ChunkPlace

    one, two = put(store, 1, "alpha"), put(store, 2, "beta")
    chunks = [
        *store.chunks_of_document(one.id, Tier.SNIPPET),
        *store.chunks_of_document(two.id, Tier.SECTION),
    ]
    places = store.chunk_places([c.id for c in chunks] + ["chunk_nope_0", chunks[0].id])
    assert places == {c.id: chunk_place(c) for c in chunks}
    assert places[chunks[0].id].heading_path == ("H",)
    assert places[chunks[0].id].header == chunks[0].header  # the first of its tier
    assert places[chunks[1].id].index == 1 and places[chunks[1].id].header is None
    assert places[chunks[-1].id] == ChunkPlace(two.id, None, (), None, 0, chunks[-1].header)
    assert store.chunk_places([]) == {}
    docs = store.get_documents([two.id, "doc_nope", one.id, two.id])
    assert docs == {one.id: store.get_document(one.id), two.id: store.get_document(two.id)}
    assert store.get_documents([]) == {}
    store.delete_document(one.id)
    assert store.get_documents([one.id, two.id]).keys() == {two.id}
    assert store.chunk_places([c.id for c in chunks]).keys() == {chunks[-1].id}


def test_every_document_field_round_trips(store: SearchStore) -> None:
    doc, chunks = make_doc(1, "x")
    full = dataclasses.replace(
        doc,
        tags=("a", "B"),
        concept_ids=("c1", "c2"),
        primary_concept_id="c1",
        concept_source="manual",
        taxonomy_version="v1",
        document_type="note",
        category="cat",
        summary="sum",
        page_count=3,
        pages_without_text=1,
        embedding_model="m",
        size_bytes=2**40,
        added_at=1.5,
        updated_at=2.5,
    )
    chunk = dataclasses.replace(chunks[1], page_start=2, page_end=3, token_count=7, prev_id="p")
    with store.transaction():
        store.put_document(full, [chunks[0], chunk, chunks[2]], None)
    assert store.get_document(doc.id) == dataclasses.replace(
        full, chunk_counts={"section": 1, "snippet": 2}
    )
    assert store.get_chunks([chunk.id]) == [chunk]


def test_list_documents_orders_pages_and_filters(store: SearchStore) -> None:
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    store.put_user(user("u1", "ann"), None)
    put(store, 1, "x", rel_path="b.md", source_id="src_1")
    put(store, 2, "x", rel_path="a.md")
    d3 = put(store, 3, "x", rel_path="C.md", source_id="src_1")
    store.grant("u1", d3.id)
    assert [d.rel_path for d in store.list_documents()] == ["C.md", "a.md", "b.md"]
    assert [d.rel_path for d in store.list_documents(limit=1, offset=1)] == ["a.md"]
    assert [d.rel_path for d in store.list_documents(offset=2)] == ["b.md"]
    assert [d.rel_path for d in store.list_documents(source_id="src_1")] == ["C.md", "b.md"]
    assert [d.id for d in store.list_documents(user_id="u1")] == [d3.id]
    assert store.list_documents(user_id="nobody") == []
    # The count is the whole list's, whatever a page holds.
    assert store.count_documents() == 3
    assert store.count_documents(source_id="src_1") == 2
    assert store.count_documents(user_id="u1") == 1
    assert store.count_documents(user_id="nobody") == 0


def test_a_user_s_list_matches_and_sorts_by_their_own_names(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    # One document, its title made from the first uploader's name; bob's name for it.
    shared = put(store, 1, "x", rel_path="ann-secret.txt", title="ann-secret")
    own = put(store, 2, "x", rel_path="c-own.txt", title="A title of its own")
    store.grant("u1", shared.id, title="ann-secret.txt")
    store.grant("u2", shared.id, title="b-notes.txt")
    store.grant("u2", own.id, title="c-own.txt")
    bobs = functools.partial(store.list_documents, user_id="u2")
    assert bobs(listing=Listing(matching="secret")) == []
    assert store.count_documents(user_id="u2", listing=Listing(matching="ann")) == 0
    assert [d.id for d in bobs(listing=Listing(matching="b-notes"))] == [shared.id]
    assert [d.id for d in bobs(listing=Listing(matching="own"))] == [own.id]  # its title
    assert [d.id for d in bobs(listing=Listing(order="path"))] == [shared.id, own.id]
    # by title: "A title of its own" < "b-notes.txt" (not "ann-secret")
    assert [d.id for d in bobs(listing=Listing(order="title"))] == [own.id, shared.id]
    anns = store.list_documents(user_id="u1", listing=Listing(matching="secret"))
    assert [d.id for d in anns] == [shared.id]


def test_each_write_is_atomic_on_its_own(store: SearchStore) -> None:
    doc, chunks = make_doc(1, "x")
    with pytest.raises(ValueError, match="vectors"):
        store.put_document(doc, chunks, vecs(5))
    assert store.get_document(doc.id) is None
    store.put_document(doc, chunks, vecs(2))
    assert store.get_document(doc.id) is not None


def test_rollback_leaves_nothing(store: SearchStore) -> None:
    doc, chunks = make_doc(1, "gamma")
    with pytest.raises(ZeroDivisionError), store.transaction():
        store.put_document(doc, chunks, vecs(2))
        1 / 0  # noqa: B018
    assert store.get_document(doc.id) is None
    assert own_engines(store).lexical.search(["gamma"], 10, SearchFilters()) == []
    assert store.vector_snapshot().chunk_ids == []


def test_nested_transactions_roll_back_inner_only(store: SearchStore) -> None:
    with store.transaction():
        put(store, 1, "outer")
        with pytest.raises(ValueError), store.transaction():
            put(store, 2, "inner")
            raise ValueError
    assert store.get_document(make_doc(1, "")[0].id) is not None
    assert store.get_document(make_doc(2, "")[0].id) is None


def test_a_failed_write_inside_a_transaction_leaves_the_rest(store: SearchStore) -> None:
    src = Source("src_1", "/lib", "folder", "h", 1.0)
    with store.transaction():
        store.add_source(src)
        with pytest.raises(Conflict):
            store.add_source(dataclasses.replace(src, id="src_2"))  # same path
        put(store, 1, "after")
    assert store.list_sources() == [src]
    assert store.get_document(make_doc(1, "")[0].id) is not None


def test_reads_inside_a_transaction_see_its_writes(store: SearchStore) -> None:
    with store.transaction():
        doc = put(store, 1, "visible")
        assert store.get_document(doc.id) is not None
        assert own_engines(store).lexical.search(["visible"], 10, SearchFilters())
        assert len(store.vector_snapshot().chunk_ids) == 2


def test_vectors_by_chunk_id(store: SearchStore) -> None:
    doc = put(store, 1, "vectors")
    snap = store.vector_snapshot()
    wanted = [*reversed(snap.chunk_ids), "chunk_unknown_0"]
    got = store.get_vectors(wanted)
    assert set(got) == set(snap.chunk_ids) and len(got) == 2
    for i, cid in enumerate(snap.chunk_ids):
        np.testing.assert_allclose(got[cid], snap.matrix[i], rtol=1e-6)
    assert store.get_vectors([]) == {}
    assert doc.id


def test_delete_leaves_no_trace_in_indexes(store: SearchStore) -> None:
    doc = put(store, 1, "delta")
    put(store, 2, "epsilon")
    g = store.generation()
    with store.transaction():
        store.delete_document(doc.id)
    assert store.generation() > g
    assert own_engines(store).lexical.search(["delta"], 10, SearchFilters()) == []
    assert all(
        not c.startswith(f"chunk_{doc.sha256[:12]}") for c in store.vector_snapshot().chunk_ids
    )
    assert store.get_chunks([f"chunk_{doc.sha256[:12]}_0"]) == []
    assert store.check() == []


def test_replace_document_in_place(store: SearchStore) -> None:
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    doc = put(store, 1, "zeta", source_id="src_1")
    store.put_file(FileRecord("/lib/d1.md", "src_1", doc.id, 10, 5))
    store.put_job(make_job(1))
    doc2, chunks = make_doc(1, "eta", source_id="src_1")
    with store.transaction():
        store.put_document(doc2, chunks, vecs(2))
    assert own_engines(store).lexical.search(["zeta"], 10, SearchFilters()) == []
    assert len(own_engines(store).lexical.search(["eta"], 10, SearchFilters())) == 2
    assert len(store.vector_snapshot().chunk_ids) == 2
    assert store.get_document(doc.id) is not None
    # an upsert: the files and the job that point at the document stay
    assert [f.path for f in store.files_of_document(doc.id)] == ["/lib/d1.md"]
    assert store.get_job(doc.id) is not None


def test_same_bytes_under_another_id_conflict(store: SearchStore) -> None:
    doc, chunks = make_doc(1, "x")
    store.put_document(doc, chunks, None)
    with pytest.raises(Conflict):
        store.put_document(dataclasses.replace(doc, id="doc_other"), [], None)


def test_update_document_path(store: SearchStore) -> None:
    doc = put(store, 1, "x")
    store.update_document_path(doc.id, "/new/place.md", "place.md")
    got = store.get_document(doc.id)
    assert got is not None and (got.path, got.rel_path) == ("/new/place.md", "place.md")
    assert got.updated_at > doc.updated_at


def test_a_document_cited_where_none_of_its_files_is_is_found_and_moved(
    store: SearchStore,
) -> None:
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    store.add_source(Source("src_2", "/copy", "folder", "h", 1.0))
    doc = put(store, 1, "x", source_id="src_1")  # cited at /lib/d1.md
    uploaded = put(store, 2, "y")  # no file at all: never stale
    store.put_file(FileRecord("/lib/d1.md", "src_1", doc.id, 10, 5))
    store.put_file(FileRecord("/copy/d1.md", "src_2", doc.id, 10, 5))
    assert store.stale_citations() == [] and store.check() == []
    store.delete_file("/lib/d1.md")
    assert store.stale_citations() == [doc.id]
    assert store.check() == ["1 document is cited at a path none of their files is at"]
    store.update_document_path(doc.id, "/copy/d1.md", "d1.md", "src_2")
    got = store.get_document(doc.id)
    assert got is not None and (got.path, got.source_id) == ("/copy/d1.md", "src_2")
    assert store.stale_citations() == [] and store.check() == []
    assert store.get_document(uploaded.id) is not None


def test_snippets_without_vectors_put_and_drop(store: SearchStore) -> None:
    d1, c1 = make_doc(1, "x")
    d2, c2 = make_doc(2, "y")
    with store.transaction():
        store.put_document(d1, c1, None)
        store.put_document(d2, c2, None)
    todo = store.snippets_without_vectors(10)
    assert [c.id for c in todo] == [c.id for c in c1 + c2 if c.tier is Tier.SNIPPET]
    assert [c.id for c in store.snippets_without_vectors(1)] == [todo[0].id]
    assert {c.document_id for c in store.snippets_without_vectors(10, d2.id)} == {d2.id}
    store.put_vectors([todo[0].id, "chunk_unknown_0"], vecs(2))
    assert todo[0].id not in {c.id for c in store.snippets_without_vectors(10)}
    store.put_vectors([todo[0].id], vecs(1, seed=9))  # replaces
    snap = store.vector_snapshot()
    assert snap.chunk_ids == [todo[0].id] and np.allclose(snap.matrix[0], vecs(1, seed=9)[0])
    assert store.stats().snippets_with_vectors == 1
    store.drop_vectors()
    assert len(store.snippets_without_vectors(10)) == 4
    assert store.vector_snapshot().chunk_ids == []


# -- retrieval -----------------------------------------------------------------------------


def test_lexical_search_ranks_and_filters(store: SearchStore) -> None:
    put(store, 1, "raft raft consensus", tags=("dist",))
    put(store, 2, "raft bread")
    hits = own_engines(store).lexical.search(["raft"], 10, SearchFilters())
    assert hits[0][1] >= hits[-1][1]
    assert doc_of(hits[:2]) == {"1"}  # more occurrences rank higher
    tagged = own_engines(store).lexical.search(["raft"], 10, SearchFilters(tags=("DIST",)))
    assert doc_of(tagged) == {"1"}
    assert own_engines(store).lexical.search(['raft" OR "x'], 10, SearchFilters()) == []
    assert len(own_engines(store).lexical.search(["raft"], 3, SearchFilters())) == 3
    assert own_engines(store).lexical.search([], 10, SearchFilters()) == []


def test_lexical_search_ors_terms_and_stems(store: SearchStore) -> None:
    put(store, 1, "leader elections happen")
    put(store, 2, "bread baking")
    put(store, 3, "nothing here")
    assert doc_of(
        own_engines(store).lexical.search(["election", "bread"], 10, SearchFilters())
    ) == {"1", "2"}


def test_lexical_search_weights_the_header(store: SearchStore) -> None:
    put(store, 1, "plain words about something", title="Zebra")
    put(store, 2, "plain words about zebra", title="Other")
    hits = own_engines(store).lexical.search(["zebra"], 10, SearchFilters())
    assert doc_of(hits[:2]) == {"1"} and doc_of(hits) == {"1", "2"}


def put_sections(
    store: SearchStore, n: int, title: str, sections: list[tuple[str, str]]
) -> list[Chunk]:
    """A document of one snippet per (heading, body), each with the header the chunker
    writes (``[DOC: title]`` and ``[PATH: heading]``); its snippets, in order."""
    from docshelf.chunk import build_header

    doc, _ = make_doc(n, "", title=title)
    chunks = [
        Chunk(
            id=chunk_id(doc.sha256, Tier.SNIPPET, i),
            document_id=doc.id,
            tier=Tier.SNIPPET,
            index=i,
            text=body,
            header=build_header(title, (title, heading), (), 48),
            start=0,
            end=len(body),
            heading_path=(title, heading),
        )
        for i, (heading, body) in enumerate(sections)
    ]
    with store.transaction():
        store.put_document(doc, chunks, vecs(len(chunks), seed=n))
    return chunks


def test_lexical_search_finds_the_note_whose_title_the_query_names(store: SearchStore) -> None:
    """Fielded scoring: the few words of a title outweigh bodies that repeat them."""
    put_sections(store, 1, "Team meeting notes", [("Agenda", "budget and hiring for spring")])
    for n in (2, 3, 4):
        put_sections(
            store,
            n,
            f"Other {n}",
            [("Log", "notes on the team: a meeting, more notes, the meeting notes again")],
        )
    hits = own_engines(store).lexical.search(["team", "meeting", "notes"], 10, SearchFilters())
    assert doc_of(hits[:1]) == {"1"} and doc_of(hits) == {"1", "2", "3", "4"}


def test_lexical_search_finds_the_section_whose_heading_the_query_names(store: SearchStore) -> None:
    snippets = put_sections(
        store,
        1,
        "Manual",
        [
            ("Installation", "copy the files, then read about configuration below"),
            ("Configuration", "set the port and the host in the file"),
            ("Usage", "run it"),
        ],
    )
    hits = own_engines(store).lexical.search(["configuration"], 10, SearchFilters())
    assert [h[0] for h in hits] == [snippets[1].id, snippets[0].id]


@pytest.mark.parametrize(
    "term", ['"', "AND", "OR NOT", "NEAR(a, 2)", "*", "a:b", "x'y", "(", "!", "&|", "\\"]
)
def test_lexical_search_takes_hostile_terms_as_words(store: SearchStore, term: str) -> None:
    put(store, 1, "ordinary words")
    assert own_engines(store).lexical.search([term], 10, SearchFilters()) == []


def test_lexical_search_only_sees_complete_documents(store: SearchStore) -> None:
    put(store, 1, "pending words", status="embedding")
    doc = put(store, 2, "pending words")
    assert doc_of(own_engines(store).lexical.search(["pending"], 10, SearchFilters())) == {"2"}
    store.set_document_status(doc.id, "failed")
    assert own_engines(store).lexical.search(["pending"], 10, SearchFilters()) == []


def test_filters_in_lexical_search_and_documents_matching(store: SearchStore) -> None:
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    store.put_user(user("u1", "ann"), None)
    d1 = put(store, 1, "flour", rel_path="projects/a.md", source_id="src_1", tags=("Baking",))
    d2 = put(store, 2, "flour", rel_path="todo.txt", file_type="text")
    d3 = put(store, 3, "flour", rel_path="pro%jects/b.md")
    store.grant("u1", d2.id)
    cases: list[tuple[SearchFilters, set[str]]] = [
        (SearchFilters(), {d1.id, d2.id, d3.id}),
        (SearchFilters(source_id="src_1"), {d1.id}),
        (SearchFilters(source_id="src_other"), set()),
        (SearchFilters(path_prefix="projects/"), {d1.id}),
        (SearchFilters(path_prefix="/lib/projects"), {d1.id}),
        (SearchFilters(path_prefix="pro%"), {d3.id}),  # LIKE wildcards are literal
        (SearchFilters(path_prefix="pro_"), set()),
        (SearchFilters(path_prefix="%"), set()),
        (SearchFilters(file_type="text"), {d2.id}),
        (SearchFilters(tags=("baking",)), {d1.id}),
        (SearchFilters(tags=("baking", "other")), set()),
        (SearchFilters(document_ids=(d2.id, d3.id)), {d2.id, d3.id}),
        (SearchFilters(user_id="u1"), {d2.id}),
        (SearchFilters(user_id="u1", file_type="markdown"), set()),
    ]
    for filters, want in cases:
        hits = own_engines(store).lexical.search(["flour"], 10, filters)
        assert {h[0] for h in hits} == {
            c.id for d in want for c in store.chunks_of_document(d, Tier.SNIPPET)
        }, filters
        if not filters.empty:
            assert store.documents_matching(filters) == want, filters


def test_vector_snapshot_and_generation(store: SearchStore) -> None:
    store.set_meta("embedding_dim", "4")
    empty = store.vector_snapshot()
    assert empty.matrix.shape == (0, 4) and empty.chunk_ids == []
    doc = put(store, 1, "a")
    put(store, 2, "b", status="parsing")  # not searchable yet
    snap = store.vector_snapshot()
    assert snap.matrix.shape == (2, 4) and snap.generation == store.generation()
    assert snap.matrix.dtype == np.float32
    assert snap.document_ids == [doc.id, doc.id]
    assert np.allclose(snap.matrix, vecs(2, seed=1))
    assert snap.chunk_ids == [c.id for c in store.chunks_of_document(doc.id, Tier.SNIPPET)]


# -- embedding cache -----------------------------------------------------------------------


def test_embedding_cache(store: SearchStore) -> None:
    v = vecs(2)
    store.cache_embeddings("m", [("h1", v[0]), ("h2", v[1])])
    got = store.cached_embeddings("m", ["h1", "h3"])
    assert set(got) == {"h1"} and np.allclose(got["h1"], v[0])
    assert got["h1"].dtype == np.float32
    assert store.cached_embeddings("other", ["h1"]) == {}
    assert store.cached_embeddings("m", []) == {}
    store.cache_embeddings("m", [("h1", v[1])])  # first write wins
    assert np.allclose(store.cached_embeddings("m", ["h1"])["h1"], v[0])


# -- sources, files and failures -----------------------------------------------------------


def test_sources_files_and_failures(store: SearchStore) -> None:
    src = Source("src_1", "/lib", "folder", "h", 1.0)
    store.add_source(src)
    assert store.find_source("/lib") == src and store.list_sources() == [src]
    assert store.get_source("src_1") == src and store.get_source("nope") is None
    assert store.find_source("/other") is None
    doc = put(store, 1, "x", source_id="src_1")
    store.put_file(FileRecord("/lib/d1.md", "src_1", doc.id, 10, 5))
    store.put_file(FileRecord("/lib/b.md", "src_1", doc.id, 10, 2**62))
    store.put_file(FileRecord("/lib/d1.md", "src_1", doc.id, 11, 6))  # upsert
    assert [(f.path, f.mtime_ns) for f in store.files_of_document(doc.id)] == [
        ("/lib/b.md", 2**62),
        ("/lib/d1.md", 6),
    ]
    assert store.files_of_source("src_1")["/lib/d1.md"] == FileRecord(
        "/lib/d1.md", "src_1", doc.id, 11, 6
    )
    store.delete_file("/lib/b.md")
    assert list(store.files_of_source("src_1")) == ["/lib/d1.md"]
    store.record_failures("src_1", [Failure("/lib/z.md", "empty"), Failure("/lib/a.md", "bad")])
    assert store.count_failures() == 2
    assert store.list_failures() == [Failure("/lib/a.md", "bad"), Failure("/lib/z.md", "empty")]
    assert store.list_failures(limit=1) == [Failure("/lib/a.md", "bad")]
    store.record_failures("src_1", [Failure("/lib/z.md", "still empty")])
    assert store.list_failures() == [Failure("/lib/z.md", "still empty")]
    store.delete_source("src_1")
    assert store.files_of_source("src_1") == {} and store.count_failures() == 0
    kept = store.get_document(doc.id)
    assert kept is not None and kept.source_id is None  # the document stays, unowned


def test_a_failure_its_bytes_decide_is_kept_with_the_file_as_it_failed(
    store: SearchStore,
) -> None:
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    store.add_source(Source("src_2", "/other", "folder", "h", 1.0))
    settled = Settled(2**40, 2**62, "ab" * 32, "0.1.0/4/-", 1_700_000_000.5)
    store.record_failures(
        "src_1", [Failure("/lib/a.pdf", "not a PDF", settled), Failure("/lib/b.md", "timed out")]
    )
    store.record_failures("src_2", [Failure("/other/c.pdf", "malformed PDF", settled)])
    # only those with the file as it failed (a time limit is no verdict on the bytes)
    assert store.settled_failures("src_1") == {
        "/lib/a.pdf": Failure("/lib/a.pdf", "not a PDF", settled)
    }
    assert list(store.settled_failures("src_2")) == ["/other/c.pdf"]
    assert store.list_failures() == [  # listed as ever: the path and the reason
        Failure("/lib/a.pdf", "not a PDF"),
        Failure("/lib/b.md", "timed out"),
        Failure("/other/c.pdf", "malformed PDF"),
    ]
    store.record_failures("src_1", [Failure("/lib/a.pdf", "not a PDF")])  # tried again
    assert store.settled_failures("src_1") == {}


def test_a_file_too_large_to_read_is_kept_without_a_fingerprint(store: SearchStore) -> None:
    """Settled by its size alone: its bytes were never read (issue 39)."""
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    unread = Settled(2**35, 2**62, None, "0.1.0/4/max 26214400", 1_700_000_000.5)
    big = Failure("/lib/big.md", "too large: 32768.0 MB is over the 25 MB limit", unread)
    store.record_failures("src_1", [big])
    assert store.settled_failures("src_1") == {"/lib/big.md": big}


def test_document_ids_by_their_start_and_the_documents_with_pages_without_text(
    store: SearchStore,
) -> None:
    docs = [put(store, n, f"words {n}") for n in range(12)]
    ids = sorted(d.id for d in docs)
    assert store.document_ids_starting("doc_", 100) == ids
    assert store.document_ids_starting("doc_", 3) == ids[:3]
    assert store.document_ids_starting(ids[5], 3) == [ids[5]]
    assert store.document_ids_starting("doc\\_%", 3) == []  # taken literally
    assert store.document_ids_starting("DOC_", 3) in ([], ids[:3])  # (PostgreSQL: any case)
    scanned, _ = make_doc(99, "scanned pages", rel_path="scan.pdf")
    scanned = dataclasses.replace(scanned, page_count=9, pages_without_text=4)
    with store.transaction():
        store.put_document(scanned, [], None)
    textless = Listing(pages_without_text=True)
    assert [d.id for d in store.list_documents(listing=textless)] == [scanned.id]
    assert store.count_documents(listing=textless) == 1


def test_sources_are_listed_by_path_and_unique(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    b = Source("src_b", "/b", "file", "h", 1.0, user_id="u1")
    a = Source("src_a", "/a", "folder", "h", 2.0)
    store.add_source(b)
    store.add_source(a)
    assert store.list_sources() == [a, b]
    with pytest.raises(Conflict):
        store.add_source(dataclasses.replace(a, id="src_c"))


# -- links and names -----------------------------------------------------------------------


def test_links_names_and_backlinks(store: SearchStore) -> None:
    a, b, c = (put(store, n, "x") for n in (1, 2, 3))
    store.put_names(b.id, ["notes/b.md", "b"], "path")
    store.put_names(b.id, ["Bee", "bee-alias"], "title")
    store.put_names(c.id, ["b"], "path")  # a name two notes answer to
    links = [WikiLink("b", None, None, False), WikiLink("Bee", "Part", "alias", True)]
    links.append(WikiLink("nowhere", None, None, False))
    store.put_links(a.id, links)
    store.put_links(b.id, [WikiLink("b", None, None, False)])  # links to itself
    assert store.links_of(a.id) == [
        (links[0], sorted([b.id, c.id])),
        (links[1], [b.id]),
        (links[2], []),
    ]
    assert store.backlinks(b.id) == [a.id]
    assert store.backlinks(c.id) == sorted([a.id, b.id])  # b links to the name "b" too
    store.put_names(b.id, ["Renamed"], "title")  # replaces only that kind
    assert store.links_of(a.id)[1] == (links[1], [])
    assert store.links_of(a.id)[0][1] == sorted([b.id, c.id])
    store.put_links(a.id, [])
    assert store.links_of(a.id) == [] and store.backlinks(b.id) == []


# -- users and access ----------------------------------------------------------------------


def test_users_and_tokens(store: SearchStore) -> None:
    ann = User("u1", "ann", True, 1.0)
    store.put_user(ann, "hash1")
    store.put_user(user("u2", "bob"), None)
    assert store.get_user("u1") == ann and store.get_user("ann") == ann
    assert store.get_user("nobody") is None
    store.put_user(user("u4", "cy"), "hash4")
    assert store.users_for_tokens(["hash1", "nope", "hash4", "hash1"]) == {
        "hash1": ann,
        "hash4": user("u4", "cy"),
    }
    assert store.users_for_tokens([]) == {}
    assert store.has_token("u1") and not store.has_token("u2")
    assert [u.name for u in store.list_users()] == ["ann", "bob", "cy"]
    revoked = dataclasses.replace(ann, revoked_at=5.0)
    store.put_user(revoked, "hash1")  # an upsert: token and revocation change
    assert store.users_for_tokens(["hash1"]) == {} and store.get_user("u1") == revoked
    store.put_user(ann, "hash2")
    assert store.users_for_tokens(["hash2", "hash1"]) == {"hash2": ann}
    with pytest.raises(Conflict):
        store.put_user(user("u3", "ann"), None)  # names are unique


def test_access_links(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    doc = put(store, 1, "x")
    assert store.grant("u1", doc.id, title="mine") is True
    assert store.grant("u1", doc.id) is False
    assert store.grant("u2", doc.id) is True
    assert store.has_access("u1", doc.id) and store.access_count(doc.id) == 2
    assert store.revoke_access("u1", doc.id) is True
    assert store.revoke_access("u1", doc.id) is False
    assert not store.has_access("u1", doc.id) and store.access_count(doc.id) == 1
    store.delete_document(doc.id)
    assert store.access_count(doc.id) == 0


def test_access_titles_are_each_user_s_own(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    d1, d2 = put(store, 1, "x"), put(store, 2, "y")
    store.grant("u1", d1.id, title="ann's.md")
    store.grant("u2", d1.id, title="bob's.md")
    store.grant("u1", d2.id)  # no name of its own
    assert store.access_titles("u1", [d1.id, d2.id, "doc_nope"]) == {d1.id: "ann's.md"}
    assert store.access_titles("u2", [d1.id, d2.id]) == {d1.id: "bob's.md"}
    assert store.access_titles("u2", []) == {}


def test_a_user_sees_shared_events_only_from_when_their_access_began(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    doc = put(store, 1, "x")
    store.grant("u1", doc.id)
    before = store.add_event(doc.id, "document.queued", message="ann's name")
    time.sleep(0.01)  # access times are wall-clock: bob's comes strictly later
    store.grant("u2", doc.id)
    own = store.add_event(doc.id, "document.queued", message="bob's", user_id="u2")
    shared = store.add_event(doc.id, "document.completed")
    assert [e.seq for e in store.events_after(0, user_id="u1")] == [before, shared]
    assert [e.seq for e in store.events_after(0, user_id="u2")] == [own, shared]
    by_doc = store.events_after(0, document_id=doc.id, user_id="u2")
    assert [e.seq for e in by_doc] == [own, shared]


# -- jobs and payloads ---------------------------------------------------------------------


def test_jobs_claim_lease_and_renew(store: SearchStore) -> None:
    for n in (1, 2, 3):
        put(store, n, "x", status="queued")
    store.put_job(make_job(1, next_at=20.0))
    store.put_job(make_job(2, next_at=10.0))
    store.put_job(make_job(3, next_at=500.0))  # not due yet
    job2 = store.claim_job("w1", 30.0, now=100.0)  # the longest-waiting due job first
    assert job2 is not None and job2.document_id == make_doc(2, "")[0].id
    assert (job2.status, job2.lease_owner, job2.lease_expires_at) == ("running", "w1", 130.0)
    assert store.get_job(job2.document_id) == job2
    job1 = store.claim_job("w2", 30.0, now=100.0)
    assert job1 is not None and job1.document_id == make_doc(1, "")[0].id
    assert store.claim_job("w3", 30.0, now=100.0) is None  # held leases are not taken
    assert store.renew_lease(job2.document_id, "w1", 200.0) is True
    assert store.renew_lease(job2.document_id, "w2", 300.0) is False  # not the owner
    stolen = store.claim_job("w3", 30.0, now=150.0)  # job1's lease expired at 130
    assert stolen is not None and stolen.document_id == job1.document_id
    assert stolen.lease_owner == "w3"
    assert store.renew_lease(job1.document_id, "w2", 400.0) is False  # lost it
    assert store.job_counts() == {"running": 2, "queued": 1}
    store.update_job(job2.document_id, status="complete", stage="complete", lease_owner=None)
    done = store.get_job(job2.document_id)
    assert done is not None and (done.status, done.stage, done.lease_owner) == (
        "complete",
        Stage.COMPLETE,
        None,
    )
    assert done.updated_at > job2.updated_at
    assert store.renew_lease(job2.document_id, "w1", 500.0) is False  # not running
    store.update_job(job2.document_id)  # nothing to change
    assert store.get_job("doc_nope") is None
    assert store.job_counts() == {"running": 1, "queued": 1, "complete": 1}


def test_oldest_unfinished_job_per_stage(store: SearchStore) -> None:
    for n in (1, 2, 3, 4):
        put(store, n, "x", status="queued")
        store.put_job(make_job(n))
    ids = [make_doc(n, "")[0].id for n in (1, 2, 3, 4)]
    assert set(store.oldest_unfinished_jobs()) == {"queued"}
    store.update_job(ids[0], stage="embedding", status="running")
    store.update_job(ids[1], stage="embedding", status="queued")  # waiting for a retry
    store.update_job(ids[2], stage="complete", status="complete")
    store.update_job(ids[3], stage="parsing", status="failed")  # dead-lettered: not waiting
    first = store.get_job(ids[0])
    assert first is not None
    oldest = store.oldest_unfinished_jobs()
    assert oldest == {"embedding": pytest.approx(first.updated_at)}
    store.update_job(ids[0], stage="indexing")
    second = store.get_job(ids[1])
    assert second is not None
    assert store.oldest_unfinished_jobs()["embedding"] == pytest.approx(second.updated_at)


def test_payloads(store: SearchStore) -> None:
    put(store, 1, "x", status="queued")
    job = make_job(1)
    store.put_job(job)
    store.put_payload(job.document_id, "parsing", b"\x00parsed\xff")
    assert store.get_payload(job.document_id, "parsing") == b"\x00parsed\xff"
    assert store.get_payload(job.document_id, "chunking") is None
    store.put_payload(job.document_id, "chunking", b"next")  # one payload per job
    assert store.get_payload(job.document_id, "parsing") is None
    assert store.get_payload(job.document_id, "chunking") == b"next"
    store.delete_payload(job.document_id)
    assert store.get_payload(job.document_id, "chunking") is None
    store.put_payload(job.document_id, "parsing", b"p")
    store.put_job(job)  # replacing the job drops its payload
    assert store.get_payload(job.document_id, "parsing") is None
    store.put_payload(job.document_id, "queued", b"held")
    store.delete_payload(job.document_id, "parsing")  # not that stage's: kept
    assert store.get_payload(job.document_id, "queued") == b"held"
    store.delete_payload(job.document_id, "queued")
    assert store.get_payload(job.document_id, "queued") is None


def test_a_durable_transaction_commits_and_rolls_back_like_any_other(store: SearchStore) -> None:
    with store.transaction(durable=True):
        doc = put(store, 1, "x", status="queued")
    assert store.get_document(doc.id) is not None
    with pytest.raises(RuntimeError, match="boom"), store.transaction(durable=True):
        put(store, 2, "y", status="queued")
        raise RuntimeError("boom")
    assert store.get_document(make_doc(2, "")[0].id) is None
    with store.transaction():  # and the ones after are as before
        put(store, 3, "z", status="queued")
    assert store.count_documents() == 2


def test_new_uploads_are_recorded_together_with_their_events(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    none = {"section": 0, "snippet": 0}  # parsed later
    docs = [
        dataclasses.replace(make_doc(n, "")[0], status="queued", chunk_counts=none) for n in (1, 2)
    ]
    jobs = [make_job(1), make_job(2)]
    generation = store.generation()
    with store.transaction():
        store.add_uploads(
            [
                NewUpload(docs[0], jobs[0], b"\x00held", "u1", "mine.md"),
                NewUpload(docs[1], jobs[1], None, "u1", "other.md"),  # in the blob store
            ]
        )
        store.add_events(
            [NewEvent(d.id, "stage", "queued", 0, "queued") for d in docs]
            + [NewEvent(docs[1].id, "document.queued", message="other.md", user_id="u1")]
        )
    assert store.generation() > generation
    assert [store.get_document(d.id) for d in docs] == docs
    assert [store.get_job(d.id) for d in docs] == jobs
    assert store.get_payload(docs[0].id, "queued") == b"\x00held"
    assert store.get_payload(docs[1].id, "queued") is None
    assert store.access_titles("u1", [d.id for d in docs]) == {
        docs[0].id: "mine.md",
        docs[1].id: "other.md",
    }
    events = store.events_after(0, limit=10)
    assert [(e.document_id, e.kind, e.user_id) for e in events] == [
        (docs[0].id, "stage", None),
        (docs[1].id, "stage", None),
        (docs[1].id, "document.queued", "u1"),
    ]
    assert events[0].seq < events[1].seq < events[2].seq
    with store.transaction():
        store.add_uploads([])
        store.add_events([])


def test_job_of_a_deleted_document_goes_with_it(store: SearchStore) -> None:
    doc = put(store, 1, "x", status="queued")
    store.put_job(make_job(1))
    store.put_payload(doc.id, "parsing", b"p")
    store.delete_document(doc.id)
    assert store.get_job(doc.id) is None and store.job_counts() == {}


# -- events --------------------------------------------------------------------------------


def test_events_in_order_with_filters(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    store.put_user(user("u2", "bob"), None)
    d1, d2 = put(store, 1, "x"), put(store, 2, "y")
    store.grant("u1", d1.id)
    seqs = [
        store.add_event(d1.id, "stage", stage="parsing", progress_pct=10, message="m"),
        store.add_event(d1.id, "document.queued", stage="queued"),
        store.add_event(d2.id, "document.queued"),
        store.add_event(d2.id, "document.removed", user_id="u1"),
        store.add_event(d1.id, "document.removed", user_id="u2"),
    ]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    first = store.events_after(0)[0]
    assert (first.seq, first.document_id, first.kind, first.stage) == (
        seqs[0],
        d1.id,
        "stage",
        "parsing",
    )
    assert (first.progress_pct, first.message, first.user_id) == (10, "m", None)
    assert [e.seq for e in store.events_after(seqs[1])] == seqs[2:]
    assert [e.seq for e in store.events_after(0, limit=2)] == seqs[:2]
    assert [e.seq for e in store.events_after(0, document_id=d2.id)] == seqs[2:4]
    assert [e.seq for e in store.events_after(0, kinds="document.%")] == seqs[1:]
    assert [e.seq for e in store.events_after(0, kinds="stage")] == seqs[:1]
    # a user sees events of documents they can see, and those addressed to them only
    assert [e.seq for e in store.events_after(0, user_id="u1")] == seqs[:2] + seqs[3:4]
    assert [e.seq for e in store.events_after(0, user_id="u2")] == seqs[4:]
    assert store.events_after(seqs[-1]) == []


# -- upkeep --------------------------------------------------------------------------------


def test_stats(store: SearchStore) -> None:
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    d1 = put(store, 1, "x", source_id="src_1")
    put(store, 2, "y", status="parsing", file_type="text")
    store.put_file(FileRecord("/lib/d1.md", "src_1", d1.id, 1, 1))
    scanned, chunks = make_doc(3, "z")
    store.put_document(dataclasses.replace(scanned, pages_without_text=2), chunks, vecs(2))
    s = store.stats()
    assert (s.documents, s.sources, s.files, s.sections, s.snippets) == (3, 1, 1, 3, 6)
    assert s.pages_without_text == 2
    assert s.snippets_with_vectors == 6
    assert s.by_status == {"complete": 2, "parsing": 1}
    assert s.by_file_type == {"markdown": 2, "text": 1}


def test_check_finds_missing_vectors(store: SearchStore) -> None:
    assert store.check() == []
    store.set_meta("embedding_model", "m")
    doc, chunks = make_doc(1, "x")
    with store.transaction():
        store.put_document(doc, chunks, None)
    assert any("no vector" in p for p in store.check())
    store.put_vectors([c.id for c in chunks if c.tier is Tier.SNIPPET], vecs(2))
    assert store.check() == []


def test_check_kinds_and_what_the_store_repairs_by_itself(store: SearchStore) -> None:
    # `docshelf status --check --repair` (ingest/check.py) on the store's own problems.
    doc = put(store, 1, "x")
    assert store.problems() == [] and store.snippetless_documents() == []
    empty, chunks = make_doc(2, "y")
    with store.transaction():  # complete, with a section and no snippet: never found
        store.put_document(empty, [c for c in chunks if c.tier is Tier.SECTION], None)
    assert store.snippetless_documents() == [empty.id] and doc.id != empty.id
    assert store.problems(full=False) == [
        ("no_snippets", "1 complete document has no snippets: search cannot find them")
    ]
    assert store.repair("no_snippets") is None  # nothing the store can do about it
    assert store.repair("orphan_chunks") == "dropped 0 chunks of no document"


def test_sqlite_repair_rebuilds_an_fts5_index_out_of_step(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    put(store, 1, "quorum votes")
    with sqlite3.connect(tmp_path / "store.db") as db:  # an entry the chunks do not hold
        db.execute("INSERT INTO chunks_fts(rowid, title, headings, text) VALUES (999, '', '', 'x')")
    assert [k for k, _ in store.problems()] == ["lexical_index"]
    assert store.repair("lexical_index") == "rebuilt the FTS5 index from the chunks"
    assert store.problems() == []
    store.close()


def test_postgres_repair_creates_a_missing_hnsw_index(pg_store: Any) -> None:
    put(pg_store, 1, "x")
    pg_store.set_meta("embedding_dim", "4")
    with pg_store.transaction():
        pg_store._x("DROP INDEX vectors_hnsw_4")
    assert [k for k, _ in pg_store.problems()] == ["vector_index"]
    assert pg_store.repair("vector_index") == "created the HNSW index for 4-dimensional vectors"
    assert pg_store.problems() == []


def test_driver_errors_come_out_translated(store: SearchStore) -> None:
    store.put_user(user("u1", "ann"), None)
    with pytest.raises(DocshelfError) as info:
        store.grant("u1", "doc_missing")  # a foreign key violation
    assert type(info.value) is Conflict


# -- migrations: the same on both backends -------------------------------------------------


def test_both_backends_have_the_same_migrations() -> None:
    assert [(m.version, m.name) for m in postgres_schema.MIGRATIONS] == [
        (m.version, m.name) for m in sqlite_schema.MIGRATIONS
    ]


def test_migrations_recorded_and_idempotent(store_url: str) -> None:
    open_store(store_url).close()
    s = open_store(store_url)  # reopening applies nothing twice
    s.close()
    want = [(m.version, m.name) for m in sqlite_schema.MIGRATIONS]
    if store_url.startswith("sqlite"):
        con = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        assert con.execute("SELECT version, name FROM schema_migrations").fetchall() == want
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    else:
        assert _pg_rows(store_url, "SELECT version, name FROM schema_migrations") == want


def _pg_rows(url: str, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()


# -- SQLite only ---------------------------------------------------------------------------


def test_the_sqlite_index_splits_headers_as_header_fields(tmp_path: Path) -> None:
    from docshelf.store.lexical_fields import header_fields
    from docshelf.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "docshelf.db")
    try:
        for n, header in enumerate(ODD_HEADERS, start=1):
            doc, chunks = make_doc(n, "words")
            chunks = [dataclasses.replace(c, header=header) for c in chunks]
            with store.transaction():
                store.put_document(doc, chunks, vecs(2, seed=n))
        rows = store._q(
            "SELECT c.header, v.title, v.headings FROM chunks_lexical v "
            "JOIN chunks c ON c.seq = v.seq"
        )
        assert len(rows) == 2 * len(ODD_HEADERS)
        for header, title, headings in rows:
            assert (title, headings) == header_fields(header), header
    finally:
        store.close()


def test_the_sqlite_store_feeds_the_sidecar_indexes(tmp_path: Path) -> None:
    """The sidecar engines (search/engines/usearch.py, tantivy.py) read a store through
    ``SidecarStore``, declared once, beside them."""
    from docshelf.search.engines.sidecar import SidecarStore
    from docshelf.store.base import SearchReads, Store
    from docshelf.store.sqlite import SQLiteStore

    port = {n for n in vars(Store) if not n.startswith("_")}
    search = {n for n in vars(SearchReads) if not n.startswith("_")}
    feed_only = {n for n in vars(SidecarStore) if not n.startswith("_")}
    assert not (port & search) and not (port & feed_only)  # each declared in one place
    store = SQLiteStore(tmp_path / "docshelf.db")
    try:
        feed: SidecarStore = store  # mypy checks every signature
        assert isinstance(feed, SidecarStore) and not isinstance(object(), SidecarStore)
        put(store, 1, "raft consensus")
        assert feed.snippet_count() == 2 and feed.vector_count() == 2
        seqs = [seq for batch in feed.iter_snippets() for seq, _, _ in batch]
        snippets = store.chunks_of_document(make_doc(1, "")[0].id, Tier.SNIPPET)
        assert sorted(feed.lexical_visible(seqs, SearchFilters()).values()) == sorted(
            c.id for c in snippets
        )
    finally:
        store.close()


def test_the_sqlite_memo_of_reads_never_outlives_a_commit(tmp_path: Path) -> None:
    """Reads the search path repeats are answered from memory only while nothing has
    committed: a commit by another connection (another process), one by this store,
    and this store's own writes inside an open transaction are all seen at once."""
    from docshelf.store.sqlite import SQLiteStore

    path = tmp_path / "docshelf.db"
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    try:
        doc = put(writer, 1, "raft consensus")
        seqs = [seq for batch in reader.iter_snippets() for seq, _, _ in batch]
        none = SearchFilters()
        snippet_ids = sorted(c.id for c in reader.chunks_of_document(doc.id, Tier.SNIPPET))
        # asked twice: the second answer comes from the memo
        for _ in range(2):
            assert sorted(reader.visible_snippets(seqs, none).values()) == snippet_ids
            assert sorted(reader.lexical_visible(seqs, none).values()) == snippet_ids
            assert reader.get_meta("embedding_model") is None
            assert reader.get_document(doc.id) == writer.get_document(doc.id)
        # another connection commits: every answer is read again
        writer.set_meta("embedding_model", "m1")
        writer.set_document_status(doc.id, "embedding")
        assert reader.get_meta("embedding_model") == "m1"
        assert reader.visible_snippets(seqs, none) == {}
        assert reader.lexical_visible(seqs, none) == {}
        got = reader.get_document(doc.id)
        assert got is not None and got.status == "embedding"
        # this connection commits
        reader.set_document_status(doc.id, "complete")
        assert sorted(reader.lexical_visible(seqs, none).values()) == snippet_ids
        # the filters are part of what is remembered
        assert reader.lexical_visible(seqs, SearchFilters(tags=("nope",))) == {}
        assert sorted(reader.lexical_visible(seqs, none).values()) == snippet_ids
        # inside a transaction its own writes are seen; a rollback leaves the memo right
        with pytest.raises(RuntimeError), reader.transaction():
            reader.set_meta("embedding_model", "m2")
            assert reader.get_meta("embedding_model") == "m2"
            reader.delete_document(doc.id)
            assert reader.lexical_visible(seqs, none) == {}
            raise RuntimeError
        assert reader.get_meta("embedding_model") == "m1"
        assert sorted(reader.lexical_visible(seqs, none).values()) == snippet_ids
        writer.delete_document(doc.id)
        assert reader.get_document(doc.id) is None
        assert reader.chunk_places(snippet_ids) == {}
        assert reader.lexical_visible(seqs, none) == {}
    finally:
        reader.close()
        writer.close()


def test_a_durable_sqlite_commit_syncs_its_wal_and_only_it(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'd.db'}")
    db: sqlite3.Connection = store._db  # type: ignore[attr-defined]

    def level() -> int:
        return int(db.execute("PRAGMA synchronous").fetchone()[0])

    seen = []
    assert level() == 1  # NORMAL: the WAL reaches the disk at checkpoints
    with store.transaction(durable=True):
        seen.append(level())  # FULL: the commit fsyncs the WAL
        with pytest.raises(RuntimeError, match="outermost"), store.transaction(durable=True):
            pass
    assert seen == [2] and level() == 1
    with pytest.raises(ValueError), store.transaction(durable=True):
        raise ValueError("rolled back")
    assert level() == 1
    store.close()


def test_bad_database_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InvalidInput, match="not a docshelf database"):
        open_store(f"sqlite:///{bad}")
    with pytest.raises(InvalidInput):
        open_store("mysql://x")


# -- PostgreSQL only -----------------------------------------------------------------------


def test_postgres_schema_matches_sqlite(pg_url: str, tmp_path: Path) -> None:
    """Same tables with the same columns; only the lexical index is built differently."""
    open_store(pg_url).close()
    con = sqlite3.connect(str(tmp_path / "s.db"))
    open_store(f"sqlite:///{tmp_path / 's.db'}").close()
    lite = {
        (t, c[1])
        for (t,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'chunks_fts%' "
            "AND name NOT LIKE 'distillates_fts%'"
        )
        for c in con.execute(f"PRAGMA table_info({t})")
    }
    pgs = set(
        _pg_rows(
            pg_url,
            "SELECT table_name::text, column_name::text FROM information_schema.columns "
            "WHERE table_schema = current_schema()",
        )
    )
    # The lexical indexes are generated columns in PostgreSQL, FTS5 tables (keyed by a
    # rowid column) in SQLite.
    assert pgs - lite == {("chunks", "fts"), ("distillates", "tsv")}
    assert lite - pgs == {("distillates", "seq")}


def test_the_postgres_index_splits_headers_as_header_fields(pg_store: Any) -> None:
    from docshelf.store.lexical_fields import header_fields

    for n, header in enumerate(ODD_HEADERS, start=1):
        doc, chunks = make_doc(n, "words")
        chunks = [dataclasses.replace(c, header=header) for c in chunks]
        with pg_store.transaction():
            pg_store.put_document(doc, chunks, vecs(2, seed=n))
    rows = pg_store._q("SELECT header, text, id FROM chunks WHERE tier = 'snippet'")
    assert len(rows) == 2 * len(ODD_HEADERS)
    for header, text, cid in rows:
        title, headings = header_fields(header)
        same = pg_store._q(
            "SELECT fts = setweight(to_tsvector('english'::regconfig, ?), 'A') "
            "|| setweight(to_tsvector('english'::regconfig, ?), 'B') "
            "|| setweight(to_tsvector('english'::regconfig, ?), 'C') FROM chunks WHERE id = ?",
            [title, headings, text, cid],
        )
        assert same[0][0] is True, header


def test_postgres_concurrent_first_opens_migrate_once(pg_url: str) -> None:
    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            open_store(pg_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(_pg_rows(pg_url, "SELECT version FROM schema_migrations")) == len(
        postgres_schema.MIGRATIONS
    )


def test_postgres_claims_skip_locked_jobs(pg_store: Any) -> None:
    """A job row locked elsewhere is passed over at once, not waited for."""
    import psycopg

    for n in (1, 2):
        put(pg_store, n, "x", status="queued")
        pg_store.put_job(make_job(n, next_at=float(n)))
    first, second = make_doc(1, "")[0].id, make_doc(2, "")[0].id
    with psycopg.connect(pg_store._conninfo) as other:  # a transaction holding job 1's row
        other.execute("SELECT 1 FROM jobs WHERE document_id = %s FOR UPDATE", (first,))
        job = pg_store.claim_job("w1", 60.0, now=10.0)
        assert job is not None and job.document_id == second
        assert pg_store.claim_job("w2", 60.0, now=10.0) is None
    job = pg_store.claim_job("w2", 60.0, now=10.0)
    assert job is not None and job.document_id == first


def test_postgres_concurrent_claimers_get_different_jobs(pg_url: str) -> None:
    stores = [open_store(pg_url) for _ in range(2)]  # as if two worker processes
    try:
        for n in range(1, 7):
            put(stores[0], n, "x", status="queued")
            stores[0].put_job(make_job(n, next_at=float(n)))
        claimed: list[str] = []
        lock = threading.Lock()

        def worker(store: SearchStore, name: str) -> None:
            while (job := store.claim_job(name, 60.0, now=10.0)) is not None:
                with lock:
                    claimed.append(job.document_id)

        threads = [threading.Thread(target=worker, args=(stores[i % 2], f"w{i}")) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(claimed) == sorted(make_doc(n, "")[0].id for n in range(1, 7))
    finally:
        for s in stores:
            s.close()


def test_postgres_writers_take_turns_so_event_seqs_commit_in_order(pg_url: str) -> None:
    """One writer at a time across processes (here: two stores), as with SQLite; so a
    later event seq never becomes visible before an earlier one and SSE resumes safely."""
    first, second = open_store(pg_url), open_store(pg_url)
    try:
        doc = put(first, 1, "x")
        inside, release = threading.Event(), threading.Event()
        seqs: dict[str, int] = {}

        def slow_writer() -> None:
            with first.transaction():
                seqs["slow"] = first.add_event(doc.id, "stage")
                inside.set()
                release.wait(10)

        t = threading.Thread(target=slow_writer)
        t.start()
        assert inside.wait(10)
        fast = threading.Thread(
            target=lambda: seqs.setdefault("fast", second.add_event(doc.id, "x"))
        )
        fast.start()
        fast.join(0.3)
        assert fast.is_alive()  # waits for the writer that took an earlier seq
        assert second.events_after(0) == [] and second.get_document(doc.id) is not None
        release.set()
        t.join()
        fast.join(10)
        assert seqs["slow"] < seqs["fast"]
        assert [e.seq for e in second.events_after(0)] == [seqs["slow"], seqs["fast"]]
    finally:
        first.close()
        second.close()


def test_postgres_hnsw_search_agrees_with_the_exact_scan() -> None:
    """With sequential scans and sorts priced out, the pgvector engine must go through
    HNSW."""
    import psycopg

    from docshelf.search.engines.pgvector import PgVector, nearest_sql
    from docshelf.store.sql.dialect import POSTGRES

    dim = 8
    with pg.fresh_schema("enable_seqscan=off", "enable_sort=off") as url:
        store: Any = open_store(url)
        try:
            store.set_meta("embedding_dim", str(dim))
            rng = np.random.default_rng(7)
            for n in range(1, 17):
                tags = ("even",) if n % 2 == 0 else ()
                doc, chunks = make_doc(
                    n, f"w{n}", tags=tags, status="parsing" if n == 16 else "complete"
                )
                v = rng.normal(size=(2, dim)).astype(np.float32)
                store.put_document(doc, chunks, v / np.linalg.norm(v, axis=1, keepdims=True))
            exact = ExactVectorIndex(store)
            engine = PgVector(store)
            even = SearchFilters(tags=("even",))
            for seed in range(5):
                q = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
                q /= np.linalg.norm(q)
                got = engine.search(q, 5, SearchFilters())
                want = exact.search(q, 5)
                assert [c for c, _ in got] == [c for c, _ in want]
                assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
                got = engine.search(q, 5, even)
                want = exact.search(q, 5, store.documents_matching(even))
                assert [c for c, _ in got] == [c for c, _ in want]
            assert engine.search(q, 0, SearchFilters()) == []
            assert store.check() == []
        finally:
            store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            plan = conn.execute(
                "EXPLAIN " + POSTGRES.sql(nearest_sql(dim, "")), [[0.1] * dim, [0.1] * dim, 5]
            ).fetchall()
        assert any(f"vectors_hnsw_{dim}" in row[0] for row in plan), plan


def test_postgres_embedding_size_is_bound_by_the_index(pg_store: Any) -> None:
    put(pg_store, 1, "x")  # 4-dimensional vectors
    with pytest.raises(Conflict, match="drop them first"):
        pg_store.set_meta("embedding_dim", "8")
    pg_store.set_meta("embedding_dim", "4")
    doc, chunks = make_doc(2, "y")
    with pytest.raises(Conflict, match="4-dimensional"):
        pg_store.put_document(doc, chunks, vecs(2, dim=3))
    with pg_store.transaction():
        pg_store.drop_vectors()
        pg_store.set_meta("embedding_dim", "8")  # what `docshelf reindex` does
    names = _pg_rows(
        pg_store._conninfo,
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename = 'vectors' ORDER BY 1",
    )
    assert names == [("vectors_hnsw_8",), ("vectors_pkey",)]
    pg_store.put_vectors([chunks[1].id], vecs(1, dim=3))  # unknown chunk: nothing stored
    assert pg_store.check() == []


def test_postgres_unreachable_server_is_unavailable_without_the_password() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://ann:s3cret@127.0.0.1:1/docshelf?connect_timeout=2"
    with pytest.raises(Unavailable) as info:
        open_store(url)
    assert "s3cret" not in info.value.message
    assert "postgresql://ann:***@127.0.0.1:1/docshelf" in info.value.message


def test_postgres_urls_are_shown_without_passwords() -> None:
    pytest.importorskip("psycopg")
    from docshelf.store.postgres import redact

    assert redact("postgresql://ann:pw@db:5432/lib?password=x&sslmode=require") == (
        "postgresql://ann:***@db:5432/lib?password=***&sslmode=require"
    )
    assert redact("postgres://ann@db/lib") == "postgres://ann@db/lib"
    assert "secret" not in redact("host=db user=ann password=secret")


def test_postgres_without_the_extra_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delitem(sys.modules, "docshelf.store.postgres", raising=False)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(Unavailable, match=r"docshelf\[postgres\]"):
        open_store("postgresql://localhost/x")


def test_concept_filters_tag_counts_and_listing_by_id(store: SearchStore) -> None:
    a, chunks = make_doc(1, "raft consensus", tags=("consensus", "papers"))
    store.put_document(dataclasses.replace(a, concept_ids=("ds", "cs")), chunks, vecs(2))
    b, chunks = make_doc(2, "raft bread", tags=("papers",))
    store.put_document(dataclasses.replace(b, concept_ids=("food",)), chunks, vecs(2))
    either = SearchFilters(concept_groups=(("ds", "food"),))
    assert doc_of(own_engines(store).lexical.search(["raft"], 10, either)) == {"1", "2"}
    both = SearchFilters(concept_groups=(("ds",), ("cs",)))
    assert doc_of(own_engines(store).lexical.search(["raft"], 10, both)) == {"1"}
    none = SearchFilters(concept_groups=(("nothing",),))
    assert own_engines(store).lexical.search(["raft"], 10, none) == []
    assert store.documents_matching(SearchFilters(concept_groups=(("food",),))) == {b.id}
    assert store.tag_counts() == {"papers": 2, "consensus": 1}
    listed = store.list_documents(document_ids=(b.id, "doc_missing"))
    assert [d.id for d in listed] == [b.id]


# -- the library's facets, the date filter and the library list ---------------------------


def _library(store: SearchStore) -> dict[str, Document]:
    """Four documents: two in a folder (files with known times), two uploads."""
    store.add_source(Source("src_1", "/lib", "folder", "h", 1.0))
    store.add_source(Source("src_2", "/other", "folder", "h", 1.0))
    store.put_user(user("u1", "ann"), None)
    y2024 = 1_710_000_000  # 2024-03-09 UTC
    y2025 = 1_740_000_000  # 2025-02-19 UTC
    docs = {}
    specs: list[tuple[int, dict[str, Any], tuple[str, ...], str | None, float | None]] = [
        (
            1,
            {"file_type": "markdown", "tags": ("Raft", "papers"), "source_id": "src_1"},
            ("ds",),
            "paper",
            y2024,
        ),
        (
            2,
            {"file_type": "pdf", "tags": ("papers",), "source_id": "src_1", "title": "Bigtable"},
            ("ds", "storage"),
            "paper",
            y2025,
        ),
        (3, {"file_type": "pdf", "status": "failed", "source_id": "src_2"}, (), None, None),
        (4, {"file_type": "text", "title": "shopping list"}, ("food",), "note", None),
    ]
    for n, kw, concepts, doctype, mtime in specs:
        doc, chunks = make_doc(n, f"words of {n}", rel_path=f"dir{n % 2}/d{n}.md", **kw)
        doc = dataclasses.replace(
            doc,
            concept_ids=concepts,
            document_type=doctype,
            added_at=1_767_000_000.0 + n,  # 2025-12-29 UTC: when they arrived
            size_bytes=100 * n,
        )
        with store.transaction():
            store.put_document(doc, chunks, vecs(2, seed=n))
            if mtime is not None:
                store.put_file(FileRecord(doc.path, "src_1", doc.id, 1, int(mtime * 1e9)))
        docs[str(n)] = doc
    store.grant("u1", docs["2"].id)
    store.grant("u1", docs["4"].id)
    return docs


def test_facet_counts_cover_the_whole_matching_set(store: SearchStore) -> None:
    docs = _library(store)
    counts = store.facet_counts(SearchFilters())
    assert counts == {
        "type": {"pdf": 2, "markdown": 1, "text": 1},
        "doctype": {"paper": 2, "note": 1},
        "source": {"src_1": 2, "src_2": 1},
        "tag": {"papers": 2, "raft": 1},  # a tag in any case, as the tag filter matches
        "concept": {"ds": 2, "food": 1, "storage": 1},
        "date": {"2025": 3, "2024": 1},  # a file's change, else the upload's arrival
    }
    mine = store.facet_counts(SearchFilters(user_id="u1"), ["type", "date"])
    # a user's date is their own: when they got the document (no file of theirs holds
    # it), not another holder's file or upload (issue 41)
    got = store.access_links("u1", [docs["2"].id, docs["4"].id])
    years = [str(time.gmtime(link.added_at).tm_year) for link in got.values()]
    assert mine == {"type": {"pdf": 1, "text": 1}, "date": {y: years.count(y) for y in years}}
    pdf = store.facet_counts(SearchFilters(file_type="pdf"), ["source", "concept"])
    assert pdf == {"source": {"src_1": 1, "src_2": 1}, "concept": {"ds": 1, "storage": 1}}
    assert store.facet_counts(SearchFilters(tags=("nothing",))) == {
        f: {} for f in ("type", "doctype", "source", "tag", "concept", "date")
    }
    with pytest.raises(ValueError, match="Unknown facets"):
        store.facet_counts(SearchFilters(), ["colour"])
    assert docs


def test_the_date_filter_reads_a_file_s_change_or_an_upload_s_arrival(store: SearchStore) -> None:
    docs = _library(store)
    y2025 = SearchFilters(dated_from=1_735_689_600.0, dated_before=1_767_225_600.0)
    assert store.documents_matching(y2025) == {docs[n].id for n in ("2", "3", "4")}
    before = SearchFilters(dated_before=1_735_689_600.0)  # up to the end of 2024
    assert store.documents_matching(before) == {docs["1"].id}
    assert doc_of(own_engines(store).lexical.search(["words"], 10, before)) == {"1"}
    assert not SearchFilters(dated_from=0.0).empty


def test_the_library_list_narrows_sorts_and_counts_exactly(store: SearchStore) -> None:
    from docshelf.store import Listing

    docs = _library(store)

    def ids(listing: Listing, **kw: Any) -> list[str]:
        found = store.list_documents(listing=listing, **kw)
        assert store.count_documents(listing=listing, user_id=kw.get("user_id")) == len(found)
        return [n for d in found for n, doc in docs.items() if doc.id == d.id]

    assert ids(Listing()) == ["2", "4", "1", "3"]  # by path: dir0/, then dir1/
    assert ids(Listing(order="title")) == ["2", "1", "3", "4"]  # Bigtable, Doc 1, Doc 3, shop…
    assert ids(Listing(order="size")) == ["4", "3", "2", "1"]
    assert ids(Listing(order="added")) == ["4", "3", "2", "1"]
    assert ids(Listing(order="type")) == ["1", "2", "3", "4"]
    assert ids(Listing(status="failed")) == ["3"]
    assert ids(Listing(matching="BIG")) == ["2"]
    assert ids(Listing(matching="list shop")) == ["4"]  # every word, in any order
    assert ids(Listing(matching="dir1/")) == ["1", "3"]  # the path counts too
    assert ids(Listing(matching="100%")) == []  # LIKE wildcards are literal
    assert ids(Listing(filters=SearchFilters(file_type="pdf")), user_id="u1") == ["2"]
    assert ids(Listing(filters=SearchFilters(concept_groups=(("ds",),)), order="size")) == [
        "2",
        "1",
    ]
    assert store.list_documents(listing=Listing(order="size"), limit=1, offset=1)[0].id == (
        docs["3"].id
    )
    with pytest.raises(ValueError, match="Unknown order"):
        store.list_documents(listing=Listing(order="colour"))


def test_the_sqlite_file_is_mapped_once_the_process_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that only writes (``add``, ``sync``, a worker) reads the database
    without a memory map, whose pages would count in its RSS for nothing; the first
    search maps it (docs/benchmarks/hostile-input.md, "The map only where searches are
    answered")."""
    from docshelf.shelf import Shelf

    monkeypatch.setenv("DOCSHELF_HOME", str(tmp_path / "home"))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "raft.md").write_text("# Raft\n\nRaft elects a leader by majority vote.\n")
    with Shelf(tmp_path / "home", embedder=None) as shelf:

        def mapped() -> int:
            return int(shelf.store._q("PRAGMA mmap_size", ())[0][0])  # type: ignore[attr-defined]

        shelf.add(notes)
        shelf.sync()
        assert mapped() == 0
        assert shelf.search("leader election", mode="lexical").hits
        assert mapped() > 0


def test_blocks_many_documents_repeat(store: SearchStore) -> None:
    """The store keeps each document's snippet blocks by key (``repeats``): a key is
    repeated from ``least`` documents on; a deleted or rewritten document's blocks go."""
    from docshelf.plaintext import repeat_key

    for n in range(1, 6):
        put(store, n, "edit this note")
    key = repeat_key("edit this note part0")
    assert key is not None
    assert store.repeated([key, "nothing"], 5) == {key} and store.repeated([key], 6) == set()
    store.delete_document(make_doc(1, "")[0].id)
    assert store.repeated([key], 5) == set() and store.repeated([key], 4) == {key}
    put(store, 2, "other words")  # rewritten: its old blocks are no longer its
    assert store.repeated([key], 4) == set() and store.repeated([], 1) == set()
