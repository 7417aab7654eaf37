"""``/docs`` loads nothing from elsewhere and says so in its Content-Security-Policy;
in a real browser, Swagger UI renders the API from this origin alone (issue 17)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app
from docshelf.shelf import Shelf
from tests.live_server import serve
from tests.optional import require_module, require_program
from tests.test_web import CHROMIUM_ARGS

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture
def client(shelf: Shelf) -> Iterator[TestClient]:
    with TestClient(create_app(shelf)) as c:
        yield c


def test_docs_page_refers_to_this_origin_only(client: TestClient) -> None:
    r = client.get("/docs")
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-eval" not in csp and "script-src 'self' 'unsafe-inline'" not in csp
    assert not re.search(r"(src|href)=\"(https?:)?//", r.text), "an external asset"
    assert "<script>" not in r.text  # no inline script: the CSP would block it
    for url in re.findall(r"(?:src|href)=\"(/[^\"]+)\"", r.text):
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["x-content-type-options"] == "nosniff"
    assert client.get("/openapi.json").json()["info"]["title"] == "docshelf"
    assert client.get("/redoc").status_code == 404  # FastAPI's CDN page is off


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = require_program("chromium", "apt-get install chromium")
    sync_api = require_module("playwright.sync_api", "pip install playwright; no browser download")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def test_swagger_ui_renders_from_this_origin_under_its_csp(
    browser: Browser, isolated_home: Path
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf, serve(create_app(shelf)) as url:
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(15_000)
        requests: list[str] = []
        problems: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{url}/docs")
        page.wait_for_selector(".swagger-ui .info .title")
        assert "docshelf" in page.inner_text(".swagger-ui .info .title")
        page.wait_for_selector('.opblock-summary-path[data-path="/v1/search"]')
        context.close()
    assert requests and all(r.startswith(url) for r in requests), requests
    assert not problems, problems
