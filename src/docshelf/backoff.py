"""Retrying a failing resource without spinning or flooding the log.

    backoff = Backoff(base=0.5, cap=30.0)
    if backoff.due():                  # time to try again?
        try:
            connect()
        except OSError as exc:
            backoff.failed(str(exc))    # logs once when the state changes, then waits longer
        else:
            backoff.succeeded()         # logs once that it recovered

A :class:`Backoff` is the state of one resource (a broker connection, the disk
a worker writes to): the delay before the next try doubles after each failure
up to ``cap``, with full jitter in [0.5, 1.5) of it so a fleet of workers does
not retry in step, and one log line is written per change of state (failing,
recovered), never one per try. The clock is injectable for tests.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

__all__ = ["Backoff"]


class Backoff:
    def __init__(
        self,
        *,
        base: float,
        cap: float,
        logger: logging.Logger,
        what: str,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.base = base
        self.cap = cap
        self.log = logger
        self.what = what  # "RabbitMQ at amqp://…", "the store"
        self.clock = clock
        self.jitter = jitter
        self.failures = 0  # consecutive failures; 0 when healthy
        self.attempts = 0  # tries made while failing (for tests and metrics)
        self.next_try = 0.0

    @property
    def failing(self) -> bool:
        return self.failures > 0

    def due(self) -> bool:
        """Whether a try is due now (always, while healthy)."""
        return self.clock() >= self.next_try

    def remaining(self) -> float:
        """Seconds until the next try is due (0 when it is)."""
        return max(0.0, self.next_try - self.clock())

    def delay(self) -> float:
        """The delay after the current number of failures, jittered."""
        nominal = min(self.cap, self.base * 2.0 ** max(0, self.failures - 1))
        return nominal * (0.5 + self.jitter())

    def failed(
        self, reason: str, fallback: str = "", exc_info: BaseException | None = None
    ) -> float:
        """Record a failed try; returns the delay before the next one. The first failure
        is logged (with ``exc_info``'s traceback, when given); the tries after it are not."""
        if self.failures == 0:
            suffix = f"; {fallback}" if fallback else ""
            self.log.warning(
                "%s: %s%s; retrying with backoff", self.what, reason, suffix, exc_info=exc_info
            )
        self.failures += 1
        self.attempts += 1
        wait = self.delay()
        self.next_try = self.clock() + wait
        return wait

    def succeeded(self) -> None:
        """Record a successful try; logs the recovery once."""
        if self.failures:
            self.log.warning("%s: available again after %d failed tries", self.what, self.failures)
        self.failures = 0
        self.next_try = 0.0
