"""SIGTERM, for real: a worker hands its job in flight back and exits 0, the job then
completes exactly once; `docshelf serve` ends its SSE streams with a retry hint
and exits 0 (uvicorn alone exits 143)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from docshelf.chunk import chunk_document
from docshelf.model import Stage, Tier, fingerprint
from docshelf.parse import parse
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.test_cluster import STAGES, free_port

ROOT = Path(__file__).resolve().parent.parent


def env(**extra: str) -> dict[str, str]:
    """The test's environment (its DOCSHELF_HOME, enrichment off) for a child process,
    which imports this checkout's docshelf (not another the environment installed)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), **extra}


def big_note() -> bytes:
    body = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"topic{i} word{j}" for j in range(120)) for i in range(12)
    )
    return f"# Big\n\nA long note.\n\n{body}\n".encode()


def until(what: str, check: Callable[[], object], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not check():
        assert proc.poll() is None, f"the process ended on its own while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def drain_worker(home: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.drain_proc", str(home)], cwd=ROOT, env=env()
    )


def test_sigterm_mid_ingest_releases_the_job_which_then_completes_exactly_once(
    isolated_home: Path,
) -> None:
    data = big_note()
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        user = shelf.create_user("alice")[0].id
        doc_id = shelf.upload(user, "big.md", data).document_id

        def vectors_done() -> int:
            total = len(shelf.store.chunks_of_document(doc_id, Tier.SNIPPET))
            left = len(shelf.store.snippets_without_vectors(10_000, document_id=doc_id))
            return total - left if total else 0

        first = drain_worker(isolated_home)
        until("the first embedded batch", vectors_done, first)
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0  # drained in time

        # Handed back at once, where it stood: not complete, not leased, no attempt spent.
        job = shelf.job(doc_id, user)
        assert (job.status, job.stage, job.lease_owner) == ("queued", Stage.EMBEDDING, None)
        assert job.attempts == 0 and job.next_attempt_at <= time.time()
        total = len(shelf.store.chunks_of_document(doc_id, Tier.SNIPPET))
        assert 0 < vectors_done() < total  # some batches committed, the rest not begun

        second = drain_worker(isolated_home)  # the restart
        until("the job to complete", lambda: shelf.job(doc_id, user).status == "complete", second)
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0

        # Exactly once: the chunks a fresh chunking gives, one vector each, each event once.
        parsed = parse(data, "markdown")
        want = chunk_document(
            parsed,
            fp=fingerprint(data),
            title=parsed.title or "big",
            settings=shelf.chunk_settings,
            count_tokens=shelf.count_tokens,
        )
        got = shelf.store.chunks_of_document(doc_id, Tier.SECTION) + (
            shelf.store.chunks_of_document(doc_id, Tier.SNIPPET)
        )
        assert sorted(c.id for c in got) == sorted(c.id for c in want)
        snapshot = shelf.store.vector_snapshot()
        snippet_ids = [c.id for c in got if c.tier is Tier.SNIPPET]
        assert sorted(snapshot.chunk_ids) == sorted(snippet_ids)  # one vector per snippet
        events = shelf.events(document_id=doc_id, limit=1000)
        stages = [e.stage for e in events]
        transitions = [s for i, s in enumerate(stages) if i == 0 or s != stages[i - 1]]
        assert transitions == STAGES, stages
        batches = [e for e in events if e.message.startswith("embedded ")]
        assert len(batches) == -(-total // 4)  # one event per batch of 4: none committed twice
        lifecycle = shelf.store.events_after(0, document_id=doc_id, kinds="document.%")
        assert [e.kind for e in lifecycle] == ["document.queued", "document.completed"]
        assert shelf.check() == []


def test_serve_ends_sse_streams_with_a_retry_hint_and_exits_0_on_sigterm(
    isolated_home: Path,
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        _, token = shelf.create_user("alice")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "serve", "--port", str(port), "--workers", "1"],
        env=env(DOCSHELF_HOME=str(isolated_home), DOCSHELF_EMBEDDER="none"),
        stderr=subprocess.PIPE,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:

            def ready() -> bool:
                try:
                    return client.get("/readyz").status_code == 200
                except httpx.TransportError:
                    return False

            until("serve to be ready", ready, proc)
            headers = {"Authorization": f"Bearer {token}"}
            lines: list[str] = []
            with client.stream("GET", "/v1/events", headers=headers) as response:
                assert response.status_code == 200
                proc.send_signal(signal.SIGTERM)
                lines.extend(response.iter_lines())  # until the server ends the stream
        assert "retry: 1000" in lines, lines
        assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_worker_command_exits_0_when_idle(isolated_home: Path, signum: int) -> None:
    with Shelf(isolated_home, embedder=None):
        pass
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "worker"],
        env=env(DOCSHELF_HOME=str(isolated_home), DOCSHELF_EMBEDDER="none"),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert "worker(s) on" in proc.stderr.readline()  # started
    proc.send_signal(signum)
    assert proc.wait(30) == 0


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_sigterm_during_start_up_exits_0(isolated_home: Path, command: str) -> None:
    """SIGTERM in the first second (imports, the store, the model) killed the process
    (-15): its handlers came after the start-up work. Here the start-up stops where the
    library opens (tests/slow_start.py) and says so; the signal is sent then."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.slow_start", command],
        cwd=ROOT,
        env=env(DOCSHELF_HOME=str(isolated_home), DOCSHELF_EMBEDDER="none"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"opening\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_long_running_command_is_found_past_the_global_options() -> None:
    from docshelf.cli import _command

    assert _command(["--home", "serve", "worker"]) == "worker"  # a home named "serve"
    assert _command(["--json", "serve", "--port", "1"]) == "serve"
    assert _command(["search", "serve"]) == "search"
    assert _command(["--home"]) is None
