"""Failures a file decides, remembered so that ``sync`` passes over the file until it
changes (a truncated PDF is not read and parsed again at every sync). Which failures
those are is ``failures.decided_by``'s table: a failure of the file is *settled* with its
size and modification time as the walk saw them, its fingerprint when it was read and
the key of what it failed under (``Keys``); a failure of the moment (a time or memory
limit, a parser stopped, a permission) is not, and is tried again next time."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time

from docshelf.config import Settings
from docshelf.failures import Decided, decided_by
from docshelf.ingest.sources import FoundFile
from docshelf.model import Failure, Settled


@dataclasses.dataclass(frozen=True)
class Keys:
    """What decides a failure besides the file: docshelf's version and its chunker's
    (``CHUNKER_VERSION``) for every one, and the setting a kind of failure depends on —
    the PDF password (a digest of it) for an encrypted PDF, the size limit for a file too
    large. A failure remembered under another key is tried again: a new docshelf tries
    them all, a new password only the locked PDFs."""

    version: str
    password: str  # a digest of DOCSHELF_PDF_PASSWORD, "-" without one
    max_bytes: int
    ocr: str = "-"  # how OCR reads (``ocr_key``): "-" when it cannot

    @classmethod
    def of(cls, settings: Settings) -> Keys:
        from docshelf import __version__
        from docshelf.chunk.version import CHUNKER_VERSION

        password = settings.parse.pdf_password
        key = hashlib.sha256(b"docshelf pdf password\0" + password.encode()) if password else None
        digest = key.hexdigest()[:12] if key else "-"
        return cls(
            f"{__version__}/{CHUNKER_VERSION}",
            digest,
            settings.max_file_bytes,
            ocr_key(settings),
        )

    def __call__(self, reason: str) -> str | None:
        """The key a failure with ``reason`` is settled under; None when it is not (the
        moment's: tried again)."""
        decided = decided_by(reason)
        if decided is Decided.MOMENT:
            return None
        if decided is Decided.PASSWORD:
            return f"{self.version}/{self.password}"
        if decided is Decided.SIZE:
            return f"{self.version}/max {self.max_bytes}"
        if decided is Decided.OCR:
            return f"{self.version}/ocr {self.ocr}"
        return f"{self.version}/-"


def ocr_key(settings: Settings) -> str:
    """What a file without a text layer would be read with now: OCR's languages when it
    can run, else "-" (off, or tesseract missing): a scanned PDF that failed without OCR
    is read again once it can run."""
    from docshelf.parse.ocr import Ocr, unavailable

    ocr = Ocr.of(settings.parse)
    return "-" if ocr is None or unavailable(ocr) else ocr.languages


def unchanged(failed: Failure | None, found: FoundFile, keys: Keys) -> Failure | None:
    """``failed``, passed over (``skipped``), when the file is as it was when it failed
    (size and mtime) and it would fail under the same key; else None (read it again)."""
    if failed is None or failed.settled is None:
        return None
    was = failed.settled
    if (was.size, was.mtime_ns) != (found.stat.st_size, found.stat.st_mtime_ns):
        return None
    return dataclasses.replace(failed, skipped=True) if was.parser == keys(failed.reason) else None


def same_bytes(failed: Failure | None, fp: str, keys: Keys, st: os.stat_result) -> Failure | None:
    """``failed``, passed over with the file's new stat, when a touched file holds the
    very bytes that failed under the same key; else None."""
    was = failed.settled if failed is not None else None
    if failed is None or was is None or (was.sha256, was.parser) != (fp, keys(failed.reason)):
        return None
    now = dataclasses.replace(was, size=st.st_size, mtime_ns=st.st_mtime_ns)
    return dataclasses.replace(failed, settled=now, skipped=True)


def failure(path: str, reason: str, st: os.stat_result, fp: str | None, keys: Keys) -> Failure:
    """The failure of the file at ``path`` (``st``: its stat; ``fp``: its fingerprint,
    None when its bytes were not read), remembered with what would change it when the
    file decides it (``Keys``), plain when the moment does."""
    key = keys(reason)
    if key is None:
        return Failure(path, reason)
    return Failure(path, reason, Settled(st.st_size, st.st_mtime_ns, fp, key, time.time()))
