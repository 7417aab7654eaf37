"""The chunker's version, which a library records (meta ``chunker_version``) of the
parsers and chunker that made its chunks: raised whenever the same file and settings
would give other chunks or chunk columns, so ``status`` can tell a library made by an
older one that a ``reindex`` is due."""

from __future__ import annotations

# 1: every library before the number was recorded; then what each version changed (what
# ``status`` names):
CHANGES = {
    2: "a snippet that packs short sections is cited under the one the query's words are in",
    3: "reStructuredText keeps the text of Sphinx directives (`py:data`, `versionadded`, "
    "`autofunction` …), PDFs find numbered section headings set in the body's size and "
    "keep each column's lines apart, and Markdown takes no tags from HTML",
    4: "PDF pages without a usable text layer (scans) are read by OCR when tesseract is "
    "installed, and cited by page",
    5: "a Markdown note whose title is only a template's placeholder (`{{title}}`) is "
    "titled by its file's name",
    6: "a block of text many files repeat (a footer on every note) is recognised and never "
    "cited as a hit",
    7: "PDF titles and headings are no longer authors, affiliations, dates or running heads "
    "with page numbers (those running heads leave the text), and a column with formulas "
    "set in cells is read as a column",
    8: "a PDF snippet that runs onto a second page is cited at the page its matching words are on",
}
CHUNKER_VERSION = max(CHANGES)
CHUNKER_META = "chunker_version"


def reindex_due(recorded: str | None) -> str | None:
    """What ``status`` says of a library whose meta ``chunker_version`` is ``recorded``
    (None: made before the number was kept), or None when its chunks are current."""
    try:
        version = int(recorded) if recorded is not None else 1
    except ValueError:
        version = 1
    if version >= CHUNKER_VERSION:
        return None
    since = "; ".join(CHANGES[v] for v in sorted(CHANGES) if v > version)
    return (
        f"The library was indexed by older parsers and chunker (version {version}; this "
        f"one is {CHUNKER_VERSION}: {since}). Search works as before; run `docshelf "
        "reindex` to re-index every file (search keeps answering meanwhile)."
    )
