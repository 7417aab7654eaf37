"""Several API replicas for real: two API processes and two `docshelf worker`
processes on PostgreSQL + RabbitMQ + Redis.

The replicas poll the store only every ten minutes (DOCSHELF_SSE_POLL_SECONDS), so
a stream on replica A that sees every stage of a job run by a worker process was
woken by each commit through Redis. The fan-out latency itself is measured by
bench/fanout.py (docs/benchmarks/scale-out.md, "Several replicas"). Skipped without the three
services' DOCSHELF_TEST_* URLs (failed under CI=true).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from docshelf.model import Event
from tests.redis_service import fresh_prefix
from tests.replicas import Received, ReplicaSet, stream
from tests.test_cluster import STAGES, Cluster, note
from tests.test_cluster import cluster as cluster  # the fixture: schema, queues, home

NO_POLL = "600"


@pytest.fixture
def replicas(cluster: Cluster) -> Iterator[ReplicaSet]:
    with fresh_prefix() as (redis_url, _):
        rs = ReplicaSet(
            cluster.database_url,
            cluster.queue_url,
            redis_url,
            cluster.home,
            cluster.logs,
            extra_env={"DOCSHELF_SSE_POLL_SECONDS": NO_POLL},
        )
        try:
            yield rs
        finally:
            rs.stop()


def metric(client: httpx.Client, operator: str, name: str, **labels: str) -> float:
    """A sample from a replica's /metrics (0 when absent), read with an admin's token."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    scrape = client.get("/metrics", headers={"Authorization": f"Bearer {operator}"})
    assert scrape.status_code == 200, scrape.text
    for line in scrape.text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_two_replicas_share_progress_and_caches(cluster: Cluster, replicas: ReplicaSet) -> None:
    with cluster.shelf() as shelf:
        _, token = shelf.create_user("alice")
        _, ops = shelf.create_user("ops", admin=True)
    headers = {"Authorization": f"Bearer {token}"}
    a_url, b_url = replicas.api(), replicas.api()
    with (
        httpx.Client(base_url=a_url, timeout=30) as a,
        httpx.Client(base_url=b_url, timeout=30) as b,
    ):
        # uploaded through B, before any worker runs; followed on A
        r = b.post("/v1/documents", files={"file": ("big.md", note(3))}, headers=headers)
        assert r.status_code == 202, r.text
        doc_id = r.json()["document_id"]
        seen: list[Received] = []
        opened = threading.Event()

        def follow() -> None:
            with stream(a, f"/v1/documents/{doc_id}/events", headers, seconds=60) as events:
                for event in events:
                    seen.append(event)
                    opened.set()

        reader = threading.Thread(target=follow)
        reader.start()
        assert opened.wait(30), replicas.output()  # the stream is open (it sent "queued")
        replicas.worker()
        replicas.worker()
        reader.join(90)
        assert not reader.is_alive(), replicas.output()
        assert [e.data["stage"] for e in seen] == STAGES, replicas.output()
        assert [e.seq for e in seen] == sorted({e.seq for e in seen})  # once each, in order
        with cluster.shelf() as shelf:
            stored: list[Event] = shelf.events(document_id=doc_id)
        # every one the store has, numbered 1, 2, 3 … as its reader sees the document's events
        assert [e.seq for e in seen] == list(range(1, len(stored) + 1))
        assert [e.data["stage"] for e in seen] == [e.stage for e in stored]

        # A summary made through A is a hit of the shared cache through B.
        hits = metric(b, ops, "shared_cache_requests_total", cache="summary", result="hit")
        made = a.post(f"/v1/documents/{doc_id}/enrich", headers=headers)
        assert made.status_code == 200 and made.json()["cached"] is False, made.text
        found = b.post(f"/v1/documents/{doc_id}/enrich", headers=headers).json()
        assert found["cached"] is True and found["summary"] == made.json()["summary"]
        hits_now = metric(b, ops, "shared_cache_requests_total", cache="summary", result="hit")
        assert hits_now == hits + 1

        # So is a first-turn search.
        query = {"query": "subject3", "mode": "lexical"}
        first = a.post("/v1/search", json=query, headers=headers).json()
        assert first["hits"] and first["hits"][0]["document_id"] == doc_id
        assert b.post("/v1/search", json=query, headers=headers).json()["hits"] == first["hits"]
        assert metric(b, ops, "shared_cache_requests_total", cache="retrieval", result="hit") == 1
    assert replicas.stop() == [0, 0, 0, 0], replicas.output()  # SIGTERM: all drain and exit 0
