"""Cite: candidates become hits, in order, until the search has as many as it wants.

A candidate is passed over when it is gone (deleted since its recall), when its text
lacks a phrase the query asked for or holds one it excluded, when its text is the same
as an earlier hit's (near-identical snippets: the first 400 characters, case and spacing
aside), or when its group already has a hit: one hit per cited place by default (the
file and heading path, or page; ``group``: per section chunk, per document, or every
snippet). A hit is cited under the inner heading of its snippet whose part holds most
of the query's words (``citing.cited_under``), and that place counts as its group; one
that runs onto another page, at the page that holds most of them (``citing.cited_page``).

A candidate whose text is a block ``repeated_in`` or more documents hold (a footer on
every note of a vault, a template's boilerplate: the same words, links and URLs aside,
``plaintext.repeat_key``) is no document's own and is passed over (0: never).

At most ``per_document`` hits of one document come before the hits of others (0: no
limit): a long document's many matching places would fill the page, and a search is
asked for what the library holds; its further hits follow, in order, when the other
documents leave room. Not when the search is for one document (a ``document`` filter
naming one, or one hit per document or every snippet asked for).

Also the pool: the document of every candidate, in order (what evaluation measures and
facets count).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from itertools import islice
from typing import NamedTuple

from docshelf.model import Chunk, Citation, Hit, InnerHeading, Scores
from docshelf.search import citing
from docshelf.search.candidate import Candidate, placed_by
from docshelf.search.pipeline import Search
from docshelf.search.query import satisfies
from docshelf.search.reader import Reader, chunk_place
from docshelf.store.base import ChunkPlace


class Cite(NamedTuple):
    per_document: int = 0  # hits of one document before the others' (0: no limit)
    repeated_in: int = 0  # documents holding a block that make it a repeated one (0: off)

    @property
    def name(self) -> str:
        return "cite"

    def __call__(self, search: Search) -> None:
        documents = search.reader.document_ids(search.candidates)
        search.pool = [documents[c.id] for c in search.candidates if c.id in documents]
        one = search.group in ("document", "all") or len(search.filters.document_ids) == 1
        search.hits = _Citing(search, 0 if one else self.per_document, self.repeated_in).hits()


class _Citing:
    """The walk down the candidates of one search."""

    def __init__(self, search: Search, per_document: int, repeated_in: int) -> None:
        self.search = search
        self.per_document = per_document
        self.repeated_in = repeated_in
        self.reader: Reader = search.reader
        self.group = search.group
        self.want = search.wanted
        self.query = citing.query_words(search.parsed.text)
        self.groups: set[Hashable] = set()  # the groups with a hit
        self.texts: set[str] = set()  # the hits' texts, folded
        self.out: list[Hit] = []

    def hits(self) -> list[Hit]:
        cands = self.search.candidates
        held: Counter[str] = Counter()  # hits of each document so far
        later: list[Hit] = []  # a document's hits past ``per_document``
        for n, c in enumerate(cands):
            hit = self.cite(c, Ahead(cands, n))
            if hit is None:
                continue
            if self.per_document and held[hit.document.id] >= self.per_document:
                later.append(hit)
                continue
            held[hit.document.id] += 1
            self.out.append(hit)
            if len(self.out) == self.want:
                break
        return self.out + later[: self.want - len(self.out)]

    def cite(self, c: Candidate, ahead: Ahead) -> Hit | None:
        """``c``'s hit, or None when it is passed over (``ahead``: ``c`` and the
        candidates after it)."""
        where = self.reader.place(c, ahead)
        if where is None or self.closed(c, where):
            return None
        short = self.want - len(self.out)
        chunk = self.reader.chunk(c, self.open_ahead(ahead), max(8, 2 * short))
        if chunk is None or (self.repeated_in and self.reader.repeated(chunk, self.repeated_in)):
            return None
        doc = self.reader.document(chunk.document_id, ahead, max(4, short + 2))
        parsed = self.search.parsed
        if parsed.constrained and not satisfies(chunk.text, parsed):
            return None
        same_text = " ".join(chunk.text.casefold().split())[:400]
        if same_text in self.texts or doc is None:
            return None
        at = citing.cited_under(chunk, self.query) or citing.cited_page(chunk, self.query)
        key = place_key(c.id, where, self.group)
        if isinstance(at, InnerHeading) and self.group == "snippet":
            key = (where.document_id, at.heading_path, where.page_start)
        if key in self.groups:
            return None
        self.texts.add(same_text)
        self.groups.add(key)
        scores = Scores(lexical=c.lexical, vector=c.vector, fused=c.score)
        citation = Citation.for_chunk(chunk, doc, at)
        return Hit(chunk, doc, c.score, scores, citation, placed_by=placed_by(c))

    def closed(self, c: Candidate, where: ChunkPlace) -> bool:
        """Every group the candidate may be cited under has its hit already."""
        key = place_key(c.id, where, self.group)
        return all(k in self.groups for k in citing.possible_keys(where, key, self.group))

    def open_ahead(self, ahead: Ahead) -> Iterator[Candidate]:
        """The candidates that may still become hits, from ``ahead``'s first: not read yet,
        of a group with no hit yet, one per group (the first may be dropped by a later
        check, so each group gets a second look in the next read, if it comes to that).
        The reader reads a few more than the hits still missing, as checks drop some."""
        taken: set[Hashable] = set()
        for c in ahead:
            if self.reader.looked_at(c):
                continue
            where = self.reader.place(c, ahead)
            if where is None:
                continue
            key = place_key(c.id, where, self.group)
            if key in taken or self.closed(c, where):
                continue
            taken.add(key)
            yield c


class Ahead:
    """The candidates from the ``n``-th on (``c`` and those after it), iterated afresh
    each time, without copying the list."""

    __slots__ = ("_candidates", "_n")

    def __init__(self, candidates: Sequence[Candidate], n: int) -> None:
        self._candidates = candidates
        self._n = n

    def __iter__(self) -> Iterator[Candidate]:
        return islice(self._candidates, self._n, None)


def group_key(chunk: Chunk, group: str) -> Hashable:
    """One hit per key: per cited place (``snippet``, the default: the best snippet of
    each file and heading path or page), per ``section`` chunk, per ``document``, or
    every snippet (``all``)."""
    return place_key(chunk.id, chunk_place(chunk), group)


def place_key(chunk_id: str, where: ChunkPlace, group: str) -> Hashable:
    """``group_key`` of the chunk ``chunk_id`` that sits at ``where``."""
    if group == "document":
        return where.document_id
    if group == "section":
        return where.parent_id or chunk_id
    if group == "all":
        return chunk_id
    return where.document_id, where.heading_path, where.page_start
