"""PDF: the text layer, page by page, with headings and tables where the PDF shows them.

The library is pypdfium2 (Google's PDFium; Apache-2.0 / BSD-3-Clause): it was
the fastest of the candidates measured and copes with damaged files; see
docs/formats.md for the figures. PDFium gives each character's box and font
size; the layout rules turn a page's words into paragraphs and tables in
reading order, and the document's pieces into headings and a title.

:data:`RULES` lists every layout and heading rule, in the order they apply;
each is a function whose docstring says what it recognises, and every
threshold and pattern they use is in ``parse.pdf_thresholds``. The modules:

- ``parse.pdf_page``: a page's words and ruling lines through PDFium;
- ``parse.pdf_layout``: words into rows, rows into columns and bands;
- ``parse.pdf_pieces``: a region's rows into paragraphs and tables;
- ``parse.pdf_structure``: across pages, furniture out, then headings;
- ``parse.pdf_bylines``: authors, affiliations and dates, never headings or the title;
- ``parse.pdf_title``: the title;
- ``parse.pdf_text``: text judged and mended (gibberish, hyphens, captions…).

Every block carries its 1-based ``page``. A page with no text layer (a scan) and
a page whose text layer is gibberish (a broken font encoding) are read by OCR
(``parse.pdf_ocr``, when DOCSHELF_OCR allows it and tesseract is installed): their
blocks are cited by page like any other and carry their OCR confidence. Such a page
that OCR cannot read (OCR off or unavailable, over its time limit, a blank page),
and a page PDFium cannot load (a broken or looping page tree), are each counted in
``pages_without_text``, named in a warning and not indexed; if no page has
readable text the file fails with the reason. Encrypted files fail with
"encrypted" unless ``DOCSHELF_PDF_PASSWORD`` opens them; files that are not
PDFs, truncated or malformed fail with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse import PDF_PASSWORD_ENV
from docshelf.parse._blocks import BodyBuilder, one_line
from docshelf.parse.ocr import Ocr, unavailable
from docshelf.parse.pdf_bylines import is_affiliation, is_author_list, is_person_name
from docshelf.parse.pdf_layout import (
    Piece,
    column_line,
    cuts_band,
    drawn_twice,
    gutter,
    same_row,
    table_row_alone,
    wide_gap,
)
from docshelf.parse.pdf_ocr import PageOcr, drawn_on, ocr_pages
from docshelf.parse.pdf_page import (
    EMPTY,
    UNREADABLE,
    is_ruling_line,
    jumps,
    page_pieces,
    spans_lines,
    turned,
    visible,
)
from docshelf.parse.pdf_pieces import (
    broken_at_line_end,
    indented,
    off_pitch,
    on_a_grid,
    peel_prose,
    prose_columns,
    ruled,
    size_changes,
    table_run_end,
    typical_pitch,
)
from docshelf.parse.pdf_structure import (
    apply_font_sizes,
    apply_outline,
    body_line,
    body_size,
    bylines,
    continues_broken_word,
    follows,
    joined_across_breaks,
    numbered_headings,
    numbered_list,
    numbered_running_heads,
    outline_match,
    page_edges,
    repeated_texts,
    running_furniture,
    section_number,
    set_larger,
    short,
    without_furniture,
)
from docshelf.parse.pdf_text import (
    dehyphenate,
    is_caption,
    is_formula,
    is_garbled,
    is_page_number,
    is_page_reference,
    is_unreadable,
    real_hyphen,
    vocabulary,
    without_stray_marks,
)
from docshelf.parse.pdf_thresholds import (
    EOF_WINDOW,
    HEADER_WINDOW,
    HEADING_LEVELS,
    MAX_OUTLINE_ITEMS,
    PDFIUM_REASON,
    WORD_PROCESSOR_PREFIX,
)
from docshelf.parse.pdf_title import (
    one_title_heading,
    placeholder_title,
    title,
    title_above_authors,
    title_lines,
)

__all__ = ["RULES", "parse_pdf"]

# Every layout and heading rule, in the order it applies (a page at a time, then the
# whole document). docs/formats.md lists them too; tests/test_pdf_layout_rules.py and
# tests/test_pdf_heading_rules.py test each, tests/test_pdf_rules.py keeps the list whole.
RULES: tuple[Callable[..., object], ...] = (
    # a page's words (parse.pdf_page)
    turned,  # rotated text, kept apart
    spans_lines,  # a "word" run across lines or objects ...
    jumps,  # ... split where it jumps
    is_unreadable,  # a gibberish text layer: the page is not indexed
    visible,  # invisible glyphs' codes dropped
    # rows and columns (parse.pdf_layout)
    same_row,
    drawn_twice,
    wide_gap,
    gutter,
    column_line,
    cuts_band,
    table_row_alone,
    # paragraphs and tables, per region (parse.pdf_pieces)
    typical_pitch,
    table_run_end,
    peel_prose,
    is_ruling_line,
    ruled,
    on_a_grid,
    prose_columns,
    size_changes,
    off_pitch,
    indented,
    broken_at_line_end,
    # across pages (parse.pdf_structure, parse.pdf_text)
    page_edges,
    is_page_number,
    running_furniture,
    numbered_running_heads,
    continues_broken_word,
    real_hyphen,
    body_size,
    outline_match,  # headings from the outline, if it names any piece ...
    short,  # ... else from font sizes ...
    set_larger,
    is_page_reference,
    is_caption,
    is_formula,
    is_garbled,
    repeated_texts,
    bylines,  # ... never who wrote it, where or when (parse.pdf_bylines) ...
    is_author_list,
    is_person_name,
    is_affiliation,
    section_number,  # ... and section numbers in the body's size
    body_line,
    numbered_list,
    follows,
    title_lines,  # the title's lines on page 1 (parse.pdf_title) ...
    title_above_authors,  # ... or the line above the authors ...
    one_title_heading,  # ... one heading when they are headings
    without_stray_marks,  # a title's or heading's lone marks between words go
    placeholder_title,  # the Title metadata, unless a placeholder ...
    title,  # ... else the title's lines or the first heading
)

_UNLOADABLE = "unloadable"
_WHY = {
    EMPTY: "no text layer (scanned?)",
    UNREADABLE: "an unreadable text layer (a broken font encoding?); not indexed",
    _UNLOADABLE: "could not be loaded (a broken or looping page tree)",
}
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"BM", "BMP image"),
    (b"PK\x03\x04", "zip archive"),
    (b"%!PS", "PostScript file"),
)


def parse_pdf(
    data: bytes, *, password: str | None = None, ocr: Ocr | None = None
) -> ParsedDocument:
    """Parse a PDF's bytes. Raises InvalidInput for files that cannot be read as text.

    ``password`` opens an encrypted file (``parse()`` passes ``DOCSHELF_PDF_PASSWORD``);
    ``ocr``: how to read pages without a usable text layer (None: they are not read).
    """
    _check_bytes(data)
    pdf = _open(data, password)
    try:
        page_count = len(pdf)
        if page_count == 0:
            raise InvalidInput("PDF has no pages")
        found: list[Piece] = []
        missing: dict[str, list[int]] = {EMPTY: [], UNREADABLE: [], _UNLOADABLE: []}
        for index in range(page_count):
            try:
                pieces_of_page, status = page_pieces(pdf, index)
            except pdfium.PdfiumError:
                pieces_of_page, status = [], _UNLOADABLE
            if status:
                missing[status].append(index + 1)
            found.extend(pieces_of_page)
        read, notes = _read_by_ocr(pdf, missing, ocr)
        if read.pieces:
            found = sorted([*found, *read.pieces], key=lambda p: p.page)  # stable: in order
        if not found:
            raise InvalidInput("; ".join([_no_text_reason(page_count, missing), *notes]))
        outline = list(_outline(pdf))
        meta_title = _metadata_title(pdf)
    finally:
        pdf.close()
    found = joined_across_breaks(without_furniture(found))
    words = vocabulary(p.text for p in found)
    for piece in found:
        piece.text = dehyphenate(piece.text, words)
    body = body_size(found)
    if not apply_outline(found, outline):
        levels = apply_font_sizes(found, body)
        for piece, depth in numbered_headings(found, body):
            piece.kind, piece.level = BlockKind.HEADING, min(levels + depth, HEADING_LEVELS)
        found = one_title_heading(found, body)
    builder = BodyBuilder()
    for piece in found:
        text = without_stray_marks(piece.text) if piece.kind is BlockKind.HEADING else piece.text
        builder.add(piece.kind, text, level=piece.level, page=piece.page, ocr=piece.ocr)
    return builder.build(
        title=meta_title or title(found, body),
        page_count=page_count,
        pages_without_text=sum(len(pages) for pages in missing.values()),
        warnings=(*_missing_warnings(missing), *notes),
        ocr_pages=len(read.read),
    )


# -- pages read by OCR ---------------------------------------------------------------------


def _read_by_ocr(
    pdf: pdfium.PdfDocument, missing: dict[str, list[int]], ocr: Ocr | None
) -> tuple[PageOcr, list[str]]:
    """OCR of the pages without a usable text layer (taken out of ``missing`` once read),
    and what to tell of those it could not read: OCR unavailable, failed, no text found."""
    if ocr is None:
        return PageOcr(), []
    # a page with nothing drawn on it is blank: not a scan
    pages = [p for p in sorted([*missing[EMPTY], *missing[UNREADABLE]]) if drawn_on(pdf, p - 1)]
    if not pages:
        return PageOcr(), []
    why = unavailable(ocr)
    if why is not None:
        return PageOcr(), [why]
    read = ocr_pages(pdf, pages, ocr)
    for status in (EMPTY, UNREADABLE):
        missing[status] = [p for p in missing[status] if p not in read.read]
    notes = []
    by_reason: dict[str, list[int]] = {}
    for page, reason in read.failed.items():
        by_reason.setdefault(reason, []).append(page)
    for reason, failed in by_reason.items():
        notes.append(f"{_pages(failed)}: OCR failed ({reason}); not indexed")
    if read.blank:
        notes.append(f"{_pages(read.blank)}: OCR found no text (blank?)")
    if read.garbled:
        notes.append(f"{_pages(read.garbled)}: OCR read only gibberish; not indexed")
    return read, notes


# -- pages without (readable) text ---------------------------------------------------------


def _no_text_reason(page_count: int, missing: dict[str, list[int]]) -> str:
    empty, unreadable, unloadable = (len(missing[k]) for k in (EMPTY, UNREADABLE, _UNLOADABLE))
    if empty == page_count:
        return f"no text layer on any of {page_count} pages (scanned?)"
    if unloadable == page_count:
        return (
            f"malformed PDF: none of its {page_count} pages can be loaded"
            " (a broken or looping page tree)"
        )
    parts = []
    if unreadable:
        parts.append(f"{unreadable} with an unreadable text layer (a broken font encoding?)")
    if empty:
        parts.append(f"{empty} without a text layer (scanned?)")
    if unloadable:
        parts.append(f"{unloadable} that cannot be loaded (a broken page tree)")
    return f"no readable text on any of {page_count} pages: {', '.join(parts)}"


def _missing_warnings(missing: dict[str, list[int]]) -> list[str]:
    out = []
    for status, pages in missing.items():
        if pages:
            out.append(f"{_pages(pages)}: {_WHY[status]}")
    return out


def _pages(pages: list[int]) -> str:
    """'page 3', 'pages 1-3, 7'."""
    return f"{'page' if len(pages) == 1 else 'pages'} {_page_ranges(pages)}"


def _page_ranges(pages: list[int]) -> str:
    """1, 2, 3, 7 → '1-3, 7'."""
    spans: list[list[int]] = []
    for page in pages:
        if spans and page == spans[-1][1] + 1:
            spans[-1][1] = page
        else:
            spans.append([page, page])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


# -- opening -------------------------------------------------------------------------------


def _check_bytes(data: bytes) -> None:
    if not data.strip():
        raise InvalidInput("empty file")
    if b"%PDF-" not in data[:HEADER_WINDOW]:
        kind = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
        if kind is None and b"<html" in data[:HEADER_WINDOW].lower():
            kind = "HTML page"
        raise InvalidInput(f"not a PDF ({kind or 'no %PDF- header'})")
    if b"%%EOF" not in data[-EOF_WINDOW:]:
        raise InvalidInput("truncated PDF (no %%EOF marker at the end of the file)")


def _open(data: bytes, password: str | None) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            if password:
                raise InvalidInput(f"encrypted ({PDF_PASSWORD_ENV} does not open it)") from None
            raise InvalidInput(
                f"encrypted (password required; set {PDF_PASSWORD_ENV} to open it)"
            ) from None
        if exc.err_code == pdfium_c.FPDF_ERR_SECURITY:
            raise InvalidInput("encrypted with an unsupported security handler") from None
        raise InvalidInput(f"malformed PDF: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    """PDFium's own words: 'Failed to load document (PDFium: Data format error).' → the part
    in parentheses."""
    text = str(exc)
    match = PDFIUM_REASON.search(text)
    return match.group(1).lower() if match else text


def _metadata_title(pdf: pdfium.PdfDocument) -> str | None:
    try:
        text = one_line(pdf.get_metadata_value("Title"))
    except (pdfium.PdfiumError, UnicodeDecodeError):
        return None
    text = text.removeprefix(WORD_PROCESSOR_PREFIX)
    return None if placeholder_title(text) else text


def _outline(pdf: pdfium.PdfDocument) -> Iterator[tuple[int, str, int]]:
    """(level from 1, title, page from 1) of each bookmark that points at a page."""
    for n, bookmark in enumerate(pdf.get_toc(max_depth=HEADING_LEVELS)):
        if n >= MAX_OUTLINE_ITEMS:
            return
        dest = bookmark.get_dest()
        index = dest.get_index() if dest is not None else None
        entry = one_line(bookmark.get_title() or "")
        if index is not None and entry:
            yield bookmark.level + 1, entry, index + 1
