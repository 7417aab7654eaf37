"""Concepts: candidates whose document carries a concept the query names — in its words
(a label or alternative label of the taxonomy) or a ``concept:`` field, or a narrower
concept of one — gain ``factor`` of their score (SPEC §4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from docshelf.search.candidate import Candidate, ranked
from docshelf.search.pipeline import Search
from docshelf.search.query import STOPWORDS, ParsedQuery
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    from docshelf.knowledge.taxonomy import Taxonomy

CHUNK = 400  # documents asked of the store at a time


class ConceptBoost(NamedTuple):
    factor: float = 0.1  # score + factor x |score|; 0: off

    @property
    def name(self) -> str:
        return "concepts"

    def __call__(self, search: Search) -> None:
        if self.factor <= 0:
            return
        concepts = named_concepts(search.parts.taxonomy, search.parsed)
        if not concepts:
            return
        documents = search.reader.document_ids(search.candidates)
        docs = list(dict.fromkeys(documents.values()))
        marked: set[str] = set()
        for start in range(0, len(docs), CHUNK):
            marked |= search.parts.store.documents_matching(
                SearchFilters(
                    document_ids=tuple(docs[start : start + CHUNK]), concept_groups=(concepts,)
                )
            )
        ids = {c.id for c in search.candidates if documents.get(c.id) in marked}
        boost(search.candidates, ids, self.factor)


def boost(candidates: list[Candidate], ids: set[str], factor: float) -> None:
    """The candidates of ``ids`` gain ``factor`` of their score's size (a negative score
    moves toward 0), and the list is re-sorted; left as it is when none is raised."""
    if not ids or factor == 0:
        return
    for c in candidates:
        if c.id in ids:
            c.score += factor * abs(c.score)
    ranked(candidates)


def named_concepts(taxonomy: Taxonomy, parsed: ParsedQuery) -> tuple[str, ...]:
    """The concepts the query names, with their narrower ones."""
    named = taxonomy.mentioned(parsed.text, STOPWORDS)
    for name, value in parsed.fields:
        concept = taxonomy.resolve(value) if name == "concepts" else None
        if concept is not None:
            named.append(concept)
    return tuple(sorted({c for n in named for c in taxonomy.narrower_or_same(n)}))
