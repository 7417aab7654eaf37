"""Several API replicas and workers as real processes on one store, one broker and one
Redis — for tests/test_replicas.py and bench/fanout.py.

The caller provides the database (a schema of its own), the queue URL, the Redis
URL (a prefix of its own) and a home whose blob folder every process shares; this
starts `docshelf serve --workers 0` replicas (no in-process workers) and
`docshelf worker` processes, reads SSE streams with their arrival times, and stops
everything with SIGTERM, returning the exit codes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Received:
    seq: int  # the event's id (its seq in the store)
    name: str  # the SSE event name
    data: dict[str, object]
    at: float  # time.time() when this process read it


@dataclass
class ReplicaSet:
    database_url: str
    queue_url: str
    redis_url: str | None
    home: Path
    logs: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    apis: list[str] = field(default_factory=list)  # base URLs

    @property
    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DOCSHELF_HOME": str(self.home),
            "DOCSHELF_DATABASE_URL": self.database_url,
            "DOCSHELF_QUEUE_URL": self.queue_url,
            "DOCSHELF_EMBEDDER": "none",
            **self.extra_env,
        }
        if self.redis_url:
            env["DOCSHELF_REDIS_URL"] = self.redis_url
        return env

    def spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        log = (self.logs / f"{name}-{len(self.procs)}.log").open("wb")
        self.procs.append(
            subprocess.Popen(
                [sys.executable, *args], env={**self.env, **(env or {})}, stdout=log, stderr=log
            )
        )

    def api(self) -> str:
        """Start one more API replica; its base URL (ready when this returns)."""
        port = free_port()
        self.spawn("api", "-m", "docshelf.cli", "serve", "--port", str(port), "--workers", "0")
        base = f"http://127.0.0.1:{port}"
        proc = self.procs[-1]
        deadline = time.monotonic() + 60
        with httpx.Client(base_url=base, timeout=5) as client:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the API replica exited\n{self.output()}")
                with suppress(httpx.TransportError):
                    if client.get("/readyz").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the API replica never got ready\n{self.output()}")
                time.sleep(0.05)
        self.apis.append(base)
        return base

    def worker(self) -> None:
        self.spawn("worker", "-m", "docshelf.cli", "worker")

    def output(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.logs.iterdir())
        )

    def stop(self) -> list[int]:
        """SIGTERM to every process still running, then every exit code."""
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(30))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
        return codes


@contextmanager
def stream(
    client: httpx.Client, url: str, headers: dict[str, str], seconds: float
) -> Iterator[Iterator[Received]]:
    """The events of an SSE stream as they arrive; raises TimeoutError when the stream
    is still open after ``seconds`` (pings keep the connection alive meanwhile)."""
    deadline = time.monotonic() + seconds
    with client.stream("GET", url, headers=headers) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.read()!r}")

        def events() -> Iterator[Received]:
            fields: dict[str, str] = {}
            for line in response.iter_lines():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{url} still open after {seconds} s")
                if line.startswith(":"):
                    continue
                if line:
                    key, _, value = line.partition(":")
                    fields[key] = value.removeprefix(" ")
                elif "data" in fields:
                    data = json.loads(fields["data"])
                    yield Received(int(fields["id"]), fields.get("event", ""), data, time.time())
                    fields = {}
                else:
                    fields = {}

        yield events()
