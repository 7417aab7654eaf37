"""What a person reads around a hit: the section it is in by its heading, or that section
with its neighbours — bounded in characters, the hit in view (issue 42).

A document's section chunks are the chunker's (1200 to 2200 tokens, packed across
headings: in a short file one holds half the file or more); the sections here are the
document's own, by heading, found from its snippets: where a snippet's heading path
changes, and where an inner heading starts inside one (``Chunk.inner``). A heading's
section runs to the next heading at its level or above, its subsections included.

- **section**: the section of the heading the hit is cited under; when that section is
  no more than the hit itself, its parent's (and so on up).
- **neighbourhood**: that section, with the sections next to it before and after (at
  its level or above: a first subsection's neighbour before is its parent's opening).

Both are whole snippets, at most ``SECTION_CHARS`` / ``NEIGHBOURHOOD_CHARS``
characters: a longer span is cut to the snippets nearest the hit, taken alternately
before and after it, and says it was cut (``Span.cut_before``, ``cut_after``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from docshelf.model import Chunk

# About 1,000 words, two printed pages: on docqa-dev, the whole of 99% of the sections
# below a document's title in the vault and the Flask docs, 88% in the Rust book, 73% in
# the PDFs (docs/benchmarks/what-people-read.md). A neighbourhood is twice it.
SECTION_CHARS = 6_000
NEIGHBOURHOOD_CHARS = 12_000
JOIN = "\n\n"  # between two chunks' texts in a context's text


@dataclass(frozen=True)
class Mark:
    """Where a heading's text starts in the body (or the first snippet's), and its path."""

    start: int
    path: tuple[str, ...]


@dataclass(frozen=True)
class Span:
    """The snippets ``lo``:``hi`` of a document's snippets, and whether the section (or
    neighbourhood) goes on before or after them."""

    lo: int
    hi: int
    cut_before: bool = False
    cut_after: bool = False


def marks(snippets: Sequence[Chunk]) -> list[Mark]:
    """The heading marks of a document from its snippets, in order: the first snippet's,
    each snippet whose heading path differs from the one before it, each inner heading."""
    out: list[Mark] = []
    current: tuple[str, ...] | None = None
    for s in snippets:
        if s.heading_path != current:
            out.append(Mark(s.start, s.heading_path))
            current = s.heading_path
        for inner in s.inner:
            out.append(Mark(inner.start, inner.heading_path))
            current = inner.heading_path
    return out


def section_of(found: Sequence[Mark], at: int, path: tuple[str, ...], end: int) -> tuple[int, int]:
    """The body span ``[start, end)`` of the section of ``path`` that holds offset ``at``
    (``end``: the body's): the run of marks around ``at`` whose paths begin with ``path``.
    If the mark at ``at`` is not under ``path``, only its own part."""
    i = _index_at(found, at)
    n = len(path)
    lo, hi = i, i + 1
    if found[i].path[:n] == path:
        while lo > 0 and found[lo - 1].path[:n] == path:
            lo -= 1
        while hi < len(found) and found[hi].path[:n] == path:
            hi += 1
    return found[lo].start, found[hi].start if hi < len(found) else end


def around(
    snippets: Sequence[Chunk],
    hit: Chunk,
    at: int,
    path: tuple[str, ...],
    neighbourhood: bool = False,
) -> Span:
    """The span of ``snippets`` (a document's, in order) a person reads around ``hit``,
    cited at body offset ``at`` under ``path`` (see the module's docstring)."""
    found = marks(snippets)
    if not found:
        return Span(0, 0)
    end = snippets[-1].end
    here = next(k for k, s in enumerate(snippets) if s.id == hit.id)
    start, stop = section_of(found, at, path, end)
    while path and _inside(snippets, start, stop) in ([], [here]):
        path = path[:-1]  # the section is the hit itself: its parent's
        start, stop = section_of(found, at, path, end)
    limit = SECTION_CHARS
    if neighbourhood:
        depth = len(path)
        if start > found[0].start:
            before = found[_index_at(found, start - 1)]
            start = section_of(found, start - 1, before.path[:depth], end)[0]
        if stop < end:
            after = found[_index_at(found, stop)]
            stop = section_of(found, stop, after.path[:depth], end)[1]
        limit = NEIGHBOURHOOD_CHARS
    inside = _inside(snippets, start, stop)
    lo, hi = min([*inside, here]), max([*inside, here]) + 1
    return bounded(snippets, lo, hi, here, limit)


def bounded(snippets: Sequence[Chunk], lo: int, hi: int, hit: int, limit: int) -> Span:
    """``snippets[lo:hi]`` if its text fits in ``limit`` characters, else the snippets
    around ``hit`` that do, taken one before, one after, while the next one fits."""
    if _size(snippets[lo:hi]) <= limit:
        return Span(lo, hi)
    a, b = hit, hit + 1
    while True:
        if a > lo and _size(snippets[a - 1 : b]) <= limit:
            a -= 1
        elif b < hi and _size(snippets[a : b + 1]) <= limit:
            b += 1
        else:
            break
        if b < hi and _size(snippets[a : b + 1]) <= limit:
            b += 1
    return Span(a, b, cut_before=a > lo, cut_after=b < hi)


def _inside(snippets: Sequence[Chunk], start: int, stop: int) -> list[int]:
    """The indexes of the snippets that hold some of the body's ``[start, stop)``."""
    return [k for k, s in enumerate(snippets) if s.end > start and s.start < stop]


def _size(chunks: Sequence[Chunk]) -> int:
    return sum(len(c.text) for c in chunks) + len(JOIN) * max(len(chunks) - 1, 0)


def _index_at(found: Sequence[Mark], offset: int) -> int:
    """The index of the last mark at or before ``offset`` (the first, if none is)."""
    return max((k for k, m in enumerate(found) if m.start <= offset), default=0)
