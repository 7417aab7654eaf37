"""``/mcp``: the MCP server over streamable HTTP, behind the API's bearer tokens.

Every request is authenticated like ``/v1`` (``Authorization: Bearer <token>``;
401 with the API's error body otherwise), then handed to the MCP SDK's
transport with the caller's user id in the ASGI scope, where the tools read it
(``http_identity``): every call is scoped to the caller. The transport runs
*stateless* with JSON responses — each POST is answered on its own, so no MCP
session outlives the request that carries the token, and any process of a
scaled-out deployment can answer. The SDK's DNS-rebinding check (Host/Origin
allow-lists) is off: the bearer token, which a browser never attaches by
itself, is the protection, and ``serve --host`` may be any name.

The SDK is the optional ``mcp`` extra: without it ``/mcp`` answers 503 naming it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from docshelf.api.deps import error_response
from docshelf.shelf import Shelf

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

PATH = "/mcp"
USER_KEY = "docshelf.user_id"  # the authenticated caller, in the ASGI scope
MISSING_EXTRA = "The MCP endpoint needs the `mcp` extra: pip install 'docshelf[mcp]'"


def http_identity(ctx: Context) -> str:
    """The caller of a tool over HTTP: the user the endpoint authenticated."""
    from mcp.server.mcpserver.exceptions import ToolError

    request = ctx.request_context.request
    scope: dict[str, Any] = getattr(request, "scope", None) or {}
    user_id = scope.get(USER_KEY)
    if not isinstance(user_id, str):  # fail closed: never act as the local admin over HTTP
        raise ToolError("unauthorized: no authenticated caller for this request")
    return user_id


class McpEndpoint:
    """The ASGI app at ``/mcp``. ``running()`` (in the app's lifespan) starts a fresh
    MCP server and session manager each time, so one app can be started again."""

    def __init__(self, shelf: Shelf) -> None:
        self.shelf = shelf
        self._manager: StreamableHTTPSessionManager | None = None
        self.unavailable: str | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        try:
            from mcp.server.transport_security import TransportSecuritySettings

            from docshelf.integrations.mcp_server import build_server
        except ImportError:
            self.unavailable = MISSING_EXTRA
            yield
            return
        server = build_server(self.shelf, http_identity)
        server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        manager = self._manager
        if manager is None:
            message = self.unavailable or "The MCP endpoint is not running (app not started)"
            await error_response(503, "unavailable", message)(scope, receive, send)
            return
        user_id = await self._authenticate(Headers(scope=scope).get("authorization", ""))
        if user_id is None:
            await error_response(
                401,
                "unauthorized",
                "Send `Authorization: Bearer <token>`; `docshelf users create` makes one",
            )(scope, receive, send)
            return
        scope[USER_KEY] = user_id
        await manager.handle_request(scope, receive, send)

    async def _authenticate(self, authorization: str) -> str | None:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        user = await run_in_threadpool(self.shelf.authenticate, token.strip())
        return user.id if user is not None else None
