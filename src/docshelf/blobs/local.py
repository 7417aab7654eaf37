"""Blobs in a local folder: ``<root>/<sha[:2]>/<sha[2:4]>/<sha>``.

A blob is written to a temporary file while its hash is computed, fsynced,
and renamed into place (then its folder fsynced), so a blob either exists whole
under its hash or not at all; writing the same bytes twice is harmless. Several
blobs committed together (``commit_many``: the uploads a server received at once)
are committed side by side on a few threads, so the file system takes their
waiting fsyncs in a few journal commits.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from docshelf.blobs import blob_key, commit_side_by_side, side_by_side
from docshelf.durable import private_dir
from docshelf.errors import NotFound, TooLarge, from_os_error


@contextlib.contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """A full or read-only disk as StorageFull / ReadOnlyStorage; other OSErrors as is."""
    try:
        yield
    except OSError as exc:
        ours = from_os_error(exc, what)
        if ours is None:
            raise
        raise ours from exc


# An upload up to this size stays in memory until ``commit``, which then writes it to its
# temporary file, fsyncs and places it in one go — on the threadpool, where the API calls
# it — so the event loop makes no file system call for it (under a busy disk a mkstemp
# or a write can take milliseconds, and every request waits behind the loop).
SPOOL_BYTES = 1 << 20


class TempWriter:
    """Streams bytes to a temporary file (after the first ``SPOOL_BYTES`` held in memory),
    hashing them and enforcing a size limit.

    ``commit`` fsyncs the file and hands it to ``place(tmp_path, sha256)``, which
    moves it where it belongs (subclasses: a rename, an upload)."""

    def __init__(self, tmp_dir: Path, max_bytes: int) -> None:
        self._max = max_bytes
        self._hash = hashlib.sha256()
        self._dir = tmp_dir
        self._memory: bytearray | None = bytearray()  # until spilled to the file
        self._file: BinaryIO | None = None
        self._tmp: Path | None = None
        self._closed = False
        self.size = 0
        self.sha256 = ""

    def _spill(self) -> None:
        """Open the temporary file and move what is held in memory to it."""
        with _storage_errors("the uploaded file"):
            private_dir(self._dir)  # (mkstemp's files are 0600)
            fd, name = tempfile.mkstemp(dir=self._dir, prefix="upload-")
            self._file = os.fdopen(fd, "wb")
            self._tmp = Path(name)
            if self._memory:
                self._file.write(self._memory)
        self._memory = None

    def write(self, data: bytes) -> None:
        assert not self._closed, "writer already closed"
        self.size += len(data)
        if self.size > self._max:
            self.abort()
            raise TooLarge(f"file is over the {self._max / 2**20:.0f} MB upload limit")
        self._hash.update(data)
        if self._memory is not None:
            self._memory += data
            if len(self._memory) > SPOOL_BYTES:
                self._spill()
            return
        assert self._file is not None
        with _storage_errors("the uploaded file"):
            self._file.write(data)

    def digest(self) -> str:
        return self._hash.hexdigest()

    def in_memory(self, limit: int) -> bytes | None:
        """The bytes written, if they are still held in memory and at most ``limit``
        (the caller may then keep them elsewhere and ``abort`` this writer)."""
        if self._memory is None or self._closed or self.size > limit:
            return None
        return bytes(self._memory)

    def commit(self) -> str:
        assert not self._closed, "writer already closed"
        self.sha256 = self._hash.hexdigest()
        if self.stored(self.sha256):
            # The same bytes are there, whole (placed only after their fsync): no file,
            # no fsync, no rename, no folder fsync for a duplicate upload.
            self.abort()
            return self.sha256
        try:
            tmp = self.sync()
            with _storage_errors("the uploaded file"):
                self.place(tmp, self.sha256)
        except BaseException:
            self.abort()
            raise
        finally:
            if self._tmp is not None:
                self._tmp.unlink(missing_ok=True)
        return self.sha256

    def sync(self) -> Path:
        """The first half of ``commit``: the bytes written to their temporary file and
        fsynced; returns that file, which the caller places (then ``placed``) or drops
        (``abort``)."""
        assert not self._closed, "writer already closed"
        self.sha256 = self._hash.hexdigest()
        if self._memory is not None:
            self._spill()
        assert self._file is not None and self._tmp is not None
        with _storage_errors("the uploaded file"):
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
        self._file = None
        self._closed = True
        return self._tmp

    def placed(self) -> str:
        """The temporary file from ``sync`` is in its place now: nothing is left to drop."""
        self._tmp = None
        return self.sha256

    def place(self, tmp: Path, sha256: str) -> None:
        raise NotImplementedError

    def stored(self, sha256: str) -> bool:
        """Whether these bytes are stored already (then ``commit`` only drops its copy)."""
        return False

    def abort(self) -> None:
        self._closed = True
        self._memory = None
        if self._file is not None:
            with contextlib.suppress(OSError):  # flushing what is dropped anyway: a full disk
                self._file.close()
            self._file = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):  # a read-only disk keeps it; nothing refers to it
                self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> TempWriter:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._closed:
            self.abort()


class _LocalWriter(TempWriter):
    def __init__(self, store: LocalBlobStore, max_bytes: int) -> None:
        super().__init__(store.tmp, max_bytes)
        self._store = store

    def stored(self, sha256: str) -> bool:
        return self._store.exists(sha256)

    def place(self, tmp: Path, sha256: str) -> None:
        final = self._store.path(sha256)
        new = _make_folders(final.parent)
        os.replace(tmp, final)  # atomic; the same bytes may land twice, harmlessly
        for folder in _to_sync([final], new):
            _fsync_path(folder)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_folders(folder: Path) -> list[Path]:
    """``folder`` and its missing parents, private (0700); returns the ones made here,
    whose names their parents must fsync (so a blob placed in one survives a power cut
    with it)."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    if missing:
        private_dir(missing[0])  # (with its missing parents)
    return missing


def _to_sync(placed: Sequence[Path], made: Sequence[Path]) -> list[Path]:
    """The folders to fsync once blobs are placed: each one's own, and the parent of
    each folder made for them."""
    return list(dict.fromkeys([p.parent for p in placed] + [m.parent for m in made]))


def _syncer(folder: Path) -> Callable[[], None]:
    def sync() -> None:
        with _storage_errors("the uploaded files"):
            _fsync_path(folder)

    return sync


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"

    def commit_many(self, writers: Sequence[_LocalWriter]) -> list[str | BaseException]:
        """Commit several writers in phases, each waiting on the disk once for all of
        them (a file system takes fsyncs that wait together in one journal commit)
        instead of once per blob: the new blobs' temporary files written and fsynced
        side by side, each renamed into place, then every folder that names one fsynced
        side by side. Bytes already stored, and second copies, write nothing. Each
        outcome is the writer's hash, or the error it failed with."""
        leaders: dict[str, int] = {}
        for i, writer in enumerate(writers):
            sha = writer.digest()
            if sha not in leaders and not self.exists(sha):
                leaders[sha] = i
        if len(leaders) < 2:
            return commit_side_by_side(writers)
        outcomes: dict[int, str | BaseException] = {}
        synced = side_by_side([writers[i].sync for i in leaders.values()])
        placing: dict[Path, list[int]] = {}
        for (sha, i), tmp in zip(leaders.items(), synced, strict=True):
            if isinstance(tmp, BaseException):
                writers[i].abort()
                outcomes[i] = tmp
                continue
            final = self.path(sha)
            try:
                with _storage_errors("the uploaded file"):
                    made = _make_folders(final.parent)
                    os.replace(tmp, final)
            except Exception as exc:
                writers[i].abort()
                outcomes[i] = exc
                continue
            for folder in _to_sync([final], made):
                placing.setdefault(folder, []).append(i)
        folders = list(placing)
        for folder, done in zip(folders, side_by_side([_syncer(f) for f in folders]), strict=True):
            if isinstance(done, BaseException):  # placed, but not known to be durable
                for i in placing[folder]:
                    outcomes.setdefault(i, done)
        for i in leaders.values():
            if i not in outcomes:
                outcomes[i] = writers[i].placed()
        rest = [i for i in range(len(writers)) if i not in outcomes]
        for i, outcome in zip(rest, commit_side_by_side([writers[i] for i in rest]), strict=True):
            outcomes[i] = outcome  # copies find their bytes stored; the others, their own try
        return [outcomes[i] for i in range(len(writers))]

    def path(self, sha256: str) -> Path:
        return self.root / blob_key(sha256)

    def writer(self, max_bytes: int) -> _LocalWriter:
        return _LocalWriter(self, max_bytes)

    def read(self, sha256: str) -> bytes:
        with self.open(sha256) as fh:
            return fh.read()

    def open(self, sha256: str) -> BinaryIO:
        try:
            return self.path(sha256).open("rb")
        except FileNotFoundError:
            raise NotFound(f"No blob {sha256}") from None

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def delete(self, sha256: str) -> None:
        self.path(sha256).unlink(missing_ok=True)
