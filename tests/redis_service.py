"""Where the tests find Redis, and a key prefix of their own for each test.

``DOCSHELF_TEST_REDIS_URL`` names the server (the Makefile sets it under
``CI=true``). Without it the Redis tests are skipped with the reason, except under
``CI=true``, where they fail. The server is shared: a test touches only the keys
and the channel under its own random prefix, and deletes its keys afterwards
(never FLUSHDB or FLUSHALL).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from tests.services import service_url


def with_prefix(url: str, prefix: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


@contextmanager
def fresh_prefix(url: str | None = None) -> Iterator[tuple[str, str]]:
    """(a DOCSHELF_REDIS_URL with a prefix of its own, that prefix); its keys are deleted
    afterwards. ``url``: the server (default: the test's, from the environment)."""
    import redis

    url = url or service_url("DOCSHELF_TEST_REDIS_URL", "Redis")
    prefix = f"docshelf-test:{uuid.uuid4().hex[:12]}:"
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.RedisError as exc:  # a URL was given: an unusable server is an error
        client.close()
        raise AssertionError(f"Redis at DOCSHELF_TEST_REDIS_URL is not usable: {exc}") from exc
    try:
        yield with_prefix(url, prefix), prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()
