"""The engines of the user's own (search/engines/external.py: Qdrant, Milvus, Chroma) kept
in step with the SQLite store, each engine started for real: changes found before the
engine has them and after, deletes, re-embeds, access filters, rebuilds, a crash
between engine and record, an engine that lost points, one that fails, and payloads
that never hold text. The search contract itself is tests/test_engines.py's."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docshelf.config import Settings
from docshelf.errors import InvalidInput
from docshelf.model import User
from docshelf.search.engines import collections as collections_module
from docshelf.search.engines import engines_for
from docshelf.search.engines.exact import ExactVectorSearch
from docshelf.search.engines.external import ExternalVectorIndex, open_backend
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters, open_store
from docshelf.store.sqlite import SQLiteStore
from tests.fakes import HashEmbedder
from tests.test_engines import EXTERNAL
from tests.test_store import doc_of, make_doc, vecs

DIM = 4
TEXTS = ["raft leader election", "bread flour", "raft log replication", "plumber"]


def put(store: SQLiteStore, n: int, text: str) -> None:
    doc, chunks = make_doc(n, text, tags=("dist",) if n in (1, 3) else ())
    with store.transaction():
        store.put_document(doc, chunks, vecs(2, dim=DIM, seed=n))


@pytest.fixture(params=list(EXTERNAL))
def engine(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[SQLiteStore, ExternalVectorIndex]]:
    """Four documents of two snippets each, in a store with the engine built beside it."""
    store = open_store(f"sqlite:///{tmp_path / 'docshelf.db'}")
    assert isinstance(store, SQLiteStore)
    store.set_meta("embedding_dim", str(DIM))
    for n, text in enumerate(TEXTS, start=1):
        put(store, n, text)
    index = EXTERNAL[request.param](store, request)
    assert isinstance(index, ExternalVectorIndex)
    yield store, index
    store.close()


def nearest_of(store: SQLiteStore, n: int) -> np.ndarray:
    """The first vector of test document ``n``, as the store holds it."""
    return np.asarray(vecs(2, dim=DIM, seed=n)[0], dtype=np.float32)


def exact(store: SQLiteStore, q: np.ndarray, filters: SearchFilters) -> list[str]:
    return [c for c, _ in ExactVectorSearch(store).search(q, 10, filters)]


def held(index: ExternalVectorIndex) -> set[int]:
    record = index._usable(index.epoch_of(index.mode()))
    assert record is not None
    return set(index.backend.keys(record.collection))


def test_changes_are_found_before_the_engine_has_them_and_after(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
) -> None:
    store, index = engine
    none = SearchFilters()
    put(store, 6, "raft snapshots")  # added: answered from the delta until maintained
    q = nearest_of(store, 6)
    for step in ("delta", "engine"):
        top = index.search(q, 3, none)
        assert doc_of(top[:1]) == {"6"} and top[0][1] == pytest.approx(1.0, abs=1e-3), step
        assert [c for c, _ in top] == exact(store, q, none)[:3], step
        if step == "delta":
            assert index.maintain() == "updated"
    assert len(held(index)) == 10
    store.delete_document(make_doc(1, "")[0].id)  # deleted: never shown again
    q1 = nearest_of(store, 1)
    assert "1" not in doc_of(index.search(q1, 10, none))
    assert index.maintain() == "updated"
    assert "1" not in doc_of(index.search(q1, 10, none)) and len(held(index)) == 8
    # re-embedded: found by its new vector
    target = next(c.id for c in make_doc(3, "")[1] if c.tier == "snippet")
    moved = np.asarray(vecs(1, dim=DIM, seed=99)[0], dtype=np.float32)
    store.put_vectors([target], moved[None, :])
    for _ in range(2):
        (first,) = index.search(moved, 1, none)
        assert first[0] == target and first[1] == pytest.approx(1.0, abs=1e-3)
        index.maintain()
    record = index._usable(index.epoch_of(index.mode()))
    assert record is not None
    engine_top = index.backend.nearest(record.collection, moved, 1, None)[0]
    assert engine_top[1] == pytest.approx(1.0, abs=1e-3)  # the engine holds the new vector
    assert index.audit() is not None and not index.audit().problems()  # type: ignore[union-attr]


def test_a_user_sees_what_was_granted_at_once(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
) -> None:
    store, index = engine
    ids = [make_doc(n, "")[0].id for n in range(1, 5)]
    store.put_user(User("u1", "one", False, 0.0), None)
    store.grant("u1", ids[0])
    mine = SearchFilters(user_id="u1")
    q = nearest_of(store, 2)
    assert doc_of(index.search(q, 10, mine)) == {"1"}
    store.grant("u1", ids[1])
    assert doc_of(index.search(q, 1, mine)) == {"2"}
    store.revoke_access("u1", ids[1])
    assert doc_of(index.search(q, 10, mine)) == {"1"}


def test_a_rebuild_fills_a_new_collection_and_drops_the_old(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
) -> None:
    store, index = engine
    ours = index._base()
    before = {name for name in index.backend.names() if name.startswith(ours)}
    assert index.maintain(rebuild=True) == "rebuilt"
    after = {name for name in index.backend.names() if name.startswith(ours)}
    assert len(after) == len(before) == 1 and after != before
    q, none = nearest_of(store, 4), SearchFilters()
    assert [c for c, _ in index.search(q, 5, none)] == exact(store, q, none)[:5]


def test_a_crash_between_the_engine_and_its_record_heals(
    engine: tuple[SQLiteStore, ExternalVectorIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine written, the record not moved on: search is right (the delta answers for
    what changed), and the next upkeep writes the same again and moves on."""
    store, index = engine

    def crash(directory: Path, record: Any) -> None:
        raise OSError("killed before the record was written")

    monkeypatch.setattr(collections_module, "write_record", crash)
    put(store, 7, "raft membership")
    store.delete_document(make_doc(2, "")[0].id)
    with pytest.raises(OSError):
        index.maintain()
    monkeypatch.undo()
    q = nearest_of(store, 7)
    assert [c for c, _ in index.search(q, 8, SearchFilters())] == exact(store, q, SearchFilters())
    assert index.maintain() == "updated"
    assert not index.audit().problems()  # type: ignore[union-attr]
    assert [c for c, _ in index.search(q, 8, SearchFilters())] == exact(store, q, SearchFilters())


def test_an_engine_that_lost_points_is_rebuilt(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
) -> None:
    _, index = engine
    record = index._usable(index.epoch_of(index.mode()))
    assert record is not None
    index.backend.delete(record.collection, sorted(held(index))[:3])
    audit = index.audit()
    assert audit is not None and audit.missing == 3  # status --check tells
    assert index.maintain(force=True) == "rebuilt"
    assert not index.audit().problems()  # type: ignore[union-attr]
    assert len(held(index)) == 8


def test_a_failing_engine_is_answered_exactly(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, index = engine
    index.strict = False

    def down(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise ConnectionError("engine down")

    monkeypatch.setattr(index.backend, "nearest", down)
    q = nearest_of(store, 3)
    with caplog.at_level(logging.WARNING):
        hits = index.search(q, 4, SearchFilters(tags=("dist",)))
    assert [c for c, _ in hits] == exact(store, q, SearchFilters(tags=("dist",)))[:4]
    assert "engine down" in caplog.text


def test_the_engine_holds_ids_never_text(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
) -> None:
    """What each engine stores of a snippet, read back with its own client: the seq, the
    chunk id, the document id and the vector — no text, no title, no path."""
    _, index = engine
    record = index._usable(index.epoch_of(index.mode()))
    assert record is not None
    kind = index.backend.kind
    client: Any = getattr(index.backend, "_client", None)
    if kind == "qdrant":
        points, _ = client.scroll(record.collection, limit=100, with_payload=True)
        stored = [dict(p.payload) for p in points]
    elif kind == "typesense":
        exported = index.backend.server.client.collections[record.collection].documents.export()  # type: ignore[attr-defined]
        rows = [json.loads(line) for line in exported.splitlines()]
        stored = [{k: v for k, v in r.items() if k not in ("id", "seq", "embedding")} for r in rows]
    elif kind == "chroma":
        got = client.get_collection(record.collection).get(include=["metadatas", "documents"])
        assert got["documents"] is None or set(got["documents"]) == {None}
        stored = [dict(m) for m in got["metadatas"]]
    else:
        rows = client.query(record.collection, filter="", output_fields=["*"], limit=100)
        stored = [{k: v for k, v in r.items() if k not in ("seq", "vector")} for r in rows]
    assert len(stored) == 8
    chunks = {c.id: c for n in range(1, 5) for c in make_doc(n, "")[1]}
    for payload in stored:
        assert set(payload) == {"chunk_id", "document_id"}
        assert payload["chunk_id"] in chunks
        assert payload["document_id"] == chunks[payload["chunk_id"]].document_id
    words = {w for text in TEXTS for w in text.split()}
    assert not any(w in repr(stored) for w in words)


def test_a_vector_url_is_checked() -> None:
    for url, says in [
        ("redis://localhost/0", "not a vector engine"),
        ("qdrant+local://", "qdrant\\+local:///path"),
        ("qdrant://localhost:6333/2bad", "must be a letter"),
        ("chroma:///tmp/c?collection=a-b", "must be a letter"),
        ("milvus:///tmp/vectors", "file.db"),
    ]:
        with pytest.raises(InvalidInput, match=says):
            open_backend(url)


def test_only_the_sqlite_store_takes_a_vector_engine(tmp_path: Path) -> None:
    class Elsewhere:
        url = "postgresql://db.example/docshelf"

    settings = Settings(tmp_path, "", "none", vector_url="qdrant+local:///x")
    with pytest.raises(InvalidInput, match="DOCSHELF_VECTOR_URL"):
        engines_for(Elsewhere(), settings)  # type: ignore[arg-type]


def test_a_library_searches_through_its_engine(
    isolated_home: Path, notes: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """End to end: DOCSHELF_VECTOR_URL set, a folder added; the engine is built after
    ingest, status names it, and a vector search is answered by it."""
    monkeypatch.setenv("DOCSHELF_VECTOR_URL", f"qdrant+local://{tmp_path / 'qdrant'}")
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        index = shelf.vector_index
        assert isinstance(index, ExternalVectorIndex)
        assert index.path == "qdrant"
        assert shelf.status().vector_index["path"] == "qdrant"
        index.strict = True
        hits = shelf.search("leader election heartbeat", mode="vector").hits
        assert hits and hits[0].document.rel_path == "projects/raft.md"


def test_libraries_sharing_an_engine_keep_to_their_own_collections(tmp_path: Path) -> None:
    """An unnamed collection is the library's (``docshelf_<library>``): a second library
    built on the same engine leaves the first one's alone; a named one is the URL's."""
    built: list[tuple[SQLiteStore, ExternalVectorIndex]] = []
    for n, url in enumerate(
        [f"chroma://{tmp_path}/chroma"] * 2 + [f"chroma://{tmp_path}/chroma?collection=notes"]
    ):
        store = open_store(f"sqlite:///{tmp_path / f'lib{n}' / 'docshelf.db'}")
        assert isinstance(store, SQLiteStore)
        store.set_meta("embedding_dim", str(DIM))
        put(store, n + 1, TEXTS[n])
        backend, name = open_backend(url)
        index = ExternalVectorIndex(store, backend, name, strict=True)
        assert index.maintain(force=True) == "built"
        built.append((store, index))
    names = built[0][1].backend.names()
    assert len(names) == 3 and sum(name.startswith("notes_") for name in names) == 1
    for n, (store, index) in enumerate(built):
        q = nearest_of(store, n + 1)
        assert doc_of(index.search(q, 1, SearchFilters())) == {str(n + 1)}
        index.close()
        store.close()


def test_an_engine_one_process_may_open_gets_no_resident_helper(tmp_path: Path) -> None:
    """Qdrant's local mode and Milvus Lite lock their files: a CLI search must not leave a
    resident helper holding them from every later command."""
    from docshelf.cli.resident import policy

    for url, helper in [
        ("qdrant+local:///x", "off"),
        ("milvus:///x/v.db?collection=a", "off"),
        ("chroma:///x", "auto"),
        ("qdrant://h:6333", "auto"),
        (None, "auto"),
    ]:
        assert policy(Settings(tmp_path, "", "none", vector_url=url)) == helper, url


# (Milvus Lite keeps its file locked until the process that opened it ends, so the
# killed process could not open the test's: its upkeep is the others' code, in the test above)
@pytest.mark.parametrize("url", ["qdrant+local://{dir}/qdrant", "chroma://{dir}/chroma"])
def test_a_process_killed_between_the_engine_and_its_record_heals(url: str, tmp_path: Path) -> None:
    """A real process dies (SIGKILL) in its upkeep after the engine took the writes and
    before the record moved on: the next process answers as the store does, and its
    upkeep writes the same again and moves on (the engines that keep their own files,
    whose locks and writes a killed client leaves behind)."""
    url = url.format(dir=tmp_path)
    store = open_store(f"sqlite:///{tmp_path / 'docshelf.db'}")
    assert isinstance(store, SQLiteStore)
    store.set_meta("embedding_dim", str(DIM))
    for n, words in enumerate(TEXTS, start=1):
        put(store, n, words)
    backend, name = open_backend(url)
    first = ExternalVectorIndex(store, backend, name, strict=True)
    assert first.maintain() == "built"
    first.close()
    put(store, 7, "raft membership")
    store.delete_document(make_doc(2, "")[0].id)
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        import docshelf.search.engines.collections as collections
        from docshelf.search.engines.external import ExternalVectorIndex, open_backend
        from docshelf.store.sqlite import SQLiteStore

        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

        collections.write_record = die
        store = SQLiteStore(Path({str(tmp_path / "docshelf.db")!r}))
        backend, name = open_backend({url!r})
        print(ExternalVectorIndex(store, backend, name).maintain())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent.parent)
    assert proc.returncode == -signal.SIGKILL
    backend, name = open_backend(url)
    index = ExternalVectorIndex(store, backend, name, strict=True)
    try:
        record = index._usable(index.epoch_of(index.mode()))
        assert record is not None and record.position < store.vector_log_position()
        # the engine took the writes (one document's points in, another's out)
        assert set(backend.keys(record.collection)) == set(store.vector_seqs().tolist())
        q, none = nearest_of(store, 7), SearchFilters()
        assert [c for c, _ in index.search(q, 8, none)] == exact(store, q, none)
        assert index.maintain() == "updated"
        assert not index.audit().problems()  # type: ignore[union-attr]
        assert [c for c, _ in index.search(q, 8, none)] == exact(store, q, none)
    finally:
        index.close()
        store.close()


def test_a_rebuild_by_another_process_is_searched_at_once(
    engine: tuple[SQLiteStore, ExternalVectorIndex],
) -> None:
    """Another process's index (its own view of the record) rebuilds: the next search
    here reads the new collection, never the dropped one (strict: that would raise)."""
    store, index = engine
    other = ExternalVectorIndex(store, index.backend, index.name, strict=True)
    q, none = nearest_of(store, 1), SearchFilters()
    before = [c for c, _ in other.search(q, 3, none)]
    assert index.maintain(rebuild=True) == "rebuilt"
    assert [c for c, _ in other.search(q, 3, none)] == before
