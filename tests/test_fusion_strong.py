"""The fusion study's options (issue 15): strong matches kept first, a per-query lexical
weight. All off by default."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.errors import InvalidInput
from docshelf.evaluate.beir import parse_config
from docshelf.search.fusion import FusionSettings, fuse, lead

rankings = st.lists(
    st.tuples(st.sampled_from([f"c{i}" for i in range(30)]), st.floats(0, 50)),
    max_size=20,
    unique_by=lambda t: t[0],
).map(lambda r: sorted(r, key=lambda t: -t[1]))


def test_lead_is_the_first_ones_share_of_the_range() -> None:
    assert lead([("a", 16.2), ("b", 9.7), ("c", 3.2)]) == pytest.approx(0.5)
    assert lead([("a", 1.0), ("b", 1.0), ("c", 0.0)]) == 0.0
    assert lead([("a", 5.0), ("b", 1.0)]) == 0.0  # too few to tell
    assert lead([("a", 2.0), ("b", 2.0), ("c", 2.0)]) == 0.0


@given(lex=rankings, vec=rankings, min_lead=st.floats(0.05, 1.0))
def test_a_first_place_by_a_wide_margin_stays_on_top(
    lex: list[tuple[str, float]], vec: list[tuple[str, float]], min_lead: float
) -> None:
    s = FusionSettings(strong_lead=min_lead, feedback_docs=0, few_lexical=0)
    fused = fuse(lex, vec, s)
    strong = [r[0][0] for r in (lex, vec) if r and lead(r) >= min_lead]
    assert {f.id for f in fused[: len(set(strong))]} == set(strong)
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    # a later re-sort by score (as the concept boost does) keeps them there
    assert sorted(fused, key=lambda f: (-f.score, f.id)) == fused
    assert {f.id for f in fused} == {i for i, _ in lex} | {i for i, _ in vec}


def test_by_default_a_strong_lexical_first_is_not_buried() -> None:
    lex = [("pep20", 16.2), ("x", 9.7)] + [(f"l{i}", 3.0) for i in range(20)]  # (many hold
    # the query's words: the rule of a rare word's few holders is silent)
    vec = [(f"v{i}", 0.6 - i * 0.01) for i in range(10)] + [("x", 0.2)]
    plain = [f.id for f in fuse(lex, vec, FusionSettings(strong_lead=0))]
    assert plain.index("pep20") >= 5  # what the convex fusion alone does
    assert fuse(lex, vec, FusionSettings())[0].id == "pep20"
    # a first place without a wide lead is left where the fusion puts it
    close = [("a", 10.0), ("b", 9.5)] + [(f"l{i}", 3.0) for i in range(20)]
    assert fuse(close, vec, FusionSettings())[0].id == "v0"


@given(lex=rankings, vec=rankings, top=st.floats(0.05, 1.0))
def test_the_adaptive_weight_moves_toward_an_even_split_only(
    lex: list[tuple[str, float]], vec: list[tuple[str, float]], top: float
) -> None:
    base = FusionSettings(method="convex")
    adapted = fuse(lex, vec, FusionSettings(method="convex", adaptive_lead=top))
    even = fuse(lex, vec, FusionSettings(method="convex", vector_weight=0.5, lexical_weight=0.5))
    if lead(lex) == 0:
        assert adapted == fuse(lex, vec, base)
    if lead(lex) >= top:
        assert [f.id for f in adapted] == [f.id for f in even]


def test_study_options_in_configurations() -> None:
    mode, fusion = parse_config("hybrid:convex:0.8:5:1.0+strong:0.4+adapt:0.5")
    assert mode == "hybrid" and fusion is not None
    assert (fusion.strong_lead, fusion.adaptive_lead, fusion.vector_weight) == (0.4, 0.5, 0.8)
    assert parse_config("hybrid+adapt:0.5")[1] == FusionSettings(adaptive_lead=0.5)
    assert parse_config("hybrid+strong:0")[1] == FusionSettings(strong_lead=0)  # as before
    for bad in ("hybrid+magic:1", "lexical+strong:0.3", "hybrid+strong:x", "hybrid+adapt:-1"):
        with pytest.raises(InvalidInput):
            parse_config(bad)


@given(
    lex=rankings,
    vec=rankings,
    before=rankings,
    min_lead=st.floats(0.0, 0.5),
    top=st.integers(1, 6),
    strong=st.sampled_from([0.0, 0.3]),
)
def test_a_clear_first_place_is_kept_in_the_top(
    lex: list[tuple[str, float]],
    vec: list[tuple[str, float]],
    before: list[tuple[str, float]],
    min_lead: float,
    top: int,
    strong: float,
) -> None:
    s = FusionSettings(first_top=top, first_lead=min_lead, strong_lead=strong)
    fused = fuse(lex, vec, s, before_feedback=before)
    firsts = {r[0][0] for r in (lex, vec, before) if r and lead(r) >= min_lead}
    firsts &= {f.id for f in fused}  # the list before feedback may name others
    ids = [f.id for f in fused]
    for first in firsts:  # at place `top` or above, several such one after another
        assert ids.index(first) < top - 1 + len(firsts)
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    assert set(ids) == {i for i, _ in lex} | {i for i, _ in vec}
    # off, the fusion is what it was
    plain = fuse(lex, vec, FusionSettings(strong_lead=strong))
    assert [f.id for f in fuse(lex, vec, FusionSettings(strong_lead=strong, first_top=0))] == [
        f.id for f in plain
    ]


@given(lex=rankings, vec=rankings, few=st.integers(1, 12), strong=st.sampled_from([0.0, 0.3]))
def test_a_rare_words_few_holders_come_first(
    lex: list[tuple[str, float]], vec: list[tuple[str, float]], few: int, strong: float
) -> None:
    s = FusionSettings(few_lexical=few, strong_lead=strong)
    fused = fuse(lex, vec, s)
    ids = [f.id for f in fused]
    plain = [f.id for f in fuse(lex, vec, FusionSettings(strong_lead=strong, few_lexical=0))]
    if len(lex) >= few:
        assert ids == plain  # a list of many: the rule is silent
    else:  # every holder first, in the order the fusion gave them; the rest as they were
        held = {i for i, _ in lex}
        strong_ids = {r[0][0] for r in (lex, vec) if r and strong and lead(r) >= strong}
        first = held | strong_ids
        assert set(ids[: len(first)]) == first
        assert set(ids[: len(strong_ids)]) == strong_ids  # a strong match above them
        assert all(f.strong for f in fused[: len(first)])
        assert [i for i in ids if i not in first] == [i for i in plain if i not in first]
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    # a later re-sort (as the concept boost does) keeps the order
    assert sorted(fused, key=lambda f: (not f.strong, -f.score, f.id)) == fused
    assert set(ids) == {i for i, _ in lex} | {i for i, _ in vec}


def test_a_name_only_a_few_snippets_hold_is_not_buried() -> None:
    """A name such as "Obsidian2Mkdocs": three snippets hold it, none leading by much,
    and the vector side (which cuts the name into word pieces) ranks other notes far
    above them."""
    lex = [("index", 11.4), ("note6", 10.6), ("note1", 7.3)]
    vec = [(f"v{i}", 0.65 - i * 0.01) for i in range(20)] + [("note1", 0.45)]
    plain = [f.id for f in fuse(lex, vec, FusionSettings(few_lexical=0))]
    assert plain.index("note1") > 5 and "index" not in plain[:10]
    kept = [f.id for f in fuse(lex, vec, FusionSettings())]  # the default: on
    assert set(kept[:3]) == {"index", "note6", "note1"}
    assert parse_config("hybrid+few:4")[1] == FusionSettings(few_lexical=4)
    assert parse_config("hybrid+few:0")[1] == FusionSettings(few_lexical=0)


def test_a_lexical_first_the_vector_side_never_found_is_shown() -> None:
    # a lead too small for the strong rule: the convex fusion alone leaves it far down
    lex = [("d09", 10.0), ("x", 8.5)] + [(f"l{i}", 3.0) for i in range(5)]
    vec = [(f"v{i}", 0.6 - i * 0.01) for i in range(20)] + [("x", 0.2)]
    plain = [f.id for f in fuse(lex, vec, FusionSettings(few_lexical=0))]
    assert "d09" not in plain[:10]
    near_top = FusionSettings(first_top=3, first_lead=0.1, few_lexical=0)
    kept = [f.id for f in fuse(lex, vec, near_top)]
    assert kept.index("d09") == 2
    assert kept[:2] == plain[:2]


def test_a_first_place_both_lists_agree_on_stays_first_after_feedback() -> None:
    lex = [("both", 9.0), ("a", 8.9)] + [(f"l{i}", 3.0) for i in range(5)]
    before = [("both", 0.70), ("b", 0.69)] + [(f"v{i}", 0.5) for i in range(5)]
    moved = [("b", 0.80), ("c", 0.79), ("both", 0.6)] + [(f"v{i}", 0.5) for i in range(5)]
    off = FusionSettings(few_lexical=0)  # (seven hold the query's words here)
    assert fuse(lex, moved, off, before_feedback=before)[0].id != "both"
    agreed = fuse(lex, moved, replace(off, agree_first=True), before_feedback=before)
    assert agreed[0].id == "both" and agreed[0].strong
