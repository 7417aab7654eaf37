"""In-process wake-ups: a condition variable shared by the threads of one process."""

from __future__ import annotations

import threading


class LocalTransport:
    url = "local"

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._generation = 0

    def notify(self, document_id: str) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def dead_letter(self, document_id: str, reason: str) -> None:
        """Nothing to do: the store holds the dead-letter state."""

    def consumer(self, prefetch: int = 1) -> _LocalConsumer:
        return _LocalConsumer(self)

    def close(self) -> None:
        with self._cond:
            self._cond.notify_all()


class _LocalConsumer:
    def __init__(self, transport: LocalTransport) -> None:
        self._t = transport
        self._seen = transport._generation

    def wait(self, timeout: float) -> bool:
        with self._t._cond:
            woke = self._t._cond.wait_for(lambda: self._t._generation != self._seen, timeout)
            self._seen = self._t._generation
            return bool(woke)

    def ack(self) -> None:
        """Nothing to acknowledge in-process."""

    def close(self) -> None:
        """Nothing to release."""
