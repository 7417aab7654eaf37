"""RabbitMQ wake-ups for workers on any number of machines (pika, blocking API).

Topology (declared idempotently by every connection):

    docshelf.jobs        durable queue of wake-ups (body: the document id);
                         a wake-up expires after ``x-message-ttl`` (60 s), so
                         none outlives the jobs it announced
    docshelf.dead        direct exchange (the DLX)
    docshelf.jobs.dead   durable queue bound to it: one message per job that
                         went to the dead-letter state, reason in the
                         ``x-docshelf-reason`` header

``?queue=NAME`` in the URL renames the queue (and derives the other names),
so several libraries — or tests — can share one broker.

Upgrades: a queue declared by an older version (with dead-letter arguments and
no TTL) cannot be redeclared with other arguments (RabbitMQ answers
PRECONDITION_FAILED); since it holds only wake-ups, which the store makes
redundant, it is deleted and declared anew.

When the broker is unreachable, connecting backs off exponentially with
jitter (one log line when it goes, one when it is back); meanwhile workers
poll the store at their poll interval and uploads skip the wake-up.

Publishing uses publisher confirms; consumers use manual acks, sent only after
the work a wake-up led to is committed, and a bounded prefetch. Redelivery is
harmless: the store decides who owns a job. pika connections are not
thread-safe, so publishing is serialised by a lock and each worker has its
own consumer connection.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import pika
import pika.exceptions

from docshelf.backoff import Backoff
from docshelf.errors import Unavailable

log = logging.getLogger("docshelf.transport")
# pika logs each failed connection attempt at ERROR, in about seven lines with a traceback;
# this module says it once per change of state, with the cause.
logging.getLogger("pika.adapters").setLevel(logging.CRITICAL)
REASON_HEADER = "x-docshelf-reason"
WAKEUP_TTL_MS = 60_000  # workers poll the store anyway: an older wake-up is noise
RECONNECT_BASE = 0.5  # seconds before the first reconnect; doubles up to the cap
RECONNECT_CAP = 30.0
_PRECONDITION_FAILED = 406
_PIKA_ERRORS: tuple[type[BaseException], ...] = (pika.exceptions.AMQPError, OSError)


def _split(url: str) -> tuple[str, str]:
    """The broker URL without our ``queue`` parameter, and the queue name."""
    parts = urlparse(url)
    query = parse_qs(parts.query)
    queue = query.pop("queue", ["docshelf.jobs"])[0]
    rest = urlencode({k: v[0] for k, v in query.items()})
    return urlunparse(parts._replace(query=rest)), queue


def _redacted(url: str) -> str:
    parts = urlparse(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    return urlunparse(parts)


class _Topology:
    def __init__(self, url: str, wakeup_ttl_ms: int = WAKEUP_TTL_MS) -> None:
        broker, self.queue = _split(url)
        self.wakeup_ttl_ms = wakeup_ttl_ms
        self.dlx = f"{self.queue}.dlx"
        self.dead_queue = f"{self.queue}.dead"
        self.params = pika.URLParameters(broker)
        # Long stages do not pump the connection; keep the broker from closing it meanwhile.
        self.params.heartbeat = 600
        self.params.blocked_connection_timeout = 300
        self.label = _redacted(broker)

    def connect(self) -> tuple[Any, Any]:
        try:
            conn = pika.BlockingConnection(self.params)
            ch = conn.channel()
            ch.exchange_declare(self.dlx, exchange_type="direct", durable=True)
            ch.queue_declare(self.dead_queue, durable=True)
            ch.queue_bind(self.dead_queue, self.dlx, routing_key=self.queue)
            ch = self._declare_queue(conn, ch)
        except _PIKA_ERRORS as exc:
            raise Unavailable(f"RabbitMQ at {self.label} is unreachable: {exc!r}") from exc
        return conn, ch

    def _declare_queue(self, conn: Any, ch: Any) -> Any:
        """Declare the wake-up queue; one left by an older version with other arguments
        is replaced (it holds only wake-ups). Returns the channel to go on with."""
        # No dead-letter arguments: an expired wake-up must not land in the dead queue.
        arguments = {"x-message-ttl": self.wakeup_ttl_ms}
        try:
            ch.queue_declare(self.queue, durable=True, arguments=arguments)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != _PRECONDITION_FAILED:
                raise
            log.warning(
                "RabbitMQ queue %s has the arguments of an older docshelf; replacing it "
                "(it holds only wake-ups: the jobs are in the store)",
                self.queue,
            )
            ch = conn.channel()  # the broker closed the other one
            ch.queue_delete(self.queue)
            ch.queue_declare(self.queue, durable=True, arguments=arguments)
        return ch


def _backoff(topology: _Topology, clock: Callable[[], float] = time.monotonic) -> Backoff:
    return Backoff(
        base=RECONNECT_BASE,
        cap=RECONNECT_CAP,
        logger=log,
        what=f"RabbitMQ at {topology.label}",
        clock=clock,
    )


class RabbitTransport:
    def __init__(self, url: str, *, wakeup_ttl_ms: int = WAKEUP_TTL_MS) -> None:
        self.url = url
        self.topology = _Topology(url, wakeup_ttl_ms)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._ch: Any = None
        self.backoff = _backoff(self.topology)

    def _publish(
        self, exchange: str, routing_key: str, body: bytes, headers: dict[str, str]
    ) -> None:
        props = pika.BasicProperties(delivery_mode=2, content_type="text/plain", headers=headers)
        with self._lock:
            for attempt in (1, 2):  # one reconnect: the connection may have gone idle
                try:
                    if self._ch is None or self._ch.is_closed:
                        self._conn, self._ch = self.topology.connect()
                        self._ch.confirm_delivery()
                    self._ch.basic_publish(exchange, routing_key, body, props, mandatory=True)
                    return
                except _PIKA_ERRORS as exc:
                    self._ch = None
                    if attempt == 2:
                        raise Unavailable(
                            f"RabbitMQ at {self.topology.label} refused a message: {exc!r}"
                        ) from exc

    def notify(self, document_id: str) -> None:
        """Publish a wake-up. While the broker is unreachable this backs off and does not
        raise: a lost wake-up is harmless, workers poll the store."""
        if not self.backoff.due():
            return
        try:
            self._publish("", self.topology.queue, document_id.encode(), {})
        except Unavailable as exc:
            self.backoff.failed(
                f"unreachable ({exc.__cause__!r})", "workers poll the store meanwhile"
            )
        else:
            self.backoff.succeeded()

    def dead_letter(self, document_id: str, reason: str) -> None:
        self._publish(
            self.topology.dlx,
            self.topology.queue,
            document_id.encode(),
            {REASON_HEADER: reason[:1000]},
        )

    def consumer(self, prefetch: int = 1) -> RabbitConsumer:
        return RabbitConsumer(self.topology, prefetch)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._conn.is_open:
                with contextlib.suppress(*_PIKA_ERRORS):
                    self._conn.close()
            self._conn = self._ch = None


class RabbitConsumer:
    """Collects wake-ups; acknowledges them together once their work is committed.

    While the broker is unreachable, ``wait`` sleeps its timeout (the caller then
    polls the store) and reconnects only when the backoff allows."""

    def __init__(self, topology: _Topology, prefetch: int) -> None:
        self.topology = topology
        self.prefetch = prefetch
        self._pending: list[int] = []
        self._conn: Any = None
        self._ch: Any = None
        # injectable for tests: the backoff's clock, and how a wait without a broker passes
        self.clock: Callable[[], float] = time.monotonic
        self.sleep: Callable[[float], None] = time.sleep
        self.backoff = _backoff(topology, clock=lambda: self.clock())

    def _connect(self) -> None:
        self._conn, self._ch = self.topology.connect()
        self._ch.basic_qos(prefetch_count=self.prefetch)
        self._ch.basic_consume(self.topology.queue, self._on_message, auto_ack=False)
        self._pending = []  # unacked deliveries of a lost connection are redelivered

    def _on_message(self, ch: Any, method: Any, props: Any, body: bytes) -> None:
        self._pending.append(method.delivery_tag)

    def wait(self, timeout: float) -> bool:
        if self._pending:
            return True
        if self._ch is None or self._ch.is_closed:
            if not self.backoff.due():
                self.sleep(timeout)  # the caller polls the store meanwhile
                return False
            try:
                self._connect()
            except Unavailable as exc:
                self._ch = None
                self.backoff.failed(
                    f"unreachable ({exc.__cause__!r})", "polling the store meanwhile"
                )
                self.sleep(timeout)
                return False
            self.backoff.succeeded()
        try:
            self._conn.process_data_events(time_limit=timeout)
        except _PIKA_ERRORS as exc:
            self._ch = None
            self.backoff.failed(f"connection lost: {exc!r}", "polling the store meanwhile")
        return bool(self._pending)

    def ack(self) -> None:
        if not self._pending or self._ch is None:
            return
        try:
            self._ch.basic_ack(delivery_tag=max(self._pending), multiple=True)
        except _PIKA_ERRORS as exc:  # redelivered later: harmless
            log.warning("could not ack wake-ups (%r)", exc)
            self._ch = None
        self._pending = []

    def close(self) -> None:
        if self._conn is not None and self._conn.is_open:
            with contextlib.suppress(*_PIKA_ERRORS):
                self._conn.close()
        self._conn = self._ch = None
