"""Page layout for PDFs: positioned words in, paragraphs and tables in reading order out.

Pure geometry, no PDF library: ``parse.pdf`` extracts the words of a page
(text, box, font size) and this module orders and groups them.

1. **Rows.** Words whose vertical centres are close form a row; within a row,
   words split into *segments* wherever the horizontal gap is wider than
   about one em (a column gutter or a gap between table cells).
2. **Columns.** A page (or a part of it) is split at a vertical *gutter*: an
   x position in the middle of the text that few segments cross, with
   column-like text on both sides (each side at least a quarter of the width,
   its lines filling it). Rows that cross the gutter (a title, an abstract, a
   wide figure) cut the page into bands; inside a band the left column is read
   before the right one. Each column is split again (up to three levels), so
   three-column pages work too.
3. **Pieces.** In each column, a run of consecutive rows that each have two
   or more segments is a TABLE (a row per line, cells joined with `` | ``)
   only when the page says so: ruling lines run along or between its rows, or
   three or more rows of short cells share a column grid (inner cell edges at
   the same x on most rows). Long cells at one side of such a run, clear of
   the others, are a column of prose beside a table and are read on their
   own; a run of long cells in two columns is two columns of prose the gutter
   search did not separate: its left cells are read, as paragraphs, before
   its right ones. Other rows group into
   paragraphs, broken at a wider line pitch, a change of font size or an
   indented first line; a line that ends in a hyphen (PDFium reports a
   line-end hyphen as U+FFFE) is joined to the next with that mark, for
   ``parse.pdf_text.dehyphenate`` to resolve.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from docshelf.model import BlockKind
from docshelf.parse.pdf_text import HYPHEN_MARK

_SEGMENT_GAP_EM = 1.0  # a horizontal gap wider than this (in font sizes) splits a row
_ROW_TOLERANCE = 0.45  # centres within this fraction of the taller height share a row
_MAX_COLUMN_DEPTH = 3
_TABLE_ROW_GAP_EM = 2.5  # rows of one table are at most this far apart
_GRID_MIN_ROWS = 3  # without ruling lines, a table needs this many rows on one grid
_GRID_TOLERANCE_EM = 0.5  # cell edges within this many font sizes share a grid column
_SHORT_CELL_WORDS = 4  # the median cell of an unruled table has at most this many words
_PROSE_CELL_WORDS = 5  # cells this long (median) in two columns are lines of prose


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


@dataclass(frozen=True, slots=True)
class Word:
    """A word's text and box in PDF space (points, y grows upwards) and its font size."""

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
        self.x0 = min(w.x0 for w in self.words)
        self.x1 = max(w.x1 for w in self.words)
        self.bottom = min(w.bottom for w in self.words)
        self.top = max(w.top for w in self.words)
        # The size most of its characters have.
        weights: dict[float, int] = {}
        for w in self.words:
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
        self.top = max(s.top for s in self.segments)
        self.bottom = min(s.bottom for s in self.segments)
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


# -- rows ----------------------------------------------------------------------------------


def rows_of(words: Iterable[Word]) -> list[Row]:
    """Words grouped into rows (top to bottom), each split into segments (left to right)."""
    ordered = sorted(words, key=lambda w: (-w.middle, w.x0))
    rows: list[Row] = []
    current: list[Word] = []
    anchor: Word | None = None
    for word in ordered:
        if anchor is not None and abs(anchor.middle - word.middle) <= _ROW_TOLERANCE * max(
            anchor.top - anchor.bottom, word.top - word.bottom
        ):
            current.append(word)
            continue
        if current:
            rows.append(Row(_segments(current)))
        current, anchor = [word], word
    if current:
        rows.append(Row(_segments(current)))
    return rows


def _segments(words: list[Word]) -> list[Segment]:
    words.sort(key=lambda w: w.x0)
    segments: list[list[Word]] = []
    previous: Word | None = None
    for word in words:
        if previous is not None and _duplicate(previous, word):
            continue  # text drawn twice, slightly offset ("fake bold")
        gap = word.x0 - previous.x1 if previous is not None else 0.0
        if previous is None or gap > _SEGMENT_GAP_EM * max(word.size, previous.size, 1.0):
            segments.append([word])
        else:
            segments[-1].append(word)
        previous = word
    return [Segment(ws) for ws in segments]


def _duplicate(a: Word, b: Word) -> bool:
    return a.text == b.text and abs(a.x0 - b.x0) < 0.2 * max(a.size, 1.0)


# -- columns -------------------------------------------------------------------------------


def regions(rows: Sequence[Row], depth: int = 0) -> list[list[Row]]:
    """The rows in reading order, as regions (a column of a band, or a band of wide rows)."""
    gutter = _gutter(rows) if depth < _MAX_COLUMN_DEPTH else None
    if gutter is None:
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

    left_edge = _usual_start(s for r in rows for s in r.segments if s.x1 <= gutter)
    right_edge = _usual_start(s for r in rows for s in r.segments if s.x0 >= gutter)
    right_end = max((s.x1 for r in rows for s in r.segments if s.x0 >= gutter), default=gutter)
    widths = (gutter - left_edge, right_end - right_edge)  # of the two columns
    for row in rows:
        lefts = [s for s in row.segments if s.x1 <= gutter]
        rights = [s for s in row.segments if s.x0 >= gutter]
        crossing = len(lefts) + len(rights) < len(row.segments)
        # A row of three or more cells on both sides that do not start at the column
        # edges is a wide table's row, not two lines of two columns — unless one side
        # is a line of its column's running text (a heading centred in one column, its
        # number apart, beside a line of the other).
        off_edges = (
            lefts
            and rights
            and len(row.segments) >= 3
            and not (_near(lefts[0], left_edge) and _near(rights[0], right_edge))
            and not _column_line(lefts, left_edge, widths[0])
            and not _column_line(rights, right_edge, widths[1])
        )
        if crossing or off_edges:
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


def _column_line(side: Sequence[Segment], edge: float, width: float) -> bool:
    """One segment from the column's edge across most of its width: a line of prose."""
    return len(side) == 1 and _near(side[0], edge) and side[0].width >= 0.7 * width


def _usual_start(segments: Iterable[Segment]) -> float:
    """The most common left edge (to 2 pt) of the segments."""
    starts = Counter(round(s.x0 / 2) * 2 for s in segments)
    return float(starts.most_common(1)[0][0]) if starts else 0.0


def _near(segment: Segment, edge: float) -> bool:
    return abs(segment.x0 - edge) <= 3 * max(segment.size, 1.0)


def _gutter(rows: Sequence[Row]) -> float | None:
    """The x of a gutter between two columns of text, or None."""
    segments = [s for r in rows for s in r.segments]
    if len(rows) < 6:
        return None
    left_edge = min(s.x0 for s in segments)
    width = max(s.x1 for s in segments) - left_edge
    if width < 100:
        return None
    # How many segments cover each point of the middle three-fifths of the text.
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
    lo, hi = int(width * 0.2), int(width * 0.8)
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
    gutter = left_edge + (best[0] + best[1]) / 2
    return gutter if _columns_either_side(rows, gutter, width) else None


def _columns_either_side(rows: Sequence[Row], gutter: float, width: float) -> bool:
    crossing = sum(any(s.x0 < gutter < s.x1 for s in r.segments) for r in rows)
    left = [s for r in rows for s in r.segments if s.x1 <= gutter]
    right = [s for r in rows for s in r.segments if s.x0 >= gutter]
    left_rows = sum(any(s.x1 <= gutter for s in r.segments) for r in rows)
    right_rows = sum(any(s.x0 >= gutter for s in r.segments) for r in rows)
    if min(left_rows, right_rows) < 3 or crossing > 0.5 * max(left_rows, right_rows):
        return False
    for side in (left, right):
        extent = max(s.x1 for s in side) - min(s.x0 for s in side)
        if extent < 0.25 * width:
            return False
        if statistics.median(s.width for s in side) < 0.5 * extent:
            return False  # short cells, not lines of running text
    return True


# -- pieces --------------------------------------------------------------------------------


def pieces(
    region: Sequence[Row], page: int, rules: Callable[[], Sequence[Rule]] = tuple
) -> list[Piece]:
    """A region's rows as paragraphs and tables, in order; ``rules()`` gives the page's
    ruling lines (called only when a run of rows might be a table)."""
    out: list[Piece] = []
    frame = _Frame(_typical_pitch(region), min(r.x0 for r in region), max(r.x1 for r in region))
    i = 0
    while i < len(region):
        end = _table_end(region, i)
        if end - i >= 2:
            before, run, after = _peel_prose(region[i:end])
            out.extend(_paragraphs(before, page, frame))
            tabular = len(run) >= 2 and all(len(r.segments) >= 2 for r in run)
            if tabular and (_ruled(run, rules()) or _on_a_grid(run)):
                out.append(_table(run, page))
            else:
                for column in _prose_columns(run):
                    out.extend(_paragraphs(column, page, frame))
            out.extend(_paragraphs(after, page, frame))
            i = end
            continue
        end = _paragraph_end(region, i, frame)
        out.append(_paragraph(region[i:end], page))
        i = end
    return out


def _paragraphs(rows: Sequence[Row], page: int, frame: _Frame) -> list[Piece]:
    """Rows that are not a table, as paragraphs (their segments read as one line each)."""
    flat = _flat(rows)
    out: list[Piece] = []
    i = 0
    while i < len(flat):
        end = _paragraph_end(flat, i, frame)
        out.append(_paragraph(flat[i:end], page))
        i = end
    return out


# -- is it a table? ------------------------------------------------------------------------


def _ruled(run: Sequence[Row], rules: Sequence[Rule]) -> bool:
    """Ruling lines along the run: two horizontal ones across it, or a vertical one beside
    or between its cells over most of its height."""
    x0, x1 = min(r.x0 for r in run), max(r.x1 for r in run)
    size = max(r.size for r in run)
    top, bottom = run[0].top + 1.5 * size, run[-1].bottom - 1.5 * size
    width = x1 - x0
    across = 0
    for rule in rules:
        if rule.horizontal:
            overlap = min(rule.x1, x1) - max(rule.x0, x0)
            across += overlap >= 0.6 * width and bottom <= rule.top and rule.bottom <= top
        elif x0 - size <= rule.x0 <= x1 + size and min(rule.top, top) - max(
            rule.bottom, bottom
        ) >= 0.6 * (top - bottom):
            return True
    return across >= 2


def _on_a_grid(run: Sequence[Row]) -> bool:
    """Three or more rows of short cells whose inner edges line up in columns.

    Inner edges are where a cell starts (after the first cell of its row) or
    ends (before the last): a table's columns start or end at the same x on
    most rows, while the gaps of justified or letter-spaced prose fall
    anywhere (its outer edges, the margins, always line up, so they are no
    evidence).
    """
    if len(run) < _GRID_MIN_ROWS:
        return False
    cells = [s for r in run for s in r.segments]
    if statistics.median(len(s.words) for s in cells) > _SHORT_CELL_WORDS:
        return False
    tolerance = _GRID_TOLERANCE_EM * max(r.size for r in run)
    edges = [_inner_edges(r) for r in run]
    columns = _grid_columns(edges, tolerance, max(2, len(run) / 2))
    aligned = sum(
        any(abs(x - c) <= tolerance for side, x in row for s, c in columns if s == side)
        for row in edges
    )
    return aligned >= max(_GRID_MIN_ROWS, 0.75 * len(run))


def _inner_edges(row: Row) -> list[tuple[str, float]]:
    starts = [("x0", s.x0) for s in row.segments[1:]]
    ends = [("x1", s.x1) for s in row.segments[:-1]]
    return starts + ends


def _grid_columns(
    edges: list[list[tuple[str, float]]], tolerance: float, shared_by: float
) -> list[tuple[str, float]]:
    """Inner edges (starts or ends) at one x on at least ``shared_by`` rows: the grid."""
    columns: list[tuple[str, float]] = []
    for side in ("x0", "x1"):
        xs = sorted(x for row in edges for s, x in row if s == side)
        group: list[float] = []
        for x in [*xs, math.inf]:
            if group and x - group[-1] > tolerance:
                if len(group) >= shared_by:
                    columns.append((side, statistics.median(group)))
                group = []
            group.append(x)
    return columns


def _peel_prose(run: Sequence[Row]) -> tuple[list[Row], list[Row], list[Row]]:
    """(a prose column on the left, the rest, a prose column on the right).

    Lines of running text (long cells) at one side of the run, on at least
    half of its rows and clear of every other cell, are a column of prose the
    gutter search did not separate from a table or figure beside it.
    """
    rows = list(run)
    after, rows = _peel_side(rows, right=True)
    before, rows = _peel_side(rows, right=False)
    return before, rows, after


def _peel_side(rows: list[Row], *, right: bool) -> tuple[list[Row], list[Row]]:
    """(the prose column at one side, the rows without it); ([], rows) if there is none."""
    ends = [r.segments[-1] if right else r.segments[0] for r in rows if len(r.segments) >= 2]
    long = [s for s in ends if len(s.words) >= _PROSE_CELL_WORDS]
    if len(long) < max(2, len(rows) / 2):
        return [], rows
    split = min(s.x0 for s in long) if right else max(s.x1 for s in long)

    def prose(s: Segment) -> bool:
        return s.x0 >= split if right else s.x1 <= split

    others = [s for r in rows for s in r.segments if not prose(s)]
    if any((s.x1 > split) if right else (s.x0 < split) for s in others):
        return [], rows  # a cell crosses the split: no clear column
    column = [Row([s for s in r.segments if prose(s)]) for r in rows if any(map(prose, r.segments))]
    rest = [Row(kept) for r in rows if (kept := [s for s in r.segments if not prose(s)])]
    return column, rest


def _flat(rows: Sequence[Row]) -> list[Row]:
    return [Row([Segment([w for s in r.segments for w in s.words])]) for r in rows]


def _prose_columns(run: Sequence[Row]) -> list[Sequence[Row]]:
    """Two columns of prose side by side, left then right; else the run as it is."""
    if any(len(r.segments) != 2 for r in run):
        return [run]
    if statistics.median(len(s.words) for r in run for s in r.segments) < _PROSE_CELL_WORDS:
        return [run]
    split = min(r.segments[1].x0 for r in run)
    if any(r.segments[0].x1 > split for r in run):
        return [run]
    return [[Row([r.segments[0]]) for r in run], [Row([r.segments[1]]) for r in run]]


def _table_end(region: Sequence[Row], i: int) -> int:
    end = i
    while end < len(region) and len(region[end].segments) >= 2:
        if end > i:
            pitch = region[end - 1].bottom - region[end].top
            if pitch > _TABLE_ROW_GAP_EM * region[end].size:
                break
        end += 1
    return end


@dataclass(frozen=True, slots=True)
class _Frame:
    """What paragraph breaks are measured against: the usual line pitch and the margins."""

    pitch: float
    left: float
    right: float


def _paragraph_end(region: Sequence[Row], i: int, frame: _Frame) -> int:
    end = i + 1
    while end < len(region):
        prev, row = region[end - 1], region[end]
        size = prev.size
        if len(row.segments) >= 2 and _table_end(region, end) - end >= 2:
            break
        if abs(row.size - size) > 0.05 * max(size, 1.0):
            break
        step = prev.bottom - row.bottom
        limit = frame.pitch * 1.3 + 0.5 if frame.pitch else 1.6 * size
        if step > limit or step < 0:
            break
        indented = row.x0 - frame.left >= 0.8 * size > prev.x0 - frame.left
        if indented and prev.x1 < frame.right - 1.5 * size:
            break
        end += 1
    return end


def _typical_pitch(region: Sequence[Row]) -> float:
    """The median distance between baselines of consecutive rows of one size."""
    steps = [
        a.bottom - b.bottom
        for a, b in itertools.pairwise(region)
        if abs(a.size - b.size) <= 0.05 * max(a.size, 1.0)
        and 0.8 * a.size <= a.bottom - b.bottom <= 3 * a.size
    ]
    return statistics.median(steps) if steps else 0.0


def _paragraph(rows: Sequence[Row], page: int) -> Piece:
    piece = Piece(
        BlockKind.PARAGRAPH, _join_lines(r.text for r in rows), rows[0].size, len(rows), page
    )
    _count_sizes(piece, rows)
    return piece


def _join_lines(lines: Iterable[str]) -> str:
    """Lines joined by spaces; a line ending in a hyphen joins the next with HYPHEN_MARK."""
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith(HYPHEN_MARK):
            out += line
        elif out.endswith("-") and out[-2:-1].isalpha() and line[:1].isalpha():
            out = out[:-1] + HYPHEN_MARK + line
        else:
            out += " " + line
    return out


def _table(rows: Sequence[Row], page: int) -> Piece:
    text = "\n".join(" | ".join(s.text for s in r.segments) for r in rows)
    piece = Piece(BlockKind.TABLE, text, rows[0].size, len(rows), page)
    _count_sizes(piece, rows)
    return piece


def _count_sizes(piece: Piece, rows: Sequence[Row]) -> None:
    for row in rows:
        for segment in row.segments:
            for word in segment.words:
                size = round(word.size * 2) / 2
                piece.chars_by_size[size] = piece.chars_by_size.get(size, 0) + len(word.text)
