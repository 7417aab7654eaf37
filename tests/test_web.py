"""The web page in a real browser: Debian's chromium driven by Playwright, against the
API served by uvicorn in a thread with an in-process worker pool.

Skipped (with the reason) when playwright or chromium is missing — a failure under
CI=true. Set DOCSHELF_TEST_SCREENSHOTS=docs to refresh the screenshots in docs/.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import numpy as np
import numpy.typing as npt
import pytest

from docshelf.api import create_app
from docshelf.ingest.worker import WorkerSettings
from docshelf.model import User
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder
from tests.fixtures_formats import (
    PAPER_BALLOTS,
    PAPER_QUORUM,
    PAPER_QUORUM_GOES_ON,
    column_paper_pdf,
    encrypted_pdf,
    paged_pdf,
)
from tests.live_server import serve
from tests.optional import require_module, require_program

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, FilePayload, Locator, Page, Route

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",  # containers have a small /dev/shm
]
SCREENSHOTS = os.environ.get("DOCSHELF_TEST_SCREENSHOTS")
YEAR_2024 = 1_710_000_000  # 2024-03-09 UTC
HANDBOOK = "# Handbook\n\n" + "".join(
    f"## Part {i}\n\nPart {i} explains topic{i} in detail. {FILLER}\n\n" for i in range(8)
)
BAD_UTF8 = b"# Broken\n\nThis note is not UTF-8: \xff\xfe\xfa.\n"
MEETING = "# Meeting\n\n" + "".join(
    f"## Item {i}\n\nItem {i} was agreed after a short talk. {FILLER}\n\n" for i in range(4)
)
TRUNCATED_PDF = paged_pdf([["A paper cut off halfway through."]])[:400]
XSS_NOTE = (
    "---\ntitle: Evil <img src=x onerror=\"window.__xss='title'\"> note\n---\n"
    "# Hostile leader\n\n"
    "A leader note with <script>window.__xss = 'script'</script> inside, and "
    "<img src=x onerror=\"window.__xss='img'\"> too, and <b>bold</b> words. " + FILLER + "\n"
)


class SlowEmbedder(HashEmbedder):
    """Embedding takes a moment, so the page sees the stages go by. While ``down`` it
    fails as an embedding service that cannot be reached would (a failure of the moment:
    a retry can help once it is back); while ``gate`` is clear it waits."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.gate = threading.Event()
        self.gate.set()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        time.sleep(0.06)
        if not self.gate.wait(timeout=30):
            raise TimeoutError("the test never opened the gate")
        if self.down:
            raise ConnectionError("the embedding service is unavailable")
        return super().embed(texts)


@dataclass
class Site:
    url: str
    shelf: Shelf
    user: User
    token: str
    embedder: SlowEmbedder

    def upload(self, name: str, data: bytes) -> str:
        r = httpx.post(
            f"{self.url}/v1/documents",
            files={"file": (name, data)},
            headers={"Authorization": f"Bearer {self.token}"},
        )
        assert r.status_code == 202, r.text
        return str(r.json()["document_id"])

    def wait_for(self, document_id: str, status: str, seconds: float = 15) -> None:
        deadline = time.monotonic() + seconds
        while self.shelf.document(document_id).document.status != status:
            assert time.monotonic() < deadline, f"{document_id} never became {status}"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = require_program("chromium", "apt-get install chromium")
    sync_api = require_module("playwright.sync_api", "pip install playwright; no browser download")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def site(isolated_home: Path, notes: Path) -> Iterator[Site]:
    embedder = SlowEmbedder()
    shelf = Shelf(isolated_home, embedder=embedder)
    user, token = shelf.create_user("alice")
    shelf.add(notes, user_id=user.id)
    app = create_app(
        shelf,
        workers=1,
        worker_settings=WorkerSettings(poll_seconds=0.05, embed_batch=2, backoff_base=0.05),
        sse_poll=0.05,
    )
    try:
        with serve(app) as url:
            yield Site(url, shelf, user, token, embedder)
    finally:
        shelf.close()


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", on_dialog)
    page.goto(site.url)
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not dialogs, f"the page opened dialogs (script ran): {dialogs}"


def sign_in(page: Page, token: str) -> None:
    page.get_by_label("Access token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("navigation", name="Views").wait_for()


def wait_for_citations(page: Page, labels: list[str]) -> None:
    """Until the results are exactly these hits (in any order)."""
    page.wait_for_function(
        """(labels) => {
            const shown = [...document.querySelectorAll('.hit .citation')].map(a => a.textContent);
            return shown.length === labels.length && labels.every(l => shown.includes(l));
        }""",
        arg=labels,
    )


def screenshot(page: Page, name: str) -> None:
    if SCREENSHOTS:
        path = Path(SCREENSHOTS) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), animations="disabled")


def test_sign_in_refuses_a_bad_token_and_keeps_a_good_one_for_every_tab(
    page: Page, site: Site
) -> None:
    page.get_by_label("Access token").fill("dsk_not-a-token")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("alert").filter(has_text="unknown or revoked").wait_for()
    assert page.get_by_role("navigation", name="Views").is_hidden()

    # While the server answers, the button is disabled and the form says what it waits for.
    page.evaluate(
        """() => {
            window.__seen = [];
            const button = document.querySelector('#signin-form button[type=submit]');
            const status = document.getElementById('signin-status');
            new MutationObserver(() => window.__seen.push([button.disabled, status.textContent]))
                .observe(document.getElementById('signin-form'),
                         {subtree: true, childList: true, attributes: true, characterData: true});
        }"""
    )
    sign_in(page, site.token)
    assert [True, "Signing in…"] in page.evaluate("window.__seen")
    assert page.locator("#search-status").inner_text().startswith("Type to search your 3")
    assert page.evaluate("localStorage.getItem('docshelf.token')") == site.token
    page.reload()  # the token survives a reload
    page.get_by_role("navigation", name="Views").wait_for()

    # A citation opened in a new tab of the same browser is signed in too...
    other = page.context.new_page()
    other.goto(f"{site.url}/#library")
    other.get_by_role("navigation", name="Views").wait_for()
    assert not other.locator("#library-view").is_hidden()

    # ... and signing out in one tab signs out the other.
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Access token").wait_for()
    assert page.evaluate("localStorage.getItem('docshelf.token')") is None
    other.get_by_role("alert").filter(has_text="signed out in another tab").wait_for()
    assert other.get_by_role("navigation", name="Views").is_hidden()


@pytest.mark.parametrize("scripts", ["off", "not loaded yet"])
def test_the_sign_in_form_sent_without_its_script_keeps_the_token_out_of_every_address(
    browser: Browser, site: Site, scripts: str
) -> None:
    context = browser.new_context(java_script_enabled=scripts != "off")
    page = context.new_page()
    page.set_default_timeout(10_000)
    if scripts == "not loaded yet":  # the page's script never arrives
        page.route("**/static/app.js", lambda route: route.abort())
    sent: list[tuple[str, str]] = []
    page.on("request", lambda r: sent.append((r.url, r.post_data or "")))
    page.goto(site.url)
    page.get_by_label("Access token").fill(site.token)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Access token").wait_for()  # the form again, empty
    assert page.url == f"{site.url}/"
    assert sent and all(site.token not in url and site.token not in body for url, body in sent)
    assert all("token=" not in url for url, _ in sent), sent
    context.close()


def test_highlights_skip_stopwords_and_parts_of_words(page: Page, site: Site) -> None:
    # (the text highlighted is the server's display text: tests/test_web_text.py)
    result = page.evaluate(
        r"""async () => {
            const dom = await import('/static/dom.js');
            const marks = (text, query) => [...dom.highlighted(text, dom.queryTerms(query))
                .childNodes].filter(n => n.nodeName === 'MARK').map(n => n.textContent);
            return {
                terms: dom.queryTerms('how do the docs tag:baking explain Elect'),
                docs: marks('Where do the docs go? Docs, docstrings.', 'do docs'),
                elect: marks('The election elects an elector; select is not it.', 'elect'),
            };
        }"""
    )
    assert result["terms"] == ["explain", "elect", "docs"]
    assert result["docs"] == ["docs", "Docs"]  # never "do", never inside "docstrings"
    assert result["elect"] == ["election", "elects", "elector"]  # not inside "select"


def test_search_highlights_cites_and_expands_context(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_label("Search your documents").fill("leader election")  # no Enter: instant
    group = page.locator(".hit").first
    hit = group.locator(":scope > article")  # the best hit, not the ones folded under it
    hit.wait_for()
    assert hit.locator(".citation").inner_text() == "Raft (projects/raft.md#1)"
    assert hit.locator(".crumbs").inner_text() == "Raft \u203a Leader election"
    assert hit.locator(".snippet").inner_text().startswith("Leader election")  # no "##"
    marks = [m.lower() for m in hit.locator(".snippet mark").all_inner_texts()]
    assert {"leader", "election"} <= set(marks)
    # One entry per document: Raft's other snippets fold under its best one.
    titles = page.locator(".hit .citation").all_inner_texts()
    assert len(titles) == len({t.split(" (")[0] for t in titles}), titles
    more = group.locator(".more-toggle")
    assert more.inner_text() == "2 more in this document"
    assert group.locator(".subhit").count() == 0
    more.click()
    assert sorted(group.locator(".subhit .citation").all_inner_texts()) == [
        "Raft (projects/raft.md#0)",
        "Raft (projects/raft.md#2)",
    ]
    assert "hits in" in page.locator("#search-status").inner_text()
    more.click()
    assert group.locator(".subhit").count() == 0

    scores = hit.locator("details.scores")
    assert not scores.locator("dl").is_visible()
    scores.locator("summary").click()
    assert "Lexical" in scores.locator("dl").inner_text()

    section = hit.get_by_role("button", name="Section")
    section.click()
    panel = hit.locator(".context")
    panel.locator(".chunk").first.wait_for()
    assert section.get_attribute("aria-expanded") == "true"
    assert "Raft is a consensus algorithm" in panel.inner_text()
    assert panel.locator(".chunk.current").count() == 1
    screenshot(page, "web-search.png")

    hit.get_by_role("button", name="Window").click()
    page.wait_for_function(
        "() => document.querySelector('.hit .context-label')?.textContent.startsWith('Window')"
    )
    assert section.get_attribute("aria-expanded") == "false"
    hit.get_by_role("button", name="Window").click()  # a second click folds it away
    assert panel.is_hidden()

    # Filters with the library's counts: "flour" is in a Markdown note and a text file;
    # the library holds two Markdown notes and one text file.
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("flour")
    wait_for_citations(page, ["todo (todo.txt#0)", "Bread (cooking.md#0)"])
    facet = page.locator('fieldset[data-facet="type"]')
    assert facet.locator('[data-value="markdown"] .count').inner_text() == "2"
    assert facet.locator('[data-value="text"] .count').inner_text() == "1"
    assert page.locator('fieldset[data-facet="tag"] [data-value="baking"]').is_visible()
    facet.locator('[data-value="text"]').click()
    wait_for_citations(page, ["todo (todo.txt#0)"])
    assert facet.locator('[data-value="text"]').get_attribute("aria-pressed") == "true"
    assert facet.locator('[data-value="markdown"]').is_visible()  # other types stay choosable
    page.get_by_role("button", name="Clear filters").click()
    wait_for_citations(page, ["todo (todo.txt#0)", "Bread (cooking.md#0)"])

    page.get_by_role("link", name="Library").click()
    page.locator("#library-view").wait_for()
    page.keyboard.press("/")  # the keyboard shortcut back to the search box
    page.wait_for_function("() => document.activeElement.id === 'q'")
    assert not page.locator("#search-view").is_hidden()


def test_ask_streams_a_cited_answer_and_opens_each_source(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_role("link", name="Ask").click()
    question = page.get_by_label("Ask a question about your documents")
    question.fill("What does a follower do when it hears no heartbeat?")
    question.press("Enter")
    answer = page.locator("#answer")
    page.wait_for_function("() => document.getElementById('answer-mode').textContent !== ''")
    assert "becomes a candidate" in answer.locator("#answer-text").inner_text()
    cites = answer.locator("#answer-text a.cite")
    assert cites.count() >= 1
    numbers = {c.removeprefix("[").removesuffix("]") for c in cites.all_inner_texts()}
    listed = answer.locator("#answer-sources li")
    # Every [n] in the text is a listed source, and only cited sources are listed.
    assert {li.get_attribute("data-n") for li in listed.all()} == numbers
    assert "Raft (projects/raft.md#1)" in listed.locator(".citation").all_inner_texts()
    assert "no language model" in answer.locator("#answer-mode").inner_text()

    source = listed.filter(has_text="projects/raft.md#1")
    assert source.locator(".crumbs").inner_text() == "Raft \u203a Leader election"
    source.get_by_role("button", name="Show passage").click()
    source.locator(".passage .chunk-text").wait_for()
    assert "hears no heartbeat" in source.locator(".passage").inner_text()
    assert not source.locator(".passage").inner_text().startswith("#")
    screenshot(page, "web-ask.png")
    page.set_viewport_size({"width": 390, "height": 800})  # a phone: nothing wider
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "web-ask-narrow.png")
    page.set_viewport_size({"width": 1280, "height": 800})

    question.fill("   ")
    question.press("Enter")
    page.locator("#ask-status").filter(has_text="Type a question").wait_for()


def test_dropped_file_progress_bar_follows_the_stages_to_complete(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_role("link", name="Upload").click()
    # Every stage a row shows, however fast they go by: each mutation record keeps the
    # value it replaced.
    page.evaluate(
        """() => {
            window.stagesShown = [];
            new MutationObserver((records) => {
                for (const r of records) window.stagesShown.push(r.oldValue);
            }).observe(document.getElementById("uploads"), {
                subtree: true, attributes: true, attributeOldValue: true,
                attributeFilter: ["data-stage"],
            });
        }"""
    )
    # Drop a file on the zone, as a person dragging it from their desktop would.
    page.evaluate(
        """(text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], "handbook.md", {type: "text/markdown"}));
            const zone = document.getElementById("dropzone");
            zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true}));
            zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true}));
        }""",
        HANDBOOK,
    )
    row = page.locator(".upload").filter(has_text="handbook.md")
    page.locator('.upload[data-stage="complete"]').filter(has_text="handbook.md").wait_for()
    assert row.locator("progress").evaluate("p => p.value") == 100
    assert row.locator(".stage-name").inner_text().lower() == "complete"
    assert row.locator(".stepper li.done").count() == 7
    shown = [*page.evaluate("window.stagesShown"), "complete"]
    stages = ["uploading", "queued", "parsing", "chunking", "embedding", "indexing", "complete"]
    assert [s for s in stages if s in shown] == stages, shown
    assert [stages.index(s) for s in shown] == sorted(stages.index(s) for s in shown), shown
    row.get_by_role("link", name="Open in library").click()
    page.locator("#doc-detail h2", has_text="handbook").wait_for()

    page.get_by_role("link", name="Search").click()
    page.get_by_label("Search your documents").fill("topic3")
    page.locator(".hit .citation", has_text="Handbook (handbook.md#").first.wait_for()


def test_failed_upload_shows_its_reason_and_a_retry_button(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_role("link", name="Upload").click()
    site.embedder.down = True  # a failure of the moment: the embedding service is away
    files: list[FilePayload] = [
        {"name": "meeting.md", "mimeType": "text/markdown", "buffer": MEETING.encode()},
        {"name": "broken.md", "mimeType": "text/markdown", "buffer": BAD_UTF8},
    ]
    page.get_by_label("Choose files").set_input_files(files)
    meeting = page.locator(".upload").filter(has_text="meeting.md")
    broken = page.locator(".upload").filter(has_text="broken.md")
    meeting.get_by_role("button", name="Retry").wait_for()
    assert meeting.get_attribute("data-stage") == "failed"
    assert "embedding service is unavailable" in meeting.locator(".stage-message").inner_text()
    assert meeting.locator(".stepper li.now").inner_text() == "embedding"  # where it stopped
    broken.get_by_text("Not retried").wait_for()  # what the bytes decide, beside it
    assert "invalid UTF-8" in broken.locator(".stage-message").inner_text()
    screenshot(page, "web-upload.png")

    site.embedder.down = False  # back: the retry succeeds
    [doc] = [d.id for d in site.shelf.documents(user_id=site.user.id) if d.rel_path == "meeting.md"]
    with page.expect_response(lambda r: r.url.endswith("/retry")) as retried:
        meeting.get_by_role("button", name="Retry").click()
    assert retried.value.status == 202
    page.locator('.upload[data-stage="complete"]').filter(has_text="meeting.md").wait_for()
    assert meeting.get_by_role("button", name="Retry").count() == 0
    assert site.shelf.job(doc).status == "complete"


def test_a_failure_no_retry_can_change_offers_no_retry(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_role("link", name="Upload").click()
    page.evaluate(  # every row that ever shows a Retry button, however briefly
        """() => {
            window.retryShown = new Set();
            new MutationObserver(() => {
                for (const b of document.querySelectorAll('#uploads .upload button.retry')) {
                    window.retryShown.add(b.closest('.upload').querySelector('.file-name').textContent);
                }
            }).observe(document.getElementById('uploads'), {subtree: true, childList: true});
        }"""
    )
    files: list[FilePayload] = [
        {"name": "blob.md", "mimeType": "text/markdown", "buffer": b"\x00\x01\x02 binary"},
        {"name": "broken.md", "mimeType": "text/markdown", "buffer": BAD_UTF8},
        {"name": "truncated.pdf", "mimeType": "application/pdf", "buffer": TRUNCATED_PDF},
        {"name": "locked.pdf", "mimeType": "application/pdf", "buffer": encrypted_pdf()},
    ]
    page.get_by_label("Choose files").set_input_files(files)
    for name, reason in (
        ("blob.md", "binary content"),
        ("broken.md", "invalid UTF-8"),
        ("truncated.pdf", "truncated PDF"),
        ("locked.pdf", "encrypted"),
    ):
        failed = page.locator(".upload").filter(has_text=name)
        failed.get_by_text("Not retried").wait_for()
        assert failed.get_attribute("data-stage") == "failed"
        assert reason in failed.locator(".stage-message").inner_text()
        assert failed.get_by_role("button", name="Retry").count() == 0
    assert page.evaluate("[...window.retryShown]") == []
    # Its document page says the same, and the API refuses the retry that cannot help.
    documents = site.shelf.documents(user_id=site.user.id)
    [truncated] = [d.id for d in documents if d.rel_path == "truncated.pdf"]
    page.goto(f"{site.url}/#library/{truncated}")
    job = page.locator("#doc-detail .job")
    job.get_by_text("Not retried").wait_for()
    assert "truncated PDF" in job.inner_text()
    assert job.get_by_role("button", name="Retry").count() == 0
    refused = httpx.post(
        f"{site.url}/v1/documents/{truncated}/retry",
        headers={"Authorization": f"Bearer {site.token}"},
    )
    assert refused.status_code == 409


def test_an_upload_that_cannot_reach_the_server_offers_a_retry(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_role("link", name="Upload").click()

    def refuse(route: Route) -> None:
        if route.request.method == "POST":
            route.abort("connectionrefused")
        else:
            route.continue_()

    page.route("**/v1/documents", refuse)
    files: list[FilePayload] = [
        {"name": "meeting.md", "mimeType": "text/markdown", "buffer": MEETING.encode()}
    ]
    page.get_by_label("Choose files").set_input_files(files)
    row = page.locator(".upload").filter(has_text="meeting.md")
    retry = row.get_by_role("button", name="Retry")
    retry.wait_for()
    assert "could not reach the server" in row.locator(".stage-message").inner_text()
    assert row.get_attribute("data-stage") == "failed"
    page.unroute("**/v1/documents")
    retry.click()  # the file is sent again
    page.locator('.upload[data-stage="complete"]').filter(has_text="meeting.md").wait_for()
    assert [d.rel_path for d in site.shelf.documents(user_id=site.user.id)].count("meeting.md") == 1


def test_the_same_file_uploaded_again_is_already_in_the_library(
    browser: Browser, site: Site
) -> None:
    # (reduced motion: the bars are drawn full at once in the screenshot)
    context = browser.new_context(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(site.url)
    sign_in(page, site.token)
    page.get_by_role("link", name="Upload").click()
    first: FilePayload = {
        "name": "meeting.md",
        "mimeType": "text/markdown",
        "buffer": MEETING.encode(),
    }
    copy: FilePayload = {**first, "name": "copy of meeting.md"}
    page.get_by_label("Choose files").set_input_files([first])
    page.locator('.upload[data-stage="complete"]').filter(has_text="meeting.md").wait_for()
    with page.expect_response(lambda r: r.request.method == "POST") as sent:
        page.get_by_label("Choose files").set_input_files([copy])
    assert sent.value.json()["already_in_library"] is True
    again = page.locator(".upload").filter(has_text="copy of meeting.md")
    again.locator(".stage-name", has_text="Already in your library").wait_for()
    assert "Complete" not in again.inner_text()
    assert "“Meeting”" in again.locator(".stage-message").inner_text()  # which document
    again.get_by_role("link", name="Open in library").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "web-upload-narrow.png")
    again.get_by_role("link", name="Open in library").click()
    page.locator("#doc-detail h2", has_text="Meeting").wait_for()
    context.close()


def test_a_document_page_follows_its_retry_to_the_end(page: Page, site: Site) -> None:
    site.embedder.down = True
    minutes = site.upload("minutes.md", MEETING.replace("Meeting", "Minutes").encode())
    site.wait_for(minutes, "failed")
    site.embedder.down = False
    site.embedder.gate.clear()  # the retried job waits in its embedding stage
    sign_in(page, site.token)
    page.goto(f"{site.url}/#library/{minutes}")
    detail = page.locator("#doc-detail")
    detail.locator("h2", has_text="Minutes").wait_for()
    state = detail.locator(".job p").first
    assert state.inner_text().startswith("failed at embedding")
    detail.get_by_role("button", name="Retry").click()
    state.filter(has_text="embedding").wait_for()  # where it is, as it goes
    assert "complete" not in state.inner_text()
    site.embedder.gate.set()
    # No Refresh: the page follows the job to its end, then shows the document as it is.
    detail.locator(".fields .badge", has_text="complete").wait_for()
    assert state.inner_text() == "complete"
    assert detail.get_by_role("button", name="Retry").count() == 0
    row = page.locator("#library-table tbody tr").filter(has_text="Minutes")
    assert row.locator(".badge").inner_text() == "complete"


def test_document_text_is_shown_as_text_never_run(page: Page, site: Site, tmp_path: Path) -> None:
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / "evil.md").write_text(XSS_NOTE)
    site.shelf.add(hostile, user_id=site.user.id)
    named = site.upload("<img src=x onerror=alert('name')>.md", b"A plain leader.\n")
    site.wait_for(named, "complete")

    sign_in(page, site.token)
    page.get_by_label("Search your documents").fill("leader note inside")
    hit = page.locator(".hit").filter(has_text="window.__xss = 'script'").first
    hit.wait_for()
    snippet = hit.locator(".snippet").inner_text()
    # read as a reader of the note sees it: tags are markup (gone), their text stays text
    assert "with window.__xss = 'script' inside, and too, and bold words." in " ".join(
        snippet.split()
    )
    hit.get_by_role("button", name="Section").click()
    hit.locator(".context .chunk").first.wait_for()

    page.get_by_role("link", name="Library").click()
    page.locator("#library-table tbody tr").nth(4).wait_for()
    titles = page.locator("#library-table tbody th").all_inner_texts()
    assert "<img src=x onerror=alert('name')>" in titles, titles
    page.get_by_role("link", name="Evil <img", exact=False).click()
    page.locator("#doc-detail h2").wait_for()

    assert page.evaluate("window.__xss") is None
    for selector in ("main script", "main img", "main b"):
        assert page.locator(selector).count() == 0, selector


def test_library_lists_status_pages_without_text_links_and_backlinks(
    page: Page, site: Site, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ideas.md").write_text(
        "# Ideas\n\nBuild on [[Raft notes]] and [[missing note]]. " + FILLER + "\n"
    )
    (vault / "Raft notes.md").write_text("# Raft notes\n\nLeader election in practice.\n")
    site.shelf.add(vault, user_id=site.user.id)
    scan = site.upload(
        "scan.pdf", paged_pdf([["A scanned report, page one."], [], ["Page three."]])
    )
    locked = site.upload("locked.pdf", encrypted_pdf())
    site.wait_for(scan, "complete")
    site.wait_for(locked, "failed")

    sign_in(page, site.token)
    page.get_by_role("link", name="Library").click()
    rows = page.locator("#library-table tbody tr")
    rows.nth(6).wait_for()
    assert "7 documents · 1 failed" in page.locator("#library-status").inner_text()
    scan_row = rows.filter(has_text="scan")
    assert scan_row.locator(".badge").inner_text() == "complete"
    assert scan_row.locator("td.num").first.inner_text() == "1 of 3"
    assert rows.filter(has_text="locked").locator(".badge").inner_text() == "failed"

    rows.filter(has_text="Ideas").get_by_role("link").click()
    detail = page.locator("#doc-detail")
    detail.locator("h2", has_text="Ideas").wait_for()
    links = detail.locator(".links").first
    assert "[[Raft notes]] → Raft notes" in links.inner_text()  # as the note wrote it
    assert "[[missing note]] → not in your library" in links.inner_text()
    screenshot(page, "web-library.png")

    links.get_by_role("link", name="Raft notes").click()
    detail.locator("h2", has_text="Raft notes").wait_for()
    backlinks = detail.locator(".links")
    assert backlinks.get_by_role("link", name="Ideas").is_visible()
    detail.get_by_role("button", name="Raft notes").click()  # read a section in place
    detail.locator(".context", has_text="Leader election in practice").wait_for()

    rows.filter(has_text="locked").get_by_role("link").click()
    detail.locator("h2", has_text="locked").wait_for()
    assert "encrypted" in detail.locator(".job").inner_text()
    # The bytes decide: no Retry (test_a_document_page_follows_its_retry_to_the_end has one).
    assert "Not retried" in detail.locator(".job").inner_text()
    assert detail.get_by_role("button", name="Retry").count() == 0


def test_a_pdf_hit_opens_on_its_page_with_the_cited_words_highlighted(
    page: Page, site: Site
) -> None:
    filler = [f"Line {i} of plain words that fill the page up to a real length." for i in range(30)]
    paper = site.upload(
        "paper.pdf",
        paged_pdf(
            [
                ["The first page talks about apples and pears.", *filler],
                [*filler[:12], "Consensus needs a quorum of voters.", "Each term has one leader."],
                ["The end of the paper.", *filler],
            ],
            headings=["Fruit", "Consensus", "Closing"],
        ),
    )
    site.wait_for(paper, "complete")
    sign_in(page, site.token)
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("quorum voters")
    label = page.locator(".hit .citation", has_text="paper.pdf").first
    label.click()
    view = page.locator("#open-view")
    view.locator(".page-frame img").wait_for()
    page.wait_for_function("() => document.querySelector('.page-frame img').naturalWidth > 0")
    assert view.locator(".page-number").inner_text() == "Page 2 of 3"
    assert page.url.split("#", 1)[1].startswith(f"open/{paper}/")
    boxes = view.locator(".page-frame .hl")
    assert boxes.count() >= 1
    frame = view.locator(".page-frame").bounding_box()
    box = boxes.first.bounding_box()
    assert frame is not None and box is not None
    # On the page, a third of the way down: where the two cited lines are.
    assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
    assert 0.2 < (box["y"] - frame["y"]) / frame["height"] < 0.5
    assert box["width"] > 50 and box["height"] > 3

    view.get_by_role("link", name="Next page").click()
    page.wait_for_function(
        "() => document.querySelector('#open-view .page-number')?.textContent === 'Page 3 of 3'"
    )
    assert view.locator(".page-frame .hl").count() == 0
    assert view.get_by_text("The cited passage is on page 2").is_visible()
    last = view.locator(".pager a", has_text="Next page")  # no href on the last page
    assert last.get_attribute("aria-disabled") == "true" and last.get_attribute("href") is None
    view.get_by_role("link", name="Previous page").click()
    page.wait_for_function(
        "() => document.querySelector('#open-view .page-number')?.textContent === 'Page 2 of 3'"
    )
    view.locator(".page-frame .hl").first.wait_for()

    # On a phone a whole page is too small to read: it opens zoomed to the cited lines,
    # which fill the width (the page scrolls sideways inside its figure, never the view).
    page.set_viewport_size({"width": 390, "height": 800})
    page.reload()
    view.locator(".page-frame img").wait_for()
    page.wait_for_function("() => document.querySelector('.page-frame img').naturalWidth > 0")
    zoom = view.get_by_role("button", name="Whole page")
    assert zoom.get_attribute("aria-pressed") == "true"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    frame = view.locator(".page-frame").bounding_box()
    lines = view.locator(".page-frame .hl")
    assert frame is not None and frame["width"] > 1.5 * 390
    for i in range(lines.count()):
        box = lines.nth(i).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert 0.2 < (box["y"] - frame["y"]) / frame["height"] < 0.5
    zoom.click()  # the whole page again: it fits the width, boxes still on the lines
    assert view.get_by_role("button", name="Zoom to the passage").is_visible()
    frame = view.locator(".page-frame").bounding_box()
    box = lines.first.bounding_box()
    assert frame is not None and box is not None and frame["width"] <= 390
    assert 0.2 < (box["y"] - frame["y"]) / frame["height"] < 0.5


def test_a_page_image_the_server_is_too_busy_for_comes_when_it_can(page: Page, site: Site) -> None:
    # Page renders beyond the server's limit get 503 and Retry-After: the page waits and
    # asks again, instead of showing a failure.
    paper = site.upload("paper.pdf", paged_pdf([["Consensus needs a quorum of voters."]]))
    site.wait_for(paper, "complete")
    busy = {"left": 2}

    def render(route: Route) -> None:
        if busy["left"]:
            busy["left"] -= 1
            route.fulfill(
                status=503,
                headers={"Retry-After": "1", "Content-Type": "application/json"},
                body='{"error": {"code": "unavailable", "message": "busy rendering pages"}}',
            )
        else:
            route.continue_()

    page.route("**/pages/1*", render)
    sign_in(page, site.token)
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("quorum voters")
    page.locator(".hit .citation", has_text="paper.pdf").first.click()
    page.wait_for_function("() => document.querySelector('.page-frame img')?.naturalWidth > 0")
    assert busy["left"] == 0
    assert page.locator("#open-view .page-figure").get_by_text("busy").count() == 0


def highlight_boxes(page: Page) -> list[dict[str, float]]:
    """The highlight boxes of the open PDF page, where they are in the viewport now, and
    in the page (fractions), once its image is decoded."""
    page.wait_for_function("() => document.querySelector('.page-frame img')?.complete")
    return list(
        page.evaluate(
            """() => {
                const frame = document.querySelector('.page-frame').getBoundingClientRect();
                return [...document.querySelectorAll('.page-frame .hl')].map((box) => {
                    const r = box.getBoundingClientRect();
                    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
                            x: (r.left - frame.left) / frame.width,
                            y: (r.top - frame.top) / frame.height};
                });
            }"""
        )
    )


IN_VIEW = """() => {
    const box = document.querySelector('.page-frame .hl')?.getBoundingClientRect();
    return box && box.top >= 0 && box.bottom <= innerHeight;
}"""


def open_hit(page: Page, query: str, heading: str) -> None:
    """Search, and open the hit under ``heading`` (once the results are this query's)."""
    page.get_by_role("link", name="Search").click()
    page.get_by_label("Search your documents").fill(query)
    hit = page.locator(".hit").filter(has=page.locator(".crumbs", has_text=heading)).first
    hit.locator(".citation").first.click()
    page.locator("#open-view .page-frame img").wait_for()


def test_a_pdf_passage_opens_in_view_boxed_in_both_columns_wide_and_narrow(
    browser: Browser, site: Site
) -> None:
    paper = site.upload("paper.pdf", column_paper_pdf())
    site.wait_for(paper, "complete")
    # 1280 x 900: the passage starts 1,300 px down the page (the issue saw 1,084-1,471).
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(site.url)
    sign_in(page, site.token)
    page.get_by_label("Search mode").select_option("lexical")
    open_hit(page, "quorum of voters decides each term", "Quorum")
    page.wait_for_function(IN_VIEW, timeout=5_000)  # opened there: nobody scrolled
    boxes = highlight_boxes(page)
    left = [b for b in boxes if b["x"] < 0.45]
    right = [b for b in boxes if b["x"] > 0.5]
    # Every line boxed, in both columns: the heading and five lines at the foot of the
    # left one, three lines at the top of the right one (none at the page number).
    assert len(left) == 1 + len(PAPER_QUORUM) and len(right) == len(PAPER_QUORUM_GOES_ON)
    assert min(b["y"] for b in left) > 0.6 and max(b["y"] for b in right) < 0.2
    for box in left:  # where the passage starts, all of it on the screen
        assert box["top"] >= 0 and box["bottom"] <= 900, box
    assert page.evaluate("window.scrollY") > 0
    screenshot(page, "web-open-pdf.png")

    # 390 x 844: opened zoomed to a passage near the foot of page 2, every line whole.
    page.set_viewport_size({"width": 390, "height": 844})
    open_hit(page, "ballots counted once by every voter", "Ballots")
    page.wait_for_function(IN_VIEW, timeout=5_000)
    view = page.locator("#open-view")
    assert view.locator(".page-number").inner_text() == "Page 2 of 2"
    assert view.get_by_role("button", name="Whole page").get_attribute("aria-pressed") == "true"
    figure = view.locator(".page-figure").bounding_box()
    frame = view.locator(".page-frame").bounding_box()
    assert figure is not None and frame is not None and frame["width"] > 2 * figure["width"]
    boxes = highlight_boxes(page)
    assert len(boxes) == 1 + len(PAPER_BALLOTS)
    for box in boxes:
        assert figure["x"] <= box["left"] and box["right"] <= figure["x"] + figure["width"], box
        assert box["top"] >= 0 and box["bottom"] <= 844, box
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "web-open-pdf-narrow.png")

    # The passage across two columns on a phone: every line whole, its start in view.
    open_hit(page, "quorum of voters decides each term", "Quorum")
    page.wait_for_function(IN_VIEW, timeout=5_000)
    figure = view.locator(".page-figure").bounding_box()
    assert figure is not None
    boxes = highlight_boxes(page)
    assert len(boxes) == 1 + len(PAPER_QUORUM) + len(PAPER_QUORUM_GOES_ON)
    for box in boxes:
        assert figure["x"] <= box["left"] and box["right"] <= figure["x"] + figure["width"], box
    context.close()


def test_a_markdown_hit_opens_the_note_scrolled_to_its_heading(page: Page, site: Site) -> None:
    long = "# Handbook\n\n" + "".join(
        f"## Part {i}\n\nPart {i} explains topic{i} in detail. {FILLER}\n\n" for i in range(30)
    )
    handbook = site.upload("handbook.md", long.encode())
    site.wait_for(handbook, "complete")
    sign_in(page, site.token)
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("topic6")
    page.locator(".hit .citation", has_text="Handbook (handbook.md#").first.click()
    reader = page.locator("#open-view .reader")
    reader.wait_for()
    heading = reader.get_by_role("heading", name="Part 6")
    heading.wait_for()
    page.wait_for_function("() => window.scrollY > 0")
    top = heading.bounding_box()
    assert top is not None and 0 <= top["y"] < 200, top  # scrolled to it, at the top
    cited = reader.locator(".cited")
    assert "Part 6 explains topic6" in " ".join(cited.all_inner_texts())
    assert "Part 5 explains" not in " ".join(cited.all_inner_texts())
    assert page.evaluate("document.activeElement.textContent") == "Part 6"
    screenshot(page, "web-open-note.png")

    # An answer's source opens its cited place too.
    page.get_by_role("link", name="Ask").click()
    question = page.get_by_label("Ask a question about your documents")
    question.fill("What does a follower do when it hears no heartbeat?")
    question.press("Enter")
    page.locator("#answer-sources li .citation", has_text="projects/raft.md#1").click()
    page.locator("#open-view .reader .cited", has_text="hears no heartbeat").wait_for()
    assert page.locator("#open-title").inner_text() == "Raft"


def test_download_of_a_folder_document_saves_its_bytes(page: Page, site: Site, notes: Path) -> None:
    sign_in(page, site.token)
    todo = next(d for d in site.shelf.documents() if d.rel_path == "todo.txt")
    page.goto(f"{site.url}/#open/{todo.id}")
    view = page.locator("#open-view")
    view.locator(".reader").wait_for()
    assert "Call the plumber" in view.locator(".reader").inner_text()
    with page.expect_download() as saved:
        view.get_by_role("button", name="Download original").click()
    download = saved.value
    assert download.suggested_filename == "todo.txt"
    assert Path(download.path()).read_bytes() == (notes / "todo.txt").read_bytes()

    (notes / "todo.txt").write_text("Changed since.\n")  # the file no longer holds these bytes
    view.get_by_role("button", name="Download original").click()
    view.get_by_role("alert").filter(has_text="changed since it was indexed").wait_for()


def test_hostile_documents_open_as_text_with_safe_links_only(
    page: Page, site: Site, tmp_path: Path
) -> None:
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / "evil.md").write_text(
        XSS_NOTE
        + "\n[run me](javascript:window.__xss='link') and [site](https://example.org/x) and "
        "![pic](x onerror=window.__xss='alt') <iframe src=\"javascript:window.__xss='frame'\">"
        "</iframe>\n\n<svg onload=\"window.__xss='svg'\"></svg>\n"
    )
    site.shelf.add(hostile, user_id=site.user.id)
    evil = next(d for d in site.shelf.documents() if d.rel_path == "evil.md")
    sign_in(page, site.token)
    page.goto(f"{site.url}/#open/{evil.id}")
    reader = page.locator("#open-view .reader")
    reader.wait_for()
    text = reader.inner_text()
    # HTML is neither run nor shown: no tag as an element (below), none as characters,
    # and the words around and between the tags read as a browser shows them.
    for tag in ("<script", "</script", "<img", "<svg", "<iframe", "<b>"):
        assert tag not in text, tag
    assert "A leader note with" in text and "too, and bold words." in text
    links = reader.locator("a")
    assert [links.nth(i).get_attribute("href") for i in range(links.count())] == [
        "https://example.org/x"
    ]
    assert "run me" in text
    assert page.evaluate("window.__xss") is None
    for selector in ("script", "img", "iframe", "svg", "b", "[onerror]", "[onload]"):
        assert reader.locator(selector).count() == 0, selector
    # The page's policy allows no inline script and no other origin, whatever slipped by.
    policy = httpx.get(site.url).headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy


def test_library_counts_the_whole_library_lists_failures_and_deletes_in_the_page(
    page: Page, site: Site, tmp_path: Path
) -> None:
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    for i in range(4):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nWords of note {i}. {FILLER}\n")
    site.shelf.add(folder, user_id=site.user.id)
    raft = next(d for d in site.shelf.documents() if d.rel_path == "projects/raft.md")
    site.shelf.enrich([raft.id], user_id=site.user.id)  # offline: summary, type, claims

    sign_in(page, site.token)
    assert page.locator("#search-status").inner_text().startswith("Type to search your 7 ")
    page.get_by_role("link", name="Library").click()
    page.locator("#library-table tbody tr").nth(6).wait_for()
    status = page.locator("#library-status").inner_text()
    assert "7 documents" in status and "1 file not added" in status, status
    failures = page.locator("#library-failures")
    assert "binary.md" in failures.inner_text()
    assert "binary content" in failures.inner_text()
    assert "Not retried" in failures.inner_text()

    page.locator("#library-table tbody tr").filter(has_text="Raft").get_by_role("link").click()
    detail = page.locator("#doc-detail")
    detail.locator("h2", has_text="Raft").wait_for()
    enriched = site.shelf.document(raft.id).document
    assert enriched.summary and enriched.document_type
    assert detail.locator(".summary").inner_text() == enriched.summary
    assert enriched.document_type in detail.locator(".fields").inner_text()
    claims = detail.locator(".claims li")
    assert claims.count() >= 1
    screenshot(page, "web-document.png")
    claims.first.locator("a.cite").first.click()
    page.locator("#open-view .reader .cited").first.wait_for()
    with page.expect_response(lambda r: r.url.endswith(f"/v1/documents/{raft.id}")):
        page.go_back()  # the library again, which reloads this document
    detail.locator("h2", has_text="Raft").wait_for()
    # A folder's document goes when its file leaves the folder: no Delete, a hint instead.
    assert detail.get_by_role("button", name="Delete").count() == 0
    assert "the next sync removes it" in detail.locator(".detail-actions").inner_text()

    minutes = site.upload("minutes.md", b"# Minutes\n\nWe met. " + FILLER.encode())
    site.wait_for(minutes, "complete")
    page.get_by_role("button", name="Refresh").click()
    page.locator("#library-table tbody tr").filter(has_text="Minutes").get_by_role("link").click()
    detail.locator("h2", has_text="Minutes").wait_for()
    assert "8 documents" in page.locator("#library-status").inner_text()
    detail.get_by_role("button", name="Delete").click()
    confirm = detail.get_by_role("group", name="Confirm delete")
    confirm.get_by_role("button", name="Cancel").click()
    assert confirm.count() == 0
    detail.get_by_role("button", name="Delete").click()
    with page.expect_response(lambda r: r.request.method == "DELETE") as deleted:
        detail.get_by_role("group", name="Confirm delete").get_by_role(
            "button", name="Yes, delete"
        ).click()
    assert deleted.value.status == 200
    page.locator("#library-status").filter(has_text="Deleted “Minutes”").wait_for()
    assert "7 documents" in page.locator("#library-status").inner_text()
    assert page.locator("#library-table tbody tr").filter(has_text="Minutes").count() == 0


def facet_value(page: Page, facet: str, value: str) -> Locator:
    return page.locator(f'fieldset[data-facet="{facet}"] .facet-value[data-value="{value}"]')


def test_facets_over_the_whole_library_are_chosen_before_searching(
    page: Page, site: Site, notes: Path
) -> None:
    os.utime(notes / "projects" / "raft.md", (YEAR_2024, YEAR_2024))
    site.shelf.sync()  # raft.md's date is now its file's change, in 2024
    this_year = str(time.gmtime().tm_year)
    sign_in(page, site.token)
    status = page.locator("#search-status")
    assert status.inner_text() == "Type to search your 3 documents, or choose filters first."
    # Before a word is typed: every facet of the library, with exact document counts.
    facet_value(page, "date", "2024").wait_for()
    counts = {
        (f, v): facet_value(page, f, v).locator(".count").inner_text()
        for f, v in [
            ("type", "markdown"),
            ("type", "text"),
            ("tag", "baking"),
            ("concept", "food"),
            ("date", "2024"),
            ("date", this_year),
        ]
    }
    assert counts == {
        ("type", "markdown"): "2",
        ("type", "text"): "1",
        ("tag", "baking"): "1",
        ("concept", "food"): "1",
        ("date", "2024"): "1",
        ("date", this_year): "2",
    }
    assert facet_value(page, "concept", "food").inner_text().startswith("Food and cooking")
    source = page.locator('fieldset[data-facet="source"] .facet-value')
    assert source.count() == 1 and source.locator(".facet-label").inner_text() == "notes"

    facet_value(page, "date", "2024").click()
    status.filter(has_text="1 of your 3 documents match these filters").wait_for()
    assert facet_value(page, "date", this_year).is_visible()  # the year's others stay
    assert facet_value(page, "type", "text").count() == 0  # no text file of 2024
    screenshot(page, "web-facets.png")
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("flour")
    status.filter(has_text="No hits for “flour” with these filters").wait_for()
    page.get_by_label("Search your documents").fill("leader election")
    page.locator(".hit").first.wait_for()
    labels = page.locator(".hit .citation").all_inner_texts()
    assert labels and all(label.startswith("Raft (") for label in labels)

    page.get_by_role("button", name="Clear filters").click()
    page.get_by_label("Search your documents").fill("")
    status.filter(has_text="Type to search your 3 documents").wait_for()
    facet_value(page, "concept", "food").click()  # a concept, chosen before the query
    status.filter(has_text="1 of your 3 documents match").wait_for()
    assert facet_value(page, "concept", "food").get_attribute("aria-pressed") == "true"
    page.get_by_label("Search your documents").fill("flour")
    wait_for_citations(page, ["Bread (cooking.md#0)"])


def test_library_finds_filters_sorts_and_lists_failures_with_reasons(
    page: Page, site: Site, tmp_path: Path
) -> None:
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    (folder / "long.md").write_text("# Long\n\n" + FILLER * 20 + "\n")
    site.shelf.add(folder, user_id=site.user.id)
    broken = site.upload("broken.md", BAD_UTF8)
    blob = site.upload("blob.md", b"\x00\x01\x02 binary")
    site.wait_for(broken, "failed")
    site.wait_for(blob, "failed")

    sign_in(page, site.token)
    page.get_by_role("link", name="Library").click()
    rows = page.locator("#library-table tbody tr")
    rows.nth(5).wait_for()
    status = page.locator("#library-status")
    assert status.inner_text() == "6 documents · 2 failed · 1 file not added"

    page.get_by_label("Show").select_option("failed")
    status.filter(has_text="2 failed documents").wait_for()
    assert rows.count() == 2
    assert "invalid UTF-8" in rows.filter(has_text="broken").locator(".state").inner_text()
    blob_state = rows.filter(has_text="blob").locator(".state").inner_text()
    assert "binary content" in blob_state and "Not retried" in blob_state
    assert "Not retried" in rows.filter(has_text="broken").locator(".state").inner_text()
    failures = page.locator("#library-failures")
    assert "more/binary.md" in failures.inner_text() and "binary content" in failures.inner_text()
    assert str(tmp_path) not in failures.inner_text()  # the folder's name, not the whole path
    screenshot(page, "web-library-failures.png")

    page.get_by_label("Show").select_option("")
    page.get_by_role("searchbox", name="Find").fill("raft")
    status.filter(has_text="1 of 6 documents match").wait_for()
    assert rows.all_inner_texts()[0].startswith("Raft")
    assert failures.is_hidden()  # no folder failure is named "raft"
    page.get_by_role("searchbox", name="Find").fill("")
    page.get_by_label("Sort").select_option("size")
    page.wait_for_function(
        "() => document.querySelector('#library-table tbody th')?.textContent === 'Long'"
    )
    page.get_by_label("Type").select_option("text")
    status.filter(has_text="1 of 6 documents match").wait_for()
    assert rows.count() == 1 and rows.first.inner_text().startswith("todo")


def test_a_vault_note_opens_in_obsidian_from_its_hit_and_its_page(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_label("Search your documents").fill("leader election")
    hit = page.locator(".hit").first
    hit.wait_for()
    link = hit.get_by_role("link", name="Open in Obsidian").first
    href = link.get_attribute("href")
    assert href == "obsidian://open?vault=notes&file=projects%2Fraft.md"
    hit.locator(".citation").first.click()
    page.locator("#open-view .reader").wait_for()
    assert (
        page.locator("#open-view")
        .get_by_role("link", name="Open in Obsidian")
        .get_attribute("href")
        == href
    )
    page.goto(f"{site.url}/#library")
    page.locator("#library-table tbody tr").filter(has_text="todo").get_by_role("link").click()
    page.locator("#doc-detail h2", has_text="todo").wait_for()
    assert page.locator("#doc-detail").get_by_role("link", name="Open in Obsidian").count() == 0


def test_a_network_error_offers_a_retry_not_a_dead_page(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    failed: list[str] = []

    def drop(route: Route) -> None:
        failed.append(route.request.url)
        route.abort("connectionrefused")

    page.route("**/v1/search", drop)
    page.get_by_label("Search your documents").fill("leader election")
    status = page.locator("#search-status")
    status.get_by_role("alert").filter(has_text="Cannot reach the docshelf server").wait_for()
    assert failed
    page.unroute("**/v1/search")
    status.get_by_role("button", name="Retry").click()
    page.locator(".hit").first.wait_for()
    assert "hits" in status.inner_text()

    page.route("**/v1/documents?*", lambda route: route.abort("connectionrefused"))
    page.get_by_role("link", name="Library").click()
    library = page.locator("#library-status")
    library.get_by_role("button", name="Retry").wait_for()
    page.unroute("**/v1/documents?*")
    library.get_by_role("button", name="Retry").click()
    page.locator("#library-table tbody tr").nth(2).wait_for()
    assert library.inner_text().startswith("3 documents")


def test_the_narrow_layout_folds_the_filters_and_never_scrolls_sideways(
    browser: Browser, site: Site
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(site.url)
    sign_in(page, site.token)
    box = page.locator("#facets details.facets-box")
    box.wait_for()
    assert box.get_attribute("open") is None  # the hits come first on a phone
    box.locator("summary").click()
    facet_value(page, "type", "text").click()
    page.locator("#search-status").filter(has_text="1 of your 3 documents match").wait_for()
    assert box.get_attribute("open") == ""  # opened by the reader, it stays open
    page.get_by_label("Search your documents").fill("plumber")
    page.locator(".hit").first.wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "web-search-narrow.png")
    page.get_by_role("link", name="Library").click()
    page.locator("#library-table tbody tr").nth(2).wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    find = page.get_by_role("searchbox", name="Find").bounding_box()
    assert find is not None and find["x"] + find["width"] <= 390
    screenshot(page, "web-library-narrow.png")
    context.close()
