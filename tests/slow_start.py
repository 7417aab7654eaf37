"""``docshelf`` (``serve`` or ``worker``, the arguments as given) whose start-up stops where
the library opens — the slow part: the store, the model — after writing ``opening`` on
stdout, until a signal comes. ``python -m tests.slow_start serve``: SIGTERM during
start-up, for real and without a race (tests/test_shutdown.py)."""

from __future__ import annotations

import signal
import sys
from typing import Any

import docshelf.cli.serve as serve_command
from docshelf.cli import main


def opening(*args: Any) -> Any:
    print("opening", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    serve_command.open_shelf_or_exit = opening  # type: ignore[attr-defined,assignment]
    sys.argv = ["docshelf", *sys.argv[1:]]
    main()
