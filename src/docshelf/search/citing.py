"""Which heading a hit is cited under (issue 15: the right section first).

The chunker packs short sections into one snippet and keeps the places of the headings
inside it (``Chunk.inner``). A hit is cited under the part of its snippet that holds
most of the query's content words: its own heading's part (from the snippet's start to
the first inner heading) or an inner heading's (from that heading's line to the next).
A tie for the most words, or no query word in any part, keeps the snippet's own
heading. A hit found by meaning alone, sharing no word with the query, keeps it too.

A PDF's snippet is cited by its pages, and one that runs onto another page keeps where
each later page starts in it (``Chunk.page_breaks``): it is cited at the one page whose
part holds the most of the query's words, the same way (a tie, or none: all its pages).

Words are compared as the text evidence compares them (``evidence.words`` and
``evidence.stem``: case-folded, stopwords aside, a crude English stem).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from docshelf.model import Chunk, Citation, InnerHeading, PageBreak
from docshelf.search.evidence import held, stems, words
from docshelf.search.query import STOPWORDS
from docshelf.store.base import ChunkPlace


def query_words(text: str) -> frozenset[str]:
    """The stems of the query's content words (its stopwords only, if it has nothing else)."""
    found = words(text)
    content = frozenset(stems([w for w in found if w not in STOPWORDS]))
    return content or frozenset(stems(found))


def parts(chunk: Chunk) -> list[tuple[InnerHeading | None, str]]:
    """The snippet's parts in order, each with its heading (None: the snippet's own) and
    its text."""
    starts = [chunk.start, *(i.start for i in chunk.inner), chunk.end]
    heads: list[InnerHeading | None] = [None, *chunk.inner]
    return [
        (head, chunk.text[starts[k] - chunk.start : starts[k + 1] - chunk.start])
        for k, head in enumerate(heads)
    ]


def cited_under(chunk: Chunk, query: frozenset[str]) -> InnerHeading | None:
    """The inner heading ``chunk`` is cited under for a query of these ``query_words``, or
    None for its own heading (no inner headings, no query word in any part, or a tie)."""
    if not chunk.inner or not query:
        return None
    return _richest(parts(chunk), query)


def page_parts(chunk: Chunk) -> list[tuple[PageBreak, str]]:
    """A snippet's parts on each of its pages in order, each with where that page starts
    in it (the first: the snippet's start and first page) and its text."""
    if chunk.page_start is None:
        return []
    breaks = [PageBreak(chunk.start, chunk.page_start), *chunk.page_breaks]
    ends = [*(b.start for b in chunk.page_breaks), chunk.end]
    return [
        (b, chunk.text[b.start - chunk.start : end - chunk.start])
        for b, end in zip(breaks, ends, strict=True)
    ]


def cited_page(chunk: Chunk, query: frozenset[str]) -> PageBreak | None:
    """The one page a snippet that runs onto more is cited at for a query of these
    ``query_words``: the one whose part holds the most of them; None (all its pages) when
    it has one page, or no query word is on any, or two pages tie."""
    if not chunk.page_breaks or not query:
        return None
    return _richest(page_parts(chunk), query)


_Part = TypeVar("_Part")


def _richest(found: list[tuple[_Part, str]], query: frozenset[str]) -> _Part | None:
    """The place of the part that holds the most of the query's words, or None when no
    part holds one or two tie."""
    counts = [(len(held(query, text)), place) for place, text in found]
    best = max(n for n, _ in counts)
    winners = [place for n, place in counts if n == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


def place_of(chunk: Chunk, citation: Citation) -> InnerHeading | PageBreak | None:
    """Where ``citation`` cites ``chunk``: the inner heading or the one page it names, or
    None for the snippet's own heading and pages (a citation made again from its chunk
    keeps its place)."""
    at = inner_at(chunk, citation.anchor)
    if at is not None or chunk.page_start is None or citation.page_start is None:
        return at
    if (citation.page_start, citation.page_end) == (chunk.page_start, chunk.page_end):
        return None
    return PageBreak(citation.anchor, citation.page_start)


def page_at(chunk: Chunk, anchor: int) -> PageBreak | None:
    """The later page of ``chunk`` that starts at ``anchor`` (a citation's), if any."""
    return next((b for b in chunk.page_breaks if b.start == anchor), None)


def inner_at(chunk: Chunk, anchor: int) -> InnerHeading | None:
    """The inner heading of ``chunk`` that starts at ``anchor`` (a citation's), if any."""
    return next((i for i in chunk.inner if i.start == anchor), None)


def cited_path(chunk: Chunk, at: InnerHeading | PageBreak | None) -> tuple[str, ...]:
    """The heading path a citation of ``chunk`` at ``at`` names."""
    return at.heading_path if isinstance(at, InnerHeading) else chunk.heading_path


def possible_keys(where: ChunkPlace, key: Hashable, group: str) -> list[Hashable]:
    """Every de-duplication key a candidate at ``where`` may get once cited: its own
    (``key``) and, when hits are one per cited place, that of each inner heading."""
    if group != "snippet" or not where.inner:
        return [key]
    return [key, *((where.document_id, path, where.page_start) for path in where.inner)]
