"""The shared SQL of notebooks (``store.notebooks.NotebookRecords``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from docshelf.errors import Conflict
from docshelf.model import Notebook
from docshelf.store.sql.core import SQLBase

_COLUMNS = "id, name, user_id, filters, created_at, updated_at"
_SETS = (
    ("notebook_sources", "source_id", "sources"),
    ("notebook_documents", "document_id", "documents"),
    ("notebook_shares", "user_id", "shared_with"),
)


class NotebooksSQL(SQLBase):
    def put_notebook(self, notebook: Notebook) -> None:
        nb = notebook
        filters = json.dumps([list(pair) for pair in nb.filters])
        with self.transaction():
            taken = self._q(
                "SELECT 1 FROM notebooks WHERE user_id = ? AND lower(name) = lower(?) AND id <> ?",
                (nb.user_id, nb.name, nb.id),
            )
            if taken:
                raise Conflict(f"You have a notebook named {nb.name!r}; pick another name")
            changed = self._x(
                "UPDATE notebooks SET name = ?, filters = ?, updated_at = ? WHERE id = ?",
                (nb.name, filters, nb.updated_at, nb.id),
            )
            if not changed:
                self._x(
                    f"INSERT INTO notebooks({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                    (nb.id, nb.name, nb.user_id, filters, nb.created_at, nb.updated_at),
                )
            for table, column, attribute in _SETS:
                self._x(f"DELETE FROM {table} WHERE notebook_id = ?", (nb.id,))
                values: Sequence[str] = getattr(nb, attribute)
                self._xm(
                    f"INSERT INTO {table}(notebook_id, {column}) VALUES (?, ?)",
                    [(nb.id, v) for v in dict.fromkeys(values)],
                )

    def get_notebook(self, notebook_id: str) -> Notebook | None:
        rows = self._q(f"SELECT {_COLUMNS} FROM notebooks WHERE id = ?", (notebook_id,))
        return self._notebooks(rows)[0] if rows else None

    def notebooks_for(self, user_id: str) -> list[Notebook]:
        rows = self._q(
            f"SELECT {_COLUMNS} FROM notebooks n WHERE user_id = ? OR EXISTS "
            "(SELECT 1 FROM notebook_shares s WHERE s.notebook_id = n.id AND s.user_id = ?) "
            "ORDER BY lower(name), id",
            (user_id, user_id),
        )
        return self._notebooks(rows)

    def delete_notebook(self, notebook_id: str) -> bool:
        with self._one_write():
            return self._x("DELETE FROM notebooks WHERE id = ?", (notebook_id,)) > 0

    def _notebooks(self, rows: Sequence[Sequence[Any]]) -> list[Notebook]:
        ids = [r[0] for r in rows]
        members: dict[str, dict[str, list[str]]] = {i: {} for i in ids}
        for table, column, attribute in _SETS:
            for notebook_id, value in self._each_among(
                "notebook_id", ids, f"SELECT notebook_id, {column} FROM {table} WHERE {{}}"
            ):
                members[notebook_id].setdefault(attribute, []).append(value)
        return [
            Notebook(
                id=r[0],
                name=r[1],
                user_id=r[2],
                sources=tuple(sorted(members[r[0]].get("sources", []))),
                documents=tuple(sorted(members[r[0]].get("documents", []))),
                filters=tuple((str(k), str(v)) for k, v in json.loads(r[3])),
                shared_with=tuple(sorted(members[r[0]].get("shared_with", []))),
                created_at=float(r[4]),
                updated_at=float(r[5]),
            )
            for r in rows
        ]
