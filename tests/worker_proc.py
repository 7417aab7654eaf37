"""A worker process for the crash test: `python -m tests.worker_proc HOME`.

Runs one docshelf worker against HOME with a slow deterministic embedder, so
the test can kill it (SIGKILL) in the middle of the embedding stage.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from docshelf.ingest.worker import Worker, WorkerSettings
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder


class SlowEmbedder(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        time.sleep(0.4)
        return super().embed(texts)


def main() -> None:
    home = Path(sys.argv[1])
    with Shelf(home, embedder=SlowEmbedder()) as shelf:
        # named by default (its process's token first) and leased for long: a worker on
        # this host takes its job once it is killed, not when the lease runs out
        worker = Worker(shelf, WorkerSettings(lease_seconds=600.0, embed_batch=4))
        worker.run(threading.Event())


if __name__ == "__main__":
    main()
