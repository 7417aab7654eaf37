"""The metrics the dashboard and the alerts read (deploy/observability/): worker pool
(busy/idle, heartbeats, lease renewals), the retrieval cache, uploads, the oldest
unfinished job per stage and embedding coverage; and the worker process's probe."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from docshelf.api import create_app
from docshelf.ingest.worker import LeaseLost, Worker, WorkerSettings
from docshelf.ingest.worker_probe import WorkerProbe, problems
from docshelf.model import Job, Stage
from docshelf.search.cache import RetrievalCache
from docshelf.shelf import Shelf
from docshelf.telemetry import WorkerGauges
from tests.test_api import multipart


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def upload(shelf: Shelf, user_id: str, name: str, data: bytes) -> str:
    writer = shelf.blobs.writer(1 << 20)
    writer.write(data)
    return shelf.register_upload(user_id, name, writer.commit(), len(data)).document_id


def test_worker_gauges_follow_a_worker_through_its_life() -> None:
    idle, busy = sample("ingest_workers", state="idle"), sample("ingest_workers", state="busy")
    renewed = sample("ingest_lease_renewals_total", outcome="renewed")
    lost = sample("ingest_lease_renewals_total", outcome="lost")
    gauges = WorkerGauges("w-test")
    gauges.busy(True)  # not started: counts nothing
    assert sample("ingest_workers", state="busy") == busy
    gauges.started()
    assert sample("ingest_workers", state="idle") == idle + 1
    beat = sample("ingest_worker_heartbeat_timestamp_seconds", worker="w-test")
    assert beat == pytest.approx(time.time(), abs=5)
    gauges.busy(True)
    gauges.busy(True)  # no double count
    assert (sample("ingest_workers", state="idle"), sample("ingest_workers", state="busy")) == (
        idle,
        busy + 1,
    )
    gauges.renewed(True)
    gauges.renewed(False)
    assert sample("ingest_lease_renewals_total", outcome="renewed") == renewed + 1
    assert sample("ingest_lease_renewals_total", outcome="lost") == lost + 1
    gauges.busy(False)
    gauges.stopped()
    assert (sample("ingest_workers", state="idle"), sample("ingest_workers", state="busy")) == (
        idle,
        busy,
    )
    # a stopped worker's heartbeat series goes away (else it would look stalled forever)
    assert (
        REGISTRY.get_sample_value("ingest_worker_heartbeat_timestamp_seconds", {"worker": "w-test"})
        is None
    )


def test_a_running_worker_beats_and_renews_its_lease(shelf: Shelf, tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_text("# N\n\nSome words.\n")
    renewed = sample("ingest_lease_renewals_total", outcome="renewed")
    worker = Worker(shelf, WorkerSettings(lease_seconds=0.3, poll_seconds=0.01))
    seen_busy: list[float] = []

    def slow_stage(job: Job, stage: Stage) -> None:
        seen_busy.append(sample("ingest_workers", state="busy"))
        time.sleep(0.25)  # long enough for a renewal (every lease / 3)

    worker.on_stage = slow_stage
    upload(shelf, shelf.create_user("u")[0].id, "n.md", note.read_bytes())
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while shelf.store.job_counts().get("complete", 0) < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        name = {"worker": worker.name}
        beat = REGISTRY.get_sample_value("ingest_worker_heartbeat_timestamp_seconds", name)
        assert beat is not None and beat == pytest.approx(time.time(), abs=5)
    finally:
        stop.set()
        thread.join(10)
    assert seen_busy and min(seen_busy) >= 1
    assert sample("ingest_lease_renewals_total", outcome="renewed") > renewed
    assert REGISTRY.get_sample_value("ingest_worker_heartbeat_timestamp_seconds", name) is None


def test_retrieval_cache_counts_hits_and_misses() -> None:
    hits = sample("retrieval_cache_lookups_total", outcome="hit")
    misses = sample("retrieval_cache_lookups_total", outcome="miss")
    cache: RetrievalCache[int] = RetrievalCache(60)
    assert cache.get_or_compute("q", 1, lambda: 1) == 1
    assert cache.get_or_compute("q", 1, lambda: 2) == 1
    assert cache.get_or_compute("q", 2, lambda: 3) == 3  # a new generation: a miss
    assert sample("retrieval_cache_lookups_total", outcome="hit") == hits + 1
    assert sample("retrieval_cache_lookups_total", outcome="miss") == misses + 2


def _operator(shelf: Shelf) -> dict[str, str]:
    """An admin's bearer header: /metrics is for operators."""
    return {"Authorization": f"Bearer {shelf.create_user('ops', admin=True)[1]}"}


def test_metrics_endpoint_reports_uploads_stuck_jobs_and_coverage(shelf: Shelf) -> None:
    _, token = shelf.create_user("alice")
    auth = {"Authorization": f"Bearer {token}"}
    accepted = sample("upload_latency_ms_count", outcome="accepted")
    refused = sample("upload_latency_ms_count", outcome="refused")
    with TestClient(create_app(shelf)) as client:  # no workers: the job stays queued
        body, headers = multipart(b"a.md", b"# A\n\nwords\n")
        assert (
            client.post("/v1/documents", content=body, headers={**auth, **headers}).status_code
            == 202
        )
        assert (
            client.post("/v1/documents", content=body, headers={**auth, **headers}).status_code
            == 202  # known bytes answer as new ones, on /metrics too (issue 41)
        )
        body, headers = multipart(b"a.exe", b"MZ")
        assert (
            client.post("/v1/documents", content=body, headers={**auth, **headers}).status_code
            == 415
        )
        time.sleep(1.1)
        text = client.get("/metrics", headers=_operator(shelf)).text
    assert sample("upload_latency_ms_count", outcome="accepted") == accepted + 2
    assert sample("upload_latency_ms_count", outcome="created") == 0
    assert sample("upload_latency_ms_count", outcome="refused") == refused + 1
    assert sample("ingest_stage_oldest_seconds", stage="queued") >= 1
    assert sample("ingest_stage_oldest_seconds", stage="embedding") == 0
    assert 'ingest_stage_oldest_seconds{stage="indexing"}' in text
    assert "embedding_coverage_ratio 1.0" in text  # no snippets yet


def test_embedding_coverage_is_the_share_of_snippets_with_vectors(
    shelf: Shelf, tmp_path: Path
) -> None:
    def stop_before_embedding(job: Job, stage: Stage) -> None:
        if stage is Stage.EMBEDDING:
            raise LeaseLost(job.document_id)  # the job stays there: chunks, no vectors

    user, _ = shelf.create_user("u")
    upload(shelf, user.id, "a.md", b"# A\n\n" + b"Words and more words. " * 300)
    Worker(shelf, on_stage=stop_before_embedding).run_once()
    operator = _operator(shelf)
    with TestClient(create_app(shelf)) as client:
        assert client.get("/metrics", headers=operator).status_code == 200
        assert sample("embedding_coverage_ratio") == 0.0
        note = tmp_path / "b.md"
        note.write_text("# B\n\n" + "Other words again. " * 300)
        shelf.add(note)
        assert client.get("/metrics", headers=operator).status_code == 200
    stats = shelf.store.stats()
    assert 0 < stats.snippets_with_vectors < stats.snippets
    assert sample("embedding_coverage_ratio") == pytest.approx(
        stats.snippets_with_vectors / stats.snippets
    )


# -- the worker process's probe ---------------------------------------------------------
@pytest.fixture
def probe_of(shelf: Shelf) -> Iterator[tuple[Worker, threading.Thread, threading.Event, str]]:
    worker = Worker(shelf, WorkerSettings(poll_seconds=0.01))
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    probe = WorkerProbe([worker], [thread], host="127.0.0.1", port=0, stale_after=5)
    try:
        yield worker, thread, stop, f"http://127.0.0.1:{probe.port}"
    finally:
        stop.set()
        thread.join(10)
        probe.close()


def test_worker_probe_serves_metrics_and_health(
    probe_of: tuple[Worker, threading.Thread, threading.Event, str],
) -> None:
    worker, thread, stop, url = probe_of
    health = httpx.get(f"{url}/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    metrics = httpx.get(f"{url}/metrics")
    assert metrics.status_code == 200
    assert f'ingest_worker_heartbeat_timestamp_seconds{{worker="{worker.name}"}}' in metrics.text
    assert httpx.get(f"{url}/nope").status_code == 404
    stop.set()
    thread.join(10)
    dead = httpx.get(f"{url}/healthz")
    assert dead.status_code == 503
    assert "the thread has stopped" in dead.json()["problems"][0]


def test_a_worker_silent_too_long_is_not_live(shelf: Shelf) -> None:
    worker = Worker(shelf)
    alive = threading.Thread(target=threading.Event().wait, args=(0.5,))
    alive.start()
    assert problems([worker], [alive], stale_after=60) == []
    worker.alive_at = time.time() - 120  # e.g. wedged in a stage, its lease not renewed
    [problem] = problems([worker], [alive], stale_after=60)
    assert worker.name in problem and "no sign of life for 120s" in problem
    alive.join()


def test_a_worker_thread_not_started_yet_is_not_dead(shelf: Shelf) -> None:
    """The probe listens before the worker threads start: a not-yet-started thread is
    live; one that ran and ended is not."""
    worker = Worker(shelf)
    thread = threading.Thread(target=lambda: None)
    assert problems([worker], [thread], stale_after=60) == []
    thread.start()
    thread.join()
    assert problems([worker], [thread], stale_after=60) == [
        f"{thread.name}: the thread has stopped"
    ]


def test_docshelf_worker_serves_its_probe(isolated_home: Path, tmp_path: Path) -> None:
    """The command a container runs: ``docshelf worker --probe-port`` (a real process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    docshelf = Path(sys.executable).parent / "docshelf"
    env = {**os.environ, "DOCSHELF_EMBEDDER": "none", "DOCSHELF_METRICS_TOKEN": "scrape"}
    with (tmp_path / "worker.log").open("w") as log:
        proc = subprocess.Popen(
            [str(docshelf), "worker", "--count", "2", "--probe-port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                    break
                except httpx.HTTPError:
                    assert proc.poll() is None, (tmp_path / "worker.log").read_text()
                    assert time.monotonic() < deadline, "the probe did not answer"
                    time.sleep(0.1)
            assert (health.status_code, health.json()) == (200, {"status": "ok"})
            url = f"http://127.0.0.1:{port}/metrics"
            for wrong in ({}, {"Authorization": "Bearer scrap"}):
                refused = httpx.get(url, headers=wrong)
                assert refused.status_code == 401 and "ingest" not in refused.text
            metrics = httpx.get(url, headers={"Authorization": "Bearer scrape"}).text
            assert 'ingest_workers{state="idle"} 2.0' in metrics
            assert metrics.count("ingest_worker_heartbeat_timestamp_seconds{") == 2
        finally:
            proc.terminate()
            proc.wait(30)


def test_docshelf_worker_names_a_probe_port_it_cannot_have(isolated_home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        docshelf = Path(sys.executable).parent / "docshelf"
        run = subprocess.run(
            [str(docshelf), "worker", "--probe-port", str(port)],
            env={**os.environ, "DOCSHELF_EMBEDDER": "none"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 1
    assert f"Cannot serve the probe on 127.0.0.1:{port}" in run.stderr
    assert "Traceback" not in run.stderr
