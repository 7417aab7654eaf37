"""The durable pipeline: stages, events, retries, dead-letter, leases, real crashes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from docshelf.errors import Conflict, NotFound
from docshelf.ingest.worker import LeaseLost, Worker, WorkerSettings
from docshelf.model import Stage, Tier
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parent.parent
FAST = WorkerSettings(lease_seconds=5, backoff_base=0.01, backoff_cap=0.05, max_attempts=3)
NOTE = b"# Raft\n\nLeader election happens when a follower hears no heartbeat.\n"


def drain(shelf: Shelf, settings: WorkerSettings = FAST, *, limit: int = 50) -> None:
    """Run jobs until none is due (retries included)."""
    worker = Worker(shelf, settings, name="test")
    idle = 0
    for _ in range(limit):
        if worker.run_once():
            idle = 0
            continue
        idle += 1
        if idle > 3:
            return
        time.sleep(0.06)


@pytest.fixture
def user(shelf: Shelf) -> str:
    return shelf.create_user("alice")[0].id


def stages(shelf: Shelf, doc_id: str) -> list[str]:
    return [e.stage or "" for e in shelf.events(document_id=doc_id, limit=1000)]


def test_upload_runs_through_every_stage(shelf: Shelf, user: str) -> None:
    up = shelf.upload(user, "raft.md", NOTE)
    assert (up.status, up.created) == ("queued", True)
    assert shelf.document(up.document_id, user).document.status == "queued"
    assert shelf.search("heartbeat", user_id=user).hits == []  # not visible before complete
    drain(shelf)
    seen = stages(shelf, up.document_id)
    assert seen[0] == "queued" and seen[-1] == "complete"
    order = ["queued", "parsing", "chunking", "embedding", "indexing", "complete"]
    assert [s for s in order if s in seen] == order
    assert [s for s in dict.fromkeys(seen)] == order
    doc = shelf.document(up.document_id, user).document
    assert doc.status == "complete" and doc.title == "Raft"
    hit = shelf.search("heartbeat", user_id=user).hits[0]
    assert hit.citation.label == "Raft (raft.md#0)"
    assert shelf.job(up.document_id, user).status == "complete"
    assert shelf.check() == []
    lifecycle = [e.kind for e in shelf.events(lifecycle=True, user_id=user)]
    assert lifecycle == ["document.queued", "document.completed"]


def test_same_bytes_are_processed_once(shelf: Shelf, embedder: HashEmbedder) -> None:
    alice = shelf.create_user("alice")[0].id
    bob = shelf.create_user("bob")[0].id
    first = shelf.upload(alice, "raft.md", NOTE)
    again = shelf.upload(alice, "copy.md", NOTE)
    assert again.document_id == first.document_id and not again.created and not again.linked
    drain(shelf)
    embedded = len(embedder.embedded)
    theirs = shelf.upload(bob, "mine.md", NOTE)
    assert theirs.document_id == first.document_id
    # a new link is answered as new bytes are (queued): no one learns what others hold
    assert (theirs.created, theirs.linked, theirs.status) == (False, True, "queued")
    assert shelf.document(first.document_id, bob).document.status == "complete"
    drain(shelf)
    assert len(embedder.embedded) == embedded
    assert shelf.search("heartbeat", user_id=bob).hits
    assert len(shelf.store.chunks_of_document(first.document_id, Tier.SNIPPET)) == 1


def test_other_users_documents_are_unknown(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    bob = shelf.create_user("bob")[0].id
    up = shelf.upload(alice, "raft.md", NOTE)
    drain(shelf)
    chunk = shelf.search("heartbeat", user_id=alice).hits[0].chunk.id
    assert shelf.search("heartbeat", user_id=bob).hits == []
    assert shelf.documents(user_id=bob) == []
    for call in (
        lambda: shelf.document(up.document_id, bob),
        lambda: shelf.context(chunk, user_id=bob),
        lambda: shelf.retry(up.document_id, bob),
        lambda: shelf.delete_document(up.document_id, bob),
        lambda: shelf.events(document_id=up.document_id, user_id=bob),
        lambda: shelf.job(up.document_id, bob),
    ):
        with pytest.raises(NotFound) as theirs:
            call()
        assert "doc_" in str(theirs.value) or "chunk_" in str(theirs.value)
    assert shelf.events(lifecycle=True, user_id=bob) == []


def test_delete_removes_only_the_callers_link(shelf: Shelf) -> None:
    alice = shelf.create_user("alice")[0].id
    bob = shelf.create_user("bob")[0].id
    up = shelf.upload(alice, "raft.md", NOTE)
    shelf.upload(bob, "raft.md", NOTE)
    drain(shelf)
    assert shelf.delete_document(up.document_id, alice) is False
    assert shelf.search("heartbeat", user_id=bob).hits
    assert shelf.search("heartbeat", user_id=alice).hits == []
    assert shelf.delete_document(up.document_id, bob) is True
    assert shelf.store.get_document(up.document_id) is None
    assert not shelf.blobs.exists(up.fingerprint)
    assert shelf.store.stats().snippets == 0


def test_bad_input_fails_at_once_and_the_worker_goes_on(shelf: Shelf, user: str) -> None:
    bad = shelf.upload(user, "latin1.md", "caf\xe9".encode("latin-1"))
    good = shelf.upload(user, "raft.md", NOTE)
    drain(shelf)
    job = shelf.job(bad.document_id, user)
    assert job.status == "failed" and job.attempts == 0 and "UTF-8" in (job.last_error or "")
    assert stages(shelf, bad.document_id)[-1] == "failed"
    assert shelf.document(bad.document_id, user).document.status == "failed"
    assert shelf.job(good.document_id, user).status == "complete"
    with pytest.raises(Conflict):
        shelf.retry(good.document_id, user)


class FlakyEmbedder(HashEmbedder):
    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("embedding service unavailable")
        return super().embed(texts)


def test_transient_failures_retry_with_backoff(isolated_home: Path) -> None:
    with Shelf(isolated_home, embedder=FlakyEmbedder(failures=2)) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "raft.md", NOTE)
        drain(shelf)
        job = shelf.job(up.document_id, user)
        assert job.status == "complete" and job.attempts == 2
        messages = [e.message for e in shelf.events(document_id=up.document_id)]
        assert sum("retrying in" in m for m in messages) == 2
        # parsing and chunking ran once: the retries resumed at embedding
        assert stages(shelf, up.document_id).count("chunking") == 1


def test_dead_letter_then_manual_retry(isolated_home: Path) -> None:
    flaky = FlakyEmbedder(failures=10)
    with Shelf(isolated_home, embedder=flaky) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "raft.md", NOTE)
        drain(shelf)
        job = shelf.job(up.document_id, user)
        assert job.status == "failed" and job.attempts == FAST.max_attempts - 1
        assert "after 3 attempts" in (job.last_error or "")
        assert shelf.events(lifecycle=True, user_id=user)[-1].kind == "document.failed"
        flaky.failures = 0
        assert shelf.retry(up.document_id, user).status == "queued"
        drain(shelf)
        assert shelf.job(up.document_id, user).status == "complete"
        assert shelf.search("heartbeat", user_id=user).hits


def test_expired_lease_is_reclaimed_and_resumes(shelf: Shelf, user: str) -> None:
    up = shelf.upload(user, "raft.md", NOTE)
    ghost = shelf.store.claim_job("ghost", lease_seconds=0.2, now=time.time())
    assert ghost is not None and ghost.document_id == up.document_id
    worker = Worker(shelf, FAST, name="heir")
    assert worker.run_once() is False  # leased by the ghost
    time.sleep(0.3)
    assert worker.run_once() is True
    assert shelf.job(up.document_id, user).status == "complete"


def test_a_worker_that_lost_its_lease_writes_nothing(shelf: Shelf, user: str) -> None:
    up = shelf.upload(user, "raft.md", NOTE)
    job = shelf.store.claim_job("slow", lease_seconds=0.05, now=time.time())
    assert job is not None
    time.sleep(0.1)
    assert shelf.store.claim_job("fast", lease_seconds=5, now=time.time()) is not None
    slow = Worker(shelf, FAST, name="slow")
    with pytest.raises(LeaseLost):
        slow._advance(job)
    assert shelf.store.chunks_of_document(up.document_id, Tier.SNIPPET) == []


def test_worker_killed_during_embedding_resumes_without_duplicates(isolated_home: Path) -> None:
    body = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"topic{i} word{j}" for j in range(120)) for i in range(12)
    )
    data = f"# Big\n\n{body}\n".encode()
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "big.md", data)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.worker_proc", str(isolated_home)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )
    try:
        with Shelf(isolated_home, embedder=HashEmbedder()) as watcher:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                messages = [e.message for e in watcher.events(document_id=up.document_id)]
                if any(m.startswith("embedded ") for m in messages):
                    break
                assert proc.poll() is None, "the worker died on its own"
                time.sleep(0.05)
            else:
                pytest.fail("the worker never reached the embedding stage")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()

    heir_embedder = HashEmbedder()
    with Shelf(isolated_home, embedder=heir_embedder) as shelf:
        job = shelf.job(up.document_id, user)
        assert job.stage is Stage.EMBEDDING and job.status == "running"
        snippets = shelf.store.chunks_of_document(up.document_id, Tier.SNIPPET)
        done_before = len(snippets) - len(
            shelf.store.snippets_without_vectors(10_000, document_id=up.document_id)
        )
        assert 0 < done_before < len(snippets)
        # the victim's lease has ten minutes to run, but its process is gone (issue 41)
        drain(shelf, WorkerSettings(lease_seconds=2.0))
        job = shelf.job(up.document_id, user)
        assert job.status == "complete"
        # exactly the expected chunks and one vector each, nothing lost, nothing twice
        sections = shelf.store.chunks_of_document(up.document_id, Tier.SECTION)
        again = shelf.store.chunks_of_document(up.document_id, Tier.SNIPPET)
        assert [c.id for c in again] == [c.id for c in snippets]
        assert len({c.id for c in again}) == len(again) and sections
        snap = shelf.store.vector_snapshot()
        assert sorted(snap.chunk_ids) == sorted(c.id for c in again)
        # the heir embedded only what the victim had not committed (less, when the
        # victim died between caching a batch's vectors and committing them)
        left = len(snippets) - done_before
        assert left - 4 <= len(heir_embedder.embedded) <= left
        # parsing and chunking were not run again
        seen = stages(shelf, up.document_id)
        assert seen.count("parsing") == 1 and seen.count("chunking") == 1
        assert shelf.check() == []
        assert shelf.search("topic7", user_id=user).hits


def test_worker_command_processes_jobs_and_stops_on_sigterm(isolated_home: Path) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "raft.md", NOTE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "worker", "--count", "2"],
        env={**os.environ, "DOCSHELF_HOME": str(isolated_home), "DOCSHELF_EMBEDDER": "none"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with Shelf(isolated_home, embedder=None) as shelf:
            deadline = time.monotonic() + 30
            while shelf.job(up.document_id).status != "complete":
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
        proc.wait()
