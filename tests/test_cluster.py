"""docshelf as a cluster, for real: PostgreSQL as the shared store, RabbitMQ waking
`docshelf worker` processes, the API in a process of its own.

Each test gets a fresh PostgreSQL schema, its own queue names (``?queue=`` in the
broker URL) and its own DOCSHELF_HOME, whose blob folder every process on this
machine shares. Processes are stopped and the queues and the dead-letter
exchange deleted afterwards. Without DOCSHELF_TEST_POSTGRES_URL or
DOCSHELF_TEST_AMQP_URL the tests are skipped (and fail under CI=true).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from docshelf.chunk import ChunkSettings, approx_tokens, chunk_document
from docshelf.config import Settings
from docshelf.embed import DEFAULT_WINDOW
from docshelf.model import Chunk, Tier, fingerprint
from docshelf.parse import parse
from docshelf.shelf import Shelf
from tests.pg import fresh_schema
from tests.services import service_url

STAGES = ["queued", "parsing", "chunking", "embedding", "indexing", "complete"]
LEASE = 2.0


def note(i: int, sections: int = 60) -> bytes:
    """A Markdown note big enough (~160 kB, ~470 chunks) that a worker spends a
    noticeable moment on it, so a kill lands in the middle of a job."""
    parts = [f"# Note {i}\n\nThis note is about subject{i}.\n"]
    for s in range(sections):
        words = " ".join(f"word{(i * 7 + s * 13 + j) % 997} topic{i}x{s}" for j in range(150))
        parts.append(f"## Part {s} of note {i}\n\n{words}\n")
    return "\n".join(parts).encode()


@dataclass
class Cluster:
    database_url: str
    queue: str
    queue_url: str
    home: Path
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _conn: Any = None

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows straight from the test's schema (one autocommit connection)."""
        import psycopg

        if self._conn is None:
            self._conn = psycopg.connect(self.database_url, autocommit=True)
        return list(self._conn.execute(sql).fetchall())

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DOCSHELF_HOME": str(self.home),
            "DOCSHELF_DATABASE_URL": self.database_url,
            "DOCSHELF_QUEUE_URL": self.queue_url,
            "DOCSHELF_EMBEDDER": "none",
        }

    def spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> Any:
        log = (self.logs / f"{name}-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, *args], env={**self.env, **(env or {})}, stdout=log, stderr=log
        )
        self.procs.append(proc)
        return proc

    def worker(self) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = self.spawn(
            "worker", "-m", "docshelf.cli", "worker", "--lease", str(LEASE)
        )
        return proc

    def shelf(self) -> Shelf:
        """A Shelf in the test's own process, configured like the workers."""
        settings = Settings(
            home=self.home,
            database_url=self.database_url,
            embedder="none",
            queue_url=self.queue_url,
        )
        return Shelf(settings=settings, embedder=None)

    def output(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.logs.iterdir())
        )

    def stop(self) -> list[int]:
        """SIGTERM every process still running (workers and uvicorn stop cleanly), then
        their exit codes."""
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(15))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return codes


def _delete_queues(amqp_url: str, queue: str) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        for name in (queue, f"{queue}.dead"):
            ch.queue_delete(name)
        ch.exchange_delete(f"{queue}.dlx")
    finally:
        conn.close()


@pytest.fixture
def cluster(isolated_home: Path, tmp_path: Path) -> Iterator[Cluster]:
    amqp = service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ")
    queue = f"docshelf.test.cluster.{uuid.uuid4().hex[:10]}"
    logs = tmp_path / "logs"
    logs.mkdir()
    with fresh_schema() as url:
        c = Cluster(
            url, queue, f"{amqp}{'&' if '?' in amqp else '?'}queue={queue}", isolated_home, logs
        )
        try:
            yield c
        finally:
            c.stop()
            _delete_queues(amqp, queue)


def jobs(cluster: Cluster) -> dict[str, tuple[str, str | None]]:
    """document id → (status, lease owner), straight from the jobs table."""
    rows = cluster.query("SELECT document_id, status, lease_owner FROM jobs")
    return {r[0]: (r[1], r[2]) for r in rows}


def expected_chunks(name: str, data: bytes) -> list[Chunk]:
    """A fresh local chunking of the same bytes, as a worker without a model makes it."""
    parsed = parse(data, "markdown")
    return chunk_document(
        parsed,
        fp=fingerprint(data),
        title=parsed.title or Path(name).stem,
        settings=ChunkSettings.for_window(DEFAULT_WINDOW),
        count_tokens=approx_tokens,
    )


def wait_for(what: str, check: Any, cluster: Cluster, seconds: float = 40.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}\n{cluster.output()}")
        time.sleep(0.005)


def freeze_mid_job(
    victim: subprocess.Popen[bytes], busy: Any, cluster: Cluster, tries: int = 200
) -> list[str]:
    """Stop the victim (SIGSTOP) at a moment it holds a running job, and return those
    jobs. Polling and then killing races the victim finishing its job on a busy host; a
    stopped process cannot finish anything, so the kill that follows lands mid-job.
    A stop that finds it between jobs lets it go on and tries again."""
    for _ in range(tries):
        wait_for("the victim to hold a job", busy, cluster)
        victim.send_signal(signal.SIGSTOP)
        held: list[str] = busy()
        if held:
            return held
        victim.send_signal(signal.SIGCONT)
    pytest.fail(f"the victim was never stopped mid-job in {tries} tries\n{cluster.output()}")


def test_three_workers_one_killed_every_document_completes_once(cluster: Cluster) -> None:
    notes = {f"note{i:02}.md": note(i) for i in range(30)}
    with cluster.shelf() as shelf:
        user = shelf.create_user("alice")[0].id
        names = {shelf.upload(user, name, data).document_id: name for name, data in notes.items()}
        workers = [cluster.worker() for _ in range(3)]
        victim = workers[0]
        tag = f":{victim.pid}:"

        def victim_busy() -> list[str]:
            return [
                d
                for d, (status, owner) in jobs(cluster).items()
                if owner and tag in owner and status == "running"
            ]

        busy = freeze_mid_job(victim, victim_busy, cluster)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        # Whatever the victim leased when it died is still leased to it, mid-job.
        orphans = victim_busy()
        assert orphans and set(orphans) <= set(busy), "the kill landed between two jobs"

        def all_complete() -> bool:
            states = jobs(cluster)
            assert not any(s == "failed" for s, _ in states.values()), states
            return len(states) == 30 and all(s == "complete" for s, _ in states.values())

        wait_for("every job to complete", all_complete, cluster, seconds=60)
        survivors = cluster.stop()[1:]
        assert survivors == [0, 0], cluster.output()  # SIGTERM: a clean stop

        counts = shelf.store.job_counts()
        assert counts == {"complete": 30}  # one job per document
        for doc_id, name in names.items():
            doc = shelf.store.get_document(doc_id)
            assert doc is not None and doc.status == "complete"
            want = expected_chunks(name, notes[name])
            got = shelf.store.chunks_of_document(doc_id, Tier.SECTION) + (
                shelf.store.chunks_of_document(doc_id, Tier.SNIPPET)
            )
            assert got == sorted(want, key=lambda c: (c.tier.value, c.index)), name

            events = shelf.events(document_id=doc_id, limit=1000)
            stages = Counter(e.stage for e in events)
            lifecycle = shelf.store.events_after(0, document_id=doc_id, kinds="document.%")
            assert [e.kind for e in lifecycle] == ["document.queued", "document.completed"]
            if doc_id in orphans:
                # Its interrupted stage ran again under another worker: no exact counts.
                order = [STAGES.index(e.stage or "") for e in events]
                assert order == sorted(order) and stages["complete"] == 1, events
                assert all(stages[s] >= 1 for s in STAGES), events
            else:
                assert [e.stage for e in events] == STAGES, (name, [e.stage for e in events])
        total = sum(len(expected_chunks(n, d)) for n, d in notes.items())
        rows = cluster.query("SELECT count(*), count(DISTINCT id) FROM chunks")
        assert rows == [(total, total)]  # nothing written twice
        assert shelf.check() == []
        hits = shelf.search("subject7", mode="lexical", user_id=user).hits
        assert hits and hits[0].document.rel_path == "note07.md"


def dead_letters(amqp_url: str, queue: str, want: int, seconds: float = 10) -> list[Any]:
    import pika

    got: list[Any] = []
    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = conn.channel()
        deadline = time.monotonic() + seconds
        while len(got) < want and time.monotonic() < deadline:
            method, props, body = ch.basic_get(f"{queue}.dead", auto_ack=True)
            if method is None:
                time.sleep(0.05)
                continue
            got.append((body.decode(), props.headers))
        method, _, _ = ch.basic_get(f"{queue}.dead", auto_ack=True)
        assert method is None, "more dead letters than failed jobs"
    finally:
        conn.close()
    return got


def test_poison_documents_fail_and_land_in_the_dead_letter_queue(cluster: Cluster) -> None:
    poison = {
        "poison.md": b"# Poison\n\nbroken \xc3\x28 bytes\n",
        "garbage.pdf": b"%PDF-1.7\n" + bytes(range(256)) * 8,
    }
    with cluster.shelf() as shelf:
        user = shelf.create_user("alice")[0].id
        bad = {shelf.upload(user, n, d).document_id: n for n, d in poison.items()}
        good = shelf.upload(user, "fine.md", note(1, sections=3)).document_id
        cluster.worker()
        cluster.worker()

        def settled() -> bool:
            states = jobs(cluster)
            return all(states[d][0] == "failed" for d in bad) and states[good][0] == "complete"

        wait_for("the poison to fail and the good note to complete", settled, cluster)
        reasons = {}
        for doc_id, name in bad.items():
            job = shelf.job(doc_id)
            assert job.status == "failed" and job.last_error, name
            assert job.attempts == 0  # bad input fails at once: retrying cannot help
            reasons[doc_id] = job.last_error
            assert shelf.store.get_document(doc_id).status == "failed"  # type: ignore[union-attr]
            last = shelf.events(document_id=doc_id)[-1]
            assert last.stage == "failed" and job.last_error in last.message
        assert "invalid UTF-8" in reasons[next(d for d, n in bad.items() if n == "poison.md")]

        amqp = service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ")
        letters = dead_letters(amqp, cluster.queue, want=len(bad))
        assert {body: headers["x-docshelf-reason"] for body, headers in letters} == reasons


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sse_events(client: httpx.Client, url: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """The events of an SSE stream, read as they arrive, until the server ends it."""
    events: list[dict[str, Any]] = []
    fields: dict[str, str] = {}
    with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith(":"):
                continue
            if line:
                key, _, value = line.partition(":")
                fields[key] = value.removeprefix(" ")
            elif fields:
                events.append({**json.loads(fields["data"]), "at": time.monotonic()})
                fields = {}
    return events


def test_the_api_in_one_process_streams_stages_run_by_workers_in_others(
    cluster: Cluster,
) -> None:
    with cluster.shelf() as shelf:
        _, token = shelf.create_user("alice")
        _, ops = shelf.create_user("ops", admin=True)
    port = free_port()
    api = cluster.spawn(
        "api",
        "-m",
        "uvicorn",
        "--factory",
        "docshelf.api:app_from_env",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        env={"DOCSHELF_WORKERS": "0"},  # this process runs no ingest at all
    )
    cluster.worker()
    cluster.worker()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:

        def ready() -> bool:
            assert api.poll() is None, cluster.output()
            with suppress(httpx.TransportError):
                return client.get("/readyz").status_code == 200
            return False

        wait_for("the API to be ready", ready, cluster, seconds=30)
        r = client.post("/v1/documents", files={"file": ("big.md", note(3))}, headers=headers)
        assert r.status_code == 202, r.text
        doc_id = r.json()["document_id"]
        events = sse_events(client, f"/v1/documents/{doc_id}/events", headers)
        stages = [e["stage"] for e in events]
        assert stages == STAGES, stages
        assert [e["progress_pct"] for e in events] == sorted(e["progress_pct"] for e in events)
        assert events[-1]["progress_pct"] == 100

        hits = client.post(
            "/v1/search", json={"query": "subject3", "mode": "lexical"}, headers=headers
        ).json()["hits"]
        assert hits and hits[0]["document_id"] == doc_id
        scrape = client.get("/metrics", headers={"Authorization": f"Bearer {ops}"})
        assert scrape.status_code == 200 and "# HELP" in scrape.text
        assert 'ingest_jobs_total{stage="parsing"}' not in scrape.text  # not this process
