"""The exception tree every face maps to its own form.

    DocshelfError
    ├── NotFound          unknown id, path or source (another user's ids too)
    ├── Conflict          the request contradicts the store's state (e.g. model mismatch)
    ├── InvalidInput      bad arguments, unreadable or unsupported input
    │   ├── TooLarge          over a configured size limit
    │   └── UnsupportedType   no parser for this kind of file
    ├── Unauthorized      no credentials, or unknown or revoked ones
    └── Unavailable       a configured backend or optional extra is missing

Driver and library errors are translated to these at the adapter boundary.
``code`` is the stable machine-readable name used in the CLI JSON envelope.
"""

from __future__ import annotations


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


class UnsupportedType(InvalidInput):
    code = "unsupported_type"


class Unauthorized(DocshelfError):
    code = "unauthorized"


class Forbidden(DocshelfError):
    """Known caller, not allowed (an admin-only operation)."""

    code = "forbidden"


class Unavailable(DocshelfError):
    code = "unavailable"


__all__ = [
    "Conflict",
    "DocshelfError",
    "InvalidInput",
    "NotFound",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "UnsupportedType",
]
