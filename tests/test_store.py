"""The Store contract, run against every backend available here."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from docshelf.errors import InvalidInput
from docshelf.model import Chunk, Document, Failure, Source, Tier, chunk_id, document_id
from docshelf.store import FileRecord, SearchFilters, Store, open_store
from docshelf.store.sqlite_schema import MIGRATIONS


@pytest.fixture(params=["sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    yield s
    s.close()


def make_doc(n: int, words: str, *, tags: tuple[str, ...] = ()) -> tuple[Document, list[Chunk]]:
    fp = hashlib.sha256(str(n).encode()).hexdigest()
    did = document_id(fp)
    doc = Document(
        id=did,
        sha256=fp,
        title=f"Doc {n}",
        path=f"/lib/d{n}.md",
        rel_path=f"d{n}.md",
        source_id=None,
        source_host="h",
        file_type="markdown",
        size_bytes=10,
        added_at=1.0,
        updated_at=1.0,
        tags=tags,
    )
    section = Chunk(
        id=chunk_id(fp, Tier.SECTION, 0),
        document_id=did,
        tier=Tier.SECTION,
        index=0,
        text=words,
        header=f"[DOC: Doc {n}]",
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
            header=f"[DOC: Doc {n}]",
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


def put(store: Store, n: int, words: str, **kw: tuple[str, ...]) -> Document:
    doc, chunks = make_doc(n, words, **kw)
    with store.transaction():
        store.put_document(doc, chunks, vecs(2, seed=n))
    return doc


def test_migrations_recorded_and_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    open_store(url).close()
    s = open_store(url)  # reopening applies nothing twice
    s.close()
    con = sqlite3.connect(tmp_path / "s.db")
    rows = con.execute("SELECT version, name FROM schema_migrations").fetchall()
    assert rows == [(m.version, m.name) for m in MIGRATIONS]
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_document_round_trip(store: Store) -> None:
    doc = put(store, 1, "alpha beta", tags=("t1",))
    got = store.get_document(doc.id)
    assert got is not None
    assert got.title == "Doc 1" and got.tags == ("t1",)
    assert got.chunk_counts == {"section": 1, "snippet": 2}
    chunks = store.chunks_of_document(doc.id, Tier.SNIPPET)
    assert [c.index for c in chunks] == [0, 1]
    assert chunks[0].heading_path == ("H",) and chunks[0].parent_id
    assert store.get_chunks([chunks[1].id, "nope", chunks[0].id]) == [chunks[1], chunks[0]]


def test_each_write_is_atomic_on_its_own(store: Store) -> None:
    doc, chunks = make_doc(1, "x")
    with pytest.raises(ValueError, match="vectors"):
        store.put_document(doc, chunks, vecs(5))
    assert store.get_document(doc.id) is None
    store.put_document(doc, chunks, vecs(2))
    assert store.get_document(doc.id) is not None


def test_rollback_leaves_nothing(store: Store) -> None:
    doc, chunks = make_doc(1, "gamma")
    with pytest.raises(ZeroDivisionError), store.transaction():
        store.put_document(doc, chunks, vecs(2))
        1 / 0  # noqa: B018
    assert store.get_document(doc.id) is None
    assert store.lexical_search(["gamma"], 10, SearchFilters()) == []
    assert store.vector_snapshot().chunk_ids == []


def test_nested_transactions_roll_back_inner_only(store: Store) -> None:
    with store.transaction():
        put(store, 1, "outer")
        with pytest.raises(ValueError), store.transaction():
            put(store, 2, "inner")
            raise ValueError
    assert store.get_document(make_doc(1, "")[0].id) is not None
    assert store.get_document(make_doc(2, "")[0].id) is None


def test_delete_leaves_no_trace_in_indexes(store: Store) -> None:
    doc = put(store, 1, "delta")
    put(store, 2, "epsilon")
    g = store.generation()
    with store.transaction():
        store.delete_document(doc.id)
    assert store.generation() > g
    assert store.lexical_search(["delta"], 10, SearchFilters()) == []
    assert all(
        not c.startswith(f"chunk_{doc.sha256[:12]}") for c in store.vector_snapshot().chunk_ids
    )
    assert store.check() == []


def test_replace_document_in_place(store: Store) -> None:
    doc = put(store, 1, "zeta")
    doc2, chunks = make_doc(1, "eta")
    with store.transaction():
        store.put_document(doc2, chunks, vecs(2))
    assert store.lexical_search(["zeta"], 10, SearchFilters()) == []
    assert len(store.lexical_search(["eta"], 10, SearchFilters())) == 2
    assert len(store.vector_snapshot().chunk_ids) == 2
    assert store.get_document(doc.id) is not None


def test_lexical_search_ranks_and_filters(store: Store) -> None:
    put(store, 1, "raft raft consensus", tags=("dist",))
    put(store, 2, "raft bread")
    hits = store.lexical_search(["raft"], 10, SearchFilters())
    assert hits[0][1] >= hits[-1][1]
    tagged = store.lexical_search(["raft"], 10, SearchFilters(tags=("DIST",)))
    assert {h[0].split("_")[1] for h in tagged} == {make_doc(1, "")[0].sha256[:12]}
    assert store.lexical_search(['raft" OR "x'], 10, SearchFilters()) == []


def test_vector_snapshot_and_generation(store: Store) -> None:
    assert store.vector_snapshot().matrix.shape[0] == 0
    put(store, 1, "a")
    snap = store.vector_snapshot()
    assert snap.matrix.shape == (2, 4) and snap.generation == store.generation()
    assert np.allclose(np.linalg.norm(snap.matrix, axis=1), 1.0)


def test_embedding_cache(store: Store) -> None:
    v = vecs(2)
    store.cache_embeddings("m", [("h1", v[0]), ("h2", v[1])])
    got = store.cached_embeddings("m", ["h1", "h3"])
    assert set(got) == {"h1"} and np.allclose(got["h1"], v[0])
    assert store.cached_embeddings("other", ["h1"]) == {}


def test_sources_files_and_failures(store: Store) -> None:
    src = Source("src_1", "/lib", "folder", "h", 1.0)
    store.add_source(src)
    assert store.find_source("/lib") == src and store.list_sources() == [src]
    doc = put(store, 1, "x")
    store.put_file(FileRecord("/lib/d1.md", "src_1", doc.id, 10, 5))
    assert store.files_of_document(doc.id)[0].mtime_ns == 5
    store.record_failures("src_1", [Failure("/lib/bad.md", "empty file")])
    assert store.count_failures() == 1
    store.record_failures("src_1", [])
    assert store.list_failures() == []
    store.delete_source("src_1")
    assert store.files_of_source("src_1") == {}


def test_bad_database_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InvalidInput, match="not a docshelf database"):
        open_store(f"sqlite:///{bad}")
    with pytest.raises(InvalidInput):
        open_store("mysql://x")


def test_check_finds_missing_vectors(store: Store) -> None:
    store.set_meta("embedding_model", "m")
    doc, chunks = make_doc(1, "x")
    with store.transaction():
        store.put_document(doc, chunks, None)
    assert any("no vector" in p for p in store.check())
