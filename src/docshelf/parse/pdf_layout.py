"""Page layout for PDFs: positioned words in, rows in reading order out, as regions.

Pure geometry, no PDF library: ``parse.pdf_page`` extracts the words of a page
(text, box, font size), this module orders them and ``parse.pdf_pieces``
groups each region's rows into paragraphs and tables.

1. **Rows.** Words whose vertical centres are close form a row
   (:func:`same_row`); within a row, words split into *segments* wherever the
   horizontal gap is wider than about one em (:func:`wide_gap`: a column
   gutter or a gap between table cells). A word drawn twice, slightly offset
   ("fake bold"), is read once (:func:`drawn_twice`).
2. **Columns.** A page (or a part of it) is split at a vertical *gutter*
   (:func:`gutter`): an x position in the middle of the text that few segments
   cross, with column-like text on both sides. Rows that cross the gutter (a
   title, an abstract, a wide figure) or a wide table's rows cut the page into
   bands (:func:`cuts_band`; a row of cells alone is no table's:
   :func:`table_row_alone`); inside a band the left column is read before the
   right one. Each column is split again (up to three levels), so three-column
   pages work too.

Thresholds are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from docshelf.model import BlockKind
from docshelf.parse.pdf_thresholds import (
    COLUMN_LINE_FILL,
    COLUMN_LINE_SHARE,
    COLUMN_MIN_ROWS,
    COLUMN_MIN_WIDTH_SHARE,
    DUPLICATE_OFFSET_EM,
    EDGE_GRAIN,
    EDGE_NEAR_EM,
    GUTTER_CROSSING_SHARE,
    GUTTER_MIN_ROWS,
    GUTTER_MIN_WIDTH,
    GUTTER_ZONE_END,
    GUTTER_ZONE_START,
    MAX_COLUMN_DEPTH,
    MIN_EM,
    ROW_TOLERANCE,
    SEGMENT_GAP_EM,
    WIDE_ROW_CELLS,
)


@dataclass(frozen=True, slots=True)
class Rule:
    """A ruling line (or a thin rectangle) on the page, as a box in PDF space."""

    x0: float
    x1: float
    bottom: float
    top: float

    @property
    def horizontal(self) -> bool:
        return self.x1 - self.x0 > self.top - self.bottom


@dataclass(slots=True)
class Word:
    """A word's text and box in PDF space (points, y grows upwards) and its font size.

    Not frozen, though never changed: a page has hundreds of words, and a frozen
    dataclass is several times dearer to make.
    """

    text: str
    x0: float
    x1: float
    bottom: float
    top: float
    size: float

    @property
    def middle(self) -> float:
        return (self.bottom + self.top) / 2


@dataclass(slots=True)
class Segment:
    """Words on one row with no wide gap between them."""

    words: list[Word]
    x0: float = 0.0
    x1: float = 0.0
    bottom: float = 0.0
    top: float = 0.0
    size: float = 0.0

    def __post_init__(self) -> None:
        words = self.words
        self.x0 = min([w.x0 for w in words])
        self.x1 = max([w.x1 for w in words])
        self.bottom = min([w.bottom for w in words])
        self.top = max([w.top for w in words])
        # The size most of its characters have.
        weights: dict[float, int] = {}
        for w in words:
            weights[w.size] = weights.get(w.size, 0) + len(w.text)
        self.size = max(weights, key=lambda s: (weights[s], s))

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass(slots=True)
class Row:
    """Segments sharing a baseline, left to right."""

    segments: list[Segment]
    top: float = 0.0
    bottom: float = 0.0
    size: float = 0.0  # the size of its longest segment

    def __post_init__(self) -> None:
        self.top = max([s.top for s in self.segments])
        self.bottom = min([s.bottom for s in self.segments])
        self.size = max(self.segments, key=lambda s: len(s.words)).size

    @property
    def x0(self) -> float:
        return self.segments[0].x0

    @property
    def x1(self) -> float:
        return self.segments[-1].x1

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.segments)


@dataclass(slots=True)
class Piece:
    """A paragraph or table of one page, before headings are decided."""

    kind: BlockKind
    text: str
    size: float
    rows: int
    page: int
    level: int = 0
    chars_by_size: dict[float, int] = field(default_factory=dict)
    rotated: bool = False  # rotated text (a margin stamp, a landscape table)
    ocr: float | None = None  # read by OCR (parse.pdf_ocr): its words' mean confidence


# -- rows ----------------------------------------------------------------------------------


def rows_of(words: Iterable[Word]) -> list[Row]:
    """Words grouped into rows (top to bottom), each split into segments (left to right)."""
    ordered = sorted(words, key=lambda w: (-w.middle, w.x0))
    rows: list[Row] = []
    current: list[Word] = []
    anchor: Word | None = None
    for word in ordered:
        if anchor is not None and same_row(anchor, word):
            current.append(word)
            continue
        if current:
            rows.append(Row(_segments(current)))
        current, anchor = [word], word
    if current:
        rows.append(Row(_segments(current)))
    return rows


def same_row(anchor: Word, word: Word) -> bool:
    """A word on the row ``anchor`` opened: their vertical centres are closer than
    ROW_TOLERANCE of the taller one's height."""
    middles = (anchor.bottom + anchor.top) / 2 - (word.bottom + word.top) / 2
    return abs(middles) <= ROW_TOLERANCE * max(anchor.top - anchor.bottom, word.top - word.bottom)


def _segments(words: list[Word]) -> list[Segment]:
    words.sort(key=lambda w: w.x0)
    segments: list[list[Word]] = []
    previous: Word | None = None
    for word in words:
        if previous is not None and drawn_twice(previous, word):
            continue
        if previous is None or wide_gap(previous, word):
            segments.append([word])
        else:
            segments[-1].append(word)
        previous = word
    return [Segment(ws) for ws in segments]


def drawn_twice(previous: Word, word: Word) -> bool:
    """The same word drawn again a little to the side ("fake bold"), to be read once."""
    return previous.text == word.text and abs(previous.x0 - word.x0) < DUPLICATE_OFFSET_EM * max(
        previous.size, MIN_EM
    )


def wide_gap(previous: Word, word: Word) -> bool:
    """A gap between two words of a row wider than about an em: a column gutter or a gap
    between table cells, where a new segment starts."""
    return word.x0 - previous.x1 > SEGMENT_GAP_EM * max(word.size, previous.size, MIN_EM)


# -- columns -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Columns:
    """Two columns either side of a gutter: where each starts and how wide it is."""

    gutter: float
    left_edge: float
    right_edge: float
    left_width: float
    right_width: float


def regions(rows: Sequence[Row], depth: int = 0) -> list[list[Row]]:
    """The rows in reading order, as regions (a column of a band, or a band of wide rows)."""
    at = gutter(rows) if depth < MAX_COLUMN_DEPTH else None
    if at is None:
        return [list(rows)] if rows else []
    out: list[list[Row]] = []
    left: list[Row] = []
    right: list[Row] = []
    wide: list[Row] = []

    def close_band() -> None:
        out.extend(regions(left, depth + 1))
        out.extend(regions(right, depth + 1))
        left.clear()
        right.clear()

    columns = _columns(rows, at)
    sides = [_sides(row, at) for row in rows]
    cut = [cuts_band(row, *two, columns) for row, two in zip(rows, sides, strict=True)]
    for n, row in enumerate(rows):
        lefts, rights = sides[n]
        if cut[n] and not table_row_alone(row, lefts, rights, cut[n - 1 : n] + cut[n + 1 : n + 2]):
            close_band()
            wide.append(row)
            continue
        if wide:
            out.append(list(wide))
            wide.clear()
        if lefts:
            left.append(Row(lefts))
        if rights:
            right.append(Row(rights))
    if wide:
        out.append(list(wide))
    close_band()
    return out


def _sides(row: Row, at: float) -> tuple[list[Segment], list[Segment]]:
    """The row's segments left of ``at`` and right of it (one across it is in neither)."""
    return [s for s in row.segments if s.x1 <= at], [s for s in row.segments if s.x0 >= at]


def _columns(rows: Sequence[Row], at: float) -> Columns:
    left_edge = _usual_start(s for r in rows for s in r.segments if s.x1 <= at)
    right_edge = _usual_start(s for r in rows for s in r.segments if s.x0 >= at)
    right_end = max((s.x1 for r in rows for s in r.segments if s.x0 >= at), default=at)
    return Columns(at, left_edge, right_edge, at - left_edge, right_end - right_edge)


def cuts_band(
    row: Row, lefts: Sequence[Segment], rights: Sequence[Segment], columns: Columns
) -> bool:
    """A row read across both columns, which cuts the page into bands: it crosses the
    gutter, or it is a wide table's row (WIDE_ROW_CELLS or more cells, on both sides, not
    starting at the columns' edges) and neither side is a line of its column's prose.

    ``lefts`` and ``rights`` are the row's segments left and right of the gutter. The
    exception keeps a heading centred in one column, its number set apart, beside a
    line of the other column in its column.
    """
    if len(lefts) + len(rights) < len(row.segments):
        return True
    return bool(
        lefts
        and rights
        and len(row.segments) >= WIDE_ROW_CELLS
        and not (_near(lefts[0], columns.left_edge) and _near(rights[0], columns.right_edge))
        and not column_line(lefts, columns.left_edge, columns.left_width)
        and not column_line(rights, columns.right_edge, columns.right_width)
    )


def table_row_alone(
    row: Row, lefts: Sequence[Segment], rights: Sequence[Segment], beside: Sequence[bool]
) -> bool:
    """A row of cells on both sides that :func:`cuts_band` calls a wide table's row, though
    neither row beside it (``beside``: whether each cuts a band) cuts one: a line of one
    column beside a table's head in the other, not a table's row (a table has rows).

    A row that crosses the gutter always cuts a band.
    """
    crosses = len(lefts) + len(rights) < len(row.segments)
    return not crosses and len(beside) > 0 and not any(beside)


def column_line(side: Sequence[Segment], edge: float, width: float) -> bool:
    """One segment from the column's edge across most of its width: a line of prose."""
    return len(side) == 1 and _near(side[0], edge) and side[0].width >= COLUMN_LINE_FILL * width


def _usual_start(segments: Iterable[Segment]) -> float:
    """The most common left edge (to EDGE_GRAIN) of the segments."""
    starts = Counter(round(s.x0 / EDGE_GRAIN) * EDGE_GRAIN for s in segments)
    return float(starts.most_common(1)[0][0]) if starts else 0.0


def _near(segment: Segment, edge: float) -> bool:
    return abs(segment.x0 - edge) <= EDGE_NEAR_EM * max(segment.size, MIN_EM)


def gutter(rows: Sequence[Row]) -> float | None:
    """The x of a gutter between two columns of text: the middle of the widest run of
    least-covered x in the middle of the text, with columns of lines either side.

    Covered means a segment spans it; the middle is between GUTTER_ZONE_START and
    GUTTER_ZONE_END of the text's width. Either side needs COLUMN_MIN_ROWS rows, at
    most GUTTER_CROSSING_SHARE of the rows may cross the gutter, and each side's text
    spans COLUMN_MIN_WIDTH_SHARE of the width, its rows' widest segments (the median
    one) filling COLUMN_LINE_SHARE of it: lines of running text, not a table's short
    cells (a formula broken into cells is one row of many).
    """
    segments = [s for r in rows for s in r.segments]
    if len(rows) < GUTTER_MIN_ROWS:
        return None
    left_edge = min(s.x0 for s in segments)
    width = max(s.x1 for s in segments) - left_edge
    if width < GUTTER_MIN_WIDTH:
        return None
    # How many segments cover each point of the middle of the text.
    cells = int(width) + 1
    diff = [0] * (cells + 1)
    for s in segments:
        a = max(0, int(s.x0 - left_edge) + 1)
        b = min(cells, int(s.x1 - left_edge) + 1)
        if a < b:
            diff[a] += 1
            diff[b] -= 1
    cover, running = [], 0
    for d in diff[:cells]:
        running += d
        cover.append(running)
    lo, hi = int(width * GUTTER_ZONE_START), int(width * GUTTER_ZONE_END)
    least = min(cover[lo:hi])
    # The widest run of least-covered points is the candidate gutter.
    best: tuple[int, int] | None = None
    run_start: int | None = None
    for x in range(lo, hi + 1):
        low = x < hi and cover[x] == least
        if low and run_start is None:
            run_start = x
        elif not low and run_start is not None:
            if best is None or x - run_start > best[1] - best[0]:
                best = (run_start, x)
            run_start = None
    if best is None:
        return None
    at = left_edge + (best[0] + best[1]) / 2
    return at if _columns_either_side(rows, at, width) else None


def _columns_either_side(rows: Sequence[Row], at: float, width: float) -> bool:
    crossing = sum(any(s.x0 < at < s.x1 for s in r.segments) for r in rows)
    sides = [_sides(r, at) for r in rows]
    left = [lefts for lefts, _ in sides if lefts]  # each row's segments on the side
    right = [rights for _, rights in sides if rights]
    if min(len(left), len(right)) < COLUMN_MIN_ROWS or crossing > GUTTER_CROSSING_SHARE * max(
        len(left), len(right)
    ):
        return False
    for side in (left, right):
        extent = max(s.x1 for row in side for s in row) - min(s.x0 for row in side for s in row)
        if extent < COLUMN_MIN_WIDTH_SHARE * width:
            return False
        # each row by its widest segment: a formula set in cells is one row of its column
        if statistics.median(max(s.width for s in row) for row in side) < (
            COLUMN_LINE_SHARE * extent
        ):
            return False  # short cells, not lines of running text
    return True
