"""Opening a citation over HTTP: the view of a PDF page and of a text document, page
images, downloads of folder documents, the library's total and its folder failures."""

from __future__ import annotations

import io
import json
import struct
import threading
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app, pdf_pages, reading
from docshelf.model import Chunk, Tier
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fixtures_formats import encrypted_pdf, paged_pdf
from tests.test_api import Api, drain

HOSTILE = (
    "# Hostile <script>alert('h1')</script>\n\n"
    "A note with <script>window.__xss = 1</script> and <img src=x onerror=alert(1)> in it.\n\n"
    "[click](javascript:alert(1)) and [fine](https://example.org/a?b=1) and "
    "[data](data:text/html;base64,PHNjcmlwdD4=) and **bold <b>tag</b>**.\n\n"
    '<div onclick="alert(1)">raw block html</div>\n\n'
    "## Second <em>part</em>\n\n" + FILLER + "\n"
)


@pytest.fixture
def client(shelf: Shelf) -> Iterator[TestClient]:
    with TestClient(create_app(shelf)) as c:
        yield c


def _api(shelf: Shelf, client: TestClient, name: str) -> Api:
    user, token = shelf.create_user(name)
    return Api(client, token, user)


@pytest.fixture
def alice(shelf: Shelf, client: TestClient) -> Api:
    return _api(shelf, client, "alice")


@pytest.fixture
def bob(shelf: Shelf, client: TestClient) -> Api:
    return _api(shelf, client, "bob")


def _chunks(shelf: Shelf, document_id: str, tier: Tier = Tier.SNIPPET) -> list[Chunk]:
    return shelf.store.chunks_of_document(document_id, tier)


def _all_strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _all_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _all_strings(v)]
    return []


def _shown(value: object) -> str:
    """The characters a block puts on the page (its ``text`` values)."""
    if isinstance(value, dict):
        return "".join(
            v if k == "text" and isinstance(v, str) else _shown(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return "".join(_shown(v) for v in value)
    return ""


def test_a_markdown_hit_opens_at_its_heading_with_the_snippet_marked(
    shelf: Shelf, alice: Api, notes: Path
) -> None:
    shelf.add(notes, user_id=alice.user.id)
    raft = next(d for d in shelf.documents() if d.rel_path == "projects/raft.md")
    cited = next(c for c in _chunks(shelf, raft.id) if "hears no heartbeat" in c.text)
    r = alice.get(f"/v1/documents/{raft.id}/view", params={"chunk": cited.id})
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["kind"] == "text"
    assert view["heading_path"] == ["Raft", "Leader election"]
    by_id = {b["id"]: b for b in view["blocks"]}
    target = by_id[view["target"]]
    assert target["kind"] == "heading" and target["inlines"] == [{"text": "Leader election"}]
    marked = [b for b in view["blocks"] if b.get("cited")]
    assert any("hears no heartbeat" in json.dumps(b) for b in marked)
    assert not any("Log replication" in json.dumps(b) for b in marked)
    assert not any("consensus algorithm" in json.dumps(b) for b in marked)
    # The same place through the chunk alone (how an answer's source opens).
    assert alice.get(f"/v1/chunks/{cited.id}/view").json() == view


def test_hostile_markdown_is_text_with_only_safe_links(shelf: Shelf, alice: Api) -> None:
    r = alice.upload("hostile.md", HOSTILE.encode())
    drain(shelf)
    view = alice.get(f"/v1/documents/{r.json()['document_id']}/view").json()
    strings = _all_strings(view["blocks"])
    text = "".join(strings)
    # A tag is never shown, as characters or as an element; an HTML block keeps its text.
    for tag in ("<script", "</script>", "<img", "onerror", "<div", "onclick", "<b>", "<em>"):
        assert tag not in text
    shown = _shown(view["blocks"])
    assert "raw block html" in shown and "bold tag" in shown and "Second part" in shown
    hrefs = [run["href"] for b in view["blocks"] for run in b.get("inlines", []) if "href" in run]
    assert hrefs == ["https://example.org/a?b=1"]
    assert "click" in text and "data" in text  # unsafe links keep their words
    keys = {k for b in view["blocks"] for run in b.get("inlines", []) for k in run}
    assert keys <= {"text", "style", "href"}
    assert {b["kind"] for b in view["blocks"]} <= {"heading", "paragraph", "list", "code"}


RUST_BOOK = (
    "## Using `Rc<T>` to Share Data\n\n"
    "Some multithreaded programs.\n\n"
    "<!-- Old headings. Do not remove or links may break. -->\n\n"
    '<a id="using-rct-to-share-data"></a>\n\n'
    "### Sharing Data\n\n"
    '<span class="filename">Filename: src/main.rs</span>\n\n'
    '<Listing number="15-17" caption="lists using `Box<T>` that share a list">\n\n'
    "```rust\nlet a: Rc<List> = Rc::new(Cons(5, Rc::new(Nil)));\n```\n\n"
    "</Listing>\n\n"
    "A note %% a remark to myself %% on `Rc<T>`.\n\n"
    "%%\nA whole paragraph of comment.\n%%\n\n"
    "```text\n%% not a comment in code %%\n```\n\n" + FILLER + "\n"
)


def test_html_tags_and_comments_are_not_shown_their_text_is(shelf: Shelf, alice: Api) -> None:
    r = alice.upload("ch15-04-rc.md", RUST_BOOK.encode())
    drain(shelf)
    view = alice.get(f"/v1/documents/{r.json()['document_id']}/view").json()
    text = _shown(view["blocks"])
    unseen = ("<!--", "Old headings", "<a id=", "</a>", "<span", "</span>", "Listing", "remark")
    for hidden in (*unseen, "A whole paragraph of comment"):
        assert hidden not in text
    assert "Filename: src/main.rs" in text and "Using Rc<T> to Share Data" in text
    codes = [b["text"] for b in view["blocks"] if b["kind"] == "code"]
    assert codes == [
        "let a: Rc<List> = Rc::new(Cons(5, Rc::new(Nil)));",
        "%% not a comment in code %%",
    ]
    note = next(b for b in view["blocks"] if "A note" in json.dumps(b))
    assert note["inlines"][-2] == {"text": "Rc<T>", "style": "code"}
    assert all(_shown(b).strip() for b in view["blocks"])  # no block is only a tag


def test_a_huge_document_is_cut_around_the_citation(shelf: Shelf, alice: Api) -> None:
    body = "# Big\n\n" + "".join(f"Paragraph {i} says word{i}.\n\n" for i in range(6000))
    r = alice.upload("big.md", body.encode())
    drain(shelf)
    doc_id = r.json()["document_id"]
    cited = next(c for c in _chunks(shelf, doc_id) if "word5000." in c.text)
    view = alice.get(f"/v1/documents/{doc_id}/view", params={"chunk": cited.id}).json()
    assert view["truncated"] is True
    assert len(view["blocks"]) == reading.MAX_BLOCKS
    assert any(b.get("cited") and "word5000." in json.dumps(b) for b in view["blocks"])


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_a_pdf_hit_opens_its_page_with_boxes_over_the_cited_words(shelf: Shelf, alice: Api) -> None:
    filler = [f"Line {i} of plain words that fill the page up to a real length." for i in range(30)]
    pdf = paged_pdf(
        [
            ["The first page talks about apples and pears.", *filler],
            [*filler[:12], "Consensus needs a quorum of voters.", "Each term has one leader."],
            ["The end of the paper.", *filler],
        ],
        headings=["Fruit", "Consensus", "Closing"],
    )
    r = alice.upload("paper.pdf", pdf)
    drain(shelf)
    doc_id = r.json()["document_id"]
    cited = next(c for c in _chunks(shelf, doc_id) if "quorum" in c.text)
    assert cited.page_start == 2
    shown = alice.get(f"/v1/documents/{doc_id}/view", params={"chunk": cited.id})
    assert shown.status_code == 200, shown.text
    view = shown.json()
    assert view["kind"] == "page" and view["page"] == 2 and view["page_count"] == 3
    assert view["boxes"], view
    for x, y, w, h in view["boxes"]:
        assert 0 <= x < 1 and 0 <= y < 1 and 0 < w <= 1 and 0 < h <= 1
        assert 0.2 < y < 0.5  # the two lines under twelve others
    image = alice.get(view["image"])
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    width, height = _png_size(image.content)
    assert width > 600 and abs(height / width - view["height"] / view["width"]) < 0.01
    # Another page of the same document: no boxes (the citation is not there).
    other = alice.get(f"/v1/documents/{doc_id}/view", params={"chunk": cited.id, "page": 3})
    assert other.json()["page"] == 3 and other.json()["boxes"] == []
    assert alice.get(f"/v1/documents/{doc_id}/pages/9").status_code == 404
    assert alice.get(f"/v1/documents/{doc_id}/view", params={"page": 9}).status_code == 404


def test_find_lines_matches_across_line_breaks_and_spacing() -> None:
    page = "Title\r\nConsensus  needs a\r\nquorum of voters.\r\nOther text"
    ranges = pdf_pages.find_lines(page, "Consensus needs a quorum of voters.\nnot there at all")
    assert len(ranges) == 1
    start, count = ranges[0]
    assert " ".join(page[start : start + count].split()) == "Consensus needs a quorum of voters."


def test_find_lines_follows_the_parse_across_hyphens_ligatures_and_columns() -> None:
    # The chunk's text is the parse's: "always" joined, "ﬁrst" spelt out, the column's end
    # and the next column's start one paragraph, the page number between them left out.
    page = (
        "Heading of another part\r\nthe first line of the left column\r\n"
        "two majorities al\ufffeways overlap in the ﬁrst voter and the\r\n"
        "same cluster of voters decides each term of office for us\r\n"
        "7\r\n"
        "candidate that gathers a quorum becomes the leader\r\nTerms\r\n"
        "the first line of the next part"
    )
    snippet = (
        "two majorities always overlap in the first voter and the same cluster of voters "
        "decides each term of office for us. The candidate that gathers a quorum becomes "
        "the leader"
    )
    stretches = [page[s : s + n] for s, n in pdf_pages.find_lines(page, snippet)]
    assert stretches == [
        "two majorities al\ufffeways overlap in the ﬁrst voter and the\r\n"
        "same cluster of voters decides each term of office for us",
        "candidate that gathers a quorum becomes the leader",
    ]
    # A word broken by a printed hyphen at a line end is one word too.
    broken = "an elec-\r\ntion ends it"
    assert pdf_pages.find_lines(broken, "an election ends it") == [(0, len(broken))]
    # Words in common by chance ("the first line") are not the passage.
    assert pdf_pages.find_lines(page, "nothing of this is on the page at all") == []


def test_png_encodes_rows_a_decoder_reads_back() -> None:
    pixels = bytes([255, 0, 0, 0, 255, 0, 9, 9]) + bytes([0, 0, 255, 1, 2, 3, 9, 9])
    data = pdf_pages.png(pixels, 2, 2, 8, 3)
    assert _png_size(data) == (2, 2)
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    assert zlib.decompress(idat) == b"\x00" + pixels[:6] + b"\x00" + pixels[8:14]


def test_folder_documents_download_while_unchanged_then_410_then_404(
    shelf: Shelf, alice: Api, notes: Path
) -> None:
    shelf.add(notes, user_id=alice.user.id)
    todo = next(d for d in shelf.documents() if d.rel_path == "todo.txt")
    r = alice.get(f"/v1/documents/{todo.id}/blob")
    assert r.status_code == 200
    assert r.content == (notes / "todo.txt").read_bytes()
    assert "filename*=UTF-8''todo.txt" in r.headers["content-disposition"]
    (notes / "todo.txt").write_text("Something else now.\n")
    changed = alice.get(f"/v1/documents/{todo.id}/blob")
    assert changed.status_code == 410 and changed.json()["error"]["code"] == "gone"
    assert alice.get(f"/v1/documents/{todo.id}/view").status_code == 410
    (notes / "todo.txt").unlink()
    gone = alice.get(f"/v1/documents/{todo.id}/blob")
    assert gone.status_code == 404 and "no longer there" in gone.json()["error"]["message"]


def test_another_users_document_is_404_on_every_reader_route(
    shelf: Shelf, alice: Api, bob: Api, notes: Path
) -> None:
    shelf.add(notes, user_id=alice.user.id)
    raft = next(d for d in shelf.documents() if d.rel_path == "projects/raft.md")
    chunk = _chunks(shelf, raft.id)[0]
    for url in (
        f"/v1/documents/{raft.id}/view",
        f"/v1/documents/{raft.id}/view?chunk={chunk.id}",
        f"/v1/documents/{raft.id}/blob",
        f"/v1/documents/{raft.id}/pages/1",
        f"/v1/chunks/{chunk.id}/view",
    ):
        assert bob.get(url).status_code == 404, url
        assert alice.get(url).status_code in (200, 404), url
    # A chunk of another document is not this document's citation.
    todo = next(d for d in shelf.documents() if d.rel_path == "todo.txt")
    assert alice.get(f"/v1/documents/{todo.id}/view?chunk={chunk.id}").status_code == 404


def test_documents_list_has_the_total_and_failures_are_listed_for_their_owner(
    shelf: Shelf, alice: Api, bob: Api, notes: Path
) -> None:
    (notes / "blob.md").write_bytes(b"\x00\x01binary")
    (notes / "bad.md").write_bytes(b"# Bad\n\n\xff\xfe\n")
    (notes / "locked.pdf").write_bytes(encrypted_pdf())
    shelf.add(notes, user_id=alice.user.id)
    page = alice.get("/v1/documents", params={"limit": 1}).json()
    assert len(page["documents"]) == 1 and page["total"] == 3
    assert bob.get("/v1/documents").json()["total"] == 0
    failures = alice.get("/v1/failures").json()
    by_name = {Path(f["path"]).name: f for f in failures["failures"]}
    assert failures["total"] == 3
    assert by_name["blob.md"]["retryable"] is False and "binary" in by_name["blob.md"]["reason"]
    assert by_name["blob.md"]["label"] == f"{notes.name}/blob.md"  # not the whole path
    # The same bytes never decode, nor open without a password.
    assert by_name["bad.md"]["retryable"] is False
    assert (
        by_name["locked.pdf"]["retryable"] is False
        and "encrypted" in by_name["locked.pdf"]["reason"]
    )
    assert bob.get("/v1/failures").json() == {"failures": [], "total": 0}


def test_a_binary_upload_is_not_retried(shelf: Shelf, alice: Api) -> None:
    r = alice.upload("blob.md", b"\x00\x01\x02 binary")
    drain(shelf)
    doc_id = r.json()["document_id"]
    job = alice.get(f"/v1/documents/{doc_id}").json()["job"]
    assert job["status"] == "failed" and job["retryable"] is False
    refused = alice.request("POST", f"/v1/documents/{doc_id}/retry")
    assert refused.status_code == 409 and "for good" in refused.json()["error"]["message"]


def test_links_show_as_written_and_vault_images_that_exist(
    shelf: Shelf, alice: Api, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    (vault / "assets").mkdir(parents=True)
    (vault / "assets" / "Diagram.PNG").write_bytes(b"\x89PNG fake")
    (vault / "Ideas.md").write_text(
        "# Ideas\n\nSee [[Raft Notes]], ![[Diagram.PNG]] and ![[Missing.png]].\n\n"
        "| a | b |\n|---|---|\n| [[Raft Notes\\|raft]] | x |\n"
    )
    (vault / "Raft Notes.md").write_text("# Raft Notes\n\nText.\n")
    shelf.add(vault, user_id=alice.user.id)
    ideas = next(d for d in shelf.documents() if d.rel_path == "Ideas.md")
    links = alice.get(f"/v1/documents/{ideas.id}").json()["links"]
    written = [link["written"] for link in links]
    assert "Raft Notes" in written and "Diagram.PNG" in written
    assert not any(w.endswith(("\\", "/")) for w in written), written
    present = {link["written"]: link.get("present") for link in links if link["embed"]}
    assert present == {"Diagram.PNG": True, "Missing.png": False}


LONG = " ".join([FILLER] * 4)
HOSTILE_HTML = f"""<!doctype html><html><head><title>Evil page</title>
<script>window.__xss = 'head'</script></head><body>
<h1 onclick="alert(1)">Welcome <img src=x onerror=alert(1)></h1>
<p>First paragraph <a href="javascript:alert(1)">click</a> with <b>bold</b>. {LONG}</p>
<p>{LONG}</p>
<h2>Details</h2><p>The cited words live here, past the heading. {LONG}</p>
<script>alert('body')</script><iframe src="javascript:alert(2)"></iframe>
</body></html>""".encode()

RST = (
    f"Guide\n=====\n\nIntro text. {LONG}\n\n{LONG}\n\n"
    ".. raw:: html\n\n   <script>alert('raw')</script>\n\n"
    ".. include:: /etc/passwd\n\n"
    f"Restore\n-------\n\nTo restore a snapshot, stop the server first. {LONG}\n"
)


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Consensus", level=1)
    document.add_paragraph(f"Raft keeps a replicated log consistent. {LONG}")
    document.add_paragraph(LONG)
    document.add_heading("Leader election", level=2)
    document.add_paragraph(f"A candidate asks for votes after a timeout. {LONG}")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def _texts(block: dict[str, Any]) -> str:
    return "".join(run["text"] for run in block.get("inlines", []))


@pytest.mark.parametrize(
    ("name", "cited_words", "heading"),
    [
        ("page.html", "cited words live here", "Details"),
        ("guide.rst", "restore a snapshot", "Restore"),
        ("notes.docx", "candidate asks for votes", "Leader election"),
    ],
)
def test_html_rst_and_docx_open_at_their_heading_as_parsed_text(
    shelf: Shelf, alice: Api, name: str, cited_words: str, heading: str
) -> None:
    data = {"page.html": HOSTILE_HTML, "guide.rst": RST.encode(), "notes.docx": _docx()}[name]
    r = alice.upload(name, data)
    drain(shelf)
    doc_id = r.json()["document_id"]
    assert shelf.document(doc_id).document.status == "complete"
    cited = next(c for c in _chunks(shelf, doc_id) if cited_words in c.text)
    view = alice.get(f"/v1/documents/{doc_id}/view", params={"chunk": cited.id}).json()
    assert view["kind"] == "text"
    target = next(b for b in view["blocks"] if b["id"] == view["target"])
    assert target["kind"] == "heading" and _texts(target) == heading
    assert any(b.get("cited") and cited_words in json.dumps(b) for b in view["blocks"])
    text = " ".join(_all_strings(view["blocks"]))
    # The parsed structure, never the original markup: no script text, no raw HTML,
    # no included file, no attributes.
    for absent in ("alert(", "<script", "onclick", "onerror", "root:", "javascript:"):
        assert absent not in text, absent
    assert not any("href" in run for b in view["blocks"] for run in b.get("inlines", []))


# An event note shaped like a community vault's: short sections, a line or two each.
EVENT_NOTE = """\
# Obsidian October 2021

Plugins and themes.

## Prizes

### Winner

A $500 credit.

### Runners-up

Three runner-ups each receive $200 Obsidian credit.

## Timeline

Submissions close on October 31st.
"""


def test_a_short_section_is_cited_and_opened_at_its_own_heading(
    shelf: Shelf, alice: Api, tmp_path: Path
) -> None:
    # Short sections once shared a snippet cited by its first content's heading: the
    # runners-up's prize was cited, and opened, at the top of the note. They still share
    # one (packed), which is cited, and opened, under the heading the words are under.
    root = tmp_path / "vault"
    root.mkdir()
    (root / "Obsidian October 2021.md").write_text(EVENT_NOTE)
    shelf.add(root, user_id=alice.user.id)
    for mode in ("lexical", "vector", "hybrid"):
        body = {"query": "how much credit does each runner-up receive", "mode": mode}
        hits = alice.request("POST", "/v1/search", json=body).json()["hits"]
        top = next(h for h in hits if "runner-ups" in h["text"])
        assert top["citation"]["heading_path"][-1] == "Runners-up", mode
    anchor = top["citation"]["anchor"]
    assert EVENT_NOTE[anchor:].startswith("### Runners-up")
    (doc,) = shelf.documents(user_id=alice.user.id)
    params = {"chunk": top["chunk_id"], "at": anchor}
    view = alice.get(f"/v1/documents/{doc.id}/view", params=params).json()
    assert view["heading_path"] == ["Obsidian October 2021", "Prizes", "Runners-up"]
    by_id = {b["id"]: b for b in view["blocks"]}
    assert by_id[view["target"]]["inlines"] == [{"text": "Runners-up"}]
    marked = json.dumps([b for b in view["blocks"] if b.get("cited")])
    assert "runner-ups" in marked  # the snippet's blocks are marked, the page at its heading


def test_page_renders_are_bounded_server_wide_and_per_user(
    shelf: Shelf, client: TestClient, alice: Api, bob: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 parallel page requests from one user started 43 processes (~2.2 GB): renders
    at once are bounded, one user gets a share of them, the rest are told to come back."""
    from docshelf.api.renders import RenderGate

    carol = _api(shelf, client, "carol")
    docs = {}
    for api in (alice, bob, carol):
        r = api.upload("paper.pdf", paged_pdf([["Some words on a page of a paper."]]))
        docs[api.user.id] = r.json()["document_id"]
    drain(shelf)
    gate = RenderGate(total=2, per_user=1, wait_s=0)
    client.app.state.renders = gate  # type: ignore[attr-defined]
    release = threading.Event()
    inside: list[str] = []
    most = [0]
    lock = threading.Lock()

    def render(data: bytes, page: int, *args: object, **kwargs: object) -> bytes:
        with lock:
            inside.append("in")
            most[0] = max(most[0], gate.running())
        release.wait(60)
        return b"\x89PNG fake"

    monkeypatch.setattr(pdf_pages, "page_image", render)

    def page(api: Api) -> Any:
        return api.get(f"/v1/documents/{docs[api.user.id]}/pages/1")

    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(page, alice)
        with gate.changed:
            assert gate.changed.wait_for(lambda: gate.running() == 1, timeout=30)
        again = page(alice)  # over alice's share
        assert again.status_code == 503 and again.headers["retry-after"] == "2"
        assert again.json()["error"]["code"] == "busy"
        second = pool.submit(page, bob)  # another user still finds a slot
        with gate.changed:
            assert gate.changed.wait_for(lambda: gate.running() == 2, timeout=30)
        full = page(carol)
        assert full.status_code == 503 and full.headers["retry-after"]
        release.set()
        assert first.result(timeout=60).status_code == 200
        assert second.result(timeout=60).status_code == 200
    assert len(inside) == 2 and most[0] == 2 and gate.running() == 0
    assert page(carol).status_code == 200  # slots freed
