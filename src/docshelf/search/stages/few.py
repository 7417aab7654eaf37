"""A rare word's few holders: when fewer than ``fewer_than`` snippets hold any of the
query's words (a name, an identifier: "Obsidian2Mkdocs"), all of them rank next after
the clear firsts, in their fused order. Min-max fusion over a handful of candidates says
nothing of how far they stand above the rest of the library.

10: no query of docqa-dev or dbpedia-5k has so few (their figures are unchanged up to
20); a rare word of a title searched alone found its document first 0.78 → 0.92 of the
time in the vault (bench/rare_names.py; docs/benchmarks/docqa-dev.md, "A rare name searched
alone").
"""

from __future__ import annotations

from typing import NamedTuple

from docshelf.search.candidate import Precedence, lift
from docshelf.search.pipeline import Search


class FewHolders(NamedTuple):
    fewer_than: int = 10  # 0: off

    @property
    def name(self) -> str:
        return "few"

    def __call__(self, search: Search) -> None:
        if search.mode != "hybrid" or len(search.lexical) >= self.fewer_than:
            return
        holders = {i for i, _ in search.lexical}
        few = [c.id for c in search.candidates if c.id in holders and not c.precedence]
        lift(search.candidates, few, Precedence.FEW)
