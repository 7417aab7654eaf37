"""What every route shares: the shelf, the caller, and the mapping of docshelf's
exception tree to HTTP statuses with one JSON error body ``{"error": {code, message}}``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from docshelf.api.batching import Batched
from docshelf.api.reading import FileChanged
from docshelf.errors import (
    Busy,
    Conflict,
    DocshelfError,
    Forbidden,
    InvalidInput,
    NotFound,
    StorageFull,
    TooLarge,
    Unauthorized,
    Unavailable,
    UnsupportedType,
)
from docshelf.model import User
from docshelf.shelf import Shelf

# Most specific first: TooLarge and UnsupportedType are InvalidInput too, StorageFull
# is Unavailable (507 Insufficient Storage; a read-only disk stays 503).
_STATUS: tuple[tuple[type[DocshelfError], int], ...] = (
    (StorageFull, 507),
    (Unauthorized, 401),
    (Forbidden, 403),
    (TooLarge, 413),
    (UnsupportedType, 415),
    (FileChanged, 410),
    (NotFound, 404),
    (InvalidInput, 400),
    (Conflict, 409),
    (Unavailable, 503),
)
_CODES = {400: "invalid_input", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}


def status_for(exc: DocshelfError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


def error_response(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves the API in the same shape, whoever raised it."""

    async def docshelf_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DocshelfError)
        response = error_response(status_for(exc), exc.code, exc.message)
        if isinstance(exc, Busy):
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = "; ".join(_problem(e) for e in exc.errors())
        return error_response(400, "invalid_input", problems or "invalid request")

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _CODES.get(exc.status_code, "error")
        response = error_response(exc.status_code, code, str(exc.detail))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:  # every method of the path, not only the first route's
            response.headers["Allow"] = ", ".join(_allowed_methods(request))
        return response

    app.add_exception_handler(DocshelfError, docshelf_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)


def _problem(error: Any) -> str:
    """One validation error as ``where: what``: a value check's own message (``filters.type:
    Unknown file type 'x'; file types are …``), never pydantic's "Value error, " wrapping."""
    loc = [str(p) for p in error.get("loc", ())]
    where = ".".join(loc[1:] if len(loc) > 1 and loc[0] in ("body", "query", "path") else loc)
    cause = (error.get("ctx") or {}).get("error")
    what = str(cause) if isinstance(cause, Exception) else error.get("msg", "invalid")
    return f"{where}: {what}" if where else what


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> list[str]:
    """The methods some route takes at this path (for a 405's ``Allow``)."""
    allowed = []
    for method in _METHODS:
        probe = {**request.scope, "method": method}
        if any(route.matches(probe)[0] is Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


async def get_shelf(request: Request) -> Shelf:
    # async, as known_query: no I/O, so no thread hop (a sync dependency is run in the
    # threadpool, and each hop is a GIL hand-over on every request)
    shelf: Shelf = request.app.state.shelf
    return shelf


bearer = HTTPBearer(auto_error=False, description="A token from `docshelf users create NAME`")


def token_checks(shelf: Shelf) -> Batched[str, User | None]:
    """Bearer tokens looked up in the store on the threadpool (never on the event loop: a
    worker's transaction may hold the store), the tokens of requests that arrive
    together in one hop (``create_app`` keeps one)."""
    return Batched(shelf.authenticate_many)


async def current_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> User:
    """The caller, from ``Authorization: Bearer <token>``: checked on every request (a
    revoked token stops working at once)."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized(
            "Send `Authorization: Bearer <token>`; `docshelf users create` makes one"
        )
    checks: Batched[str, User | None] = request.app.state.token_checks
    user = await checks(credentials.credentials)
    if user is None:
        raise Unauthorized("The bearer token is unknown or revoked")
    return user


def _query_names(dependant: Any) -> set[str]:
    """The query parameters a route (a FastAPI ``Dependant``) and its dependencies take."""
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


async def known_query(request: Request) -> None:
    """Refuse query parameters the route does not declare (a typo such as ``?limt=5``
    would otherwise be ignored without a word)."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    unknown = sorted(set(request.query_params) - _query_names(dependant))
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        raise InvalidInput(f"Unknown query parameter {names}; see /docs for this route's")


ShelfDep = Annotated[Shelf, Depends(get_shelf)]
UserDep = Annotated[User, Depends(current_user)]
