"""Graceful shutdown of ``docshelf worker`` and ``docshelf serve`` (SIGTERM or Ctrl-C).

On the signal a process stops taking jobs; a worker's job in flight is handed
back (``Worker._release``) at the next point where its work so far is
committed — between two stages, or between two batches of the embedding stage
— so another worker (or this one after a restart) resumes it there, with
nothing lost and nothing written twice. ``serve`` first stops accepting
connections, ends its SSE streams with a ``retry:`` hint (``api/events.py``),
then drains its worker pool. All of it within ``DOCSHELF_DRAIN_SECONDS``.

Exit status: 0 when everything drained in time. A worker still busy at the
deadline (a parse that takes longer) is left behind with exit status 1; another
worker resumes its job once the process has gone (one on this host sees its lease
over at once, ``owners``) or the lease has expired. SIGTERM during
start-up (imports, opening the store, loading the model: before these handlers are
set) ends the process at once with status 0 too (``cli.exit_on_early_sigterm``): there
is nothing to drain yet.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docshelf.ingest.worker import Worker

log = logging.getLogger("docshelf")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def signals_set(stop: threading.Event, also: Callable[[], None] | None = None) -> Iterator[None]:
    """While the block runs, SIGTERM and SIGINT set ``stop`` (and call ``also``; main
    thread only)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if also is not None:
            also()

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def drain(threads: Sequence[threading.Thread], seconds: float) -> bool:
    """Wait up to ``seconds`` in all for ``threads`` to end; True when they all did."""
    deadline = time.monotonic() + seconds
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        log.warning(
            "still busy after %.0f s: %s; their jobs are resumed once this process has gone",
            seconds,
            ", ".join(stuck),
        )
    return not stuck


def run_workers(
    workers: Sequence[Worker],
    drain_seconds: float,
    started: Callable[[], None] | None = None,
    prepare: Callable[[Sequence[threading.Thread]], None] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run ``workers`` in threads until SIGTERM or SIGINT, then drain them: the exit status.
    ``prepare`` sees the threads before they start (a health probe watches them; it may
    raise to stop before any work); ``started`` is called once the signals are ours (a
    "ready" message). ``stop`` may also be set by the caller (``serve``'s lifeline)."""
    stop = stop or threading.Event()
    threads = [
        threading.Thread(target=w.run, args=(stop,), name=w.name, daemon=True) for w in workers
    ]
    if prepare is not None:
        prepare(threads)
    with signals_set(stop):
        for t in threads:
            t.start()
        if started is not None:
            started()
        while not stop.wait(0.5):
            if not any(t.is_alive() for t in threads):
                return 1  # every worker died (each logged why)
    return 0 if drain(threads, drain_seconds) else 1


def serve(app: Any, host: str, port: int, drain_seconds: float) -> int:
    """uvicorn until SIGTERM or SIGINT, then its graceful shutdown (connections, then the
    app's lifespan: SSE streams end with a retry hint, the worker pool drains)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=max(1, round(drain_seconds)),
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal it stopped for once it is done, which ends the process
    # as killed (143) after a clean drain; with these handlers installed first, that
    # re-raised signal lands here instead, and the process exits 0. A signal before
    # uvicorn has set its own handlers tells the server to stop as soon as it starts.
    with signals_set(threading.Event(), also=lambda: setattr(server, "should_exit", True)):
        server.run()
    return 0
