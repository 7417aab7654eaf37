"""What the OpenAPI description says about errors, so it matches what the API answers.

Every error leaves the API as ``{"error": {"code", "message"}}`` (``deps``); each
route declares the statuses it can answer with that body (``errors(...)``), and
FastAPI's default 422 is dropped from the description: the API answers invalid
requests with 400, never 422.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field

__all__ = ["ErrorBody", "errors", "install"]


class ErrorDetail(BaseModel):
    code: str = Field(description="A stable machine-readable name, e.g. not_found")
    message: str = Field(description="What went wrong and, where it helps, how to fix it")


class ErrorBody(BaseModel):
    error: ErrorDetail


_WHY = {
    400: "Invalid request: a parameter or the body breaks its constraints",
    401: "No bearer token, or an unknown or revoked one",
    403: "Known caller, not allowed (admins only)",
    404: "No such id for this caller (another user's ids are answered the same)",
    405: "Method not allowed here; the Allow header lists those that are",
    409: "The request contradicts the library's state",
    410: "The file a folder document came from changed or is gone",
    413: "Over the upload size limit",
    415: "Unsupported file type",
    503: "Unavailable: the store is busy or read-only, or a backend is missing",
    507: "No space left to store the write; it works again once space is freed",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route or router: these statuses, each with the error body."""
    return {status: {"model": ErrorBody, "description": _WHY[status]} for status in statuses}


def install(app: FastAPI) -> None:
    """Build the description without FastAPI's 422 (and its schemas)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            routes=app.routes,
        )
        for item in schema.get("paths", {}).values():
            for operation in item.values():
                operation.get("responses", {}).pop("422", None)
        components = schema.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
