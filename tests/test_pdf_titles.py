"""A PDF's title and headings are not its authors, affiliations or page numbers: small
papers written here, on the fly (reportlab), each showing one rule of
``parse.pdf_bylines``, ``parse.pdf_title`` or ``parse.pdf_structure`` at work, and that
real titles and headings stay."""

from __future__ import annotations

import io
import random

import pytest
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse.pdf import parse_pdf
from tests import fixtures_formats as fx

Run = tuple[float, float, str, float]  # x, y, text, font size


@pytest.fixture
def rng() -> random.Random:
    return random.Random(36)


def _pdf(pages: list[list[Run]], outline: tuple[tuple[str, int, float], ...] = ()) -> bytes:
    """Pages of (x, y, text, size) runs in Helvetica; ``outline``: (title, page, y) entries."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=letter)
    for number, page in enumerate(pages, 1):
        for x, y, text, size in page:
            c.setFont("Helvetica", size)
            c.drawString(x, y, text)
        for n, (entry, on, y) in enumerate(outline):
            if on == number:
                c.bookmarkPage(f"b{n}", fit="XYZ", top=y + 12)
                c.addOutlineEntry(entry, f"b{n}", level=0)
        c.showPage()
    c.save()
    return buf.getvalue()


def _body(rng: random.Random, n: int, *, top: float, x: float = 50) -> list[Run]:
    """``n`` lines of 10 pt running text from ``top`` down."""
    return [(x, top - 12 * i, line, 10) for i, line in enumerate(fx.lines(rng, n))]


def headings(doc: ParsedDocument) -> list[str]:
    return [doc.body[b.start : b.end] for b in doc.blocks if b.kind is BlockKind.HEADING]


def paragraphs(doc: ParsedDocument) -> list[str]:
    return [doc.body[b.start : b.end] for b in doc.blocks if b.kind is BlockKind.PARAGRAPH]


def test_an_affiliation_set_above_the_title_is_neither_title_nor_heading(
    rng: random.Random,
) -> None:
    page = [
        (50, 750, "Department of Computer Science, University of Leeds", 18),
        (50, 720, "Consensus for the Rest of Us", 16),
        (50, 690, "Abstract", 12),
        *_body(rng, 6, top=670),
        (50, 590, "1 Introduction", 14),
        *_body(rng, 20, top=570),
    ]
    doc = parse_pdf(_pdf([page]))
    assert doc.title == "Consensus for the Rest of Us"
    assert headings(doc) == ["Consensus for the Rest of Us", "Abstract", "1 Introduction"]
    assert "Department of Computer Science, University of Leeds" in paragraphs(doc)


def test_an_author_list_below_the_title_is_not_a_heading(rng: random.Random) -> None:
    page = [
        (50, 750, "Consensus for the Rest of Us", 18),
        (50, 722, "Diego Ongaro\u2217, John Ousterhout\u2020 and Ann Wollrath", 14),
        (50, 702, "ongaro@cs.stanford.edu", 12),
        (50, 686, "September 2014", 12),
        (50, 660, "Abstract", 12),
        *_body(rng, 6, top=640),
        (50, 560, "1 Introduction", 14),
        *_body(rng, 20, top=540),
    ]
    doc = parse_pdf(_pdf([page]))
    assert doc.title == "Consensus for the Rest of Us"
    assert headings(doc) == ["Consensus for the Rest of Us", "Abstract", "1 Introduction"]
    for byline in ("Diego Ongaro\u2217, John Ousterhout\u2020 and Ann Wollrath", "September 2014"):
        assert byline in doc.body
    # everything under the title, authors included, is in the title's section
    assert {b.heading_path for b in doc.blocks if b.page == 1}.issubset(
        {(doc.title,), (doc.title, "Abstract"), (doc.title, "1 Introduction")}
    )


def test_a_name_alone_over_an_email_address_is_not_a_heading(rng: random.Random) -> None:
    page = [
        (50, 750, "Chain Replication for Supporting High Throughput", 18),
        (50, 722, "Robbert van Renesse", 14),
        (50, 708, "rvr@cs.cornell.edu", 10),
        (50, 686, "Fred B. Schneider", 14),
        (50, 672, "fbs@cs.cornell.edu", 10),
        (50, 644, "Abstract", 14),
        *_body(rng, 20, top=624),
    ]
    doc = parse_pdf(_pdf([page]))
    assert headings(doc) == ["Chain Replication for Supporting High Throughput", "Abstract"]


def test_a_running_head_with_its_page_number_is_not_a_heading(rng: random.Random) -> None:
    """A book's running heads: the page's printed number (the PDF's less 20), then its
    chapter, on left pages; its section, then the number, on right pages. Each names its
    chapter or section on too few pages to be furniture by repeating."""
    pages = []
    for number in range(1, 25):
        chapter = "1 Processes" if number < 17 else "2 Concurrency"
        section = "1.1 Introduction" if number < 17 else "2.2 Traces"
        even = number % 2 == 0
        head = f"{number + 20} {chapter}" if even else f"{section} {number + 20}"
        page = [(50, 760, head, 8), *_body(rng, 20, top=730)]
        if number == 22:  # section 2.3 starts low on page 22
            page.append((50, 480, "2.3 Concurrency", 11))
        pages.append([*page, *_body(rng, 15, top=460)])
    doc = parse_pdf(_pdf(pages, outline=(("Concurrency", 22, 480),)))
    assert headings(doc) == ["2.3 Concurrency"]  # the outline's entry: not "42 2 Concurrency"
    assert not any(p.startswith(("1.1 Introduction", "2.2 Traces")) for p in paragraphs(doc))
    assert not any(p.endswith(("1 Processes", "2 Concurrency")) for p in paragraphs(doc))


def test_a_continued_from_page_line_is_not_a_heading(rng: random.Random) -> None:
    page = [
        *_body(rng, 20, top=750),
        (50, 500, "C. A. R. Hoare--cont'd from page 580", 14),
        *_body(rng, 20, top=480),
    ]
    doc = parse_pdf(_pdf([_body(rng, 40, top=750), page]))
    assert headings(doc) == []
    assert "C. A. R. Hoare--cont'd from page 580" in paragraphs(doc)


def test_a_stray_mark_between_the_titles_words_goes(rng: random.Random) -> None:
    page = [
        (50, 740, "Epidemic Algorithms for Replicated", 20),
        (50, 716, ". Database Maintenance", 20),  # a speck of dust before the line, read
        *_body(rng, 30, top=680),
    ]
    doc = parse_pdf(_pdf([page]))
    assert doc.title == "Epidemic Algorithms for Replicated Database Maintenance"
    assert headings(doc) == [doc.title]


def test_a_title_in_the_body_size_is_the_line_above_the_authors(rng: random.Random) -> None:
    page = [
        (250, 700, "Data Compression", 10),
        (200, 660, "Debra A. Lelewer and Daniel S. Hirschberg", 10),
        (50, 600, "Abstract", 10),
        (50, 580, "This paper surveys a variety of data compression methods spanning", 10),
        *_body(rng, 20, top=568),
    ]
    doc = parse_pdf(_pdf([page]))
    assert doc.title == "Data Compression"


def test_a_title_beside_formulas_in_the_other_column_is_read_alone(rng: random.Random) -> None:
    """Page 1 of a two-column paper whose right column opens with formulas set in cells:
    the title, on the left, is not joined to the formulas beside it."""
    left: list[Run] = [
        (44, 727, "An Axiomatic Basis for", 17.5),
        (44, 705, "Computer Programming", 17.5),
        (44, 674, "C. A. R. Hoare", 9.6),
        (44, 662, "The Queen's University of Belfast, Northern Ireland", 10.3),
        *[(44, 640 - 12 * i, line, 9.6) for i, line in enumerate(fx.lines(rng, 14, 44))],
        (44, 460, "1. Introduction", 11),
        *[(44, 440 - 12 * i, line, 9.6) for i, line in enumerate(fx.lines(rng, 30, 44))],
    ]
    formulas = ["x=y", "y<r", "+y", "Xq", "=r", "+q"]  # cells 36 pt apart, gaps over an em
    right: list[Run] = [(313, 733, "of axioms it is possible to deduce such simple", 9.6)]
    for i in range(8):  # rows of formula cells: more cells than the column has lines
        right += [(313 + 36 * k, 715 - 18 * i, cell, 10.3) for k, cell in enumerate(formulas)]
    right += [(313, 560 - 12 * i, line, 9.6) for i, line in enumerate(fx.lines(rng, 36, 44))]
    doc = parse_pdf(_pdf([left + right]))
    assert doc.title == "An Axiomatic Basis for Computer Programming"
    assert headings(doc) == [doc.title, "1. Introduction"]


def test_real_titles_and_headings_stay(rng: random.Random) -> None:
    """Capitalised headings whose words the text uses, on page 1; a company's name in a
    heading past the first pages; a title that names a data center."""
    first = [
        (50, 750, "Mesos: A Platform for Resource Sharing in the Data Center", 18),
        (50, 720, "Leader Election", 14),
        *_body(rng, 8, top=700),
        (50, 590, "Log Agreement", 14),
        *_body(rng, 30, top=570),
    ]
    middle = _body(rng, 50, top=750)
    last = [
        *_body(rng, 10, top=750),
        (50, 610, "About Acme Networks, Inc.", 14),
        *_body(rng, 10, top=590),
    ]
    doc = parse_pdf(_pdf([first, middle, last]))
    assert doc.title == "Mesos: A Platform for Resource Sharing in the Data Center"
    assert headings(doc) == [
        doc.title,
        "Leader Election",
        "Log Agreement",
        "About Acme Networks, Inc.",
    ]
