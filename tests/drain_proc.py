"""A worker process for the shutdown test: `python -m tests.drain_proc HOME`.

Runs one worker against HOME the way `docshelf worker` does
(``shutdown.run_workers``: SIGTERM drains) with the slow embedder of
``tests.worker_proc``, so a job is still in flight when the signal arrives. The
lease is long: a job it hands back is free at once, not when a lease expires.
"""

from __future__ import annotations

import sys
from pathlib import Path

from docshelf.ingest.worker import Worker, WorkerSettings
from docshelf.shelf import Shelf
from docshelf.shutdown import run_workers
from tests.worker_proc import SlowEmbedder


def main() -> int:
    with Shelf(Path(sys.argv[1]), embedder=SlowEmbedder()) as shelf:
        worker = Worker(shelf, WorkerSettings(lease_seconds=60.0, embed_batch=4))
        return run_workers([worker], drain_seconds=15.0)


if __name__ == "__main__":
    sys.exit(main())
