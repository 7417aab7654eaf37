"""The HTTP API (SPEC §9): a thin face over :class:`~docshelf.shelf.Shelf`.

    app = create_app(Shelf(), workers=2)      # then serve it with uvicorn

Routes live under ``/v1`` (OpenAPI docs at ``/docs``) and need a bearer token,
except ``/healthz``, ``/readyz``, ``/metrics`` and the web page (``/``,
``/static``). Modules: ``deps`` (auth and the error mapping), ``uploads``
(streaming multipart), ``routes`` (documents, search, context, sources),
``reader`` (a document opened at a citation, its bytes, folder failures),
``events`` (SSE), ``ops`` (health, metrics), ``pages`` (the web page), ``docs_page``
(``/docs``, Swagger UI served locally), ``mcp``
(the MCP server at ``/mcp``, behind the same tokens).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

from docshelf import __version__
from docshelf.api import docs_page, events, notebooks, ops, pages, reader, routes, schema, uploads
from docshelf.api.deps import install_error_handlers, known_query, token_checks
from docshelf.api.mcp import PATH as MCP_PATH
from docshelf.api.mcp import McpEndpoint
from docshelf.api.renders import RenderGate
from docshelf.api.schema import errors
from docshelf.api.wakeups import Wakeups
from docshelf.ingest.worker import WorkerPool, WorkerSettings
from docshelf.ingest.worker_process import NICE, WorkerProcess
from docshelf.shelf import Shelf

__all__ = ["app_from_env", "create_app"]


def create_app(
    shelf: Shelf,
    *,
    workers: int = 0,
    worker_process: bool = False,
    worker_nice: int = NICE,
    worker_settings: WorkerSettings | None = None,
    sse_poll: float | None = None,
    sse_ping: float = 10.0,
    close_shelf: bool = False,
) -> FastAPI:
    """The API over ``shelf``. With ``workers > 0`` the app runs an ingest worker pool
    for its lifetime: threads of this process, or with ``worker_process`` a child
    process (``docshelf worker`` on the shelf's home and this environment, so the
    request path never waits for the model or the chunker on the GIL);
    ``close_shelf`` closes the shelf on shutdown (for app factories).
    SSE streams wake on the shelf's broadcast and read the store at least every
    ``sse_poll`` seconds (default ``DOCSHELF_SSE_POLL_SECONDS``)."""
    mcp_endpoint = McpEndpoint(shelf)
    wakeups = Wakeups()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if workers > 0 and worker_process:
            app.state.pool = shelf.service.worker_process(workers, nice=worker_nice)
            app.state.pool.start()
        elif workers > 0:
            app.state.pool = WorkerPool(shelf, workers, worker_settings)
            app.state.pool.start()
        # the query model (embed/lean.py) made ready beside the first requests, which
        # embed on the ingest model until it is; an export runs in a child process
        threading.Thread(target=shelf.prepare_query_model, name="query-model", daemon=True).start()
        try:
            async with shelf.service.listening(wakeups.notify), mcp_endpoint.running():
                yield
        finally:
            pool: WorkerPool | WorkerProcess | None = app.state.pool
            if pool is not None:
                await run_in_threadpool(pool.stop, shelf.settings.drain_seconds)
                app.state.pool = None
            if close_shelf:
                shelf.close()

    app = FastAPI(
        title="docshelf",
        version=__version__,
        summary="Your documents, searchable and cited: uploads, search, context, live progress.",
        lifespan=lifespan,
        docs_url=None,  # docs_page serves /docs without a CDN
        redoc_url=None,
    )
    app.state.shelf = shelf
    app.state.workers = workers
    app.state.pool = None
    app.state.sse_poll = shelf.settings.sse_poll_seconds if sse_poll is None else sse_poll
    app.state.wakeups = wakeups
    app.state.sse_ping = sse_ping
    app.state.upload_commits = uploads.upload_commits(shelf)
    app.state.token_checks = token_checks(shelf)
    app.state.renders = RenderGate()
    install_error_handlers(app)
    schema.install(app)

    # every route there declares `UserDep` (a test checks), so any can answer 400/401/503
    v1 = APIRouter(
        prefix="/v1", responses=errors(400, 401, 503), dependencies=[Depends(known_query)]
    )
    v1.include_router(uploads.router, tags=["documents"])
    v1.include_router(routes.router, tags=["documents"])
    v1.include_router(notebooks.router, tags=["notebooks"])
    v1.include_router(reader.router, tags=["documents"])
    v1.include_router(events.router, tags=["events"])
    app.include_router(v1)
    app.include_router(ops.router, tags=["operations"])
    pages.install(app)
    docs_page.install(app)
    # An ASGI endpoint (not a FastAPI route): the MCP transport reads the request itself.
    app.router.routes.append(
        Route(MCP_PATH, mcp_endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )
    return app


def app_from_env() -> FastAPI:
    """An app factory for ``uvicorn --factory docshelf.api:app_from_env``: the shelf and
    the number of ingest workers come from the environment (DOCSHELF_*); the workers
    run in a child process, as ``docshelf serve`` runs them."""
    shelf = Shelf()
    return create_app(shelf, workers=shelf.settings.workers, worker_process=True, close_shelf=True)
