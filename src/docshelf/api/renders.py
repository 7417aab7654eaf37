"""How many PDF pages are rendered at once: each render is a process of the parser
sandbox (up to its memory limit), so without a bound 40 parallel page requests from one
user started 43 processes and ~2.2 GB.

The server renders at most ``total`` pages at once (one per core by default), one user
at most ``per_user`` of them (half, rounded up: another user always finds a slot). A
request over either waits up to ``wait_s`` for a slot, in a short line (``queue`` per
user: a waiting request holds one of the server's threads), then is answered
``503`` with ``Retry-After``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, Request

from docshelf.errors import Busy

__all__ = ["RenderGate", "RendersDep", "render_gate"]

RETRY_AFTER_S = 2


class RenderGate:
    def __init__(
        self,
        total: int | None = None,
        per_user: int | None = None,
        *,
        wait_s: float = 5.0,
        queue: int | None = None,
    ) -> None:
        self.total = max(1, total if total is not None else os.cpu_count() or 1)
        self.per_user = max(1, per_user if per_user is not None else math.ceil(self.total / 2))
        self.queue = self.per_user * 2 if queue is None else max(0, queue)
        self.wait_s = wait_s
        # notified whenever a slot is taken or freed or a request starts waiting
        self.changed = threading.Condition()
        self._running: Counter[str] = Counter()  # user id -> renders now
        self._waiting: Counter[str] = Counter()  # user id -> requests waiting

    def running(self, user_id: str | None = None) -> int:
        """Renders now (``user_id``'s, or all)."""
        with self.changed:
            return self._running[user_id] if user_id else sum(self._running.values())

    def waiting(self, user_id: str) -> int:
        with self.changed:
            return self._waiting[user_id]

    def _free(self, user_id: str) -> bool:
        return sum(self._running.values()) < self.total and self._running[user_id] < self.per_user

    @contextmanager
    def slot(self, user_id: str) -> Iterator[None]:
        """Hold one render slot for ``user_id`` while the block runs; ``Busy`` when none
        came free in time (or the user's line is full)."""
        with self.changed:
            if not self._free(user_id):
                if self._waiting[user_id] >= self.queue:
                    raise _busy()
                self._waiting[user_id] += 1
                self.changed.notify_all()
                try:
                    deadline = time.monotonic() + self.wait_s
                    while not self._free(user_id):
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise _busy()
                        self.changed.wait(left)
                finally:
                    self._waiting[user_id] -= 1
                    if not self._waiting[user_id]:
                        del self._waiting[user_id]
            self._running[user_id] += 1
            self.changed.notify_all()
        try:
            yield
        finally:
            with self.changed:
                self._running[user_id] -= 1
                if not self._running[user_id]:
                    del self._running[user_id]
                self.changed.notify_all()


def _busy() -> Busy:
    return Busy(
        "Too many pages are being rendered at once; try again in a moment",
        retry_after=RETRY_AFTER_S,
    )


async def render_gate(request: Request) -> RenderGate:
    # async: no I/O, so no hop to the threadpool (as get_shelf)
    gate: RenderGate = request.app.state.renders
    return gate


RendersDep = Annotated[RenderGate, Depends(render_gate)]
