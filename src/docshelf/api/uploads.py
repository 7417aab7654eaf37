"""``POST /v1/documents``: a multipart upload streamed straight into the blob store.

The body is parsed as it arrives (python-multipart's low-level parser), so the
file is never held in memory or spooled twice: the ``file`` part's bytes go to
a blob writer that hashes them on the way to a temporary file. The name is
sanitised and its type checked when the part's headers end — before any byte
is written. Only then is the upload recorded (a document and a job, or a link
to bytes already there); parsing and embedding happen in a worker.

Uploads received together are committed together (``Batched``): one thread hop stores
and records them all (``Uploads.receive_many``: small files held in the store with their
records, larger blobs fsynced side by side first, one durable transaction), and each is
answered 202 after that shared commit. A burst of uploads then costs a few commits, not
one fsync chain and one transaction each (docs/benchmarks/uploads.md, "Uploads: group
commit" and "Uploads: small files held in the store").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect

from docshelf import views
from docshelf.api.batching import Batched
from docshelf.api.deps import ShelfDep, UserDep
from docshelf.api.schema import errors
from docshelf.blobs import BlobWriter
from docshelf.errors import InvalidInput, TooLarge
from docshelf.ingest.uploads import UploadResult
from docshelf.model import User
from docshelf.shelf import Shelf

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

router = APIRouter()


class UploadAccepted(BaseModel):
    document_id: str
    status: str = Field(description="queued, or the stage the caller's own copy is at")
    fingerprint: str = Field(description="SHA-256 of the bytes")
    already_in_library: bool = Field(
        description="The caller had these bytes already (nothing new happens); false for "
        "new bytes and for bytes only others had, which look the same"
    )


FIELD = "file"
# Room for the multipart framing around the file (boundaries, part headers, small fields).
FRAMING_BYTES = 64 * 1024

_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [FIELD],
                    "properties": {FIELD: {"type": "string", "format": "binary"}},
                }
            }
        },
    }
}


class _Receiver:
    """python-multipart callbacks: route the ``file`` part's bytes into a blob writer."""

    def __init__(self, name: Callable[[str], str], writer: Callable[[], BlobWriter]) -> None:
        self._name = name  # the name kept, or an error (before any byte is written)
        self._writer = writer
        self._headers: dict[bytes, bytes] = {}
        self._field = bytearray()
        self._value = bytearray()
        self._in_file = False
        self.name: str | None = None
        self.writer: BlobWriter | None = None
        self.ended = False

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda data, start, end: self._field.extend(data[start:end]),
            "on_header_value": lambda data, start, end: self._value.extend(data[start:end]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        }

    def _part_begin(self) -> None:
        self._headers = {}
        self._in_file = False

    def _header_end(self) -> None:
        self._headers[bytes(self._field).strip().lower()] = bytes(self._value).strip()
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        disposition, params = parse_options_header(self._headers.get(b"content-disposition"))
        if disposition != b"form-data" or params.get(b"name") != FIELD.encode():
            return  # another field: its bytes are skipped
        if self.writer is not None:
            raise InvalidInput(f"Send one `{FIELD}` per request")
        raw = params.get(b"filename")
        if not raw:
            raise InvalidInput(
                f"The `{FIELD}` field has no filename; its extension picks the parser"
            )
        self.name = self._name(raw.decode("utf-8", errors="replace"))
        self.writer = self._writer()
        self._in_file = True

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file and self.writer is not None:
            # A buffered write of at most one network chunk: cheaper than a thread
            # hop. The one slow call, the fsync in commit(), runs in the threadpool.
            self.writer.write(data[start:end])

    def _part_end(self) -> None:
        self._in_file = False

    def _end(self) -> None:
        self.ended = True


def _boundary(request: Request) -> bytes:
    mime, params = parse_options_header(request.headers.get("content-type"))
    boundary = params.get(b"boundary")
    if mime != b"multipart/form-data" or not boundary:
        raise InvalidInput(f"Send the file as multipart/form-data, in a field named `{FIELD}`")
    return boundary


@router.post(
    "/documents",
    status_code=202,
    summary="Upload a file (multipart field `file`); parsing and embedding happen later",
    description=(
        "Answered 202 whether or not the same bytes were already stored (for anyone): "
        "a new upload and one of bytes only others had look the same; bytes the caller "
        "had already are `already_in_library`. 400 covers a malformed body, no "
        "`file` field or an empty file; the file name's extension picks the parser (415)."
    ),
    responses={202: {"model": UploadAccepted}, **errors(413, 415, 507)},
    openapi_extra=_UPLOAD_BODY,
)
async def upload(request: Request, shelf: ShelfDep, user: UserDep) -> JSONResponse:
    started = time.perf_counter()
    outcome = "refused"
    try:
        with shelf.service.receiving():  # this process's workers let it pass
            result = await _upload(request, shelf, user)
        # not "created" or "existing": /metrics has no auth, and whether this upload's
        # bytes were new (someone else's) must not show on it
        outcome = "accepted"
        # 202 whether or not the bytes were known: the answer must not tell who holds
        # what, only whether the caller has had them all along
        body = {**views.upload(result), "already_in_library": _had(result)}
        return JSONResponse(body, status_code=202)
    finally:
        shelf.metrics.uploaded(outcome, (time.perf_counter() - started) * 1000)


def _had(result: UploadResult) -> bool:
    """Whether the caller had these bytes before this upload (not created, not linked)."""
    return not result.created and not result.linked


async def _upload(request: Request, shelf: Shelf, user: User) -> UploadResult:
    limit = shelf.settings.max_upload_bytes
    too_large = f"file is over the {limit / 2**20:g} MB upload limit"
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit + FRAMING_BYTES:
        raise TooLarge(too_large)
    receiver = _Receiver(shelf.service.upload_name, lambda: shelf.blob_writer(limit))
    received = 0
    handed_over = False
    try:
        try:
            parser = MultipartParser(_boundary(request), receiver.callbacks())
            async for chunk in request.stream():
                received += len(chunk)
                if received > limit + FRAMING_BYTES:
                    raise TooLarge(too_large)
                parser.write(chunk)
            parser.finalize()
        except FormParserError as exc:
            raise InvalidInput(f"Malformed multipart body: {exc}") from None
        except ClientDisconnect:
            raise InvalidInput("The upload was cut off: the client went away") from None
        if not receiver.ended:
            raise InvalidInput("Malformed multipart body: it ends before its closing boundary")
        writer, name = receiver.writer, receiver.name
        if writer is None or name is None:
            raise InvalidInput(f"No `{FIELD}` field in the multipart body")
        if writer.size == 0:
            raise InvalidInput("empty file")
        commits: Batched[Received, UploadResult] = request.app.state.upload_commits
        handed_over = True  # the commit owns the writer now, whatever happens to us
        return await commits(Received(writer, user.id, name))
    finally:
        if receiver.writer is not None and not handed_over:
            receiver.writer.abort()  # no temp file is left behind


@dataclass(frozen=True)
class Received:
    """An upload read whole, waiting for its commit."""

    writer: BlobWriter
    user_id: str
    name: str


def upload_commits(shelf: Shelf) -> Batched[Received, UploadResult]:
    """The app's group commit of uploads (``create_app`` keeps one)."""
    return Batched(lambda batch: commit_uploads(shelf, batch))


def commit_uploads(shelf: Shelf, batch: Sequence[Received]) -> list[UploadResult | BaseException]:
    """Store and record a batch in one thread hop (``Shelf.receive_uploads``: small files
    held in the store, larger ones fsynced side by side, one durable transaction)."""
    return shelf.receive_uploads([(r.user_id, r.name, r.writer) for r in batch])
