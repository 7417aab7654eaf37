"""Small uploads ride in the store until their job is parsed: the blob store as the rest
of docshelf sees it.

A burst of uploads used to wait on the disk three times per new file before its 202 (the
file's fsync, its rename, its folders' fsyncs: ~20 ms of fsyncs for 35 notes on this
machine's disk, and as much of the kernel's CPU). An upload of at most ``HOLD_BYTES``
now goes into the store with its record instead: its bytes are its queued job's payload,
written in the same durable transaction as the document, the job and the grant, so one
commit (one fsync of SQLite's WAL) makes a whole batch of answered uploads safe. The
parse stage moves them into the blob store (``settle``) before it reads them; until
then every read here finds them in the store. Larger uploads are written to the blob
store first, as before (docs/benchmarks/uploads.md, "Uploads: small files held in the
store").
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from docshelf.blobs import BlobStore, BlobWriter
from docshelf.errors import NotFound
from docshelf.model import Stage, document_id
from docshelf.store import Store

# An upload up to this size is held in the store until parsed (its bytes are in memory
# anyway: blobs.local.SPOOL_BYTES); a larger one is written to the blob store at once.
HOLD_BYTES = 256 * 1024

# The payload stage of a queued job whose payload is its upload's bytes.
HELD = Stage.QUEUED.value


class HeldBlobs:
    """A ``BlobStore`` over the real one and the store's held uploads."""

    def __init__(self, blobs: BlobStore, store: Store) -> None:
        self.blobs = blobs
        self.store = store

    # -- as the blob store -------------------------------------------------------------
    def writer(self, max_bytes: int) -> BlobWriter:
        return self.blobs.writer(max_bytes)

    def commit_many(self, writers: Sequence[BlobWriter]) -> list[str | BaseException]:
        return self.blobs.commit_many(writers)

    def read(self, sha256: str) -> bytes:
        try:
            return self.blobs.read(sha256)
        except NotFound:
            return self._held_or_not_found(sha256)

    def open(self, sha256: str) -> BinaryIO:
        try:
            return self.blobs.open(sha256)
        except NotFound:
            return io.BytesIO(self._held_or_not_found(sha256))

    def exists(self, sha256: str) -> bool:
        return self.blobs.exists(sha256) or self.held(sha256) is not None

    def delete(self, sha256: str) -> None:
        self.blobs.delete(sha256)
        self.store.delete_payload(document_id(sha256), HELD)

    def local_path(self, sha256: str) -> Path | None:
        """Where the blob's file is when the blob store is a local folder (it may not be
        there yet: a held upload), else None."""
        path = getattr(self.blobs, "path", None)
        return None if path is None else Path(path(sha256))

    # -- held uploads ------------------------------------------------------------------
    def held(self, sha256: str) -> bytes | None:
        """The bytes held for ``sha256``, if its job still holds them."""
        data = self.store.get_payload(document_id(sha256), HELD)
        if data is None or hashlib.sha256(data).hexdigest() != sha256:
            return None  # none, or another document's (ids are a prefix of the hash)
        return data

    def _held_or_not_found(self, sha256: str) -> bytes:
        held = self.held(sha256)
        if held is None:
            raise NotFound(f"No blob {sha256}")
        return held

    def settle(self, sha256: str) -> None:
        """Move a job's held bytes into the blob store (durably), then drop them from the
        store. Idempotent: a crash between the two leaves the bytes in both, and the next
        try only drops the held copy."""
        data = self.held(sha256)
        if data is None:
            return
        self.keep(data)
        self.store.delete_payload(document_id(sha256), HELD)

    def keep(self, data: bytes) -> None:
        """Write ``data`` to the blob store (durably), unless it holds them already."""
        with self.blobs.writer(len(data)) as writer:
            writer.write(data)
            if not self.blobs.exists(writer.digest()):
                writer.commit()
