"""The API over a real socket: uvicorn in a thread, an in-process worker pool, and
SSE read by a client as it arrives — including a reconnect with Last-Event-ID."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from docshelf.api import create_app
from docshelf.ingest.worker import WorkerSettings
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder
from tests.live_server import serve

STAGES = ["queued", "parsing", "chunking", "embedding", "indexing", "complete"]
METRICS = [
    "ingest_jobs_total",
    "ingest_failures_total",
    "ingest_latency_ms",
    "embedding_upserts_total",
    "search_latency_ms",
    "ingest_queue_depth",
]
DOC = "# Handbook\n\n" + "".join(
    f"## Part {i}\n\nPart {i} explains topic{i} in detail. {FILLER}\n\n" for i in range(8)
)


class GatedEmbedder(HashEmbedder):
    """Embedding waits until ``gate`` opens (a client opens it when it has *seen* an
    earlier stage: proof that events stream while the job runs), then takes a moment per
    batch, so the stages go by one by one. A gate never opened fails the test, not hangs it."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate_timed_out = False

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not self.gate.wait(timeout=15):
            self.gate_timed_out = True
        time.sleep(0.08)
        return super().embed(texts)


@dataclass
class Server:
    url: str
    shelf: Shelf
    headers: dict[str, str]
    embedder: GatedEmbedder


@pytest.fixture
def server(isolated_home: Path) -> Iterator[Server]:
    embedder = GatedEmbedder()
    shelf = Shelf(isolated_home, embedder=embedder)
    _, token = shelf.create_user("alice")
    app = create_app(
        shelf,
        workers=1,
        worker_settings=WorkerSettings(poll_seconds=0.05, embed_batch=2),
        sse_poll=0.05,
        sse_ping=0.3,
    )
    try:
        with serve(app) as url:
            yield Server(url, shelf, {"Authorization": f"Bearer {token}"}, embedder)
    finally:
        shelf.close()


@dataclass
class SseEvent:
    id: str
    event: str
    data: dict[str, object]


@dataclass
class SseRead:
    events: list[SseEvent]
    comments: list[str]
    closed_by_server: bool


def read_sse(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    *,
    until: str | None = None,
    comment_after_until: bool = False,
    seconds: float = 20.0,
    on_event: Callable[[SseEvent], None] | None = None,
) -> SseRead:
    """Read an SSE stream line by line until the server closes it, an event named
    ``until`` arrives (then, optionally, one more comment line), or time runs out;
    ``on_event`` is called with each event as it arrives."""
    events: list[SseEvent] = []
    comments: list[str] = []
    fields: dict[str, str] = {}
    deadline = time.monotonic() + seconds
    seen_until = False
    with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            assert time.monotonic() < deadline, f"stream still open after {seconds}s"
            if line.startswith(":"):
                comments.append(line)
                if seen_until and comment_after_until:
                    return SseRead(events, comments, closed_by_server=False)
            elif line:
                key, _, value = line.partition(":")
                fields[key] = value.removeprefix(" ")
            elif fields:
                events.append(
                    SseEvent(
                        fields["id"],
                        fields["event"],
                        json.loads(fields["data"]),
                    )
                )
                fields = {}
                if on_event is not None:
                    on_event(events[-1])
                if until is not None and events[-1].event == until:
                    seen_until = True
                    if not comment_after_until:
                        return SseRead(events, comments, closed_by_server=False)
    return SseRead(events, comments, closed_by_server=True)


def test_upload_progress_streams_live_and_resumes(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        r = client.post(
            "/v1/documents", files={"file": ("handbook.md", DOC.encode())}, headers=server.headers
        )
        assert r.status_code == 202, r.text
        doc_id = r.json()["document_id"]

        def open_gate_once_chunking_is_seen(event: SseEvent) -> None:
            if event.data["stage"] == "chunking":
                server.embedder.gate.set()

        live = read_sse(
            client,
            f"/v1/documents/{doc_id}/events",
            server.headers,
            on_event=open_gate_once_chunking_is_seen,
        )
        # The worker waited in its first embedding until this client had read "chunking":
        # the events came while the job ran, not replayed after it.
        assert server.embedder.gate.is_set() and not server.embedder.gate_timed_out
        assert live.closed_by_server
        stages = [str(e.data["stage"]) for e in live.events]
        assert stages[0] == "queued" and stages[-1] == "complete"
        assert sorted(set(stages), key=STAGES.index) == STAGES
        assert [STAGES.index(s) for s in stages] == sorted(STAGES.index(s) for s in stages)
        assert stages.count("embedding") > 2  # progress inside the stage, batch by batch
        pcts = [int(str(e.data["progress_pct"])) for e in live.events]
        assert pcts == sorted(pcts) and pcts[-1] == 100
        ids = [int(e.id) for e in live.events]
        assert ids == sorted(set(ids))
        assert all(
            e.event == "stage" and set(e.data) == {"stage", "progress_pct", "message"}
            for e in live.events
        )

        mid = len(live.events) // 2
        resumed = read_sse(
            client,
            f"/v1/documents/{doc_id}/events",
            {**server.headers, "Last-Event-ID": live.events[mid].id},
        )
        assert resumed.closed_by_server
        assert [(e.id, e.data) for e in resumed.events] == [
            (e.id, e.data) for e in live.events[mid + 1 :]
        ]
        done = read_sse(
            client,
            f"/v1/documents/{doc_id}/events",
            {**server.headers, "Last-Event-ID": live.events[-1].id},
        )
        assert done.closed_by_server and done.events == []

        lifecycle = read_sse(
            client,
            "/v1/events",
            server.headers,
            until="document.completed",
            comment_after_until=True,
        )
        kinds = [e.event for e in lifecycle.events]
        assert kinds == ["document.queued", "document.completed"]
        assert lifecycle.events[-1].data == {
            "document_id": doc_id,
            "stage": "complete",
            "message": "complete",  # no file name: shared bytes may have several
        }
        assert any(c.startswith(": ping") for c in lifecycle.comments)  # keep-alive

        hits = client.post(
            "/v1/search", json={"query": "topic3", "limit": 3}, headers=server.headers
        ).json()["hits"]
        assert hits and hits[0]["citation"]["label"].startswith("Handbook (handbook.md#")

        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json() == {"status": "ready"}
        _, ops = server.shelf.create_user("ops", admin=True)
        metrics = client.get("/metrics", headers={"Authorization": f"Bearer {ops}"})
        assert metrics.status_code == 200
        for name in METRICS:
            assert name in metrics.text, name
        assert 'ingest_jobs_total{stage="embedding"}' in metrics.text
        assert 'ingest_queue_depth{status="queued"} 0.0' in metrics.text
