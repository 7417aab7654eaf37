"""PDF text quality: hyphenation, prose kept out of tables, heading rejection, gibberish pages,
looping page trees. Every PDF is written here, on the fly (reportlab, or by hand)."""

from __future__ import annotations

import io
import random
import string
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse import parse
from docshelf.parse.pdf import parse_pdf
from docshelf.parse.pdf_text import (
    HYPHEN_MARK,
    dehyphenate,
    heading_rejection,
    is_unreadable,
    readable_share,
    vocabulary,
)
from tests import fixtures_formats as fx

Run = tuple[float, float, str, float]  # x, y, text, font size


@pytest.fixture
def rng() -> random.Random:
    return random.Random(15)


def _pdf(pages: list[list[Run]]) -> bytes:
    """Pages of (x, y, text, size) runs in Helvetica."""
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=letter)
    for page in pages:
        for x, y, text, size in page:
            c.setFont("Helvetica", size)
            c.drawString(x, y, text)
        c.showPage()
    c.save()
    return buf.getvalue()


def _lines(texts: list[str], *, x: float = 50, top: float = 740, size: float = 10) -> list[Run]:
    return [(x, top - 12 * i, t, size) for i, t in enumerate(texts)]


def texts(doc: ParsedDocument, kind: BlockKind) -> list[str]:
    return [doc.body[b.start : b.end] for b in doc.blocks if b.kind is kind]


# -- hyphenation at line ends ---------------------------------------------------------------


def test_line_end_hyphens_are_joined_unless_the_document_shows_a_real_hyphen() -> None:
    data = _pdf(
        [
            _lines(
                [
                    "The plant keeps its production steady and its",
                    "workers rest. Every night the produc-",
                    "tion line stops, a well-known habit.",
                    "The habit is well-",
                    "known to all, and the compu-",
                    "ting staff leave early.",
                ]
            )
        ]
    )
    body = parse_pdf(data).body
    assert "the production line stops" in body  # "production" occurs elsewhere: joined
    assert "The habit is well-known to all" in body  # "well-known" occurs elsewhere: kept
    assert "the computing staff" in body  # no evidence either way: joined
    assert "produc" not in body.replace("production", "")
    assert HYPHEN_MARK not in body


def test_a_word_broken_across_columns_is_joined(rng: random.Random) -> None:
    left = fx.lines(rng, 20, 40)
    left[-1] = "the client waits for an inaccessi-"
    right = ["ble file server to return", *fx.lines(rng, 19, 40)]
    runs = [
        (x, 700.0 - 12 * i, t, 10.0)
        for x, col in ((50.0, left), (320.0, right))
        for i, t in enumerate(col)
    ]
    body = parse_pdf(_pdf([runs])).body
    assert "the client waits for an inaccessible file server to return" in body


def test_dehyphenate_decides_by_the_documents_own_words() -> None:
    words = vocabulary(["production is up", "a well-known fact"])
    assert dehyphenate(f"produc{HYPHEN_MARK}tion", words) == "production"
    assert dehyphenate(f"well{HYPHEN_MARK}known", words) == "well-known"
    assert dehyphenate(f"Anti{HYPHEN_MARK}Entropy", Counter()) == "Anti-Entropy"
    assert dehyphenate(f"end{HYPHEN_MARK}", Counter()) == "end-"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + " -.,\n", max_size=200))
def test_dehyphenate_leaves_text_without_marks_alone(text: str) -> None:
    assert dehyphenate(text, vocabulary([text])) == text


# -- two columns of prose are prose, tables need evidence ----------------------------------


def _prose_band_pdf(rng: random.Random) -> bytes:
    """A page of 30 full-width lines, then 12 rows of two columns of prose.

    The wide lines cross the middle of the page, so no gutter is found for the
    page as a whole; the two-column rows were read as a 12-row pipe table.
    """
    wide = _lines(fx.lines(rng, 30, 100))
    left = [f"Left {i} {t}" for i, t in enumerate(fx.lines(rng, 12, 42))]
    right = [f"Right {i} {t}" for i, t in enumerate(fx.lines(rng, 12, 42))]
    band: list[Run] = [
        run
        for i in range(12)
        for run in ((50.0, 360.0 - 12 * i, left[i], 10.0), (320.0, 360.0 - 12 * i, right[i], 10.0))
    ]
    return _pdf([wide + band])


def test_two_columns_of_prose_are_never_a_pipe_table(rng: random.Random) -> None:
    doc = parse_pdf(_prose_band_pdf(rng))
    assert texts(doc, BlockKind.TABLE) == []
    assert " | " not in doc.body
    body = doc.body
    assert body.index("Left 11") < body.index("Right 0")  # the left column first
    for i in range(11):
        assert body.index(f"Left {i} ") < body.index(f"Left {i + 1} ")
        assert body.index(f"Right {i} ") < body.index(f"Right {i + 1} ")


def test_an_unruled_table_on_a_grid_is_still_a_table(rng: random.Random) -> None:
    doc = parse_pdf(fx.paper_pdf(rng, 1))
    assert "Server | Term | Role\nalpha | 3 | leader" in texts(doc, BlockKind.TABLE)[0]


def test_a_ruled_two_row_table_is_a_table(rng: random.Random) -> None:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=letter)
    c.setFont("Helvetica", 10)
    for i, line in enumerate(fx.lines(rng, 4)):
        c.drawString(50, 740 - 12 * i, line)
    for y, row in ((660, ("Name", "Value")), (644, ("quorum size", "3"))):
        c.line(50, y + 12, 400, y + 12)
        c.drawString(60, y, row[0])
        c.drawString(250, y, row[1])
    c.line(50, 640, 400, 640)
    c.showPage()
    c.save()
    doc = parse_pdf(buf.getvalue())
    assert texts(doc, BlockKind.TABLE) == ["Name | Value\nquorum size | 3"]


# -- heading candidates ---------------------------------------------------------------------


def test_captions_formulae_and_page_numbers_are_not_headings(rng: random.Random) -> None:
    body = fx.lines(rng, 8)
    page = [
        (50, 740, "Introduction", 16),
        *_lines(body[:4], top=716),
        (50, 660, "Figure 3: Throughput per server", 14),
        *_lines(body[4:], top=640),
        (50, 580, "Paccept = C[pi(1 - pi)]", 14),
        (50, 550, "42", 14),
        *_lines(fx.lines(rng, 4), top=530),
    ]
    doc = parse_pdf(_pdf([page]))
    assert texts(doc, BlockKind.HEADING) == ["Introduction"]
    assert "Figure 3: Throughput per server" in texts(doc, BlockKind.PARAGRAPH)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Figure 3: Mesos architecture", "caption"),
        ("Table 2. Results", "caption"),
        ("Fig. 10. Left: a caveat", "caption"),
        ("Paccept = C[~~pi(l-pi)]", "formula"),
        ("x_i + y_j", "formula"),
        ("iv", "page number"),
        ("Page 3 of 9", "page number"),
        ("78&:9;02.4<=3=9?>@*A5CBDE$'3=F)9G&IH'>652&", "formula"),
        (":<;>=@?ACBEDFHG IJACKLM", "formula"),
        ("NcbedV]_fRWgcZJdVh IJACKLM", "unreadable"),
    ],
)
def test_heading_rejection_reasons(text: str, reason: str) -> None:
    assert heading_rejection(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "Introduction",
        "2.1 Leader Election",
        "TAO: Facebook\u2019s Data Store",
        "O(log n) Operations",
    ],
)
def test_real_headings_are_not_rejected(text: str) -> None:
    assert heading_rejection(text) is None


def test_a_large_line_repeated_on_every_page_is_not_a_heading(rng: random.Random) -> None:
    pages = [
        [
            *_lines(fx.lines(rng, 10)),
            (50, 600, "Notes On Consensus", 14),
            *_lines(fx.lines(rng, 10), top=580),
        ]
        for _ in range(4)
    ]
    doc = parse_pdf(_pdf(pages))
    assert texts(doc, BlockKind.HEADING) == []


def test_a_title_on_two_lines_is_joined_and_a_rotated_stamp_is_not_the_title(
    rng: random.Random,
) -> None:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=letter)
    c.setTitle("arXiv:quant-ph/9508027v2 25 Jan 1996")  # a placeholder, not a title
    c.saveState()
    c.translate(30, 300)
    c.rotate(90)
    c.setFont("Helvetica", 24)
    c.drawString(0, 0, "arXiv:quant-ph/9508027v2 25 Jan 1996")
    c.restoreState()
    c.setFont("Helvetica", 17)
    c.drawString(80, 740, "Polynomial-Time Algorithms for Prime Factorization")
    c.drawString(80, 712, "and Discrete Logarithms on a Quantum Computer")  # (a wide gap)
    c.setFont("Helvetica", 10)
    for i, line in enumerate(fx.lines(rng, 20)):
        c.drawString(80, 680 - 12 * i, line)
    c.showPage()
    c.save()
    doc = parse_pdf(buf.getvalue())
    assert doc.title == (
        "Polynomial-Time Algorithms for Prime Factorization"
        " and Discrete Logarithms on a Quantum Computer"
    )
    # one heading, not its last line heading the text
    assert texts(doc, BlockKind.HEADING) == [doc.title]
    assert {b.heading_path for b in doc.blocks if b.kind is BlockKind.PARAGRAPH} == {(doc.title,)}


# -- pages whose text layer is gibberish ----------------------------------------------------

_GIBBERISH = [
    ":<;>=@?ACBEDFHG IJACKLM NPORQTSVUXWRYJZ\\[^]_Y\\`aY\\NcbedV]_fRWgcZJdVh",
    "@A+ B C>'ED 1 #0>F+1G2 $E H+1/\"E#/+14IJ@K $00#/! L@+$+M+ , 1K $ 0#0*IN)OD",
    "#/0PGQ 2 $>' E 1 SRA )T\"2VU7W@K 100#!X<@+$+M+ Y $K $ 40#0ZMD <#M0#+ [2(\\",
    "5=j$:ODS#0lk ;+ m D #/4GQ+$> $#+ n+ .D ;)O#S+ .)OD #/ED +g& 10'(+ K(/4\\",
]


def test_a_gibberish_page_is_counted_like_a_scanned_page_and_not_indexed(
    rng: random.Random,
) -> None:
    readable = _lines(fx.lines(rng, 12))
    garbled: list[Run] = [(50.0, 760.0, "78&:9;02.4<=3=9?>@*A5CBDE$'3=F)9G&IH'>652&", 20)]
    garbled += _lines(_GIBBERISH * 3)
    doc = parse(_pdf([garbled, readable, garbled]), "pdf")
    assert doc.page_count == 3 and doc.pages_without_text == 2
    assert {b.page for b in doc.blocks} == {2}
    assert "@" not in doc.body and "78&" not in (doc.title or "")
    assert any("pages 1, 3" in w and "unreadable text layer" in w for w in doc.warnings)


def test_a_pdf_of_only_gibberish_fails_with_the_reason() -> None:
    page = _lines(_GIBBERISH * 3)
    with pytest.raises(InvalidInput, match=r"2 with an unreadable text layer \(a broken font"):
        parse_pdf(_pdf([page, page]))


def test_readable_share_tells_words_from_glyph_codes() -> None:
    sentence = "The leader sends heartbeats; followers reply within 150 ms (see Fig. 2)."
    prose = sentence.split()
    assert readable_share(prose)[0] == 1.0
    assert not is_unreadable(prose * 3)
    assert is_unreadable(" ".join(_GIBBERISH).split())
    controls = ["\x0e\x02", "\x15\x1a\x18", "\x19\x02\x11\x12"] * 10
    assert is_unreadable(controls)
    dots = ["3.4", "The", "Banker\u2019s", "Method", *["."] * 60, "23"]  # a table of contents
    assert not is_unreadable(dots * 2)


_PROSE_WORD = st.sampled_from(fx._WORDS).map(lambda w: w.capitalize() if len(w) % 3 else w)


@settings(max_examples=100, deadline=None)
@given(st.lists(_PROSE_WORD, min_size=12, max_size=300))
def test_prose_is_never_unreadable(words: list[str]) -> None:
    assert not is_unreadable(words)


# -- broken page trees ----------------------------------------------------------------------


def _hand_built_pdf(objects: list[str]) -> bytes:
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n{body}\nendobj\n".encode())
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode())
    out.write(f"startxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


_CATALOG = "<< /Type /Catalog /Pages 2 0 R >>"
_TEXT = b"BT /F1 12 Tf 72 720 Td (Hello from the one good page) Tj ET"
_PAGE = (
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
    " /Resources << /Font << /F1 5 0 R >> >> >>"
)
_STREAM = f"<< /Length {len(_TEXT)} >>\nstream\n{_TEXT.decode()}\nendstream"
_FONT = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


@pytest.mark.parametrize(
    "objects",
    [
        [_CATALOG, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"],
        [
            _CATALOG,
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Pages /Kids [2 0 R] /Count 1 /Parent 2 0 R >>",
        ],
    ],
    ids=["self", "two-node"],
)
def test_a_looping_page_tree_is_reported_as_such(objects: list[str]) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(_hand_built_pdf(objects), "pdf")
    assert "looping page tree" in str(caught.value)
    assert "scanned" not in str(caught.value)


def test_a_page_tree_loop_beside_a_good_page_keeps_the_good_page() -> None:
    objects = [_CATALOG, "<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>", _PAGE, _STREAM, _FONT]
    doc = parse_pdf(_hand_built_pdf(objects))
    assert "Hello from the one good page" in doc.body
    assert doc.page_count == 2 and doc.pages_without_text == 1
    assert doc.warnings == ("page 2: could not be loaded (a broken or looping page tree)",)


def _numbered_page(rng: random.Random, lines: list[tuple[str, float]]) -> list[Run]:
    """A page of headings and paragraphs (a heading: a line with the size given; None:
    four lines of body text), each set apart from the next by a wider gap."""
    runs: list[Run] = []
    top = 740.0
    for text, size in lines:
        block = fx.lines(rng, 4) if text == "" else [text]
        runs.extend(_lines(block, top=top, size=size))
        top -= 12 * len(block) + 14
    return runs


def test_numbered_headings_in_the_body_size_that_follow_on_are_headings(
    rng: random.Random,
) -> None:
    page = _numbered_page(
        rng,
        [
            ("1 Introduction", 16),
            ("", 10),
            ("1.1 Terminology", 10),
            ("", 10),
            ("7 Reasons a Reader Counts", 10),  # follows nothing, nothing follows it
            ("", 10),
            ("1. Install the package", 10),  # a numbered list: not headings
            ("2. Run the first command", 10),
            ("", 10),
            ("1.2 Latency", 10),
            ("", 10),
            ("2 Related Work", 16),
            ("", 10),
            ("2.1 Remote Calls", 10),
            ("", 10),
        ],
    )
    doc = parse_pdf(_pdf([page]))
    assert texts(doc, BlockKind.HEADING) == [
        "1 Introduction",
        "1.1 Terminology",
        "1.2 Latency",
        "2 Related Work",
        "2.1 Remote Calls",
    ]
    paths = {b.heading_path for b in doc.blocks if b.kind is BlockKind.PARAGRAPH}
    assert ("1 Introduction", "1.2 Latency") in paths
    assert ("2 Related Work", "2.1 Remote Calls") in paths


def test_roman_sections_and_lettered_subsections_in_the_body_size(rng: random.Random) -> None:
    pages = [
        _numbered_page(
            rng,
            [
                ("Macaroons: Cookies with Caveats", 20),
                ("", 10),
                ("I. INTRODUCTION", 10),
                ("", 10),
                ("II. MOTIVATION AND FOUNDATIONS", 10),
                ("", 10),
                ("C C C requests to the target service", 10),  # a figure's letters
                ("", 10),
                ("A. Concepts and Constructions", 10),
                ("", 10),
            ],
        ),
        _numbered_page(
            rng,
            [
                ("", 10),
                ("B. Threat Model", 10),
                ("", 10),
                ("III. CONCRETE MECHANISMS", 10),
                ("", 10),
                ("A. Encoding Key Identifiers", 10),
                ("", 10),
            ],
        ),
    ]
    doc = parse_pdf(_pdf(pages))
    assert texts(doc, BlockKind.HEADING) == [
        "Macaroons: Cookies with Caveats",
        "I. INTRODUCTION",
        "II. MOTIVATION AND FOUNDATIONS",
        "A. Concepts and Constructions",
        "B. Threat Model",
        "III. CONCRETE MECHANISMS",
        "A. Encoding Key Identifiers",
    ]
    last = [b for b in doc.blocks if b.kind is BlockKind.PARAGRAPH][-1]
    assert last.heading_path[-2:] == ("III. CONCRETE MECHANISMS", "A. Encoding Key Identifiers")
    assert last.page == 2


def test_a_numbered_running_head_is_not_a_heading(rng: random.Random) -> None:
    """The page number and the chapter's title at the top of every page ("2 Epidemic
    Algorithms", "4 Epidemic Algorithms" …) and a section's title with its page number
    ("1.3 Contributions 3") read as numbered headings, but they are running heads."""
    pages = [
        _numbered_page(
            rng,
            [
                (f"{2 * n} Epidemic Algorithms for Databases", 10),
                ("", 10),
                (f"1.{n + 1} Contributions {2 * n + 1}", 10),
                ("", 10),
            ],
        )
        for n in range(1, 5)
    ]
    doc = parse_pdf(_pdf(pages))
    assert texts(doc, BlockKind.HEADING) == []


def test_a_heading_centred_in_one_column_stays_in_its_column(rng: random.Random) -> None:
    """A section heading centred in the left column, its number apart ("I." and
    "INTRODUCTION"), beside a line of the right column's prose: two columns' lines, not
    a wide table row. It was read as a band of its own, the heading and the right
    column's line glued into one paragraph ("I. INTRODUCTION private, incognito Web…")."""
    left = fx.lines(rng, 40, 46)
    right = [f"Right {i} {t}" for i, t in enumerate(fx.lines(rng, 40, 40))]
    runs: list[Run] = []
    y = 700.0
    for i in range(40):
        runs.append((320.0, y, right[i], 10.0))  # the right column goes on evenly
        if i == 12:  # the heading, in the left column, with space above and below it
            runs += [(120.0, y, "I.", 10.0), (136.0, y, "INTRODUCTION", 8.0)]
        elif i not in (11, 13):
            runs.append((50.0, y, left[i], 10.0))
        y -= 12
    doc = parse_pdf(_pdf([runs]))
    assert texts(doc, BlockKind.HEADING) == ["I. INTRODUCTION"]
    body = doc.body
    assert body.index("I. INTRODUCTION") < body.index("Right 0")  # the left column first
    for i in range(39):  # the right column's lines in order, none taken into the heading
        assert body.index(f"Right {i} ") < body.index(f"Right {i + 1} ")
