"""PostgreSQL's errors and URLs as docshelf shows them: a driver or pool error becomes
one of docshelf's (the fix named where there is one) at the store's boundary, and a URL
never shows its password."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import PoolTimeout

from docshelf.errors import (
    Conflict,
    DocshelfError,
    InvalidInput,
    ReadOnlyStorage,
    StorageFull,
    Unavailable,
)


def redact(url: str) -> str:
    """The URL (or ``key=value`` conninfo) without its password, fit for messages."""
    if "://" not in url:
        params = conninfo_to_dict(url)
        if "password" in params:
            params["password"] = "***"
        return make_conninfo("", **params)
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = "&".join(
        "password=***" if q.lower().startswith("password=") else q
        for q in parts.query.split("&")
        if q
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def translate(exc: Exception, url: str, password: str) -> DocshelfError:
    """A psycopg or pool error as one of docshelf's, for the store at ``url``
    (redacted), never showing ``password``."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if password:
        msg = msg.replace(password, "***")
    state = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, PoolTimeout):
        return Unavailable(
            f"No PostgreSQL connection could be had at {url} in time ({msg}); "
            "check that the server runs and accepts connections"
        )
    if isinstance(exc, pg_errors.IntegrityError):
        constraint = exc.diag.constraint_name or ""
        if constraint.startswith("vectors_dim_"):
            return Conflict(
                f"Vectors must be {constraint.removeprefix('vectors_dim_')}-dimensional, "
                "the library's embedding size; run `docshelf reindex` after changing models"
            )
        return Conflict(f"Store constraint violated: {msg}")
    if state.startswith("40") or state == "55P03":  # deadlock, serialization, lock timeout
        return Unavailable(f"The database {url} is busy ({msg}); try again")
    if state == "57014":  # statement_timeout
        return Unavailable(f"A query on {url} took too long ({msg}); try again")
    if (state in ("58P01", "0A000") and "vector" in msg) or 'type "vector"' in msg:
        return Unavailable(
            f"pgvector is not available in the database {url} ({msg}): install it "
            "(Debian: postgresql-<major>-pgvector, or scripts/setup-pgvector.sh) and run "
            "CREATE EXTENSION vector there as a superuser"
        )
    if state == "53100":  # disk_full
        return StorageFull(f"The database {url} is out of space ({msg})")
    if state == "25006":  # read_only_sql_transaction (a hot standby, or read-only mode)
        return ReadOnlyStorage(f"The database {url} is read-only ({msg})")
    if state == "42501":
        return Unavailable(f"Permission denied on {url}: {msg}")
    if state == "3D000":
        return Unavailable(
            f"The database named in {url} does not exist; create it or fix DOCSHELF_DATABASE_URL"
        )
    if state.startswith("28"):
        return Unavailable(f"PostgreSQL refused the credentials for {url}: {msg}")
    if isinstance(exc, pg_errors.DataError):
        return InvalidInput(f"Invalid value for the store: {msg}")
    if isinstance(exc, psycopg.OperationalError) and (not state or state.startswith(("08", "57P"))):
        return Unavailable(
            f"Cannot reach PostgreSQL at {url} ({msg}); check DOCSHELF_DATABASE_URL "
            "and that the server runs"
        )
    return Unavailable(f"PostgreSQL error on {url}: {msg}")
