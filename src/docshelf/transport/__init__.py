"""The job ``Transport`` port: how workers learn that a job is due.

The job's truth is always its row in the store; a message is only a wake-up,
so at-least-once delivery (or a lost message) is harmless — workers also poll
the store now and then, which is what picks up retries whose backoff expired
and jobs whose worker died.

``local``    an in-process signal (threads of one process; other processes poll)
``amqp://…`` RabbitMQ: a durable queue of wake-ups, publisher confirms, manual
             acks after the work is committed, bounded prefetch, and a
             dead-letter exchange that receives a job's message with its reason
             when the job goes to the dead-letter state
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlparse

from docshelf.errors import InvalidInput


class Consumer(Protocol):
    """One worker's end of the transport (not shared between threads)."""

    def wait(self, timeout: float) -> bool:
        """Block until woken up (True) or ``timeout`` seconds pass (False)."""
        ...

    def ack(self) -> None:
        """Acknowledge the wake-ups received so far; call once their work is committed."""
        ...

    def close(self) -> None: ...


class Transport(Protocol):
    url: str

    def notify(self, document_id: str) -> None:
        """A job became due; call after the transaction that queued it committed."""
        ...

    def dead_letter(self, document_id: str, reason: str) -> None:
        """The job went to the dead-letter state (already recorded in the store)."""
        ...

    def consumer(self, prefetch: int = 1) -> Consumer: ...
    def close(self) -> None: ...


def open_transport(url: str) -> Transport:
    """``local`` (the default) or ``amqp://user:pass@host:port/vhost``."""
    if url in ("", "local"):
        from docshelf.transport.local import LocalTransport

        return LocalTransport()
    if urlparse(url).scheme in ("amqp", "amqps"):
        from docshelf.transport.rabbitmq import RabbitTransport

        return RabbitTransport(url)
    raise InvalidInput(f"Unknown queue URL {url!r}; use `local` or amqp://…")


__all__ = ["Consumer", "Transport", "open_transport"]
