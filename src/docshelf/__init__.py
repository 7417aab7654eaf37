"""docshelf: index the documents you keep, search them hybrid, cite every hit.

The public API is pinned by ``__all__`` (and a test). Names are loaded lazily
so that ``import docshelf`` — and the CLI's ``--help`` — stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from docshelf.errors import Conflict, DocshelfError, InvalidInput, NotFound, Unavailable
    from docshelf.model import Chunk, Citation, Document, Hit, Source, SyncReport
    from docshelf.search.results import ContextResult, SearchResult
    from docshelf.shelf import Shelf
    from docshelf.store import SearchFilters

_EXPORTS = {
    "Shelf": "docshelf.shelf",
    "SearchResult": "docshelf.search.results",
    "ContextResult": "docshelf.search.results",
    "SearchFilters": "docshelf.store",
    "Chunk": "docshelf.model",
    "Citation": "docshelf.model",
    "Document": "docshelf.model",
    "Hit": "docshelf.model",
    "Source": "docshelf.model",
    "SyncReport": "docshelf.model",
    "DocshelfError": "docshelf.errors",
    "NotFound": "docshelf.errors",
    "Conflict": "docshelf.errors",
    "InvalidInput": "docshelf.errors",
    "Unavailable": "docshelf.errors",
}

__all__ = [
    "Chunk",
    "Citation",
    "Conflict",
    "ContextResult",
    "DocshelfError",
    "Document",
    "Hit",
    "InvalidInput",
    "NotFound",
    "SearchFilters",
    "SearchResult",
    "Shelf",
    "Source",
    "SyncReport",
    "Unavailable",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'docshelf' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
