"""A clear first leads: when one engine's first stands far above its second, it ranks
first in hybrid search too, so fusion never buries a match one retriever ranks far
above the rest (SPEC §4, known items first).

"Far above": a lead (first minus second) of at least ``min_lead`` of that list's score
range (first minus last). 0.3 was chosen on docqa-dev, dbpedia-5k and its long files
together, by the worst case (docs/benchmarks/docqa-dev.md, "Fusion that never buries a
strong match").
"""

from __future__ import annotations

from typing import NamedTuple

from docshelf.search.candidate import Precedence, Recalled, lift
from docshelf.search.pipeline import Search


class StrongFirst(NamedTuple):
    min_lead: float = 0.3  # 0: off

    @property
    def name(self) -> str:
        return "strong"

    def __call__(self, search: Search) -> None:
        if search.mode == "hybrid":
            lift(search.candidates, self.firsts(search), Precedence.STRONG)

    def firsts(self, search: Search) -> set[str]:
        """The first of each list that leads it by ``min_lead`` or more."""
        if self.min_lead <= 0:
            return set()
        rankings = (search.lexical, search.vector)
        return {r[0][0] for r in rankings if r and lead(r) >= self.min_lead}


def lead(ranking: Recalled) -> float:
    """How far a list's first stands above its second, as a share of the list's score
    range (first minus last); 0 for fewer than three candidates or no spread."""
    if len(ranking) < 3:
        return 0.0
    first, second, last = ranking[0][1], ranking[1][1], ranking[-1][1]
    return (first - second) / (first - last) if first > last else 0.0
