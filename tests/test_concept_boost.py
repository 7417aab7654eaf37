"""Concept boosting: hits whose document carries a concept the query names rank higher."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docshelf.knowledge.taxonomy import DEFAULT, load_taxonomy
from docshelf.search.fusion import Fused, FusionSettings, boost
from docshelf.search.query import STOPWORDS
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
).map(lambda xs: [Fused(f"c{i}", s, None, s) for i, s in xs])


@given(fused_lists, st.sets(st.integers(0, 40).map(lambda i: f"c{i}")), st.floats(0, 2))
def test_boost_raises_only_the_marked_and_keeps_everything(
    fused: list[Fused], ids: set[str], factor: float
) -> None:
    out = boost(fused, ids, factor)
    assert sorted(f.id for f in out) == sorted(f.id for f in fused)
    before = {f.id: f.score for f in fused}
    for f in out:
        if f.id in ids:
            assert f.score >= before[f.id]
        else:
            assert f.score == before[f.id]
    if ids and factor:  # re-sorted; otherwise returned as given
        assert [f.score for f in out] == sorted((f.score for f in out), reverse=True)


def test_boost_reorders_a_near_tie() -> None:
    fused = [Fused("a", 0.50, None, None), Fused("b", 0.47, None, None)]
    assert [f.id for f in boost(fused, {"b"}, 0.1)] == ["b", "a"]
    assert [f.id for f in boost(fused, {"b"}, 0.0)] == ["a", "b"]
    assert boost(fused, set(), 0.1) == fused


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
