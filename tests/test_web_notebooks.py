"""The web page's notebooks and its address (issue 40), in Debian's chromium driven by
Playwright: a notebook made, chosen, searched and asked within, shared read-only; a
search reloaded from its address, walked with Back and Forward, and reached from the
keyboard alone; a hit from a scanned page marked as read by OCR."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests import test_web
from tests.test_web import Site, screenshot, sign_in, wait_for_citations

# the browser, the served library and a signed-out page, as tests/test_web.py makes them
browser = test_web.browser
site = test_web.site
page = test_web.page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def nav(page: Page, view: str) -> None:
    page.get_by_role("navigation", name="Views").get_by_role("link", name=view).click()


def draws(page: Page) -> int:
    """How many times the notebooks list was drawn (notebooks.js counts them)."""
    return int(
        page.evaluate("Number(document.getElementById('notebooks-list').dataset.loads ?? 0)")
    )


def drawn_again(page: Page, before: int) -> None:
    """Until the list is drawn after ``before`` draws: typing into a card drawn earlier
    would be lost when the draw under way replaces it."""
    page.wait_for_function(
        f"() => Number(document.getElementById('notebooks-list').dataset.loads ?? 0) > {before}"
    )


def hits_are(page: Page, labels: list[str]) -> None:
    """``wait_for_citations``, saying what was shown when it never came."""
    try:
        wait_for_citations(page, labels)
    except Exception as exc:
        shown = page.locator(".hit .citation").all_inner_texts()
        raise AssertionError(f"wanted {labels}, shown {shown} at {page.url}") from exc


def test_a_search_reloads_from_its_address_and_walks_back_and_forward(
    page: Page, site: Site
) -> None:
    sign_in(page, site.token)
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("flour")
    hits_are(page, ["Bread (cooking.md#0)", "todo (todo.txt#0)"])
    assert "q=flour" in page.url and "mode=lexical" in page.url
    page.locator('[data-facet="type"] button[data-value="text"]').click()
    hits_are(page, ["todo (todo.txt#0)"])
    address = page.url
    assert "mode=lexical" in address and "type=text" in address

    page.reload()  # the same search, the same filter chosen, the same hits
    hits_are(page, ["todo (todo.txt#0)"])
    assert page.get_by_label("Search your documents").input_value() == "flour"
    assert page.get_by_label("Search mode").input_value() == "lexical"
    chosen = page.locator('[data-facet="type"] button[data-value="text"]')
    assert chosen.get_attribute("aria-pressed") == "true"

    other = page.context.new_page()  # a link sent to someone (here: another tab)
    other.goto(address)
    hits_are(other, ["todo (todo.txt#0)"])
    other.close()

    page.go_back()  # before the filter: both hits again
    hits_are(page, ["Bread (cooking.md#0)", "todo (todo.txt#0)"])
    assert "type=text" not in page.url
    page.go_forward()
    hits_are(page, ["todo (todo.txt#0)"])


def test_the_first_hit_is_three_key_presses_from_anywhere(page: Page, site: Site) -> None:
    sign_in(page, site.token)
    nav(page, "Library")
    page.locator("#library-table tbody tr").first.wait_for()
    page.keyboard.press("/")  # 1: back to the search box
    page.keyboard.type("leader election")  # the words (not counted)
    page.locator(".hit .citation").first.wait_for()
    page.keyboard.press("ArrowDown")  # 2: the first hit
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Raft (projects/raft.md#1)"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.textContent") == focused
    page.keyboard.press("Enter")  # 3: opened
    page.locator("#open-view").wait_for()
    assert page.url.split("#", 1)[1].startswith("open/")
    page.go_back()  # the search is still there
    hits_are(page, page.locator(".hit .citation").all_inner_texts() or ["-"])
    assert page.get_by_label("Search your documents").input_value() == "leader election"


def test_notebooks_are_made_chosen_searched_asked_and_shared_read_only(
    browser: Browser, page: Page, site: Site
) -> None:
    bob, bob_token = site.shelf.create_user("bob")
    site.shelf.upload(bob.id, "shopping.txt", b"Buy flour and call the baker.\n")
    sign_in(page, site.token)
    nav(page, "Notebooks")
    page.locator("#notebooks-status").filter(has_text="No notebooks yet").wait_for()
    page.locator("#notebook-name").fill("Errands")
    page.locator("#notebook-filters").fill("type=text")
    page.get_by_role("button", name="Create").click()
    card = page.locator(".notebook").filter(has_text="Errands")
    card.wait_for()
    assert "filters type=text" in card.inner_text()
    card.get_by_label("User to share Errands with").fill("nobody")
    card.get_by_role("button", name="Share").click()
    card.locator(".status").filter(has_text="No user").wait_for()  # refused, said why
    screenshot(page, "web-notebooks.png")

    # chosen at the top: search within it, with the notebook in the address
    nav(page, "Search")
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("flour")
    hits_are(page, ["Bread (cooking.md#0)", "todo (todo.txt#0)"])
    page.get_by_label("Search and ask within").select_option(label="Errands")
    hits_are(page, ["todo (todo.txt#0)"])
    assert "notebook=nb_" in page.url
    page.reload()
    hits_are(page, ["todo (todo.txt#0)"])
    assert page.get_by_label("Search and ask within").input_value().startswith("nb_")

    nav(page, "Ask")
    assert "notebook=nb_" in page.url  # the notebook goes along
    question = page.get_by_label("Ask a question about your documents")
    question.fill("Who should I call about the leak?")
    question.press("Enter")
    page.wait_for_function("() => document.getElementById('answer-mode').textContent !== ''")
    labels = page.locator("#answer-sources .citation").all_inner_texts()
    assert labels and all("todo.txt" in label for label in labels)

    # shared read-only with bob: he sees it, marked so, and only what he holds
    before = draws(page)
    nav(page, "Notebooks")
    drawn_again(page, before)  # the list drawn afresh before a name is typed into it
    card.get_by_label("User to share Errands with").fill("bob")
    card.get_by_role("button", name="Share").click()
    card.locator(".readers").filter(has_text=bob.id).wait_for()

    context = browser.new_context(viewport={"width": 390, "height": 800})
    phone = context.new_page()
    phone.goto(site.url)
    sign_in(phone, bob_token)
    picker = phone.get_by_label("Search and ask within")
    phone.wait_for_function(
        "() => [...document.querySelectorAll('#notebook option')]"
        ".some(o => o.text === 'Errands (shared)')"
    )
    picker.select_option(label="Errands (shared)")
    phone.get_by_label("Search mode").select_option("lexical")
    phone.get_by_label("Search your documents").fill("flour")
    hits_are(phone, ["shopping (shopping.txt#0)"])  # bob's own text file, never alice's
    screenshot(phone, "web-notebook-shared-narrow.png")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    nav(phone, "Notebooks")
    shared = phone.locator(".notebook").filter(has_text="Errands")
    shared.filter(has_text="read only").wait_for()
    assert shared.get_by_role("button", name="Share").count() == 0
    context.close()


def test_a_hit_read_by_ocr_says_so(page: Page, site: Site) -> None:
    from tests.optional import require_program
    from tests.test_ocr import scanned_page, scanned_pdf

    require_program("tesseract", "apt-get install tesseract-ocr, or make install")
    scan = scanned_pdf(scanned_page(["The lighthouse keeper logs every passing freighter."]))
    site.wait_for(site.upload("scan.pdf", scan), "complete", seconds=60)
    sign_in(page, site.token)
    page.get_by_label("Search mode").select_option("lexical")
    page.get_by_label("Search your documents").fill("lighthouse freighter")
    hit = page.locator(".hit").first
    hit.locator(".ocr").wait_for()
    assert hit.locator(".citation").inner_text().startswith("scan (scan.pdf p.1)")
    assert "Read by OCR" in hit.locator(".ocr").inner_text()
