"""The ``BlobStore`` port: uploaded bytes, content-addressed by SHA-256.

``LocalBlobStore`` keeps them under ``<root>/<sha[:2]>/<sha[2:4]>/<sha>``. A blob
is written to a temporary file while its hash is computed, fsynced, and
renamed into place, so a blob either exists whole under its hash or not at
all; writing the same bytes twice is harmless.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol

from docshelf.errors import NotFound, TooLarge


class BlobWriter(Protocol):
    sha256: str
    size: int

    def write(self, data: bytes) -> None: ...
    def commit(self) -> str:
        """Make the blob durable under its hash; returns the hash."""
        ...

    def abort(self) -> None: ...
    def __enter__(self) -> BlobWriter: ...
    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class BlobStore(Protocol):
    def writer(self, max_bytes: int) -> BlobWriter: ...
    def read(self, sha256: str) -> bytes: ...
    def open(self, sha256: str) -> BinaryIO: ...
    def exists(self, sha256: str) -> bool: ...
    def delete(self, sha256: str) -> None: ...


class _LocalWriter:
    def __init__(self, store: LocalBlobStore, max_bytes: int) -> None:
        self._store = store
        self._max = max_bytes
        self._hash = hashlib.sha256()
        store.tmp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=store.tmp, prefix="upload-")
        self._file: BinaryIO | None = os.fdopen(fd, "wb")
        self._tmp = Path(name)
        self.size = 0
        self.sha256 = ""

    def write(self, data: bytes) -> None:
        assert self._file is not None, "writer already closed"
        self.size += len(data)
        if self.size > self._max:
            self.abort()
            raise TooLarge(f"file is over the {self._max / 2**20:.0f} MB upload limit")
        self._hash.update(data)
        self._file.write(data)

    def commit(self) -> str:
        assert self._file is not None, "writer already closed"
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        self.sha256 = self._hash.hexdigest()
        final = self._store.path(self.sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self._tmp, final)  # atomic; the same bytes may land twice, harmlessly
        dir_fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return self.sha256

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> _LocalWriter:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._file is not None:
            self.abort()


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"

    def path(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise NotFound(f"No blob {sha256!r}")
        return self.root / sha256[:2] / sha256[2:4] / sha256

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

