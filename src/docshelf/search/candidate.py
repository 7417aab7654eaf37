"""A ``Candidate``: one snippet on its way from recall to a hit, with named fields.

Every ranking stage (search/stages/) works on a list of candidates kept in their
order: by **precedence**, then **score** (higher first), then id. Precedence is a set
of flags that stages give for what they know beyond a score — the query names the
candidate's heading, it quotes the query word for word, it is a list's clear first, it
holds a rare word — and a flag of more weight outranks every flag below it. Scores are
never nudged to make a place: a candidate placed by its precedence keeps its own score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntFlag

from docshelf.search.entries import Known

Recalled = Sequence[tuple[str, float]]  # what an engine answers: (chunk id, score), best first


class Precedence(IntFlag):
    """Why a candidate ranks above others whatever their scores (stages/*.py name the
    rules); compared as a number, so a higher flag outranks any set of lower ones."""

    NONE = 0
    FEW = 1  # one of the few snippets holding a rare word of the query (stages/few.py)
    STRONG = 2  # a list's clear first (stages/strong.py)
    WRITTEN = 4  # holds the query's punctuated words as written (stages/written.py)
    QUOTED = 8  # the best candidate quoting the query word for word (stages/exact.py)
    NAMED = 16  # under the heading (or title) the query names (stages/exact.py)


class Candidate:
    """A snippet found by recall: its scores from each engine (and its 1-based rank in
    each engine's list), the score the stages give it, its precedence, and what an
    engine told of it (``told``: its document id, heading key, seq and ``wide``, from
    the sidecar indexes' entries; None when the store must be asked), and whether its
    passage evidence put it above a passage of its document with a higher score
    (``by_passage``, stages/passage.py). A plain class with slots: a search makes a few
    hundred."""

    __slots__ = (
        "by_passage",
        "id",
        "lexical",
        "lexical_rank",
        "precedence",
        "score",
        "told",
        "vector",
        "vector_rank",
    )

    def __init__(
        self,
        id: str,
        score: float = 0.0,
        lexical: float | None = None,
        vector: float | None = None,
        lexical_rank: int | None = None,
        vector_rank: int | None = None,
        precedence: int = Precedence.NONE,
        told: Known | None = None,
    ) -> None:
        self.id = id
        self.score = score
        self.lexical = lexical
        self.vector = vector
        self.lexical_rank = lexical_rank
        self.vector_rank = vector_rank
        self.precedence = precedence
        self.told = told
        self.by_passage = False

    def __repr__(self) -> str:
        return (
            f"Candidate({self.id!r}, score={self.score!r}, lexical={self.lexical!r}, "
            f"vector={self.vector!r}, precedence={self.precedence!r})"
        )


def placed_by(c: Candidate) -> tuple[str, ...]:
    """The rules that placed ``c`` where its score alone would not put it, by name,
    weightiest first: its precedence's flags, then "passage" (stages/passage.py)."""
    flags = sorted((f for f in Precedence if f and c.precedence & f), reverse=True)
    return tuple(str(f.name).lower() for f in flags) + (("passage",) if c.by_passage else ())


def rank_key(c: Candidate) -> tuple[int, float, str]:
    """The candidates' order: precedence, then score, then id (higher first, ids
    ascending)."""
    return -c.precedence, -c.score, c.id


def ranked(candidates: list[Candidate]) -> None:
    """Sort in place by ``rank_key``."""
    candidates.sort(key=rank_key)


def lift(candidates: list[Candidate], ids: Iterable[str], flag: Precedence) -> bool:
    """Give ``flag`` to the candidates of ``ids`` and re-order them by precedence alone:
    a stable sort, so candidates keep their order among equals (those lifted together
    stay in the order they had). Whether any was lifted."""
    wanted = set(ids)
    if not wanted:
        return False
    lifted = False
    for c in candidates:
        if c.id in wanted:
            c.precedence |= flag
            lifted = True
    if lifted:
        candidates.sort(key=lambda c: -c.precedence)
    return lifted


def from_list(ranking: Recalled, told: dict[str, Known], *, lexical: bool) -> list[Candidate]:
    """One engine's list as candidates in its own order, each scored by that engine."""
    get = told.get
    if lexical:
        return [Candidate(i, s, s, None, n, None, 0, get(i)) for n, (i, s) in enumerate(ranking, 1)]
    return [Candidate(i, s, None, s, None, n, 0, get(i)) for n, (i, s) in enumerate(ranking, 1)]
