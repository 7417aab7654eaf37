"""``/docs``: the OpenAPI description in Swagger UI, with nothing loaded from elsewhere.

FastAPI's own page pulls Swagger UI from a CDN and runs an inline script; this one
serves Swagger UI's files from the ``fastapi-offline`` package (which ships them,
a Swagger UI 5 that reads OpenAPI 3.1), starts it from a script of this origin, and
sends a Content-Security-Policy that allows nothing else: scripts, requests and
images from this origin only (styles may be inline: Swagger UI sets some).
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, Response

from docshelf.api.pages import StaticWithHeaders
from docshelf.web import STATIC_HEADERS

__all__ = ["ASSETS", "DOCS_CSP", "install"]

ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS_URL = "/docs/assets"

DOCS_CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
DOCS_HEADERS = {
    **STATIC_HEADERS,
    "Content-Security-Policy": DOCS_CSP,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>docshelf API</title>
<link rel="icon" href="{ASSETS_URL}/favicon.png">
<link rel="stylesheet" href="{ASSETS_URL}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{ASSETS_URL}/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
"""

_START = """SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
"""

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def docs() -> HTMLResponse:
    return HTMLResponse(_PAGE, headers=DOCS_HEADERS)


@router.get("/docs/start.js")
def start() -> Response:
    return Response(_START, media_type="text/javascript; charset=utf-8", headers=DOCS_HEADERS)


def install(app: FastAPI) -> None:
    """Serve ``/docs`` (create the app with ``docs_url=None, redoc_url=None``)."""
    app.include_router(router)
    app.mount(ASSETS_URL, StaticWithHeaders(directory=ASSETS), name="docs-assets")
