"""docshelf as a LangChain retriever (the optional ``langchain`` extra).

    from docshelf import Shelf
    from docshelf.integrations.langchain import DocshelfRetriever

    retriever = DocshelfRetriever(shelf=Shelf(), k=4)            # in process
    retriever = DocshelfRetriever(base_url="http://127.0.0.1:8750", token="dsk_…")  # a server
    docs = retriever.invoke("how does leader election work", k=3)
    docs[0].metadata["label"]                                     # 'Raft (projects/raft.md#1)'

Each hit becomes a ``Document`` whose ``page_content`` is the snippet and whose
``metadata`` carries its citation — ``label`` (quote it), ``path``, ``title``,
``heading_path``, ``chunk_index``, ``page_start``/``page_end`` — with ``chunk_id``,
``document_id``, ``score`` and ``scores`` (``lexical``, ``vector``, ``fused``).
``k``, ``mode`` and ``filters`` can also be given per call (``invoke(q, k=2)``).
Filters use the keys of every face (``docshelf.search.filters``): ``source``, ``path``,
``type``, ``tag`` and ``concept`` (each a string or a list).

In process, searches run as the local admin unless ``user_id`` is set; over HTTP,
as the token's user. docshelf's errors are raised as they are (over HTTP, the
error body's code picks the class).
"""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, model_validator

from docshelf import views
from docshelf.errors import (
    Conflict,
    DocshelfError,
    InvalidInput,
    NotFound,
    Unauthorized,
    Unavailable,
)
from docshelf.search.filters import SearchMode
from docshelf.search.filters_model import Filters
from docshelf.search.results import MAX_LIMIT
from docshelf.shelf import Shelf

__all__ = ["DocshelfRetriever", "hit_document"]

_ERRORS: dict[int, type[DocshelfError]] = {
    400: InvalidInput,
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    503: Unavailable,
}


class DocshelfRetriever(BaseRetriever):
    """Cited snippets from a docshelf library: a ``Shelf`` in this process, or a
    server at ``base_url`` with a bearer ``token``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    shelf: Shelf | None = None
    """The library, in process."""
    base_url: str | None = None
    """Or a docshelf server, e.g. ``http://127.0.0.1:8750``."""
    token: str | None = None
    """The bearer token for ``base_url`` (``docshelf users create NAME``)."""
    user_id: str | None = None
    """In process: search as this user (default: the local admin, who sees everything)."""
    k: int = Field(default=4, ge=1, le=MAX_LIMIT)
    """Number of documents to return."""
    mode: SearchMode = "hybrid"
    filters: dict[str, Any] = Field(default_factory=dict)
    """``source``, ``path``, ``type``, ``tag`` and ``concept`` (tags and concepts the document
    must all have: a string or a list)."""
    timeout: float = 30.0
    """Seconds to wait for a server."""

    @model_validator(mode="after")
    def _one_library(self) -> DocshelfRetriever:
        if (self.shelf is None) == (self.base_url is None):
            raise ValueError("Give either `shelf` (in process) or `base_url` (a server)")
        if self.base_url is not None and not self.token:
            raise ValueError("A server needs a `token`; `docshelf users create NAME` makes one")
        Filters.from_mapping(self.filters)
        return self

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        mode: SearchMode | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        limit = self.k if k is None else k
        mode = mode or self.mode
        given = Filters.from_mapping(self.filters if filters is None else filters)
        if self.shelf is not None:
            result = self.shelf.search(
                query,
                limit=limit,
                mode=mode,
                filters=given.to_search_filters(self.shelf.taxonomy),
                user_id=self.user_id,
            )
            hits = views.search(result)["hits"]
        else:
            hits = self._search_server(query, limit, mode, given.as_json())
        return [hit_document(hit) for hit in hits]

    def _search_server(
        self, query: str, limit: int, mode: str, filters: dict[str, Any]
    ) -> list[dict[str, Any]]:
        assert self.base_url is not None
        try:
            response = httpx.post(
                f"{self.base_url.rstrip('/')}/v1/search",
                json={"query": query, "limit": limit, "mode": mode, "filters": filters},
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise Unavailable(
                f"Cannot reach the docshelf server at {self.base_url}: {exc}"
            ) from exc
        if response.status_code != 200:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text or response.reason_phrase
            raise _ERRORS.get(response.status_code, DocshelfError)(message)
        hits: list[dict[str, Any]] = response.json()["hits"]
        return hits


def hit_document(hit: dict[str, Any]) -> Document:
    """A search hit (SPEC §9 JSON) as a LangChain ``Document`` carrying its citation."""
    citation = hit["citation"]
    return Document(
        id=hit["chunk_id"],
        page_content=hit["text"],
        metadata={
            "label": citation["label"],
            "path": citation["path"],
            "title": citation["title"],
            "heading_path": list(citation["heading_path"]),
            "chunk_index": citation["chunk_index"],
            "page_start": citation["page_start"],
            "page_end": citation["page_end"],
            "chunk_id": hit["chunk_id"],
            "document_id": hit["document_id"],
            "score": hit["score"],
            "scores": dict(hit["scores"]),
        },
    )
