"""Redis behind ``Broadcast`` and ``SharedCache`` (redis-py; its asyncio API listens).

Every key and the channel start with the URL's ``?prefix=`` (default ``docshelf:``).
Redis is an accelerant, never a dependency of correctness: a failed call is
logged and then skipped for a few seconds (so a Redis that is down costs one
timeout, not one per search), a cache miss is the answer, and a stream that
hears nothing still polls the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
import redis.asyncio
from redis.exceptions import RedisError

from docshelf.errors import InvalidInput
from docshelf.shared import OnEvents

log = logging.getLogger("docshelf")

DEFAULT_PREFIX = "docshelf:"
TIMEOUT_SECONDS = 1.0  # one call; Redis answers in well under a millisecond
COOLDOWN_SECONDS = 5.0  # after a failure, Redis is left alone this long
RECONNECT_SECONDS = (0.2, 5.0)  # the listener's backoff: first delay, cap
T = TypeVar("T")


@dataclass(frozen=True)
class RedisTarget:
    url: str  # for redis-py: without our ``prefix`` parameter
    prefix: str

    @property
    def channel(self) -> str:
        return f"{self.prefix}events"

    @property
    def shown(self) -> str:
        """The URL without its password, fit for messages."""
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def parse_url(url: str) -> RedisTarget:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [v for k, v in query if k == "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
    if not prefix or any(c.isspace() for c in prefix) or len(prefix) > 100:
        raise InvalidInput(
            f"DOCSHELF_REDIS_URL: ?prefix={prefix!r} must be 1-100 characters without spaces"
        )
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return RedisTarget(urlunsplit(parts._replace(query=rest)), prefix)


class _Breaker:
    """Skip Redis for a while after it failed, so callers do not each wait a timeout."""

    def __init__(self, target: RedisTarget, what: str) -> None:
        self.target = target
        self.what = what
        self._open_until = 0.0
        self._lock = threading.Lock()

    def call(self, fn: Callable[[], T], fallback: T) -> T:
        if time.monotonic() < self._open_until:
            return fallback
        try:
            return fn()
        except (RedisError, OSError) as exc:
            with self._lock:
                was_closed = time.monotonic() >= self._open_until
                self._open_until = time.monotonic() + COOLDOWN_SECONDS
            if was_closed:
                log.warning(
                    "Redis at %s failed (%s: %s); %s skipped for %.0f s",
                    self.target.shown,
                    type(exc).__name__,
                    exc,
                    self.what,
                    COOLDOWN_SECONDS,
                )
            return fallback


def _client(target: RedisTarget) -> redis.Redis:
    return redis.Redis.from_url(
        target.url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS
    )


class RedisCache:
    def __init__(self, target: RedisTarget) -> None:
        self.target = target
        self._redis = _client(target)
        self._breaker = _Breaker(target, "the shared cache is")

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        missing: list[bytes | None] = [None] * len(keys)
        if not keys:
            return missing

        def mget() -> list[bytes | None]:
            values = self._redis.mget([self.target.prefix + k for k in keys])
            return [v if isinstance(v, bytes) else None for v in values]

        return self._breaker.call(mget, missing)

    def put(self, key: str, value: bytes, ttl_seconds: float) -> None:
        ttl_ms = max(1, int(ttl_seconds * 1000))
        self._breaker.call(
            lambda: self._redis.set(self.target.prefix + key, value, px=ttl_ms), None
        )

    def incr(self, key: str) -> None:
        self._breaker.call(lambda: self._redis.incr(self.target.prefix + key), None)

    def close(self) -> None:
        self._redis.close()


def decode_message(data: object) -> list[str] | None:
    """The document ids of a published message; None for anything else (ignored)."""
    try:
        ids = json.loads(data) if isinstance(data, bytes | str) else None
    except ValueError:
        return None
    if isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids):
        return ids
    return None


class RedisBroadcast:
    def __init__(self, target: RedisTarget) -> None:
        self.target = target
        self._redis = _client(target)
        self._breaker = _Breaker(target, "event fan-out is")

    def publish(self, document_ids: Sequence[str]) -> None:
        if document_ids:
            message = json.dumps(list(document_ids))
            self._breaker.call(lambda: self._redis.publish(self.target.channel, message), 0)

    @asynccontextmanager
    async def listening(self, on_events: OnEvents) -> AsyncIterator[None]:
        task = asyncio.create_task(self._listen(on_events), name="docshelf-redis-listener")
        try:
            yield
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def _listen(self, on_events: OnEvents) -> None:
        """Subscribe, hand each message on, and come back after any failure; after every
        (re)subscription, tell the streams to look at the store (messages may be lost)."""
        delay = RECONNECT_SECONDS[0]
        while True:
            client = redis.asyncio.Redis.from_url(
                self.target.url, socket_connect_timeout=TIMEOUT_SECONDS, health_check_interval=15
            )
            try:
                async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self.target.channel)
                    on_events(None)
                    delay = RECONNECT_SECONDS[0]
                    async for message in pubsub.listen():
                        ids = decode_message(message.get("data"))
                        if ids is not None:
                            on_events(ids)
            except (RedisError, OSError) as exc:
                log.warning(
                    "Redis listener at %s failed (%s); reconnecting in %.1f s",
                    self.target.shown,
                    exc,
                    delay,
                )
            finally:
                await client.aclose()
            await asyncio.sleep(delay)
            delay = min(RECONNECT_SECONDS[1], delay * 2)

    def close(self) -> None:
        self._redis.close()
