"""Small synthetic inputs for the PDF rules' tests: words, rows and pieces with positions
and sizes in points (y grows upwards, as in PDF space); no PDF file."""

from __future__ import annotations

from docshelf.model import BlockKind
from docshelf.parse.pdf_layout import Piece, Row, Segment, Word

PROSE = "the leader sends heartbeats to every follower"  # a line of prose: long cells


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
