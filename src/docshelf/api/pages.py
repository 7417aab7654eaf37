"""The web page: ``/`` and its files under ``/static`` — open routes, like ``/docs``;
the page signs in with a token and calls ``/v1`` like any other client."""

from __future__ import annotations

import os

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from starlette.responses import Response
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import Scope

from docshelf.web import INDEX, PAGE_HEADERS, STATIC_DIR, STATIC_HEADERS

__all__ = ["StaticWithHeaders", "install"]

router = APIRouter()


@router.get("/", response_class=FileResponse, include_in_schema=False)
def index() -> FileResponse:
    return FileResponse(INDEX, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@router.post("/", include_in_schema=False)
def index_posted() -> RedirectResponse:
    """The sign-in form sent before its script loaded, or with scripts off: it posts (so
    no token is ever in an address, a history or a log) and its field has no name (so
    none is in the body either). Nothing is read; the page is loaded again."""
    return RedirectResponse("/", status_code=303)


class StaticWithHeaders(StaticFiles):
    """StaticFiles with the page's caching and no-sniffing headers."""

    def file_response(
        self,
        full_path: PathLike,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(STATIC_HEADERS)
        return response


def install(app: FastAPI) -> None:
    app.include_router(router, tags=["web page"])
    app.mount("/static", StaticWithHeaders(directory=STATIC_DIR), name="static")
