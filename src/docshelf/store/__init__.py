"""The store port and the factory that picks an adapter from a URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from docshelf.errors import InvalidInput, Unavailable
from docshelf.store.base import (
    FACETS,
    LIST_ORDERS,
    AccessLink,
    FileRecord,
    Listing,
    NewEvent,
    NewUpload,
    SearchFilters,
    SearchReads,
    SearchStore,
    Store,
    StoreStats,
    VectorSnapshot,
)


def open_store(url: str) -> SearchStore:
    """``sqlite:///relative.db`` or ``sqlite:////absolute/path.db`` (embedded), or
    ``postgresql://user@host:5432/db`` (``postgres://`` too; the ``postgres`` extra)."""
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        from docshelf.store.sqlite import SQLiteStore

        path = url.removeprefix("sqlite:///")
        if not path or path == url:
            raise InvalidInput(f"{url!r} names no database file; use sqlite:///path/to/db")
        return SQLiteStore(Path(path))
    if scheme in ("postgres", "postgresql"):
        try:
            from docshelf.store.postgres import PostgresStore
        except ImportError as exc:
            if exc.name and not exc.name.startswith("psycopg"):
                raise
            raise Unavailable(
                f"The PostgreSQL store needs the `postgres` extra ({exc}): "
                "pip install 'docshelf[postgres]', or unset DOCSHELF_DATABASE_URL to use "
                "the embedded SQLite store"
            ) from exc
        return PostgresStore(url)
    raise InvalidInput(f"Unknown database URL {url!r}; expected sqlite:///… or postgresql://…")


__all__ = [
    "FACETS",
    "LIST_ORDERS",
    "AccessLink",
    "FileRecord",
    "Listing",
    "NewEvent",
    "NewUpload",
    "SearchFilters",
    "SearchReads",
    "SearchStore",
    "Store",
    "StoreStats",
    "VectorSnapshot",
    "open_store",
]
