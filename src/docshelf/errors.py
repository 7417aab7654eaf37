"""The exception tree every face maps to its own form.

    DocshelfError
    ├── NotFound        unknown id, path or source (another user's ids too)
    ├── Conflict        the request contradicts the store's state (e.g. model mismatch)
    ├── InvalidInput    bad arguments, unreadable or unsupported input
    └── Unavailable     a configured backend or optional extra is missing

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


class Unavailable(DocshelfError):
    code = "unavailable"


__all__ = ["Conflict", "DocshelfError", "InvalidInput", "NotFound", "Unavailable"]
