"""Small durable-file helpers shared by the sidecar indexes, library filing and the
store: fsync a file or folder, publish a JSON pointer atomically, a non-blocking
folder lock (POSIX: ``fcntl``), and folders and files created private to their
owner (the library's home, the database)."""

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


def private_dir(path: Path) -> None:
    """Make the folder ``path`` (and its missing parents) if missing; the folder itself
    is created readable by its owner only (0700), whatever the umask. An existing
    folder is left as it is."""
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return  # made meanwhile by another process: theirs to set
    os.chmod(path, 0o700)


def private_file(path: Path) -> None:
    """Create the empty file ``path``, readable and writable by its owner only (0600),
    unless it exists (then it is left as it is)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)
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
