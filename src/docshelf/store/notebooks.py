"""What the store keeps of notebooks (``model.Notebook``): a part of the ``Store`` port.

A notebook's membership is rows (its sources, its documents, the users it is shared
with) that follow what they name: deleting a source, a document or a user drops its rows.
Search reads membership in SQL (``SearchFilters.notebook``), never as a list of ids.
"""

from __future__ import annotations

from typing import Protocol

from docshelf.model import Notebook


class NotebookRecords(Protocol):
    def put_notebook(self, notebook: Notebook) -> None:
        """Create or replace ``notebook`` (by id), its sets with it; Conflict when its
        owner has another notebook of that name (in any case)."""
        ...

    def get_notebook(self, notebook_id: str) -> Notebook | None: ...
    def notebooks_for(self, user_id: str) -> list[Notebook]:
        """The notebooks ``user_id`` owns or that are shared with them, by name."""
        ...

    def delete_notebook(self, notebook_id: str) -> bool: ...
