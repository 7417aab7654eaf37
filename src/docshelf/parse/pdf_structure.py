"""A PDF's structure from all its pages' pieces: furniture out, headings found.

In order: running heads, footers and page numbers are dropped
(:func:`without_furniture`); a paragraph broken across a column or page break
is joined again (:func:`joined_across_breaks`); then headings come from the
outline (:func:`apply_outline`) or, failing that, from font sizes
(:func:`apply_font_sizes`: never the authors, their affiliations or the date,
:func:`bylines`) and section numbers in the body's size
(:func:`numbered_headings`). The title is found after them (``parse.pdf_title``).

Thresholds and patterns are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from docshelf.model import BlockKind
from docshelf.parse._blocks import one_line
from docshelf.parse.pdf_bylines import is_byline, is_person_name, lower_case_words
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
    REPEATED_MIN_PAGES,
    RUNNING_HEAD_NUMBER,
    SECTION_LINE,
    SECTION_WORDS,
    SIZE_STEP,
    SMALL_CAPS_RATIO,
    TITLE_LINE_SIZE_TOLERANCE,
    TITLE_PAGES,
)

# -- running heads, footers and page numbers -----------------------------------------------


def without_furniture(found: list[Piece]) -> list[Piece]:
    """The pieces without running heads, footers and page numbers: pieces at a page's
    edges (:func:`page_edges`) that are a page number, :func:`running_furniture` or
    :func:`numbered_running_heads`.
    When that would leave no text at all (pages that repeat one short text, and
    nothing else), the repeated text is the document's: only page numbers go."""
    by_page: dict[int, list[Piece]] = defaultdict(list)
    for piece in found:
        by_page[piece.page].append(piece)
    if len(by_page) < FURNITURE_MIN_PAGES:
        return found
    pages = list(by_page.values())
    repeated = running_furniture(pages)
    drop = numbered_running_heads(pages, body_size(found)) | {
        id(p)
        for pieces_of_page in pages
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


def numbered_running_heads(pages: list[list[Piece]], body: float) -> set[int]:
    """Running heads that carry their page's printed number (``48 2 Concurrency``,
    ``2.3 Concurrency 49``): texts at the pages' edges, not set larger than the body, that
    open or close with the page's number less an offset FURNITURE_MIN_PAGES pages share
    (as ``id``).

    A book's running heads name its chapters and sections, each on too few of its
    pages to repeat as :func:`running_furniture` does; the page number tells them.
    """
    numbered: list[tuple[Piece, int]] = []  # (piece, its page less its number)
    for pieces_of_page in pages:
        for piece in page_edges(pieces_of_page):
            if piece.size >= body * HEADING_RATIO or not _has_letters(piece.text, 1):
                continue
            match = RUNNING_HEAD_NUMBER.fullmatch(one_line(piece.text))
            if match is not None:
                number = match["opening"] or match["closing"]
                numbered.append((piece, piece.page - int(number)))
    on_pages: defaultdict[int, set[int]] = defaultdict(set)
    for piece, offset in numbered:
        on_pages[offset].add(piece.page)
    shared = {offset for offset, on in on_pages.items() if len(on) >= FURNITURE_MIN_PAGES}
    return {id(piece) for piece, offset in numbered if offset in shared}


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
    ``heading_rejection`` turns one down or it is :func:`repeated_texts` or one of the
    :func:`bylines`; returns how many levels."""
    repeated = repeated_texts(found)
    byline = bylines(found)
    candidates = [
        p
        for p in found
        if set_larger(p, body)
        and heading_rejection(p.text) is None
        and _comparable(p.text) not in repeated
        and id(p) not in byline
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


def bylines(found: list[Piece]) -> set[int]:
    """Who wrote the document, where and when: the :func:`short` texts of its first
    TITLE_PAGES pages that ``is_byline`` says are an author list, an affiliation, an
    e-mail address or a date, by the words the document uses in lower case, and the
    names alone (``is_person_name``) beside them (as ``id``).

    A name alone goes with the byline next to it, names between (``Robbert van
    Renesse`` over ``rvr@cs.cornell.edu``); one right after a text in its size that is
    no byline goes on from that text (``An Axiomatic Basis for`` / ``Computer
    Programming``).
    """
    front = [p for p in found if p.page <= TITLE_PAGES]
    if not front:
        return set()
    common = lower_case_words(p.text for p in found)
    kinds: list[str | None] = []  # "byline", "name" or None, piece by piece
    for before, piece in zip([None, *front], front, strict=False):
        kinds.append(_byline_kind(piece, before, kinds[-1] if kinds else None, common))
    return {
        id(piece)
        for n, (piece, kind) in enumerate(zip(front, kinds, strict=True))
        if kind == "byline" or (kind == "name" and _beside_byline(kinds, n))
    }


def _byline_kind(
    piece: Piece, before: Piece | None, before_kind: str | None, common: set[str]
) -> str | None:
    if piece.kind is BlockKind.TABLE or not short(piece):
        return None
    if is_byline(piece.text, common):
        return "byline"
    if not is_person_name(piece.text, common):
        return None
    goes_on = (
        before is not None
        and before_kind is None
        and abs(before.size - piece.size) <= TITLE_LINE_SIZE_TOLERANCE
    )
    return None if goes_on else "name"


def _beside_byline(kinds: list[str | None], n: int) -> bool:
    """Whether the first piece that is no name before or after piece ``n`` is a byline."""
    before = next((k for k in reversed(kinds[:n]) if k != "name"), None)
    after = next((k for k in kinds[n + 1 :] if k != "name"), None)
    return "byline" in (before, after)


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
