"""One PDF page through PDFium: its words, its ruling lines, and then its pieces.

PDFium gives each character's box and font size; a word is a run of
non-space characters, placed by the boxes of its first and last characters.
Rotated text is kept apart (:func:`turned`) and read after the page, in the
order the PDF has it; a "word" PDFium runs across lines or objects is split
where it jumps (:func:`spans_lines`, :func:`jumps`). A page whose words are
gibberish (``parse.pdf_text.is_unreadable``) has no pieces; words that are only
invisible glyphs' codes are dropped (:func:`visible` keeps the rest). The rest go through
``parse.pdf_layout`` and ``parse.pdf_pieces``; the page's ruling lines
(:func:`is_ruling_line`) are read only when a run of rows might be a table.

Thresholds and patterns are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import ctypes
import functools
import math

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docshelf.model import BlockKind
from docshelf.parse.pdf_layout import Piece, Rule, Word, regions, rows_of
from docshelf.parse.pdf_pieces import pieces
from docshelf.parse.pdf_text import is_unreadable
from docshelf.parse.pdf_thresholds import (
    HYPHEN_MARK,
    LINE_END_HYPHEN,
    MAX_RULE_OBJECTS,
    RULE_MIN_LENGTH,
    RULE_OBJECT_DEPTH,
    RULE_THICKNESS,
    TURNED_ANGLE,
    WORD,
    WORD_JUMP_BACK_EM,
    WORD_JUMP_LINE_SHARE,
)

EMPTY, UNREADABLE = "empty", "unreadable"  # why a page has no pieces
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi"})


def page_pieces(pdf: pdfium.PdfDocument, index: int) -> tuple[list[Piece], str | None]:
    """A page's pieces, and why it has none (``EMPTY``, ``UNREADABLE``) or None."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            upright, turned_words = _words(textpage)
        finally:
            textpage.close()
        if not upright and not turned_words:
            return [], EMPTY
        if is_unreadable(w.text for w in [*upright, *turned_words]):
            return [], UNREADABLE
        upright, turned_words = visible(upright), visible(turned_words)
        rules = functools.cache(lambda: _rules(page))  # read only if a table is in question
        found: list[Piece] = []
        for region in regions(rows_of(upright)):
            found.extend(pieces(region, index + 1, rules))
    finally:
        page.close()
    if turned_words:  # rotated text (margin stamps, landscape tables) is kept, in content order
        text = " ".join(w.text for w in turned_words)
        found.append(
            Piece(BlockKind.PARAGRAPH, text, turned_words[0].size, 1, index + 1, rotated=True)
        )
    return found, (None if found else EMPTY)


def visible(words: list[Word]) -> list[Word]:
    """The words with something to read: not only control characters (an invisible
    glyph's code)."""
    return [
        w
        for w in words
        if w.text.isprintable() or any(c.isprintable() or c == HYPHEN_MARK for c in w.text)
    ]


def _rules(page: pdfium.PdfPage) -> list[Rule]:
    """The page's ruling lines: thin path objects (lines, hairline rectangles)."""
    rules: list[Rule] = []
    objects = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=RULE_OBJECT_DEPTH)
    for n, obj in enumerate(objects):
        if n >= MAX_RULE_OBJECTS:
            break
        left, bottom, right, top = obj.get_bounds()
        if is_ruling_line(right - left, top - bottom):
            rules.append(Rule(left, right, bottom, top))
    return rules


def is_ruling_line(width: float, height: float) -> bool:
    """A path object thin across its length (a line, a hairline rectangle): a ruling line
    of a table."""
    return min(width, height) <= RULE_THICKNESS and max(width, height) >= RULE_MIN_LENGTH


def turned(angle: float) -> bool:
    """A character turned away from upright (``angle`` in radians): rotated text, such as a
    margin stamp or a landscape table."""
    return angle > TURNED_ANGLE and abs(angle - 2 * math.pi) > TURNED_ANGLE


def spans_lines(
    x0: float, bottom: float, top: float, end: float, end_bottom: float, end_top: float
) -> bool:
    """A word whose last character (ending at ``end``) ends left of where its first starts
    (at ``x0``), or is half a line above or below it: text of two lines or objects that
    PDFium ran together."""
    return end < x0 or abs((end_top + end_bottom) - (top + bottom)) > (
        2 * WORD_JUMP_LINE_SHARE * (top - bottom)
    )


def jumps(x1: float, bottom: float, top: float, left: float, next_top: float, size: float) -> bool:
    """A character of a word that starts an em back from where the one before ended (at
    ``x1``), or half a line above or below it: where the word runs onto another line."""
    return left < x1 - WORD_JUMP_BACK_EM * size or abs(next_top - top) > (
        WORD_JUMP_LINE_SHARE * (top - bottom)
    )


def _words(textpage: pdfium.PdfTextPage) -> tuple[list[Word], list[Word]]:
    """The page's words, upright and rotated, from the first and last character boxes."""
    handle = textpage.raw
    count = pdfium_c.FPDFText_CountChars(handle)
    if count <= 0:
        return [], []
    text = textpage.get_text_range()
    if len(text) != count:  # characters outside the BMP: read them one by one
        get_unicode = pdfium_c.FPDFText_GetUnicode
        text = "".join([chr(get_unicode(handle, i) or 0xFFFD) for i in range(count)])
    box = pdfium_c.FS_RECTF()
    ref = ctypes.byref(box)
    matrix = pdfium_c.FS_MATRIX()
    matrix_ref = ctypes.byref(matrix)
    # PDFium's functions, looked up once: they are called for every word.
    loose_box = pdfium_c.FPDFText_GetLooseCharBox
    font_size, text_matrix = pdfium_c.FPDFText_GetFontSize, pdfium_c.FPDFText_GetMatrix
    char_angle, hypot = pdfium_c.FPDFText_GetCharAngle, math.hypot
    upright: list[Word] = []
    rotated: list[Word] = []
    for match in WORD.finditer(text):
        first, last = match.start(), match.end() - 1
        if not loose_box(handle, first, ref):
            continue
        x0, top, bottom = box.left, box.top, box.bottom
        # The font's size times the vertical scale of the text and page matrices.
        size = font_size(handle, first)
        if text_matrix(handle, first, matrix_ref):
            size *= hypot(matrix.c, matrix.d) or 1.0
        size = size or (top - bottom)
        word_text = _normal(match.group())
        if turned(char_angle(handle, first)):
            rotated.append(Word(word_text, x0, box.right, bottom, top, size))
            continue
        if last != first:
            loose_box(handle, last, ref)
        if spans_lines(x0, bottom, top, box.right, box.bottom, box.top):
            upright.extend(_split_word(handle, first, last + 1, text, size))
            continue
        upright.append(Word(word_text, x0, box.right, min(bottom, box.bottom), top, size))
    return upright, rotated


def _normal(text: str) -> str:
    """Ligatures spelt out; PDFium's line-end hyphen (U+0002 when read char by char, U+FFFE
    in its text) after a letter becomes HYPHEN_MARK."""
    text = text.translate(_LIGATURES)
    if "\x02" in text or HYPHEN_MARK in text:
        return LINE_END_HYPHEN.sub(HYPHEN_MARK, text)
    return text


def _split_word(handle: object, start: int, stop: int, text: str, size: float) -> list[Word]:
    """The characters ``start:stop`` as words, split where they jump (:func:`jumps`)."""
    box = pdfium_c.FS_RECTF()
    ref = ctypes.byref(box)
    words: list[Word] = []
    chars: list[str] = []
    x0 = x1 = bottom = top = 0.0
    for i in range(start, stop):
        if not pdfium_c.FPDFText_GetLooseCharBox(handle, i, ref):
            continue
        if chars and jumps(x1, bottom, top, box.left, box.top, size):
            words.append(Word(_normal("".join(chars)), x0, x1, bottom, top, size))
            chars = []
        if not chars:
            x0, bottom, top = box.left, box.bottom, box.top
        chars.append(text[i])
        x1 = box.right
    if chars:
        words.append(Word(_normal("".join(chars)), x0, x1, bottom, top, size))
    return words
