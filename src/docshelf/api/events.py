"""Server-Sent Events: a document's stages, and the lifecycle of all the caller's documents.

Both streams read the store, the one source of truth, so events written by a
worker in another process reach the client as well as those of this one's pool.
They read when woken (``api/wakeups.py``: a commit of this process, or of any
process through Redis) or after the poll interval, whichever comes first.
A client that reconnects with ``Last-Event-ID`` gets exactly the events after it.
The ids are the caller's own, not the store's shared sequence (whose gaps would
show everyone else's activity): a document's stream counts its events 1, 2, 3 …
as the caller sees them; the lifecycle stream's ids are opaque numbers
(``Uploads.events``, ``accounts/event_ids.py``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from docshelf import views
from docshelf.api.deps import ShelfDep, UserDep
from docshelf.api.schema import errors
from docshelf.api.wakeups import DRAIN_GRACE_SECONDS, RETRY_MS, Listener, Wakeups
from docshelf.errors import InvalidInput, NotFound
from docshelf.model import Event, Stage

router = APIRouter()

BATCH = 100
MAX_EVENT_ID = 10**18 - 1  # a document's stream: its n-th event (an OFFSET in 64 bits)
MAX_LIFECYCLE_ID = 2**128 - 1  # the lifecycle stream: one AES block (event_ids.MAX_TOKEN)
TERMINAL = frozenset({Stage.COMPLETE.value, Stage.FAILED.value})

LastEventId = Annotated[
    str,
    Header(
        alias="Last-Event-ID",
        description="Resume after this event id (its `id:` field: the n-th event)",
        pattern=r"^[0-9]{0,18}$",
    ),
]
LastLifecycleId = Annotated[
    str,
    Header(
        alias="Last-Event-ID",
        description="Resume after this event id (its `id:` field: an opaque number)",
        pattern=r"^[0-9]{0,39}$",
    ),
]


def _after(last_event_id: str, most: int = MAX_EVENT_ID) -> int:
    if not last_event_id.strip():
        return 0
    try:
        after = int(last_event_id)
    except ValueError:
        raise InvalidInput(f"Last-Event-ID must be an event id, not {last_event_id!r}") from None
    if not 0 <= after <= most:
        raise InvalidInput(f"Last-Event-ID must be between 0 and {most}, not {after}")
    return after


def _sse(event: Event, name: str, data: dict[str, object]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data), event=name, id=str(event.seq))


def _retry_hint() -> ServerSentEvent:
    """The last word of a draining server: reconnect (with Last-Event-ID) after a moment."""
    return ServerSentEvent(comment="server shutting down; reconnect", retry=RETRY_MS)


def _response(
    stream: AsyncIterator[ServerSentEvent], news: Listener, ping: float
) -> EventSourceResponse:
    return EventSourceResponse(
        stream, ping=ping, shutdown_event=news.shutdown, shutdown_grace_period=DRAIN_GRACE_SECONDS
    )


def _timing(request: Request) -> tuple[float, float]:
    """(poll interval, ping interval) in seconds, as configured in ``create_app``."""
    return request.app.state.sse_poll, request.app.state.sse_ping


@router.get(
    "/documents/{document_id}/events",
    summary="A document's stage changes (SSE); the stream ends after `complete` or `failed`",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **errors(404)},
)
async def document_events(
    document_id: str,
    request: Request,
    shelf: ShelfDep,
    user: UserDep,
    last_event_id: LastEventId = "",
) -> EventSourceResponse:
    after = _after(last_event_id)
    poll, ping = _timing(request)

    def fetch(after: int) -> list[Event]:
        return shelf.events(after, document_id=document_id, user_id=user.id, limit=BATCH)

    def current_status() -> str:
        return shelf.document(document_id, user.id).document.status

    wakeups: Wakeups = request.app.state.wakeups
    news = wakeups.listen(document_id)
    first = await run_in_threadpool(fetch, after)  # before the stream starts: 404 stays a 404

    async def stream() -> AsyncIterator[ServerSentEvent]:
        nonlocal after
        batch = first
        last_stage: str | None = None
        checked_status = False
        while True:
            for event in batch:
                yield _sse(event, "stage", views.stage_event(event))
                after, last_stage = event.seq, event.stage
            if len(batch) < BATCH:  # caught up with the store
                if last_stage in TERMINAL:
                    return
                if last_stage is None and not checked_status:
                    # Nothing after Last-Event-ID: end at once if the document is done
                    # (resumed after its last event, or it came from a source and has none).
                    checked_status = True
                    status = await run_in_threadpool(current_status)
                    batch = await run_in_threadpool(fetch, after)
                    if not batch and status in TERMINAL:
                        return
                    continue
                await news.wait(poll)
            if news.shutdown.is_set():
                yield _retry_hint()
                return
            news.clear()
            try:
                batch = await run_in_threadpool(fetch, after)
            except NotFound:  # deleted (or access revoked) while streaming
                return

    return _response(stream(), news, ping)


@router.get(
    "/events",
    summary="Lifecycle events of all the caller's documents (SSE; never ends by itself)",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **errors(400)},
)
async def lifecycle_events(
    request: Request, shelf: ShelfDep, user: UserDep, last_event_id: LastLifecycleId = ""
) -> EventSourceResponse:
    after = _after(last_event_id, MAX_LIFECYCLE_ID)
    poll, ping = _timing(request)

    def fetch(after: int) -> list[Event]:
        return shelf.events(after, lifecycle=True, user_id=user.id, limit=BATCH)

    wakeups: Wakeups = request.app.state.wakeups
    news = wakeups.listen()
    first: list[Event] | None = await run_in_threadpool(fetch, after)  # a bad id stays a 400

    async def stream() -> AsyncIterator[ServerSentEvent]:
        nonlocal after, first
        while not news.shutdown.is_set():
            if first is None:
                news.clear()
                batch = await run_in_threadpool(fetch, after)
            else:  # read before the stream began, news of since then kept
                batch, first = first, None
            for event in batch:
                yield _sse(event, event.kind, views.lifecycle_event(event))
                after = event.seq
            if len(batch) < BATCH:
                await news.wait(poll)
        yield _retry_hint()

    return _response(stream(), news, ping)
