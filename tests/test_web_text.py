"""The web page shows the text in the file (issue 42), in a real browser: code, Sphinx
roles and Markdown read as their author wrote them; "Section" and "Neighbourhood" show the
section of the hit's heading and the sections beside it, with only the hit tinted and
scrolled into view; no score that means nothing, and a weak result says so.

Skipped (with the reason) when playwright or chromium is missing — a failure under
CI=true (the fixtures are tests/test_web.py's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from docshelf.api import create_app
from docshelf.ingest.worker import WorkerSettings
from docshelf.search.stages import weak
from docshelf.shelf import Shelf
from tests.live_server import serve
from tests.test_readable import FLASK_RST, RUST_MD
from tests.test_web import Site, SlowEmbedder, browser, page, sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

__all__ = ["browser", "page"]  # the fixtures, used by name


def _guide() -> str:
    """Twelve parts of four paragraphs, each paragraph marked ``p<part>n<n>``."""
    parts = ["# Guide\n\nA guide in twelve parts."]
    for i in range(12):
        body = "\n\n".join(
            f"Paragraph {n} of part {i}, mark p{i}n{n}. "
            + "It goes on with more plain words, as a paragraph of a real guide does. " * 6
            for n in range(4)
        )
        parts.append(f"## Part {i}\n\n{body}")
        if i == 9:  # packed into one snippet with part 10's heading and first paragraph
            parts.append("### Aside\n\nA short aside.")
    return "\n\n".join(parts) + "\n"


@pytest.fixture
def site(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "blueprints.rst").write_text(FLASK_RST)
    (folder / "installation.md").write_text(RUST_MD)
    (folder / "guide.md").write_text(_guide())
    embedder = SlowEmbedder()  # (the site the page tests share; a HashEmbedder)
    # a floor for the test's embedder (bag of words: unrelated texts score near 0)
    monkeypatch.setitem(weak.MEANING_FLOOR, embedder.model_id, 0.35)
    shelf = Shelf(isolated_home, embedder=embedder)
    user, token = shelf.create_user("alice")
    shelf.add(folder, user_id=user.id)
    app = create_app(shelf, workers=1, worker_settings=WorkerSettings(poll_seconds=0.05))
    try:
        with serve(app) as url:
            yield Site(url, shelf, user, token, embedder)
    finally:
        shelf.close()


def _first_hit(page: Page, query: str, label: str, mode: str = "hybrid") -> Locator:
    """The first hit of ``query``, once it is the one cited as ``label``."""
    page.get_by_label("Search mode").select_option(mode)
    page.get_by_label("Search your documents").fill(query)
    page.wait_for_function(
        "(label) => document.querySelector('.hit .citation')?.textContent === label",
        arg=label,
    )
    return page.locator(".hit").first.locator(":scope > article")


def test_snippets_show_code_and_roles_as_written(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    hit = _first_hit(page, "blueprint routes", "Blueprints (blueprints.rst#0)", "lexical")
    shown = hit.locator(".snippet").inner_text()
    for written in ("app = Flask(__name__)", "@app.route('/pages/<page>')", ">>> app.url_map"):
        assert written in shown
    assert "A Blueprint records routes; register it with register_blueprint() on" in shown
    assert ":class:" not in shown and ":meth:" not in shown
    assert hit.locator("details.scores summary").inner_text() == "Scores"  # no number

    hit = _first_hit(page, "updating rustup", "Installation (installation.md#0)", "lexical")
    shown = hit.locator(".snippet").inner_text()
    assert "Once Rust is installed via rustup, updating is easy:" in shown
    assert 'println!("Hello, <world>!"); // __not__ emphasis' in shown
    for markup in ("<!--", "Old headings", "<a id=", "<span", "`", "##"):
        assert markup not in shown


def _expanded(hit: Locator, name: str) -> Locator:
    hit.get_by_role("button", name=name).click()
    panel = hit.locator(".context")
    panel.locator(".chunk.current").wait_for()
    return panel


def test_section_and_neighbourhood_tint_only_the_hit_and_show_it(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    [found] = site.shelf.search("p5n3", mode="lexical", limit=1).hits
    assert found.chunk.text.rstrip().endswith("does.") and found.chunk.index > 1
    hit = _first_hit(page, "p5n3", found.citation.label, "lexical")
    assert hit.locator(".crumbs").inner_text() == "Guide \u203a Part 5"
    snippet = hit.locator(".snippet").inner_text()

    panel = _expanded(hit, "Section")
    text = panel.inner_text()
    assert "Part 5" in text and "Part 4" not in text and "Part 6" not in text
    assert panel.locator(".chunk.current").count() == 1  # only the hit is tinted
    current = panel.locator(".chunk.current")
    assert current.inner_text() == snippet
    box, shown = panel.bounding_box(), current.bounding_box()
    assert box is not None and shown is not None
    assert panel.evaluate("p => p.scrollHeight > p.clientHeight")  # more than fits
    assert box["y"] <= shown["y"] < box["y"] + box["height"]  # the hit is in view

    panel = _expanded(hit, "Neighbourhood")
    text = panel.inner_text()
    for heading in ("Part 4", "Part 5", "Part 6"):
        assert heading in text
    assert "Part 3" not in text and "Part 7" not in text
    assert panel.locator(".chunk.current").count() == 1
    box, shown = panel.bounding_box(), panel.locator(".chunk.current").bounding_box()
    assert box is not None and shown is not None
    assert box["y"] <= shown["y"] < box["y"] + box["height"]


def test_a_hit_cited_under_an_inner_heading_expands_that_headings_section(
    page: Page, site: Site
) -> None:
    sign_in(page, site.token)
    [found] = site.shelf.search("p10n0", mode="lexical", limit=1).hits
    assert found.chunk.heading_path[-1] == "Aside" and found.citation.heading_path[-1] == "Part 10"
    hit = _first_hit(page, "p10n0", found.citation.label, "lexical")
    assert hit.locator(".crumbs").inner_text() == "Guide \u203a Part 10"
    text = _expanded(hit, "Section").inner_text()
    assert "Part 10" in text and "p10n3" in text  # the section it is cited under, whole
    assert "Part 9" not in text  # not the section of the heading the snippet starts under


def test_a_nonsense_query_says_nothing_matches_well(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_label("Search your documents").fill("xqzv blorf wibble")
    page.locator("#search-status .notice").wait_for()
    hit = page.locator(".hit").first.locator(":scope > article")
    status = page.locator("#search-status").inner_text()
    assert "No close match: no hit holds half of your words" in status
    assert "0.850" not in page.locator("#results").inner_text()
    assert hit.locator("details.scores summary").inner_text() == "Scores"
