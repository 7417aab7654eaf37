"""Feedback: pseudo-relevance feedback in hybrid search. The query vector is moved toward
the mean of the top ``docs`` candidates' vectors (Rocchio's update without its negative
part), the vector engine searched again for it, and the fusion stages run again on the
lexical list and the new vector list (no model call: one more vector search).

Convex fusion at 0.85/0.15 with feedback from the top 5 was the best setting found on
dbpedia-5k, as passages and as long files, and the only one above vector-only search on
both (docs/benchmarks/fusion-study.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from docshelf.search.pipeline import Search, Stage

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class Feedback(NamedTuple):
    docs: int = 5  # 0: off
    weight: float = 1.0
    refuse: tuple[Stage, ...] = ()  # the fusion stages, run again on the new lists

    @property
    def name(self) -> str:
        return "feedback"

    def __call__(self, search: Search) -> None:
        if search.mode != "hybrid" or self.docs <= 0 or not search.vector:
            return
        assert search.query_vector is not None
        top = [c.id for c in search.candidates[: self.docs]]
        found = search.parts.store.get_vectors(top)
        moved = feedback_query(
            search.query_vector, [found[i] for i in top if i in found], self.weight
        )
        search.before_feedback = search.vector
        # near: the query lies among snippets just found, so an approximate index may
        # search less deeply (search/engines/usearch.py)
        search.vector = search.parts.vector.search(
            moved, search.size, search.filters, search.told, near=True
        )
        for stage in self.refuse:
            stage(search)


def feedback_query(
    query: npt.NDArray[np.float32], vectors: Sequence[npt.NDArray[np.float32]], weight: float
) -> npt.NDArray[np.float32]:
    """``query + weight * mean(vectors)``, unit length; the query itself when there is
    nothing to learn from."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    if not vectors or weight == 0:
        return q
    moved = q + np.float32(weight) * np.mean(np.stack(vectors), axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm else q
