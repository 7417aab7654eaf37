"""Passage evidence (search/stages/passage.py, ``evidence.passage_evidence``): a
document's passages take the places it holds in the list by what each says of the query,
apart from what all of them share; no document moves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from docshelf.search.candidate import Candidate, Precedence, placed_by
from docshelf.search.citing import query_words
from docshelf.search.evidence import held, passage_evidence, stem, words
from docshelf.search.pipeline import Search
from docshelf.search.query import parse_query
from docshelf.search.stages.passage import PassageOrder
from docshelf.store.base import SearchFilters

VOCABULARY = ["shazam", "peak", "constellation", "map", "hash", "audio", "noise"]


def test_a_word_every_passage_holds_tells_them_apart_by_little() -> None:
    query = query_words("Why does Shazam call its peaks a constellation map?")
    texts = [
        "Shazam matches a recording against a database of songs.",
        "Shazam calls the peaks of the spectrogram it keeps a constellation map.",
        "Shazam hashes pairs of peaks.",
    ]
    evidence = passage_evidence(query, texts)
    assert evidence[1] == 1.0  # every word of the query
    assert evidence[1] > evidence[2] > evidence[0] > 0
    # the title word alone, which all three hold, weighs far less than a page's own words
    assert evidence[0] < 0.1


@given(
    st.lists(st.lists(st.sampled_from(VOCABULARY), max_size=6), min_size=1, max_size=8),
    st.sets(st.sampled_from(VOCABULARY), min_size=1),
)
def test_the_evidence_is_a_share_that_grows_with_the_query_words_held(
    passages: list[list[str]], query: set[str]
) -> None:
    texts = [" ".join(p) for p in passages]
    stems = frozenset(stem(w) for w in query)
    evidence = passage_evidence(stems, texts)
    assert len(evidence) == len(texts) and all(0 <= e <= 1 + 1e-9 for e in evidence)
    held = [{stem(w) for w in p} & stems for p in passages]
    for a, b in ((a, b) for a in range(len(texts)) for b in range(len(texts))):
        if held[a] >= held[b]:
            assert evidence[a] >= evidence[b] - 1e-12
        if held[a] == stems:
            assert abs(evidence[a] - 1) < 1e-9
    # the passages' order does not matter: evidence follows its passage
    assert passage_evidence(stems, texts[::-1]) == evidence[::-1]


@given(
    st.lists(
        st.sampled_from(["map", "maps", "mapping", "remap", "process", "processes", "proc"])
        | st.text(alphabet="aeimnpgrsß_-. ", max_size=9),
        max_size=12,
    ),
    st.lists(st.sampled_from(["map", "maps", "process", "proc", "ping", "s", "ß"]), min_size=1),
)
def test_the_query_words_a_text_holds_are_its_words_stems(
    parts: list[str], asked: list[str]
) -> None:
    text = " ".join(parts)
    query = frozenset(stem(w) for w in asked)
    assert held(query, text) == {stem(w) for w in words(text)} & query


class _Reader:
    """What the stage reads of the candidates: their documents and texts."""

    def __init__(self, documents: Mapping[str, str], texts: Mapping[str, str]) -> None:
        self._documents, self._texts = documents, texts

    def document_ids(self, candidates: Sequence[Candidate]) -> dict[str, str]:
        return {c.id: self._documents[c.id] for c in candidates}

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        return {i: self._texts[i] for i in ids}


PAPER = {  # a paper's pages, all holding its title's word; one holds the query's own
    "p2": ("paper", "Shazam: an overview of the audio search service and its users."),
    "p3": ("paper", "Shazam picks spectrogram peaks and calls them a constellation map."),
    "p5": ("paper", "Shazam scales the audio search to millions of songs."),
    "n1": ("note", "A note on the Shazam app."),
}


def _search(scores: Sequence[tuple[str, float]], mode: str = "hybrid", **lifted: int) -> Search:
    parts = cast(Any, None)  # the stage reads nothing of the parts
    search = Search(parts, parse_query("shazam constellation map"), mode, SearchFilters(), 10, 100)
    search.candidates = [Candidate(i, s, precedence=lifted.get(i, 0)) for i, s in scores]
    documents = {i: doc for i, (doc, _) in PAPER.items()}
    search._reader = cast(Any, _Reader(documents, {i: t for i, (_, t) in PAPER.items()}))
    return search


def test_a_documents_passage_holding_the_query_takes_its_first_place() -> None:
    search = _search([("p2", 0.95), ("n1", 0.9), ("p5", 0.85), ("p3", 0.8)])
    PassageOrder(0.6)(search)
    assert [c.id for c in search.candidates] == ["p3", "n1", "p2", "p5"]  # the note stays
    assert [c.score for c in search.candidates] == [0.8, 0.9, 0.95, 0.85]  # its own score
    assert placed_by(search.candidates[0]) == ("passage",)  # above passages of higher score
    assert not any(c.by_passage for c in search.candidates[1:])


def test_what_the_stage_leaves_alone() -> None:
    scores = [("p2", 0.95), ("n1", 0.9), ("p5", 0.85), ("p3", 0.8)]
    for stage, search in (
        (PassageOrder(0.0), _search(scores)),  # off
        (PassageOrder(0.6), _search(scores, mode="lexical")),  # one retriever's own order
        (PassageOrder(0.6, window=3), _search(scores)),  # p3 is past the window
    ):
        before = [c.id for c in search.candidates]
        stage(search)
        assert [c.id for c in search.candidates] == before, stage
    # a candidate of another precedence keeps its place: p2 named stays first
    named = _search(scores, p2=Precedence.NAMED)
    PassageOrder(0.6)(named)
    assert [c.id for c in named.candidates] == ["p2", "n1", "p3", "p5"]
    # a wide lead of score is not given up for the evidence
    wide = _search([("p2", 0.95), ("p3", 0.2)])
    PassageOrder(0.6)(wide)
    assert [c.id for c in wide.candidates] == ["p2", "p3"]
