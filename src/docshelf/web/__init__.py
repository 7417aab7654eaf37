"""The web page served at ``/``: static files, no build step, no external requests.

``static/`` holds ``index.html``, the stylesheet and plain ES modules
(``app.js`` imports the rest); the browser loads them as they are. Everything a
document says is put on the page as text (``textContent``), never as markup,
and the page's Content-Security-Policy allows scripts, styles and requests from
this origin only — so a note containing ``<script>`` is shown, not run.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["INDEX", "PAGE_HEADERS", "STATIC_DIR", "STATIC_HEADERS"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
INDEX = STATIC_DIR / "index.html"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",  # blob: a PDF page fetched with the token
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
# Files are revalidated on every load (ETag), so an upgraded server is seen at once.
STATIC_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}
PAGE_HEADERS = {
    **STATIC_HEADERS,
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
