"""What a ``docshelf worker`` process shows the outside: ``/metrics`` for Prometheus
(the same registry the API serves) and ``/healthz`` for a liveness probe.

``/healthz`` answers 200 while every worker thread is alive and has shown a sign of
life (a turn of its loop, or a lease renewal during a long job) within
``stale_after`` seconds; 503 with the reason otherwise. ``docshelf worker`` gives it
5 minutes (or two leases, if longer): between turns of its loop a worker may also
enrich a document, whose LLM calls (with their timeouts and retries) take minutes
at worst. It never touches the store: a store outage makes workers wait, not die,
and restarting them would not help. With ``DOCSHELF_METRICS_TOKEN`` set, ``/metrics``
answers only that bearer token (the probe listens on loopback unless told otherwise).
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from docshelf.ingest.worker import Worker


def problems(
    workers: Sequence[Worker], threads: Sequence[threading.Thread], stale_after: float
) -> list[str]:
    """Why this worker process is not live (empty when it is)."""
    now = time.time()
    # a thread not started yet (the probe listens before the workers start) is not dead
    found = [
        f"{t.name}: the thread has stopped"
        for t in threads
        if t.ident is not None and not t.is_alive()
    ]
    found += [
        f"{w.name}: no sign of life for {now - w.alive_at:.0f}s"
        for w in workers
        if now - w.alive_at > stale_after
    ]
    return found


class WorkerProbe:
    """A small HTTP server in a daemon thread; ``close()`` stops it."""

    def __init__(
        self,
        workers: Sequence[Worker],
        threads: Sequence[threading.Thread],
        *,
        host: str,
        port: int,
        stale_after: float,
        token: str | None = None,
    ) -> None:
        def report() -> list[str]:
            return problems(workers, threads, stale_after)

        self._server = ThreadingHTTPServer((host, port), _handler(report, token))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="worker-probe", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _handler(report: Any, token: str | None) -> type[BaseHTTPRequestHandler]:
    expected = f"Bearer {token}".encode() if token else None

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # probes every few seconds: keep quiet
            pass

        def do_GET(self) -> None:
            if self.path == "/metrics":
                given = self.headers.get("Authorization", "").encode()
                if expected is not None and not hmac.compare_digest(given, expected):
                    self._send(401, b'{"error": "send DOCSHELF_METRICS_TOKEN"}', "application/json")
                else:
                    self._send(200, generate_latest(), CONTENT_TYPE_LATEST)
            elif self.path == "/healthz":
                found = report()
                body = {"status": "unavailable", "problems": found} if found else {"status": "ok"}
                self._send(503 if found else 200, json.dumps(body).encode(), "application/json")
            else:
                self._send(404, b'{"error": "not found"}', "application/json")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
