"""The ``BlobStore`` port: uploaded bytes, content-addressed by SHA-256, and the
factory that picks an adapter from ``DOCSHELF_BLOB_URL``.

``file:///path`` or unset   a local folder (``$DOCSHELF_HOME/blobs`` by default)
``s3://bucket/prefix``       S3-compatible storage (AWS, MinIO, Garage, …), for
                             API and workers on different machines

Both use the same layout, ``<sha[:2]>/<sha[2:4]>/<sha>``, and the same
contract tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TypeVar
from urllib.parse import urlparse

from docshelf.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor


def blob_key(sha256: str) -> str:
    """The content-addressed location of a blob below the store's root."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise NotFound(f"No blob {sha256!r}")
    return f"{sha256[:2]}/{sha256[2:4]}/{sha256}"


class BlobWriter(Protocol):
    sha256: str
    size: int

    def write(self, data: bytes) -> None: ...
    def digest(self) -> str:
        """The SHA-256 of the bytes written so far (what ``commit`` will store them under)."""
        ...

    def in_memory(self, limit: int) -> bytes | None:
        """The bytes written, if still in memory and at most ``limit`` long."""
        ...

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
    def commit_many(self, writers: Sequence[Any]) -> list[str | BaseException]:
        """Commit several of this store's writers together (the uploads a server received
        at once): each outcome is the writer's hash, or the error it failed with."""
        ...

    def read(self, sha256: str) -> bytes: ...
    def open(self, sha256: str) -> BinaryIO: ...
    def exists(self, sha256: str) -> bool: ...
    def delete(self, sha256: str) -> None: ...


# Threads that make a batch of blobs durable at once (``commit_all``): a file system
# commits fsyncs that are waiting together in one journal commit, and S3 takes the
# uploads side by side.
_COMMITTERS = 8
_committers: ThreadPoolExecutor | None = None
_committers_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _committers
    with _committers_lock:
        if _committers is None:
            from concurrent.futures import ThreadPoolExecutor  # only a server needs it

            _committers = ThreadPoolExecutor(_COMMITTERS, thread_name_prefix="blob-commit")
        return _committers


T = TypeVar("T")


def side_by_side(calls: Sequence[Callable[[], T]]) -> list[T | BaseException]:
    """Run the calls on the committers' threads at once (one alone runs here); each
    outcome is the call's result, or the error it raised."""
    if len(calls) == 1:
        return [_attempt(calls[0])]
    return list(_pool().map(_attempt, calls)) if calls else []


def _attempt(call: Callable[[], T]) -> T | BaseException:
    try:
        return call()
    except Exception as exc:  # that call's own outcome (a writer has aborted itself)
        return exc


def commit_side_by_side(writers: Sequence[BlobWriter]) -> list[str | BaseException]:
    """Commit several writers at once: their fsyncs or uploads run side by side, and
    bytes that come twice are written once (the other copies find them stored and only
    drop their own). Each outcome is the writer's hash, or the error it failed with."""
    outcomes: list[str | BaseException | None] = [None] * len(writers)
    first: dict[str, int] = {}
    for i, writer in enumerate(writers):
        first.setdefault(writer.digest(), i)
    leaders = list(first.values())
    done = side_by_side([writers[i].commit for i in leaders])
    for i, outcome in zip(leaders, done, strict=True):
        outcomes[i] = outcome
    for i, writer in enumerate(writers):
        if outcomes[i] is None:  # a copy: stored by its leader by now (or its own try)
            outcomes[i] = _attempt(writer.commit)
    return [o if o is not None else RuntimeError("not committed") for o in outcomes]


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


__all__ = [
    "BlobStore",
    "BlobWriter",
    "blob_key",
    "commit_side_by_side",
    "open_blob_store",
    "side_by_side",
]
