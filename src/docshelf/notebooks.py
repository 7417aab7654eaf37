"""Notebooks: a user's named, saved sets of sources and documents to search and ask within.

A notebook holds every document a file of its sources holds (or that came by one of
them) and the documents it names — the whole library when it names neither, as a
saved scope such as "my PDFs tagged thesis" — narrowed by its filters (the public vocabulary of
``search/filters.py``: ``tag``, ``type`` …). Its owner may share it read-only with other
users of the server. A notebook is only ever a narrowing: whoever searches it sees the
documents they may read and no other, so a shared notebook never shows a reader a
document of its owner's that the reader does not hold (``SearchFilters.user_id`` stays
theirs). The command line acts as the local library's admin (``LOCAL_ADMIN``).
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from docshelf.accounts.users import LOCAL_ADMIN, ensure_local_admin
from docshelf.errors import Conflict, Forbidden, InvalidInput, NotFound
from docshelf.model import NOTEBOOK_NAME, NOTEBOOK_NAME_MAX, Notebook
from docshelf.search.filters import query_field, with_query_fields
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.model import Source
    from docshelf.store import SearchStore

__all__ = ["Notebooks", "filter_pairs"]

_NAME = re.compile(NOTEBOOK_NAME)


def filter_pairs(given: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``name=value`` (or ``name:value``) filters as a notebook keeps them; InvalidInput
    for a name that is no filter or a value it refuses (an unknown file type …)."""
    pairs: list[tuple[str, str]] = []
    for text in given:
        name, sep, value = text.partition("=") if "=" in text else text.partition(":")
        name, value = name.strip().lower(), value.strip()
        if not sep or not value or query_field(name, value) is None:
            raise InvalidInput(
                f"Bad notebook filter {text!r}; write NAME=VALUE with NAME one of "
                "source, path, type, doctype, tag, concept, date"
            )
        pairs.append((name, value))
    return tuple(dict.fromkeys(pairs))


class Notebooks:
    """Notebooks as one user (``user_id``; None: the command line, the local admin)
    makes, changes, shares and reads them."""

    def __init__(self, store: SearchStore, taxonomy: Taxonomy) -> None:
        self.store = store
        self.taxonomy = taxonomy

    def reader(self, user_id: str | None) -> str:
        """The user id that ``user_id`` reads notebooks as (None: the local admin)."""
        if user_id is None:
            ensure_local_admin(self.store)
            return LOCAL_ADMIN
        return user_id

    # -- reading ---------------------------------------------------------------------------
    def list(self, user_id: str | None = None) -> list[Notebook]:
        """The notebooks the user owns, then those shared with them, each by name."""
        owner = self.reader(user_id)
        found = self.store.notebooks_for(owner)
        return sorted(found, key=lambda n: (n.user_id != owner, n.name.lower()))

    def find(self, given: str, user_id: str | None = None) -> Notebook:
        """The notebook ``given`` (its id or name) that the user may read: their own
        first, then one shared with them; NotFound for any other (another user's
        unshared notebook is not told apart from none)."""
        owner = self.reader(user_id)
        found = self.store.notebooks_for(owner)
        by_id = [n for n in found if n.id == given]
        if by_id:
            return by_id[0]
        named = [n for n in found if n.name.lower() == given.strip().lower()]
        own = [n for n in named if n.user_id == owner]
        if own:
            return own[0]
        if len(named) > 1:
            raise Conflict(
                f"{len(named)} notebooks named {given!r} are shared with you; use its id "
                f"({', '.join(n.id for n in named)})"
            )
        if not named:
            raise NotFound(f"No notebook {given!r}; `docshelf notebook list` shows yours")
        return named[0]

    def narrowed(
        self, filters: SearchFilters | None, given: str, user_id: str | None = None
    ) -> SearchFilters:
        """``filters`` narrowed to the notebook ``given``: its documents, its filters
        (the caller's own filters apply too; a single-valued one the caller gave wins),
        and the caller's access unchanged."""
        notebook = self.find(given, user_id)
        mine = filters or SearchFilters()
        fields = [query_field(name, value) for name, value in notebook.filters]
        held = (
            (notebook.id, notebook.updated_at) if notebook.sources or notebook.documents else None
        )
        base = with_query_fields(
            SearchFilters(user_id=mine.user_id, notebook=held),
            [f for f in fields if f is not None],
            user_id,
            self.taxonomy,
        )
        given_fields = {
            f.name: getattr(mine, f.name)
            for f in dataclasses.fields(SearchFilters)
            if getattr(mine, f.name) not in (None, (), "") and f.name != "notebook"
        }
        given_fields["tags"] = (*base.tags, *mine.tags)
        given_fields["concept_groups"] = (*base.concept_groups, *mine.concept_groups)
        return dataclasses.replace(base, **given_fields)

    def holding(self, given: str, chunk_id: str, user_id: str | None = None) -> None:
        """NotFound unless the notebook ``given`` holds the chunk's document."""
        chunks = self.store.get_chunks([chunk_id])
        within = self.narrowed(None, given, user_id)
        document = chunks[0].document_id if chunks else None
        if document is None or not self.store.documents_matching(
            dataclasses.replace(within, document_ids=(document,))
        ):
            raise NotFound(f"No snippet {chunk_id!r} in notebook {given!r}")

    # -- writing ---------------------------------------------------------------------------
    def create(
        self,
        name: str,
        user_id: str | None = None,
        *,
        sources: Sequence[str] = (),
        documents: Sequence[str] = (),
        filters: Sequence[str] = (),
    ) -> Notebook:
        """A new notebook of the user's, with the sources (ids or paths) and documents
        (ids) given, which must be theirs to read."""
        owner = self.reader(user_id)
        now = time.time()
        notebook = Notebook(
            id="nb_" + secrets.token_hex(6),
            name=_checked_name(name),
            user_id=owner,
            sources=self._sources(sources, owner),
            documents=self._documents(documents, owner),
            filters=filter_pairs(filters),
            created_at=now,
            updated_at=now,
        )
        self.store.put_notebook(notebook)
        return notebook

    def change(
        self,
        given: str,
        user_id: str | None = None,
        *,
        add_sources: Sequence[str] = (),
        add_documents: Sequence[str] = (),
        drop_sources: Sequence[str] = (),
        drop_documents: Sequence[str] = (),
        filters: Sequence[str] | None = None,
        add_filters: Sequence[str] = (),
        drop_filters: Sequence[str] = (),
        name: str | None = None,
    ) -> Notebook:
        """The user's own notebook ``given`` with sources, documents and filters added
        or dropped, its filters replaced (``filters``, when given), or renamed."""
        notebook = self._own(given, user_id)
        kept = notebook.filters if filters is None else filter_pairs(filters)
        gone = set(filter_pairs(drop_filters))
        kept = (*(f for f in kept if f not in gone), *filter_pairs(add_filters))
        dropped_sources = {s.id for s in map(self._source, drop_sources)}
        sources = [s for s in notebook.sources if s not in dropped_sources]
        documents = [d for d in notebook.documents if d not in set(drop_documents)]
        changed = dataclasses.replace(
            notebook,
            name=notebook.name if name is None else _checked_name(name),
            sources=(*sources, *self._sources(add_sources, notebook.user_id)),
            documents=(*documents, *self._documents(add_documents, notebook.user_id)),
            filters=tuple(dict.fromkeys(kept)),
            updated_at=max(time.time(), notebook.updated_at + 1e-6),
        )
        self.store.put_notebook(changed)
        return self.store.get_notebook(notebook.id) or changed

    def share(
        self, given: str, with_user: str, user_id: str | None = None, *, shared: bool = True
    ) -> Notebook:
        """The user's own notebook shared read-only with ``with_user`` (a name or id), or
        no longer (``shared=False``)."""
        notebook = self._own(given, user_id)
        other = self.store.get_user(with_user)
        if other is None or other.revoked_at is not None:
            raise NotFound(f"No user {with_user!r}")
        if other.id == notebook.user_id:
            raise InvalidInput("A notebook is its owner's already; share it with another user")
        readers = [u for u in notebook.shared_with if u != other.id]
        changed = dataclasses.replace(
            notebook,
            shared_with=(*readers, other.id) if shared else tuple(readers),
            updated_at=max(time.time(), notebook.updated_at + 1e-6),
        )
        self.store.put_notebook(changed)
        return changed

    def delete(self, given: str, user_id: str | None = None) -> Notebook:
        notebook = self._own(given, user_id)
        self.store.delete_notebook(notebook.id)
        return notebook

    def _own(self, given: str, user_id: str | None) -> Notebook:
        notebook = self.find(given, user_id)
        if notebook.user_id != self.reader(user_id):
            raise Forbidden(f"Notebook {notebook.name!r} is shared with you to read only")
        return notebook

    def _source(self, given: str) -> Source:
        source = self.store.get_source(given) or self.store.find_source(given)
        if source is None:
            raise NotFound(f"No source {given!r}; `docshelf sources` lists them")
        return source

    def _sources(self, given: Sequence[str], owner: str) -> tuple[str, ...]:
        user = self.store.get_user(owner)
        admin = user is not None and user.is_admin
        ids: list[str] = []
        for text in given:
            source = self._source(text)
            if not admin and source.user_id != owner:
                raise NotFound(f"No source {text!r}; `docshelf sources` lists them")
            ids.append(source.id)
        return tuple(dict.fromkeys(ids))

    def _documents(self, given: Sequence[str], owner: str) -> tuple[str, ...]:
        ids = tuple(dict.fromkeys(given))
        if not ids:
            return ()
        # the local admin (the command line) reads every document of the library
        readable = (
            self.store.get_documents(ids)
            if owner == LOCAL_ADMIN
            else self.store.access_links(owner, ids)
        )
        missing = [d for d in ids if d not in readable]
        if missing:
            raise NotFound(f"No document {missing[0]!r} in your library")
        return ids


def _checked_name(name: str) -> str:
    name = name.strip()
    if not _NAME.match(name) or len(name) > NOTEBOOK_NAME_MAX:
        raise InvalidInput(f"Bad notebook name {name!r}: 1-80 characters, no control characters")
    return name
