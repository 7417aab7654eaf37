"""Where this process's SSE streams wait for news, and how they are told to end.

The app's lifespan listens on the shelf's ``Broadcast`` (Redis when configured:
commits of every process; else this process's own) and hands each message to
``Wakeups.notify``. A stream makes its ``Listener`` before its first read,
``clear``s it before each read of the store and ``wait``s after, so news that
arrives while it reads is never slept through; the wait also ends after the poll
interval, which catches anything a lost message missed. When the server shuts down
(SIGTERM), sse-starlette sets each stream's ``shutdown`` event: the stream ends
with an SSE ``retry:`` hint, and its client reconnects — with ``Last-Event-ID`` —
to a replica still running."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence

import anyio

RETRY_MS = 1000  # the reconnection delay a draining server suggests to its SSE clients
DRAIN_GRACE_SECONDS = 5.0  # how long sse-starlette lets a stream say goodbye


class Listener:
    def __init__(self, document_id: str | None) -> None:
        self.document_id = document_id  # None: any document
        self._news = asyncio.Event()
        # set by sse-starlette when the server shuts down (``shutdown_event``)
        self.shutdown = anyio.Event()

    def wake(self) -> None:
        self._news.set()

    def clear(self) -> None:
        self._news.clear()

    async def wait(self, seconds: float) -> None:
        """Until news (since the last ``clear``), shutdown, or ``seconds`` have passed."""
        waits = [
            asyncio.ensure_future(self._news.wait()),
            asyncio.ensure_future(self.shutdown.wait()),
        ]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()


class Wakeups:
    def __init__(self) -> None:
        # weak: a listener lives as long as its stream
        self._listeners: weakref.WeakSet[Listener] = weakref.WeakSet()

    def listen(self, document_id: str | None = None) -> Listener:
        """A listener that hears news from now on (make it before the stream's first read);
        it goes when its stream is gone."""
        listener = Listener(document_id)
        self._listeners.add(listener)
        return listener

    def notify(self, document_ids: Sequence[str] | None) -> None:
        """News of these documents (None: of any); call in the streams' event loop."""
        wanted = None if document_ids is None else set(document_ids)
        for listener in list(self._listeners):
            if wanted is None or listener.document_id is None or listener.document_id in wanted:
                listener.wake()
