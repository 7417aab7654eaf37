"""What decides a failure: the file (its bytes), or the moment. The one table of it, read
by ``sync``, which passes over a file its bytes failed until the file changes
(``ingest/settled.py``), and by every face that offers a retry (``views.retryable``).

A failure is known by its reason, the text a user reads and the store keeps, so that a
reason read back (a failed job's ``last_error``, a row of ``failures``) is judged as the
failure was when it happened.
"""

from __future__ import annotations

import enum
import re


class Decided(enum.Enum):
    """What decides a failure, and so whether the same file can pass another time."""

    MOMENT = "moment"  # the machine, the file system or a service: tried again next time
    BYTES = "bytes"  # the file: the same bytes (name, kind) fail the same way every time
    PASSWORD = "password"  # an encrypted PDF: its bytes and DOCSHELF_PDF_PASSWORD
    SIZE = "size"  # over the size limit: the file's size and DOCSHELF_MAX_FILE_MB
    # no text but what OCR might read (a scanned PDF, an image): its bytes and OCR (on or
    # off, tesseract installed or not, its languages)
    OCR = "ocr"


# Reasons, first match wins; any other reason is the bytes' (a parser's verdict on them:
# binary or invalid UTF-8 text, a truncated, malformed or unreadable PDF, no text, a zip
# bomb, a parser crashed on them by a signal of its own, …; docs/formats.md lists them).
_TABLE: tuple[tuple[re.Pattern[str], Decided], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), decided)
    for pattern, decided in (
        # reading the file (ingest/prepare.read_file, ingest/sources.walk): its
        # permissions, a file gone, replaced or growing: the next walk sees it anew
        (
            r"^permission denied|^file vanished|^changed while being read|^is a folder"
            r"|grew past the size limit while being read|^unreadable(?: folder)?:"
            r"|missing or unreadable",
            Decided.MOMENT,
        ),
        # the parser's child under its limits (parse/sandbox.py): a time or memory limit,
        # killed or stopped from outside, or gone without an answer — a busy machine's,
        # not the bytes' (a crash by a signal of the parser's own is the bytes')
        (
            r"time limit|memory limit|parser was (?:killed|stopped)"
            r"|parser exited without a result",
            Decided.MOMENT,
        ),
        # a scanned PDF (parse/pdf.py) or an image (parse/image.py) with no text read
        # (before the services' "unavailable": OCR's is a setting's, or a missing program's)
        (r"^no text layer on any|^no readable text on any|OCR unavailable", Decided.OCR),
        # the store or a service (the worker's own retries outlasted, a full disk)
        (
            r"\(after \d+ attempts\)|disk is full|no space left|read-only|unavailable"
            r"|database is locked",
            Decided.MOMENT,
        ),
        (r"^encrypted \((?:password required|\w+ does not open it)", Decided.PASSWORD),
        (r"^too large: ", Decided.SIZE),
    )
)


def decided_by(reason: str) -> Decided:
    """What decides the failure ``reason`` tells (``Decided``): ``MOMENT`` is tried
    again; the others are the file's, until it changes — or, for ``PASSWORD`` and
    ``SIZE``, until the setting named there does."""
    for pattern, decided in _TABLE:
        if pattern.search(reason) is not None:
            return decided
    return Decided.BYTES


__all__ = ["Decided", "decided_by"]
