"""A full and a read-only home (issue 17): uploads answer JSON errors (507, 503),
``/readyz`` says not ready while writes fail, everything works again once the disk
does, and a worker whose store keeps failing backs off and logs once.

The disk tests mount a small tmpfs over the test's home, so they need root (as on
CI); elsewhere they skip and say why."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app
from docshelf.errors import ReadOnlyStorage, StorageFull
from docshelf.ingest.held import HOLD_BYTES
from docshelf.ingest.worker import Worker, WorkerSettings
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.test_api import Api, multipart

NOTE = b"# Disk\n\nwords about full disks and read-only homes.\n"


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def tmpfs_home(isolated_home: Path) -> Iterator[Path]:
    """The test's home on a 4 MiB tmpfs of its own."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs for the full-disk tests needs root (CI runs as root)")
    isolated_home.mkdir(parents=True, exist_ok=True)
    try:
        _mount("-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(isolated_home))
    except (OSError, subprocess.CalledProcessError) as exc:
        reason = getattr(exc, "stderr", "") or exc
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs as root: {reason}")
        pytest.skip(f"cannot mount a tmpfs here: {reason}")
    try:
        yield isolated_home
    finally:
        subprocess.run(["umount", "-l", str(isolated_home)], check=False)


@pytest.fixture
def api(tmpfs_home: Path) -> Iterator[tuple[Shelf, Api]]:
    with Shelf(tmpfs_home, embedder=HashEmbedder()) as shelf:
        user, token = shelf.create_user("alice")
        with TestClient(create_app(shelf)) as client:
            yield shelf, Api(client, token, user)


def _fill(folder: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to free the space)."""
    filler = folder / "filler"
    block = bytes(64 * 1024)
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def _upload(alice: Api, name: str, data: bytes) -> object:
    body, headers = multipart(name.encode(), data)
    return alice.request("POST", "/v1/documents", content=body, headers=headers)


# held in the store with its record (ingest/held.py), and written to the blob store first
@pytest.mark.parametrize("size", [200_000, HOLD_BYTES + 100_000], ids=["held", "stored"])
def test_a_full_disk_answers_507_and_not_ready_until_space_returns(
    api: tuple[Shelf, Api], size: int
) -> None:
    shelf, alice = api
    assert alice.upload("before.md", NOTE).status_code == 202
    assert alice.client.get("/readyz").status_code == 200
    filler = _fill(shelf.settings.home)

    r = alice.upload("during.md", NOTE + b"x" * size)
    assert r.status_code == 507, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.json()["error"]["code"] == "storage_full"
    assert "space" in r.json()["error"]["message"]
    ready = alice.client.get("/readyz")
    assert ready.status_code == 503
    assert any(p.startswith("storage:") for p in ready.json()["problems"])
    assert alice.get("/v1/documents").status_code == 200  # reads go on

    filler.unlink()  # space returns
    assert alice.client.get("/readyz").json() == {"status": "ready"}
    again = alice.upload("during.md", NOTE + b"x" * size)
    assert again.status_code == 202, again.text
    names = {d["title"] for d in alice.get("/v1/documents").json()["documents"]}
    assert names == {"before", "during"}
    tmp = shelf.settings.home / "blobs" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []  # the failed upload left no file
    assert shelf.blobs.read(again.json()["fingerprint"]) == NOTE + b"x" * size


def test_a_read_only_home_answers_503_and_recovers(
    tmpfs_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The database elsewhere: Linux will not remount a file system read-only while a
    # file on it is open for writing (SQLite's read-only case is tested below).
    monkeypatch.setenv("DOCSHELF_DATABASE_URL", f"sqlite:///{tmp_path / 'db' / 'docshelf.db'}")
    with Shelf(tmpfs_home, embedder=HashEmbedder()) as shelf:
        user, token = shelf.create_user("alice")
        with TestClient(create_app(shelf)) as client:
            alice = Api(client, token, user)
            assert alice.upload("before.md", NOTE).status_code == 202
            large = NOTE + b"more" * HOLD_BYTES
            _mount("-o", "remount,ro", str(tmpfs_home))
            try:
                r = alice.upload("during.md", large)  # its bytes go to the blob store first
                assert r.status_code == 503, r.text
                assert r.json()["error"]["code"] == "read_only"
                ready = client.get("/readyz")
                assert ready.status_code == 503
                assert "read-only" in " ".join(ready.json()["problems"])
                # a small one is held in the store with its record: the database is writable
                small = alice.upload("small.md", NOTE + b"small")
                assert small.status_code == 202, small.text
                # ... and waits there: its parse cannot move it to the read-only home
                with pytest.raises(ReadOnlyStorage):
                    shelf.blobs.settle(small.json()["fingerprint"])
                assert shelf.blobs.read(small.json()["fingerprint"]) == NOTE + b"small"
            finally:
                _mount("-o", "remount,rw", str(tmpfs_home))
            assert client.get("/readyz").status_code == 200
            assert alice.upload("during.md", large).status_code == 202
            while Worker(shelf).run_once():
                pass
            docs = shelf.store.list_documents(limit=10)
            assert sorted(d.status for d in docs) == ["complete"] * 3


@pytest.fixture
def client(shelf: Shelf) -> Iterator[tuple[Api, sqlite3.Connection]]:
    user, token = shelf.create_user("alice")
    with TestClient(create_app(shelf)) as c:
        db = shelf.store._db  # type: ignore[attr-defined]
        yield Api(c, token, user), db


def test_a_full_database_is_507_and_loses_nothing(
    client: tuple[Api, sqlite3.Connection],
) -> None:
    alice, db = client
    assert alice.upload("before.md", NOTE).status_code == 202
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite: "database or disk is full"
    accepted = 1
    for n in range(500):  # until the free pages are used up
        r = alice.upload(f"during-{n}.md", NOTE + b"%d" % n)
        if r.status_code != 202:
            break
        accepted += 1
    assert r.status_code == 507, r.text
    assert r.json()["error"]["code"] == "storage_full"
    assert "full" in r.json()["error"]["message"]
    db.execute("PRAGMA max_page_count = 1073741823")
    assert alice.upload("after.md", NOTE + b"after").status_code == 202
    listed = alice.get("/v1/documents", params={"limit": 1000}).json()["documents"]
    assert len(listed) == accepted + 1  # every accepted upload is there, the refused one not


def test_a_read_only_database_is_503(client: tuple[Api, sqlite3.Connection]) -> None:
    alice, db = client
    db.execute("PRAGMA query_only = ON")  # SQLite: "attempt to write a readonly database"
    r = alice.upload("during.md", NOTE)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "read_only"
    db.execute("PRAGMA query_only = OFF")
    assert alice.upload("during.md", NOTE).status_code == 202


class Ticks:
    """A worker's stop event that ends the loop after ``n`` turns and records its waits
    (nothing waits for real)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.turns = 0
        self.waits: list[float] = []

    def is_set(self) -> bool:
        self.turns += 1
        return self.turns > self.n

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        return False


def test_a_worker_backs_off_while_the_store_fails_and_logs_once(
    shelf: Shelf, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    failures = {"left": 40}
    claim = shelf.store.claim_job

    def full_disk(*args: object, **kw: object) -> object:
        if failures["left"]:
            failures["left"] -= 1
            raise StorageFull("The database is full: free some disk space")
        return claim(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(shelf.store, "claim_job", full_disk)
    worker = Worker(shelf, WorkerSettings(poll_seconds=0.01))
    stop = Ticks(50)
    with caplog.at_level(logging.INFO, logger="docshelf.worker"):
        worker.run(stop)  # type: ignore[arg-type]
    lines = [r.getMessage() for r in caplog.records if r.name == "docshelf.worker"]
    assert len(lines) == 2, lines  # one when it failed, one when it recovered
    assert "full" in lines[0] and "available again" in lines[1]
    backoffs = stop.waits[:40]
    assert len(backoffs) == 40 and backoffs[-1] > 20 * backoffs[0]  # growing, not a spin
    assert max(backoffs) <= worker.trouble.cap * 1.5


class _FullAtDeleteCommit:
    """The store's connection, on which the commit of a transaction that deletes a
    document fails as on a full disk ("database or disk is full", which the store
    answers as 507); SQLite has then rolled the transaction back itself."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.deleting = False
        self.failed = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("DELETE FROM documents"):
            self.deleting = True
        if sql == "COMMIT" and self.deleting:
            self.deleting = False
            self.failed += 1
            self.db.execute("ROLLBACK")
            full = sqlite3.OperationalError("database or disk is full")
            full.sqlite_errorcode = sqlite3.SQLITE_FULL
            raise full
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_delete_that_cannot_commit_keeps_the_document_its_bytes_and_its_job(
    shelf: Shelf, client: tuple[Api, sqlite3.Connection], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41: a DELETE answered 507 had removed the blob before the commit failed, so
    the document stayed listed with its bytes gone and its job failed "No blob"."""
    alice, db = client
    data = NOTE + b"padding words for a blob of its own. " * (HOLD_BYTES // 32)
    assert len(data) > HOLD_BYTES  # not held in the store: a blob file
    up = alice.upload("keep.md", data)
    assert up.status_code == 202
    doc_id, sha = up.json()["document_id"], up.json()["fingerprint"]
    full = _FullAtDeleteCommit(db)
    monkeypatch.setattr(shelf.store, "_db", full)
    r = alice.request("DELETE", f"/v1/documents/{doc_id}")
    assert r.status_code == 507, r.text
    assert full.failed == 1
    monkeypatch.setattr(shelf.store, "_db", db)  # the space is back

    assert alice.get(f"/v1/documents/{doc_id}").status_code == 200
    listed = alice.get("/v1/documents").json()["documents"]
    assert [d["id"] for d in listed] == [doc_id]
    assert shelf.runtime.blobs.exists(sha)
    assert alice.get(f"/v1/documents/{doc_id}/blob").content == data
    assert shelf.job(doc_id).status == "queued"
    while Worker(shelf).run_once():  # the pending job runs, its bytes there
        pass
    assert shelf.job(doc_id).status == "complete"
    assert shelf.search("full disks read-only homes", user_id=alice.user.id).hits
    assert shelf.check() == []
    # and the delete works once the store can commit it: document and bytes go
    assert alice.request("DELETE", f"/v1/documents/{doc_id}").status_code == 200
    assert alice.get(f"/v1/documents/{doc_id}").status_code == 404
    assert not shelf.runtime.blobs.exists(sha)


def test_bytes_that_cannot_go_after_a_committed_delete_are_logged_and_the_delete_stands(
    shelf: Shelf,
    client: tuple[Api, sqlite3.Connection],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alice, _ = client
    data = NOTE + b"more padding words. " * (HOLD_BYTES // 16)
    up = alice.upload("gone.md", data).json()

    def stuck(sha256: str) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(shelf.runtime.blobs, "delete", stuck)
    with caplog.at_level(logging.WARNING, logger="docshelf"):
        assert alice.request("DELETE", f"/v1/documents/{up['document_id']}").status_code == 200
    assert alice.get(f"/v1/documents/{up['document_id']}").status_code == 404
    assert any("stay in the blob store" in r.getMessage() for r in caplog.records)
