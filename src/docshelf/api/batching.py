"""Group calls: the requests that need the same slow, serial work at the same time
share one call of it on the threadpool.

    commits = Batched(lambda items: [work(i) for i in items])
    outcome = await commits(item)   # in a request; raises that item's error

While one call runs, the items that arrive wait and go in the next call together, so
a lone request waits for nothing more than its own call (and a turn of the event
loop), and a burst of requests costs a few thread hops and a few commits instead of
one of each per request. Each
caller gets its result after the call that carried its item has returned: for the
upload commit, after the shared fsyncs and the shared transaction (a 202 is durable).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from starlette.concurrency import run_in_threadpool

# At most this many turns of the event loop before a call, while items keep arriving.
LINGER_TURNS = 8

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Queue(Generic[T, R]):
    """One event loop's items waiting for the next call, and whether a call runs."""

    waiting: list[tuple[T, asyncio.Future[R]]] = field(default_factory=list)
    running: asyncio.Task[None] | None = None


class Batched(Generic[T, R]):
    """``await batched(item)``: ``run`` called on the threadpool with every item that
    is waiting, one call at a time; ``run`` returns one outcome per item, in order: its
    result, or the exception that item raises. An exception from ``run`` itself is every
    item's. At most ``limit`` items go in one call."""

    def __init__(
        self, run: Callable[[Sequence[T]], Sequence[R | BaseException]], limit: int = 256
    ) -> None:
        self._run = run
        self._limit = limit
        # per event loop (a test client runs its own), so futures stay on their loop
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue[T, R]] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, item: T) -> R:
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        future: asyncio.Future[R] = loop.create_future()
        future.add_done_callback(_retrieved)
        queue.waiting.append((item, future))
        if queue.running is None:
            queue.running = loop.create_task(self._drain(queue))
        # A caller that goes away (a cancelled request) leaves its item in the call: it
        # is committed all the same, as a request whose answer was lost.
        return await asyncio.shield(future)

    async def _drain(self, queue: _Queue[T, R]) -> None:
        try:
            # Requests that are ready now (a burst, its bodies read) join the first call:
            # turns of the event loop while the queue still grows, a few at most.
            for _ in range(LINGER_TURNS):
                waiting = len(queue.waiting)
                await asyncio.sleep(0)
                if len(queue.waiting) == waiting:
                    break
            while queue.waiting:
                batch = queue.waiting[: self._limit]
                del queue.waiting[: self._limit]
                try:
                    outcomes = await run_in_threadpool(self._run, [item for item, _ in batch])
                    if len(outcomes) != len(batch):
                        raise RuntimeError(f"{len(outcomes)} outcomes for {len(batch)} items")
                except Exception as exc:  # every item's; the next batch still runs
                    outcomes = [exc] * len(batch)
                except BaseException as exc:  # cancelled (shutdown): no call follows
                    for _, future in batch + queue.waiting:
                        _settle(future, exc)
                    queue.waiting.clear()
                    raise
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    _settle(future, outcome)
        finally:
            queue.running = None


def _retrieved(future: asyncio.Future[R]) -> None:
    """Mark an outcome seen, so that one whose caller went away is not logged as lost."""
    if not future.cancelled():
        future.exception()


def _settle(future: asyncio.Future[R], outcome: R | BaseException) -> None:
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
