"""The job transport contract, on every backend; RabbitMQ for real."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from docshelf.errors import InvalidInput, Unavailable
from docshelf.shelf import Shelf
from docshelf.transport import Transport, open_transport
from tests.services import service_url


def amqp_url(queue: str) -> str:
    base = service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ")
    return f"{base}{'&' if '?' in base else '?'}queue={queue}"


def _remove(queue: str) -> None:
    """Delete what a test declared on the broker: the queue, its dead-letter queue and DLX."""
    import pika

    conn = pika.BlockingConnection(
        pika.URLParameters(service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ"))
    )
    try:
        ch = conn.channel()
        for name in (queue, f"{queue}.dead"):
            ch.queue_delete(name)
        ch.exchange_delete(f"{queue}.dlx")
    finally:
        conn.close()


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"docshelf.test.{uuid.uuid4().hex[:8]}"
    yield name
    _remove(name)


@pytest.fixture(params=["local", "rabbitmq"])
def transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    if request.param == "local":
        t = open_transport("local")
    else:
        t = open_transport(amqp_url(request.getfixturevalue("queue")))
    yield t
    t.close()


def test_a_notification_wakes_a_consumer(transport: Transport) -> None:
    consumer = transport.consumer()
    try:
        consumer.wait(0.2)  # connect and settle
        consumer.ack()
        started = time.monotonic()
        assert consumer.wait(0.3) is False
        assert time.monotonic() - started >= 0.25
        transport.notify("doc_1")
        assert consumer.wait(5.0) is True
        consumer.ack()
    finally:
        consumer.close()


def test_unknown_queue_url() -> None:
    with pytest.raises(InvalidInput):
        open_transport("kafka://nope")


def test_rabbitmq_unacked_wakeups_are_redelivered(queue: str) -> None:
    transport = open_transport(amqp_url(queue))
    try:
        transport.notify("doc_1")
        first = transport.consumer()
        assert first.wait(5.0)
        first.close()  # died before acking
        second = transport.consumer()
        assert second.wait(5.0), "the wake-up must be redelivered"
        second.ack()
        second.close()
        third = transport.consumer()
        assert third.wait(0.5) is False
        third.close()
    finally:
        transport.close()


def test_rabbitmq_dead_letter_keeps_the_reason(queue: str) -> None:
    import pika

    transport = open_transport(amqp_url(queue))
    try:
        transport.dead_letter("doc_9", "parsing: encrypted")
        base = service_url("DOCSHELF_TEST_AMQP_URL", "RabbitMQ")
        conn = pika.BlockingConnection(pika.URLParameters(base))
        try:
            ch = conn.channel()
            for _ in range(50):
                method, props, body = ch.basic_get(f"{queue}.dead", auto_ack=True)
                if method is not None:
                    break
                time.sleep(0.1)
            assert body == b"doc_9"
            assert props.headers["x-docshelf-reason"] == "parsing: encrypted"
        finally:
            conn.close()
    finally:
        transport.close()


def test_unreachable_broker_is_unavailable_and_uploads_still_work(
    isolated_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    transport = open_transport("amqp://guest:secret@127.0.0.1:1/?queue=x")
    with pytest.raises(Unavailable) as err:
        transport.dead_letter("doc_1", "reason")
    assert "secret" not in str(err.value)
    with caplog.at_level("WARNING", logger="docshelf.transport"):
        transport.notify("doc_1")  # a lost wake-up is harmless: logged, never raised
    assert "unreachable" in caplog.text and "secret" not in caplog.text
    os.environ["DOCSHELF_QUEUE_URL"] = "amqp://guest:guest@127.0.0.1:1/"
    try:
        with Shelf(isolated_home, embedder=None) as shelf:
            user = shelf.create_user("alice")[0].id
            up = shelf.upload(user, "a.md", b"# A\n\nhello\n")
            assert up.created  # the job is in the store; workers will poll it
    finally:
        del os.environ["DOCSHELF_QUEUE_URL"]


def test_workers_on_rabbitmq_in_other_processes(isolated_home: Path, queue: str) -> None:
    url = amqp_url(queue)
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(isolated_home),
        "DOCSHELF_EMBEDDER": "none",
        "DOCSHELF_QUEUE_URL": url,
    }
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "docshelf.cli", "worker"], env=env, stderr=subprocess.DEVNULL
        )
        for _ in range(2)
    ]
    try:
        os.environ["DOCSHELF_QUEUE_URL"] = url
        with Shelf(isolated_home, embedder=None) as shelf:
            ids = [
                shelf.upload(
                    user, f"n{i}.md", f"# Note {i}\n\nabout topic{i}\n".encode()
                ).document_id
                for i in range(10)
            ]
            deadline = time.monotonic() + 30
            while any(shelf.job(i).status != "complete" for i in ids):
                assert time.monotonic() < deadline, "jobs did not complete"
                time.sleep(0.1)
            assert len(shelf.search("topic3", user_id=user).hits) == 1
    finally:
        os.environ.pop("DOCSHELF_QUEUE_URL", None)
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(20)


def test_queue_name_comes_out_of_the_url_and_the_rest_stays_encoded() -> None:
    from docshelf.transport.rabbitmq import _redacted, _split

    assert _split("amqp://g:g@h:5672/%2F?queue=lib.a&heartbeat=30&x=a%26b") == (
        "amqp://g:g@h:5672/%2F?heartbeat=30&x=a%26b",
        "lib.a",
    )
    assert _split("amqp://h/")[1] == "docshelf.jobs"
    assert "secret" not in _redacted("amqp://user:secret@h:5672/")
