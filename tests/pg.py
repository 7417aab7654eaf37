"""Where the tests find PostgreSQL (with pgvector), and a fresh schema for each test.

``DOCSHELF_TEST_POSTGRES_URL`` names the server. Without it the PostgreSQL tests
are skipped with a visible reason, except under ``CI=true``, where a missing URL
or an unreachable server fails them: CI always runs them (see docs/postgres.md).

The URL is read when this module is imported, at collection: the autouse
``isolated_home`` fixture removes every ``DOCSHELF_*`` variable before a test runs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from urllib.parse import quote

import pytest

URL_VARIABLE = "DOCSHELF_TEST_POSTGRES_URL"
POSTGRES_URL = os.environ.get(URL_VARIABLE, "")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str) -> None:
    """Skip, or fail under CI=true, with the reason and the fix."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true runs the PostgreSQL tests)", pytrace=False)
    pytest.skip(reason)


@cache
def _server_problem(url: str) -> str | None:
    """Why the server at ``url`` cannot run the tests, or None. Checked once per session."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed: pip install -e '.[postgres]'"
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SET client_min_messages = warning")
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
    except psycopg.Error as exc:
        return (
            f"PostgreSQL at {URL_VARIABLE} is not usable ({str(exc).strip().splitlines()[0]}); "
            "start it, or run scripts/setup-pgvector.sh for the vector extension"
        )
    return None


def require_postgres() -> str:
    """The test server's URL; skips (or fails under CI) when there is none."""
    if not POSTGRES_URL:
        _unavailable(f"{URL_VARIABLE} is not set: the PostgreSQL store tests need a server")
    problem = _server_problem(POSTGRES_URL)
    if problem:
        pytest.fail(problem, pytrace=False)  # a URL was given: an unusable server is an error
    return POSTGRES_URL


def schema_url(url: str, schema: str, *settings: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (then public, where pgvector lives)."""
    options = " ".join([f"-c search_path={schema},public", *(f"-c {s}" for s in settings)])
    return f"{url}{'&' if '?' in url else '?'}options={quote(options, safe='')}"


@contextmanager
def fresh_schema(*settings: str) -> Iterator[str]:
    """A URL for a new, empty schema of its own, dropped afterwards."""
    import psycopg

    url = require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema_url(url, schema, *settings)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
