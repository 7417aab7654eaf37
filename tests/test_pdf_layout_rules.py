"""The PDF rules of a page, one focused test each: its words (``parse.pdf_page``), rows
and columns (``parse.pdf_layout``), paragraphs and tables (``parse.pdf_pieces``).

Inputs are small and synthetic (tests/pdf_builders.py). tests/test_pdf_rules.py checks
that every rule of ``parse.pdf.RULES`` has its test here or in
tests/test_pdf_heading_rules.py.
"""

from __future__ import annotations

import math

from docshelf.parse.pdf_layout import (
    Columns,
    Row,
    Rule,
    Segment,
    Word,
    column_line,
    cuts_band,
    drawn_twice,
    gutter,
    same_row,
    table_row_alone,
    wide_gap,
)
from docshelf.parse.pdf_page import is_ruling_line, jumps, spans_lines, turned, visible
from docshelf.parse.pdf_pieces import (
    _Frame,
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
from docshelf.parse.pdf_text import HYPHEN_MARK, is_unreadable
from tests.pdf_builders import PROSE, row, rows, segment, word

# -- a page's words --------------------------------------------------------------------------


def test_turned() -> None:
    assert turned(math.pi / 2) and turned(math.pi)
    assert not turned(0.0) and not turned(0.005) and not turned(2 * math.pi - 0.005)
    assert turned(0.012) and turned(2 * math.pi - 0.012)


def test_spans_lines() -> None:
    # first character at x 100, baseline 700, 10 high; the last one ends at `end`
    assert not spans_lines(100, 700, 710, 130, 700, 710)  # on the same line, to the right
    assert spans_lines(100, 700, 710, 90, 700, 710)  # ends left of where it starts
    assert spans_lines(100, 700, 710, 130, 688, 698)  # a line lower
    assert not spans_lines(100, 700, 710, 130, 696, 706)  # a little lower (a subscript)
    assert spans_lines(100, 700, 710, 130, 694, 704)  # more than half a line lower


def test_jumps() -> None:
    # the character before ended at x 120 on a line 700-710; size 10
    assert not jumps(120, 700, 710, 121, 710, 10)  # the next character along
    assert not jumps(120, 700, 710, 115, 710, 10)  # a kerned pair, less than an em back
    assert jumps(120, 700, 710, 108, 710, 10)  # more than an em back
    assert jumps(120, 700, 710, 40, 710, 10)  # back to the left margin
    assert jumps(120, 700, 710, 121, 704, 10)  # more than half a line lower
    assert not jumps(120, 700, 710, 121, 706, 10)


def test_is_unreadable() -> None:
    prose = [*PROSE.split(), "within", "150", "ms."]
    assert not is_unreadable(prose * 2)
    assert is_unreadable(["78&:9;02.4<=3", "=@?ACBEDFHG", "NcbedV]_fRWgcZ"] * 5)
    assert is_unreadable(["=@?ACBEDFHG"] * 12)
    assert not is_unreadable(["=@?ACBEDFHG"] * 11)  # too few words to judge
    assert not is_unreadable(["=@?ACBEDFHG", "word"] * 10)  # half of them words


def test_visible() -> None:
    words = [word(t, 50, 700) for t in ("\x02\x03", "plain", HYPHEN_MARK, "\x02a")]
    assert [w.text for w in visible(words)] == ["plain", HYPHEN_MARK, "\x02a"]


# -- rows and columns -------------------------------------------------------------------------


def test_same_row() -> None:
    anchor = word("Raft", 50, 700)
    assert same_row(anchor, word("consensus", 80, 704))  # centres 4 apart, 10 high
    assert not same_row(anchor, word("consensus", 80, 705))
    assert not same_row(anchor, word("below", 50, 688))


def test_drawn_twice() -> None:
    bold = word("Abstract", 50, 700)
    assert drawn_twice(bold, word("Abstract", 51, 700))  # offset a tenth of an em
    assert not drawn_twice(bold, word("Abstract", 53, 700))
    assert not drawn_twice(bold, word("Summary", 51, 700))


def test_wide_gap() -> None:
    left = word("cell", 50, 700)  # ends at x 70
    assert not wide_gap(left, word("next", 79, 700))  # 9 pt at 10 pt: a space
    assert wide_gap(left, word("next", 81, 700))  # more than an em: a gutter or a cell gap
    tiny = Word("x", 0, 1, 700, 700, 0.0)
    assert wide_gap(tiny, Word("y", 2.5, 3, 700, 700, 0.0))  # size 0 counts as MIN_EM


def test_gutter() -> None:
    two_columns = rows((50, PROSE), (320, PROSE), n=10)
    at = gutter(two_columns)
    assert at is not None and two_columns[0].segments[0].x1 < at < 320
    assert gutter(two_columns[:6]) is not None
    assert gutter(two_columns[:5]) is None  # too few rows to tell
    narrow = rows((50, "abcd efgh"), (105, "abcd"), n=10)  # less than 100 pt wide
    assert gutter(narrow) is None
    assert gutter(rows((50, f"{PROSE} and a wide line across the page"), n=10)) is None
    table = rows((50, "alpha"), (150, "3"), (320, "leader"), (420, "ok"), n=10)
    assert gutter(table) is None  # short cells each side: a table, not columns
    # formulas set in cells on a few rows of the right column: still a column
    formulas = rows((50, PROSE), (320, "y<r"), (350, "+y"), (380, "X q ="), (420, "(1 +q)"), n=4)
    with_formulas = [*formulas, *rows((50, PROSE), (320, PROSE), top=640, n=6)]
    assert gutter(with_formulas) is not None


def _columns() -> Columns:
    return Columns(gutter=300, left_edge=50, right_edge=320, left_width=250, right_width=240)


def test_column_line() -> None:
    line = segment(50, 700, PROSE)  # about 200 pt of a 250 pt column
    assert column_line([line], 50, 250)
    assert not column_line([segment(50, 700, "short")], 50, 250)
    assert not column_line([segment(50, 700, "the leader sends heartbeats to")], 50, 250)  # 60%
    assert not column_line([segment(120, 700, PROSE)], 50, 250)  # away from the edge
    assert not column_line([line, segment(270, 700, "x")], 50, 250)


def _sides(r: Row, at: float = 300) -> tuple[list[Segment], list[Segment]]:
    return [s for s in r.segments if s.x1 <= at], [s for s in r.segments if s.x0 >= at]


def test_cuts_band() -> None:
    columns = _columns()
    crossing = row(700, (50, f"{PROSE} {PROSE}"))  # a title across both columns
    assert cuts_band(crossing, *_sides(crossing), columns)
    lines = row(700, (50, PROSE), (320, PROSE))  # a line of each column
    assert not cuts_band(lines, *_sides(lines), columns)
    wide_table = row(700, (90, "alpha"), (190, "3"), (340, "leader"), (440, "ok"))
    assert cuts_band(wide_table, *_sides(wide_table), columns)
    three_cells = row(700, (90, "alpha"), (190, "3"), (340, "leader"))
    assert cuts_band(three_cells, *_sides(three_cells), columns)
    two_cells = row(700, (90, "alpha"), (340, "leader"))  # one cell a side: two columns
    assert not cuts_band(two_cells, *_sides(two_cells), columns)
    heading = row(700, (120, "I."), (136, "INTRODUCTION"), (320, PROSE))  # centred, apart
    assert not cuts_band(heading, *_sides(heading), columns)


def test_table_row_alone() -> None:
    head = row(700, (50, "D. OAuth2 and Macaroons"), (410, "Python"), (460, "JS"), (510, "Node"))
    assert table_row_alone(head, *_sides(head), [False, False])  # lines of columns beside
    assert not table_row_alone(head, *_sides(head), [False, True])  # a table's next row
    assert not table_row_alone(head, *_sides(head), [])  # a region of one row: not alone
    crossing = row(700, (50, f"{PROSE} {PROSE}"))
    assert not table_row_alone(crossing, *_sides(crossing), [False, False])


# -- paragraphs and tables --------------------------------------------------------------------


def test_typical_pitch() -> None:
    region = [*rows((50, PROSE), n=5), *rows((50, PROSE), top=630, n=5)]  # a wider gap
    assert typical_pitch(region) == 12
    assert typical_pitch(region[:1]) == 0.0
    assert typical_pitch([row(700, (50, "Title"), size=20), row(688, (50, PROSE))]) == 0.0
    assert typical_pitch(rows((50, PROSE), pitch=40, n=3)) == 0.0  # 4 em: not a line pitch
    assert typical_pitch(rows((50, PROSE), pitch=25, n=3)) == 25  # 2.5 em: double spacing
    assert typical_pitch(rows((50, PROSE), pitch=7, n=3)) == 0.0  # 0.7 em: overprinted


def test_table_run_end() -> None:
    region = [
        row(700, (50, PROSE)),
        *rows((50, "Server"), (200, "Term"), top=688, n=3),
        row(652, (50, PROSE)),
    ]
    assert table_run_end(region, 0) == 0  # a line of prose: no run
    assert table_run_end(region, 1) == 4
    near = [row(700, (50, "a"), (200, "b")), row(670, (50, "c"), (200, "d"))]
    assert table_run_end(near, 0) == 2  # 2 em between the rows
    apart = [row(700, (50, "a"), (200, "b")), row(660, (50, "c"), (200, "d"))]
    assert table_run_end(apart, 0) == 1  # 3 em: too far below to be the same table


def test_peel_prose() -> None:
    run = rows((50, "alpha"), (120, "3"), (250, PROSE), n=4)
    before, rest, after = peel_prose(run)
    assert before == [] and len(after) == 4 and len(rest) == 4
    assert {r.text for r in after} == {PROSE} and {r.text for r in rest} == {"alpha 3"}
    table = rows((50, "alpha"), (120, "3"), (250, "leader"), n=4)
    assert peel_prose(table) == ([], table, [])
    four_words = rows((50, "alpha"), (120, "3"), (250, "sends heartbeats to followers"), n=4)
    assert peel_prose(four_words) == ([], four_words, [])  # cells, not lines of prose
    once = [*rows((50, "alpha"), (120, "3"), n=3), row(664, (50, "beta"), (250, PROSE))]
    assert peel_prose(once) == ([], once, [])  # prose on one row of four: no column


def test_is_ruling_line() -> None:
    assert is_ruling_line(300, 0.5) and is_ruling_line(1, 40)
    assert is_ruling_line(300, 3) and is_ruling_line(12, 1)
    assert not is_ruling_line(300, 3.5)  # a filled box
    assert not is_ruling_line(11, 1)  # a dash


def test_ruled() -> None:
    run = rows((60, "Name"), (250, "Value"), top=660, pitch=16, n=2)  # 60 to 275, 660 to 654
    above, below = Rule(50, 400, 672, 673), Rule(50, 400, 640, 641)
    assert ruled(run, [above, below])
    assert not ruled(run, [above])
    assert not ruled(run, [Rule(50, 150, 672, 673), below])  # across less than 60% of it
    assert not ruled(run, [Rule(50, 400, 690, 691), below])  # 2 em above it
    assert ruled(run, [Rule(200, 201, 640, 680)])  # a vertical rule between the columns
    assert not ruled(run, [Rule(50, 400, 400, 401), Rule(50, 400, 300, 301)])  # far below


def test_on_a_grid() -> None:
    grid = rows((50, "alpha"), (150, "3"), (250, "leader"), n=4)
    assert on_a_grid(grid)
    assert on_a_grid(grid[:3])
    assert not on_a_grid(grid[:2])  # too few rows without ruling lines
    assert on_a_grid(rows((50, "a b c d"), (150, "3"), (250, "a b c d"), n=4))
    assert not on_a_grid(rows((50, "a b c d e"), (150, "3 4 5"), (250, "a b c d e"), n=4))
    ragged = [  # no inner edge at one x on most rows: the gaps of spaced-out text
        row(700 - 12 * i, (50, "ab " * (i + 1)), (90 + 40 * i, "cd"), (300 - 13 * i, "e"))
        for i in range(4)
    ]
    assert not on_a_grid(ragged)
    assert not on_a_grid(rows((50, PROSE), (320, PROSE), n=4))  # long cells


def test_prose_columns() -> None:
    run = rows((50, PROSE), (320, PROSE), n=3)
    left, right = prose_columns(run)
    assert [r.x0 for r in left] == [50] * 3 and [r.x0 for r in right] == [320] * 3
    cells = rows((50, "alpha"), (320, "3"), n=3)
    assert prose_columns(cells) == [cells]
    four = rows((50, "sends heartbeats to followers"), (320, "sends heartbeats to followers"))
    assert prose_columns(four) == [four]  # median cell under five words
    five = rows((50, "sends heartbeats to all followers"), (320, "and they answer it quickly"))
    assert len(prose_columns(five)) == 2


def test_size_changes() -> None:
    body = row(700, (50, PROSE))
    assert not size_changes(body, row(688, (50, PROSE), size=10.4))
    assert size_changes(body, row(688, (50, PROSE), size=10.6))
    assert size_changes(body, row(688, (50, PROSE), size=9.4))


FRAME = _Frame(pitch=12, left=50, right=300)


def test_off_pitch() -> None:
    prev = row(700, (50, PROSE))
    assert not off_pitch(prev, row(688, (50, PROSE)), FRAME)
    assert not off_pitch(prev, row(684, (50, PROSE)), FRAME)  # 16: within 1.3 times 12
    assert off_pitch(prev, row(683.8, (50, PROSE)), FRAME)  # 16.2: a gap
    assert off_pitch(prev, row(710, (50, PROSE)), FRAME)  # above: another column
    assert not off_pitch(prev, row(685, (50, PROSE)), _Frame(0, 50, 300))  # 1.6 em
    assert off_pitch(prev, row(683, (50, PROSE)), _Frame(0, 50, 300))


def _line(x0: float, x1: float, y: float) -> Row:
    """A line of text from x0 to x1 at baseline y, in 10 pt."""
    return Row([Segment([Word("line", x0, x1, y, y + 10, 10.0)])])


def test_indented() -> None:
    short_line = row(700, (50, "ends the paragraph."))
    assert indented(short_line, row(688, (60, PROSE)), FRAME)
    full_line = row(700, (50, f"{PROSE} and then"))  # to the right margin
    assert not indented(full_line, row(688, (60, PROSE)), FRAME)
    assert not indented(short_line, row(688, (50, PROSE)), FRAME)
    assert not indented(short_line, row(688, (55, PROSE)), FRAME)  # half an em: not indented
    assert not indented(_line(50, 290, 700), row(688, (60, PROSE)), FRAME)  # an em short
    assert indented(_line(50, 283, 700), row(688, (60, PROSE)), FRAME)  # 1.7 em short


def test_broken_at_line_end() -> None:
    assert broken_at_line_end("the produc-", "tion line")
    assert not broken_at_line_end("pages 1-", "9 of")
    assert not broken_at_line_end("a dash -", "then")
    assert not broken_at_line_end("the end", "of it")
