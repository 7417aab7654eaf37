"""Recent search results, answered from memory for a short time.

An entry is good while three things hold: it is younger than the TTL, the
store's generation (bumped by every change to chunks or vectors, by any
process) is the one it was computed at, and this process has not changed
what search can see by other means (enrichment, access) — those writers call
``clear``. A metadata change made by another process (a worker's enrichment)
can therefore show up to one TTL late; chunk and vector changes never do.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from docshelf.telemetry import RETRIEVAL_CACHE

T = TypeVar("T")


class ResultCache(Protocol[T]):
    """What the retriever asks of a cache: this process's ``RetrievalCache`` or the
    shared one in Redis (``shared/caches.py``)."""

    hits: int
    misses: int

    def get_or_compute(
        self,
        key: Hashable,
        generation: int,
        compute: Callable[[], T],
        *,
        user_id: str | None = None,
    ) -> T: ...

    def clear(self) -> None: ...


class RetrievalCache(Generic[T]):
    def __init__(self, ttl_seconds: float, max_entries: int = 128) -> None:
        self.ttl = ttl_seconds
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[float, int, T]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(
        self,
        key: Hashable,
        generation: int,
        compute: Callable[[], T],
        *,
        user_id: str | None = None,  # part of ``key`` already (SharedRetrievalCache names it)
    ) -> T:
        if self.ttl <= 0:
            return compute()
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[1] == generation and now - entry[0] < self.ttl:
                self._entries.move_to_end(key)
                self.hits += 1
                RETRIEVAL_CACHE.labels(outcome="hit").inc()
                return entry[2]
        value = compute()
        with self._lock:
            self.misses += 1
            RETRIEVAL_CACHE.labels(outcome="miss").inc()
            self._entries[key] = (now, generation, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
