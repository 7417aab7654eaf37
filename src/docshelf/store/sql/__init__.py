"""The one SQL layer: the store's methods written once over a ``Dialect``.

``SQLStore`` holds every method whose SQL both engines share; ``SQLiteStore`` and
``PostgresStore`` (store/sqlite.py, store/postgres.py) add only what truly
differs: connections, transactions and locking, migrations, full-text search
(FTS5 or tsvector), vectors (BLOBs or pgvector) and the claims of leased work.

``SQLStore`` is made of the library itself (``catalogue.py``), documents with their
chunks (``documents.py``), what search engines read (``reads.py``) and what else is
kept about documents (``records.py``), and when a lease is over (``leases.py``); the
tables both schemas share are in ``schema.py``.
"""

from __future__ import annotations

from docshelf.store.sql.catalogue import CatalogueSQL
from docshelf.store.sql.conversations import ConversationsSQL
from docshelf.store.sql.core import Query, Rows, SQLBase
from docshelf.store.sql.dialect import POSTGRES, SQLITE, Dialect, PostgresDialect
from docshelf.store.sql.documents import DocumentsSQL
from docshelf.store.sql.leases import LeasesSQL
from docshelf.store.sql.notebooks import NotebooksSQL
from docshelf.store.sql.reads import SearchReadsSQL
from docshelf.store.sql.records import RecordsSQL


class SQLStore(
    CatalogueSQL,
    DocumentsSQL,
    SearchReadsSQL,
    RecordsSQL,
    LeasesSQL,
    NotebooksSQL,
    ConversationsSQL,
):
    """``Store`` over a dialect, less what each engine provides (see ``SQLBase``)."""


__all__ = [
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "PostgresDialect",
    "Query",
    "Rows",
    "SQLBase",
    "SQLStore",
]
