"""Passage evidence (issue 36): a document's candidates take their places in the list in
the order of what each passage says of the query, not of what all of them share.

Every snippet of a paper carries the paper's title in its retrieval header and shares its
subject, so both engines score a document's passages alike, and the abstract or a page
that repeats the key words can stand above the page that states the fact. Among the
first ``window`` candidates of a hybrid search, those of one document (and of one
precedence) keep the places they hold between them, and take them in the order of their
score (relative to the window's best) plus ``weight`` times their passage evidence
(``evidence.passage_evidence``: the query's words a passage holds, each weighted by how
few of the document's passages hold it). No document moves, only which of its passages
comes first; a passage that rises above one of higher score says so (``placed_by``:
"passage"), and keeps its own score.

Weight 0.6, the middle of the weights that give the same (0.5 to 0.7; the window, 15 to
100): on docqa-dev it put the right page of a paper and the right section of a chapter
first twice more, none fewer; dbpedia-5k's passages, one to a document, and its long
files are unchanged (docs/benchmarks/docqa-dev.md, "Passage evidence").
"""

from __future__ import annotations

from typing import NamedTuple

from docshelf.search.candidate import Candidate
from docshelf.search.citing import query_words
from docshelf.search.evidence import passage_evidence
from docshelf.search.pipeline import Search


class PassageOrder(NamedTuple):
    weight: float = 0.6  # 0: off (FusionSettings.passage_weight)
    window: int = 30  # the candidates whose documents' passages are ordered

    @property
    def name(self) -> str:
        return "passage"

    def __call__(self, search: Search) -> None:
        query = query_words(search.parsed.text)
        if search.mode != "hybrid" or self.weight <= 0 or not query:
            return
        head = search.candidates[: self.window]
        best = max((c.score for c in head), default=0.0)
        groups = _documents(search, head)
        if best <= 0 or not groups:
            return
        texts = search.reader.texts([head[n].id for slots in groups for n in slots])
        for slots in groups:
            members = [head[n] for n in slots]
            evidence = passage_evidence(query, [texts.get(c.id, "") for c in members])
            keyed = [
                (c.score / best + self.weight * e, c)
                for c, e in zip(members, evidence, strict=True)
            ]
            order = [c for _, c in sorted(keyed, key=lambda k: -k[0])]  # stable: ties keep
            for k, (n, c) in enumerate(zip(slots, order, strict=True)):
                c.by_passage = any(later.score > c.score for later in order[k + 1 :])
                search.candidates[n] = c


def _documents(search: Search, head: list[Candidate]) -> list[list[int]]:
    """The places in ``head`` of each document's candidates of one precedence, for the
    documents with two or more."""
    documents = search.reader.document_ids(head)
    groups: dict[tuple[str, int], list[int]] = {}
    for n, c in enumerate(head):
        if c.id in documents:
            groups.setdefault((documents[c.id], c.precedence), []).append(n)
    return [slots for slots in groups.values() if len(slots) > 1]
