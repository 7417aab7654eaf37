"""Fan-out latency across replicas: how long after a worker commits a stage does an SSE
client of another API replica read it?

The shape of tests/test_replicas.py: two `docshelf serve --workers 0` replicas and
two `docshelf worker` processes on PostgreSQL + RabbitMQ, in two configurations:

- ``redis``: DOCSHELF_REDIS_URL set (a prefix of its own); streams are woken by
  Redis pub/sub after each commit (and poll the store every 5 s, the default then);
- ``poll``: no Redis; streams poll the store every 0.2 s (the default).

Each document (a Markdown note, lexical only) is uploaded through replica B, and
its event stream is opened on replica A at once. Latency = the time this process
read an event minus the event's ``created_at`` in the store (stamped inside the
worker's transaction, just before its commit: the figure slightly overstates the
delay). Only events committed after the stream was open count, so replayed ones
do not. Prints the count, p50, p95 and max per configuration.

    .venv/bin/python bench/fanout.py --database-url postgresql://postgres@127.0.0.1:5432/test \\
        --amqp-url 'amqp://guest:guest@127.0.0.1:5672/%2F' --redis-url redis://127.0.0.1:6379/0 \\
        [--documents 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.cluster import delete_queue, fresh_schema
from docshelf.config import Settings
from docshelf.shelf import Shelf
from tests.redis_service import fresh_prefix
from tests.replicas import ReplicaSet, stream
from tests.test_cluster import note


def measure(args: argparse.Namespace, mode: str, tmp: Path) -> list[float]:
    """Latencies in ms of every event committed while its stream was open."""
    queue = f"docshelf.bench.fanout.{uuid.uuid4().hex[:8]}"
    amqp = f"{args.amqp_url}{'&' if '?' in args.amqp_url else '?'}queue={queue}"
    home = tmp / mode
    logs = home / "logs"
    logs.mkdir(parents=True)
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(args.database_url))
        stack.callback(delete_queue, args.amqp_url, queue)
        redis_url = (
            stack.enter_context(fresh_prefix(args.redis_url))[0] if mode == "redis" else None
        )
        settings = Settings(home=home, database_url=url, embedder="none", queue_url=amqp)
        shelf = stack.enter_context(Shelf(settings=settings, embedder=None))
        _, token = shelf.create_user("bench")
        headers = {"Authorization": f"Bearer {token}"}
        replicas = ReplicaSet(url, amqp, redis_url, home, logs, {"DOCSHELF_ENRICH": "off"})
        stack.callback(replicas.stop)
        a_url, b_url = replicas.api(), replicas.api()
        for _ in range(args.workers):
            replicas.worker()
        time.sleep(3)  # the workers are up
        a = stack.enter_context(httpx.Client(base_url=a_url, timeout=30))
        b = stack.enter_context(httpx.Client(base_url=b_url, timeout=30))
        received: list[tuple[int, float, float]] = []  # (seq, read at, stream opened at)
        for i in range(args.documents):
            data = note(i, sections=args.sections)
            r = b.post("/v1/documents", files={"file": (f"n{i}.md", data)}, headers=headers)
            r.raise_for_status()
            doc_id = r.json()["document_id"]
            opened = time.time()
            with stream(a, f"/v1/documents/{doc_id}/events", headers, seconds=60) as events:
                received.extend((e.seq, e.at, opened) for e in events)
        created = {e.seq: e.created_at for e in shelf.store.events_after(0, limit=100_000)}
    return [(at - created[seq]) * 1000 for seq, at, opened in received if created[seq] > opened]


def percentile(values: list[float], p: float) -> float:
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, round(p / 100 * (len(ranked) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--amqp-url", required=True)
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--sections", type=int, default=20, help="size of each note")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", default="redis,poll")
    args = parser.parse_args()
    print(f"{args.documents} documents, 2 API replicas, {args.workers} workers; ms from commit")
    print("| streams woken by | events | p50 | p95 | max |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="docshelf-fanout-") as tmp:
        for mode in args.modes.split(","):
            ms = measure(args, mode, Path(tmp))
            label = "Redis pub/sub" if mode == "redis" else "polling every 0.2 s (no Redis)"
            print(
                f"| {label} | {len(ms)} | {statistics.median(ms):.1f} | "
                f"{percentile(ms, 95):.1f} | {max(ms):.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
