"""The caches every process of a library shares through a ``SharedCache`` (Redis).

- **Summaries** (``SummaryCache``): an enrichment by (fingerprint, locale), under
  ``sum:v1:<fingerprint>:<locale>`` for 24 hours, in front of the store's own
  enrichment cache (the durable one). The entry names the producer that made it,
  so a library that switched to an LLM does not get offline summaries back.
- **First-turn search results** (``SharedRetrievalCache``): under
  ``ret:v1:<generation>:<user>:<digest of the arguments>`` for
  ``DOCSHELF_REDIS_RETRIEVAL_SECONDS``. The store's generation in the key means a
  reindex, an ingest or a removal is never answered from before it; the user in
  the key means one user's results are never another's. What changes results
  without changing chunks (enrichment, access) ``clear``s: one shared counter,
  ``ret:v1:epoch``, read with the entry in one round trip and stored in it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from docshelf.shared import SharedCache
from docshelf.telemetry import lazy_metric

if TYPE_CHECKING:
    from prometheus_client import Counter
    from pydantic import TypeAdapter

    from docshelf.store import Store

T = TypeVar("T")

SUMMARY_TTL_SECONDS = 24 * 3600
SHARED_CACHE: Counter = lazy_metric(
    "Counter",
    "shared_cache_requests_total",
    "Lookups in the cache shared through Redis, by cache and outcome",
    ["cache", "result"],
)


def _part(value: object) -> str:
    """A stable text for one part of a search key, the same in every process."""
    if value is None or isinstance(value, str | int | float | bool | tuple):
        return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return repr(value)
    # a reranker (or another service object): what it is, not where it lives
    return f"{type(value).__qualname__}:{getattr(value, 'name', '')}"


class SharedRetrievalCache(Generic[T]):
    """``RetrievalCache``'s interface over a shared cache; values go as JSON."""

    EPOCH = "ret:v1:epoch"

    def __init__(self, cache: SharedCache, ttl_seconds: float, kind: type[T]) -> None:
        self.cache = cache
        self.ttl = ttl_seconds
        self.kind = kind
        self._adapter: TypeAdapter[T] | None = None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def adapter(self) -> TypeAdapter[T]:
        if self._adapter is None:
            from pydantic import TypeAdapter

            self._adapter = TypeAdapter(self.kind)
        return self._adapter

    @staticmethod
    def key(args: Hashable, generation: int, user_id: str | None) -> str:
        parts = args if isinstance(args, tuple) else (args,)
        digest = hashlib.sha256("\x1f".join(_part(p) for p in parts).encode()).hexdigest()
        user = hashlib.sha256((user_id or "").encode()).hexdigest()[:16] if user_id else "-"
        return f"ret:v1:{generation}:{user}:{digest[:32]}"

    def get_or_compute(
        self,
        key: Hashable,
        generation: int,
        compute: Callable[[], T],
        *,
        user_id: str | None = None,
    ) -> T:
        if self.ttl <= 0:
            return compute()
        name = self.key(key, generation, user_id)
        epoch_raw, entry_raw = self.cache.get_many([self.EPOCH, name])
        epoch = int(epoch_raw) if epoch_raw and epoch_raw.isdigit() else 0
        value = self._decode(entry_raw, epoch)
        if value is not None:
            self._count("hit")
            return value
        value = compute()
        self._count("miss")
        body = {"epoch": epoch, "value": self.adapter.dump_python(value, mode="json")}
        self.cache.put(name, json.dumps(body).encode(), self.ttl)
        return value

    def _decode(self, raw: bytes | None, epoch: int) -> T | None:
        if raw is None:
            return None
        try:
            body = json.loads(raw)
            if not isinstance(body, dict) or body.get("epoch") != epoch:
                return None  # cleared since, or not ours
            return self.adapter.validate_python(body["value"])
        except (ValueError, KeyError):  # pydantic's ValidationError is a ValueError
            return None  # unreadable (another version wrote it): recompute

    def _count(self, result: str) -> None:
        with self._lock:
            if result == "hit":
                self.hits += 1
            else:
                self.misses += 1
        SHARED_CACHE.labels(cache="retrieval", result=result).inc()

    def clear(self) -> None:
        """Every process's entries stop counting (a new epoch)."""
        self.cache.incr(self.EPOCH)


class SummaryCache:
    """Enrichments by (fingerprint, locale, producer): the shared cache first, then the
    store; whatever the store knows is copied to the shared cache for the next asker."""

    def __init__(self, store: Store, cache: SharedCache | None) -> None:
        self.store = store
        self.cache = cache

    @staticmethod
    def key(fingerprint: str, locale: str) -> str:
        return f"sum:v1:{fingerprint}:{locale}"

    def get(self, fingerprint: str, locale: str, producer: str) -> str | None:
        if self.cache is None:
            return self.store.cached_enrichment(fingerprint, locale, producer)
        [raw] = self.cache.get_many([self.key(fingerprint, locale)])
        found = _entry(raw, producer)
        if found is not None:
            SHARED_CACHE.labels(cache="summary", result="hit").inc()
            return found
        SHARED_CACHE.labels(cache="summary", result="miss").inc()
        stored = self.store.cached_enrichment(fingerprint, locale, producer)
        if stored is not None:
            self._share(fingerprint, locale, producer, stored)
        return stored

    def put(self, fingerprint: str, locale: str, producer: str, enrichment: str) -> None:
        self.store.cache_enrichment(fingerprint, locale, producer, enrichment)
        if self.cache is not None:
            self._share(fingerprint, locale, producer, enrichment)

    def _share(self, fingerprint: str, locale: str, producer: str, enrichment: str) -> None:
        assert self.cache is not None
        body = json.dumps({"producer": producer, "enrichment": enrichment}).encode()
        self.cache.put(self.key(fingerprint, locale), body, SUMMARY_TTL_SECONDS)


def _entry(raw: bytes | None, producer: str) -> str | None:
    """The enrichment JSON in a shared entry, when it is well formed and ``producer``'s."""
    if raw is None:
        return None
    try:
        body: Any = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("producer") != producer:
        return None
    value = body.get("enrichment")
    return value if isinstance(value, str) else None
