"""Opening a citation (``/v1/documents/{id}/view``, ``/pages/{n}``), the original bytes
(``/blob``) and the caller's folder failures (``/v1/failures``).

Every route reads the document through ``shelf.document(id, user.id)`` first, so a
document the caller may not read is answered 404 like an unknown one; a chunk id
must belong to that document.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePath
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response, StreamingResponse

from docshelf import views
from docshelf.api import pdf_pages, reading
from docshelf.api.deps import ShelfDep, UserDep
from docshelf.api.renders import RenderGate, RendersDep
from docshelf.api.schema import errors
from docshelf.catalogue import DocumentView
from docshelf.errors import NotFound
from docshelf.model import Chunk, Document, Source
from docshelf.search import citing
from docshelf.shelf import Shelf

router = APIRouter()

JSON = dict[str, Any]
_MEDIA_TYPES = {"markdown": "text/markdown; charset=utf-8", "text": "text/plain; charset=utf-8"}
_BLOB_CHUNK = 64 * 1024
MAX_PAGE = 100_000


def _cited(shelf: Shelf, view: DocumentView, chunk_id: str | None) -> Chunk | None:
    if chunk_id is None:
        return None
    found = shelf.chunk(chunk_id)
    if found is None or found.document_id != view.document.id:
        raise NotFound(f"Chunk {chunk_id!r} is not in document {view.document.id!r}")
    return found


def _read_blob(shelf: Shelf) -> Any:
    def read(sha256: str) -> bytes | None:
        stored = shelf.original(sha256)
        if stored is None:
            return None
        with stored:
            return stored.read()

    return read


def _page_in(doc_view: DocumentView, page: int) -> None:
    count = doc_view.document.page_count
    if count is not None and not 1 <= page <= count:
        raise NotFound(f"No page {page}: the document has {count}")


def _obsidian(shelf: Shelf, doc: Document) -> str | None:
    source = next((s for s in shelf.sources() if s.id == doc.source_id), None)
    if source is None or not reading.vault_roots([source]):
        return None
    return reading.obsidian_uri(doc.file_type, doc.rel_path, source.path)


def _original(shelf: Shelf, view: DocumentView) -> reading.Original:
    return reading.original_bytes(view, _read_blob(shelf), shelf.settings.max_file_bytes)


@router.get(
    "/documents/{document_id}/view",
    summary="The document opened at a citation: a PDF page with the cited words' boxes, "
    "or the text as blocks scrolled to the cited heading",
    responses=errors(404, 410),
)
def view(
    document_id: str,
    shelf: ShelfDep,
    user: UserDep,
    renders: RendersDep,
    chunk: Annotated[str | None, Query(max_length=200)] = None,
    page: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
    at: Annotated[
        int | None,
        Query(ge=0, description="A citation's anchor: open at the inner heading it names"),
    ] = None,
) -> JSON:
    return _view(shelf, shelf.document(document_id, user.id), chunk, page, at, renders, user.id)


@router.get(
    "/chunks/{chunk_id}/view",
    summary="The document of a chunk opened at it (as /documents/{id}/view?chunk=)",
    responses=errors(404, 410),
)
def chunk_view(chunk_id: str, shelf: ShelfDep, user: UserDep, renders: RendersDep) -> JSON:
    found = shelf.chunk(chunk_id)
    try:
        if found is None:
            raise NotFound(chunk_id)
        doc_view = shelf.document(found.document_id, user.id)
    except NotFound:  # another user's chunk is answered exactly like an unknown one
        raise NotFound(f"No chunk {chunk_id!r}") from None
    return _view(shelf, doc_view, chunk_id, None, None, renders, user.id)


def _view(
    shelf: Shelf,
    doc_view: DocumentView,
    chunk: str | None,
    page: int | None,
    at: int | None,
    renders: RenderGate,
    user_id: str,
) -> JSON:
    doc = doc_view.document
    cited = _cited(shelf, doc_view, chunk)
    original = _original(shelf, doc_view)
    inner = citing.inner_at(cited, at) if cited is not None and at is not None else None
    base: JSON = {
        "document_id": doc.id,
        "title": doc.title,
        "file_type": doc.file_type,
        "path": doc.path,
        "chunk_id": cited.id if cited else None,
        "heading_path": list(citing.cited_path(cited, inner)) if cited else [],
        "anchor": (inner.start if inner else cited.start) if cited else None,
        "download": f"/v1/documents/{quote(doc.id, safe='')}/blob",
        "obsidian": _obsidian(shelf, doc),
    }
    limits = shelf.settings.parse
    if doc.file_type == "pdf":
        first = (cited.page_start if cited else None) or 1
        last = (cited.page_end if cited else None) or first
        number = page or first
        _page_in(doc_view, number)
        snippet = cited.text if cited is not None and first <= number <= last else ""
        with renders.slot(user_id):
            shown = pdf_pages.page_view(original.data, number, snippet, limits, limits.pdf_password)
        return {
            **base,
            "kind": "page",
            "page": shown.page,
            "page_count": shown.page_count,
            "cited_pages": [first, last] if cited else None,
            "width": shown.width,
            "height": shown.height,
            "image_size": list(shown.pixels),
            "image": f"/v1/documents/{quote(doc.id, safe='')}/pages/{shown.page}",
            "boxes": [list(b) for b in shown.boxes],
        }
    text = reading.text_view(
        original.data, doc.file_type, cited, limits, inner.start if inner else None
    )
    text.pop("title", None)
    return {**base, **text}


@router.get(
    "/documents/{document_id}/pages/{page}",
    summary="One page of a PDF document as a PNG image",
    response_class=Response,
    responses={200: {"content": {"image/png": {"schema": {"type": "string"}}}}, **errors(404, 410)},
)
def page_image(
    document_id: str,
    page: Annotated[int, Path(ge=1, le=MAX_PAGE)],
    shelf: ShelfDep,
    user: UserDep,
    renders: RendersDep,
) -> Response:
    doc_view = shelf.document(document_id, user.id)
    if doc_view.document.file_type != "pdf":
        raise NotFound(f"Document {document_id!r} is not a PDF: it has no pages to show")
    _page_in(doc_view, page)
    original = _original(shelf, doc_view)
    limits = shelf.settings.parse
    with renders.slot(user.id):
        image = pdf_pages.page_image(original.data, page, limits, limits.pdf_password)
    return Response(
        image, media_type="image/png", headers={"Cache-Control": "private, max-age=300"}
    )


@router.get(
    "/documents/{document_id}/blob",
    summary="Download the original bytes (an upload's, or a folder file's while unchanged)",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/octet-stream": {"schema": {"type": "string"}}}},
        **errors(404, 410),
    },
)
def download(document_id: str, shelf: ShelfDep, user: UserDep) -> StreamingResponse:
    doc_view = shelf.document(document_id, user.id)
    doc = doc_view.document
    name = doc.rel_path.rsplit("/", 1)[-1] or "document"
    fh = shelf.original(doc.sha256)
    if fh is not None:

        def chunks() -> Iterator[bytes]:
            with fh:
                while block := fh.read(_BLOB_CHUNK):
                    yield block

        body: Iterator[bytes] = chunks()
    else:  # a folder document: its file, if it still holds these bytes
        original = _original(shelf, doc_view)
        body = iter([original.data])
        name = original.name
    return StreamingResponse(
        body,
        media_type=_MEDIA_TYPES.get(doc.file_type, "application/octet-stream"),
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}",
            "Content-Length": str(doc.size_bytes),
            "X-Content-Type-Options": "nosniff",
        },
    )


def _owns(source: Source, path: str) -> bool:
    if source.kind == "file":
        return path == source.path
    return PurePath(path).is_relative_to(source.path)


@router.get(
    "/failures",
    summary="Files of the caller's sources that could not be added, with the reason",
)
def failures(
    shelf: ShelfDep, user: UserDep, limit: Annotated[int, Query(ge=1, le=1000)] = 200
) -> JSON:
    mine = [s for s in shelf.sources() if s.user_id == user.id]
    found = [
        (f, source)
        for f in shelf.failures(limit=100_000)
        for source in [next((s for s in mine if _owns(s, f.path)), None)]
        if source is not None
    ]
    password = shelf.settings.parse.pdf_password is not None  # a locked PDF may open now
    return {
        "failures": [
            {
                "path": f.path,
                "label": _label(source, f.path),
                "reason": f.reason,
                "retryable": views.retryable(f.reason, pdf_password=password),
            }
            for f, source in found[:limit]
        ],
        "total": len(found),
    }


def _label(source: Source, path: str) -> str:
    """A failed file as a person finds it: its folder's name, then its path inside it
    (``notes/drafts/a.md``), not the whole path from the root."""
    if source.kind == "file":
        return PurePath(path).name
    return str(PurePath(PurePath(source.path).name) / PurePath(path).relative_to(source.path))
