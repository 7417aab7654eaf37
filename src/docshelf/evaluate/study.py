"""Ranking rules that were built, measured and not kept: the product does not run them,
``docshelf eval`` can (``--mode hybrid+heading:0.1`` and the like, ``beir.parse_config``).
Each is a stage (search/pipeline.py) put into the product's order by ``study_ranking``;
what each was measured to do is in docs/benchmarks/docqa-dev.md and fusion-study.md
(issues 15 and 6).

``+adapt:T``     the lexical weight raised toward an even split as the lexical list's lead
                 grows to T (``StudyFuse``);
``+fbmix:M``     after feedback, the vector list blended with the query's own:
                 (1 - M) x norm(after) + M x norm(before) (``StudyFuse``);
``+agree:1``     a candidate both lists rank first (the vector list before feedback) is a
                 clear first (``AgreeingFirst``);
``+top:N``, ``+toplead:L``  a list's first leading by L of its range never below place N
                 (``NearTop``);
``+heading:H``, ``+section:S``  a snippet gains H x (share of the query's words its heading
                 names) x the top score, and S x the scores of its place's next-best two
                 snippets (``SectionEvidence``);
``+sibling:H``   each document's candidates re-ordered among that document's own places in
                 the list by score + H x heading share x the top score (``SiblingHeadings``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from docshelf.search.candidate import Candidate, Recalled, ranked
from docshelf.search.evidence import Placed, content_words, own_heading
from docshelf.search.order import FusionSettings, Ranking, product
from docshelf.search.pipeline import Search, Stage
from docshelf.search.stages.cite import Cite
from docshelf.search.stages.exact import ExactFirst
from docshelf.search.stages.feedback import Feedback
from docshelf.search.stages.few import FewHolders
from docshelf.search.stages.fuse import Fuse, fuse_into, min_max
from docshelf.search.stages.strong import StrongFirst, lead


@dataclass(frozen=True)
class Study:
    """The study rules' settings (all off: the product)."""

    adaptive_lead: float = 0.0
    feedback_mix: float = 0.0
    agree_first: bool = False
    first_top: int = 0
    first_lead: float = 0.0
    heading_boost: float = 0.0
    section_evidence: float = 0.0
    sibling_heading: float = 0.0

    @property
    def off(self) -> bool:
        return self == Study()


def study_ranking(fusion: FusionSettings, study: Study) -> Ranking:
    """The product's order with the study's rules in their places: the fusion stages
    swapped for their study variants (and run again so by feedback), the first-place rule
    after the rare words' holders, the section rules before the exact matches."""
    base = product(fusion)
    if study.off:
        return base
    fusing = study_fusion(fusion, study)
    evidence: tuple[Stage, ...] = ()
    if study.heading_boost or study.section_evidence:
        evidence += (SectionEvidence(study.heading_boost, study.section_evidence),)
    if study.sibling_heading:
        evidence += (SiblingHeadings(study.sibling_heading),)
    stages: list[Stage] = []
    for stage in base.stages:
        if isinstance(stage, Fuse):
            stages += fusing
        elif isinstance(stage, StrongFirst | FewHolders):
            continue
        elif isinstance(stage, Feedback):
            stages.append(stage._replace(refuse=fusing))
        elif isinstance(stage, ExactFirst | Cite):
            stages += [*evidence, stage]
            evidence = ()
        else:
            stages.append(stage)
    return Ranking(tuple(stages), fusion)


def study_fusion(fusion: FusionSettings, study: Study) -> tuple[Stage, ...]:
    """The fusion stages (``order.fusion``) with the study's variants and additions."""
    fuse: Stage = Fuse(fusion.method, fusion.vector_weight, fusion.lexical_weight, fusion.rrf_k)
    if study.adaptive_lead or study.feedback_mix:
        fuse = StudyFuse(
            fusion.method,
            fusion.vector_weight,
            fusion.lexical_weight,
            fusion.rrf_k,
            study.adaptive_lead,
            study.feedback_mix,
        )
    strong: Stage = StrongFirst(fusion.strong_lead)
    if study.agree_first:
        strong = AgreeingFirst(fusion.strong_lead)
    fusing: tuple[Stage, ...] = (fuse, strong, FewHolders(fusion.few_lexical))
    if study.first_top > 0:
        fusing += (NearTop(study.first_top, study.first_lead),)
    return fusing


class StudyFuse(NamedTuple):
    """``Fuse`` with the lexical weight adapted to the lexical list's lead
    (``adaptive_lead``) and, after feedback, the vector list blended with the query's
    own (``feedback_mix``)."""

    method: str = "convex"
    vector_weight: float = 0.85
    lexical_weight: float = 0.15
    rrf_k: int = 60
    adaptive_lead: float = 0.0
    feedback_mix: float = 0.0

    @property
    def name(self) -> str:
        return "fuse"

    def __call__(self, search: Search) -> None:
        w_v, w_l = self.weights(search)
        fuse_into(search, self.method, self.vector_list(search), w_v, w_l, self.rrf_k)

    def weights(self, search: Search) -> tuple[float, float]:
        """The lexical weight raised toward 0.5 in proportion to the lexical lead."""
        if not self.adaptive_lead or self.lexical_weight >= 0.5:
            return self.vector_weight, self.lexical_weight
        share = min(1.0, lead(search.lexical) / self.adaptive_lead)
        weight = self.lexical_weight + (0.5 - self.lexical_weight) * share
        return 1.0 - weight, weight

    def vector_list(self, search: Search) -> Recalled:
        """After feedback, one vector list from the feedback pass's and the query's own:
        min-max scores mixed (missing from one: 0 there), best first."""
        before = search.before_feedback
        if before is None or self.feedback_mix <= 0:
            return search.vector
        mix, after = self.feedback_mix, search.vector
        a, b = min_max(after), min_max(before)
        ids = list(dict.fromkeys([i for i, _ in after] + [i for i, _ in before]))
        out = [(i, (1 - mix) * a.get(i, 0.0) + mix * b.get(i, 0.0)) for i in ids]
        out.sort(key=lambda t: (-t[1], t[0]))
        return out


class AgreeingFirst(StrongFirst):
    """Also a clear first: the candidate both the lexical list and the vector list (the
    query's own, before feedback) rank first."""

    def firsts(self, search: Search) -> set[str]:
        out = StrongFirst.firsts(self, search)
        lexical = search.lexical
        original = search.vector if search.before_feedback is None else search.before_feedback
        if lexical and original and lexical[0][0] == original[0][0]:
            out.add(lexical[0][0])
        return out


class NearTop(NamedTuple):
    """The first of any list (lexical, vector, and the vector list before feedback) that
    leads it by ``min_lead`` and sits below place ``top`` is moved up to place ``top``,
    with a score between its new neighbours' (a study rule: the product gives places by
    precedence, never by a made-up score)."""

    top: int
    min_lead: float

    @property
    def name(self) -> str:
        return "near-top"

    def __call__(self, search: Search) -> None:
        if search.mode != "hybrid" or self.top < 1:
            return
        rankings = [search.lexical, search.vector]
        if search.before_feedback is not None:
            rankings.append(search.before_feedback)
        firsts = {r[0][0] for r in rankings if r and lead(r) >= self.min_lead}
        cands, top = search.candidates, self.top
        late = [c for c in cands[top - 1 :] if c.id in firsts]
        if not late:
            return
        head, rest = cands[: top - 1], [c for c in cands[top - 1 :] if c.id not in firsts]
        above = head[-1].score if head else None
        below = rest[0].score if rest else None
        for n, c in enumerate(late):
            if below is None:
                continue
            if above is None:
                score = below + 1e-9 * (len(late) - n)
            elif above <= below:
                score = above
            else:
                score = below + (above - below) * (len(late) - n) / (len(late) + 1)
            c.score = max(score, c.score)
        search.candidates = head + late + rest


class SectionEvidence(NamedTuple):
    heading_boost: float = 0.0
    section_evidence: float = 0.0

    @property
    def name(self) -> str:
        return "section-evidence"

    def __call__(self, search: Search) -> None:
        if not search.candidates:
            return
        places = search.reader.every_place(search.candidates)
        content = content_words(search.parsed.text)
        where = {i: (p.document_id, p.heading_path, p.page_start) for i, p in places.items()}
        shares = {i: heading_share(content, p) for i, p in places.items()}
        by_section(search.candidates, where, shares, self.heading_boost, self.section_evidence)


def by_section(
    cands: list[Candidate],
    places: Mapping[str, Hashable],
    heading_match: Mapping[str, float],
    heading_boost: float,
    section_evidence: float,
) -> None:
    """Each candidate gains ``heading_boost`` x its heading's share of the query's words
    (``heading_match``) x the top score, and ``section_evidence`` x the scores of the
    next-best two snippets of its cited place (``places``: id -> place); re-sorted."""
    if not cands or (heading_boost == 0 and section_evidence == 0):
        return
    top = max(abs(c.score) for c in cands) or 1.0
    seen: dict[Hashable, list[float]] = {}
    for c in cands:
        if c.id in places:
            seen.setdefault(places[c.id], []).append(c.score)
    support = {p: sum(sorted(s, reverse=True)[1:3]) for p, s in seen.items()}
    for c in cands:
        gained = heading_boost * heading_match.get(c.id, 0.0) * top
        if c.id in places:
            gained += section_evidence * support[places[c.id]]
        c.score += gained
    ranked(cands)


class SiblingHeadings(NamedTuple):
    weight: float

    @property
    def name(self) -> str:
        return "siblings"

    def __call__(self, search: Search) -> None:
        cands = search.candidates
        if not cands or self.weight == 0:
            return
        places = search.reader.every_place(search.candidates)
        search.candidates = siblings(cands, places, search.parsed.text, self.weight)


def siblings(
    cands: Sequence[Candidate], places: Mapping[str, Placed], query: str, weight: float
) -> list[Candidate]:
    """``within_documents`` by the share of the query's words each heading names, for the
    documents cited by heading (a page of a PDF is cited by its number: left alone)."""
    content = content_words(query)
    documents = {i: p.document_id for i, p in places.items() if p.page_start is None}
    shares = {i: heading_share(content, p) for i, p in places.items()}
    return within_documents(cands, documents, shares, weight)


def within_documents(
    cands: Sequence[Candidate],
    documents: Mapping[str, Hashable],
    evidence: Mapping[str, float],
    w: float,
) -> list[Candidate]:
    """Each document's candidates re-ordered among the positions that document holds, by
    ``score + w * evidence * top``; candidates with a precedence, and the order of
    documents, stay; each takes the score of the position it moves to."""
    if w == 0 or not cands or not evidence:
        return list(cands)
    top = max(abs(c.score) for c in cands) or 1.0
    slots: dict[Hashable, list[int]] = {}
    for n, c in enumerate(cands):
        if c.id in documents and not c.precedence:
            slots.setdefault(documents[c.id], []).append(n)
    out = list(cands)
    for positions in slots.values():
        if len(positions) < 2:
            continue
        scores = [cands[n].score for n in positions]
        members = sorted(
            (cands[n] for n in positions),
            key=lambda c: -(c.score + w * evidence.get(c.id, 0) * top),
        )
        for n, c, score in zip(positions, members, scores, strict=True):
            c.score = score
            out[n] = c
    return out


def heading_share(query: frozenset[str], chunk: Placed) -> float:
    """The share of the query's content words that the snippet's own heading names."""
    if not query:
        return 0.0
    return len(query & content_words(own_heading(chunk))) / len(query)
