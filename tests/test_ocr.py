"""OCR of pages without a usable text layer (issue 40): a scanned PDF made here, from
images of text with no text layer, is searchable and cited by page; its hits say they
were read by OCR; a page whose OCR fails is lost alone; with OCR off (or tesseract
missing) a scan is reported as before.

The tests that read with tesseract need Debian's ``tesseract-ocr`` (``make install``
adds it): they skip without it, and fail under CI=true."""

from __future__ import annotations

import io
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw, ImageFont

from docshelf import views
from docshelf.config import ParseLimits, ocr_languages
from docshelf.errors import InvalidInput
from docshelf.failures import Decided, decided_by
from docshelf.parse import parse
from docshelf.parse.ocr import Ocr, OcrFailed, paragraphs, read_image, unavailable
from docshelf.parse.pdf import parse_pdf
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests.fixtures_formats import paged_pdf
from tests.optional import require_program
from tests.servers import gone, wait_for

DPI = 200  # of the page images: a common scanner's setting

HARBOUR = [
    "The harbour master keeps a ledger of ships.",
    "Every arrival is written down with its cargo.",
    "Fishing boats leave before the morning tide.",
]
BIRDS = [
    "The cormorant dries its wings on the north pier.",
    "Gulls follow the trawlers back to the quay.",
    "The lighthouse keeper counts the birds at dawn.",
]
ROPES = [
    "Sailors splice the mooring ropes by hand.",
    "A frayed rope is replaced before winter storms.",
]


def scanned_page(lines: Sequence[str], heading: str | None = None) -> Image.Image:
    """A letter-size page as a scanner would see it: black text drawn on white, in the
    sizes of ``paged_pdf``'s (a 16 pt heading, 10 pt lines)."""
    page = Image.new("L", (int(8.5 * DPI), 11 * DPI), 255)
    draw = ImageDraw.Draw(page)
    y = DPI
    if heading:
        draw.text((DPI, y), heading, font=ImageFont.load_default(size=_pixels(16)), fill=0)
        y += _pixels(30)
    body = ImageFont.load_default(size=_pixels(10))
    for line in lines:
        draw.text((DPI, y), line, font=body, fill=0)
        y += _pixels(16)
    return page


def _pixels(points: float) -> int:
    return round(points * DPI / 72)


def scanned_pdf(*pages: Image.Image) -> bytes:
    """The page images as a PDF of images only (Pillow's writer): no text layer at all."""
    buf = io.BytesIO()
    pages[0].save(buf, "PDF", save_all=True, append_images=list(pages[1:]), resolution=DPI)
    return buf.getvalue()


def joined(*pdfs: bytes) -> bytes:
    """The PDFs' pages, one after another, in one PDF."""
    out = pdfium.PdfDocument.new()
    for data in pdfs:
        out.import_pages(pdfium.PdfDocument(data))
    buf = io.BytesIO()
    out.save(buf)
    return buf.getvalue()


@pytest.fixture
def tesseract() -> str:
    return require_program("tesseract", "apt-get install tesseract-ocr, or make install")


# -- a scanned PDF through the whole pipeline ------------------------------------------------


def test_a_scanned_pdf_is_searchable_and_cited_by_page(
    tesseract: str, shelf: Shelf, tmp_path: Path
) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    # page 2 opens with a heading: its text is a snippet of its own, cited by page 2 alone
    pdf = scanned_pdf(
        scanned_page([*HARBOUR, *ROPES], "Harbour records"), scanned_page(BIRDS, "Birds")
    )
    assert not pdfium.PdfDocument(pdf)[1].get_textpage().count_chars()  # no text layer
    (folder / "harbour.pdf").write_bytes(pdf)
    report = shelf.add(folder)
    assert report.added == 1, report.failures
    (doc,) = shelf.documents()
    assert (doc.page_count, doc.ocr_pages, doc.pages_without_text) == (2, 2, 0)
    hit = shelf.search("cormorant", mode="lexical").hits[0]
    assert hit.document.id == doc.id
    assert (hit.citation.page_start, hit.citation.page_end) == (2, 2)
    assert hit.chunk.heading_path[-1] == "Birds"
    assert hit.citation.label.endswith("p.2)")
    assert hit.chunk.ocr_confidence is not None and 0.5 < hit.chunk.ocr_confidence <= 1
    shown = views.hit(hit)
    assert shown["ocr"] == {"confidence": hit.chunk.ocr_confidence}
    assert shown["citation"]["page_start"] == 2
    first = shelf.search("ledger", mode="lexical").hits[0]
    assert first.citation.page_start == 1
    status = shelf.status()
    assert (status.ocr_pages, status.pages_without_text) == (2, 0)
    assert views.status(status)["ocr_pages"] == 2


def test_the_cli_marks_a_hit_read_by_ocr_and_status_counts_the_pages(
    tesseract: str, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer.testing

    from tests.test_cli_daily import envelope, human

    # stdout counts as a terminal (human output), as in tests/test_cli_daily.py
    monkeypatch.setattr(
        typer.testing._NamedTextIOWrapper,
        "isatty",
        lambda self: self.name == "<stdout>",
        raising=False,
    )
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    folder = tmp_path / "scans"
    folder.mkdir()
    # each page opens with a heading: a snippet each, one from a text layer, one by OCR
    text_page = paged_pdf([[*ROPES, *HARBOUR, "Nothing here was scanned."]], headings=["Ropes"])
    scan = scanned_pdf(scanned_page(BIRDS, "Birds"))
    (folder / "mixed.pdf").write_bytes(joined(text_page, scan))
    with Shelf(isolated_home, embedder=None) as shelf:
        assert shelf.add(folder).added == 1
    hits = envelope("search", "cormorant", "--mode", "lexical")["result"]["hits"]
    assert hits[0]["citation"]["page_start"] == 2 and "confidence" in hits[0]["ocr"]
    rope = envelope("search", "splice", "--mode", "lexical")["result"]["hits"][0]
    assert rope["citation"]["page_start"] == 1 and "ocr" not in rope  # a text layer's
    line = next(s for s in human("search", "cormorant").splitlines() if s.startswith("1. "))
    assert "p.2)  OCR " in line and line.rstrip().endswith("%")
    assert "1 page read by OCR" in human("status")
    assert envelope("status")["result"]["ocr_pages"] == 1


# -- a page lost alone; OCR off; OCR unavailable -----------------------------------------------


def fake_tesseract(folder: Path, script: str) -> Path:
    """A ``tesseract`` on PATH that runs ``script`` (sh) instead, in ``folder``."""
    folder.mkdir(exist_ok=True)
    program = folder / "tesseract"
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signals are Linux's")
def test_tesseract_ends_with_the_process_that_started_it(tmp_path: Path) -> None:
    """The parser's process killed mid-OCR (the sandbox kills its child at a file's limits)
    takes tesseract with it, though nothing ran between the fork and the program."""
    started = tmp_path / "pid"
    fake_tesseract(
        tmp_path / "bin", f"echo $$ > {started}.part && mv {started}.part {started}\nexec sleep 300"
    )
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from docshelf.parse.ocr import Ocr, read_image; read_image(b'', Ocr())",
        ],
        env=env,
    )
    try:
        wait_for(lambda: started.exists() or reader.poll() is not None, "the fake tesseract")
        assert started.exists(), "the fake tesseract never started"
        pid = int(started.read_text())
        assert not gone(pid)
    finally:
        reader.kill()
        reader.wait()
    try:
        wait_for(lambda: gone(pid), "tesseract to end with the process that started it")
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_page_whose_ocr_fails_loses_only_that_page(
    tesseract: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second of three pages crashes tesseract: the first and third are read, the
    second is counted without text and named in a warning."""
    calls = tmp_path / "calls"
    fake_tesseract(
        tmp_path / "bin",
        f'[ "$1" = --list-langs ] && exec {tesseract} "$@"\n'
        f'echo x >> {calls}\n[ "$(wc -l < {calls})" -eq 2 ] && kill -SEGV $$\n'
        f'exec {tesseract} "$@"',
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    pages = (scanned_page(HARBOUR), scanned_page(BIRDS), scanned_page(ROPES))
    parsed = parse_pdf(scanned_pdf(*pages), ocr=Ocr())
    assert (parsed.page_count, parsed.ocr_pages, parsed.pages_without_text) == (3, 2, 1)
    assert {b.page for b in parsed.blocks} == {1, 3}
    assert all(b.ocr_confidence is not None for b in parsed.blocks)
    assert "mooring ropes" in parsed.body and "cormorant" not in parsed.body
    assert "page 2: OCR failed (tesseract crashed (signal 11)); not indexed" in parsed.warnings


def test_an_image_over_its_time_limit_is_given_up_and_its_tesseract_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    fake_tesseract(tmp_path / "bin", f"echo $$ > {pid_file}\nexec sleep 60")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(OcrFailed, match=r"^over its time limit \(0.5 s\)$"):
        read_image(b"P5\n1 1\n255\n\xff", Ocr(timeout_s=0.5), dpi=300)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: not left running
        os.kill(pid, 0)


def test_ocr_off_reports_scanned_pages_as_before(tesseract: str) -> None:
    scan = scanned_pdf(scanned_page(HARBOUR), scanned_page(BIRDS))
    with pytest.raises(InvalidInput, match=r"^no text layer on any of 2 pages \(scanned\?\)$"):
        parse(scan, "pdf", ParseLimits(ocr="off"))
    mixed = joined(paged_pdf([ROPES]), scan)
    parsed = parse(mixed, "pdf", ParseLimits(ocr="off"))
    assert (parsed.pages_without_text, parsed.ocr_pages) == (2, 0)
    assert parsed.warnings == ("pages 2-3: no text layer (scanned?)",)
    assert all(b.ocr_confidence is None for b in parsed.blocks)


def test_without_tesseract_ocr_is_named_unavailable_and_pages_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract on it
    assert unavailable(Ocr()) == (
        "OCR unavailable: tesseract is not installed (apt-get install tesseract-ocr)"
    )
    scan = scanned_pdf(scanned_page(HARBOUR))
    with pytest.raises(InvalidInput) as failed:
        parse_pdf(scan, ocr=Ocr())
    assert failed.value.message == (
        "no text layer on any of 1 pages (scanned?); "
        "OCR unavailable: tesseract is not installed (apt-get install tesseract-ocr)"
    )
    assert decided_by(failed.value.message) is Decided.OCR  # read again once OCR can run
    parsed = parse_pdf(joined(paged_pdf([ROPES]), scan), ocr=Ocr())
    assert parsed.pages_without_text == 1
    assert parsed.warnings == (
        "page 2: no text layer (scanned?)",
        "OCR unavailable: tesseract is not installed (apt-get install tesseract-ocr)",
    )


def test_a_language_without_its_data_is_named(tesseract: str) -> None:
    why = unavailable(Ocr(languages="eng+xyz_q"))
    assert why is not None and "no data for xyz_q" in why and "tesseract-ocr-xyz-q" in why


# -- settings, and tesseract's output read -----------------------------------------------------


def test_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = ParseLimits.from_env()
    assert (limits.ocr, limits.ocr_languages, limits.ocr_images) == ("auto", "eng", False)
    assert Ocr.of(limits) == Ocr("eng", 30.0)
    monkeypatch.setenv("DOCSHELF_OCR", "off")
    monkeypatch.setenv("DOCSHELF_OCR_LANGUAGES", "eng, deu+chi_sim")
    monkeypatch.setenv("DOCSHELF_OCR_IMAGES", "1")
    monkeypatch.setenv("DOCSHELF_PARSE_TIMEOUT_S", "10")
    limits = ParseLimits.from_env()
    assert (limits.ocr, limits.ocr_languages, limits.ocr_images) == ("off", "eng+deu+chi_sim", True)
    assert Ocr.of(limits) is None
    assert Ocr.of(ParseLimits(ocr_languages="deu", timeout_s=10)) == Ocr("deu", 5.0)
    monkeypatch.setenv("DOCSHELF_OCR", "sometimes")
    with pytest.raises(InvalidInput, match="DOCSHELF_OCR='sometimes' is not known"):
        ParseLimits.from_env()
    with pytest.raises(InvalidInput, match="not a tesseract language code"):
        ocr_languages("eng;rm -rf")
    assert ocr_languages("") == "eng"


TSV = "\n".join(
    [
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext",
        "1\t1\t0\t0\t0\t0\t0\t0\t2550\t3300\t-1\t",
        "4\t1\t1\t1\t1\t0\t300\t300\t900\t60\t-1\t",
        "5\t1\t1\t1\t1\t1\t300\t300\t200\t50\t96\tHarbour",
        "5\t1\t1\t1\t1\t2\t520\t300\t200\t60\t90\tledger",
        "5\t1\t1\t1\t2\t1\t300\t380\t200\t50\t94\tships",
        "5\t1\t1\t1\t2\t2\t520\t380\t200\t50\t-1\t ",
        "5\t1\t2\t1\t1\t1\t300\t900\t20\t20\t12\t~",  # a speck read as a letter
        "5\t1\t2\t1\t1\t2\t330\t900\t20\t20\t30\t|",
    ]
)


def test_tesseract_paragraphs_with_their_confidence_and_without_noise() -> None:
    (read,) = paragraphs(TSV)
    assert read.lines == ("Harbour ledger", "ships")
    assert read.confidence == pytest.approx((0.96 + 0.90 + 0.94) / 3, abs=1e-4)
    assert (read.height, read.words) == (55.0, 3)  # the median of the lines' heights
    assert paragraphs(TSV.split("\n")[0]) == []


def test_a_real_scan_is_read_with_its_words(tesseract: str) -> None:
    image = io.BytesIO()
    scanned_page(BIRDS).save(image, "PNG", dpi=(DPI, DPI))
    read = read_image(image.getvalue(), Ocr())
    text = " ".join(line for p in read for line in p.lines)
    assert "cormorant" in text and "lighthouse" in text
    assert all(0.5 < p.confidence <= 1 for p in read)
    assert shutil.which("tesseract") == tesseract


# -- images in a vault (DOCSHELF_OCR_IMAGES) ---------------------------------------------------


def image_bytes(image: Image.Image, kind: str, **options: object) -> bytes:
    buf = io.BytesIO()
    image.save(buf, kind, **options)
    return buf.getvalue()


def test_images_in_a_vault_are_read_when_the_setting_asks(
    tesseract: str, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "note.md").write_text("# Trip\n\nSee the whiteboard photo.\n")
    board = scanned_page(BIRDS).crop((0, 0, int(8.5 * DPI), 4 * DPI))
    (vault / "whiteboard.png").write_bytes(image_bytes(board, "PNG", dpi=(DPI, DPI)))
    (vault / "sky.jpg").write_bytes(image_bytes(Image.new("L", (300, 200), 200), "JPEG"))
    with Shelf(isolated_home, embedder=None) as shelf:
        report = shelf.add(vault)
        assert (report.added, report.failures) == (1, [])  # images are not documents ...
    monkeypatch.setenv("DOCSHELF_OCR_IMAGES", "1")  # ... unless the setting asks
    with Shelf(isolated_home, embedder=None) as shelf:
        report = shelf.sync()
        assert report.added == 1
        reasons = {Path(f.path).name: f.reason for f in report.failures}
        assert reasons == {"sky.jpg": "no text found in the image by OCR"}  # reported
        hit = shelf.search("cormorant", mode="lexical").hits[0]
        assert hit.document.file_type == "image" and hit.document.title == "whiteboard"
        assert hit.document.ocr_pages == 1 and hit.citation.page_start is None
        assert views.hit(hit)["ocr"]["confidence"] > 0.5
        assert shelf.status().ocr_pages == 1
        images = SearchFilters(file_type="image")
        assert shelf.search("cormorant", mode="lexical", filters=images).hits


def test_an_image_is_sized_from_its_header_and_refused_when_huge() -> None:
    from docshelf.parse.image import image_size, parse_image

    small = Image.new("L", (640, 480), 255)
    assert image_size(image_bytes(small, "PNG")) == (640, 480)
    assert image_size(image_bytes(small, "JPEG")) == (640, 480)
    assert image_size(image_bytes(small, "JPEG", progressive=True)) == (640, 480)
    huge = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (50_000).to_bytes(4, "big") * 2
    with pytest.raises(InvalidInput, match=r"^image too large to OCR: 50000 x 50000 pixels"):
        parse_image(huge, ocr=Ocr())
    with pytest.raises(InvalidInput, match=r"^not a PNG or JPEG image$"):
        parse_image(b"GIF89a....", ocr=Ocr())
    with pytest.raises(InvalidInput, match=r"OCR is off"):
        parse_image(image_bytes(small, "PNG"), ocr=None)


def test_a_scan_that_failed_without_ocr_is_read_again_once_ocr_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure for want of OCR is settled under what OCR could do (``settled.Keys``):
    the next sync passes over the file until tesseract is installed, OCR turned on or
    its languages changed."""
    import dataclasses

    from docshelf.config import Settings
    from docshelf.ingest.settled import Keys

    reason = "no text layer on any of 1 pages (scanned?)"
    settings = Settings.from_env(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no tesseract yet
    without = Keys.of(settings)(reason)
    off = Keys.of(dataclasses.replace(settings, parse=ParseLimits(ocr="off")))(reason)
    assert without == off and without is not None and without.endswith("/ocr -")
    fake_tesseract(tmp_path / "bin", 'echo "List of available languages (2):"; echo eng; echo deu')
    installed = Keys.of(settings)(reason)
    assert installed is not None and installed.endswith("/ocr eng") and installed != without
    german = dataclasses.replace(settings, parse=ParseLimits(ocr_languages="deu"))
    assert Keys.of(german)(reason) != installed
    assert Keys.of(settings)("truncated PDF (no %%EOF marker)") == without.replace("ocr -", "-")
