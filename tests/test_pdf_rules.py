"""The PDF layout and heading rules (``parse.pdf.RULES``), one focused test each.

Inputs are small and synthetic: words, rows and pieces with positions and sizes in
points (y grows upwards, as in PDF space), built by the helpers below; no PDF file.
The last tests keep the list honest: each rule has a one-sentence docstring and a test
here, docs/formats.md lists the rules in order, and no rule module hides a threshold or
a regular expression outside ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from docshelf.model import BlockKind
from docshelf.parse.pdf import RULES
from docshelf.parse.pdf_layout import (
    Columns,
    Piece,
    Row,
    Rule,
    Segment,
    Word,
    column_line,
    cuts_band,
    drawn_twice,
    gutter,
    same_row,
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
from docshelf.parse.pdf_structure import (
    Numbered,
    apply_font_sizes,
    apply_outline,
    body_line,
    body_size,
    continues_broken_word,
    follows,
    joined_across_breaks,
    numbered_headings,
    numbered_list,
    one_title_heading,
    outline_match,
    page_edges,
    placeholder_title,
    repeated_texts,
    running_furniture,
    section_number,
    set_larger,
    short,
    title,
    title_lines,
    without_furniture,
)
from docshelf.parse.pdf_text import (
    HYPHEN_MARK,
    is_caption,
    is_formula,
    is_garbled,
    is_page_number,
    is_unreadable,
    real_hyphen,
)

ROOT = Path(__file__).resolve().parent.parent
PARSE = ROOT / "src" / "docshelf" / "parse"


# -- builders --------------------------------------------------------------------------------


def word(text: str, x: float, y: float, size: float = 10.0) -> Word:
    """A word at (x, y), its baseline y, half an em wide per character."""
    return Word(text, x, x + 0.5 * size * len(text), y, y + size, size)


def segment(x: float, y: float, text: str, size: float = 10.0) -> Segment:
    """The words of ``text`` from x on one baseline, a space (a quarter em) apart."""
    words: list[Word] = []
    for w in text.split():
        words.append(word(w, x, y, size))
        x = words[-1].x1 + 0.25 * size
    return Segment(words)


def row(y: float, *cells: tuple[float, str], size: float = 10.0) -> Row:
    """A row at baseline y of cells (x, text), each a segment."""
    return Row([segment(x, y, text, size) for x, text in cells])


def rows(*cells: tuple[float, str], top: float = 700, pitch: float = 12, n: int = 8) -> list[Row]:
    """``n`` rows ``pitch`` apart from ``top`` down, each with the same cells."""
    return [row(top - pitch * i, *cells) for i in range(n)]


def piece(
    text: str,
    *,
    page: int = 1,
    size: float = 10.0,
    lines: int = 1,
    kind: BlockKind = BlockKind.PARAGRAPH,
) -> Piece:
    return Piece(kind, text, size, lines, page, chars_by_size={size: len(text)})


PROSE = "the leader sends heartbeats to every follower"  # a line of prose: long cells


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


# -- across pages ------------------------------------------------------------------------------


def test_page_edges() -> None:
    page = [piece(f"p{i}") for i in range(6)]
    page[0] = piece("a paragraph of many lines", lines=5)
    assert [p.text for p in page_edges(page)] == ["p1", "p4", "p5"]
    assert [p.text for p in page_edges(page[1:3])] == ["p1", "p2"]
    two_lines, three_lines = piece("head", lines=2), piece("head", lines=3)
    assert page_edges([two_lines, three_lines]) == [two_lines]
    assert page_edges([piece("x" * 120), piece("x" * 121)]) == [piece("x" * 120)]


def test_is_page_number() -> None:
    for text in ("12", "iv", "Page 3 of 9", "- 4 -", "7/20"):
        assert is_page_number(text), text
    assert not is_page_number("Introduction") and not is_page_number("2024 results")


def test_running_furniture() -> None:
    pages = [
        [
            piece(f"Journal of Systems, Vol. {n}", size=8),
            piece(PROSE, lines=9),
            piece(str(n), size=8),
        ]
        for n in range(8)
    ]
    pages[3].insert(0, piece("Once at the top", size=8))
    assert running_furniture(pages) == {("journal of systems, vol. #", 8), ("#", 8)}
    assert running_furniture(pages[:2]) == set()  # on too few pages
    pages[5].insert(0, piece("Draft", size=8))
    pages[7].insert(0, piece("Draft", size=8))
    assert ("draft", 8) not in running_furniture(pages)  # on two of eight pages
    pages[6].insert(0, piece("Draft", size=8))
    assert ("draft", 8) in running_furniture(pages)  # three of eight: a quarter
    assert ("draft", 8) not in running_furniture(pages + [[piece(PROSE)]] * 5)  # of 13


def test_continues_broken_word() -> None:
    last = piece("the client waits for an inaccessi-")
    assert continues_broken_word(last, piece("ble file server to return"))
    assert continues_broken_word(piece(f"inaccessi{HYPHEN_MARK}"), piece("ble file"))
    assert not continues_broken_word(last, piece("Section 2 starts here"))
    assert not continues_broken_word(piece("ends whole."), piece("and goes on"))
    assert not continues_broken_word(last, piece("ble | 3", kind=BlockKind.TABLE))


def test_real_hyphen() -> None:
    words = Counter({"production": 1, "well-known": 2})
    assert not real_hyphen("produc", "tion", words)  # the joined word occurs
    assert real_hyphen("well", "known", words)  # the hyphenated one does, not the joined
    assert not real_hyphen("compu", "ting", Counter())  # no evidence: joined
    assert real_hyphen("Anti", "Entropy", Counter())  # a capital after the break


def test_body_size() -> None:
    found = [piece("x" * 40, size=10), piece("y" * 30, size=9), piece("z" * 5, size=14)]
    assert body_size(found) == 10
    assert body_size([piece("a" * 10, size=10), piece("b" * 10, size=9)]) == 9  # a tie
    assert body_size([]) == 0.0


def test_outline_match() -> None:
    assert outline_match("leader election", "leader election")
    assert outline_match("2 1 leader election", "leader election")  # its number apart
    assert outline_match("leader election 7", "leader election")  # a short tail
    assert outline_match("leader election 1 2 3 45", "leader election")  # 24 characters
    assert not outline_match("leader election 1 2 3 456", "leader election")
    assert outline_match("ion", "leader election")
    assert not outline_match("leader election and what the followers do then", "leader election")
    assert outline_match("election", "leader election")  # the entry's end
    assert not outline_match("on", "leader election")
    assert not outline_match("", "")


def test_short() -> None:
    assert short(piece("Introduction"))
    assert short(piece("Introduction", lines=3)) and short(piece("x" * 200))
    assert not short(piece("Introduction", lines=4))
    assert not short(piece("x" * 201))
    assert not short(piece("4.2a"))  # fewer than two letters
    assert short(piece("4.2ab"))


def test_set_larger() -> None:
    assert set_larger(piece("Introduction", size=11), body=10)
    assert set_larger(piece("Introduction", size=10.9), body=10)
    assert not set_larger(piece("Introduction", size=10.7), body=10)
    assert not set_larger(piece("Server | Term", size=12, kind=BlockKind.TABLE), body=10)
    assert not set_larger(piece(PROSE * 5, size=12), body=10)  # not short


def test_is_caption() -> None:
    for text in ("Figure 3: Mesos architecture", "Table 2. Results", "Fig. 10. Left", "Listing 1:"):
        assert is_caption(text), text
    assert not is_caption("Figures of merit") and not is_caption("Table manners")


def test_is_formula() -> None:
    assert is_formula("Paccept = C[pi(1 - pi)]")  # a relation
    assert is_formula("x_i + y_j")  # mostly symbols
    assert is_formula("a b c d")  # mostly one-letter tokens
    assert not is_formula("a b c")  # too few tokens to tell
    assert is_formula("(1) [2] {3}") and is_formula("Q 2024")  # few letters
    assert not is_formula("Top 10")
    assert is_formula("ab+cd+efgh")  # two symbols, four letters to a symbol
    assert not is_formula("ab+cd+efghi") and not is_formula("TCP+TLS")
    assert not is_formula("O(log n) Operations") and not is_formula("2.1 Leader Election")


def test_is_garbled() -> None:
    assert is_garbled("NcbedV]_fRWgcZJdVh IJACKLM")  # letters mixed with symbols
    assert is_garbled("xkqz bvwp")  # no vowels: not words
    assert not is_garbled("xkq bvw")  # three letters need none
    assert not is_garbled("Xkqzt")  # one word is too few to judge
    assert is_garbled("aBcD eFgH")  # case flipping to and fro
    assert not is_garbled("iPhone getValue") and not is_garbled("AT&T Labs")
    assert not is_garbled("TAO: Facebook\u2019s Data Store") and not is_garbled("iPhone")


def test_repeated_texts() -> None:
    found = [piece("Notes On Consensus", page=n) for n in (1, 2, 3)]
    found += [piece(f"{2 * n} Epidemic Algorithms", page=n) for n in (1, 2, 3)]
    found.append(piece("Once Only", page=1))
    assert repeated_texts(found) == {"notes on consensus"}
    assert repeated_texts(found, digits=False) == {"notes on consensus", " epidemic algorithms"}
    assert repeated_texts([piece(PROSE * 5, page=n) for n in (1, 2, 3)]) == set()  # not short
    assert repeated_texts(found[:2]) == set()  # on two pages


def test_section_number() -> None:
    assert section_number("II. MOTIVATION") == ("roman", (2,))
    assert section_number("A. Concepts and Constructions") == ("letter", (1,))
    assert section_number("3.1 Design Philosophy") == ("arabic", (3, 1))
    assert section_number("IIII. Not Roman") is None
    assert section_number("3.1 A sentence that ends.") is None
    assert section_number("1.3 Contributions 3") is None  # a page number at its end
    assert section_number("2 " + " ".join(["Word"] * 12)) == ("arabic", (2,))
    assert section_number("2 " + " ".join(["Word"] * 13)) is None  # too long a title


def test_body_line() -> None:
    assert body_line(piece("2.1 Remote Calls"), body=10)
    assert body_line(piece("A. CONCEPTS", size=8.6), body=10)  # small capitals
    assert not body_line(piece("A. CONCEPTS", size=8.4), body=10)  # a footnote's size
    assert not body_line(piece("2.1 Remote Calls", lines=2), body=10)
    assert not body_line(piece("2 Related Work", size=12), body=10)  # found by its size
    rotated = piece("2.1 Remote Calls")
    rotated.rotated = True
    assert not body_line(rotated, body=10)


def _numbered(at: int, text: str) -> Numbered:
    found = section_number(text)
    assert found is not None
    return Numbered(piece(text), at, *found)


def test_numbered_list() -> None:
    one, two = _numbered(5, "1. Install the package"), _numbered(6, "2. Run the first command")
    assert numbered_list([one, two]) == {id(one.piece), id(two.piece)}
    apart = _numbered(9, "2. Run the first command")  # text between them
    assert numbered_list([one, apart]) == set()
    child = _numbered(6, "1.1 Terminology")  # one deeper
    assert numbered_list([one, child]) == set()
    heading = _numbered(6, "2. Related Work")
    heading.piece.kind = BlockKind.HEADING  # found by its size: kept
    assert numbered_list([one, heading]) == {id(one.piece)}


def test_follows() -> None:
    assert follows(None, (1,)) and follows(None, (2, 1)) and not follows(None, (2,))
    assert follows((3,), (3, 1)) and follows((3,), (4,)) and not follows((3,), (3, 2))
    assert follows((3, 1), (3, 2)) and follows((3, 1), (4,)) and not follows((3, 1), (5,))


def test_title_lines() -> None:
    found = [
        piece("Polynomial-Time Algorithms for Prime Factorization", size=17),
        piece("and Discrete Logarithms on a Quantum Computer", size=17),
        piece("Peter W. Shor", size=12),
        piece(PROSE),
    ]
    assert [p.size for p in title_lines(found, body=10)] == [17, 17]
    assert title_lines(found, body=14) == []  # not a quarter larger than the body
    found[1].size = 16.4
    assert len(title_lines(found, body=10)) == 1  # the next line in another size
    found[1].size = 16.6
    assert len(title_lines(found, body=10)) == 2
    lines = [piece(f"Title line {n}", size=17) for n in range(4)]
    assert len(title_lines([*lines, piece(PROSE)], body=10)) == 3
    on_page_2 = [piece("Title", size=17, page=2), piece(PROSE)]
    assert title_lines(on_page_2, body=10) == []
    caption = [piece("Figure 1: Overview", size=17), piece(PROSE)]
    assert title_lines(caption, body=10) == []


def test_one_title_heading() -> None:
    first, second = piece("Macaroons: Cookies with", size=20), piece("Contextual Caveats", size=20)
    body = piece(PROSE)
    for p in (first, second):
        p.kind, p.level = BlockKind.HEADING, 1
    found = one_title_heading([first, second, body], body=10)
    assert [p.text for p in found] == ["Macaroons: Cookies with Contextual Caveats", PROSE]
    second.kind = BlockKind.PARAGRAPH  # not all of its lines are headings: left alone
    third = piece("Contextual Caveats", size=20)
    assert one_title_heading([first, third, body], body=10) == [first, third, body]


def test_placeholder_title() -> None:
    for text in ("", "untitled", "Document1", "paper.pdf", "arXiv:2101.00001v2"):
        assert placeholder_title(text), text
    assert placeholder_title("Proceedings Template - WORD")
    assert not placeholder_title("Raft Explained")


def test_title() -> None:
    found = [piece("Raft", size=20), piece(PROSE)]
    assert title(found, body=10) == "Raft"
    heading = piece("In Search of Consensus", size=12, page=2)
    heading.kind = BlockKind.HEADING
    assert title([piece(PROSE), heading], body=10) == "In Search of Consensus"
    heading.page = 3
    assert title([piece(PROSE), heading], body=10) is None  # too far in


# -- the rules together ----------------------------------------------------------------------


def test_without_furniture_drops_running_heads_and_page_numbers() -> None:
    pages = [
        [piece("Notes on Raft", page=n), piece(PROSE, page=n, lines=9), piece(str(n), page=n)]
        for n in (1, 2, 3)
    ]
    kept = without_furniture([p for page in pages for p in page])
    assert [p.text for p in kept] == [PROSE] * 3
    two_pages = [p for page in pages[:2] for p in page]
    assert without_furniture(two_pages) == two_pages  # too few pages to tell


def test_joined_across_breaks() -> None:
    found = [piece("an inaccessi-", page=1), piece("ble file server", page=2), piece("Next")]
    joined = joined_across_breaks(found)
    assert [p.text for p in joined] == [f"an inaccessi{HYPHEN_MARK}ble file server", "Next"]
    assert joined[0].rows == 2


def test_apply_outline() -> None:
    found = [piece("1 Introduction"), piece(PROSE), piece("Introduction", page=2)]
    assert apply_outline(found, [(1, "Introduction", 1)])
    assert [(p.kind, p.level) for p in found][:2] == [
        (BlockKind.HEADING, 1),
        (BlockKind.PARAGRAPH, 0),
    ]
    assert found[2].kind is BlockKind.PARAGRAPH  # on another page than the entry's
    assert not apply_outline([piece(PROSE)], [(1, "Introduction", 1)])


def test_apply_font_sizes_levels_by_size() -> None:
    found = [
        piece("Raft", size=18),
        piece("Safety", size=14),
        piece(PROSE),
        piece("Liveness", size=14),
    ]
    found.append(piece("Figure 2: States", size=14))
    assert apply_font_sizes(found, body=10) == 2
    assert [(p.text, p.level) for p in found if p.kind is BlockKind.HEADING] == [
        ("Raft", 1),
        ("Safety", 2),
        ("Liveness", 2),
    ]


def test_numbered_headings_follow_on() -> None:
    found = [
        piece("1 Introduction", size=14),
        piece(PROSE),
        piece("1.1 Terminology"),
        piece(PROSE),
        piece("7 Reasons a Reader Counts"),  # follows nothing, nothing follows it
        piece(PROSE),
        piece("1.2 Latency"),
    ]
    found[0].kind = BlockKind.HEADING
    depths = [(p.text, depth) for p, depth in numbered_headings(found, body=10)]
    assert depths == [("1.1 Terminology", 2), ("1.2 Latency", 2)]


# -- the list itself -----------------------------------------------------------------------------


def _summary(doc: str) -> str:
    """A docstring's first paragraph on one line, its ``literals`` left out."""
    return " ".join(re.sub(r"``.*?``", "…", doc.split("\n\n")[0], flags=re.S).split())


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
def test_every_rule_has_a_one_sentence_docstring_and_a_test(rule: object) -> None:
    name = getattr(rule, "__name__", "")
    summary = _summary(inspect.getdoc(rule) or "")
    assert summary.endswith("."), f"{name}: no one-sentence docstring"
    assert not re.search(r"[.!?] +[A-Z]", summary), f"{name}: more than one sentence"
    assert callable(globals().get(f"test_{name}")), f"{name} has no test_{name} here"


def test_the_rules_are_listed_once() -> None:
    names = [rule.__name__ for rule in RULES]
    assert len(names) == len(set(names))


def test_docs_list_the_rules_in_order() -> None:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = text.split("### PDF", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\d+\. `(\w+)`", section, flags=re.M)
    assert listed == [rule.__name__ for rule in RULES], "docs/formats.md: list the rules in order"


# The numbers a rule module may write out: none of them is a threshold (0, 1 and 2 count,
# halve and double; 5 and 10 are the Roman V and X, 0xFFFD the replacement character).
_PLAIN_NUMBERS = {0, 1, 2}
_ALLOWED = {"pdf_structure.py": {5, 10}, "pdf_page.py": {0xFFFD}}


@pytest.mark.parametrize(
    "module",
    ["pdf.py", "pdf_page.py", "pdf_layout.py", "pdf_pieces.py", "pdf_structure.py", "pdf_text.py"],
)
def test_thresholds_and_patterns_live_in_one_place(module: str) -> None:
    tree = ast.parse((PARSE / module).read_text(encoding="utf-8"))
    allowed = _PLAIN_NUMBERS | _ALLOWED.get(module, set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            value, line = node.value, node.lineno
            assert isinstance(value, bool) or value in allowed, f"{module}:{line}: {value}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            called = f"{node.value.id}.{node.attr}"
            assert called == "re.Match" or node.value.id != "re", f"{module}: {called}"
