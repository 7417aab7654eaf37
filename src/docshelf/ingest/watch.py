"""Following registered sources live (``docshelf watch``, ``serve --watch``).

A sync on start catches what changed while nothing was watching; after that,
file-system events (watchfiles: inotify/FSEvents/…) are debounced into
batches, and each batch triggers one stat-check sync of the sources it
touched. A burst of a thousand changes is one batch and one sync, not a
thousand; the sync itself only reads files whose size or mtime moved, and
recognises renames (same bytes, new path) without re-embedding.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from docshelf.errors import DocshelfError
from docshelf.model import Source, SyncReport


class Library(Protocol):
    """What watching asks of the library (a ``Shelf``): its sources, and a sync."""

    def sources(self) -> list[Source]: ...

    def sync(self, source_id: str | None = None) -> SyncReport: ...


DEBOUNCE_MS = 800
log = logging.getLogger("docshelf.watch")


def _visible(path: str) -> bool:
    """Changes inside hidden folders (.git, .obsidian, …) do not wake a sync."""
    return not any(part.startswith(".") and part != ".docshelfignore" for part in Path(path).parts)


def sources_touched(shelf: Library, paths: Iterable[str]) -> list[str]:
    """The ids of the sources that contain any of ``paths``."""
    roots = [(Path(s.path), s.id) for s in shelf.sources()]
    touched: dict[str, None] = {}
    for p in map(Path, paths):
        for root, source_id in roots:
            if p == root or p.is_relative_to(root):
                touched.setdefault(source_id, None)
    return list(touched)


def watch(
    shelf: Library,
    on_sync: Callable[[SyncReport], None],
    stop: threading.Event | None = None,
    *,
    debounce_ms: int = DEBOUNCE_MS,
) -> None:
    """Sync now, then after every debounced batch of changes, until ``stop`` is set.

    Follows the sources registered when it starts.
    """
    import watchfiles

    on_sync(shelf.sync())
    roots = [s.path for s in shelf.sources()]
    if not roots:
        return

    def sync(source_id: str) -> None:
        try:
            on_sync(shelf.sync(source_id))
        except DocshelfError as exc:  # e.g. a source folder vanished: keep watching the rest
            log.warning("sync of %s failed: %s", source_id, exc.message)

    for changes in watchfiles.watch(
        *roots,
        debounce=debounce_ms,
        step=50,
        stop_event=stop,
        watch_filter=lambda _change, path: _visible(path),
        raise_interrupt=False,
        yield_on_timeout=False,
    ):
        for source_id in sources_touched(shelf, (path for _, path in changes)):
            sync(source_id)


def watch_in_background(
    shelf: Library, on_sync: Callable[[SyncReport], None]
) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(
        target=watch, args=(shelf, on_sync, stop), name="docshelf-watch", daemon=True
    )
    thread.start()
    return thread, stop
