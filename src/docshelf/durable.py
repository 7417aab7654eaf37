"""Small durable-file helpers shared by the sidecar indexes, library filing and the
store: fsync a file or folder, publish a JSON pointer atomically, a non-blocking
folder lock (POSIX: ``fcntl``), and folders and files private to their owner.

Everything docshelf makes in its home or beside the database holds the library's text
(or its token hashes, or a model export), so it is its owner's alone whatever the umask:
folders 0700, files 0600 — created so (``private_dir``, ``create_private``), made so
when another library wrote them (``make_private``: tantivy, usearch, ONNX), and
tightened when an older version left them open (``tighten``)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

POINTER = "current.json"


def fsync(path: Path) -> None:
    """Flush a file's (or a folder's entries') data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def private_dir(path: Path) -> None:
    """Make the folder ``path`` if missing, and its missing parents: each folder made
    here is readable by its owner only (0700), whatever the umask. An existing folder
    is left as it is (``tighten`` tightens one)."""
    if path.is_dir():
        return
    private_dir(path.parent)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return  # made meanwhile by another process: theirs to set
    os.chmod(path, 0o700)


def create_private(path: Path) -> BinaryIO:
    """Create the new file ``path`` open for writing, readable and writable by its owner
    only (0600) from its first byte, whatever the umask. Never an existing file, nor
    one a symlink leads to (``FileExistsError``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)  # (a umask may take the owner's bits too)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def private_file(path: Path) -> None:
    """Create the empty file ``path``, readable and writable by its owner only (0600),
    unless it exists (then it is left as it is)."""
    try:
        create_private(path).close()
    except FileExistsError:
        return


def make_private(path: Path) -> None:
    """Give a file docshelf had another library write (tantivy, usearch, an ONNX export:
    they follow the umask) its owner's mode: 0600 (0700 for a folder). Do it before the
    file is published, in a private folder, so no one else could ever have opened it.
    A symlink is left alone (``chmod`` would change its target), and so is a file gone
    meanwhile (the writer's own, removed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISLNK(st.st_mode):
        _own(path, st)


def tighten(path: Path, *, walk: bool = True) -> None:
    """Make ``path`` owner-only if an older version (or a hand) left it open to others:
    a file 0600; a folder 0700 with everything in it tightened first (so an interrupted
    run is done again, the folder still open, by the next), unless not to ``walk`` it (a
    home, which may hold what is not docshelf's). A private folder is taken to hold
    private files (docshelf makes them so), and is not walked. Only what this user
    owns is changed, and no symlink is followed. Missing: nothing to do; what cannot be
    changed (a read-only disk) is left as it is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid() or not st.st_mode & 0o077:
        return
    if walk and stat.S_ISDIR(st.st_mode):
        for top, folders, files in os.walk(path):
            for name in [*folders, *files]:
                inner = Path(top, name)
                with suppress(OSError):  # gone meanwhile, or a read-only disk
                    held = os.lstat(inner)
                    if not stat.S_ISLNK(held.st_mode) and held.st_uid == os.geteuid():
                        _own(inner, held)
    with suppress(OSError):
        _own(path, st)


def _own(path: Path, st: os.stat_result) -> None:
    """``path`` (lstat ``st``) 0700 if a folder, else 0600, unless it is so already."""
    mode = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


def publish_pointer(directory: Path, data: dict[str, Any], name: str = POINTER) -> None:
    """Write ``directory/current.json`` (or ``name``) so a reader sees the old one or the
    new one whole."""
    tmp = directory / f"{name}.tmp"
    tmp.unlink(missing_ok=True)  # (a crashed writer's; writers hold the folder's lock)
    with create_private(tmp) as fh:
        fh.write(json.dumps(data, indent=1).encode())
    fsync(tmp)
    os.replace(tmp, directory / name)
    fsync(directory)


def read_pointer(directory: Path, name: str = POINTER) -> dict[str, Any] | None:
    """``directory/current.json`` (or ``name``), or None when it is missing or unreadable."""
    try:
        data = json.loads((directory / name).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def folder_lock(directory: Path) -> Iterator[bool]:
    """An exclusive, non-blocking lock on ``directory/lock`` (True when held)."""
    import fcntl

    private_dir(directory)
    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
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
