"""Whether PostgreSQL takes connections, as the pool's own attempts find: requests fail
at once while it refuses them, and the log says so once per interval.

Before, with the server refusing connections, every request waited the pool's 30 s for
a connection before its 503, and the pool logged a line per connection attempt (56 to 87
lines per 30 s). Now each attempt the pool makes is watched (``watched``): the first
refusal marks the server down, and while it is down a request waits for a connection
only briefly (``DOWN_WAIT_S``: long enough to take one the pool has just made, and to
let the pool try again once it has given up) before it is answered ``Unavailable``
("the store is unavailable", the cause named). The first successful connection marks it
up. The pool's per-attempt warnings are left out of the log (``filter``); this says
instead that the server refuses connections, that it still does (at most once per
``interval``, with the number of attempts) and that it is back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.rows import TupleRow

log = logging.getLogger("docshelf.store")

POOL_LOGGER = "psycopg.pool"
DOWN_WAIT_S = 0.2  # a request's wait for a connection while the server refuses them
RECONNECT_S = 30.0  # the pool tries again with backoff this long, then anew at a request
# the pool's lines per connection attempt (a record's ``msg``, its first argument the pool)
_ATTEMPT_LINES = frozenset(
    {"error connecting in %r: %s", "reconnection attempt in pool %r failed after %s sec"}
)


class Reachability(logging.Filter):
    """The server's state as connection attempts find it, and the log of its changes."""

    def __init__(
        self,
        url: str,
        pool_name: str,
        scrub: Callable[[str], str],
        *,
        interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.url = url
        self.pool_name = pool_name
        self.scrub = scrub  # a message without the password
        self.interval = interval
        self.clock = clock
        self.cause = ""
        self.attempts = 0  # failed since the server went down
        self._down_since: float | None = None
        self._said_at = 0.0
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, exc: BaseException) -> None:
        text = str(exc).strip()
        cause = self.scrub(text.splitlines()[0] if text else type(exc).__name__)
        with self._lock:
            now = self.clock()
            self.cause = cause
            self.attempts += 1
            if self._down_since is None:
                self._down_since = self._said_at = now
                log.warning(
                    "PostgreSQL at %s refuses connections (%s): requests are answered "
                    "'store unavailable' until it takes them again",
                    self.url,
                    cause,
                )
            elif now - self._said_at >= self.interval:
                self._said_at = now
                log.warning(
                    "PostgreSQL at %s still refuses connections after %.0f s, %d attempts (%s)",
                    self.url,
                    now - self._down_since,
                    self.attempts,
                    cause,
                )

    def succeeded(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            log.warning(
                "PostgreSQL at %s takes connections again, after %.0f s",
                self.url,
                self.clock() - self._down_since,
            )
            self._down_since = None
            self.attempts = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """On the pool's logger: its line per connection attempt is left out (this
        object says it once per interval)."""
        args = record.args if isinstance(record.args, tuple) else ()
        return not (record.msg in _ATTEMPT_LINES and args and args[0] == self.pool_name)


def watched(reach: Reachability) -> type[psycopg.Connection[TupleRow]]:
    """A connection class whose every ``connect`` tells ``reach`` how it went (the pool
    makes its connections with it)."""

    class Watched(psycopg.Connection[TupleRow]):
        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
            try:
                conn = super().connect(conninfo, **kwargs)
            except psycopg.OperationalError as exc:
                reach.failed(exc)
                raise
            reach.succeeded()
            return conn

    return Watched
