"""The caller's notebooks (``/v1/notebooks``): named sets of sources and documents to
search and ask within, shared read-only with other users (notebooks.py).

A notebook another user has not shared with the caller is answered like an unknown one
(404); one shared with them they may read, never change (403)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from docshelf import views
from docshelf.api.deps import ShelfDep, UserDep
from docshelf.api.schema import errors
from docshelf.model import NOTEBOOK_NAME, NOTEBOOK_NAME_MAX, Notebook, User
from docshelf.search.filters_model import Filters

router = APIRouter(prefix="/notebooks", responses=errors(400, 404))

JSON = dict[str, Any]
_NAME = Field(min_length=1, max_length=NOTEBOOK_NAME_MAX, pattern=NOTEBOOK_NAME)


def _ids() -> Any:
    return Field(default_factory=list, max_length=1000, description="Ids (sources: or paths)")


class NewNotebook(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = _NAME
    sources: list[str] = Field(
        default_factory=list, max_length=1000, description="Source ids or folder paths"
    )
    documents: list[str] = _ids()
    filters: Filters = Field(
        default_factory=lambda: Filters(), description="What narrows it: a search's filters"
    )


class NotebookChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None, min_length=1, max_length=NOTEBOOK_NAME_MAX, pattern=NOTEBOOK_NAME
    )
    add_sources: list[str] = _ids()
    drop_sources: list[str] = _ids()
    add_documents: list[str] = _ids()
    drop_documents: list[str] = _ids()
    filters: Filters | None = Field(default=None, description="Replaces the notebook's filters")


class Share(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1, max_length=200, description="A user's name or id")


def _view(notebook: Notebook, user: User) -> JSON:
    return views.notebook(notebook, user.id)


@router.get("", summary="The caller's notebooks, then those shared with them")
def list_notebooks(shelf: ShelfDep, user: UserDep) -> JSON:
    return {"notebooks": [_view(n, user) for n in shelf.notebooks.list(user.id)]}


@router.post("", status_code=201, summary="Create a notebook", responses=errors(409))
def create(body: NewNotebook, shelf: ShelfDep, user: UserDep) -> JSON:
    made = shelf.notebooks.create(
        body.name,
        user.id,
        sources=body.sources,
        documents=body.documents,
        filters=body.filters.as_pairs(),
    )
    return _view(made, user)


@router.get("/{notebook}", summary="A notebook, by id or name")
def get(notebook: str, shelf: ShelfDep, user: UserDep) -> JSON:
    return _view(shelf.notebooks.find(notebook, user.id), user)


@router.patch(
    "/{notebook}", summary="Change a notebook of the caller's", responses=errors(403, 409)
)
def change(notebook: str, body: NotebookChange, shelf: ShelfDep, user: UserDep) -> JSON:
    changed = shelf.notebooks.change(
        notebook,
        user.id,
        add_sources=body.add_sources,
        drop_sources=body.drop_sources,
        add_documents=body.add_documents,
        drop_documents=body.drop_documents,
        filters=None if body.filters is None else body.filters.as_pairs(),
        name=body.name,
    )
    return _view(changed, user)


@router.delete(
    "/{notebook}", summary="Delete a notebook (never its documents)", responses=errors(403)
)
def delete(notebook: str, shelf: ShelfDep, user: UserDep) -> JSON:
    return _view(shelf.notebooks.delete(notebook, user.id), user)


@router.put(
    "/{notebook}/readers",
    summary="Share a notebook read-only with another user",
    responses=errors(403),
)
def share(notebook: str, body: Share, shelf: ShelfDep, user: UserDep) -> JSON:
    return _view(shelf.notebooks.share(notebook, body.user, user.id), user)


@router.delete(
    "/{notebook}/readers/{reader}",
    summary="Stop sharing a notebook with a user",
    responses=errors(403),
)
def unshare(notebook: str, reader: str, shelf: ShelfDep, user: UserDep) -> JSON:
    return _view(shelf.notebooks.share(notebook, reader, user.id, shared=False), user)
