"""PDF, HTML, DOCX and reStructuredText parsing, hostile files and the parse limits.

Every fixture is generated here (tests/fixtures_formats.py): PDFs with
reportlab, DOCX with python-docx, HTML and RST as strings.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from docshelf.chunk import ChunkSettings, chunk_document
from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, Chunk, ParsedDocument, Tier, fingerprint
from docshelf.parse import FILE_TYPES, file_type_for, parse
from docshelf.parse.sandbox import run_limited
from docshelf.shelf import Shelf
from tests import fixtures_formats as fx


def texts(doc: ParsedDocument, kind: BlockKind | None = None) -> list[str]:
    return [doc.body[b.start : b.end] for b in doc.blocks if kind is None or b.kind is kind]


def headings(doc: ParsedDocument) -> list[tuple[int, str]]:
    return [(b.level, doc.body[b.start : b.end]) for b in doc.blocks if b.kind is BlockKind.HEADING]


def chunks_of(doc: ParsedDocument, data: bytes) -> list[Chunk]:
    chunks = chunk_document(doc, fp=fingerprint(data), title="T", settings=ChunkSettings())
    assert chunks, "every parsed document gives chunks"
    covered = "".join(c.text for c in chunks if c.tier is Tier.SNIPPET)
    assert "".join(covered.split()) == "".join(doc.body.split())
    return chunks


@pytest.fixture(scope="module")
def rng() -> random.Random:
    return random.Random(5)


@pytest.fixture(autouse=True)
def no_child_left() -> object:
    yield
    assert multiprocessing.active_children() == []


# -- registration ---------------------------------------------------------------------------


def test_new_file_types_are_registered() -> None:
    for name, kind in {
        "a.pdf": "pdf",
        "b.PDF": "pdf",
        "c.html": "html",
        "d.htm": "html",
        "e.docx": "docx",
        "f.rst": "rst",
        "g.md": "markdown",
        "h.txt": "text",
    }.items():
        assert file_type_for(name) == kind
    assert {".pdf", ".html", ".htm", ".docx", ".rst"} <= set(FILE_TYPES)
    assert file_type_for("old.doc") is None


def test_binary_formats_skip_text_checks() -> None:
    # NUL bytes would be "binary content" for text; a PDF parser judges PDFs itself.
    with pytest.raises(InvalidInput, match="not a PDF"):
        parse(b"\x00\x01\x02 binary", "pdf")
    with pytest.raises(InvalidInput, match="empty file"):
        parse(b"  \n", "docx")


# -- PDF ------------------------------------------------------------------------------------


def test_pdf_blocks_carry_their_page_and_chunks_their_range(rng: random.Random) -> None:
    pages = [
        [f"page {n} line {i} " + " ".join(fx.lines(rng, 1, 60)) for i in range(8)]
        for n in (1, 2, 3)
    ]
    data = fx.paged_pdf(pages)
    doc = parse(data, "pdf")
    assert doc.page_count == 3 and doc.pages_without_text == 0
    for block in doc.blocks:
        assert block.page is not None
        assert f"page {block.page} line" in doc.body[block.start : block.end]
    assert {b.page for b in doc.blocks} == {1, 2, 3}
    chunks = chunks_of(doc, data)
    assert all(c.page_start is not None and c.page_end is not None for c in chunks)
    on_two = [c for c in chunks if c.tier is Tier.SNIPPET and "page 2 line" in c.text]
    assert on_two and all(c.page_start <= 2 <= c.page_end for c in on_two)  # type: ignore[operator]


def test_pdf_page_without_text_is_counted(rng: random.Random) -> None:
    doc = parse(fx.paged_pdf([fx.lines(rng, 3), [], fx.lines(rng, 3)]), "pdf")
    assert doc.page_count == 3
    assert doc.pages_without_text == 1
    assert {b.page for b in doc.blocks} == {1, 3}


def test_pdf_two_columns_read_left_column_first(rng: random.Random) -> None:
    doc = parse(fx.two_column_pdf(rng, rows=30), "pdf")
    body = doc.body
    lefts = [body.index(f"Left {i} ") for i in range(30)]
    rights = [body.index(f"Right {i} ") for i in range(30)]
    assert lefts == sorted(lefts) and rights == sorted(rights)
    assert max(lefts) < min(rights)
    assert headings(doc)[0] == (1, "Consensus in Two Columns")
    assert doc.title == "Consensus in Two Columns"


def test_pdf_table_is_one_block_and_one_snippet(rng: random.Random) -> None:
    data = fx.table_pdf(rng)
    doc = parse(data, "pdf")
    tables = texts(doc, BlockKind.TABLE)
    assert tables == ["\n".join(" | ".join(row) for row in fx.TABLE)]
    snippets = [c for c in chunks_of(doc, data) if c.tier is Tier.SNIPPET]
    assert any(tables[0] in c.text for c in snippets)


def test_pdf_headings_from_font_size(rng: random.Random) -> None:
    data = fx.paged_pdf(
        [fx.lines(rng, 6), fx.lines(rng, 6)], headings=["Introduction", "Method"], title="untitled"
    )
    doc = parse(data, "pdf")
    assert headings(doc) == [(1, "Introduction"), (1, "Method")]
    paths = {b.page: b.heading_path for b in doc.blocks if b.kind is BlockKind.PARAGRAPH}
    assert paths == {1: ("Introduction",), 2: ("Method",)}
    assert doc.title == "Introduction"  # "untitled" metadata is a placeholder


def test_pdf_font_size_counts_the_text_matrix(rng: random.Random) -> None:
    doc = parse(fx.scaled_heading_pdf(rng), "pdf")
    assert headings(doc) == [(1, "Scaled Heading")]


def test_pdf_headings_from_outline(rng: random.Random) -> None:
    doc = parse(fx.outline_pdf(rng), "pdf")
    assert headings(doc) == [(1, "Overview"), (2, "Goals"), (1, "Design"), (2, "Log")]
    last = doc.blocks[-1]
    assert last.kind is BlockKind.PARAGRAPH and last.heading_path == ("Design", "Log")
    assert last.page == 2


def test_pdf_title_from_metadata(rng: random.Random) -> None:
    doc = parse(fx.paged_pdf([fx.lines(rng, 2)], title="Raft Explained"), "pdf")
    assert doc.title == "Raft Explained"


def test_pdf_password_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    data = fx.encrypted_pdf("secret")
    with pytest.raises(InvalidInput, match=r"^encrypted \(password required"):
        parse(data, "pdf")
    monkeypatch.setenv("DOCSHELF_PDF_PASSWORD", "wrong")
    with pytest.raises(InvalidInput, match="DOCSHELF_PDF_PASSWORD does not open it"):
        parse(data, "pdf")
    monkeypatch.setenv("DOCSHELF_PDF_PASSWORD", "secret")
    assert "Sealed text" in parse(data, "pdf").body


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda rng: fx.table_pdf(rng)[:1500], r"^truncated PDF"),
        (lambda rng: fx.png_bytes(), r"^not a PDF \(PNG image\)$"),
        (lambda rng: os.urandom(4096), r"^not a PDF"),
        (lambda rng: b"%PDF-1.7\n" + os.urandom(3000) + b"\n%%EOF\n", r"^malformed PDF: "),
        (lambda rng: b"", r"^empty file$"),
    ],
    ids=["truncated", "png", "random", "garbage-body", "empty"],
)
def test_broken_pdfs_fail_with_a_reason(
    rng: random.Random, make: Callable[[random.Random], bytes], reason: str
) -> None:
    with pytest.raises(InvalidInput, match=reason):
        parse(make(rng), "pdf")
    assert "ok" in parse(b"still ok", "text").body  # this process is fine


def test_thousands_of_empty_pages_fail_fast_as_no_text_layer() -> None:
    data = fx.blank_pdf(3000)
    with pytest.raises(InvalidInput, match=r"^no text layer on any of 3000 pages \(scanned\?\)$"):
        parse(data, "pdf")


# -- DOCX -----------------------------------------------------------------------------------


def test_docx_headings_lists_and_tables() -> None:
    data = fx.docx_bytes()
    doc = parse(data, "docx")
    assert doc.title == "Raft Notes"
    assert headings(doc) == [(1, "Consensus"), (2, "Leader election"), (2, "Log replication")]
    assert texts(doc, BlockKind.LIST) == ["- first item\n- second item"]
    assert texts(doc, BlockKind.TABLE) == ["\n".join(" | ".join(r) for r in fx.TABLE[:3])]
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert table.heading_path == ("Consensus", "Leader election")
    last = doc.blocks[-1]
    assert last.heading_path == ("Consensus", "Log replication")
    assert chunks_of(doc, data)[0].page_start is None


def test_docx_zip_bomb_is_refused_before_inflating() -> None:
    with pytest.raises(InvalidInput, match=r"would inflate \d+ times \(a zip bomb\?\)"):
        parse(fx.docx_zip_bomb(120), "docx")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (os.urandom(5000), r"^not a DOCX file \(not a zip archive\)$"),
        (b"PK\x03\x04" + os.urandom(2000), r"^not a DOCX file \(damaged zip archive"),
        (b"\xd0\xcf\x11\xe0" + bytes(500), r"legacy Word \.doc"),
    ],
    ids=["random", "damaged-zip", "legacy-doc"],
)
def test_broken_docx_fail_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        parse(data, "docx")


# -- HTML -----------------------------------------------------------------------------------

PAGE = """<!doctype html>
<html><head><title>Raft | Docs</title><style>p { color: red }</style>
<script>console.log("never indexed")</script></head>
<body>
<header><a href="/">Site name</a></header>
<nav><ul><li><a href="/a">Menu A</a></li><li><a href="/b">Menu B</a></li></ul></nav>
<main>
  <h1>Raft</h1>
  <p>Raft is a <b>consensus</b> algorithm.<br>It is easy to follow.</p>
  <h2>Election</h2>
  <ul><li>votes<ul><li>majority</li></ul></li><li>terms</li></ul>
  <pre><code>def elect():
    return majority</code></pre>
  <table><tr><th>Server</th><th>Term</th></tr><tr><td>alpha</td><td>3</td></tr></table>
  <h2>Log</h2>
  <p>Entries are appended.</p>
</main>
<aside>Related posts</aside>
<footer>Copyright footer</footer>
</body></html>"""


def test_html_main_content_with_structure() -> None:
    data = PAGE.encode()
    doc = parse(data, "html")
    assert doc.title == "Raft | Docs"
    for noise in ("never indexed", "color", "Menu A", "Site name", "Related", "Copyright"):
        assert noise not in doc.body
    assert headings(doc) == [(1, "Raft"), (2, "Election"), (2, "Log")]
    assert texts(doc, BlockKind.LIST) == ["- votes\n  - majority\n- terms"]
    assert texts(doc, BlockKind.CODE) == ["def elect():\n    return majority"]
    assert texts(doc, BlockKind.TABLE) == ["Server | Term\nalpha | 3"]
    assert "Raft is a consensus algorithm. It is easy to follow." in texts(doc)
    assert doc.blocks[-1].heading_path == ("Raft", "Log")
    chunks_of(doc, data)


def test_html_menus_outside_main_are_dropped_but_a_page_of_links_is_kept() -> None:
    links = [f'<a href="/{i}">link {i}</a>' for i in range(5)]
    page = f"<html><body><div>{' '.join(links)}</div><p>{'Body text. ' * 20}</p></body></html>"
    assert "link" not in parse(page.encode(), "html").body
    items = "".join(f"<li>{a}</li>" for a in links)
    bookmarks = f"<html><body><ul>{items}</ul></body></html>"
    assert "link 4" in parse(bookmarks.encode(), "html").body


def test_html_legacy_encoding_from_meta() -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>caf\xe9</p></body></html>'
    assert parse(page.encode("latin-1"), "html").body == "caf\xe9"


def test_html_megabytes_of_nested_tags_do_not_hang(rng: random.Random) -> None:
    with pytest.raises(InvalidInput, match="nested more than 255 elements deep"):
        parse(("<div>" * 400_000 + "deep text").encode(), "html")
    doc = parse(
        ("<p>kept</p>" + "<span>" * 400_000 + "lost" + "</span>" * 400_000).encode(), "html"
    )
    assert doc.body == "kept" and "nested more than 255" in doc.warnings[0]


def test_html_without_text_fails() -> None:
    with pytest.raises(InvalidInput, match="no text"):
        parse(b"<html><body><script>x()</script></body></html>", "html")


# -- reStructuredText -----------------------------------------------------------------------

RST = """\
=========
Raft Book
=========

Raft is a consensus algorithm.

Leader election
===============

A candidate asks for votes.

::

    def elect():
        return majority

Terms
-----

* one
* two

+--------+------+
| Server | Term |
+========+======+
| alpha  | 3    |
+--------+------+

.. include:: /etc/hostname

An :unknown:`role` is only a warning.

Log
===

Entries are appended.
"""


def test_rst_sections_code_and_tables(capfd: pytest.CaptureFixture[str]) -> None:
    data = RST.encode()
    doc = parse(data, "rst")
    assert doc.title == "Raft Book"
    assert headings(doc) == [(1, "Raft Book"), (2, "Leader election"), (3, "Terms"), (2, "Log")]
    assert texts(doc, BlockKind.CODE) == ["def elect():\n    return majority"]
    assert texts(doc, BlockKind.TABLE) == ["Server | Term\nalpha | 3"]
    assert texts(doc, BlockKind.LIST) == ["- one\n- two"]
    table = next(b for b in doc.blocks if b.kind is BlockKind.TABLE)
    assert table.heading_path == ("Raft Book", "Leader election", "Terms")
    assert doc.blocks[-1].heading_path == ("Raft Book", "Log")
    chunks_of(doc, data)
    assert capfd.readouterr().err == ""  # docutils' warnings are not printed


SPHINX = """\
Configuration
=============

- :data:`MAX_FORM_PARTS` limits the fields parsed.

Limits
    :data:`MAX_CONTENT_LENGTH` caps a request body.

.. py:data:: SEND_FILE_MAX_AGE_DEFAULT
    :noindex:

    When serving files, set the cache control max age.

    Default: ``None``

.. versionadded:: 2.0
    The *session* interface.

.. sourcecode:: python

    def view(*args): return "ok"

.. toctree::
    :maxdepth: 2

    quickstart
    tutorial/index

.. autoclass:: flask.Flask
"""


def test_rst_keeps_the_text_of_sphinx_directives_and_drops_docutils_messages() -> None:
    """Directives docutils does not know (Sphinx's) keep their argument and body: a
    config key and its description are found, not an error message; docutils' messages
    about unknown roles are not part of the text."""
    doc = parse(SPHINX.encode(), "rst")
    assert "(INFO" not in doc.body and "ERROR" not in doc.body and "Unknown" not in doc.body
    assert "- :data:`MAX_FORM_PARTS` limits the fields parsed." in texts(doc, BlockKind.LIST)
    assert "- Limits: :data:`MAX_CONTENT_LENGTH` caps a request body." in texts(doc, BlockKind.LIST)
    paragraphs = texts(doc, BlockKind.PARAGRAPH)
    for line in (
        "SEND_FILE_MAX_AGE_DEFAULT",
        "When serving files, set the cache control max age.",
        "Default: None",
        "New in version 2.0.",
        "The session interface.",
        "flask.Flask",
    ):
        assert line in paragraphs
    assert texts(doc, BlockKind.CODE) == ['def view(*args): return "ok"']
    assert "noindex" not in doc.body and "quickstart" not in doc.body  # options, a toctree
    assert all(b.heading_path == ("Configuration",) for b in doc.blocks[1:])
    chunks_of(doc, SPHINX.encode())


@pytest.mark.parametrize(
    "text",
    [
        ".. py:data::\n",  # no argument, no body
        ".. note::\n",  # a known directive without its content: docutils' own error
        ".. x::   \n    :opt:\n",  # only an option
        ".. py:function:: f(`a`, ``b``)\n\n    .. py:data:: nested\n\n        deep\n",
        ".. sourcecode::\n",
        "Text\n\n.. versionchanged::\n",
        ".. raw:: html\n\n    <script>alert(1)</script>\n",  # raw is disabled: left out
    ],
)
def test_rst_unknown_directives_at_their_edges(text: str) -> None:
    """Empty, option-only, nested and quoted directives: a document or a clear error,
    never a crash, and never docutils' messages in the text."""
    try:
        doc = parse(("Title\n=====\n\n" + text).encode(), "rst")
    except InvalidInput:
        return
    assert "ERROR" not in doc.body and "(INFO" not in doc.body
    assert "script" not in doc.body and "html" not in doc.body


def test_rst_goes_through_text_decoding() -> None:
    with pytest.raises(InvalidInput, match="binary content"):
        parse(b"Title\n=====\n\x00", "rst")


# -- limits ---------------------------------------------------------------------------------


def sleepy(data: bytes) -> ParsedDocument:
    time.sleep(30)
    return ParsedDocument(body="", blocks=())


def hog(data: bytes) -> ParsedDocument:
    hoard = [bytearray(16 * 1024 * 1024) for _ in range(64)]  # 1 GiB
    return ParsedDocument(body=str(len(hoard)), blocks=())


def crash(data: bytes) -> ParsedDocument:
    os.kill(os.getpid(), signal.SIGSEGV)
    return ParsedDocument(body="", blocks=())


def buggy(data: bytes) -> ParsedDocument:
    raise ValueError("unexpected " + data.decode())


def test_timeout_kills_the_parser() -> None:
    # the limit's message, not the 30 s parse's result (no wall-clock bound: CI is busy)
    with pytest.raises(InvalidInput, match=r"^pdf parser exceeded the 0\.3 s time limit$"):
        run_limited(sleepy, b"", "pdf", timeout_s=0.3)


def test_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch, rng: random.Random) -> None:
    monkeypatch.setenv("DOCSHELF_PARSE_TIMEOUT_S", "0.001")
    with pytest.raises(InvalidInput, match="time limit"):
        parse(fx.table_pdf(rng), "pdf")
    monkeypatch.setenv("DOCSHELF_PARSE_TIMEOUT_S", "soon")
    with pytest.raises(InvalidInput, match="DOCSHELF_PARSE_TIMEOUT_S must be a positive number"):
        parse(fx.table_pdf(rng), "pdf")


def test_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSHELF_PARSE_MEMORY_MB", "128")
    with pytest.raises(InvalidInput, match=r"^html parser exceeded the 128 MB memory limit$"):
        run_limited(hog, b"", "html")


def test_crash_and_untranslated_errors_become_reasons() -> None:
    with pytest.raises(InvalidInput, match=r"^docx parser crashed \(signal 11\)$"):
        run_limited(crash, b"", "docx")
    with pytest.raises(InvalidInput, match=r"^html parser failed: ValueError: unexpected x$"):
        run_limited(buggy, b"x", "html")


# -- a folder with good and hostile files ---------------------------------------------------


def test_folder_with_hostile_files_indexes_the_rest(
    shelf: Shelf, tmp_path: Path, rng: random.Random
) -> None:
    folder = tmp_path / "library"
    folder.mkdir()
    good = {
        "paper.pdf": fx.paged_pdf([fx.lines(rng, 5), fx.lines(rng, 5)], headings=["Paper"]),
        "page.html": PAGE.encode(),
        "notes.docx": fx.docx_bytes(),
        "book.rst": RST.encode(),
    }
    bad = {
        "truncated.pdf": "truncated PDF",
        "image.pdf": "not a PDF (PNG image)",
        "sealed.pdf": "encrypted",
        "scan.pdf": "no text layer on any of 2 pages",
        "bomb.docx": "zip bomb",
        "noise.docx": "not a DOCX file",
    }
    content = {
        "truncated.pdf": fx.table_pdf(rng)[:1200],
        "image.pdf": fx.png_bytes(),
        "sealed.pdf": fx.encrypted_pdf(),
        "scan.pdf": fx.blank_pdf(2),
        "bomb.docx": fx.docx_zip_bomb(120),
        "noise.docx": os.urandom(3000),
    }
    for name, data in {**good, **content}.items():
        (folder / name).write_bytes(data)
    report = shelf.add(folder)
    assert report.added == len(good)
    reasons = {Path(f.path).name: f.reason for f in report.failures}
    assert set(reasons) == set(bad)
    for name, reason in bad.items():
        assert reason in reasons[name], (name, reasons[name])
    hits = shelf.search("replicated log", limit=5)
    assert hits


def test_html_refuses_binary_content_as_the_text_formats_do_but_reads_utf16() -> None:
    elf = b"\x7fELF\x02\x01\x01\x00" + bytes(64) + b"<html><p>linker strings</p></html>"
    with pytest.raises(InvalidInput, match=r"^binary content, not text$"):
        parse(elf, "html")
    page = "<html><body><p>Written in UTF-16 with its mark.</p></body></html>"
    for codec in ("utf-16-le", "utf-16-be"):
        bom = b"\xff\xfe" if codec.endswith("le") else b"\xfe\xff"
        assert parse(bom + page.encode(codec), "html").body == "Written in UTF-16 with its mark."
