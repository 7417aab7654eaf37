"""A region's rows (``parse.pdf_layout``) as paragraphs and tables, in reading order.

A run of consecutive rows that each have two or more segments
(:func:`table_run_end`) is a TABLE (a row per line, cells joined with `` | ``)
only when the page says so: ruling lines run along or between its rows
(:func:`ruled`), or three or more rows of short cells share a column grid
(:func:`on_a_grid`). Long cells at one side of such a run, clear of the others,
are a column of prose beside a table and are read on their own
(:func:`peel_prose`); a run of long cells in two columns is two columns of prose
the gutter search did not separate: its left cells are read, as paragraphs,
before its right ones (:func:`prose_columns`). Other rows group into
paragraphs, broken at a change of font size (:func:`size_changes`), a wider
line pitch (:func:`off_pitch`) or an indented first line (:func:`indented`); a
line that ends in a hyphen (PDFium reports a line-end hyphen as U+FFFE) is
joined to the next with that mark (:func:`broken_at_line_end`), for
``parse.pdf_text.dehyphenate`` to resolve.

Thresholds are in ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from docshelf.model import BlockKind
from docshelf.parse.pdf_layout import Piece, Row, Rule, Segment
from docshelf.parse.pdf_thresholds import (
    GRID_ALIGNED_SHARE,
    GRID_COLUMN_ROWS,
    GRID_COLUMN_SHARE,
    GRID_MIN_ROWS,
    GRID_TOLERANCE_EM,
    HYPHEN_MARK,
    INDENT_EM,
    MIN_EM,
    PITCH_FALLBACK_EM,
    PITCH_MAX_EM,
    PITCH_MIN_EM,
    PITCH_SLACK,
    PITCH_SPREAD,
    PROSE_CELL_WORDS,
    PROSE_SIDE_ROWS,
    PROSE_SIDE_SHARE,
    RULE_BESIDE_EM,
    RULE_MARGIN_EM,
    RULE_SPAN_SHARE,
    RULES_ACROSS,
    SHORT_CELL_WORDS,
    SHORT_LINE_EM,
    SIZE_CHANGE_SHARE,
    SIZE_STEP,
    TABLE_MIN_ROWS,
    TABLE_ROW_GAP_EM,
)


def pieces(
    region: Sequence[Row], page: int, rules: Callable[[], Sequence[Rule]] = tuple
) -> list[Piece]:
    """A region's rows as paragraphs and tables, in order; ``rules()`` gives the page's
    ruling lines (called only when a run of rows might be a table)."""
    out: list[Piece] = []
    frame = _Frame(typical_pitch(region), min(r.x0 for r in region), max(r.x1 for r in region))
    i = 0
    while i < len(region):
        end = table_run_end(region, i)
        if end - i >= TABLE_MIN_ROWS:
            before, run, after = peel_prose(region[i:end])
            out.extend(_paragraphs(before, page, frame))
            tabular = len(run) >= TABLE_MIN_ROWS and all(len(r.segments) >= 2 for r in run)
            if tabular and (ruled(run, rules()) or on_a_grid(run)):
                out.append(_table(run, page))
            else:
                for column in prose_columns(run):
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


def _flat(rows: Sequence[Row]) -> list[Row]:
    return [Row([Segment([w for s in r.segments for w in s.words])]) for r in rows]


# -- is it a table? ------------------------------------------------------------------------


def table_run_end(region: Sequence[Row], i: int) -> int:
    """Where a run of rows that may be a table, starting at row ``i``, ends: consecutive
    rows of two or more segments, each at most TABLE_ROW_GAP_EM below the one before."""
    end = i
    while end < len(region) and len(region[end].segments) >= 2:
        if end > i:
            pitch = region[end - 1].bottom - region[end].top
            if pitch > TABLE_ROW_GAP_EM * region[end].size:
                break
        end += 1
    return end


def peel_prose(run: Sequence[Row]) -> tuple[list[Row], list[Row], list[Row]]:
    """A column of prose at either side of a run of rows (a prose column on the left, the
    rest, a prose column on the right), which the gutter search did not separate from a
    table or figure beside it.

    Prose here is lines of running text (cells of PROSE_CELL_WORDS or more words) at one
    side of the run, on at least half of its rows and clear of every other cell.
    """
    rows = list(run)
    after, rows = _peel_side(rows, right=True)
    before, rows = _peel_side(rows, right=False)
    return before, rows, after


def _peel_side(rows: list[Row], *, right: bool) -> tuple[list[Row], list[Row]]:
    """(the prose column at one side, the rows without it); ([], rows) if there is none."""
    ends = [r.segments[-1] if right else r.segments[0] for r in rows if len(r.segments) >= 2]
    long = [s for s in ends if len(s.words) >= PROSE_CELL_WORDS]
    if len(long) < max(PROSE_SIDE_ROWS, len(rows) * PROSE_SIDE_SHARE):
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


def ruled(run: Sequence[Row], rules: Sequence[Rule]) -> bool:
    """Ruling lines along a run of rows: two horizontal ones across it, or a vertical one
    beside or between its cells over most of its height."""
    x0, x1 = min(r.x0 for r in run), max(r.x1 for r in run)
    size = max(r.size for r in run)
    top, bottom = run[0].top + RULE_MARGIN_EM * size, run[-1].bottom - RULE_MARGIN_EM * size
    width = x1 - x0
    across = 0
    for rule in rules:
        if rule.horizontal:
            overlap = min(rule.x1, x1) - max(rule.x0, x0)
            across += (
                overlap >= RULE_SPAN_SHARE * width and bottom <= rule.top and rule.bottom <= top
            )
        elif x0 - RULE_BESIDE_EM * size <= rule.x0 <= x1 + RULE_BESIDE_EM * size and min(
            rule.top, top
        ) - max(rule.bottom, bottom) >= RULE_SPAN_SHARE * (top - bottom):
            return True
    return across >= RULES_ACROSS


def on_a_grid(run: Sequence[Row]) -> bool:
    """Three or more rows of short cells whose inner edges line up in columns: a table
    without ruling lines.

    Inner edges are where a cell starts (after the first cell of its row) or
    ends (before the last): a table's columns start or end at the same x on
    most rows, while the gaps of justified or letter-spaced prose fall
    anywhere (its outer edges, the margins, always line up, so they are no
    evidence).
    """
    if len(run) < GRID_MIN_ROWS:
        return False
    cells = [s for r in run for s in r.segments]
    if statistics.median(len(s.words) for s in cells) > SHORT_CELL_WORDS:
        return False
    tolerance = GRID_TOLERANCE_EM * max(r.size for r in run)
    edges = [_inner_edges(r) for r in run]
    columns = _grid_columns(edges, tolerance, max(GRID_COLUMN_ROWS, len(run) * GRID_COLUMN_SHARE))
    aligned = sum(
        any(abs(x - c) <= tolerance for side, x in row for s, c in columns if s == side)
        for row in edges
    )
    return aligned >= max(GRID_MIN_ROWS, GRID_ALIGNED_SHARE * len(run))


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


def prose_columns(run: Sequence[Row]) -> list[Sequence[Row]]:
    """Two columns of long cells side by side, read left column first (else the run as
    it is): prose the gutter search did not separate, not a table."""
    if any(len(r.segments) != 2 for r in run):
        return [run]
    if statistics.median(len(s.words) for r in run for s in r.segments) < PROSE_CELL_WORDS:
        return [run]
    split = min(r.segments[1].x0 for r in run)
    if any(r.segments[0].x1 > split for r in run):
        return [run]
    return [[Row([r.segments[0]]) for r in run], [Row([r.segments[1]]) for r in run]]


# -- paragraphs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Frame:
    """What paragraph breaks are measured against: the usual line pitch and the margins."""

    pitch: float
    left: float
    right: float


def typical_pitch(region: Sequence[Row]) -> float:
    """The usual line pitch of a region: the median distance between the baselines of
    consecutive rows of one size, counting only steps of a plausible line (0 if none)."""
    steps = [
        a.bottom - b.bottom
        for a, b in itertools.pairwise(region)
        if abs(a.size - b.size) <= SIZE_CHANGE_SHARE * max(a.size, MIN_EM)
        and PITCH_MIN_EM * a.size <= a.bottom - b.bottom <= PITCH_MAX_EM * a.size
    ]
    return statistics.median(steps) if steps else 0.0


def _paragraph_end(region: Sequence[Row], i: int, frame: _Frame) -> int:
    end = i + 1
    while end < len(region):
        prev, row = region[end - 1], region[end]
        if len(row.segments) >= 2 and table_run_end(region, end) - end >= TABLE_MIN_ROWS:
            break
        if size_changes(prev, row) or off_pitch(prev, row, frame) or indented(prev, row, frame):
            break
        end += 1
    return end


def size_changes(prev: Row, row: Row) -> bool:
    """A line in another font size than the one before it: a new paragraph."""
    return abs(row.size - prev.size) > SIZE_CHANGE_SHARE * max(prev.size, MIN_EM)


def off_pitch(prev: Row, row: Row, frame: _Frame) -> bool:
    """A line further below the one before than the region's usual line pitch allows, or
    above it: a new paragraph."""
    step = prev.bottom - row.bottom
    limit = (
        frame.pitch * PITCH_SPREAD + PITCH_SLACK if frame.pitch else PITCH_FALLBACK_EM * prev.size
    )
    return step > limit or step < 0


def indented(prev: Row, row: Row, frame: _Frame) -> bool:
    """An indented line after one that is not indented and ends short of the right
    margin: the first line of a new paragraph."""
    size = prev.size
    first_line = row.x0 - frame.left >= INDENT_EM * size > prev.x0 - frame.left
    return first_line and prev.x1 < frame.right - SHORT_LINE_EM * size


def _paragraph(rows: Sequence[Row], page: int) -> Piece:
    piece = Piece(
        BlockKind.PARAGRAPH, join_lines(r.text for r in rows), rows[0].size, len(rows), page
    )
    _count_sizes(piece, rows)
    return piece


def join_lines(lines: Iterable[str]) -> str:
    """Lines joined by spaces; a line ending in a hyphen joins the next with HYPHEN_MARK."""
    out = ""
    for line in lines:
        if not out:
            out = line
        elif out.endswith(HYPHEN_MARK):
            out += line
        elif broken_at_line_end(out, line):
            out = out[:-1] + HYPHEN_MARK + line
        else:
            out += " " + line
    return out


def broken_at_line_end(text: str, line: str) -> bool:
    """A word broken at a line end: the text so far ends in a letter and a hyphen, and the
    next line starts with a letter."""
    return text.endswith("-") and text[-2:-1].isalpha() and line[:1].isalpha()


def _table(rows: Sequence[Row], page: int) -> Piece:
    text = "\n".join(" | ".join(s.text for s in r.segments) for r in rows)
    piece = Piece(BlockKind.TABLE, text, rows[0].size, len(rows), page)
    _count_sizes(piece, rows)
    return piece


def _count_sizes(piece: Piece, rows: Sequence[Row]) -> None:
    for row in rows:
        for segment in row.segments:
            for word in segment.words:
                size = round(word.size / SIZE_STEP) * SIZE_STEP
                piece.chars_by_size[size] = piece.chars_by_size.get(size, 0) + len(word.text)
