"""The caller's documents, search, context and sources (``/v1``).

Handlers are plain ``def``: FastAPI runs them in its threadpool, so the blocking
store and search calls never hold up the event loop. Every call passes the
caller's user id, so another user's ids are answered exactly like unknown ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from docshelf import views
from docshelf.api import reading
from docshelf.api.deps import ShelfDep, UserDep
from docshelf.api.schema import errors
from docshelf.catalogue import DocumentView
from docshelf.errors import Conflict, Forbidden, NotFound
from docshelf.model import Document, User
from docshelf.search.filters import (
    DATE_PATTERN,
    SearchMode,
    document_types,
    file_type_names,
    meaning,
)
from docshelf.search.filters_model import Filters
from docshelf.search.results import MAX_LIMIT, ContextMode
from docshelf.shelf import Shelf
from docshelf.store import Listing

router = APIRouter()

JSON = dict[str, Any]
# Every integer parameter is bounded: past the store's 64-bit integers a query would
# fail (SQLite: OverflowError), and no library has a billion documents to page through.
MAX_OFFSET = 1_000_000_000
NOT_BLANK = r"\S"  # at least one character that is not white space
# The known values, in the description (checked by Filters, which names them on a miss);
# an empty value is a filter not given (a form's empty field), so the schema allows it.
_FILE_TYPES: dict[str, Any] = {"json_schema_extra": {"enum": ["", *file_type_names()]}}
_DOC_TYPES: dict[str, Any] = {"json_schema_extra": {"enum": ["", *document_types()]}}
_DATES: dict[str, Any] = {"json_schema_extra": {"pattern": f"^$|{DATE_PATTERN}"}}
NOTEBOOK = "Within this notebook of the caller's (or shared with them): its id or name"
ListOrder = Literal["path", "title", "type", "status", "added", "size"]  # store.LIST_ORDERS


def query_filters(
    type: Annotated[str | None, Query(description=meaning("type"), **_FILE_TYPES)] = None,
    doctype: Annotated[str | None, Query(description=meaning("doctype"), **_DOC_TYPES)] = None,
    source: Annotated[str | None, Query(max_length=200, description=meaning("source"))] = None,
    path: Annotated[str | None, Query(max_length=2000, description=meaning("path"))] = None,
    tag: Annotated[list[str] | None, Query(max_length=200, description=meaning("tag"))] = None,
    concept: Annotated[
        list[str] | None, Query(max_length=200, description=meaning("concept"))
    ] = None,
    date: Annotated[
        str | None,
        Query(description=meaning("date"), **_DATES),
    ] = None,
) -> Filters:
    """The filter vocabulary as query parameters (``?type=pdf&tag=a&tag=b``); the file
    type is ``type`` here, as in the search request's ``filters``."""
    single = {
        "type": type,
        "doctype": doctype,
        "source": source,
        "path": path,
        "date": date,
    }
    # An empty value is a filter not given (a form's empty field), as in a query string.
    items = [f"{k}={v}" for k, v in single.items() if v]
    items += [f"tag={t}" for t in tag or () if t] + [f"concept={c}" for c in concept or () if c]
    return Filters.parse(items)


QueryFilters = Annotated[Filters, Depends(query_filters)]


@router.get(
    "/documents",
    summary="The caller's documents (a page of them, and the total), filtered and sorted",
    description="Filters as in search (`?type=pdf&tag=x&date=2026`), `q`: words the "
    "title or path holds, `status` (e.g. `failed`), `sort`. `total` counts every "
    "document that matches; `library_total` the caller's whole library; "
    "`embedding_pending` those of it searchable by their words only, until embedded.",
)
def list_documents(
    shelf: ShelfDep,
    user: UserDep,
    filters: QueryFilters,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    q: Annotated[
        str | None, Query(max_length=500, description="Words in the title or path")
    ] = None,
    status: Annotated[
        Literal["queued", "parsing", "chunking", "embedding", "indexing", "complete", "failed"]
        | None,
        Query(description="Only documents in this state"),
    ] = None,
    sort: Annotated[
        ListOrder,
        Query(description="path, title, type, status; added and size: newest, largest first"),
    ] = "path",
) -> JSON:
    listing = Listing(
        filters=filters.to_search_filters(shelf.taxonomy), matching=q, status=status, order=sort
    )
    docs = shelf.documents(user_id=user.id, limit=limit, offset=offset, listing=listing)
    total = shelf.count_documents(user_id=user.id, listing=listing)
    out = [views.document(d) for d in docs]
    vaults = reading.vault_roots(shelf.sources())
    for doc, item in zip(docs, out, strict=True):
        item["obsidian"] = _obsidian(doc, vaults)
    failed = [o for o in out if o["status"] == "failed"]
    for item in failed:  # why it failed, and whether a retry can help
        item["error"] = _last_error(shelf, item["id"], user)
        item["retryable"] = views.retryable(item["error"], pdf_password=_has_password(shelf))
    return {
        "documents": out,
        "limit": limit,
        "offset": offset,
        "total": total,
        "library_total": shelf.count_documents(user_id=user.id),
        # of the caller's documents, those searchable by their words only until embedded
        "embedding_pending": shelf.waiting_for_vectors(user.id),
    }


def _last_error(shelf: Shelf, document_id: str, user: User) -> str | None:
    """Why a document's ingest job failed (None: no job, it came from a source)."""
    try:
        return shelf.job(document_id, user.id).last_error
    except NotFound:
        return None


@router.get(
    "/facets",
    summary="Counts per file type, document type, source, tag, concept and year over the "
    "caller's library, narrowed by the filters given",
    description="Each single-valued facet (type, doctype, source, date) is counted without "
    "its own filter, so its other values stay choosable; tags and concepts within the "
    "filters. Counts are documents, exact, over the whole matching set; `total` is how "
    "many documents match every filter. Values are what a filter takes; `labels` names "
    "sources and concepts.",
    responses=errors(404),
)
def facets(
    shelf: ShelfDep,
    user: UserDep,
    filters: QueryFilters,
    notebook: Annotated[str | None, Query(description=NOTEBOOK, max_length=200)] = None,
) -> JSON:
    chosen = filters.to_search_filters(shelf.taxonomy)
    if notebook:
        chosen = shelf.notebooks.narrowed(chosen, notebook, user.id)
    found = shelf.facets(chosen, user_id=user.id)
    sources = {s.id: s.path for s in shelf.sources() if s.user_id == user.id}
    concepts = shelf.taxonomy.concepts
    concept_labels = {
        cid: concepts[cid].label if cid in concepts else cid for cid in found.counts["concept"]
    }
    return {
        "facets": found.counts,
        "labels": {
            "source": {sid: sources.get(sid, sid) for sid in found.counts["source"]},
            "concept": concept_labels,
        },
        "total": found.total,
        "filters": filters.as_json(),
    }


@router.get(
    "/documents/{document_id}",
    summary="A document's record, sections and ingest job",
    responses=errors(404),
)
def get_document(document_id: str, shelf: ShelfDep, user: UserDep) -> JSON:
    doc_view = shelf.document(document_id, user.id)
    out = views.document_view(doc_view)
    out["obsidian"] = _obsidian(doc_view.document, reading.vault_roots(shelf.sources()))
    _links_as_written(shelf, doc_view, out["links"])
    try:
        out["job"] = views.job(shelf.job(document_id, user.id), pdf_password=_has_password(shelf))
    except NotFound:  # it came from a source: no ingest job
        out["job"] = None
    return out


def _obsidian(doc: Document, vaults: dict[str, str]) -> str | None:
    """The ``obsidian://`` link of a note from an Obsidian vault source, else None."""
    root = vaults.get(doc.source_id or "")
    return reading.obsidian_uri(doc.file_type, doc.rel_path, root) if root else None


def _links_as_written(shelf: Shelf, doc_view: DocumentView, links: list[JSON]) -> None:
    """Each link's target as the note wrote it, and whether an embedded attachment (an
    image: never a document) is in the vault."""
    doc = doc_view.document
    spelled = reading.link_spellings(doc_view.sections)
    root = next((s.path for s in shelf.sources() if s.id == doc.source_id), None)
    for link in links:
        link["written"] = spelled.get(link["target"], link["target"])
        if link["embed"] and not link["document_ids"] and reading.is_attachment(link["written"]):
            link["present"] = reading.attachment_present(doc.path, root, link["written"])


@router.delete(
    "/documents/{document_id}",
    summary="Remove the caller's access; the last access removes the data",
    responses=errors(404, 507),
)
def delete_document(document_id: str, shelf: ShelfDep, user: UserDep) -> JSON:
    removed = shelf.delete_document(document_id, user.id)
    return {"document_id": document_id, "removed": removed}


@router.post(
    "/documents/{document_id}/retry",
    status_code=202,
    summary="Re-queue a failed ingest job (409 when it has not failed, or failed for good)",
    responses=errors(404, 409, 507),
)
def retry(document_id: str, shelf: ShelfDep, user: UserDep) -> JSON:
    current = shelf.job(document_id, user.id)
    password = _has_password(shelf)
    if current.status == "failed" and not views.retryable(
        current.last_error, pdf_password=password
    ):
        raise Conflict(f"Not retried: it failed for good ({current.last_error})")
    return views.job(shelf.retry(document_id, user.id), pdf_password=password)


def _has_password(shelf: Shelf) -> bool:
    """Whether the server tries a password on encrypted PDFs (a retry of one can help)."""
    return shelf.settings.parse.pdf_password is not None


@router.post(
    "/documents/{document_id}/enrich",
    summary="Enrich one document now: summary, type, concepts, key claims (cached by content)",
    responses=errors(404, 507),
)
def enrich_document(document_id: str, shelf: ShelfDep, user: UserDep) -> JSON:
    [result] = shelf.enrich([document_id], user_id=user.id)
    return views.enrich_result(result)


@router.post(
    "/enrich",
    status_code=202,
    summary="Queue all the caller's documents for enrichment; workers do it in the background",
    responses=errors(507),
)
def enrich_all(shelf: ShelfDep, user: UserDep) -> JSON:
    return {"queued": shelf.queue_enrichment(user_id=user.id)}


@router.get(
    "/distillates",
    summary="Key claims: one document's, or those matching a query",
    description="With neither `q` nor `document_id` the list is empty and `notice` says why.",
    responses=errors(404),
)
def distillates(
    shelf: ShelfDep,
    user: UserDep,
    q: Annotated[str | None, Query(max_length=2000)] = None,
    document_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 20,
) -> JSON:
    if document_id is None and not (q and q.strip()):
        return {"distillates": [], "notice": "Give q (words to match) or a document_id"}
    found = shelf.distillates(q, document_id=document_id, limit=limit, user_id=user.id)
    return {"distillates": [views.distillate(d, doc) for d, doc in found]}


class ReindexRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document_id: str | None = None


def _admin(user: User) -> None:
    if not user.is_admin:
        raise Forbidden("Reindexing is for admins (`docshelf users create NAME --admin`)")


@router.post(
    "/reindex",
    summary="Admin: rebuild one document now, or start rebuilding the library in the background",
    responses={
        202: {"description": "The library-wide reindex runs; GET /v1/reindex follows it"},
        **errors(403, 404, 409, 507),
    },
)
def start_reindex(body: ReindexRequest, shelf: ShelfDep, user: UserDep) -> JSONResponse:
    _admin(user)
    if body.document_id is not None:
        return JSONResponse(shelf.reindex(document_id=body.document_id))
    started = shelf.service.start_reindex()
    if started is None:
        raise Conflict("A reindex is already running; GET /v1/reindex follows it")
    return JSONResponse(started, status_code=202)


@router.get(
    "/reindex",
    summary="Admin: the library-wide reindex's state and progress",
    responses=errors(403),
)
def reindex_state(shelf: ShelfDep, user: UserDep) -> JSON:
    _admin(user)
    state = shelf.service.reindex_state()
    # whether one is due: the library's chunks made by an older chunker (as `status` says)
    state["due"] = None if state.get("state") == "running" else shelf.service.reindex_due()
    return state


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, pattern=NOT_BLANK)
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    mode: SearchMode = "hybrid"
    filters: Filters = Field(default_factory=lambda: Filters())
    group: Literal["snippet", "section", "document", "all"] = "snippet"
    expand: Literal["parent-section"] | None = Field(
        default=None, description="parent-section: add each hit's section"
    )
    facets: bool = Field(default=True, description="Counts per tag, concept and type")
    notebook: str | None = Field(default=None, description=NOTEBOOK, max_length=200)


@router.post(
    "/search",
    summary="Hybrid search over the caller's documents, with citations",
    responses=errors(404),
)
def search(body: SearchRequest, shelf: ShelfDep, user: UserDep) -> JSON:
    result = shelf.search(
        body.query,
        limit=body.limit,
        mode=body.mode,
        filters=body.filters.to_search_filters(shelf.taxonomy),
        user_id=user.id,
        group=body.group,
        expand=body.expand,
        facets=body.facets,
        notebook=body.notebook,
    )
    return views.search(result)


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, pattern=NOT_BLANK)
    limit: int = Field(default=5, ge=1, le=20)
    notebook: str | None = Field(default=None, description=NOTEBOOK, max_length=200)
    conversation: str | None = Field(
        default=None,
        max_length=100,
        description="A turn of this conversation ('new' starts one; the answer gives its "
        "id): a follow-up is searched with the questions before it",
    )


@router.post(
    "/ask",
    summary="A grounded answer with [n] citations to the caller's documents",
    responses=errors(404),
    description=(
        "With `Accept: text/event-stream` the answer streams as Server-Sent Events: "
        "`sources` (the numbered sources), `text` (verified sentences, in order), then "
        "`done` (the whole answer, the same JSON as without streaming)."
    ),
    response_model=None,
)
def ask(
    body: AskRequest,
    shelf: ShelfDep,
    user: UserDep,
    accept: Annotated[str, Header()] = "application/json",
) -> JSON | EventSourceResponse:
    if "text/event-stream" not in accept:
        found = shelf.ask(
            body.question,
            limit=body.limit,
            user_id=user.id,
            notebook=body.notebook,
            conversation=body.conversation,
        )
        return views.answer(found)
    pieces = shelf.ask_stream(
        body.question,
        limit=body.limit,
        user_id=user.id,
        notebook=body.notebook,
        conversation=body.conversation,
    )

    def events() -> Iterator[ServerSentEvent]:
        for piece in pieces:
            if piece.kind == "sources":
                data: JSON = {"sources": [views.answer_citation(c) for c in piece.sources]}
            elif piece.kind == "text":
                data = {"text": piece.text}
            else:
                assert piece.answer is not None
                data = views.answer(piece.answer)
            yield ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=piece.kind)

    return EventSourceResponse(events())


@router.get(
    "/chunks/{chunk_id}/context",
    summary="Widen a hit: neighbours, section, or more",
    responses=errors(404),
)
def context(
    chunk_id: str,
    shelf: ShelfDep,
    user: UserDep,
    mode: ContextMode = "snippet-window",
    window: Annotated[int, Query(ge=0, le=20)] = 1,
    anchor: Annotated[
        int | None, Query(ge=0, description="A search citation's anchor: cite the same heading")
    ] = None,
    notebook: Annotated[str | None, Query(description=NOTEBOOK, max_length=200)] = None,
) -> JSON:
    found = shelf.context(chunk_id, mode, window, user_id=user.id, anchor=anchor, notebook=notebook)
    return views.context(found)


@router.get("/sources", summary="The caller's registered sources")
def sources(shelf: ShelfDep, user: UserDep) -> JSON:
    return {"sources": [views.source(s) for s in shelf.sources() if s.user_id == user.id]}
