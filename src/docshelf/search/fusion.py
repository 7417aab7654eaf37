"""Fusing the lexical and vector rankings into one (pure functions).

Two methods:

``rrf``     weighted reciprocal rank fusion: ``sum_i w_i / (k + rank_i)``.
``convex``  a convex combination of per-query normalised scores:
            ``w_v * norm(vector) + w_l * norm(lexical)``. Scores are min-max
            normalised over each list's candidates; a candidate missing from a
            list gets 0 for that part.

A strong match is kept first (``keep_strong``): when one list's first leads its second
by at least ``strong_lead`` of that list's score range, it tops the fused list too. A
rare word's few holders come next (``keep_below_strong``): when fewer than
``few_lexical`` snippets hold any of the query's words, all of them.

Then, in hybrid search, pseudo-relevance feedback (``feedback_query``): the query
vector moved toward the mean of the fused top snippets, the vector side searched
again and the two lists fused again.

Which method and which weights are the defaults is decided by measurement
(``docshelf eval``; see BENCHMARKS.md), not by taste.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


Ranking = Sequence[tuple[str, float]]  # (id, score), best first


@dataclass(frozen=True)
class FusionSettings:
    method: str = "convex"
    # Chosen by measurement on dbpedia-5k, as passages and as long files (BENCHMARKS.md):
    # convex min-max fusion at 0.85/0.15 with feedback from the top 5 snippets was the
    # best setting found, and the only one above vector-only search on both.
    vector_weight: float = 0.85
    lexical_weight: float = 0.15
    rrf_k: int = 60
    # Hits whose document carries a concept the query names: score + boost * |score|.
    concept_boost: float = 0.1
    # Pseudo-relevance feedback (hybrid only): the query vector moved toward the mean
    # of the first fusion's top `feedback_docs` snippets, searched and fused again
    # (0 turns it off).
    feedback_docs: int = 5
    feedback_weight: float = 1.0
    # Strong matches (0 = off): a list's first whose lead over its second is at least
    # `strong_lead` of that list's score range is put first, so fusion never buries a
    # match one retriever ranks far above the rest. 0.3 was chosen on docqa-dev,
    # dbpedia-5k and its long files together, by the worst case (BENCHMARKS.md).
    strong_lead: float = 0.3
    # Per-query lexical weight (tried in the same study, off): raised toward an even
    # split as the lexical list's lead grows to `adaptive_lead`.
    adaptive_lead: float = 0.0
    # The right section first (every mode, after fusion; issue 15): a snippet whose
    # heading names the query's words gains `heading_boost` x (share of the words
    # named) x the top score, and every snippet of a cited place (file and heading
    # path, or page) gains `section_evidence` x the scores of that place's next-best
    # snippets (the second and third), so a section several snippets point at wins.
    # Both off: measured on docqa-dev and dbpedia-5k together, heading 0.1 gained a
    # known item and hit@5 on docqa but cost dbpedia nDCG@10 0.013; section evidence
    # lost on docqa in every mode (BENCHMARKS.md, issue 15).
    heading_boost: float = 0.0
    section_evidence: float = 0.0
    # Exact matches first (every mode, after fusion): a snippet whose heading the query
    # names (the same content words, at least two), then the best one whose text holds
    # the whole query word for word (at least four words), is put first
    # (search/evidence.py). On:
    # measured on docqa-dev and dbpedia-5k together (BENCHMARKS.md, issue 15, this session).
    exact_first: bool = True
    # The right section of a document first (every mode, after fusion, for documents
    # cited by heading rather than page): each document's
    # candidates are re-ordered among that document's own places in the list by their
    # score + `sibling_heading` x (share of the query's words their heading names) x the
    # top score, so the order of documents is never changed (a corpus of one passage per
    # document is left exactly as it was).
    sibling_heading: float = 0.0
    # A clear first place never drops out of the top (0 = off): the first of any list
    # (lexical, vector, and in hybrid the vector list before feedback) that leads its
    # second by at least `first_lead` of its range is put no lower than place
    # `first_top` of the fused list (1-based), so a match one retriever ranks first by a
    # margin smaller than `strong_lead` is still shown.
    first_top: int = 0
    first_lead: float = 0.0
    # Agreement (off by default): a candidate that the lexical list and the vector list
    # before feedback both rank first is put first, as a strong match is.
    agree_first: bool = False
    # A rare word's few holders (0 = off): when fewer than `few_lexical` snippets hold
    # any of the query's words (a name, an identifier: "Obsidian2Mkdocs"), they are put
    # first (in their fused order), below strong matches; min-max over a handful of
    # candidates says nothing of how far they stand above the rest of the library.
    # 10: no query of docqa-dev or dbpedia-5k has so few (their figures are unchanged
    # up to 20); a rare word of a title searched alone found its document first 0.78 →
    # 0.92 of the time in the vault (bench/rare_names.py, BENCHMARKS.md).
    few_lexical: int = 10
    # The feedback pass's list blended with the query's own (0 = the feedback list
    # alone, as chosen on dbpedia-5k): the vector side of the second fusion scored
    # (1 - m) x norm(after feedback) + m x norm(before feedback).
    feedback_mix: float = 0.0

    @classmethod
    def configured(cls, concept_boost: float | None) -> FusionSettings:
        """The defaults, with ``Settings.concept_boost`` (DOCSHELF_CONCEPT_BOOST) if set."""
        return cls() if concept_boost is None else cls(concept_boost=concept_boost)


class Fused(NamedTuple):  # (a tuple: a search makes a few hundred)
    id: str
    score: float
    lexical: float | None
    vector: float | None
    strong: bool = False  # put first by keep_strong: later re-sorts keep it in front


def _min_max(ranking: Ranking) -> dict[str, float]:
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return {i: 1.0 for i, _ in ranking}
    return {i: (s - lo) / (hi - lo) for i, s in ranking}


def lead(ranking: Ranking) -> float:
    """How far a list's first stands above its second, as a share of the list's score
    range (first minus last); 0 for fewer than three candidates or no spread."""
    if len(ranking) < 3:
        return 0.0
    first, second, last = ranking[0][1], ranking[1][1], ranking[-1][1]
    return (first - second) / (first - last) if first > last else 0.0


def keep_strong(
    fused: list[Fused], rankings: Sequence[Ranking], min_lead: float, also: set[str] | None = None
) -> list[Fused]:
    """``fused`` with the first of each ranking that leads by at least ``min_lead`` (and
    the ids of ``also``) moved to the front (several such, in their fused order), its
    score raised just above the top so the order holds when re-sorted; the rest keep
    their order and scores. ``min_lead`` 0 counts no ranking."""
    strong = _strong(rankings, min_lead) if min_lead > 0 else set()
    strong |= also or set()
    if not strong or not fused:
        return fused
    top = fused[0].score
    first = [f for f in fused if f.id in strong]
    raised = [
        f._replace(score=max(f.score, top + 1e-6 * (len(first) - n)), strong=True)
        for n, f in enumerate(first)
    ]
    return raised + [f for f in fused if f.id not in strong]


def keep_below_strong(fused: list[Fused], ids: set[str]) -> list[Fused]:
    """``fused`` with the candidates of ``ids`` moved up to just below its strong ones (in
    their fused order) and marked strong, each scored between its new neighbours so the
    order holds when re-sorted; the rest keep their order and scores."""
    head = [f for f in fused if f.strong]
    moved = [f for f in fused if not f.strong and f.id in ids]
    if not moved:
        return fused
    rest = [f for f in fused if not f.strong and f.id not in ids]
    floor = rest[0].score if rest else moved[-1].score
    ceiling = head[-1].score if head else floor + 1e-6 * (len(moved) + 1)
    step = (ceiling - floor) / (len(moved) + 1)
    raised = [
        f._replace(score=max(f.score, floor + step * (len(moved) - n)), strong=True)
        for n, f in enumerate(moved)
    ]
    return head + raised + rest


def _few(lexical: Ranking, settings: FusionSettings) -> set[str]:
    """Every lexical candidate, when there are fewer than ``settings.few_lexical``: the
    few snippets that hold the query's words (``FusionSettings.few_lexical``)."""
    return {i for i, _ in lexical} if len(lexical) < settings.few_lexical else set()


def _strong(rankings: Sequence[Ranking], min_lead: float) -> set[str]:
    """The ids ``keep_strong`` puts first: each ranking's first that leads by ``min_lead``."""
    return {r[0][0] for r in rankings if r and lead(r) >= min_lead}


def keep_near_top(
    fused: list[Fused], rankings: Sequence[Ranking], min_lead: float, top: int
) -> list[Fused]:
    """``fused`` with the first of each ranking that leads by at least ``min_lead`` and
    sits below place ``top`` (1-based) moved up to place ``top`` (several such, in their
    fused order, from there on), each given a score between its new neighbours' so the
    order holds when re-sorted (their score, when the neighbours tie); the rest keep their
    order and scores."""
    firsts = {r[0][0] for r in rankings if r and lead(r) >= min_lead}
    if top < 1 or not firsts:
        return fused
    late = [f for f in fused[top - 1 :] if f.id in firsts]
    if not late:
        return fused
    head = fused[: top - 1]
    rest = [f for f in fused[top - 1 :] if f.id not in firsts]
    above = head[-1].score if head else None
    below = rest[0].score if rest else None
    moved = []
    for n, f in enumerate(late):
        if below is None:
            score = f.score
        elif above is None:
            score = below + 1e-9 * (len(late) - n)
        elif above <= below:  # a tie across place `top`: no score between, so the same
            score = above
        else:
            score = below + (above - below) * (len(late) - n) / (len(late) + 1)
        moved.append(f._replace(score=max(score, f.score)))
    return head + moved + rest


def _adapted(lexical: Ranking, settings: FusionSettings) -> FusionSettings:
    """The lexical weight raised toward 0.5 in proportion to the lexical lead."""
    if not settings.adaptive_lead or settings.lexical_weight >= 0.5:
        return settings
    share = min(1.0, lead(lexical) / settings.adaptive_lead)
    weight = settings.lexical_weight + (0.5 - settings.lexical_weight) * share
    return replace(settings, lexical_weight=weight, vector_weight=1.0 - weight)


def _blended(after: Ranking, before: Ranking, mix: float) -> list[tuple[str, float]]:
    """One vector list from the feedback pass's and the query's own: min-max scores mixed,
    ``(1 - mix) x after + mix x before`` (missing from one: 0 there), best first."""
    a, b = _min_max(after), _min_max(before)
    ids = list(dict.fromkeys([i for i, _ in after] + [i for i, _ in before]))
    out = [(i, (1 - mix) * a.get(i, 0.0) + mix * b.get(i, 0.0)) for i in ids]
    out.sort(key=lambda t: (-t[1], t[0]))
    return out


def fuse(
    lexical: Ranking,
    vector: Ranking,
    settings: FusionSettings,
    before_feedback: Ranking | None = None,
) -> list[Fused]:
    """One ranking from two; ties are broken by id so the order is deterministic.
    ``before_feedback``, in the fusion after feedback, is the vector list the query
    itself found: its first place counts for the first-place rules as the others'."""
    settings = _adapted(lexical, settings)
    vec = dict(vector)  # the parts reported: the cosine of the list searched last
    if before_feedback is not None and settings.feedback_mix > 0:
        vector = _blended(vector, before_feedback, settings.feedback_mix)
    ids, scores = _scorer(lexical, vector, settings)
    lex_get, vec_get = dict(lexical).get, vec.get
    fused = [Fused(i, scores[i], lex_get(i), vec_get(i)) for i in ids]
    fused.sort(key=lambda f: (-f.score, f.id))
    agreed: set[str] = set()
    original = vector if before_feedback is None else before_feedback
    if settings.agree_first and lexical and original and lexical[0][0] == original[0][0]:
        agreed = {lexical[0][0]}
    if settings.strong_lead > 0 or agreed:
        fused = keep_strong(fused, (lexical, vector), settings.strong_lead, agreed)
    few = _few(lexical, settings)
    if few:
        fused = keep_below_strong(fused, few)
    if settings.first_top > 0:
        rankings = [lexical, vector] if before_feedback is None else [lexical, vector, original]
        fused = keep_near_top(fused, rankings, settings.first_lead, settings.first_top)
    return fused


def fused_ids(lexical: Ranking, vector: Ranking, settings: FusionSettings, n: int) -> list[str]:
    """The ids of ``fuse(lexical, vector, settings)[:n]``, in order, without building the
    whole fused list (what the feedback pass reads of the first fusion)."""
    if settings.agree_first or settings.first_top > 0:  # the study rules: fuse's own order
        return [f.id for f in fuse(lexical, vector, settings)[:n]]
    settings = _adapted(lexical, settings)
    ids, scores = _scorer(lexical, vector, settings)
    strong = _strong((lexical, vector), settings.strong_lead) if settings.strong_lead > 0 else set()
    few = _few(lexical, settings) - strong

    def order(i: str) -> tuple[float, str]:
        return -scores[i], i

    # (heapq.nsmallest: sorted(...)[:n], for a few of many)
    if not strong and not few:
        return heapq.nsmallest(n, ids, key=order)
    # fuse's tiers: strong matches, then a rare word's few holders, each in fused order
    first = sorted(strong, key=order) + sorted(few, key=order)
    rest = heapq.nsmallest(n, (i for i in ids if i not in strong and i not in few), key=order)
    return (first + rest)[:n]


def _scorer(
    lexical: Ranking, vector: Ranking, settings: FusionSettings
) -> tuple[list[str], dict[str, float]]:
    """The candidates of both lists (vector's first, each once) and their fused scores."""
    ids = list(dict.fromkeys([i for i, _ in vector] + [i for i, _ in lexical]))
    if settings.method == "rrf":
        lex_rank = {i: r for r, (i, _) in enumerate(lexical, start=1)}
        vec_rank = {i: r for r, (i, _) in enumerate(vector, start=1)}
        k, w_l, w_v = settings.rrf_k, settings.lexical_weight, settings.vector_weight

        def score(i: str) -> float:
            s = 0.0
            if i in lex_rank:
                s += w_l / (k + lex_rank[i])
            if i in vec_rank:
                s += w_v / (k + vec_rank[i])
            return s

        return ids, {i: score(i) for i in ids}
    if settings.method == "convex":
        lex_n = _min_max(lexical).get
        vec_n = _min_max(vector).get
        w_v, w_l = settings.vector_weight, settings.lexical_weight
        return ids, {i: w_v * vec_n(i, 0.0) + w_l * lex_n(i, 0.0) for i in ids}
    raise ValueError(f"unknown fusion method {settings.method!r}")


def by_section(
    fused: Sequence[Fused],
    places: Mapping[str, Hashable],
    heading_match: Mapping[str, float],
    settings: FusionSettings,
) -> list[Fused]:
    """``fused`` re-sorted with the section evidence of ``settings``: ``places`` says
    which cited place each id belongs to, ``heading_match`` what share (0..1) of the
    query's words its heading names. Parts are kept as they were."""
    if not fused or (settings.heading_boost == 0 and settings.section_evidence == 0):
        return list(fused)
    top = max(abs(f.score) for f in fused) or 1.0
    seen: dict[Hashable, list[float]] = {}
    for f in fused:
        if f.id in places:
            seen.setdefault(places[f.id], []).append(f.score)
    support = {place: sum(sorted(s, reverse=True)[1:3]) for place, s in seen.items()}

    def score(f: Fused) -> float:
        gained = settings.heading_boost * heading_match.get(f.id, 0.0) * top
        if f.id in places:
            gained += settings.section_evidence * support[places[f.id]]
        return f.score + gained

    out = [f._replace(score=score(f)) for f in fused]
    out.sort(key=lambda f: (not f.strong, -f.score, f.id))
    return out


def exact_first(fused: Sequence[Fused], *tiers: set[str]) -> list[Fused]:
    """``fused`` with the candidates of each tier of ``tiers`` (the first tier before
    the second, …; each in its fused order) moved to the front, marked strong and
    scored just above the top, so later re-sorts keep them there; the rest keep their
    order and scores."""
    placed: set[str] = set()
    first: list[Fused] = []
    for tier in tiers:
        first += [f for f in fused if f.id in tier and f.id not in placed]
        placed |= tier
    if not first:
        return list(fused)
    top = max(f.score for f in fused)
    raised = [
        f._replace(score=max(f.score, top + 1e-6 * (len(first) - n)), strong=True)
        for n, f in enumerate(first)
    ]
    return raised + [f for f in fused if f.id not in placed]


def within_documents(
    fused: Sequence[Fused],
    documents: Mapping[str, Hashable],
    evidence: Mapping[str, float],
    weight: float,
) -> list[Fused]:
    """``fused`` with each document's candidates re-ordered among the positions that
    document already holds, by ``score + weight * evidence * top``; strong candidates
    and the order of documents stay as they were, scores are kept (a candidate takes the
    score of the position it moves to, so the list stays sorted)."""
    if weight == 0 or not fused or not evidence:
        return list(fused)
    top = max(abs(f.score) for f in fused) or 1.0
    slots: dict[Hashable, list[int]] = {}
    for n, f in enumerate(fused):
        if f.id in documents and not f.strong:
            slots.setdefault(documents[f.id], []).append(n)
    out = list(fused)
    for positions in slots.values():
        if len(positions) < 2:
            continue
        members = [fused[n] for n in positions]
        members.sort(key=lambda f: -(f.score + weight * evidence.get(f.id, 0.0) * top))
        for n, f in zip(positions, members, strict=True):
            out[n] = f._replace(score=fused[n].score)
    return out


def boost(fused: Sequence[Fused], ids: set[str], factor: float) -> list[Fused]:
    """``fused`` re-sorted after raising the score of ``ids`` by ``factor`` of its size
    (so a negative score moves toward zero too); parts are kept as they were."""
    if not ids or factor == 0:
        return list(fused)
    out = [f._replace(score=f.score + factor * abs(f.score)) if f.id in ids else f for f in fused]
    out.sort(key=lambda f: (not f.strong, -f.score, f.id))
    return out


def feedback_query(
    query: npt.NDArray[np.float32], vectors: Sequence[npt.NDArray[np.float32]], weight: float
) -> npt.NDArray[np.float32]:
    """``query + weight * mean(vectors)``, unit length (Rocchio's update without the
    negative part); the query itself when there is nothing to learn from."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    if not vectors or weight == 0:
        return q
    moved = q + np.float32(weight) * np.mean(np.stack(vectors), axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm else q


def as_fused(lexical: Ranking, vector: Ranking) -> list[Fused]:
    """A single ranking (one of the two is empty) in fused form, its own score kept."""
    return [Fused(i, s, s, None) for i, s in lexical] + [Fused(i, s, None, s) for i, s in vector]
