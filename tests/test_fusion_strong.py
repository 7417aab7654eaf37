"""The fusion stages' rules (issue 15): a clear first kept first, a rare word's few holders
next; and the study's (evaluate/study.py), which the product does not run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.errors import InvalidInput
from docshelf.evaluate.beir import parse_config
from docshelf.evaluate.lists import fused, ids
from docshelf.evaluate.study import Study, study_fusion, study_ranking
from docshelf.search.candidate import Precedence, rank_key
from docshelf.search.order import FusionSettings, product
from docshelf.search.stages.strong import lead

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
    out = fused(lex, vec, FusionSettings(strong_lead=min_lead, few_lexical=0))
    strong = {r[0][0] for r in (lex, vec) if r and lead(r) >= min_lead}
    assert set(ids(out[: len(strong)])) == strong
    assert all(c.precedence == Precedence.STRONG for c in out[: len(strong)])
    # the order is precedence, then each candidate's own score: nothing is nudged
    assert sorted(out, key=rank_key) == out
    plain = fused(lex, vec, FusionSettings(strong_lead=0, few_lexical=0))
    assert {c.id: c.score for c in out} == {c.id: c.score for c in plain}
    assert set(ids(out)) == {i for i, _ in lex} | {i for i, _ in vec}


def test_by_default_a_strong_lexical_first_is_not_buried() -> None:
    lex = [("pep20", 16.2), ("x", 9.7)] + [(f"l{i}", 3.0) for i in range(20)]  # (many hold
    # the query's words: the rule of a rare word's few holders is silent)
    vec = [(f"v{i}", 0.6 - i * 0.01) for i in range(10)] + [("x", 0.2)]
    plain = ids(fused(lex, vec, FusionSettings(strong_lead=0)))
    assert plain.index("pep20") >= 5  # what the convex fusion alone does
    assert fused(lex, vec)[0].id == "pep20"
    # a first place without a wide lead is left where the fusion puts it
    close = [("a", 10.0), ("b", 9.5)] + [(f"l{i}", 3.0) for i in range(20)]
    assert fused(close, vec)[0].id == "v0"


@given(lex=rankings, vec=rankings, few=st.integers(1, 12), strong=st.sampled_from([0.0, 0.3]))
def test_a_rare_words_few_holders_come_first(
    lex: list[tuple[str, float]], vec: list[tuple[str, float]], few: int, strong: float
) -> None:
    out = ids(fused(lex, vec, FusionSettings(few_lexical=few, strong_lead=strong)))
    plain = ids(fused(lex, vec, FusionSettings(strong_lead=strong, few_lexical=0)))
    if len(lex) >= few:
        assert out == plain  # a list of many: the rule is silent
    else:  # every holder first, in the order the fusion gave them; the rest as they were
        held = {i for i, _ in lex}
        strong_ids = {r[0][0] for r in (lex, vec) if r and strong and lead(r) >= strong}
        first = held | strong_ids
        assert set(out[: len(first)]) == first
        assert set(out[: len(strong_ids)]) == strong_ids  # a strong match above them
        assert [i for i in out if i not in first] == [i for i in plain if i not in first]
    assert set(out) == {i for i, _ in lex} | {i for i, _ in vec}


def test_a_name_only_a_few_snippets_hold_is_not_buried() -> None:
    """A name such as "Obsidian2Mkdocs": three snippets hold it, none leading by much,
    and the vector side (which cuts the name into word pieces) ranks other notes far
    above them."""
    lex = [("index", 11.4), ("note6", 10.6), ("note1", 7.3)]
    vec = [(f"v{i}", 0.65 - i * 0.01) for i in range(20)] + [("note1", 0.45)]
    plain = ids(fused(lex, vec, FusionSettings(few_lexical=0)))
    assert plain.index("note1") > 5 and "index" not in plain[:10]
    kept = fused(lex, vec)  # the default: on
    assert set(ids(kept[:3])) == {"index", "note6", "note1"}
    assert all(c.precedence == Precedence.FEW for c in kept[:3])
    assert parse_config("hybrid+few:4")[1] == product(FusionSettings(few_lexical=4))
    assert parse_config("hybrid+few:0")[1] == product(FusionSettings(few_lexical=0))


def test_configurations_name_the_product_settings_and_the_study_rules() -> None:
    mode, ranking = parse_config("hybrid:convex:0.8:5:1.0+strong:0.4+adapt:0.5")
    assert mode == "hybrid" and ranking is not None
    s = ranking.settings
    assert (s.strong_lead, s.vector_weight) == (0.4, 0.8)
    assert ranking == study_ranking(s, Study(adaptive_lead=0.5))
    assert ranking != product(s)
    assert parse_config("hybrid+strong:0")[1] == product(FusionSettings(strong_lead=0))
    assert parse_config("hybrid")[1] is None  # the shelf's own
    for bad in ("hybrid+magic:1", "lexical+strong:0.3", "hybrid+strong:x", "hybrid+adapt:-1"):
        with pytest.raises(InvalidInput):
            parse_config(bad)


def test_the_product_runs_no_study_rule() -> None:
    names = {type(stage).__module__ for stage in product(FusionSettings()).stages}
    assert all(name.startswith("docshelf.search.stages.") for name in names)
    assert study_ranking(FusionSettings(), Study()) == product(FusionSettings())
    # a stage is a tuple of its settings: two kinds of the same settings differ
    agreeing = study_ranking(FusionSettings(), Study(agree_first=True))
    assert agreeing != product(FusionSettings())
    assert hash(agreeing) != hash(product(FusionSettings()))


# -- the study's rules ---------------------------------------------------------------------
@given(lex=rankings, vec=rankings, top=st.floats(0.05, 1.0))
def test_the_adaptive_weight_moves_toward_an_even_split_only(
    lex: list[tuple[str, float]], vec: list[tuple[str, float]], top: float
) -> None:
    base = FusionSettings(method="convex")
    adapted = fused(lex, vec, stages=study_fusion(base, Study(adaptive_lead=top)))
    even = fused(lex, vec, FusionSettings(vector_weight=0.5, lexical_weight=0.5))
    if lead(lex) == 0:
        assert ids(adapted) == ids(fused(lex, vec, base))
    if lead(lex) >= top:
        assert ids(adapted) == ids(even)


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
    s = FusionSettings(strong_lead=strong)
    near = study_fusion(s, Study(first_top=top, first_lead=min_lead))
    out = ids(fused(lex, vec, before=before, stages=near))
    firsts = {r[0][0] for r in (lex, vec, before) if r and lead(r) >= min_lead}
    firsts &= set(out)  # the list before feedback may name others
    for first in firsts:  # at place `top` or above, several such one after another
        assert out.index(first) < top - 1 + len(firsts)
    assert set(out) == {i for i, _ in lex} | {i for i, _ in vec}
    # off, the fusion is what it was
    off = study_fusion(s, Study(first_top=0))
    assert ids(fused(lex, vec, stages=off)) == ids(fused(lex, vec, s))


def test_a_lexical_first_the_vector_side_never_found_is_shown() -> None:
    # a lead too small for the strong rule: the convex fusion alone leaves it far down
    lex = [("d09", 10.0), ("x", 8.5)] + [(f"l{i}", 3.0) for i in range(5)]
    vec = [(f"v{i}", 0.6 - i * 0.01) for i in range(20)] + [("x", 0.2)]
    off = FusionSettings(few_lexical=0)
    plain = ids(fused(lex, vec, off))
    assert "d09" not in plain[:10]
    kept = ids(fused(lex, vec, stages=study_fusion(off, Study(first_top=3, first_lead=0.1))))
    assert kept.index("d09") == 2
    assert kept[:2] == plain[:2]


def test_a_first_place_both_lists_agree_on_stays_first_after_feedback() -> None:
    lex = [("both", 9.0), ("a", 8.9)] + [(f"l{i}", 3.0) for i in range(5)]
    before = [("both", 0.70), ("b", 0.69)] + [(f"v{i}", 0.5) for i in range(5)]
    moved = [("b", 0.80), ("c", 0.79), ("both", 0.6)] + [(f"v{i}", 0.5) for i in range(5)]
    off = FusionSettings(few_lexical=0)  # (seven hold the query's words here)
    assert fused(lex, moved, off, before=before)[0].id != "both"
    agreed = fused(lex, moved, before=before, stages=study_fusion(off, Study(agree_first=True)))
    assert agreed[0].id == "both" and agreed[0].precedence == Precedence.STRONG
    assert replace(Study(), agree_first=True) != Study()
