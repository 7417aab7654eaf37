"""Reindex: a new generation of chunks and vectors is staged while search answers from
the old one, swapped in by one transaction, resumable after a real kill."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from docshelf.errors import Conflict, NotFound
from docshelf.ingest.worker import Worker
from docshelf.model import Tier
from docshelf.progress import ProgressEvent
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]


def _snippets(shelf: Shelf) -> dict[str, list[str]]:
    return {
        d.rel_path: [c.id for c in shelf.store.chunks_of_document(d.id, Tier.SNIPPET)]
        for d in shelf.documents()
    }


def _long_notes(root: Path) -> Path:
    root.mkdir()
    for i in range(6):
        body = "\n\n".join(f"## Part {j}\n\nTopic {i} part {j}. " + FILLER * 4 for j in range(4))
        (root / f"note{i}.md").write_text(f"# Note {i}\n\n{body}\n")
    return root


def test_new_chunking_and_model_swap_in_whole(isolated_home: Path, tmp_path: Path) -> None:
    notes = _long_notes(tmp_path / "notes")
    with Shelf(isolated_home, embedder=HashEmbedder("model-a", window=256)) as shelf:
        shelf.add(notes)
        before = _snippets(shelf)
    seen_during: list[str] = []
    b = HashEmbedder("model-b", window=96)  # smaller window: smaller snippets
    with Shelf(isolated_home, embedder=b, check_model=False) as shelf:
        old = Shelf(isolated_home, embedder=HashEmbedder("model-a", window=256))

        def progress(event: ProgressEvent) -> None:
            if event.phase == "embed" and event.done == 3:
                # Halfway: readers still get the old generation, hybrid, with model a.
                result = old.search("topic 2 part 1")
                seen_during.append(result.mode)
                assert old.store.get_meta("embedding_model") == "model-a"
                assert _snippets(old) == before

        result = shelf.reindex(progress=progress)
        old.close()
        assert result["documents"] == 6 and result["rechunked"] == 6
        assert result["embedding_model"] == "model-b" and result["failures"] == []
        after = _snippets(shelf)
        assert sum(map(len, after.values())) > sum(map(len, before.values()))
        for doc in shelf.documents():
            assert doc.embedding_model == "model-b"
            for c in shelf.store.chunks_of_document(doc.id, Tier.SNIPPET):
                assert b.count_tokens(c.retrieval_text) + 2 <= b.window
        assert shelf.check() == []
        assert shelf.search("topic 2 part 1").mode == "hybrid"
    assert seen_during == ["hybrid"]
    with pytest.raises(Conflict):  # the library is model b's now
        Shelf(isolated_home, embedder=HashEmbedder("model-a"))


def test_one_document_alone(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    doc = next(d for d in shelf.documents() if d.rel_path == "projects/raft.md")
    before = shelf.store.chunks_of_document(doc.id, Tier.SNIPPET)
    result = shelf.reindex(document_id=doc.id)
    assert result["documents"] == 1 and result["rechunked"] == 1
    assert shelf.store.chunks_of_document(doc.id, Tier.SNIPPET) == before  # same settings
    with pytest.raises(NotFound):
        shelf.reindex(document_id="doc_unknown")
    other = Shelf(shelf.settings.home, embedder=HashEmbedder("model-z"), check_model=False)
    with pytest.raises(Conflict, match="whole library"):
        other.reindex(document_id=doc.id)
    other.close()


def test_a_reindex_titles_each_file_as_a_sync_now_would(tmp_path: Path) -> None:
    """A title an older parser gave (a chapter file's name, say) is not kept by a reindex:
    the file is titled again as it is read now."""
    import dataclasses

    book = tmp_path / "book"
    book.mkdir()
    (book / "ch03-02-data-types.md").write_text(
        "# Data Types\n\nEvery value has a type.\n\n## Scalar Types\n\nIntegers, floats.\n"
    )
    with Shelf(tmp_path / "home", embedder=None) as shelf:
        shelf.add(book)
        (doc,) = shelf.documents()
        assert doc.title == "Data Types"
        chunks = [
            *shelf.store.chunks_of_document(doc.id, Tier.SECTION),
            *shelf.store.chunks_of_document(doc.id, Tier.SNIPPET),
        ]
        with shelf.store.transaction():  # as an older parser titled it
            older = dataclasses.replace(doc, title="ch03-02-data-types")
            shelf.store.put_document(older, chunks, None)
        assert shelf.documents()[0].title == "ch03-02-data-types"
        shelf.reindex()
        assert shelf.documents()[0].title == "Data Types"


def test_uploads_are_rechunked_from_their_blob_and_lost_files_re_embedded(
    shelf: Shelf, notes: Path
) -> None:
    shelf.add(notes)
    user, _ = shelf.create_user("alice")
    shelf.upload(user.id, "paxos.md", b"# Paxos\n\nAcceptors promise ballots.\n")
    while Worker(shelf, name="w").run_once():
        pass
    (notes / "todo.txt").unlink()  # gone from disk, not yet synced: its bytes are unavailable
    result = shelf.reindex()
    assert result["documents"] == 4
    assert result["rechunked"] == 3 and result["reembedded"] == 1
    assert [p.kind for p in shelf.check()] == ["gone_files"]  # until a sync forgets it
    shelf.sync()
    assert shelf.check() == []


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, sys.argv[2])
    from docshelf.ingest import reindex
    from docshelf.shelf import Shelf
    from tests.fakes import HashEmbedder

    real = reindex._stage
    calls = []

    def stage(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)

    reindex._stage = stage
    with Shelf(sys.argv[1], embedder=HashEmbedder("model-b"), check_model=False) as shelf:
        shelf.reindex()
    """
)


def test_a_killed_reindex_leaves_the_old_generation_and_resumes(
    isolated_home: Path, tmp_path: Path
) -> None:
    notes = _long_notes(tmp_path / "notes")
    with Shelf(isolated_home, embedder=HashEmbedder("model-a")) as shelf:
        shelf.add(notes)
        before = _snippets(shelf)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(isolated_home), str(ROOT)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr.decode()
    with Shelf(isolated_home, embedder=HashEmbedder("model-a")) as shelf:
        assert shelf.store.get_meta("embedding_model") == "model-a"  # nothing switched
        assert _snippets(shelf) == before
        assert shelf.search("topic 3 part 2").mode == "hybrid"
    with Shelf(isolated_home, embedder=HashEmbedder("model-b"), check_model=False) as shelf:
        result = shelf.reindex()
        assert result["resumed"] == 3 and result["documents"] == 6
        assert shelf.store.get_meta("embedding_model") == "model-b"
        assert shelf.check() == []


def test_api_reindex_is_for_admins_and_runs_in_the_background(shelf: Shelf, notes: Path) -> None:
    import time

    from fastapi.testclient import TestClient

    from docshelf.api import create_app

    shelf.add(notes)
    doc = shelf.documents()[0]
    admin = {"Authorization": f"Bearer {shelf.local_admin_token()}"}
    _, token = shelf.create_user("bob")
    bob = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(shelf)) as client:
        assert client.post("/v1/reindex", json={}, headers=bob).status_code == 403
        assert client.get("/v1/reindex", headers=bob).status_code == 403
        idle = {"state": "idle", "due": None}  # a library made by this chunker
        assert client.get("/v1/reindex", headers=admin).json() == idle
        r = client.post("/v1/reindex", json={"document_id": doc.id}, headers=admin)
        assert r.status_code == 200 and r.json()["documents"] == 1
        r = client.post("/v1/reindex", json={"document_id": "doc_nope"}, headers=admin)
        assert r.status_code == 404
        assert client.post("/v1/reindex", json={"x": 1}, headers=admin).status_code == 400
        r = client.post("/v1/reindex", json={}, headers=admin)
        assert r.status_code == 202 and r.json()["state"] == "running"
        state: dict[str, object] = {}
        for _ in range(200):
            state = client.get("/v1/reindex", headers=admin).json()
            if state["state"] != "running":
                break
            time.sleep(0.05)
        assert state["state"] == "done", state
        assert state["result"]["documents"] == len(shelf.documents())  # type: ignore[index]
