"""Small real-format files, written on the fly: PDFs (reportlab), DOCX (python-docx), PNG.

Shared by tests/test_parse_formats.py and bench/parse.py. Every PDF uses
Helvetica 10 pt for body text on US Letter pages (612 x 792 pt).
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from collections.abc import Sequence

from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

BODY = ("Helvetica", 10)
LEADING = 12
_TEXT = (
    "the replicated log keeps every server in agreement while a leader accepts entries "
    "from clients and sends them to followers which apply committed entries in order and "
    "answer reads after a quorum confirms the term has not changed since the election"
)
_WORDS = _TEXT.split()


def sentence(rng: random.Random, words: int = 12) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def lines(rng: random.Random, n: int, width: int = 90) -> list[str]:
    """``n`` lines of running text, each at most ``width`` characters (and nearly that)."""
    out = []
    for _ in range(n):
        words: list[str] = []
        while True:
            word = rng.choice(_WORDS)
            if len(" ".join([*words, word])) > width:
                break
            words.append(word)
        out.append(" ".join(words))
    return out


def _canvas(buf: io.BytesIO, encrypt: str | None = None) -> canvas.Canvas:
    c = canvas.Canvas(buf, pagesize=letter, encrypt=encrypt)
    c.setFont(*BODY)
    return c


def _text(c: canvas.Canvas, x: float, y: float, text: str, size: float = 10) -> None:
    c.setFont("Helvetica-Bold" if size > 10 else "Helvetica", size)
    c.drawString(x, y, text)


def paged_pdf(
    pages: Sequence[Sequence[str]],
    *,
    headings: Sequence[str | None] = (),
    title: str | None = None,
) -> bytes:
    """One page per entry: an optional 16 pt heading, then the lines in 10 pt.

    An empty page (no lines, no heading) has no text layer at all; a rectangle
    is drawn on it so it is not entirely blank.
    """
    buf = io.BytesIO()
    c = _canvas(buf)
    if title:
        c.setTitle(title)
    for i, page in enumerate(pages):
        y = 740.0
        heading = headings[i] if i < len(headings) else None
        if heading:
            _text(c, 50, y, heading, 16)
            y -= 30
        for line in page:
            _text(c, 50, y, line)
            y -= LEADING
        if not page and not heading:
            c.rect(100, 100, 200, 300, fill=1)
        c.showPage()
    c.save()
    return buf.getvalue()


def two_column_pdf(rng: random.Random, rows: int = 40) -> bytes:
    """A paper page: a 20 pt title across the page, then two columns of 10 pt text.

    The columns are drawn interleaved, line by line (left, right, left, ...), so
    the content order alone would mix them; every left line starts "Left" and
    every right line "Right".
    """
    buf = io.BytesIO()
    c = _canvas(buf)
    _text(c, 150, 740, "Consensus in Two Columns", 20)
    _text(c, 50, 710, " ".join(lines(rng, 1, 100)))
    left, right = lines(rng, rows, 40), lines(rng, rows, 40)
    y = 680.0
    for i in range(rows):
        _text(c, 50, y, f"Left {i} {left[i]}")
        _text(c, 320, y, f"Right {i} {right[i]}")
        y -= LEADING
    c.showPage()
    c.save()
    return buf.getvalue()


TABLE = (
    ("Server", "Term", "Role"),
    ("alpha", "3", "leader"),
    ("beta", "3", "follower"),
    ("gamma", "2", "candidate"),
)


def table_pdf(rng: random.Random) -> bytes:
    """Text, a ruled 4 x 3 table, more text: on one page."""
    buf = io.BytesIO()
    c = _canvas(buf)
    y = 740.0
    for line in lines(rng, 5):
        _text(c, 50, y, line)
        y -= LEADING
    y -= 20
    xs = (60, 220, 380)
    for r, row in enumerate(TABLE):
        c.line(50, y + 12, 540, y + 12)
        for x, cell in zip(xs, row, strict=True):
            _text(c, x, y, cell)
        y -= 18 if r == 0 else 16
    c.line(50, y + 12, 540, y + 12)
    y -= 30
    for line in lines(rng, 5):
        _text(c, 50, y, line)
        y -= LEADING
    c.showPage()
    c.save()
    return buf.getvalue()


def outline_pdf(rng: random.Random) -> bytes:
    """Two pages whose section titles are body-sized, named only by the outline."""
    buf = io.BytesIO()
    c = _canvas(buf)
    for page, (title, sub) in enumerate((("Overview", "Goals"), ("Design", "Log"))):
        key = f"p{page}"
        y = 740.0
        _text(c, 50, y, title)
        c.bookmarkPage(key, fit="XYZ", top=y + 12)
        c.addOutlineEntry(title, key, level=0)
        y -= 24
        for line in lines(rng, 4):
            _text(c, 50, y, line)
            y -= LEADING
        y -= 24
        _text(c, 50, y, sub)
        c.bookmarkPage(key + "s", fit="XYZ", top=y + 12)
        c.addOutlineEntry(sub, key + "s", level=1)
        y -= 24
        for line in lines(rng, 4):
            _text(c, 50, y, line)
            y -= LEADING
        c.showPage()
    c.save()
    return buf.getvalue()


def scaled_heading_pdf(rng: random.Random) -> bytes:
    """A 10 pt heading drawn at twice the scale (20 pt on the page), then body text."""
    buf = io.BytesIO()
    c = _canvas(buf)
    c.saveState()
    c.scale(2, 2)
    _text(c, 25, 370, "Scaled Heading")
    c.restoreState()
    y = 700.0
    for line in lines(rng, 6):
        _text(c, 50, y, line)
        y -= LEADING
    c.showPage()
    c.save()
    return buf.getvalue()


def blank_pdf(pages: int) -> bytes:
    """``pages`` pages without any text."""
    buf = io.BytesIO()
    c = _canvas(buf)
    for _ in range(pages):
        c.showPage()
    c.save()
    return buf.getvalue()


def encrypted_pdf(user_password: str = "secret") -> bytes:
    """A PDF that needs ``user_password`` to open."""
    buf = io.BytesIO()
    c = _canvas(buf, encrypt=user_password)
    _text(c, 50, 740, "Sealed text")
    c.showPage()
    c.save()
    return buf.getvalue()


def paper_pdf(rng: random.Random, pages: int) -> bytes:
    """A paper-like PDF for benchmarks: per page a title, two columns of 55 lines, a table."""
    buf = io.BytesIO()
    c = _canvas(buf)
    for p in range(pages):
        _text(c, 50, 750, f"Section {p + 1}: {sentence(rng, 5)}", 14)
        for x in (50, 320):
            y = 720.0
            for line in lines(rng, 45, 48):
                _text(c, x, y, line)
                y -= LEADING
        y = 160.0
        for row in TABLE:
            for x, cell in zip((60, 220, 380), row, strict=True):
                _text(c, x, y, cell)
            y -= 14
        c.showPage()
    c.save()
    return buf.getvalue()


# -- not PDFs ------------------------------------------------------------------------------


def png_bytes(width: int = 8, height: int = 8) -> bytes:
    """A small valid grey PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + bytes([128] * width) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def docx_bytes() -> bytes:
    """A DOCX: title, Heading 1/2, paragraphs, a bullet list and a 3 x 3 table."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Raft Notes"
    document.add_heading("Consensus", level=1)
    document.add_paragraph("Raft keeps a replicated log consistent across servers.")
    document.add_heading("Leader election", level=2)
    document.add_paragraph("A candidate asks for votes after a timeout.")
    document.add_paragraph("first item", style="List Bullet")
    document.add_paragraph("second item", style="List Bullet")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate(TABLE[:3]):
        for col, text in enumerate(row):
            table.cell(r, col).text = text
    document.add_heading("Log replication", level=2)
    document.add_paragraph("The leader appends entries and sends them to followers.")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def docx_zip_bomb(megabytes: int = 300) -> bytes:
    """A DOCX-shaped zip whose document.xml inflates to ``megabytes`` MB of spaces."""
    base = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for item in base.infolist():
            if item.filename != "word/document.xml":
                out.writestr(item, base.read(item))
        with out.open("word/document.xml", "w", force_zip64=True) as member:
            block = b" " * (1 << 20)
            for _ in range(megabytes):
                member.write(block)
    return buf.getvalue()


# The cited passage of column_paper_pdf: on page 1 it starts low in the left column and
# goes on at the top of the right one (the page number between them in the content), a
# word broken by a hyphen at a line end; on page 2 it is a few short lines near the foot.
PAPER_QUORUM = [
    "A quorum of voters decides each term.",
    "No two leaders can share one term, since",
    "each voter grants one vote per term and",
    "two majorities of the same cluster al-",
    "ways overlap in at least one voter. The",
]
PAPER_QUORUM_GOES_ON = [
    "candidate that gathers a quorum becomes",
    "the leader and tells the others at once",
    "with a heartbeat before their timers end.",
]
PAPER_BALLOTS = [
    "Ballots are counted once",
    "by every voter, and a",
    "ballot for an old term",
    "is thrown away unread.",
]


def column_paper_pdf() -> bytes:
    """Two pages of a paper. Page 1 has two columns of 10 pt text under a title; the
    "Quorum" section starts near the foot of the left column and ends under
    ``PAPER_QUORUM_GOES_ON`` at the top of the right one. Page 2 is one narrow column
    whose "Ballots" section (``PAPER_BALLOTS``) sits near the foot of the page."""
    rng = random.Random(42)
    buf = io.BytesIO()
    c = _canvas(buf)
    _text(c, 150, 740, "Voting in Two Columns", 20)
    y = 700.0
    for line in lines(rng, 36, 44):
        _text(c, 50, y, line)
        y -= LEADING
    y -= 8
    _text(c, 50, y, "Quorum", 14)
    y -= 20
    for line in PAPER_QUORUM:
        _text(c, 50, y, line)
        y -= LEADING
    _text(c, 300, 40, "1")  # the page number, drawn between the columns
    y = 700.0
    for line in PAPER_QUORUM_GOES_ON:
        _text(c, 320, y, line)
        y -= LEADING
    y -= 8
    _text(c, 320, y, "Terms", 14)
    y -= 20
    for line in lines(rng, 40, 44):
        _text(c, 320, y, line)
        y -= LEADING
    c.showPage()
    y = 740.0
    _text(c, 50, y, "Appendix", 14)
    y -= 24
    for line in lines(rng, 40, 30):
        _text(c, 50, y, line)
        y -= LEADING
    y -= 8
    _text(c, 50, y, "Ballots", 14)
    y -= 20
    for line in PAPER_BALLOTS:
        _text(c, 50, y, line)
        y -= LEADING
    c.showPage()
    c.save()
    return buf.getvalue()
