"""The ``BlobStore`` port: uploaded bytes, content-addressed by SHA-256, and the
factory that picks an adapter from ``DOCSHELF_BLOB_URL``.

``file:///path`` or unset   a local folder (``$DOCSHELF_HOME/blobs`` by default)
``s3://bucket/prefix``       S3-compatible storage (AWS, MinIO, Garage, …), for
                             API and workers on different machines

Both use the same layout, ``<sha[:2]>/<sha[2:4]>/<sha>``, and the same
contract tests.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol
from urllib.parse import urlparse

from docshelf.errors import InvalidInput, NotFound


def blob_key(sha256: str) -> str:
    """The content-addressed location of a blob below the store's root."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise NotFound(f"No blob {sha256!r}")
    return f"{sha256[:2]}/{sha256[2:4]}/{sha256}"


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


def open_blob_store(url: str | None, home: Path) -> BlobStore:
    if not url:
        from docshelf.blobs.local import LocalBlobStore

        return LocalBlobStore(home / "blobs")
    parts = urlparse(url)
    if parts.scheme == "file":
        from docshelf.blobs.local import LocalBlobStore

        return LocalBlobStore(Path(parts.path))
    if parts.scheme == "s3":
        from docshelf.blobs.s3 import S3BlobStore

        return S3BlobStore(parts.netloc, parts.path.strip("/"), home / "blobs" / "tmp")
    raise InvalidInput(f"Unknown blob URL {url!r}; use file:///path or s3://bucket/prefix")


__all__ = ["BlobStore", "BlobWriter", "blob_key", "open_blob_store"]
