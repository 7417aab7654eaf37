"""How each SQL engine spells what the shared SQL needs (no driver is imported here,
so the export snapshot can use it too).

The shared SQL is written once, in SQLite's spelling: ``?`` marks, and ``/*C*/``
after an expression that must compare in byte order (a comment to SQLite, whose
order that is; ``COLLATE "C"`` in PostgreSQL). What cannot be spelled alike —
lists (JSON text in SQLite, ``text[]`` in PostgreSQL), long ``IN`` lists, the
case-insensitive ``LIKE``, inserts that ignore a duplicate, how a vector reads as
bytes, the column types of the shared tables — is asked of the dialect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from docshelf.store.sql.schema import spelled

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Dialect:
    """SQLite's spelling; ``PostgresDialect`` overrides what differs."""

    name = "sqlite"
    no_limit: int | None = -1  # the LIMIT that means none
    like = "LIKE"  # case-insensitive for ASCII, as in SQLite
    # SQL giving a vector's float4s as bytes, and their byte order
    vector_bytes = "v.embedding"
    vector_dtype = "<f4"
    _max_marks = 500  # stay well below SQLite's bound-parameter limit
    # the column types of the shared tables (sql/schema.py)
    column_types: ClassVar[Mapping[str, str]] = {
        "text": "TEXT",
        "real": "REAL",
        "int": "INTEGER",
        "bigint": "INTEGER",
        "bool": "INTEGER",
        "false": "0",
        "blob": "BLOB",
        "list": "TEXT",  # JSON text
        "no_items": "'[]'",
    }

    def sql(self, text: str) -> str:
        """The shared SQL as this engine runs it."""
        return text

    def ddl(self, script: str) -> str:
        """A migration's script with the shared tables it names put in, in this engine's
        column types (sql/schema.py)."""
        return spelled(script, self.column_types)

    # -- lists ----------------------------------------------------------------------
    def encode_list(self, values: Sequence[str]) -> Any:
        return json.dumps(list(values))

    def decode_list(self, raw: Any) -> tuple[str, ...]:
        return () if raw == "[]" else tuple(json.loads(raw))  # (most lists are empty)

    def elements(self, column: str) -> str:
        """A table of the list ``column``'s elements, in a column named ``value``."""
        return f"json_each({column})"

    def overlaps(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        """The list ``column`` holds at least one of ``values``."""
        marks = ",".join("?" * len(values)) or "NULL"
        return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value IN ({marks}))", [*values]

    # -- membership ---------------------------------------------------------------------
    def batches(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        """``values`` in pieces that ``among`` can take in one statement each."""
        for i in range(0, len(values), self._max_marks):
            yield values[i : i + self._max_marks]

    def among(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (one batch of them). The list is padded with
        its last value to a power of two (up to ``_max_marks``), so a few statement texts
        serve every length and stay in the driver's cache of prepared statements:
        preparing a search's join anew for each length cost ~0.1 ms a statement."""
        n = len(values)
        size = min(1 << (n - 1).bit_length(), self._max_marks) if n else 0
        padded = [*values, *[values[-1]] * (size - n)] if size > n else [*values]
        return f"{column} IN ({','.join('?' * len(padded))})", padded

    # -- writes ------------------------------------------------------------------------
    def insert_ignoring(self, into: str, key: str) -> str:
        """An insert of one row into ``into`` (``table(columns)``) that does nothing
        when the row is there already (by ``key``)."""
        marks = ", ".join("?" * _column_count(into))
        return f"INSERT OR IGNORE INTO {into} VALUES ({marks})"

    def like_prefix(self, column: str) -> str:
        """``column`` starts with the escaped pattern that follows as a parameter."""
        return f"{column} LIKE ? ESCAPE '\\'"

    # -- vectors --------------------------------------------------------------------------
    def decode_vector(self, raw: Any) -> npt.NDArray[np.float32]:
        import numpy as np

        return np.frombuffer(raw, dtype=np.float32)

    def vector_matrix(self, raws: Sequence[Any], dim: int) -> npt.NDArray[np.float32]:
        """Rows of ``vector_bytes`` as one matrix (``dim`` columns when there are none)."""
        import numpy as np

        if not raws:
            return np.zeros((0, dim), dtype=np.float32)
        flat = np.frombuffer(b"".join(bytes(r) for r in raws), dtype=self.vector_dtype)
        return flat.astype(np.float32, copy=False).reshape(len(raws), -1)


class PostgresDialect(Dialect):
    name = "postgres"
    no_limit = None
    like = "ILIKE"  # SQLite's LIKE ignores ASCII case, and the two stores answer alike
    # vector_send: int16 dimension, int16 unused, then big-endian float4s
    vector_bytes = "substr(vector_send(v.embedding), 5)"
    vector_dtype = ">f4"
    column_types: ClassVar[Mapping[str, str]] = {
        "text": "text",
        "real": "double precision",
        "int": "integer",
        "bigint": "bigint",
        "bool": "boolean",
        "false": "false",
        "blob": "bytea",
        "list": "text[]",
        "no_items": "'{}'",
    }

    def sql(self, text: str) -> str:
        return _postgres_sql(text)

    def encode_list(self, values: Sequence[str]) -> Any:
        return list(values)

    def decode_list(self, raw: Any) -> tuple[str, ...]:
        return tuple(raw)

    def elements(self, column: str) -> str:
        return f"unnest({column}) AS value"

    def overlaps(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column} && ?::text[]", [list(values)]

    def batches(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        if values:
            yield values  # one array parameter, however long

    def among(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def insert_ignoring(self, into: str, key: str) -> str:
        marks = ", ".join("?" * _column_count(into))
        return f"INSERT INTO {into} VALUES ({marks}) ON CONFLICT ({key}) DO NOTHING"

    def like_prefix(self, column: str) -> str:
        return f"{column} ILIKE ?"  # the backslash is PostgreSQL's default escape

    def decode_vector(self, raw: Any) -> npt.NDArray[np.float32]:
        import numpy as np

        return np.frombuffer(bytes(raw), dtype=">f4").astype(np.float32)


@lru_cache(maxsize=1024)
def _postgres_sql(text: str) -> str:
    # psycopg's marks are %s, so a literal % doubles
    return text.replace("%", "%%").replace("?", "%s").replace("/*C*/", 'COLLATE "C"')


def _column_count(into: str) -> int:
    return into[into.index("(") + 1 :].count(",") + 1


SQLITE = Dialect()
POSTGRES = PostgresDialect()
