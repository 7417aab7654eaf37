"""The fields of the lexical index and their weights, declared once for every backend.

A snippet is indexed as three fields (BM25F-style: each scored on its own, then summed
with these weights), so a query that names a note's title or a section heading finds
it without a long body outweighing the few words of its heading:

``title``     the document title: the ``[DOC: …]`` line of the chunk's header
``headings``  the rest of the header: the heading path (``[PATH: a > b]``) and
              concept names, without their ``[PATH: `` / ``[CONCEPTS: `` labels
``body``      the snippet text

The split is made from the chunk's own header (never from the documents table), so an
index entry can always be removed with exactly the values it was added with. SQLite
(FTS5 ``bm25()`` column weights, store/sqlite.py), PostgreSQL (``setweight`` A/B/C and
``ts_rank_cd`` weights, store/postgres.py) and the tantivy sidecar (field boosts,
search/engines/tantivy.py) all read the weights from here; their SQL mirrors ``header_fields``,
and tests check that each backend splits a header the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

TITLE_PREFIX = "[DOC: "
_LABELS = ("[PATH: ", "[CONCEPTS: ")


@dataclass(frozen=True)
class FieldWeights:
    """How much a match in each field counts, relative to one in the body."""

    title: float
    headings: float
    body: float

    def ts_rank_array(self) -> str:
        """PostgreSQL's ``ts_rank_cd`` weights literal ``{D, C, B, A}`` for title = A,
        headings = B, body = C (each in (0, 1]: scaled by the largest; D is unused)."""
        top = max(self.title, self.headings, self.body)
        parts = (0.1, self.body / top, self.headings / top, self.title / top)
        return "{" + ", ".join(f"{p:g}" for p in parts) + "}"


# Title and headings at 2, as the single header column was (its measured weight); other
# weights are judged on docqa-dev and dbpedia-5k together by the worst case
# (docs/benchmarks/docqa-dev.md, "Fielded lexical scoring").
WEIGHTS = FieldWeights(title=2.0, headings=2.0, body=1.0)


def header_fields(header: str) -> tuple[str, str]:
    """(title, headings) of a chunk header, as every backend's index splits it."""
    first = header.split("\n", 1)[0]
    if header.startswith(TITLE_PREFIX):
        title, rest = first[len(TITLE_PREFIX) : len(first) - 1], header[len(first) + 1 :]
    else:
        title, rest = "", header
    for label in _LABELS:
        rest = rest.replace(label, "")
    return title, rest
