"""Uploads received together are committed together (api/uploads.py, api/batching.py):
one store transaction and one fsynced pack of blobs for the batch (blobs/local.py),
each upload answered 202 only after that shared commit — and nothing answered is lost,
even when the server is killed at once."""

from __future__ import annotations

import asyncio
import fcntl
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
from docshelf.blobs.local import PACK_PREFIX, LocalBlobStore
from docshelf.errors import InvalidInput, Unavailable
from docshelf.ingest.uploads import UploadResult
from docshelf.ingest.worker import Worker
from docshelf.shelf import Shelf
from docshelf.store.sqlite import SQLiteStore
from tests.test_cluster import free_port
from tests.test_shutdown import env, until


def note(i: int) -> bytes:
    return f"# Note {i}\n\nraft leader election, note number {i}.\n".encode()


def packs(store: LocalBlobStore) -> list[Path]:
    return sorted(store.tmp.glob(f"{PACK_PREFIX}*")) if store.tmp.exists() else []


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
        [(alice, f"n{i}.md", sha, len(note(i))) for i, sha in enumerate(shas)]
        + [(alice, "n3.exe", shas[0], 1)]
    )
    assert isinstance(outcomes[0], UploadResult) and outcomes[0].created
    assert isinstance(outcomes[1], Unavailable) and "send it again" in outcomes[1].message
    assert isinstance(outcomes[2], UploadResult) and outcomes[2].created
    assert isinstance(outcomes[3], InvalidInput)  # no parser for .exe
    assert {d.sha256 for d in shelf.store.list_documents(limit=10)} == {shas[0], shas[2]}
    assert Worker(shelf).run_once() and Worker(shelf).run_once()
    assert not Worker(shelf).run_once()


# -- one fsync for the small blobs of a batch ----------------------------------------------


def test_small_blobs_committed_together_go_through_one_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    with store.writer(1 << 20) as known:
        known.write(note(99))
        known.commit()
    writers = []
    for data in [note(1), note(2), note(3), note(2), note(99)]:
        writer = store.writer(1 << 20)
        writer.write(data)
        writers.append(writer)
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    gate = threading.Event()
    real_settle = store._settler.settle

    def settle_later(fd: int, pack: Path, placed: list[Path]) -> None:
        gate.wait(10)
        real_settle(fd, pack, placed)

    monkeypatch.setattr(store._settler, "settle", settle_later)
    done: list[list[str | BaseException]] = []
    committing = threading.Thread(target=lambda: done.append(store.commit_many(writers)))
    committing.start()
    until_true(lambda: len(synced) >= 2)
    assert len(synced) == 2  # the pack and its folder, before any answer; not 2 per blob
    assert len(packs(store)) == 1
    gate.set()
    committing.join(10)
    outcomes = done[0]
    assert [store.read(str(sha)) for sha in outcomes] == [
        note(1),
        note(2),
        note(3),
        note(2),
        note(99),
    ]
    store.settled()
    assert packs(store) == []  # settled: each placed blob fsynced, then the pack dropped
    assert len(synced) > 2
    assert not list(store.tmp.glob("upload-*"))


def until_true(check: object) -> None:
    import time

    assert callable(check)
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def _left_pack(root: Path) -> tuple[list[str], list[bytes]]:
    """A pack as a killed process leaves it: written and fsynced, its blobs placed (or
    not yet), never settled."""
    store = LocalBlobStore(root)
    kept: list[tuple[int, Path, list[Path]]] = []
    store._settler.settle = lambda pack_fd, pack, placed: kept.append((pack_fd, pack, placed))  # type: ignore[method-assign]
    writers = []
    datas = [note(i) for i in range(4)]
    for data in datas:
        writer = store.writer(1 << 20)
        writer.write(data)
        writers.append(writer)
    shas = [str(sha) for sha in store.commit_many(writers)]
    assert len(kept) == 1 and len(packs(store)) == 1
    os.close(kept[0][0])  # the process is gone: so is its lock
    return shas, datas


def test_opening_the_store_restores_what_a_left_pack_holds(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    shas, datas = _left_pack(root)
    # as after a power cut: one placed blob never reached the disk, one only in part
    (root / shas[0][:2] / shas[0][2:4] / shas[0]).unlink()
    (root / shas[1][:2] / shas[1][2:4] / shas[1]).write_bytes(datas[1][:5])
    store = LocalBlobStore(root)
    assert [store.read(sha) for sha in shas] == datas
    assert packs(store) == []


def test_a_torn_pack_gives_back_its_whole_entries(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    shas, datas = _left_pack(root)
    for sha in shas:
        (root / sha[:2] / sha[2:4] / sha).unlink()
    pack = packs(_bare(root))[0]
    pack.write_bytes(pack.read_bytes()[:-3])  # cut inside the last entry
    store = LocalBlobStore(root)
    assert [store.exists(sha) for sha in shas] == [True, True, True, False]
    assert [store.read(sha) for sha in shas[:3]] == datas[:3]
    assert packs(store) == []


def _bare(root: Path) -> LocalBlobStore:
    """The store without opening it (no restoring)."""
    store = object.__new__(LocalBlobStore)
    store.root, store.tmp = root, root / "tmp"
    return store


def test_a_pack_that_a_live_process_holds_is_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    shas, _ = _left_pack(root)
    pack = packs(_bare(root))[0]
    fd = os.open(pack, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the process settling it holds it
        (root / shas[0][:2] / shas[0][2:4] / shas[0]).unlink()
        store = LocalBlobStore(root)
        assert packs(store) == [pack] and not store.exists(shas[0])
    finally:
        os.close(fd)
    assert LocalBlobStore(root).exists(shas[0])  # once it is let go


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
        os.kill(proc.pid, signal.SIGKILL)  # no shutdown, no settling of packs
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
