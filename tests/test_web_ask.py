"""The web page's Ask view (issue 37, "Citations that open"), in Debian's chromium driven
by Playwright: every [n] of an answer opens its source at the cited place — a note at its
heading, a PDF's page with the cited lines boxed — beside the answer, never leaving it;
Back, Close or Esc comes back to the answer as it was, never asked again; a paper's own
"[4]" stays text."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests import test_web
from tests.fixtures_formats import paged_pdf
from tests.test_web import Site, screenshot, sign_in

# the browser, the served library and a signed-out page, as tests/test_web.py makes them
browser = test_web.browser
site = test_web.site
page = test_web.page

if TYPE_CHECKING:
    from playwright.sync_api import Page, Request, Route

HEARTBEAT = "What does a follower do when it hears no heartbeat?"

# the cited place in view: inside the panel's part of the window, under its head
IN_PANEL = """(selector) => {
    const panel = document.getElementById('ask-cited').getBoundingClientRect();
    const head = document.querySelector('#ask-cited .cited-head').getBoundingClientRect();
    const top = Math.max(panel.top, head.bottom, 0);
    const bottom = Math.min(panel.bottom, innerHeight);
    const box = document.querySelector(selector)?.getBoundingClientRect();
    return !!box && box.height > 0 && box.top >= top - 1 && box.top < bottom;
}"""


def count_asks(page: Page) -> list[str]:
    """The questions the page sends to /v1/ask, as it sends them."""
    asked: list[str] = []

    def on_request(request: Request) -> None:
        if request.url.endswith("/v1/ask") and request.method == "POST":
            asked.append(str(json.loads(request.post_data or "{}").get("question")))

    page.on("request", on_request)
    return asked


def ask(page: Page, question: str) -> None:
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Ask").click()
    box = page.get_by_label("Ask a question about your documents")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => document.getElementById('answer-mode').textContent !== ''")


def focused(page: Page) -> str:
    return str(page.evaluate("document.activeElement.id || document.activeElement.textContent"))


def test_a_citation_opens_the_note_at_its_heading_beside_the_answer(page: Page, site: Site) -> None:
    asked = count_asks(page)
    sign_in(page, site.token)
    ask(page, HEARTBEAT)
    text = page.locator("#answer-text")
    answer = text.inner_text()
    assert "becomes a candidate" in answer
    source = page.locator("#answer-sources li").filter(has_text="projects/raft.md#1")
    n = source.get_attribute("data-n")
    cite = text.locator(f'a.cite[data-n="{n}"]').first
    assert cite.get_attribute("aria-expanded") == "false"
    address = page.url

    cite.click()  # opened beside the answer, at the cited heading, the cited block marked
    panel = page.get_by_role("complementary", name=f"[{n}] Raft (projects/raft.md#1)")
    heading = panel.get_by_role("heading", name="Leader election")
    heading.wait_for()
    panel.locator(".reader .cited", has_text="hears no heartbeat").wait_for()
    page.wait_for_function(IN_PANEL, arg="#ask-cited .cited")
    assert text.is_visible() and text.inner_text() == answer  # the answer never left
    assert cite.get_attribute("aria-expanded") == "true"
    assert focused(page) == "ask-cited-title"  # the focus on the source, which says which
    assert f"source={n}" in page.url and "ask-source" not in page.url
    assert page.locator("#ask-view").is_visible() and page.locator("#search-view").is_hidden()
    panel_box, answer_box = panel.bounding_box(), page.locator("#answer").bounding_box()
    assert panel_box is not None and answer_box is not None
    assert panel_box["x"] > answer_box["x"] + answer_box["width"]  # beside it
    full = panel.get_by_role("link", name="Open full view")
    assert (full.get_attribute("href") or "").startswith("#open/")
    screenshot(page, "web-ask-source.png")

    assert page.evaluate("window.scrollY") > 0  # scrolled so the whole panel shows
    page.go_back()  # the answer as it was: the source closed, not asked again
    panel.wait_for(state="hidden")
    assert page.url == address and page.evaluate("window.scrollY") == 0
    assert text.inner_text() == answer
    assert focused(page) == f"[{n}]"  # back on the [n] that opened it
    page.go_forward()  # the source again, from the address
    heading.wait_for()
    assert text.inner_text() == answer

    panel.get_by_role("button", name="Close").click()
    panel.wait_for(state="hidden")
    assert page.url == address and text.inner_text() == answer
    assert focused(page) == f"[{n}]"

    page.keyboard.press("Enter")  # the keyboard: Enter on [n] opens it, Esc closes it
    heading.wait_for()
    assert focused(page) == "ask-cited-title"
    page.keyboard.press("Escape")
    panel.wait_for(state="hidden")
    assert focused(page) == f"[{n}]" and page.url == address
    assert asked == [HEARTBEAT]  # never asked again

    # A phone: the source opens below the answer, nothing scrolls sideways
    page.set_viewport_size({"width": 390, "height": 800})
    cite.scroll_into_view_if_needed()
    before = page.evaluate("window.scrollY")
    cite.click()
    heading.wait_for()
    page.wait_for_function(IN_PANEL, arg="#ask-cited .cited")
    assert page.evaluate("window.scrollY") > before  # scrolled down to it
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "web-ask-source-narrow.png")
    page.go_back()
    panel.wait_for(state="hidden")
    assert text.inner_text() == answer and asked == [HEARTBEAT]
    assert page.evaluate("window.scrollY") == before and focused(page) == f"[{n}]"

    # The address with the source open is a link to it: the answer, asked, and the source
    page.set_viewport_size({"width": 1280, "height": 800})
    cite.click()
    heading.wait_for()
    page.reload()
    page.locator("#ask-cited").get_by_role("heading", name="Leader election").wait_for()
    assert page.locator("#answer-text").inner_text() == answer
    assert asked == [HEARTBEAT, HEARTBEAT]


def test_a_citation_opens_the_pdf_page_with_the_cited_lines_boxed(page: Page, site: Site) -> None:
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
    asked = count_asks(page)
    sign_in(page, site.token)
    ask(page, "What does consensus need, a quorum of voters?")
    text = page.locator("#answer-text")
    answer = text.inner_text()
    source = page.locator("#answer-sources li").filter(has_text="paper.pdf")
    n = source.first.get_attribute("data-n")
    address = page.url

    text.locator(f'a.cite[data-n="{n}"]').first.click()
    panel = page.locator("#ask-cited")
    panel.locator(".page-frame img").wait_for()
    page.wait_for_function("() => document.querySelector('#ask-cited img').naturalWidth > 0")
    assert panel.locator(".page-number").inner_text() == "Page 2 of 3"
    assert panel.locator(".page-frame .hl").count() >= 1
    page.wait_for_function(IN_PANEL, arg="#ask-cited .hl")  # the boxed lines in view
    assert text.inner_text() == answer
    screenshot(page, "web-ask-source-pdf.png")

    panel.get_by_role("link", name="Next page").click()  # pages turn in the panel
    page.wait_for_function(
        "() => document.querySelector('#ask-cited .page-number')?.textContent === 'Page 3 of 3'"
    )
    assert page.locator("#ask-view").is_visible() and f"source={n}" in page.url
    page.go_back()  # one step back: the answer
    panel.wait_for(state="hidden")
    assert page.url == address and text.inner_text() == answer
    assert asked == ["What does consensus need, a quorum of voters?"]


def test_a_papers_own_reference_numbers_stay_text(page: Page, site: Site) -> None:
    # A canned answer stream: two sources, an answer citing [1] and a paper's "[4]" and
    # "[2]" — 4 is no source, and the answer's citations (at its end) name only 1.
    chunk = site.shelf.search("heartbeat", mode="lexical", user_id=site.user.id).hits[0].chunk

    def source(n: int) -> dict[str, object]:
        citation = {"label": "Raft (projects/raft.md#1)", "heading_path": ["Raft"]}
        return {"n": n, "chunk_id": chunk.id, "label": citation["label"], "citation": citation}

    text = "Reads go to the tail [4][2]. A follower becomes a candidate [1]."
    body = "".join(
        f"event: {event}\ndata: {json.dumps(data)}\n\n"
        for event, data in [
            ("sources", {"sources": [source(1), source(2)]}),
            ("text", {"text": text}),
            (
                "done",
                {"question": "q", "answer": text, "mode": "extractive", "citations": [source(1)]},
            ),
        ]
    )

    def answer(route: Route) -> None:
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=body)

    page.route("**/v1/ask", answer)
    sign_in(page, site.token)
    ask(page, "How are reads served?")
    shown = page.locator("#answer-text")
    assert shown.inner_text() == text  # every number still there, as written
    assert shown.locator("a.cite").all_inner_texts() == ["[1]"]
    assert page.locator("#answer-sources li").count() == 1


def test_a_question_the_library_does_not_answer_says_so(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Ask").click()
    question = page.get_by_label("Ask a question about your documents")
    question.fill("zebra quantum chromodynamics")
    question.press("Enter")
    answer = page.locator('#answer[data-answered="false"]')
    answer.wait_for()
    assert (
        answer.locator("#answer-text")
        .inner_text()
        .startswith("No passage in your library answers this")
    )
    assert "Not in your library" in page.locator("#ask-status").inner_text()
    assert answer.locator("#answer-sources li").count() >= 1  # the closest, to check


def test_what_the_library_never_mentions_is_said_where_the_abstention_is(
    page: Page, site: Site
) -> None:
    """The notice of an abstention (the words the library never holds) is read in the
    status line that says "Not in your library", not in the small line under the answer."""
    chunk = site.shelf.search("heartbeat", mode="lexical", user_id=site.user.id).hits[0].chunk
    citation = {"label": "Raft (projects/raft.md#1)", "heading_path": ["Raft"]}
    source = {"n": 1, "chunk_id": chunk.id, "label": citation["label"], "citation": citation}
    notice = "Your library never mentions \u201cquicksort\u201d."
    text = "No passage in your library answers this; the closest are: Raft elects leaders. [1]"
    done = {
        "question": "q",
        "answer": text,
        "mode": "extractive",
        "citations": [source],
        "notice": notice,
        "answered": False,
    }
    body = "".join(
        f"event: {event}\ndata: {json.dumps(data)}\n\n"
        for event, data in [
            ("sources", {"sources": [source]}),
            ("text", {"text": text}),
            ("done", done),
        ]
    )
    page.route(
        "**/v1/ask",
        lambda route: route.fulfill(
            status=200, headers={"Content-Type": "text/event-stream"}, body=body
        ),
    )
    sign_in(page, site.token)
    ask(page, "What is the worst case of quicksort?")
    page.locator('#answer[data-answered="false"]').wait_for()
    assert page.locator("#ask-status").inner_text() == (
        f"Not in your library. {notice} The passages below are only the closest."
    )
    assert notice not in page.locator("#answer").inner_text()
    screenshot(page, "web-ask-abstain.png")
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "web-ask-abstain-narrow.png")


def test_a_follow_up_question_is_asked_in_the_thread(page: Page, site: Site) -> None:
    bodies: list[dict[str, object]] = []
    page.on(
        "request",
        lambda r: (
            bodies.append(json.loads(r.post_data or "{}")) if r.url.endswith("/v1/ask") else None
        ),
    )
    sign_in(page, site.token)
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Ask").click()
    question = page.get_by_label("Ask a question about your documents")
    question.fill("How does a follower become a candidate?")
    question.press("Enter")
    page.locator("#ask-new").wait_for()  # the answer came, in a conversation
    first = page.locator("#answer-text").inner_text()
    question.fill("and then what?")
    question.press("Enter")
    turn = page.locator("#ask-thread .turn")
    turn.wait_for()
    assert turn.locator(".turn-question").inner_text() == "How does a follower become a candidate?"
    assert turn.locator(".turn-answer").inner_text() == first
    page.wait_for_function(
        "() => document.getElementById('answer').getAttribute('aria-busy') === null"
    )
    labels = page.locator("#answer-sources .citation").all_inner_texts()
    assert any("raft" in label for label in labels)  # the follow-up is about Raft
    assert bodies[0]["conversation"] == "new"
    assert str(bodies[1]["conversation"]).startswith("cv_")
    screenshot(page, "web-ask-thread.png")
    page.get_by_role("button", name="New conversation").click()
    assert page.locator("#ask-thread").is_hidden()


def test_a_question_typed_before_the_links_second_event_is_asked(page: Page, site: Site) -> None:
    """A link to Ask fires popstate, then hashchange; on a busy machine the question can be
    typed between the two. The second event is the same move: it must not route again
    (which had emptied the box, so Enter asked nothing; CI failed so twice)."""
    asked = count_asks(page)
    sign_in(page, site.token)
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Ask").click()
    box = page.get_by_label("Ask a question about your documents")
    box.fill(HEARTBEAT)
    page.evaluate("window.dispatchEvent(new HashChangeEvent('hashchange'))")  # the late one
    assert box.input_value() == HEARTBEAT
    box.press("Enter")
    page.wait_for_function("() => document.getElementById('answer-mode').textContent !== ''")
    assert asked == [HEARTBEAT]
    assert "q=What" in page.url


def test_a_source_on_two_pages_opens_at_the_page_its_words_are_on(page: Page, site: Site) -> None:
    """A snippet that runs onto a second page is cited at the page its words are on, and
    opens there: from the answer's [n], and from a search's hit."""
    culture = site.upload(
        "kombucha.pdf",
        paged_pdf(
            [
                ["The brewery kept its kombucha culture in a cool vault.",
                 "The brewers fed the culture with black tea every morning."],
                ["In the warm greenhouse the culture thickened within six days.",
                 "A cold vault slowed the culture to a month."],
            ]
        ),
    )  # fmt: skip
    site.wait_for(culture, "complete")
    sign_in(page, site.token)
    ask(page, "How fast did the kombucha culture thicken in the warm greenhouse?")
    text = page.locator("#answer-text")
    assert "within six days" in text.inner_text()
    source = page.locator("#answer-sources li").filter(has_text="kombucha.pdf p.2")
    n = source.first.get_attribute("data-n")
    text.locator(f'a.cite[data-n="{n}"]').first.click()
    panel = page.locator("#ask-cited")
    page.wait_for_function(
        "() => document.querySelector('#ask-cited .page-number')?.textContent === 'Page 2 of 2'"
    )
    panel.locator(".page-frame .hl").first.wait_for()  # its lines boxed on that page
    screenshot(page, "web-ask-source-pdf-page-2.png")

    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("link", name="Search").click()
    page.get_by_label("Search your documents").fill("kombucha culture thickened warm greenhouse")
    hit = page.locator(".hit").filter(has_text="kombucha.pdf p.2").first
    hit.locator(".citation").first.click()
    page.wait_for_function(
        "() => document.querySelector('#open-view .page-number')?.textContent === 'Page 2 of 2'"
    )
    page.locator("#open-view .page-frame .hl").first.wait_for()
    screenshot(page, "web-open-pdf-page-2-narrow.png")


def test_a_long_source_path_breaks_inside_the_answer_on_a_phone(page: Page, site: Site) -> None:
    name = "a_note_whose_file_name_runs_on_and_on_without_a_single_place_to_break_at.md"
    doc = site.upload(
        name, b"# Lanterns\n\nA storm lantern burns paraffin behind a glass chimney.\n"
    )
    site.wait_for(doc, "complete")
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, site.token)
    ask(page, "What does a storm lantern burn?")
    page.locator("#answer-sources li").filter(has_text="runs_on_and_on").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # and a search's hit of it
    page.get_by_role("navigation", name="Views").get_by_role("link", name="Search").click()
    page.get_by_label("Search your documents").fill("storm lantern")
    page.locator(".hit .citation").filter(has_text="runs_on_and_on").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
