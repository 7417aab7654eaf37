"""PDF: the text layer, page by page, with headings and tables where the PDF shows them.

The library is pypdfium2 (Google's PDFium; Apache-2.0 / BSD-3-Clause): it was
the fastest of the candidates measured and copes with damaged files; see
docs/formats.md for the figures. PDFium gives each character's box and font
size; ``parse.pdf_layout`` turns a page's words into paragraphs and tables in
reading order (two- and three-column pages included).

- Every block carries its 1-based ``page``.
- Headings: the document outline (bookmarks) when its entries can be found
  on their pages; otherwise short paragraphs set larger than the body text
  (levels by size, largest first), and numbered section headings set in the
  body's own size ("II. MOTIVATION", "A. Concepts", "3.1 Design Philosophy"),
  where their numbers follow on from one another (``_numbered_headings``).
- Title: the document's Title metadata unless it is a placeholder, else the
  first heading on the first two pages. Captions, formulae, page numbers,
  running heads and unreadable text are never headings (``parse.pdf_text``).
- Words broken at line ends are joined unless the document shows the hyphen
  is real (``parse.pdf_text.dehyphenate``).
- A page with no text layer (a scan), a page whose text layer is gibberish
  (a broken font encoding, ``parse.pdf_text.is_unreadable``) and a page
  PDFium cannot load (a broken or looping page tree) are each counted in
  ``pages_without_text``, named in a warning and not indexed; if no page has
  readable text the file fails with the reason.
- Encrypted files fail with "encrypted" unless ``DOCSHELF_PDF_PASSWORD``
  opens them; files that are not PDFs, truncated or malformed fail with the
  reason.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse import PDF_PASSWORD_ENV
from docshelf.parse._blocks import BodyBuilder, one_line
from docshelf.parse.pdf_layout import Piece, Rule, Word, pieces, regions, rows_of
from docshelf.parse.pdf_text import (
    HYPHEN_MARK,
    dehyphenate,
    heading_rejection,
    is_unreadable,
    vocabulary,
)

__all__ = ["parse_pdf"]

_WORD = re.compile(r"\S+")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi"})
_LINE_END_HYPHEN = re.compile("(?<=[^\\W\\d_])[\x02\ufffe]")
_EOF_WINDOW = 16 * 1024  # the %%EOF marker must be this close to the end (junk may follow)
_HEADING_RATIO = 1.08  # a heading is set at least this much larger than the body text
_TITLE_RATIO = 1.25  # the title on page 1 stands out more (an affiliation line does not)
_MAX_OUTLINE_ITEMS = 5000
_MAX_RULE_OBJECTS = 5000  # path objects looked at per page for ruling lines
_RULE_THICKNESS = 3.0  # a path this thin (points) across its length is a ruling line
_NUMBERING = re.compile(
    r"(?:(?:chapter|section|part|appendix)\s+)?(?:(?:\d{1,3}|[a-z]|[ivxlc]{1,5})\s*){1,5}"
)
_PAGE_NUMBER = re.compile(r"(?:page\s+)?[\divxlc]{1,6}(?:\s*(?:of|/)\s*\d+)?", re.I)
_PLACEHOLDER_TITLES = re.compile(
    r"^(untitled|unknown|none|title|document\d*)$|\.(pdf|docx?|dvi|tex|ps|rtf|odt|txt|md)$"
    r"|^arxiv:\S+|^proceedings template\b",
    re.I,
)

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


def parse_pdf(data: bytes, *, password: str | None = None) -> ParsedDocument:
    """Parse a PDF's bytes. Raises InvalidInput for files that cannot be read as text.

    ``password`` opens an encrypted file (``parse()`` passes ``DOCSHELF_PDF_PASSWORD``).
    """
    _check_bytes(data)
    pdf = _open(data, password)
    try:
        page_count = len(pdf)
        if page_count == 0:
            raise InvalidInput("PDF has no pages")
        found: list[Piece] = []
        missing: dict[str, list[int]] = {_EMPTY: [], _UNREADABLE: [], _UNLOADABLE: []}
        for index in range(page_count):
            try:
                page_pieces, status = _page_pieces(pdf, index)
            except pdfium.PdfiumError:
                page_pieces, status = [], _UNLOADABLE
            if status:
                missing[status].append(index + 1)
            found.extend(page_pieces)
        if not found:
            raise InvalidInput(_no_text_reason(page_count, missing))
        outline = list(_outline(pdf))
        meta_title = _metadata_title(pdf)
    finally:
        pdf.close()
    found = _joined_across_breaks(_without_furniture(found))
    words = vocabulary(p.text for p in found)
    for piece in found:
        piece.text = dehyphenate(piece.text, words)
    body_size = _body_size(found)
    if not _apply_outline(found, outline):
        levels = _apply_font_sizes(found, body_size)
        for piece, depth in _numbered_headings(found, body_size):
            piece.kind, piece.level = BlockKind.HEADING, min(levels + depth, 6)
        found = _one_title_heading(found, body_size)
    builder = BodyBuilder()
    for piece in found:
        builder.add(piece.kind, piece.text, level=piece.level, page=piece.page)
    return builder.build(
        title=meta_title or _title(found, body_size),
        page_count=page_count,
        pages_without_text=sum(len(pages) for pages in missing.values()),
        warnings=tuple(_missing_warnings(missing)),
    )


_ENDS_BROKEN = re.compile(f"[^\\W\\d_](?:-|{HYPHEN_MARK})$")


def _joined_across_breaks(found: list[Piece]) -> list[Piece]:
    """A paragraph that ends in a broken word (``inaccessi-``) continued by one that starts
    in lower case (``ble file server``, at the top of the next column or page): one piece."""
    out: list[Piece] = []
    for piece in found:
        last = out[-1] if out else None
        if (
            last is not None
            and last.kind is piece.kind is BlockKind.PARAGRAPH
            and _ENDS_BROKEN.search(last.text)
            and piece.text[:1].islower()
        ):
            last.text = (
                last.text.removesuffix("-").removesuffix(HYPHEN_MARK) + HYPHEN_MARK + piece.text
            )
            last.rows += piece.rows
            for size, n in piece.chars_by_size.items():
                last.chars_by_size[size] = last.chars_by_size.get(size, 0) + n
            continue
        out.append(piece)
    return out


# -- pages without (readable) text ---------------------------------------------------------

_EMPTY, _UNREADABLE, _UNLOADABLE = "empty", "unreadable", "unloadable"
_WHY = {
    _EMPTY: "no text layer (scanned?)",
    _UNREADABLE: "an unreadable text layer (a broken font encoding?); not indexed",
    _UNLOADABLE: "could not be loaded (a broken or looping page tree)",
}


def _no_text_reason(page_count: int, missing: dict[str, list[int]]) -> str:
    empty, unreadable, unloadable = (len(missing[k]) for k in (_EMPTY, _UNREADABLE, _UNLOADABLE))
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
            label = "page" if len(pages) == 1 else "pages"
            out.append(f"{label} {_page_ranges(pages)}: {_WHY[status]}")
    return out


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
    if b"%PDF-" not in data[:1024]:
        kind = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
        if kind is None and b"<html" in data[:1024].lower():
            kind = "HTML page"
        raise InvalidInput(f"not a PDF ({kind or 'no %PDF- header'})")
    if b"%%EOF" not in data[-_EOF_WINDOW:]:
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
    match = re.search(r"\(PDFium: ([^)]*)\)", text)
    return match.group(1).lower() if match else text


def _metadata_title(pdf: pdfium.PdfDocument) -> str | None:
    try:
        title = one_line(pdf.get_metadata_value("Title"))
    except (pdfium.PdfiumError, UnicodeDecodeError):
        return None
    title = title.removeprefix("Microsoft Word - ")
    if not title or _PLACEHOLDER_TITLES.search(title):
        return None
    return title


def _outline(pdf: pdfium.PdfDocument) -> Iterator[tuple[int, str, int]]:
    """(level from 1, title, page from 1) of each bookmark that points at a page."""
    for n, bookmark in enumerate(pdf.get_toc(max_depth=6)):
        if n >= _MAX_OUTLINE_ITEMS:
            return
        dest = bookmark.get_dest()
        index = dest.get_index() if dest is not None else None
        title = one_line(bookmark.get_title() or "")
        if index is not None and title:
            yield bookmark.level + 1, title, index + 1


# -- words of a page -----------------------------------------------------------------------


def _page_pieces(pdf: pdfium.PdfDocument, index: int) -> tuple[list[Piece], str | None]:
    """A page's pieces, and why it has none (``_EMPTY``, ``_UNREADABLE``) or None."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            upright, turned = _words(textpage)
        finally:
            textpage.close()
        if not upright and not turned:
            return [], _EMPTY
        if is_unreadable(w.text for w in [*upright, *turned]):
            return [], _UNREADABLE
        upright, turned = _visible(upright), _visible(turned)
        rules = functools.cache(lambda: _rules(page))  # read only if a table is in question
        found: list[Piece] = []
        for region in regions(rows_of(upright)):
            found.extend(pieces(region, index + 1, rules))
    finally:
        page.close()
    if turned:  # rotated text (margin stamps, landscape tables) is kept, in content order
        text = " ".join(w.text for w in turned)
        found.append(Piece(BlockKind.PARAGRAPH, text, turned[0].size, 1, index + 1, rotated=True))
    return found, (None if found else _EMPTY)


def _visible(words: list[Word]) -> list[Word]:
    """Words with something to read: not only control characters (an invisible glyph's code)."""
    return [
        w
        for w in words
        if w.text.isprintable() or any(c.isprintable() or c == HYPHEN_MARK for c in w.text)
    ]


def _rules(page: pdfium.PdfPage) -> list[Rule]:
    """The page's ruling lines: thin path objects (lines, hairline rectangles)."""
    rules: list[Rule] = []
    objects = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=2)
    for n, obj in enumerate(objects):
        if n >= _MAX_RULE_OBJECTS:
            break
        left, bottom, right, top = obj.get_bounds()
        width, height = right - left, top - bottom
        if min(width, height) <= _RULE_THICKNESS and max(width, height) >= 4 * _RULE_THICKNESS:
            rules.append(Rule(left, right, bottom, top))
    return rules


def _words(textpage: pdfium.PdfTextPage) -> tuple[list[Word], list[Word]]:
    """The page's words, upright and rotated, from the first and last character boxes."""
    handle = textpage.raw
    count = pdfium_c.FPDFText_CountChars(handle)
    if count <= 0:
        return [], []
    text = textpage.get_text_range()
    if len(text) != count:  # characters outside the BMP: read them one by one
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(handle, i) or 0xFFFD) for i in range(count))
    box = pdfium_c.FS_RECTF()
    ref = ctypes.byref(box)
    matrix = pdfium_c.FS_MATRIX()
    matrix_ref = ctypes.byref(matrix)
    loose_box = pdfium_c.FPDFText_GetLooseCharBox
    upright: list[Word] = []
    turned: list[Word] = []
    for match in _WORD.finditer(text):
        first, last = match.start(), match.end() - 1
        if not loose_box(handle, first, ref):
            continue
        x0, top, bottom = box.left, box.top, box.bottom
        # The font's size times the vertical scale of the text and page matrices.
        size = pdfium_c.FPDFText_GetFontSize(handle, first)
        if pdfium_c.FPDFText_GetMatrix(handle, first, matrix_ref):
            size *= math.hypot(matrix.c, matrix.d) or 1.0
        size = size or (top - bottom)
        word_text = _normal(match.group())
        angle = pdfium_c.FPDFText_GetCharAngle(handle, first)
        if angle > 0.01 and abs(angle - 2 * math.pi) > 0.01:
            turned.append(Word(word_text, x0, box.right, bottom, top, size))
            continue
        if last != first:
            loose_box(handle, last, ref)
        if box.right < x0 or abs((box.top + box.bottom) - (top + bottom)) > (top - bottom):
            # The "word" runs across lines or objects: split it where it jumps.
            upright.extend(_split_word(handle, first, last + 1, text, size))
            continue
        upright.append(Word(word_text, x0, box.right, min(bottom, box.bottom), top, size))
    return upright, turned


def _normal(text: str) -> str:
    """Ligatures spelt out; PDFium's line-end hyphen (U+0002 when read char by char, U+FFFE
    in its text) after a letter becomes HYPHEN_MARK."""
    text = text.translate(_LIGATURES)
    if "\x02" in text or HYPHEN_MARK in text:
        return _LINE_END_HYPHEN.sub(HYPHEN_MARK, text)
    return text


def _split_word(handle: object, start: int, stop: int, text: str, size: float) -> list[Word]:
    box = pdfium_c.FS_RECTF()
    ref = ctypes.byref(box)
    words: list[Word] = []
    chars: list[str] = []
    x0 = x1 = bottom = top = 0.0
    for i in range(start, stop):
        if not pdfium_c.FPDFText_GetLooseCharBox(handle, i, ref):
            continue
        jump = chars and (box.left < x1 - size or abs(box.top - top) > 0.5 * (top - bottom))
        if jump:
            words.append(Word(_normal("".join(chars)), x0, x1, bottom, top, size))
            chars = []
        if not chars:
            x0, bottom, top = box.left, box.bottom, box.top
        chars.append(text[i])
        x1 = box.right
    if chars:
        words.append(Word(_normal("".join(chars)), x0, x1, bottom, top, size))
    return words


# -- headings ------------------------------------------------------------------------------


def _apply_outline(found: list[Piece], outline: list[tuple[int, str, int]]) -> bool:
    """Mark the pieces the outline names as headings; False if it names none."""
    by_page: dict[int, list[Piece]] = defaultdict(list)
    for piece in found:
        if piece.kind is BlockKind.PARAGRAPH and piece.rows <= 3:
            by_page[piece.page].append(piece)
    matched = 0
    for level, title, page in outline:
        want = _comparable(title)
        for piece in by_page.get(page, ()):
            if piece.kind is BlockKind.HEADING:
                continue
            got = _comparable(piece.text)
            if got and (
                got == want
                or (got.startswith(want) and len(got) <= 1.3 * len(want) + 5)
                or (got.endswith(want) and _NUMBERING.fullmatch(got[: -len(want)]))
                or (want.endswith(got) and len(got) >= 3)
            ):
                piece.kind, piece.level = BlockKind.HEADING, min(level, 6)
                matched += 1
                break
    return matched > 0


def _comparable(text: str) -> str:
    return " ".join(re.sub(r"\W+", " ", text).split()).casefold()


def _body_size(found: list[Piece]) -> float:
    """The font size most characters are set in (the smaller one on a tie)."""
    chars: Counter[float] = Counter()
    for piece in found:
        chars.update(piece.chars_by_size)
    return max(chars, key=lambda size: (chars[size], -size)) if chars else 0.0


def _apply_font_sizes(found: list[Piece], body: float) -> int:
    """Short paragraphs set larger than the body text become headings, levels by size;
    returns how many levels.

    Not a heading: a caption, a formula, a page number, unreadable text
    (``heading_rejection``), or a text repeated on three or more pages (a
    running head the furniture filter did not catch).
    """
    repeated = _repeated_texts(found)
    candidates = [
        p
        for p in found
        if _looks_like_heading(p, body)
        and heading_rejection(p.text) is None
        and _comparable(p.text) not in repeated
    ]
    sizes = sorted({round(p.size * 2) / 2 for p in candidates}, reverse=True)
    for piece in candidates:
        piece.kind = BlockKind.HEADING
        piece.level = min(sizes.index(round(piece.size * 2) / 2) + 1, 6)
    return len(sizes)


# A section's number and title on a line of their own: a Roman numeral, a capital letter
# (a subsection of one) or dotted Arabic numbers, then a title starting with a capital
# letter, without a full stop or a page number at its end.
_SECTION_LINE = re.compile(
    r"(?P<number>[IVX]{1,5}|[A-H]|\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+"
    r"(?P<title>[A-Z][^.!?]{0,80}?)(?<![\s\d])"
)
_SECTION_WORDS = 12  # at most this many words in a numbered heading's title
_ROMAN = {"I": 1, "V": 5, "X": 10}


@dataclass(frozen=True)
class _Numbered:
    piece: Piece
    at: int  # the piece's place in the document
    scheme: str  # "roman", "letter" or "arabic": each numbered on its own
    number: tuple[int, ...]  # (3, 1) for 3.1; (2,) for II or B


def _numbered_headings(found: list[Piece], body: float) -> list[tuple[Piece, int]]:
    """Numbered section headings set in the body text's own size, with their depth (a
    Roman numeral 1, a letter 2, ``3.1`` 2): single lines that a number opens and a
    short title follows, where the numbers follow on from one another within their
    scheme — the next at some depth, or a first child (``3`` → ``3.1``), or the first of
    a scheme — or the next such line follows on from this one (a heading lost to the
    layout between them). Headings found by their size count in the sequence
    (``2 Related Work`` set large, then ``2.1`` in the body's size). A numbered list
    (two such lines with nothing between them at the same depth), a running head
    repeated on three or more pages, a caption or a formula are not headings."""
    repeated = _repeated_texts(found, digits=False)
    lines: list[_Numbered] = []
    for at, piece in enumerate(found):
        numbered = _numbering(piece.text) if _short(piece) else None
        if numbered is None:
            continue
        if piece.kind is BlockKind.HEADING or (
            _body_line(piece, body)
            and heading_rejection(piece.text) is None
            and re.sub(r"\d+", "", _comparable(piece.text)) not in repeated
        ):
            lines.append(_Numbered(piece, at, *numbered))
    listed = {
        id(x.piece)
        for a, b in itertools.pairwise(lines)
        if b.at == a.at + 1 and a.scheme == b.scheme and len(a.number) == len(b.number)
        for x in (a, b)
        if x.piece.kind is not BlockKind.HEADING
    }
    lines = [x for x in lines if id(x.piece) not in listed]
    last: dict[str, tuple[int, ...]] = {}
    out: list[tuple[Piece, int]] = []
    for n, line in enumerate(lines):
        after = next((x for x in lines[n + 1 :] if x.scheme == line.scheme), None)
        if (
            line.piece.kind is BlockKind.HEADING
            or _follows(last.get(line.scheme), line.number)
            or (after is not None and _follows(line.number, after.number))
        ):
            last[line.scheme] = line.number
            if line.scheme == "roman":  # its subsections' letters start again
                last.pop("letter", None)
            if line.piece.kind is not BlockKind.HEADING:
                depth = {"roman": 1, "letter": 2}.get(line.scheme, len(line.number))
                out.append((line.piece, depth))
    return out


def _body_line(piece: Piece, body: float) -> bool:
    """A paragraph of one line, in the body's size (or a little smaller: small caps)."""
    return (
        piece.kind is BlockKind.PARAGRAPH
        and piece.rows == 1
        and not piece.rotated
        and body * 0.85 <= piece.size < body * _HEADING_RATIO
    )


def _numbering(text: str) -> tuple[str, tuple[int, ...]] | None:
    """(scheme, number) of a text that reads as a numbered heading, else None."""
    match = _SECTION_LINE.fullmatch(text.strip())
    if match is None or len(match["title"].split()) > _SECTION_WORDS:
        return None
    number = match["number"]
    if number.isdigit() or "." in number:
        return "arabic", tuple(int(part) for part in number.split("."))
    if len(number) == 1 and number in "ABCDEFGH":
        return "letter", (ord(number) - ord("A") + 1,)
    value = _roman(number)
    return ("roman", (value,)) if value else None


def _roman(numeral: str) -> int:
    """The value of a Roman numeral of I, V and X (0 if it is not a well-formed one)."""
    values = [_ROMAN[c] for c in numeral]
    total = sum(
        -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
    )
    canonical = (
        "X" * (total // 10)
        + ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"][total % 10]
    )
    return total if numeral == canonical else 0


def _follows(before: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    """Whether ``number`` may come right after ``before`` (None: the first of its
    scheme, which opens at 1): the next at some depth, or a first child."""
    if before is None:
        return number[-1] == 1
    if number == (*before, 1):
        return True
    return any(number == (*before[:k], before[k] + 1) for k in range(len(before)))


def _looks_like_heading(piece: Piece, body: float) -> bool:
    return (
        piece.kind is BlockKind.PARAGRAPH and piece.size >= body * _HEADING_RATIO and _short(piece)
    )


def _short(piece: Piece) -> bool:
    return piece.rows <= 3 and len(piece.text) <= 200 and sum(c.isalpha() for c in piece.text) >= 2


def _repeated_texts(found: list[Piece], *, digits: bool = True) -> set[str]:
    """Short texts (compared loosely; without their digits unless ``digits``) that occur
    on three or more pages."""
    pages: defaultdict[str, set[int]] = defaultdict(set)
    for piece in found:
        if _short(piece):
            text = _comparable(piece.text)
            pages[text if digits else re.sub(r"\d+", "", text)].add(piece.page)
    return {text for text, on in pages.items() if len(on) >= 3}


def _title(found: list[Piece], body: float) -> str | None:
    """The title on page 1 (``_title_lines``), else the first heading."""
    lines = _title_lines(found, body)
    if lines:
        return " ".join(p.text for p in lines)
    return next((p.text for p in found if p.kind is BlockKind.HEADING and p.page <= 2), None)


def _title_lines(found: list[Piece], body: float) -> list[Piece]:
    """The largest short text on page 1 if it stands out (a quarter larger than the body
    text), with the one or two pieces after it of its size: a title set on two or three
    lines that became pieces of their own (at most 200 characters). [] if none does."""
    first_page = [
        p
        for p in found
        if p.page == 1
        and p.kind is not BlockKind.TABLE
        and not p.rotated
        and _short(p)
        and heading_rejection(p.text) is None
    ]
    if not first_page:
        return []
    largest = max(first_page, key=lambda p: p.size)
    if largest.size < body * _TITLE_RATIO:
        return []
    at = first_page.index(largest)
    lines = [largest]
    for piece in first_page[at + 1 : at + 3]:
        joined = " ".join(p.text for p in [*lines, piece])
        if abs(piece.size - largest.size) > 0.5 or len(joined) > 200:
            break
        lines.append(piece)
    return lines


def _one_title_heading(found: list[Piece], body: float) -> list[Piece]:
    """The title's lines, when they are headings, as one heading: otherwise its last
    line alone would head every section ("for Decentralized Authorization in the
    Cloud" under the macaroons paper's title)."""
    lines = _title_lines(found, body)
    if len(lines) < 2 or any(p.kind is not BlockKind.HEADING for p in lines):
        return found
    lines[0].text = " ".join(p.text for p in lines)
    joined = {id(p) for p in lines[1:]}
    return [p for p in found if id(p) not in joined]


# -- running headers and footers -----------------------------------------------------------


def _without_furniture(found: list[Piece]) -> list[Piece]:
    """Without running headers, footers and page numbers.

    These are short pieces among the first or last two of a page that are a
    lone page number, or whose text (digits aside) and size repeat on at least
    three pages and a quarter of them.
    """
    by_page: dict[int, list[Piece]] = defaultdict(list)
    for piece in found:
        by_page[piece.page].append(piece)
    if len(by_page) < 3:
        return found
    counts: Counter[tuple[str, int]] = Counter()
    for pieces_of_page in by_page.values():
        counts.update({_furniture_key(p) for p in _edges(pieces_of_page)})
    repeated = {k for k, n in counts.items() if n >= 3 and n >= len(by_page) / 4}
    drop = {
        id(p)
        for pieces_of_page in by_page.values()
        for p in _edges(pieces_of_page)
        if _furniture_key(p) in repeated or _PAGE_NUMBER.fullmatch(p.text.strip(" -\u2013"))
    }
    return [p for p in found if id(p) not in drop]


def _edges(page: list[Piece]) -> list[Piece]:
    edges = page[:2] + page[2:][-2:]
    return [p for p in edges if p.rows <= 2 and len(p.text) <= 120]


def _furniture_key(piece: Piece) -> tuple[str, int]:
    return re.sub(r"\d+", "#", one_line(piece.text).casefold()), round(piece.size)
