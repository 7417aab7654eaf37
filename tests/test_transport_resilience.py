"""RabbitMQ when things go wrong (issue 17): an unreachable broker is retried with
backoff and logged once per change of state; wake-ups expire instead of piling up;
a queue declared by an older version is upgraded."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from docshelf.transport import open_transport
from docshelf.transport.rabbitmq import RabbitConsumer, RabbitTransport
from tests.services import service_url
from tests.test_transport import _remove, amqp_url


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"docshelf.test.{uuid.uuid4().hex[:8]}"
    yield name
    _remove(name)


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeTime:
    """The consumer's clock and sleep: waiting advances the clock, nothing sleeps."""

    def __init__(self, consumer: RabbitConsumer) -> None:
        self.now = 0.0
        consumer.clock = lambda: self.now
        consumer.sleep = self.sleep

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every connection attempt the transport makes."""
    attempts: list[Any] = []
    real = pika.BlockingConnection

    def counting(params: Any) -> Any:
        attempts.append(params)
        return real(params)

    monkeypatch.setattr(pika, "BlockingConnection", counting)
    return attempts


def _transport_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What reached the log at WARNING or above, from docshelf or pika."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_unreachable_broker_is_retried_with_backoff_and_logged_once(
    connects: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    transport = open_transport(f"amqp://guest:guest@127.0.0.1:{_closed_port()}/")
    consumer = transport.consumer()
    assert isinstance(consumer, RabbitConsumer)
    clock = FakeTime(consumer)
    with caplog.at_level(logging.INFO):
        for _ in range(400):  # a worker polling the store every 0.25 s for 100 s
            assert consumer.wait(0.25) is False
    assert clock.now == pytest.approx(100.0)  # each wait waited: no spinning
    # 0.5 s doubling to 30 s, jittered: about 8 tries in 100 s, not 400
    assert 4 <= len(connects) <= 15, len(connects)
    lines = _transport_lines(caplog)
    assert len(lines) == 1 and "unreachable" in lines[0] and "polling the store" in lines[0]
    consumer.close()
    transport.close()


def test_publishing_to_an_unreachable_broker_backs_off_too(
    connects: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    transport = open_transport(f"amqp://guest:guest@127.0.0.1:{_closed_port()}/")
    assert isinstance(transport, RabbitTransport)
    with caplog.at_level(logging.INFO):
        for n in range(50):  # fifty uploads in a burst
            transport.notify(f"doc_{n}")
    assert len(connects) == 1  # one try, then the backoff holds
    assert len(_transport_lines(caplog)) == 1
    transport.close()


def test_the_consumer_recovers_when_the_broker_returns(
    queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    transport = open_transport(amqp_url(queue).replace(":5672/", f":{_closed_port()}/"))
    consumer = transport.consumer()
    assert isinstance(consumer, RabbitConsumer)
    clock = FakeTime(consumer)
    with caplog.at_level(logging.INFO):
        for _ in range(20):
            consumer.wait(0.25)
        assert consumer.backoff.failing
        # the broker is back (here: the real one)
        consumer.topology.params = pika.URLParameters(
            service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ")
        )
        clock.now += 60.0
        consumer.wait(0.1)
    assert not consumer.backoff.failing
    lines = _transport_lines(caplog)
    assert len(lines) == 2 and "available again" in lines[1]
    producer = open_transport(amqp_url(queue))
    producer.notify("doc_1")
    assert consumer.wait(5.0) is True
    consumer.ack()
    consumer.close()
    producer.close()
    transport.close()


def _queue_depth(queue: str) -> tuple[int, int]:
    """(wake-ups waiting, messages in the dead-letter queue)."""
    conn = pika.BlockingConnection(
        pika.URLParameters(service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ"))
    )
    try:
        ch = conn.channel()
        jobs = ch.queue_declare(queue, passive=True).method.message_count
        dead = ch.queue_declare(f"{queue}.dead", passive=True).method.message_count
        return jobs, dead
    finally:
        conn.close()


def test_wakeups_expire_and_never_reach_the_dead_queue(queue: str) -> None:
    transport = RabbitTransport(amqp_url(queue), wakeup_ttl_ms=200)
    try:
        for n in range(5):  # wake-ups nobody consumed: their jobs were done by polling
            transport.notify(f"doc_{n}")
        assert _queue_depth(queue)[0] > 0
        deadline = time.monotonic() + 10
        while _queue_depth(queue)[0] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _queue_depth(queue) == (0, 0)
        transport.dead_letter("doc_9", "parsing: encrypted")  # a real dead letter stays
        time.sleep(0.5)
        assert _queue_depth(queue) == (0, 1)
    finally:
        transport.close()


def test_a_queue_declared_by_an_older_version_is_replaced(queue: str) -> None:
    base = service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ")
    conn = pika.BlockingConnection(pika.URLParameters(base))
    try:
        old = {"x-dead-letter-exchange": f"{queue}.dlx", "x-dead-letter-routing-key": queue}
        conn.channel().queue_declare(queue, durable=True, arguments=old)
    finally:
        conn.close()
    transport = open_transport(amqp_url(queue))
    assert isinstance(transport, RabbitTransport)
    consumer = transport.consumer()
    try:
        transport.notify("doc_1")
        assert not transport.backoff.failing
        assert consumer.wait(5.0) is True
        consumer.ack()
        conn = pika.BlockingConnection(pika.URLParameters(base))
        try:  # redeclaring with today's arguments works: the queue has them
            conn.channel().queue_declare(
                queue, durable=True, arguments={"x-message-ttl": transport.topology.wakeup_ttl_ms}
            )
        finally:
            conn.close()
    finally:
        consumer.close()
        transport.close()
