"""What the processes of one library share besides the store: a ``Broadcast`` that
wakes every API replica's event streams when events commit, and a ``SharedCache``
for summaries and recent search results (``shared/caches.py``).

``DOCSHELF_REDIS_URL`` picks the backend:

- unset — ``LocalBroadcast``: commits of this process wake its own streams; no
  shared cache (summaries live in the store, searches in this process's memory);
- ``redis://host:6379/0`` (or ``rediss://``, ``unix://``) — Redis pub/sub and keys
  (``shared/redis.py``); ``?prefix=…`` names the keys and the channel (default
  ``docshelf:``; give each library on one Redis its own).

The store stays the truth: a broadcast carries document ids, never events (a
woken stream reads its events from the store, so a lost message delays, never
loses), and a cache entry is only ever a copy of something the store can recompute.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from docshelf.errors import InvalidInput, Unavailable

# Called in the listening event loop with the documents of one commit; None means
# "anything may have changed" (after a reconnect: messages may have been missed).
OnEvents = Callable[[Sequence[str] | None], None]

SCHEMES = ("redis://", "rediss://", "unix://")


class Broadcast(Protocol):
    def publish(self, document_ids: Sequence[str]) -> None:
        """Announce that events of these documents were committed (from any thread)."""
        ...

    def listening(self, on_events: OnEvents) -> AbstractAsyncContextManager[None]:
        """While the block runs, ``on_events`` hears every publish, in the running loop."""
        ...

    def close(self) -> None: ...


class SharedCache(Protocol):
    """Bytes under string keys, with a time to live. Never raises: a cache that cannot
    answer is a miss (``get`` gives None), a write that fails is dropped."""

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...
    def put(self, key: str, value: bytes, ttl_seconds: float) -> None: ...
    def incr(self, key: str) -> None:
        """Add one to the counter ``key`` (made at 1)."""
        ...

    def close(self) -> None: ...


def open_shared(url: str | None) -> tuple[Broadcast, SharedCache | None]:
    """The broadcast and the shared cache for ``DOCSHELF_REDIS_URL`` (None: in-process)."""
    if url is None:
        from docshelf.shared.local import LocalBroadcast

        return LocalBroadcast(), None
    if not url.startswith(SCHEMES):
        raise InvalidInput(
            f"DOCSHELF_REDIS_URL={url!r} is not a Redis URL; use redis://host:6379/0 "
            "(or rediss://, unix://), or unset it to keep everything in this process"
        )
    try:
        from docshelf.shared.redis import RedisBroadcast, RedisCache, parse_url
    except ImportError as exc:
        raise Unavailable(
            f"DOCSHELF_REDIS_URL needs the `redis` extra: pip install 'docshelf[redis]' ({exc})"
        ) from None
    target = parse_url(url)
    return RedisBroadcast(target), RedisCache(target)


__all__ = ["Broadcast", "OnEvents", "SharedCache", "open_shared"]
