"""The ``docshelf`` command: a thin face over ``Shelf``.

On a terminal it prints tables and progress bars; with ``--json``, or whenever
stdout is not a terminal, it prints one JSON envelope (SPEC §9):
``{ok, command, result, next_actions, error}``. What it prints for people
passes through ``terminal.printable`` (file names and document text may hold
terminal escapes) and is never read as rich markup. Exit status: 0 on success,
1 on a docshelf error (the envelope's ``error.code`` says which), 2 on a usage
error. Heavy modules (numpy, the store, the model) are imported inside the
commands so ``docshelf --help`` stays fast, and a JSON search skips typer itself
(``quick.py``).

Each group of commands has its module (``library``, ``search``, ``upkeep``,
``eval``, ``users``, ``serve``); every command runs through ``command.command``,
which writes the envelope, the errors and the next actions once.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from docshelf.cli.typer_app import app as app

__all__ = ["app", "main"]


def main() -> None:
    """``docshelf``: a search whose output is JSON is answered by ``cli/quick.py``
    without loading typer, rich or pydantic; everything else by the typer app."""
    if _command(sys.argv[1:]) in LONG_RUNNING:
        exit_on_early_sigterm()  # before any slow start-up: SIGTERM from now on exits 0
    from docshelf.cli import quick

    if quick.main(sys.argv[1:]):
        quick.exit_now()
        return
    from docshelf.cli.typer_app import app

    app()


LONG_RUNNING = ("serve", "worker")


def exit_on_early_sigterm() -> None:
    """From the first line of ``serve`` and ``worker`` until their own handlers are set
    (``shutdown.signals_set``) — and again after them — SIGTERM ends the process with
    status 0 (``SystemExit``, so ``finally`` blocks and ``with`` exits run) instead of
    killing it (status -15): during start-up there is nothing to drain. SIGINT keeps
    Python's KeyboardInterrupt."""
    signal.signal(signal.SIGTERM, _exit_cleanly)


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is no global option
    (``--home DIR``, ``--json``) or value of one."""
    words = iter(argv)
    for word in words:
        if word == "--home":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def __getattr__(name: str) -> Any:
    if name == "app":  # typer, rich and pydantic load here, not on `import docshelf.cli`
        from docshelf.cli.typer_app import app

        return app
    raise AttributeError(f"module 'docshelf.cli' has no attribute {name!r}")
