"""A PDF's structure from all its pages' pieces: furniture out, headings and title found.

In order: running heads, footers and page numbers are dropped
(:func:`without_furniture`); a paragraph broken across a column or page break
is joined again (:func:`joined_across_breaks`); then headings come from the
outline (:func:`apply_outline`) or, failing that, from font sizes
(:func:`apply_font_sizes`) and section numbers in the body's size
(:func:`numbered_headings`); a title set on several lines that are headings
becomes one heading (:func:`one_title_heading`), and the title is found
(:func:`title`, :func:`placeholder_title`).

Thresholds and patterns are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from docshelf.model import BlockKind
from docshelf.parse._blocks import one_line
from docshelf.parse.pdf_layout import Piece
from docshelf.parse.pdf_text import heading_rejection, is_page_number
from docshelf.parse.pdf_thresholds import (
    DIGITS,
    ENDS_BROKEN,
    FURNITURE_EDGE_PIECES,
    FURNITURE_MAX_CHARS,
    FURNITURE_MAX_ROWS,
    FURNITURE_MIN_PAGES,
    FURNITURE_PAGE_SHARE,
    HEADING_LEVELS,
    HEADING_MAX_CHARS,
    HEADING_MAX_ROWS,
    HEADING_MIN_LETTERS,
    HEADING_RATIO,
    HYPHEN_MARK,
    NON_WORD,
    OUTLINE_LENGTH_SLACK,
    OUTLINE_LENGTH_SPREAD,
    OUTLINE_MIN_TAIL,
    OUTLINE_NUMBERING,
    PLACEHOLDER_TITLE,
    REPEATED_MIN_PAGES,
    SECTION_LINE,
    SECTION_WORDS,
    SIZE_STEP,
    SMALL_CAPS_RATIO,
    TITLE_LINE_SIZE_TOLERANCE,
    TITLE_MAX_CHARS,
    TITLE_MAX_LINES,
    TITLE_PAGES,
    TITLE_RATIO,
)

# -- running heads, footers and page numbers -----------------------------------------------


def without_furniture(found: list[Piece]) -> list[Piece]:
    """The pieces without running heads, footers and page numbers: pieces at a page's
    edges (:func:`page_edges`) that are a page number or :func:`running_furniture`.
    When that would leave no text at all (pages that repeat one short text, and
    nothing else), the repeated text is the document's: only page numbers go."""
    by_page: dict[int, list[Piece]] = defaultdict(list)
    for piece in found:
        by_page[piece.page].append(piece)
    if len(by_page) < FURNITURE_MIN_PAGES:
        return found
    repeated = running_furniture(list(by_page.values()))
    drop = {
        id(p)
        for pieces_of_page in by_page.values()
        for p in page_edges(pieces_of_page)
        if _furniture_key(p) in repeated or is_page_number(p.text)
    }
    kept = [p for p in found if id(p) not in drop]
    if not kept:  # every page holds only the same short text: that text is the content
        kept = [p for p in found if not is_page_number(p.text)]
    return kept


def page_edges(page: list[Piece]) -> list[Piece]:
    """Where running heads, footers and page numbers sit: the first and last
    FURNITURE_EDGE_PIECES pieces of a page, when short (FURNITURE_MAX_ROWS lines,
    FURNITURE_MAX_CHARS characters)."""
    n = FURNITURE_EDGE_PIECES
    edges = page[:n] + page[n:][-n:]
    return [p for p in edges if p.rows <= FURNITURE_MAX_ROWS and len(p.text) <= FURNITURE_MAX_CHARS]


def running_furniture(pages: list[list[Piece]]) -> set[tuple[str, int]]:
    """Running heads and footers: texts at the pages' edges that repeat, digits aside and
    in one size, on FURNITURE_MIN_PAGES pages and FURNITURE_PAGE_SHARE of them (as keys)."""
    counts: Counter[tuple[str, int]] = Counter()
    for pieces_of_page in pages:
        counts.update({_furniture_key(p) for p in page_edges(pieces_of_page)})
    return {
        k
        for k, n in counts.items()
        if n >= FURNITURE_MIN_PAGES and n >= FURNITURE_PAGE_SHARE * len(pages)
    }


def _furniture_key(piece: Piece) -> tuple[str, int]:
    return DIGITS.sub("#", one_line(piece.text).casefold()), round(piece.size)


# -- paragraphs across breaks ----------------------------------------------------------------


def joined_across_breaks(found: list[Piece]) -> list[Piece]:
    """The pieces with each paragraph that :func:`continues_broken_word` joined to the one
    before it."""
    out: list[Piece] = []
    for piece in found:
        last = out[-1] if out else None
        if last is not None and continues_broken_word(last, piece):
            if piece.ocr is not None or last.ocr is not None:  # a scan on either side
                last.ocr = _mean_confidence(last, piece)
            last.text = (
                last.text.removesuffix("-").removesuffix(HYPHEN_MARK) + HYPHEN_MARK + piece.text
            )
            last.rows += piece.rows
            for size, n in piece.chars_by_size.items():
                last.chars_by_size[size] = last.chars_by_size.get(size, 0) + n
            continue
        out.append(piece)
    return out


def _mean_confidence(last: Piece, piece: Piece) -> float:
    """The OCR confidence of two pieces joined, by their characters (text read from a
    text layer counts as certain)."""
    a, b = len(last.text), len(piece.text)
    first = 1.0 if last.ocr is None else last.ocr
    second = 1.0 if piece.ocr is None else piece.ocr
    return (first * a + second * b) / ((a + b) or 1)


def continues_broken_word(last: Piece, piece: Piece) -> bool:
    """A paragraph that starts in lower case after one that ends in a broken word
    (``inaccessi-`` / ``ble file server``): one paragraph across a column or page break."""
    return (
        last.kind is piece.kind is BlockKind.PARAGRAPH
        and ENDS_BROKEN.search(last.text) is not None
        and piece.text[:1].islower()
    )


# -- headings ------------------------------------------------------------------------------


def body_size(found: list[Piece]) -> float:
    """The body text's font size: the one most characters are set in (the smaller on a
    tie)."""
    chars: Counter[float] = Counter()
    for piece in found:
        chars.update(piece.chars_by_size)
    return max(chars, key=lambda size: (chars[size], -size)) if chars else 0.0


def apply_outline(found: list[Piece], outline: list[tuple[int, str, int]]) -> bool:
    """Mark the pieces the outline's (level, title, page) entries name as headings
    (:func:`outline_match`); False if it names none."""
    by_page: dict[int, list[Piece]] = defaultdict(list)
    for piece in found:
        if piece.kind is BlockKind.PARAGRAPH and piece.rows <= HEADING_MAX_ROWS:
            by_page[piece.page].append(piece)
    matched = 0
    for level, entry, page in outline:
        want = _comparable(entry)
        for piece in by_page.get(page, ()):
            if piece.kind is BlockKind.HEADING:
                continue
            if outline_match(_comparable(piece.text), want):
                piece.kind, piece.level = BlockKind.HEADING, min(level, HEADING_LEVELS)
                matched += 1
                break
    return matched > 0


def outline_match(got: str, want: str) -> bool:
    """A text that is an outline entry's title (both compared loosely): the same, the title
    and a short tail, the title after a section number, or the title's end."""
    return bool(got) and bool(
        got == want
        or (
            got.startswith(want)
            and len(got) <= OUTLINE_LENGTH_SPREAD * len(want) + OUTLINE_LENGTH_SLACK
        )
        or (got.endswith(want) and OUTLINE_NUMBERING.fullmatch(got[: -len(want)]))
        or (want.endswith(got) and len(got) >= OUTLINE_MIN_TAIL)
    )


def _comparable(text: str) -> str:
    return " ".join(NON_WORD.sub(" ", text).split()).casefold()


def apply_font_sizes(found: list[Piece], body: float) -> int:
    """Mark the pieces :func:`set_larger` as headings, levels by size, largest first, unless
    ``heading_rejection`` turns one down or it is :func:`repeated_texts`; returns how many
    levels."""
    repeated = repeated_texts(found)
    candidates = [
        p
        for p in found
        if set_larger(p, body)
        and heading_rejection(p.text) is None
        and _comparable(p.text) not in repeated
    ]
    sizes = sorted({_step(p.size) for p in candidates}, reverse=True)
    for piece in candidates:
        piece.kind = BlockKind.HEADING
        piece.level = min(sizes.index(_step(piece.size)) + 1, HEADING_LEVELS)
    return len(sizes)


def _step(size: float) -> float:
    return round(size / SIZE_STEP) * SIZE_STEP


def set_larger(piece: Piece, body: float) -> bool:
    """A :func:`short` paragraph set at least HEADING_RATIO times the body size: a heading."""
    return piece.kind is BlockKind.PARAGRAPH and piece.size >= body * HEADING_RATIO and short(piece)


def short(piece: Piece) -> bool:
    """A piece short enough to be a heading or a title: a few lines and characters, with
    letters in it."""
    return (
        piece.rows <= HEADING_MAX_ROWS
        and len(piece.text) <= HEADING_MAX_CHARS
        and _has_letters(piece.text, HEADING_MIN_LETTERS)
    )


def _has_letters(text: str, n: int) -> bool:
    """Whether ``text`` has at least ``n`` letters (counting stops at the n-th)."""
    letters = (c for c in text if c.isalpha())
    return sum(1 for _ in itertools.islice(letters, n)) == n


def repeated_texts(found: list[Piece], *, digits: bool = True) -> set[str]:
    """Running heads the furniture rule left: :func:`short` texts (compared loosely;
    without their digits unless ``digits``) on REPEATED_MIN_PAGES pages or more."""
    pages: defaultdict[str, set[int]] = defaultdict(set)
    for piece in found:
        if short(piece):
            text = _comparable(piece.text)
            pages[text if digits else DIGITS.sub("", text)].add(piece.page)
    return {text for text, on in pages.items() if len(on) >= REPEATED_MIN_PAGES}


# -- numbered headings in the body's size --------------------------------------------------

_ROMAN = {"I": 1, "V": 5, "X": 10}
_DEPTHS = {"roman": 1, "letter": 2}  # a heading's depth by its scheme (arabic: its parts)


@dataclass(frozen=True)
class Numbered:
    """A line that reads as a numbered heading, and where it is."""

    piece: Piece
    at: int  # the piece's place in the document
    scheme: str  # "roman", "letter" or "arabic": each numbered on its own
    number: tuple[int, ...]  # (3, 1) for 3.1; (2,) for II or B


def numbered_headings(found: list[Piece], body: float) -> list[tuple[Piece, int]]:
    """Numbered section headings set in the body text's own size, with their depth (a
    Roman numeral 1, a letter 2, ``3.1`` 2).

    They are single lines (:func:`body_line`) that a number opens and a short
    title follows (:func:`section_number`), where the numbers follow on from
    one another within their scheme (:func:`follows`) — or the next such line
    follows on from this one (a heading lost to the layout between them).
    Headings found by their size count in the sequence (``2 Related Work`` set
    large, then ``2.1`` in the body's size). A numbered list
    (:func:`numbered_list`), a running head (:func:`repeated_texts`, digits
    aside), a caption or a formula are not headings.
    """
    repeated = repeated_texts(found, digits=False)
    lines: list[Numbered] = []
    for at, piece in enumerate(found):
        numbered = section_number(piece.text) if short(piece) else None
        if numbered is None:
            continue
        if piece.kind is BlockKind.HEADING or (
            body_line(piece, body)
            and heading_rejection(piece.text) is None
            and DIGITS.sub("", _comparable(piece.text)) not in repeated
        ):
            lines.append(Numbered(piece, at, *numbered))
    listed = numbered_list(lines)
    lines = [x for x in lines if id(x.piece) not in listed]
    last: dict[str, tuple[int, ...]] = {}
    out: list[tuple[Piece, int]] = []
    for n, line in enumerate(lines):
        after = next((x for x in lines[n + 1 :] if x.scheme == line.scheme), None)
        if (
            line.piece.kind is BlockKind.HEADING
            or follows(last.get(line.scheme), line.number)
            or (after is not None and follows(line.number, after.number))
        ):
            last[line.scheme] = line.number
            if line.scheme == "roman":  # its subsections' letters start again
                last.pop("letter", None)
            if line.piece.kind is not BlockKind.HEADING:
                out.append((line.piece, _DEPTHS.get(line.scheme, len(line.number))))
    return out


def body_line(piece: Piece, body: float) -> bool:
    """A paragraph of one upright line in the body's size, or a little smaller (small
    capitals)."""
    return (
        piece.kind is BlockKind.PARAGRAPH
        and piece.rows == 1
        and not piece.rotated
        and body * SMALL_CAPS_RATIO <= piece.size < body * HEADING_RATIO
    )


def section_number(text: str) -> tuple[str, tuple[int, ...]] | None:
    """The (scheme, number) of a line that a section number opens and a short title
    follows (``II. MOTIVATION``, ``A. Concepts``, ``3.1 Design Philosophy``), else None."""
    match = SECTION_LINE.fullmatch(text.strip())
    if match is None or len(match["title"].split()) > SECTION_WORDS:
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


def numbered_list(lines: Iterable[Numbered]) -> set[int]:
    """A numbered list, not headings: numbered lines with nothing between them at the same
    depth of one scheme (as ``id`` of their pieces; headings found by size are kept)."""
    return {
        id(x.piece)
        for a, b in itertools.pairwise(lines)
        if b.at == a.at + 1 and a.scheme == b.scheme and len(a.number) == len(b.number)
        for x in (a, b)
        if x.piece.kind is not BlockKind.HEADING
    }


def follows(before: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    """A section number that may come right after ``before``: the next at some depth, or a
    first child (``3`` → ``3.1``); with None before it, the first of its scheme (``1``)."""
    if before is None:
        return number[-1] == 1
    if number == (*before, 1):
        return True
    return any(number == (*before[:k], before[k] + 1) for k in range(len(before)))


# -- title ---------------------------------------------------------------------------------


def title(found: list[Piece], body: float) -> str | None:
    """The title on page 1 (:func:`title_lines`), else the first heading on the first
    TITLE_PAGES pages."""
    lines = title_lines(found, body)
    if lines:
        return " ".join(p.text for p in lines)
    return next(
        (p.text for p in found if p.kind is BlockKind.HEADING and p.page <= TITLE_PAGES), None
    )


def title_lines(found: list[Piece], body: float) -> list[Piece]:
    """The title on page 1: its largest short text if it stands out (TITLE_RATIO times the
    body size), with the one or two pieces after it in its size ([] if none stands out).

    The further pieces are a title set on two or three lines that became pieces of
    their own; joined, they are at most TITLE_MAX_CHARS characters. Rotated text,
    tables and what ``heading_rejection`` turns down are never the title.
    """
    first_page = [
        p
        for p in found
        if p.page == 1
        and p.kind is not BlockKind.TABLE
        and not p.rotated
        and short(p)
        and heading_rejection(p.text) is None
    ]
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
