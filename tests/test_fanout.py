"""SSE streams woken by commits, not by polling: the API's poll interval is set to a
minute here, so a stream that sees every stage of a job in seconds was woken by
each commit — through Redis from another replica, or in-process without it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from docshelf.api import create_app
from docshelf.config import Settings
from docshelf.ingest.worker import WorkerPool, WorkerSettings
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.live_server import serve
from tests.redis_service import fresh_prefix
from tests.test_cluster import STAGES, sse_events
from tests.test_shutdown import big_note
from tests.worker_proc import SlowEmbedder

# seconds between reads of the store, and between pings: far beyond the client's read
# timeout, so a stream that is not woken fails the test
SLOW_POLL = 60.0


@pytest.fixture
def redis_url() -> Iterator[str]:
    with fresh_prefix() as (url, _):
        yield url


def replica(home: Path, redis_url: str | None) -> Shelf:
    settings = Settings(**{**Settings.from_env(home).__dict__, "redis_url": redis_url})
    return Shelf(settings=settings, embedder=HashEmbedder())


def upload(client: httpx.Client, headers: dict[str, str], name: str, data: bytes) -> str:
    r = client.post("/v1/documents", files={"file": (name, data)}, headers=headers)
    assert r.status_code == 202, r.text
    return str(r.json()["document_id"])


def test_a_worker_on_another_replica_wakes_this_replicas_streams_through_redis(
    isolated_home: Path, redis_url: str
) -> None:
    with replica(isolated_home, redis_url) as api, replica(isolated_home, redis_url) as other:
        _, token = api.create_user("alice")
        headers = {"Authorization": f"Bearer {token}"}
        app = create_app(api, workers=0, sse_poll=SLOW_POLL, sse_ping=SLOW_POLL)
        other.embedder = SlowEmbedder()  # the job takes a while: its stages come one by one
        pool = WorkerPool(other, 1, WorkerSettings(poll_seconds=0.05, embed_batch=8))
        with serve(app) as base, httpx.Client(base_url=base, timeout=20) as client:
            doc_id = upload(client, headers, "big.md", big_note())
            starter = threading.Timer(0.3, pool.start)  # once the stream is open
            starter.start()
            try:
                events = sse_events(client, f"/v1/documents/{doc_id}/events", headers)
                assert moves(events) == STAGES
                # a client that lost the connection after "chunking" misses nothing
                second = sse_events(
                    client,
                    f"/v1/documents/{doc_id}/events",
                    {**headers, "Last-Event-ID": str(_seq_of(api, doc_id, "chunking"))},
                )
                assert moves(second) == STAGES[3:]
            finally:
                starter.join()
                pool.stop()


def test_without_redis_commits_of_this_process_wake_its_streams(isolated_home: Path) -> None:
    with replica(isolated_home, None) as api:
        _, token = api.create_user("alice")
        headers = {"Authorization": f"Bearer {token}"}
        api.embedder = SlowEmbedder()  # the last stages come seconds after the stream opens
        app = create_app(
            api,
            workers=1,
            worker_settings=WorkerSettings(poll_seconds=0.05, embed_batch=8),
            sse_poll=SLOW_POLL,
            sse_ping=SLOW_POLL,
        )
        with serve(app) as base, httpx.Client(base_url=base, timeout=20) as client:
            doc_id = upload(client, headers, "big.md", big_note())
            events = sse_events(client, f"/v1/documents/{doc_id}/events", headers)
            assert moves(events) == STAGES


def moves(events: list[dict[str, Any]]) -> list[str]:
    """The stages in the order they came, each once (the embedding stage reports
    progress once per batch)."""
    stages = [str(e["stage"]) for e in events]
    return [s for i, s in enumerate(stages) if i == 0 or s != stages[i - 1]]


def _seq_of(shelf: Shelf, document_id: str, stage: str) -> int:
    return next(e.seq for e in shelf.events(document_id=document_id) if e.stage == stage)
