"""Uploads received together are committed together (api/uploads.py, api/batching.py):
one thread hop and one store transaction for the batch, its blobs fsynced side by side
(blobs/local.py), each upload answered 202 only after that shared commit — and nothing
answered is lost, even when the server is killed at once."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from docshelf.api import create_app
from docshelf.api.batching import Batched
from docshelf.blobs.local import LocalBlobStore
from docshelf.errors import InvalidInput, NotFound, Unavailable
from docshelf.ingest.held import HOLD_BYTES
from docshelf.ingest.uploads import Upload, UploadResult
from docshelf.ingest.worker import Worker
from docshelf.shelf import Shelf
from docshelf.store.sqlite import SQLiteStore
from tests.test_cluster import free_port
from tests.test_shutdown import env, until


def note(i: int) -> bytes:
    return f"# Note {i}\n\nraft leader election, note number {i}.\n".encode()


# -- the batches ------------------------------------------------------------------------


def test_items_that_arrive_while_a_call_runs_go_in_the_next_call_together() -> None:
    calls: list[list[int]] = []
    release = threading.Event()

    def run(items: Sequence[int]) -> list[int | BaseException]:
        calls.append(list(items))
        if len(calls) == 1:
            release.wait(10)
        return [InvalidInput(f"no {i}") if i == 3 else i * 10 for i in items]

    batched: Batched[int, int] = Batched(run)

    async def main() -> list[int | BaseException]:
        first = asyncio.create_task(batched(0))
        while not calls:
            await asyncio.sleep(0.001)
        rest = [asyncio.create_task(batched(i)) for i in range(1, 6)]
        await asyncio.sleep(0.05)
        release.set()
        return await asyncio.gather(first, *rest, return_exceptions=True)

    outcomes = asyncio.run(main())
    assert calls == [[0], [1, 2, 3, 4, 5]]
    assert outcomes[:3] == [0, 10, 20] and outcomes[4:] == [40, 50]
    assert isinstance(outcomes[3], InvalidInput)  # one item's error is its own


def test_a_failing_call_fails_its_items_and_the_next_call_still_runs() -> None:
    def run(items: Sequence[str]) -> list[str | BaseException]:
        if "bad" in items:
            raise Unavailable("the store is busy")
        return [item.upper() for item in items]

    batched: Batched[str, str] = Batched(run)

    async def main() -> tuple[BaseException | str, str]:
        failed = await asyncio.gather(batched("bad"), return_exceptions=True)
        return failed[0], await batched("good")

    failed, good = asyncio.run(main())
    assert isinstance(failed, Unavailable) and good == "GOOD"


def test_tokens_that_arrive_together_are_checked_in_one_query_each_on_its_own(
    shelf: Shelf,
) -> None:
    (alice, alice_token), (_, bob_token) = (shelf.create_user(n) for n in ("alice", "bob"))
    shelf.revoke_user("bob")
    store = shelf.store
    assert isinstance(store, SQLiteStore)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        users = shelf.authenticate_many([alice_token, bob_token, "dsk_unknown", "", alice_token])
    finally:
        store._db.set_trace_callback(None)
    assert [u.id if u else None for u in users] == [alice.id, None, None, None, alice.id]
    assert len([s for s in statements if "FROM users" in s]) == 1
    assert shelf.authenticate(alice_token) == alice and shelf.authenticate(bob_token) is None


# -- one transaction for the uploads that arrive together --------------------------------


def test_uploads_sent_together_share_a_commit_and_each_is_recorded(shelf: Shelf) -> None:
    users = [shelf.create_user(name) for name in ("alice", "bob")]
    app = create_app(shelf)
    store = shelf.store
    assert isinstance(store, SQLiteStore)
    commits_before = store._commits  # the SQLite store's count of its commits
    bodies = [note(i) for i in range(12)] + [note(0), note(1)]  # two copies, one by bob

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/v1/documents",
                        files={"file": (f"n{i}.md", body, "text/markdown")},
                        headers={"Authorization": f"Bearer {users[i == 13][1]}"},
                    )
                    for i, body in enumerate(bodies)
                )
            )

    answers = asyncio.run(main())
    commits = store._commits - commits_before
    assert [a.status_code for a in answers] == [202] * len(bodies)
    assert len({a.json()["document_id"] for a in answers}) == 12
    # a transaction per upload before; now the burst shares one or two
    assert 1 <= commits <= 3, commits
    docs = shelf.store.list_documents(limit=100)
    assert len(docs) == 12 and all(d.status == "queued" for d in docs)
    for answer, body in zip(answers, bodies, strict=True):
        fingerprint = answer.json()["fingerprint"]
        assert shelf.blobs.read(fingerprint) == body
        assert shelf.job(answer.json()["document_id"]).status == "queued"
    bob_id = users[1][0].id
    assert shelf.store.has_access(bob_id, answers[13].json()["document_id"])


def test_a_batch_records_each_upload_or_that_ones_own_refusal(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    shas = []
    for i in range(3):
        with shelf.blobs.writer(1 << 20) as writer:
            writer.write(note(i))
            shas.append(writer.commit())
    shelf.blobs.delete(shas[1])  # deleted between its blob write and its recording
    outcomes = shelf.register_uploads(
        [Upload(alice, f"n{i}.md", sha, len(note(i))) for i, sha in enumerate(shas)]
        + [Upload(alice, "n3.exe", shas[0], 1)]
    )
    assert isinstance(outcomes[0], UploadResult) and outcomes[0].created
    assert isinstance(outcomes[1], Unavailable) and "send it again" in outcomes[1].message
    assert isinstance(outcomes[2], UploadResult) and outcomes[2].created
    assert isinstance(outcomes[3], InvalidInput)  # no parser for .exe
    assert {d.sha256 for d in shelf.store.list_documents(limit=10)} == {shas[0], shas[2]}
    assert Worker(shelf).run_once() and Worker(shelf).run_once()
    assert not Worker(shelf).run_once()


def test_a_batch_records_each_new_upload_in_a_few_statements(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    shas = []
    for i in range(10):
        with shelf.blobs.writer(1 << 20) as writer:
            writer.write(note(i))
            shas.append(writer.commit())
    store = shelf.store
    assert isinstance(store, SQLiteStore)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        outcomes = shelf.register_uploads(
            [Upload(alice, f"n{i}.md", sha, len(note(i))) for i, sha in enumerate(shas)]
        )
    finally:
        store._db.set_trace_callback(None)
    assert all(isinstance(o, UploadResult) and o.created for o in outcomes)
    # ours, not SQLite's own (a trigger's, or the full-text index reading its settings)
    statements = [s for s in statements if not s.startswith("--") and "'main'." not in s]
    # a document, its job, the grant and two events each (rows of one statement per table:
    # SQLite's trace shows each row), the documents looked up at once, the model binding
    # read once (with the first write's chunker version, read and written once: 2 more);
    # no savepoint around each upload or each write (25 statements an upload before, 15
    # after the first group commit); the durable commit's two pragmas (synchronous FULL
    # for it, NORMAL after)
    assert statements[0] == "PRAGMA synchronous=FULL"
    assert statements[-1] == "PRAGMA synchronous=NORMAL"
    assert len(statements) <= 5 * len(shas) + 22, statements
    savepoints = [s for s in statements if s.startswith("SAVEPOINT")]
    # the batch's rows (1), and the first write's binding of the model and of the
    # chunker's version (4)
    assert len(savepoints) <= 5, savepoints
    assert len(shelf.store.list_documents(limit=100)) == 10


# -- small uploads held in the store until parsed (ingest/held.py) ------------------------


def _blob_file(shelf: Shelf, sha: str) -> Path:
    path = shelf.blobs.local_path(sha)
    return path if path is not None else Path("/nonexistent")


def test_a_small_upload_is_held_with_its_record_until_its_parse_moves_it(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    small = shelf.upload(alice, "small.md", note(1))
    large_body = note(2) + b"words " * (HOLD_BYTES // 6 + 10)
    large = shelf.upload(alice, "large.md", large_body)
    assert not _blob_file(shelf, small.fingerprint).exists()  # no file, no fsync chain
    assert shelf.store.get_payload(small.document_id, "queued") == note(1)
    assert shelf.blobs.read(small.fingerprint) == note(1)  # every read finds it
    assert shelf.blobs.open(small.fingerprint).read() == note(1)
    assert shelf.blobs.exists(small.fingerprint)
    assert _blob_file(shelf, large.fingerprint).is_file()  # over the limit: stored at once
    assert shelf.store.get_payload(large.document_id, "queued") is None
    while Worker(shelf).run_once():
        pass
    assert _blob_file(shelf, small.fingerprint).read_bytes() == note(1)
    assert shelf.store.get_payload(small.document_id, "queued") is None
    assert {d.status for d in shelf.store.list_documents(limit=10)} == {"complete"}
    # the same bytes again, by another user: a link, nothing held twice
    bob = shelf.create_user("bob")[0].id
    again = shelf.upload(bob, "mine.md", note(1))
    assert again.document_id == small.document_id and not again.created
    assert shelf.store.get_payload(small.document_id, "queued") is None


def test_an_upload_of_a_folder_file_s_bytes_keeps_its_own_copy(
    shelf: Shelf, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "n.md").write_bytes(note(6))
    shelf.add(folder)
    alice = shelf.create_user("alice")[0].id
    up = shelf.upload(alice, "mine.md", note(6))  # held, then linked to the folder's document
    assert not up.created and up.linked
    assert _blob_file(shelf, up.fingerprint).read_bytes() == note(6)
    assert shelf.store.get_payload(up.document_id, "queued") is None


def test_settling_again_after_a_crash_between_its_two_steps_only_drops_the_copy(
    shelf: Shelf,
) -> None:
    alice = shelf.create_user("alice")[0].id
    up = shelf.upload(alice, "n.md", note(3))
    with shelf.blobs.writer(1 << 20) as writer:  # the blob written, the crash before the drop
        writer.write(note(3))
        writer.commit()
    assert shelf.store.get_payload(up.document_id, "queued") == note(3)
    shelf.blobs.settle(up.fingerprint)
    assert shelf.store.get_payload(up.document_id, "queued") is None
    assert shelf.blobs.read(up.fingerprint) == note(3)
    shelf.blobs.settle(up.fingerprint)  # nothing held: nothing to do


def test_a_held_upload_deleted_before_its_parse_leaves_nothing(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    up = shelf.upload(alice, "n.md", note(4))
    assert shelf.delete_document(up.document_id, alice)
    assert shelf.store.get_payload(up.document_id, "queued") is None
    assert not shelf.blobs.exists(up.fingerprint)
    with pytest.raises(NotFound):
        shelf.blobs.read(up.fingerprint)
    assert not Worker(shelf).run_once()


def test_held_bytes_are_checked_against_their_fingerprint(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    up = shelf.upload(alice, "n.md", note(5))
    with shelf.store.transaction():  # another file whose hash shares the id's prefix
        shelf.store.put_payload(up.document_id, "queued", b"other bytes")
    assert not shelf.blobs.exists(up.fingerprint)
    with pytest.raises(NotFound):
        shelf.blobs.read(up.fingerprint)


# -- every blob of a batch durable before its answer ---------------------------------------


def _fsynced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The paths ``os.fsync`` is called on from now on."""
    synced: list[Path] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_blobs_committed_together_are_each_fsynced_with_their_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "blobs"
    store = LocalBlobStore(root)
    with store.writer(1 << 20) as known:
        known.write(note(99))
        known.commit()
    datas = [note(1), note(2), note(3), note(2), note(99)]
    writers = []
    for data in datas:
        writer = store.writer(1 << 20)
        writer.write(data)
        writers.append(writer)
    synced = _fsynced(monkeypatch)
    outcomes = store.commit_many(writers)
    assert [store.read(str(sha)) for sha in outcomes] == datas
    for sha in {str(outcomes[0]), str(outcomes[1]), str(outcomes[2])}:  # the new ones
        final = store.path(sha)
        # durable when commit_many returns: the bytes, their name, and the names of
        # the folders made for them
        assert final.parent in synced
        assert final.parent.parent in synced and root in synced
    assert store.path(str(outcomes[4])).parent not in synced  # known: nothing written
    assert not list(store.tmp.glob("upload-*"))
    assert sorted(p.name for p in root.iterdir()) == sorted(
        {"tmp"} | {str(sha)[:2] for sha in outcomes}
    )


def test_a_blob_in_a_known_folder_fsyncs_only_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    with store.writer(1 << 20) as first:
        first.write(note(1))
        sha = first.commit()
    store.delete(sha)
    synced = _fsynced(monkeypatch)
    with store.writer(1 << 20) as again:
        again.write(note(1))
        again.commit()
    final = store.path(sha)
    assert synced[-1] == final.parent and final.parent.parent not in synced


# -- nothing answered is lost --------------------------------------------------------------


def test_every_upload_answered_202_survives_the_server_killed_at_once(
    isolated_home: Path,
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        _, token = shelf.create_user("alice")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "serve", "--port", str(port), "--workers", "0"],
        env=env(DOCSHELF_HOME=str(isolated_home), DOCSHELF_EMBEDDER="none"),
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/v1/documents",
                        files={"file": (f"n{i}.md", note(i), "text/markdown")},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    for i in range(20)
                )
            )

    try:
        until("serve to be ready", ready, proc)
        answers = asyncio.run(burst())
        os.kill(proc.pid, signal.SIGKILL)  # no shutdown
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [a.status_code for a in answers] == [202] * 20
    with Shelf(isolated_home, embedder=None) as shelf:
        assert shelf.check() == []
        for i, answer in enumerate(answers):
            doc_id = answer.json()["document_id"]
            assert shelf.job(doc_id).status == "queued"
            assert shelf.blobs.read(answer.json()["fingerprint"]) == note(i)
        while Worker(shelf).run_once():
            pass
        docs = shelf.store.list_documents(limit=100)
        assert len(docs) == 20 and {d.status for d in docs} == {"complete"}
