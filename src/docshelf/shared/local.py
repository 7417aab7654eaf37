"""The in-process ``Broadcast``: a commit in any thread of this process wakes the
event streams of this process (other processes' commits reach them by polling)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING

from docshelf.shared import OnEvents

if TYPE_CHECKING:
    import asyncio


class LocalBroadcast:
    def __init__(self) -> None:
        self._listeners: list[tuple[asyncio.AbstractEventLoop, OnEvents]] = []
        self._lock = threading.Lock()

    def publish(self, document_ids: Sequence[str]) -> None:
        ids = list(document_ids)
        with self._lock:
            listeners = list(self._listeners)
        for loop, on_events in listeners:
            with suppress(RuntimeError):  # that loop has closed: it listens no more
                loop.call_soon_threadsafe(on_events, ids)

    @asynccontextmanager
    async def listening(self, on_events: OnEvents) -> AsyncIterator[None]:
        import asyncio  # only a server listens; a CLI command never does

        entry = (asyncio.get_running_loop(), on_events)
        with self._lock:
            self._listeners.append(entry)
        try:
            yield
        finally:
            with self._lock:
                self._listeners.remove(entry)

    def close(self) -> None:
        with self._lock:
            self._listeners.clear()
