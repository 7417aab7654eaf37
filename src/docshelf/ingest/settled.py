"""Failures a file's bytes decide, remembered so that ``sync`` passes over the file until it
changes (a truncated PDF is not parsed again at every sync). A failure is *settled* with
the file's size and modification time, its fingerprint and the parser key it failed
under; a failure of the machine (a time or memory limit, a killed parser) is not, and
is tried again next time."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time

from docshelf.config import Settings
from docshelf.ingest.sources import FoundFile
from docshelf.model import Failure, Settled


def parser_key(settings: Settings) -> str:
    """What decides a file's parse besides its bytes: docshelf's version, its parsers' and
    chunker's (``CHUNKER_VERSION``) and the PDF password (a digest of it). A failure
    remembered under another key is tried again."""
    from docshelf import __version__
    from docshelf.chunk.version import CHUNKER_VERSION

    password = settings.parse.pdf_password
    key = hashlib.sha256(b"docshelf pdf password\0" + password.encode()) if password else None
    return f"{__version__}/{CHUNKER_VERSION}/{key.hexdigest()[:12] if key else '-'}"


def unchanged(failed: Failure | None, found: FoundFile, parser: str) -> Failure | None:
    """``failed``, passed over (``skipped``), when the file is as it was when it failed
    (size and mtime) and the same parsers would read it; else None (read it again)."""
    if failed is None or failed.settled is None:
        return None
    was = failed.settled
    if (was.size, was.mtime_ns) != (found.stat.st_size, found.stat.st_mtime_ns):
        return None
    return dataclasses.replace(failed, skipped=True) if was.parser == parser else None


def same_bytes(failed: Failure | None, fp: str, parser: str, st: os.stat_result) -> Failure | None:
    """``failed``, passed over with the file's new stat, when a touched file holds the
    very bytes that failed under the same parsers; else None."""
    was = failed.settled if failed is not None else None
    if failed is None or was is None or (was.sha256, was.parser) != (fp, parser):
        return None
    now = dataclasses.replace(was, size=st.st_size, mtime_ns=st.st_mtime_ns)
    return dataclasses.replace(failed, settled=now, skipped=True)


def settle(path: str, message: str, st: os.stat_result, fp: str, parser: str) -> Failure:
    """The failure of a file its bytes decided, remembered with what would change it."""
    return Failure(path, message, Settled(st.st_size, st.st_mtime_ns, fp, parser, time.time()))
