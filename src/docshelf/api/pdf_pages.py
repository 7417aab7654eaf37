"""A PDF page opened at a citation: the page as an image, and the boxes of the cited
passage's words on it (found word by word: the parse joined broken words, spelt out
ligatures and put columns in reading order; the page's text is PDFium's as printed).

Pages are rendered and searched in the parser sandbox's child process (time and memory
limits): rendering runs far more of PDFium than text extraction did.
"""

from __future__ import annotations

import difflib
import functools
import re
import struct
import unicodedata
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput, NotFound
from docshelf.parse.sandbox import run_limited

__all__ = ["PageView", "find_lines", "page_image", "page_view", "png"]

# Pages are rendered this wide at most (pixels), whatever the page size says.
MAX_PAGE_PIXELS = 1600
PAGE_SCALE = 2.0  # 144 dpi: sharp on a high-density screen


@dataclass(frozen=True)
class PageView:
    page: int  # 1-based
    page_count: int
    width: float  # points
    height: float
    boxes: list[tuple[float, float, float, float]]  # (x, y, w, h) as fractions of the page
    pixels: tuple[int, int]  # the page image's width and height (``page_image``)


def page_view(
    data: bytes, page: int, snippet: str, limits: ParseLimits, password: str | None = None
) -> PageView:
    """Page ``page`` (1-based) and where ``snippet``'s lines are on it."""
    func = functools.partial(_page_boxes, page=page, snippet=snippet, password=password)
    result = _limited(func, data, limits)
    return cast(PageView, result)


def page_image(data: bytes, page: int, limits: ParseLimits, password: str | None = None) -> bytes:
    """Page ``page`` (1-based) as a PNG."""
    func = functools.partial(_render_png, page=page, password=password)
    return cast(bytes, _limited(func, data, limits))


def _limited(func: Callable[[bytes], Any], data: bytes, limits: ParseLimits) -> Any:
    return run_limited(func, data, "pdf", timeout_s=limits.timeout_s, memory_mb=limits.memory_mb)


def _open_pdf(data: bytes, password: str | None) -> Any:
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        raise InvalidInput(f"cannot open the PDF: {exc}") from None


def _page_of(pdf: Any, page: int) -> Any:
    count = len(pdf)
    if not 1 <= page <= count:
        raise NotFound(f"No page {page}: the document has {count}")
    return pdf[page - 1]


def _page_boxes(data: bytes, *, page: int, snippet: str, password: str | None) -> PageView:
    pdf = _open_pdf(data, password)
    pg = _page_of(pdf, page)
    width, height = pg.get_size()
    textpage = pg.get_textpage()
    n = textpage.count_chars()
    text = textpage.get_text_range(0, n) if n else ""
    boxes: list[tuple[float, float, float, float]] = []
    for start, count in find_lines(text, snippet):
        for i in range(textpage.count_rects(start, count)):
            left, bottom, right, top = textpage.get_rect(i)
            boxes.append(
                (
                    round(left / width, 5),
                    round((height - top) / height, 5),
                    round((right - left) / width, 5),
                    round((top - bottom) / height, 5),
                )
            )
    scale = _render_scale(width)
    pixels = (round(width * scale), round(height * scale))
    return PageView(page, len(pdf), float(width), float(height), boxes, pixels)


# A passage is found on its page word by word: the chunk's text is the parse's (words
# broken at line ends joined, ligatures spelt out, columns in reading order, running
# headers and footers left out), the page's is PDFium's as printed. Each word is
# compared by its letters and digits only, case-folded; runs of at least MIN_RUN words
# in the same order on both sides mark the passage, and runs at most MAX_GAP page words
# apart on one line are one (a footnote mark or a word spelt differently between them is
# boxed too; a page number between two columns is not).
MIN_RUN = 3  # words: a shorter run in common is a coincidence ("of the data")
MAX_GAP = 3  # page words on a line between two runs that are still one stretch
_PAGE_WORD = re.compile(r"[^\s\x00]+")
_LINE_BREAK = re.compile(r"[\r\n]")
_BROKEN_WORD_ENDS = ("\ufffe", "\x02", "-", "\u00ad", "\u2010")  # a word broken at a line end


def find_lines(page_text: str, snippet: str) -> list[tuple[int, int]]:
    """Character ranges ``(start, count)`` of ``page_text`` holding ``snippet``'s words:
    one range per stretch of the passage (two, for a passage that goes on in the next
    column with a page footer between), whatever the line breaks, hyphens and
    ligatures of either."""
    page = _page_words(page_text)
    wanted = [key for key in map(_word_key, snippet.split()) if key]
    if not page or not wanted:
        return []
    matcher = difflib.SequenceMatcher(None, [w[0] for w in page], wanted, autojunk=False)
    least = min(MIN_RUN, len(wanted))
    runs: list[tuple[int, int]] = []  # page word ranges [first, stop)
    for block in matcher.get_matching_blocks():
        if block.size < least:
            continue
        if runs and _one_line(page_text, page, runs[-1][1], block.a):
            runs[-1] = (runs[-1][0], block.a + block.size)
        else:
            runs.append((block.a, block.a + block.size))
    return [(page[a][1], page[b - 1][2] - page[a][1]) for a, b in runs]


def _one_line(text: str, page: list[tuple[str, int, int]], stop: int, start: int) -> bool:
    """Whether the page words ``stop:start`` between two runs are few and on the line
    the runs are on (a footnote mark; not a page number between two columns)."""
    between = (page[stop - 1][2], page[start][1])
    return start - stop <= MAX_GAP and not _LINE_BREAK.search(text, *between)


def _word_key(word: str) -> str:
    """A word as compared: its letters and digits, case-folded (a ligature spelt out)."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", word).casefold() if ch.isalnum())


def _page_words(text: str) -> list[tuple[str, int, int]]:
    """A page's words as ``(key, start, end)``; a word broken by a hyphen at a line end
    is one word with the rest on the next line (the parse joined it too)."""
    words: list[tuple[str, int, int]] = []
    broken: tuple[str, int, int] | None = None
    for match in _PAGE_WORD.finditer(text):
        word, start, end = match.group(), match.start(), match.end()
        key = _word_key(word)
        if broken is not None:
            head, first, last = broken
            broken = None
            if _LINE_BREAK.search(text, last, start):
                words.append((head + key, first, end))
                continue
            words.append((head, first, last))
        if word.endswith(_BROKEN_WORD_ENDS) and key[-1:].isalpha():
            broken = (key, start, end)
        elif key:
            words.append((key, start, end))
    if broken is not None:
        words.append(broken)
    return words


def _render_scale(width: float) -> float:
    """Pixels per point of a page image ``width`` points wide."""
    return min(PAGE_SCALE, MAX_PAGE_PIXELS / max(width, 1.0))


def _render_png(data: bytes, *, page: int, password: str | None) -> bytes:
    pdf = _open_pdf(data, password)
    pg = _page_of(pdf, page)
    width, _ = pg.get_size()
    bitmap = pg.render(scale=_render_scale(width), rev_byteorder=True)  # RGB, top row first
    channels = bitmap.n_channels
    rows = bitmap.buffer
    return png(bytes(rows), bitmap.width, bitmap.height, bitmap.stride, channels)


def png(pixels: bytes, width: int, height: int, stride: int, channels: int) -> bytes:
    """A PNG of 8-bit RGB (3 channels) or RGBA (4) rows, ``stride`` bytes apart."""
    colour = {3: 2, 4: 6}[channels]
    row_bytes = width * channels
    raw = b"".join(b"\x00" + pixels[y * stride : y * stride + row_bytes] for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )
