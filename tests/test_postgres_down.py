"""PostgreSQL refusing connections after the store opened (issue 41): requests are
answered "store unavailable" at once instead of after the pool's 30 s, the log says so
once per interval instead of a line per connection attempt, and the store recovers
when the server takes connections again."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from docshelf.errors import Unavailable
from docshelf.store.postgres import PostgresStore
from tests import pg


class Forwarder:
    """A loopback port passing connections on to ``target`` until ``stop()``; after it
    the port refuses connections (and those it passed on are cut) until ``start()``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.start()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        _cut(self._listener)  # wakes the accepting thread
        self._listener.close()
        with self._lock:
            for s in self._open:
                _cut(s)
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        _cut(b)


def _cut(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def forwarded() -> Iterator[tuple[Forwarder, str]]:
    """A fresh schema's URL through a ``Forwarder`` to the test server."""
    with pg.fresh_schema() as url:
        parts = urlsplit(url)
        forwarder = Forwarder((parts.hostname or "127.0.0.1", parts.port or 5432))
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{forwarder.port}"
        netloc[-1] = host
        yield forwarder, urlunsplit(parts._replace(netloc="@".join(netloc)))
        forwarder.stop()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _read(store: PostgresStore) -> str:
    try:
        store.list_documents()
    except Unavailable as exc:
        return exc.message
    return "ok"


def test_a_server_refusing_connections_is_told_at_once_and_logged_once(
    forwarded: tuple[Forwarder, str], caplog: pytest.LogCaptureFixture
) -> None:
    forwarder, url = forwarded
    store = PostgresStore(url, pool_size=4)
    try:
        assert _read(store) == "ok"
        with caplog.at_level(logging.INFO):
            forwarder.stop()
            with ThreadPoolExecutor(8) as pool:  # requests at the moment it goes down
                answers = list(pool.map(lambda _: _read(store), range(8)))
            answers += [_read(store) for _ in range(20)]  # and after
        assert "ok" not in answers
        told = [a for a in answers if a.startswith("The store is unavailable")]
        assert len(told) >= len(answers) - 1, answers  # the first may meet its cut connection
        assert "refuses connections" in told[-1] and "Connection refused" in told[-1]
        lines = _warnings(caplog)
        assert not [line for line in lines if "error connecting" in line], lines
        assert len([line for line in lines if "refuses connections" in line]) == 1, lines
        # besides that line, at most the pool's word on each connection it found cut
        assert len(lines) <= 1 + 4, lines

        forwarder.start()  # the server takes connections again
        with caplog.at_level(logging.INFO):
            for _ in range(600):  # each try waits a moment while it is down
                if _read(store) == "ok":
                    break
        assert _read(store) == "ok"
        assert any("takes connections again" in line for line in _warnings(caplog))
    finally:
        store.close()


def test_the_state_is_said_once_per_interval_with_the_attempts() -> None:
    from docshelf.store.postgres_health import Reachability

    now = [0.0]
    reach = Reachability("postgresql://db", "docshelf", lambda m: m, clock=lambda: now[0])
    refused = psycopg.OperationalError("connection failed: Connection refused\n\tIs it up?")
    logger = logging.getLogger("docshelf.store")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    keep = Keep(logging.INFO)
    logger.addHandler(keep)
    try:
        for second in range(100):  # an attempt a second for 100 s
            now[0] = float(second)
            reach.failed(refused)
            assert reach.down
        now[0] = 100.0
        reach.succeeded()
    finally:
        logger.removeHandler(keep)
    assert not reach.down and reach.cause == "connection failed: Connection refused"
    assert len(seen) == 1 + 3 + 1, seen  # down; still down at 30, 60, 90 s; back
    assert "refuses connections" in seen[0] and "90 s, 91 attempts" in seen[3]
    assert "again, after 100 s" in seen[-1]
    record = logging.LogRecord(
        "psycopg.pool",
        logging.WARNING,
        "",
        0,
        "error connecting in %r: %s",
        ("docshelf", "x"),
        None,
    )
    other = logging.LogRecord(
        "psycopg.pool", logging.WARNING, "", 0, "error connecting in %r: %s", ("theirs", "x"), None
    )
    assert not reach.filter(record) and reach.filter(other)
