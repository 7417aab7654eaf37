"""Small durable-file helpers shared by the sidecar indexes and library filing:
fsync a file or folder, publish a JSON pointer atomically, and a non-blocking
folder lock. (POSIX: ``fcntl``.)"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

POINTER = "current.json"


def fsync(path: Path) -> None:
    """Flush a file's (or a folder's entries') data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_pointer(directory: Path, data: dict[str, Any]) -> None:
    """Write ``directory/current.json`` so a reader sees the old one or the new one whole."""
    tmp = directory / f"{POINTER}.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    fsync(tmp)
    os.replace(tmp, directory / POINTER)
    fsync(directory)


def read_pointer(directory: Path) -> dict[str, Any] | None:
    """``directory/current.json``, or None when it is missing or unreadable."""
    try:
        data = json.loads((directory / POINTER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def folder_lock(directory: Path) -> Iterator[bool]:
    """An exclusive, non-blocking lock on ``directory/lock`` (True when held)."""
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
