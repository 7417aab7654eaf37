"""Concept boosting: hits whose document carries a concept the query names rank higher."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docshelf.knowledge.taxonomy import DEFAULT, load_taxonomy
from docshelf.search.candidate import Candidate, rank_key
from docshelf.search.order import FusionSettings
from docshelf.search.query import STOPWORDS
from docshelf.search.stages.concepts import boost
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder

# The same words; A's header is one word longer ([CONCEPTS: Distributed systems] against
# [CONCEPTS: Law]), so BM25 ranks it a little lower.
TAGGED = b"---\ntags: [raft]\n---\n# Notes A\n\nThe leader election runs with timeouts.\n"
PLAIN = b"---\ntags: [legal]\n---\n# Notes B\n\nThe leader election runs with timeouts.\n"


def test_concepts_named_in_a_query() -> None:
    tax = load_taxonomy(DEFAULT)
    assert tax.mentioned("How does Raft elect a leader?", STOPWORDS) == ["distributed-systems"]
    # The longest label wins ("machine learning", not "learning" = education).
    assert tax.mentioned("machine learning, for databases", STOPWORDS) == [
        "machine-learning",
        "databases",
    ]
    assert tax.mentioned("Distributed-Systems reading", STOPWORDS) == [
        "distributed-systems",
        "literature",
    ]
    assert tax.mentioned("is it here", STOPWORDS) == []  # "it" (computing) is a stopword
    assert tax.mentioned("is it here") == ["computing"]
    assert tax.mentioned("") == []


fused_lists = st.lists(
    st.tuples(st.integers(0, 40), st.floats(-1, 1, allow_nan=False)),
    unique_by=lambda t: t[0],
    max_size=20,
).map(lambda xs: sorted((Candidate(f"c{i}", s, vector=s) for i, s in xs), key=rank_key))


@given(fused_lists, st.sets(st.integers(0, 40).map(lambda i: f"c{i}")), st.floats(0, 2))
def test_boost_raises_only_the_marked_and_keeps_everything(
    fused: list[Candidate], ids: set[str], factor: float
) -> None:
    before = {c.id: c.score for c in fused}
    order = [c.id for c in fused]
    boost(fused, ids, factor)
    assert sorted(c.id for c in fused) == sorted(before)
    for c in fused:
        if c.id in ids:
            assert c.score >= before[c.id]
        else:
            assert c.score == before[c.id]
    if ids & set(before) and factor:  # re-sorted; otherwise left as given
        assert [c.score for c in fused] == sorted((c.score for c in fused), reverse=True)
    elif not ids or not factor:
        assert [c.id for c in fused] == order


def test_boost_reorders_a_near_tie() -> None:
    def fused() -> list[Candidate]:
        return [Candidate("a", 0.50), Candidate("b", 0.47)]

    for ids, factor, want in (
        ({"b"}, 0.1, ["b", "a"]),
        ({"b"}, 0.0, ["a", "b"]),
        (set(), 0.1, ["a", "b"]),
    ):
        out = fused()
        boost(out, ids, factor)
        assert [c.id for c in out] == want


def _order(shelf: Shelf, query: str) -> list[str]:
    return [h.document.title for h in shelf.search(query, mode="lexical").hits]


def test_search_boosts_documents_with_a_named_concept(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(TAGGED)
    (tmp_path / "b.md").write_bytes(PLAIN)
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as shelf:
        shelf.add(tmp_path)
        assert FusionSettings().concept_boost > 0
        # No concept named: BM25's order (the shorter note first).
        assert _order(shelf, "leader election timeouts") == ["Notes B", "Notes A"]
        # "consensus" names distributed-systems, which the tagged note carries.
        assert _order(shelf, "consensus leader election timeouts") == ["Notes A", "Notes B"]
        # A broader concept boosts its narrower ones too ("computers" = computing).
        assert _order(shelf, "computers leader election timeouts") == ["Notes A", "Notes B"]
        shelf.fusion = dataclasses.replace(shelf.fusion, concept_boost=0.0)
        assert _order(shelf, "consensus leader election timeouts") == ["Notes B", "Notes A"]
        hit = shelf.search("consensus leader election timeouts", mode="lexical").hits[0]
        assert hit.scores.fused == hit.scores.lexical  # off: the score is left alone


def test_the_boost_is_configurable(tmp_path: Path, monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("DOCSHELF_CONCEPT_BOOST", "0.25")
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as shelf:
        assert shelf.fusion.concept_boost == 0.25
    monkeypatch.setenv("DOCSHELF_CONCEPT_BOOST", "0")
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as shelf:
        assert shelf.fusion.concept_boost == 0.0
