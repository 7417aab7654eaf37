"""Parsing + chunking throughput: PDF pages per second, Markdown files per second.

No model and no store: only ``parse`` and ``chunk_document``. Inputs are
generated: a paper-like PDF (a heading, two columns of 45 lines and a small
table per page, written with reportlab) and Markdown notes (a title and five
sections of a few paragraphs each).

Prints, for one run on this machine:
- PDF pages/s parsing in-process (``parse_pdf``) and through ``parse()``, which
  runs the parser in a child process under the limits;
- the limits' cost per file: ``parse()`` on a 1-page PDF and a small HTML page,
  minus the same parse in-process;
- Markdown files/s (in-process, as ``parse()`` does it);
- with ``--compare``, the PDF libraries side by side on the same file: text
  extraction speed, and whether the left column comes before the right one on
  a two-column page (pypdf and pdfplumber are measured only when installed).

    .venv/bin/python bench/parse.py [--pages 300] [--notes 2000] [--compare]
"""

from __future__ import annotations

import argparse
import functools
import io
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docshelf.chunk import ChunkSettings, chunk_document
from docshelf.model import ParsedDocument, fingerprint
from docshelf.parse import parse
from docshelf.parse.html import parse_html
from docshelf.parse.pdf import parse_pdf
from tests import fixtures_formats as fx

SETTINGS = ChunkSettings()


def parse_and_chunk(data: bytes, parser: Callable[[bytes], ParsedDocument]) -> int:
    doc = parser(data)
    return len(chunk_document(doc, fp=fingerprint(data), title="bench", settings=SETTINGS))


def best_of(runs: int, func: Callable[[], object]) -> float:
    """The fastest of ``runs`` timings, in seconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        times.append(time.perf_counter() - started)
    return min(times)


def median_time(func: Callable[[], object], runs: int = 30) -> float:
    return statistics.median(best_of(1, func) for _ in range(runs))


def markdown_notes(rng: random.Random, n: int) -> list[bytes]:
    notes = []
    for i in range(n):
        parts = [f"# Note {i}\n"]
        for s in range(5):
            paragraphs = "\n\n".join(" ".join(fx.sentence(rng) for _ in range(4)) for _ in range(3))
            parts.append(f"## Section {s}\n\n{paragraphs}\n")
        notes.append("\n".join(parts).encode())
    return notes


def bench_pdf(rng: random.Random, pages: int) -> None:
    data = fx.paper_pdf(rng, pages)
    print(f"PDF: {pages} pages, {len(data) / 1e6:.1f} MB, paper-like (two columns, a table)")
    in_process = best_of(3, lambda: parse_and_chunk(data, parse_pdf))
    limited = best_of(3, lambda: parse_and_chunk(data, lambda d: parse(d, "pdf")))
    print(f"  parse + chunk in-process:  {pages / in_process:7.0f} pages/s")
    print(f"  parse + chunk via parse(): {pages / limited:7.0f} pages/s (child process, limits)")


def bench_overhead(rng: random.Random) -> None:
    pdf = fx.paper_pdf(rng, 1)
    html = b"<html><body><h1>Title</h1>" + b"<p>Some words of text.</p>" * 50 + b"</body></html>"
    cases: list[tuple[str, bytes, Callable[[bytes], ParsedDocument]]] = [
        ("pdf", pdf, parse_pdf),
        ("html", html, parse_html),
    ]
    for name, data, direct in cases:
        parse(data, name)  # the fork server starts on first use
        inner = median_time(functools.partial(direct, data))
        outer = median_time(functools.partial(parse, data, name))
        print(
            f"  limits' cost per {name} file: {1000 * (outer - inner):5.1f} ms "
            f"(median; {1000 * outer:.1f} ms via parse(), {1000 * inner:.1f} ms in-process)"
        )


def bench_markdown(rng: random.Random, n: int) -> None:
    notes = markdown_notes(rng, n)
    size = sum(map(len, notes)) / n / 1000
    elapsed = best_of(
        3, lambda: [parse_and_chunk(d, lambda b: parse(b, "markdown")) for d in notes]
    )
    print(f"Markdown: {n} notes of {size:.1f} kB")
    print(f"  parse + chunk: {n / elapsed:7.0f} files/s")


# -- library comparison -------------------------------------------------------------------


def compare(rng: random.Random, pages: int) -> None:
    data = fx.paper_pdf(rng, pages)
    two_columns = fx.two_column_pdf(rng, rows=30)
    print(f"\nPDF libraries on the same {pages}-page file (text extraction only, best of 3):")
    print(f"  {'library':40} {'pages/s':>8}  two columns in order?")
    for name, extract in _extractors():
        elapsed = best_of(3, lambda extract=extract: extract(data))  # type: ignore[misc]
        text = extract(two_columns)
        in_order = text.find("Right 0 ") > text.find("Left 29 ") >= 0
        print(f"  {name:40} {pages / elapsed:8.0f}  {'yes' if in_order else 'no'}")


def _extractors() -> list[tuple[str, Callable[[bytes], str]]]:
    import pypdfium2 as pdfium

    def pdfium_text(data: bytes) -> str:
        pdf = pdfium.PdfDocument(data)
        return "\n".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))

    found = [
        ("docshelf parse_pdf (pypdfium2 + layout)", lambda d: parse_pdf(d).body),
        ("pypdfium2 get_text_range", pdfium_text),
    ]
    try:
        import pypdf

        def pypdf_text(data: bytes) -> str:
            return "\n".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages)

        def pypdf_layout(data: bytes) -> str:
            pages = pypdf.PdfReader(io.BytesIO(data)).pages
            return "\n".join(p.extract_text(extraction_mode="layout") for p in pages)

        found += [("pypdf extract_text", pypdf_text), ("pypdf extract_text (layout)", pypdf_layout)]
    except ImportError:
        pass
    try:
        import pdfplumber

        def plumber_text(data: bytes) -> str:
            with pdfplumber.open(io.BytesIO(data)) as pdf:
                return "\n".join(p.extract_text() or "" for p in pdf.pages)

        found.append(("pdfplumber extract_text (pdfminer.six)", plumber_text))
    except ImportError:
        pass
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--pages", type=int, default=300, help="pages of the PDF")
    ap.add_argument("--notes", type=int, default=2000, help="Markdown notes")
    ap.add_argument("--compare", action="store_true", help="compare PDF libraries too")
    args = ap.parse_args()
    rng = random.Random(11)
    bench_pdf(rng, args.pages)
    bench_overhead(rng)
    bench_markdown(rng, args.notes)
    if args.compare:
        compare(rng, min(args.pages, 60))


if __name__ == "__main__":
    main()
