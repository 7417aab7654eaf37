"""PDF text quality: docshelf's parser against pdfminer.six / pdfplumber, on real PDFs.

For every PDF in a folder (by default the 20 papers of
``../shared/data/docqa-dev/corpora/pdfs``), each extractor's output is
scored on what makes search results wrong, with the same rules for all:

- **split words**: a word broken at a line end and left broken — two tokens
  ``a b`` whose join ``ab`` occurs elsewhere in the same output while ``a``
  (or ``b``) never occurs on its own ("produc tion", "Dap per"), plus
  hyphenated breaks left in (``produc-`` at a line end, then ``tion``, whose
  join occurs elsewhere);
- **prose tables**: tables with lines of running text in their cells — at
  least two cells (and a third of the rows) of six or more words ("| of the
  research | …");
- **bad headings**: headings that are a caption (``Figure 3:``), contain a
  formula (``=``), are a bare page number, or repeat on three or more pages;
- **gibberish pages indexed**: pages of the output whose words mostly do not
  look like words (``parse.pdf_text.is_unreadable``), i.e. a broken font
  encoding passed on as text; and pages the extractor reported as without
  text;
- **quotes found**: with ``--qa`` (by default the docqa-dev ``qa.jsonl``),
  how many of the questions' evidence quotes (verbatim sentences from the
  PDFs) occur on their page of the output, compared case-folded, NFKC
  and with whitespace collapsed — what a phrase search would see;
- **time** (seconds for the whole folder, one process, one core) and **peak
  RSS** of the process that parsed it.

Extractors: ``docshelf`` (``parse_pdf``: pypdfium2 + ``parse/pdf_layout.py``),
``pdfminer`` (pdfminer.six ``extract_pages`` with its default layout
analysis, text boxes in its reading order) and ``pdfplumber`` (its
``extract_text`` per page and ``find_tables`` for tables, ruling lines as
evidence). pdfminer.six and pdfplumber are not docshelf dependencies: install
them into the venv to compare (``pip install -e ".[pdfcompare]"``); without them only
docshelf is measured.

    .venv/bin/python bench/pdf_quality.py [--folder DIR] [--only docshelf,pdfminer,pdfplumber]

To measure an older docshelf, put its ``src`` first on ``PYTHONPATH``
(``git archive REV src | tar -x -C /tmp/old``; ``PYTHONPATH=/tmp/old/src``).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import multiprocessing
import re
import resource
import sys
import time
import types
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_FOLDER = (
    Path(__file__).resolve().parents[1]
    / ".."
    / "shared"
    / "data"
    / "docqa-dev"
    / "corpora"
    / "pdfs"
)
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)
_LINE_HYPHEN = re.compile(r"([^\W\d_]+)-\n([^\W\d_]+)")
_CAPTION = re.compile(r"(?:fig(?:ure)?|table|tab)\.?\s*\d+\s*[:.]", re.I)
_PAGE_NUMBER = re.compile(r"(?:page\s+)?[\divxlc]{1,6}", re.I)


@dataclass
class Output:
    """What one extractor made of one PDF: text per page, tables (rows of cells), headings."""

    pages: list[str]
    tables: list[list[list[str]]] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)  # (page, text)
    pages_reported: int = 0  # pages the extractor itself reported as without (readable) text
    failed: str | None = None


@dataclass
class Score:
    files: int = 0
    pages: int = 0
    split_words: int = 0
    prose_tables: int = 0
    tables: int = 0
    bad_headings: int = 0
    headings: int = 0
    gibberish_indexed: int = 0
    pages_reported: int = 0
    failed: int = 0
    quotes: int = 0
    quotes_found: int = 0
    seconds: float = 0.0
    peak_mb: float = 0.0


# -- extractors ----------------------------------------------------------------------------


def docshelf(data: bytes) -> Output:
    from docshelf.errors import InvalidInput
    from docshelf.model import BlockKind
    from docshelf.parse.pdf import parse_pdf

    try:
        doc = parse_pdf(data)
    except InvalidInput as exc:
        return Output([], failed=str(exc))
    pages: dict[int, list[str]] = {}
    out = Output([], pages_reported=doc.pages_without_text)
    for block in doc.blocks:
        text = doc.body[block.start : block.end]
        page = block.page or 1
        pages.setdefault(page, []).append(text)
        if block.kind is BlockKind.TABLE:
            out.tables.append([row.split(" | ") for row in text.split("\n")])
        elif block.kind is BlockKind.HEADING:
            out.headings.append((page, text))
    out.pages = ["\n".join(pages.get(p, [])) for p in range(1, (doc.page_count or 0) + 1)]
    return out


def pdfminer(data: bytes) -> Output:
    import io

    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    try:
        pages = [
            "".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
            for page in extract_pages(io.BytesIO(data))
        ]
    except Exception as exc:  # a library's own error: counted as a failed file
        return Output([], failed=f"{type(exc).__name__}: {exc}")
    return Output(pages)


def pdfplumber(data: bytes) -> Output:
    import io

    import pdfplumber as plumber

    out = Output([])
    try:
        with plumber.open(io.BytesIO(data)) as pdf:
            for page in pdf.pages:
                out.pages.append(page.extract_text() or "")
                for table in page.find_tables():
                    rows = table.extract()
                    out.tables.append([[c or "" for c in row] for row in rows])
    except Exception as exc:
        return Output([], failed=f"{type(exc).__name__}: {exc}")
    return out


EXTRACTORS: dict[str, Callable[[bytes], Output]] = {
    "docshelf": docshelf,
    "pdfminer": pdfminer,
    "pdfplumber": pdfplumber,
}


# -- scoring -------------------------------------------------------------------------------


def split_words(text: str) -> int:
    """Words broken at a line end and left broken in ``text`` (see the module doc)."""
    tokens = [t.casefold() for t in _TOKEN.findall(text)]
    counts = Counter(tokens)
    pairs = Counter(itertools.pairwise(tokens))
    broken = 0
    for (a, b), n in pairs.items():
        if len(a) >= 2 and len(b) >= 2 and counts[a + b] and min(counts[a], counts[b]) <= n:
            broken += n
    for match in _LINE_HYPHEN.finditer(text):
        if counts[(match.group(1) + match.group(2)).casefold()]:
            broken += 1
    return broken


def prose_table(rows: list[list[str]]) -> bool:
    long_cells = sum(len(_TOKEN.findall(cell)) >= 6 for row in rows for cell in row)
    return long_cells >= max(2, len(rows) / 3)


def bad_headings(headings: list[tuple[int, str]]) -> int:
    pages: dict[str, set[int]] = {}
    for page, text in headings:
        pages.setdefault(" ".join(text.casefold().split()), set()).add(page)
    bad = 0
    for _, text in headings:
        key = " ".join(text.casefold().split())
        bad += bool(
            _CAPTION.match(text.strip())
            or "=" in text
            or _PAGE_NUMBER.fullmatch(text.strip())
            or len(pages[key]) >= 3
        )
    return bad


def _this_trees_quality_check() -> Callable[[Iterable[str]], bool]:
    """``is_unreadable`` from this checkout's ``parse/pdf_text.py`` (a pure module, with
    its thresholds in ``parse/pdf_thresholds.py``), so an older docshelf on PYTHONPATH is
    scored by the same rule."""
    parse = Path(__file__).resolve().parents[1] / "src" / "docshelf" / "parse"
    thresholds = "docshelf.parse.pdf_thresholds"
    saved = sys.modules.get(thresholds)
    # pdf_text imports its thresholds by name: this checkout's, whichever docshelf is found.
    sys.modules[thresholds] = _load("_bench_pdf_thresholds", parse / "pdf_thresholds.py")
    try:
        module = _load("_bench_pdf_text", parse / "pdf_text.py")
    finally:
        if saved is None:
            del sys.modules[thresholds]
        else:
            sys.modules[thresholds] = saved
    check: Callable[[Iterable[str]], bool] = module.is_unreadable
    return check


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gibberish_pages(pages: Iterable[str]) -> int:
    is_unreadable = _this_trees_quality_check()
    return sum(is_unreadable(page.split()) for page in pages)


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def load_quotes(qa: Path | None, folder: Path) -> dict[str, list[tuple[int, str]]]:
    """{PDF path under ``folder``: [(page, evidence quote)]} from a docqa-style qa.jsonl."""
    quotes: dict[str, list[tuple[int, str]]] = {}
    if qa is None or not qa.exists():
        return quotes
    for line in qa.read_text().splitlines():
        item = json.loads(line)
        for answer in item["answers"]:
            if answer.get("page") and answer["path"].endswith(".pdf"):
                quotes.setdefault(answer["path"], []).append((answer["page"], item["evidence"]))
    return quotes


def score(
    name: str,
    files: list[Path],
    quotes: dict[str, list[tuple[int, str]]],
    folder: Path,
    queue: multiprocessing.Queue[tuple[Score, list[str]]],
) -> None:
    """Run one extractor over the files (in a process of its own) and put its score."""
    extractor = EXTRACTORS[name]
    total = Score()
    notes: list[str] = []
    for path in files:
        data = path.read_bytes()
        started = time.perf_counter()
        try:
            out = extractor(data)
        except ImportError as exc:
            queue.put((Score(), [f"not measured: {exc}"]))
            return
        total.seconds += time.perf_counter() - started
        total.files += 1
        if out.failed:
            total.failed += 1
            total.quotes += len(quotes.get(path.relative_to(folder).as_posix(), []))
            notes.append(f"{path.name}: {out.failed}")
            continue
        text = "\n".join(out.pages)
        total.pages += len(out.pages)
        total.split_words += split_words(text)
        total.tables += len(out.tables)
        total.prose_tables += sum(prose_table(t) for t in out.tables)
        total.headings += len(out.headings)
        total.bad_headings += bad_headings(out.headings)
        total.gibberish_indexed += gibberish_pages(out.pages)
        total.pages_reported += out.pages_reported
        for page, quote in quotes.get(path.relative_to(folder).as_posix(), []):
            total.quotes += 1
            on_page = out.pages[page - 1] if page <= len(out.pages) else ""
            total.quotes_found += _normal(quote) in _normal(on_page)
    total.peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put((total, notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--only", default=",".join(EXTRACTORS))
    parser.add_argument("--qa", type=Path, default=DEFAULT_FOLDER.parents[1] / "qa.jsonl")
    args = parser.parse_args()
    files = sorted(args.folder.rglob("*.pdf"))
    quotes = load_quotes(args.qa, args.folder)
    if not files:
        sys.exit(f"no PDFs under {args.folder}")
    print(f"{len(files)} PDFs under {args.folder.resolve().name}/")
    header = (
        "extractor | files failed | pages | split words | tables (prose) | headings (bad) | "
        "gibberish pages indexed | pages reported without text | quotes found | seconds | peak MB"
    )
    print(header)
    print(" | ".join("---" for _ in header.split(" | ")))
    context = multiprocessing.get_context("spawn")
    for name in args.only.split(","):
        queue: multiprocessing.Queue[tuple[Score, list[str]]] = context.Queue()
        process = context.Process(target=score, args=(name, files, quotes, args.folder, queue))
        process.start()
        try:
            s, notes = queue.get()
        except KeyboardInterrupt:
            process.kill()
            raise
        process.join()
        if s.files == 0:
            print(f"{name} | {notes[0] if notes else 'no files'}")
            continue
        print(
            f"{name} | {s.failed} | {s.pages} | {s.split_words} | {s.tables} ({s.prose_tables}) | "
            f"{s.headings} ({s.bad_headings}) | {s.gibberish_indexed} | {s.pages_reported} | "
            f"{s.quotes_found}/{s.quotes} | {s.seconds:.1f} | {s.peak_mb:.0f}"
        )
        for note in notes:
            print(f"    {name}: {note}")


if __name__ == "__main__":
    main()
