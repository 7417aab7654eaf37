"""Health, readiness and metrics: health and readiness without auth (with the web page,
``pages``); metrics for an operator (``DOCSHELF_METRICS_TOKEN`` or an admin's token).
The pipeline's counters move with every document processed, so an open ``/metrics``
would tell a user whether the bytes they uploaded were already in the library."""

from __future__ import annotations

import hmac
import os
import tempfile
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field

from docshelf.api.deps import ShelfDep, bearer, current_user
from docshelf.api.schema import errors
from docshelf.durable import private_dir
from docshelf.errors import Forbidden, from_os_error
from docshelf.ingest.worker import WorkerPool
from docshelf.ingest.worker_process import WorkerProcess
from docshelf.shelf import Shelf

router = APIRouter()


class Readiness(BaseModel):
    status: str = Field(description="ready | unavailable")
    problems: list[str] = Field(default_factory=list)


PROBE_BYTES = 64 * 1024  # written and fsynced, then dropped: can uploads be written?


def _write_problems(shelf: Shelf) -> list[str]:
    """Why writes would fail in the home (where the SQLite database and, by default, the
    blob store live): full or read-only."""
    home = shelf.settings.home
    try:
        private_dir(home)
        with tempfile.TemporaryFile(dir=home, prefix="readyz-") as fh:
            fh.write(bytes(PROBE_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        ours = from_os_error(exc, str(home))
        return [f"storage: {ours.message if ours else exc}"]
    return []


@router.get("/healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: the store answers, the disk takes writes, the worker pool is alive",
    responses={
        200: {"model": Readiness},
        503: {"model": Readiness, "description": "Not ready; `problems` says why"},
    },
)
def readyz(request: Request, shelf: ShelfDep) -> JSONResponse:
    problems: list[str] = []
    try:
        shelf.generation()
    except Exception as exc:  # any failure means not ready; say which
        problems.append(f"store: {exc}")
    problems += _write_problems(shelf)
    pool: WorkerPool | WorkerProcess | None = request.app.state.pool
    if request.app.state.workers and (pool is None or not pool.alive):
        problems.append("workers: the ingest worker pool is not running")
    if problems:
        return JSONResponse({"status": "unavailable", "problems": problems}, status_code=503)
    return JSONResponse({"status": "ready"})


def metrics_token_matches(expected: str | None, given: str | None) -> bool:
    """Whether a bearer token is the metrics token (compared in constant time)."""
    if expected is None or not given:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


async def operator(
    request: Request,
    shelf: ShelfDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """The metrics token lets a scraper in; any other caller must be an admin."""
    given = credentials.credentials if credentials is not None else None
    if metrics_token_matches(shelf.settings.metrics_token, given):
        return
    user = await current_user(request, credentials)
    if not user.is_admin:
        raise Forbidden(
            "/metrics is for operators: send DOCSHELF_METRICS_TOKEN or an admin's token"
        )


@router.get(
    "/metrics",
    summary="Prometheus metrics (DOCSHELF_METRICS_TOKEN or an admin's token)",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}},
        **errors(401, 403, 503),
    },
    dependencies=[Depends(operator)],
)
def metrics(shelf: ShelfDep) -> Response:
    shelf.service.measure()
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
