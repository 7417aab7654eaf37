"""The exception tree every face maps to its own form.

    DocshelfError
    ├── NotFound          unknown id, path or source (another user's ids too)
    ├── Conflict          the request contradicts the store's state (e.g. model mismatch)
    ├── InvalidInput      bad arguments, unreadable or unsupported input
    │   ├── TooLarge          over a configured size limit
    │   ├── OverLimit         a parse the machine stopped (a time or memory limit), not its bytes
    │   └── UnsupportedType   no parser for this kind of file
    ├── Unauthorized      no credentials, or unknown or revoked ones
    └── Unavailable       a configured backend or optional extra is missing
        ├── StorageFull       no space left where docshelf writes (HTTP 507)
        ├── ReadOnlyStorage   docshelf's home or database is read-only (HTTP 503)
        └── Busy              at a concurrency limit: try again after ``retry_after`` s

Driver and library errors are translated to these at the adapter boundary.
``code`` is the stable machine-readable name used in the CLI JSON envelope.
"""

from __future__ import annotations

import errno


class DocshelfError(Exception):
    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(DocshelfError):
    code = "not_found"


class Conflict(DocshelfError):
    code = "conflict"


class InvalidInput(DocshelfError):
    code = "invalid_input"


class TooLarge(InvalidInput):
    code = "too_large"


class OverLimit(InvalidInput):
    """A parse the machine stopped (a time or memory limit, the parser process killed or
    stopped, or gone without an answer): the same bytes may be read another time, unlike
    a failure the bytes decide (``failures.decided_by``)."""


class UnsupportedType(InvalidInput):
    code = "unsupported_type"


class Unauthorized(DocshelfError):
    code = "unauthorized"


class Forbidden(DocshelfError):
    """Known caller, not allowed (an admin-only operation)."""

    code = "forbidden"


class Unavailable(DocshelfError):
    code = "unavailable"


class StorageFull(Unavailable):
    """A write failed for want of space; it works again once space is freed."""

    code = "storage_full"


class ReadOnlyStorage(Unavailable):
    """A write failed because the file system (or database) is read-only."""

    code = "read_only"


class Busy(Unavailable):
    """Refused at a concurrency limit (page renders): the same request works a moment
    later; ``retry_after`` says when to try (HTTP 503 with ``Retry-After``)."""

    code = "busy"

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def from_os_error(exc: OSError, what: str) -> DocshelfError | None:
    """A full or read-only file system as ours (``what`` says where docshelf was
    writing); None for other errors, which stay as they are."""
    if exc.errno in _NO_SPACE:
        return StorageFull(f"No space left for {what}: free some disk space and try again")
    if exc.errno == errno.EROFS:
        return ReadOnlyStorage(f"Cannot write {what}: the file system is read-only")
    return None


__all__ = [
    "Busy",
    "Conflict",
    "DocshelfError",
    "InvalidInput",
    "NotFound",
    "ReadOnlyStorage",
    "StorageFull",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "UnsupportedType",
    "from_os_error",
]
