"""Health, readiness and metrics: the routes without auth (with the web page, ``pages``)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from docshelf.api.deps import ShelfDep
from docshelf.model import Stage
from docshelf.worker import WorkerPool

router = APIRouter()


@router.get("/healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: the store answers and the worker pool (if any) is alive",
    responses={503: {"description": "Not ready; the body says why"}},
)
def readyz(request: Request, shelf: ShelfDep) -> JSONResponse:
    problems: list[str] = []
    try:
        shelf.store.get_meta("generation")
    except Exception as exc:  # any failure means not ready; say which
        problems.append(f"store: {exc}")
    pool: WorkerPool | None = request.app.state.pool
    if request.app.state.workers and (pool is None or not pool.alive):
        problems.append("workers: the ingest worker pool is not running")
    if problems:
        return JSONResponse({"status": "unavailable", "problems": problems}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(shelf: ShelfDep) -> Response:
    shelf.metrics.queue(shelf.store.job_counts())
    stats = shelf.store.stats()
    coverage = stats.snippets_with_vectors / stats.snippets if stats.snippets else 1.0
    unfinished = [s.value for s in Stage if not s.terminal]
    shelf.metrics.library(shelf.store.oldest_unfinished_jobs(), coverage, unfinished, time.time())
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
