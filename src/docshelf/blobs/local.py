"""Blobs in a local folder: ``<root>/<sha[:2]>/<sha[2:4]>/<sha>``.

A blob is written to a temporary file while its hash is computed, fsynced,
and renamed into place, so a blob either exists whole under its hash or not
at all; writing the same bytes twice is harmless.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from docshelf.blobs import blob_key
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
            self._dir.mkdir(parents=True, exist_ok=True)
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

    def commit(self) -> str:
        assert not self._closed, "writer already closed"
        self.sha256 = self._hash.hexdigest()
        if self.stored(self.sha256):
            # The same bytes are there, whole (placed only after their fsync): no file,
            # no fsync, no rename, no folder fsync for a duplicate upload.
            self.abort()
            return self.sha256
        try:
            if self._memory is not None:
                self._spill()
            assert self._file is not None and self._tmp is not None
            with _storage_errors("the uploaded file"):
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
            self._file = None
            self._closed = True
            with _storage_errors("the uploaded file"):
                self.place(self._tmp, self.sha256)
        except BaseException:
            self.abort()
            raise
        finally:
            if self._tmp is not None:
                self._tmp.unlink(missing_ok=True)
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
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)  # atomic; the same bytes may land twice, harmlessly
        dir_fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"

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
