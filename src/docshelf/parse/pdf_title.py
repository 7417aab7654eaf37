"""A PDF's title, from its first page, once its headings are found.

The title is the Title metadata unless that is a placeholder
(:func:`placeholder_title`); else page 1's largest short text when it stands out
(:func:`title_lines`) — never the authors, their affiliations or the date
(``parse.pdf_structure.bylines``), and before the abstract; else, when nothing
stands out, the line right above the authors (:func:`title_above_authors`); else
the first heading. A title set on several lines that are headings becomes one
heading (:func:`one_title_heading`). A lone mark between the title's words goes
(``parse.pdf_text.without_stray_marks``).

Thresholds and patterns are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import itertools

from docshelf.model import BlockKind
from docshelf.parse.pdf_bylines import is_author_list, is_person_name, lower_case_words
from docshelf.parse.pdf_layout import Piece
from docshelf.parse.pdf_structure import bylines, short
from docshelf.parse.pdf_text import heading_rejection, without_stray_marks
from docshelf.parse.pdf_thresholds import (
    ABSTRACT,
    PLACEHOLDER_TITLE,
    TITLE_LINE_SIZE_TOLERANCE,
    TITLE_MAX_CHARS,
    TITLE_MAX_LINES,
    TITLE_PAGES,
    TITLE_RATIO,
)


def title(found: list[Piece], body: float) -> str | None:
    """The title on page 1 (:func:`title_lines`), else the line above its authors
    (:func:`title_above_authors`), else the first heading on the first TITLE_PAGES pages;
    without a stray mark between its words."""
    lines = title_lines(found, body) or title_above_authors(found, body)
    if lines:
        return without_stray_marks(" ".join(p.text for p in lines))
    return next(
        (
            without_stray_marks(p.text)
            for p in found
            if p.kind is BlockKind.HEADING and p.page <= TITLE_PAGES
        ),
        None,
    )


def title_lines(found: list[Piece], body: float) -> list[Piece]:
    """The title on page 1: its largest short text if it stands out (TITLE_RATIO times the
    body size), with the one or two pieces after it in its size ([] if none stands out).

    The further pieces are a title set on two or three lines that became pieces of
    their own; joined, they are at most TITLE_MAX_CHARS characters. Rotated text,
    tables, what ``heading_rejection`` turns down and the authors, their
    affiliations and the date (``bylines``) are never the title, nor is what comes
    after the abstract's heading.
    """
    first_page = _first_page(found)
    if not first_page:
        return []
    largest = max(first_page, key=lambda p: p.size)
    if largest.size < body * TITLE_RATIO:
        return []
    at = first_page.index(largest)
    lines = [largest]
    for piece in first_page[at + 1 : at + TITLE_MAX_LINES]:
        joined = " ".join(p.text for p in [*lines, piece])
        if (
            abs(piece.size - largest.size) > TITLE_LINE_SIZE_TOLERANCE
            or len(joined) > TITLE_MAX_CHARS
        ):
            break
        lines.append(piece)
    return lines


def _first_page(found: list[Piece]) -> list[Piece]:
    """Page 1's pieces that may be its title, up to the abstract's heading if one is
    before it."""
    byline = bylines(found)
    page = [p for p in found if p.page == 1]
    opening = next((n for n, p in enumerate(page) if ABSTRACT.match(p.text.strip())), None)
    candidates = [
        p
        for p in page
        if p.kind is not BlockKind.TABLE
        and not p.rotated
        and short(p)
        and heading_rejection(p.text) is None
        and id(p) not in byline
    ]
    if opening is None:
        return candidates
    before = {id(p) for p in page[:opening]}
    return [p for p in candidates if id(p) in before] or candidates


def title_above_authors(found: list[Piece], body: float) -> list[Piece]:
    """With no title set larger: the line right above page 1's first author list, when it
    is a short line of its own, set no smaller than the body and before the abstract
    (``Data Compression`` over ``Debra A. Lelewer and Daniel S. Hirschberg``)."""
    page = [p for p in found if p.page == 1 and p.kind is not BlockKind.TABLE]
    common = lower_case_words(p.text for p in found)
    for above, piece in itertools.pairwise(page):
        if ABSTRACT.match(above.text.strip()) or ABSTRACT.match(piece.text.strip()):
            return []
        text = piece.text.strip()
        if is_author_list(text, common) or is_person_name(text, common):
            single = above.rows == 1 and short(above) and not above.rotated
            if single and above.size >= body and heading_rejection(above.text) is None:
                return [] if id(above) in bylines(found) else [above]
            return []
    return []


def one_title_heading(found: list[Piece], body: float) -> list[Piece]:
    """A title set on several lines that are all headings, as one heading: otherwise its
    last line alone would head every section of the document."""
    lines = title_lines(found, body)
    if len(lines) < 2 or any(p.kind is not BlockKind.HEADING for p in lines):
        return found
    lines[0].text = " ".join(p.text for p in lines)
    joined = {id(p) for p in lines[1:]}
    return [p for p in found if id(p) not in joined]


def placeholder_title(text: str) -> bool:
    """A metadata title that names nothing: empty, a placeholder (``untitled``), a file
    name, an arXiv identifier or a template's name."""
    return not text or PLACEHOLDER_TITLE.search(text) is not None
