"""Which heading a hit is cited under (issue 15: the right section first).

The chunker packs short sections into one snippet and keeps the places of the headings
inside it (``Chunk.inner``). A hit is cited under the part of its snippet that holds
most of the query's content words: its own heading's part (from the snippet's start to
the first inner heading) or an inner heading's (from that heading's line to the next).
A tie for the most words, or no query word in any part, keeps the snippet's own
heading. A hit found by meaning alone, sharing no word with the query, keeps it too.

Words are compared as the text evidence compares them (``evidence.words`` and
``evidence.stem``: case-folded, stopwords aside, a crude English stem).
"""

from __future__ import annotations

from collections.abc import Hashable

from docshelf.model import Chunk, InnerHeading
from docshelf.search.evidence import stem, words
from docshelf.search.query import STOPWORDS
from docshelf.store.base import ChunkPlace


def query_words(text: str) -> frozenset[str]:
    """The stems of the query's content words (its stopwords only, if it has nothing else)."""
    found = words(text)
    content = frozenset(stem(w) for w in found if w not in STOPWORDS)
    return content or frozenset(stem(w) for w in found)


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
    counts = [(len(query & {stem(w) for w in words(text)}), head) for head, text in parts(chunk)]
    best = max(n for n, _ in counts)
    winners = [head for n, head in counts if n == best]
    if best == 0 or len(winners) > 1:
        return None
    return winners[0]


def inner_at(chunk: Chunk, anchor: int) -> InnerHeading | None:
    """The inner heading of ``chunk`` that starts at ``anchor`` (a citation's), if any."""
    return next((i for i in chunk.inner if i.start == anchor), None)


def cited_path(chunk: Chunk, at: InnerHeading | None) -> tuple[str, ...]:
    """The heading path a citation of ``chunk`` under ``at`` names."""
    return at.heading_path if at is not None else chunk.heading_path


def possible_keys(where: ChunkPlace, key: Hashable, group: str) -> list[Hashable]:
    """Every de-duplication key a candidate at ``where`` may get once cited: its own
    (``key``) and, when hits are one per cited place, that of each inner heading."""
    if group != "snippet" or not where.inner:
        return [key]
    return [key, *((where.document_id, path, where.page_start) for path in where.inner)]
