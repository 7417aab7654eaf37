"""A PDF's pages without a usable text layer (scanned, or a gibberish layer), read by OCR.

Each page is rendered by PDFium to a greyscale image at ``DPI`` (fewer dots on a page
so large that it would pass ``MAX_PIXELS``), read by tesseract (``parse.ocr``), and its
paragraphs become pieces of that page (``Piece.ocr``: their words' mean confidence),
which then go through the document's rules as a text layer's do (running heads out,
paragraphs joined across breaks, headings by size). A paragraph's size is its line
height, which on a scan is the font size, near enough.

Each page starts the parser sandbox's time limit afresh (``sandbox.next_phase``) and has
its own (``Ocr.timeout_s``, a share of it): a page whose OCR fails (its time limit, a
crash, no memory) is lost alone and named in a warning; so is a page where OCR found no
text (a blank page), or only gibberish: a paragraph OCR read that is judged gibberish as a
text layer is (``pdf_text.is_unreadable``: signs, or a script DOCSHELF_OCR_LANGUAGES does
not name) is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docshelf.model import BlockKind
from docshelf.parse.ocr import Ocr, OcrFailed, Paragraph, read_image
from docshelf.parse.pdf_layout import Piece
from docshelf.parse.pdf_pieces import join_lines
from docshelf.parse.pdf_text import is_unreadable
from docshelf.parse.pdf_thresholds import SIZE_STEP
from docshelf.parse.sandbox import next_phase

__all__ = ["DPI", "MAX_PIXELS", "PageOcr", "drawn_on", "ocr_pages"]

DPI = 300  # tesseract reads body text best from about 300 dots per inch
MAX_PIXELS = 40_000_000  # a page's image at most (8-bit grey: 40 MB); A4 at 300 dpi is 8.7 M
_POINTS_PER_INCH = 72


@dataclass
class PageOcr:
    """What OCR made of the pages it was given."""

    pieces: list[Piece] = field(default_factory=list)  # in page order
    read: dict[int, float] = field(default_factory=dict)  # page -> mean word confidence
    blank: list[int] = field(default_factory=list)  # pages where it found no text
    garbled: list[int] = field(default_factory=list)  # pages where it read only gibberish
    failed: dict[int, str] = field(default_factory=dict)  # page -> why it failed


def ocr_pages(pdf: pdfium.PdfDocument, pages: list[int], ocr: Ocr) -> PageOcr:
    """OCR of ``pages`` (1-based) of ``pdf``, one at a time, each its own phase."""
    out = PageOcr()
    for number in pages:
        next_phase()
        try:
            found, dpi = _read(pdf, number, ocr)
        except OcrFailed as exc:
            out.failed[number] = str(exc)
            continue
        # gibberish read as paragraphs (signs, or a script tesseract was not told of) goes
        readable = [p for p in found if not is_unreadable(_words(p))]
        pieces = [p for p in (_piece(p, number, dpi) for p in readable) if p.text]
        if not pieces:
            (out.garbled if found else out.blank).append(number)
            continue
        out.pieces.extend(pieces)
        chars = sum(len(p.text) for p in pieces)
        out.read[number] = round(sum((p.ocr or 0.0) * len(p.text) for p in pieces) / chars, 4)
    return out


def _words(paragraph: Paragraph) -> list[str]:
    return [word for line in paragraph.lines for word in line.split()]


def drawn_on(pdf: pdfium.PdfDocument, index: int) -> bool:
    """Whether the page has anything drawn on it (an image, a path…): a page with nothing
    is blank, and not worth an image and a call of tesseract (a PDF of thousands of them
    fails as fast as before)."""
    try:
        page = pdf[index]
    except pdfium.PdfiumError:
        return False
    try:
        return bool(pdfium_c.FPDFPage_CountObjects(page.raw) > 0)
    finally:
        page.close()


def _read(pdf: pdfium.PdfDocument, number: int, ocr: Ocr) -> tuple[list[Paragraph], int]:
    """The paragraphs of page ``number`` and the resolution it was read at (the page's
    image goes when this returns). Raises OcrFailed."""
    try:
        image, dpi = render(pdf, number - 1)
    except pdfium.PdfiumError:
        raise OcrFailed("the page could not be rendered") from None
    except MemoryError:
        raise OcrFailed("out of memory rendering it (DOCSHELF_PARSE_MEMORY_MB)") from None
    return read_image(image, ocr, dpi), dpi


def render(pdf: pdfium.PdfDocument, index: int) -> tuple[bytes, int]:
    """The page as a greyscale PGM image (what tesseract reads fastest: no decoding), and
    its dots per inch."""
    page = pdf[index]
    try:
        width, height = page.get_size()
        scale = DPI / _POINTS_PER_INCH
        pixels = width * height * scale * scale
        if pixels > MAX_PIXELS:
            scale *= math.sqrt(MAX_PIXELS / pixels)
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            grey = bitmap.to_numpy()
            rows, columns = grey.shape[:2]
            image = b"P5\n%d %d\n255\n" % (columns, rows) + grey.tobytes()
        finally:
            bitmap.close()
    finally:
        page.close()
    return image, round(scale * _POINTS_PER_INCH)


def _piece(paragraph: Paragraph, page: int, dpi: int) -> Piece:
    text = join_lines(paragraph.lines)
    points = paragraph.height * _POINTS_PER_INCH / dpi
    size = round(points / SIZE_STEP) * SIZE_STEP
    piece = Piece(
        BlockKind.PARAGRAPH, text, size, len(paragraph.lines), page, ocr=paragraph.confidence
    )
    piece.chars_by_size[size] = len(text)
    return piece
