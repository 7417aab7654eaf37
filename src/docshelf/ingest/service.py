"""What a process serving a library runs beside it (``Shelf.service``): ingest workers in a
child process and that child's lifeline to its server; an upload's intake as it streams
in (its name checked, this process's workers letting it pass); workers' wake-ups; news
of commits from every process; a library-wide reindex in the background; the gauges a
metrics scrape reads; and a searching process's query model warmed.

``docshelf serve`` (``api/``), ``docshelf worker`` and the resident search helper call
these through the ``Shelf``, so no face reaches into the runtime for them.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, AbstractContextManager
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import threading

    from docshelf.ingest.reindex import ReindexRunner
    from docshelf.ingest.worker_process import WorkerProcess
    from docshelf.runtime import Runtime
    from docshelf.shared import OnEvents


class Service:
    """The serving side of one open library (its ``Runtime``)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    # -- ingest workers ------------------------------------------------------------------
    def worker_process(self, count: int, *, nice: int) -> WorkerProcess:
        """``count`` ingest workers in a child process (``docshelf worker --lifeline``),
        woken by this process's jobs and uploads; its commits are published here."""
        from docshelf.ingest.uploads import intake_of
        from docshelf.ingest.worker_process import WorkerProcess

        rt = self.rt
        return WorkerProcess(
            rt.settings.home,
            count,
            transport=rt.transport,
            publish=rt.broadcast.publish,
            intake=intake_of(rt),
            nice=nice,
        )

    def follow_lifeline(self, stop: threading.Event) -> None:
        """In the child of ``worker_process``: its server's wake-ups and uploads reach this
        process's workers, and its commits the server; ``stop`` is set when the server
        goes (``ingest/worker_process.py``)."""
        from docshelf.ingest.uploads import intake_of
        from docshelf.ingest.worker_process import lifeline

        rt = self.rt
        lifeline(stop, rt.transport, rt.store.notices, intake_of(rt))

    def wake_workers(self, document_id: str) -> None:
        """Tell workers a job is due (``Runtime.wake_workers``)."""
        self.rt.wake_workers(document_id)

    def receiving(self) -> AbstractContextManager[None]:
        """Around receiving an upload: this process's ingest workers let it pass first
        (``ingest/uploads.py``, ``Intake``)."""
        from docshelf.ingest.uploads import intake_of

        return intake_of(self.rt).receiving()

    def upload_name(self, name: str) -> str:
        """The name an upload is kept under, or UnsupportedType: checked when its part's
        headers end, before any of its bytes is written (``uploads.upload_name``)."""
        from docshelf.ingest.uploads import upload_name

        return upload_name(name)

    def listening(self, on_events: OnEvents) -> AbstractAsyncContextManager[None]:
        """While the block runs, ``on_events`` hears of every commit of events, from any
        process of this library (``shared.Broadcast``)."""
        return self.rt.broadcast.listening(on_events)

    def warm(self) -> None:
        """Load what the first search would, for a process that answers many (the
        resident search helper): the query model in its form for many queries
        (embed/lean.py: 30 ms more to load, off any search's path, and ~5 ms a query
        instead of ~14, for ~40 MB more), then the sidecar indexes."""
        from docshelf.embed.lean import LeanEmbedder

        rt = self.rt
        embedder = rt.embedder
        if isinstance(embedder, LeanEmbedder):
            rt.embedder = embedder = embedder.for_many_queries()
        if embedder is not None:
            embedder.embed(["warm up"])
        rt.retriever.search("warm up", limit=1)

    # -- a library-wide reindex in the background ----------------------------------------
    @cached_property
    def _reindexing(self) -> ReindexRunner:
        from docshelf.ingest.reindex import ReindexRunner

        return ReindexRunner()

    def start_reindex(self) -> dict[str, Any] | None:
        """Start reindexing the library in a thread of this process: the state it starts
        in, or None while one runs."""
        return self._reindexing.start(self.rt)

    def reindex_state(self) -> dict[str, Any]:
        """The background reindex's state and progress (idle, running, done or failed)."""
        return dict(self._reindexing.state)

    def reindex_due(self) -> str | None:
        """Why the library's chunks want a reindex (an older chunker made them), or None."""
        from docshelf import catalogue

        return catalogue.reindex_due(self.rt.store)

    # -- metrics -------------------------------------------------------------------------
    def measure(self) -> None:
        """Set the library's gauges (queue, vector coverage, oldest unfinished jobs) from
        the store, for a metrics scrape."""
        import time

        from docshelf.model import Stage

        store, metrics = self.rt.store, self.rt.metrics
        metrics.queue(store.job_counts())
        stats = store.stats()
        coverage = stats.snippets_with_vectors / stats.snippets if stats.snippets else 1.0
        unfinished = [s.value for s in Stage if not s.terminal]
        metrics.library(store.oldest_unfinished_jobs(), coverage, unfinished, time.time())
