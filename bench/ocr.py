"""OCR throughput: scanned PDF pages per minute and peak RSS, against the same pages with
a text layer, in the same run.

The pages are generated: N letter-size pages of prose (a heading and 30 lines of 10 pt
text each, different on every page), written twice, as

- a *scanned* PDF: each page drawn with Pillow at 200 dots per inch (a common scanner
  setting) and saved as a PDF of images only, no text layer (what tests/test_ocr.py
  makes); and
- a *text* PDF: the same lines with a text layer (reportlab, as tests/fixtures_formats.py
  writes them) — the baseline.

Each is parsed by ``parse_pdf`` (with ``Ocr()``: DOCSHELF_OCR's defaults) in a process of
its own, so each peak is its own: the parser process's (``VmHWM``) and, for the scan,
tesseract's — measured apart, on the first pages again, through a small wrapper that
starts it without a fork of the parser (a fork's copy would count the parser's pages as
tesseract's). In docshelf both run in the parser's child process (``parse/sandbox.py``),
whose fork costs ~15 ms a file more. Also printed: the share of the pages' words that OCR
read back (word recall).

    .venv/bin/python bench/ocr.py [--pages 20]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import fixtures_formats as fx

DPI = 200
LINES = 30
WORD = re.compile(r"[a-z]+")


def pages_text(n: int) -> list[tuple[str, list[str]]]:
    """N pages: (heading, lines), the same for every run."""
    rng = random.Random(40)
    return [(f"Chapter {i + 1}", fx.lines(rng, LINES, 70)) for i in range(n)]


def scanned_pdf(pages: list[tuple[str, list[str]]]) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    def pixels(points: float) -> int:
        return round(points * DPI / 72)

    heading_font = ImageFont.load_default(size=pixels(16))
    body_font = ImageFont.load_default(size=pixels(10))
    images = []
    for heading, lines in pages:
        page = Image.new("L", (int(8.5 * DPI), 11 * DPI), 255)
        draw = ImageDraw.Draw(page)
        draw.text((DPI, DPI), heading, font=heading_font, fill=0)
        y = DPI + pixels(30)
        for line in lines:
            draw.text((DPI, y), line, font=body_font, fill=0)
            y += pixels(fx.LEADING)
        images.append(page)
    buf = io.BytesIO()
    images[0].save(buf, "PDF", save_all=True, append_images=images[1:], resolution=DPI)
    return buf.getvalue()


def text_pdf(pages: list[tuple[str, list[str]]]) -> bytes:
    return fx.paged_pdf([lines for _, lines in pages], headings=[h for h, _ in pages])


def one(path: Path) -> dict[str, float]:
    """In this process: parse the PDF at ``path`` (its pages: ``pages_text``); the figures
    (the time: the best of three runs for a text layer, one run for a scan)."""
    from docshelf.parse.ocr import Ocr
    from docshelf.parse.pdf import parse_pdf

    data = path.read_bytes()
    seconds = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        parsed = parse_pdf(data, ocr=Ocr())
        seconds = min(seconds, time.perf_counter() - started)
        if parsed.ocr_pages:
            break
    n = parsed.page_count or 0
    pages = pages_text(n)
    wanted = [w for _, lines in pages for line in lines for w in WORD.findall(line.lower())]
    read = set(WORD.findall(parsed.body.lower()))
    return {
        "seconds": seconds,
        "pages": n,
        "ocr_pages": parsed.ocr_pages,
        "recall": sum(w in read for w in wanted) / len(wanted),
        "rss_mb": _peak_rss_mb(),
    }


# Runs tesseract as a child of a small process, and notes its peak RSS (kB) in a file.
_WRAPPER = """#!{python}
import resource, subprocess, sys
done = subprocess.run([{program!r}, *sys.argv[1:]])
with open({log!r}, "a") as log:
    log.write(f"{{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}}\\n")
sys.exit(done.returncode)
"""


def tesseract_peak_mb(data: bytes, folder: Path) -> float:
    """Tesseract's peak RSS over the scan's pages (``one`` run with the wrapper first on
    PATH)."""
    program = shutil.which("tesseract")
    if program is None:
        raise SystemExit("tesseract is not installed (apt-get install tesseract-ocr)")
    log = folder / "peaks"
    wrapper = folder / "bin" / "tesseract"
    wrapper.parent.mkdir()
    wrapper.write_text(_WRAPPER.format(python=sys.executable, program=program, log=str(log)))
    wrapper.chmod(0o755)
    path = folder / "pages.pdf"
    path.write_bytes(data)
    env = {**os.environ, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(
        [sys.executable, __file__, "--one", str(path)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return max(int(line) for line in log.read_text().split()) / 1024


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(data: bytes, folder: Path) -> dict[str, float]:
    """``one`` in a process of its own (made here: the pages' images are not its memory)."""
    path = folder / "pages.pdf"
    path.write_bytes(data)
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(path)], capture_output=True, text=True, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    print(f"{args.pages} letter pages of 10 pt prose ({LINES} lines each), scanned at {DPI} dpi")
    pages = pages_text(args.pages)
    for kind, make in (("text", text_pdf), ("scanned", scanned_pdf)):
        with tempfile.TemporaryDirectory() as folder:
            got = measure(make(pages), Path(folder))
        if kind == "scanned":
            with tempfile.TemporaryDirectory() as folder:
                got["tesseract_mb"] = tesseract_peak_mb(scanned_pdf(pages[:3]), Path(folder))
        rate = got["pages"] / got["seconds"] * 60
        line = (
            f"{kind:8} {rate:9,.0f} pages/min ({got['seconds']:.1f} s), "
            f"parser peak RSS {got['rss_mb']:.0f} MB"
        )
        if kind == "scanned":
            line += (
                f", tesseract peak RSS {got['tesseract_mb']:.0f} MB, "
                f"{got['ocr_pages']:.0f} pages OCR'd, word recall {got['recall']:.1%}"
            )
        print(line)


if __name__ == "__main__":
    main()
