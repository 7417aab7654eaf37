"""Health, readiness and metrics: the routes without auth (with the web page, ``pages``)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field

from docshelf.api.deps import ShelfDep
from docshelf.errors import from_os_error
from docshelf.ingest.worker import WorkerPool
from docshelf.ingest.worker_process import WorkerProcess
from docshelf.model import Stage
from docshelf.shelf import Shelf

router = APIRouter()


class Readiness(BaseModel):
    status: str = Field(description="ready | unavailable")
    problems: list[str] = Field(default_factory=list)


PROBE_BYTES = 64 * 1024  # written and fsynced, then dropped: can uploads be written?


def _write_problems(shelf: Shelf) -> list[str]:
    """Why writes would fail in the folders docshelf writes to (the home, where the
    SQLite database lives, and the blob store's temporary folder): full or read-only."""
    folders = {shelf.settings.home}
    tmp = getattr(shelf.blobs, "tmp", None)  # the local blob store's temporary folder
    if isinstance(tmp, Path):
        folders.add(tmp)
    problems = []
    for folder in sorted(folders):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder, prefix="readyz-") as fh:
                fh.write(bytes(PROBE_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            ours = from_os_error(exc, str(folder))
            problems.append(f"storage: {ours.message if ours else exc}")
    return problems


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
        shelf.store.get_meta("generation")
    except Exception as exc:  # any failure means not ready; say which
        problems.append(f"store: {exc}")
    problems += _write_problems(shelf)
    pool: WorkerPool | WorkerProcess | None = request.app.state.pool
    if request.app.state.workers and (pool is None or not pool.alive):
        problems.append("workers: the ingest worker pool is not running")
    if problems:
        return JSONResponse({"status": "unavailable", "problems": problems}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
def metrics(shelf: ShelfDep) -> Response:
    shelf.metrics.queue(shelf.store.job_counts())
    stats = shelf.store.stats()
    coverage = stats.snippets_with_vectors / stats.snippets if stats.snippets else 1.0
    unfinished = [s.value for s in Stage if not s.terminal]
    shelf.metrics.library(shelf.store.oldest_unfinished_jobs(), coverage, unfinished, time.time())
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
