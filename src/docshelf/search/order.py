"""The order in which docshelf decides a result list: the product's ranking, read top to
bottom. Each line is one stage (search/stages/, a file each); ``FusionSettings`` holds
the numbers the stages take, each chosen by measurement (docs/benchmarks/fusion-study.md
and docqa-dev.md), not by taste.

To add a rule: write its stage (a ``NamedTuple`` of its settings, or a ``Fixed``, with a
``name`` and a call that changes the ``Search``: give candidates a precedence, or change
scores and re-sort) and add one line below. Rules measured and not kept live in
``docshelf.evaluate.study``, where ``docshelf eval`` can still run them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from docshelf.search.pipeline import Stage
from docshelf.search.stages.cite import Cite
from docshelf.search.stages.concepts import ConceptBoost
from docshelf.search.stages.exact import ExactFirst
from docshelf.search.stages.feedback import Feedback
from docshelf.search.stages.few import FewHolders
from docshelf.search.stages.fuse import Fuse
from docshelf.search.stages.passage import PassageOrder
from docshelf.search.stages.recall import Recall
from docshelf.search.stages.rerank import Rerank
from docshelf.search.stages.strong import StrongFirst
from docshelf.search.stages.view import Expand, Facets, SeenBy
from docshelf.search.stages.weak import Weak
from docshelf.search.stages.written import AsWritten


@dataclass(frozen=True)
class FusionSettings:
    """The product's ranking numbers (``Shelf(fusion=…)``, ``docshelf eval --mode``)."""

    # convex min-max fusion at 0.85/0.15 with feedback from the top 5 snippets: the
    # best setting found on dbpedia-5k as passages and as long files (stages/fuse.py)
    method: str = "convex"
    vector_weight: float = 0.85
    lexical_weight: float = 0.15
    rrf_k: int = 60
    concept_boost: float = 0.1  # stages/concepts.py
    feedback_docs: int = 5  # stages/feedback.py (0: off)
    feedback_weight: float = 1.0
    strong_lead: float = 0.3  # stages/strong.py (0: off)
    exact_first: bool = True  # stages/exact.py
    few_lexical: int = 10  # stages/few.py (0: off)
    passage_weight: float = 0.6  # stages/passage.py (0: off)
    # stages/cite.py: at most this many hits of a document before others' (0: no limit).
    # Off: on docqa-dev, 3 cost hit@5 0.950 -> 0.938 and 5 cost MRR (docqa-dev.md)
    per_document: int = 0
    # stages/cite.py: a block this many documents hold is no one's own, never cited (0: off)
    repeated_in: int = 5

    @classmethod
    def configured(cls, concept_boost: float | None) -> FusionSettings:
        """The defaults, with ``Settings.concept_boost`` (DOCSHELF_CONCEPT_BOOST) if set."""
        return cls() if concept_boost is None else cls(concept_boost=concept_boost)


class Ranking(NamedTuple):
    """An order of stages, and the settings it was made from. Two rankings are equal when
    their stages are, kind for kind (a stage is a tuple of its settings: two kinds with
    the same settings are not the same stage); the retrieval cache keys on it."""

    stages: tuple[Stage, ...]
    settings: FusionSettings

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ranking) and self._kinds() == other._kinds()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._kinds())

    def _kinds(self) -> tuple[object, ...]:
        return (tuple((type(s), s) for s in self.stages), self.settings)


def product(s: FusionSettings) -> Ranking:
    """The ranking docshelf searches with."""
    fused = fusion(s)
    return Ranking(
        (
            Recall(),  # each engine's candidates
            *fused,
            Feedback(s.feedback_docs, s.feedback_weight, refuse=fused),  # moved query, fused again
            ConceptBoost(s.concept_boost),  # the concepts the query names
            AsWritten(),  # the query's punctuated words (__name__, --port) as typed
            *((ExactFirst(),) if s.exact_first else ()),  # the named heading, the quoted line
            PassageOrder(s.passage_weight),  # a document's passages by what each says
            Cite(s.per_document, s.repeated_in),  # candidates to hits: one per place, cited
            Rerank(),  # a stronger model's order of the top K, when configured
            SeenBy(),  # the page, as the caller names their documents
            Weak(),  # hits that match neither the query's words nor its meaning
            Expand(),  # each hit's section, when asked for
            Facets(),  # counts over the candidates' documents, when asked for
        ),
        s,
    )


def fusion(s: FusionSettings) -> tuple[Stage, ...]:
    """The stages that make one list of the engines' lists (run again after feedback)."""
    return (
        Fuse(s.method, s.vector_weight, s.lexical_weight, s.rrf_k),  # one list, one score
        StrongFirst(s.strong_lead),  # a list's clear first leads
        FewHolders(s.few_lexical),  # then a rare word's few holders
    )
