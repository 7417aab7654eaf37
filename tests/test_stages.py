"""Each ranking stage on its own (search/stages/), and the order they run in
(search/order.py). The fusion rules' own properties are in test_fusion_strong.py, the
exact matches' in test_evidence.py, the concept boost's in test_concept_boost.py."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from docshelf.evaluate.lists import bare_search, ids
from docshelf.model import Document, Tier
from docshelf.search.candidate import Candidate, Precedence, lift, rank_key, ranked
from docshelf.search.order import FusionSettings, Ranking, fusion, product
from docshelf.search.pipeline import Search, run
from docshelf.search.reader import Reader
from docshelf.search.retriever import Retriever
from docshelf.search.stages.cite import Cite
from docshelf.search.stages.feedback import Feedback
from docshelf.search.stages.fuse import Fuse
from docshelf.search.stages.recall import Recall
from docshelf.search.stages.rerank import Rerank
from docshelf.search.stages.view import Expand, Facets, SeenBy
from docshelf.shelf import Shelf
from docshelf.store.base import SearchFilters


def _prepared(retriever: Retriever, text: str, **kw: object) -> Search:
    search, _ = retriever.prepare(text, **kw)  # type: ignore[arg-type]
    assert search is not None
    return search


def test_the_product_order_reads_top_to_bottom() -> None:
    names = [stage.name for stage in product(FusionSettings()).stages]
    assert names == [
        "recall",
        "fuse",
        "strong",
        "few",
        "feedback",
        "concepts",
        "written",
        "exact",
        "passage",
        "cite",
        "rerank",
        "view",
        "weak",
        "expand",
        "facets",
    ]
    # the feedback stage fuses again with the same fusion stages
    feedback = product(FusionSettings()).stages[4]
    assert isinstance(feedback, Feedback) and feedback.refuse == fusion(FusionSettings())
    # exact matches off: the stage is not in the order
    off = product(FusionSettings(exact_first=False)).stages
    assert "exact" not in [s.name for s in off]


def test_lift_keeps_order_among_equals_and_never_touches_scores() -> None:
    cands = [Candidate(i, s) for i, s in (("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6))]
    assert lift(cands, ["d", "b"], Precedence.STRONG)
    assert ids(cands) == ["b", "d", "a", "c"]
    assert [c.score for c in cands] == [0.8, 0.6, 0.9, 0.7]
    assert not lift(cands, ["x"], Precedence.NAMED)  # no such candidate: nothing moves
    lift(cands, ["c"], Precedence.NAMED)  # a weightier flag outranks every lower set
    assert ids(cands) == ["c", "b", "d", "a"]
    assert sorted(cands, key=rank_key) == cands


def test_fuse_keeps_a_single_lists_order_and_scores() -> None:
    lexical = [("b", 3.0), ("a", 3.0), ("c", 1.0)]  # a tie, in the engine's order
    search = bare_search(lexical, mode="lexical")
    Fuse()(search)
    assert [(c.id, c.score, c.lexical, c.lexical_rank) for c in search.candidates] == [
        ("b", 3.0, 3.0, 1),
        ("a", 3.0, 3.0, 2),
        ("c", 1.0, 1.0, 3),
    ]
    search = bare_search(vector=[("v", 0.5)], mode="vector")
    Fuse()(search)
    assert [(c.id, c.score, c.vector, c.lexical) for c in search.candidates] == [
        ("v", 0.5, 0.5, None)
    ]


def test_fuse_scores_by_convex_min_max_or_rank() -> None:
    lexical, vector = [("a", 10.0), ("b", 5.0), ("c", 0.0)], [("b", 0.9), ("d", 0.5)]
    search = bare_search(lexical, vector)
    Fuse()(search)
    got = {c.id: c.score for c in search.candidates}
    assert got == pytest.approx({"a": 0.15, "b": 0.85 + 0.075, "c": 0.0, "d": 0.0})
    assert ids(search.candidates) == ["b", "a", "c", "d"]  # ties by id
    search = bare_search(lexical, vector)
    Fuse("rrf", 0.5, 0.5, 60)(search)
    got = {c.id: c.score for c in search.candidates}
    assert got["b"] == pytest.approx(0.5 / 62 + 0.5 / 61)
    assert got["d"] == pytest.approx(0.5 / 62)


def test_feedback_searches_again_and_fuses_again(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shelf.add(notes)
    search = _prepared(shelf.retriever, "leader election heartbeat")
    stages = fusion(shelf.fusion)
    run([Recall(), *stages], search)
    first = search.vector
    asked: list[bool] = []
    engine_search = search.parts.vector.search

    def spying(*a: object, **kw: object) -> list[tuple[str, float]]:
        asked.append(bool(kw.get("near")))
        return engine_search(*a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(search.parts.vector, "search", spying)
    Feedback(2, 1.0, refuse=stages)(search)
    assert asked == [True]  # one more vector search, near the snippets just found
    assert search.before_feedback == first
    assert {c.id for c in search.candidates} == {i for i, _ in search.lexical + search.vector}
    # off, or in a single mode: nothing happens
    for mode, docs in (("hybrid", 0), ("lexical", 2)):
        other = _prepared(shelf.retriever, "leader election heartbeat", mode=mode)
        run([Recall(), *stages], other)
        before = ids(other.candidates)
        Feedback(docs, 1.0, refuse=stages)(other)
        assert ids(other.candidates) == before and other.before_feedback is None


def test_cite_passes_over_phrases_missing_repeats_and_cited_places(
    shelf: Shelf, tmp_path: Path
) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    same = "The starter doubles in six hours at room temperature. " * 8  # 400 characters on
    (root / "a.md").write_text(f"# Notes\n\n{same}Fed at noon.\n")
    (root / "b.md").write_text(f"# Notes\n\n{same}Fed at night.\n")  # near-identical: one hit
    (root / "c.md").write_text("# C\n\nA starter that doubles slowly needs a warmer place.\n")
    shelf.add(root)
    search = _prepared(shelf.retriever, "starter doubles", mode="lexical", limit=10)
    run([Recall(), Fuse(), Cite()], search)
    texts = [h.chunk.text for h in search.hits]
    assert sum(same in t for t in texts) == 1 and len(search.hits) == 2
    assert len(search.pool) == 3  # every candidate's document, near-duplicates and all
    phrase = _prepared(shelf.retriever, '"warmer place" starter', mode="lexical")
    run([Recall(), Fuse(), Cite()], phrase)
    assert [h.document.rel_path for h in phrase.hits] == ["c.md"]


class Reversing:
    name = "reverse"

    def __init__(self) -> None:
        self.seen: list[int] = []

    def scores(self, query: str, passages: Sequence[str]) -> list[float] | None:
        self.seen.append(len(passages))
        return [float(n) for n in range(len(passages))]


class Declining:
    name = "decline"

    def scores(self, query: str, passages: Sequence[str]) -> list[float] | None:
        return None


def test_rerank_orders_the_top_k_or_leaves_the_fused_order(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    plain = _prepared(shelf.retriever, "flour starter leader", mode="lexical", limit=10)
    run([Recall(), Fuse(), Cite()], plain)
    assert len(plain.hits) >= 3
    fused = list(plain.hits)
    ids = [h.chunk.id for h in fused]
    reverse = Reversing()
    plain.parts = plain.parts._replace(reranker=reverse, rerank_top_k=3)
    Rerank()(plain)
    assert [h.chunk.id for h in plain.hits] == ids[:3][::-1] + ids[3:]
    assert reverse.seen == [3] and plain.hits[0].scores.rerank == 2.0
    plain.hits, plain.parts = fused, plain.parts._replace(reranker=Declining())
    Rerank()(plain)
    assert [h.chunk.id for h in plain.hits] == ids


def test_the_view_cuts_the_page_names_documents_expands_and_counts(
    shelf: Shelf, notes: Path
) -> None:
    shelf.add(notes)

    def renamed(docs: Sequence[Document], user_id: str | None) -> list[Document]:
        return [dataclasses.replace(d, title=f"mine: {d.title}") for d in docs]

    search = _prepared(
        shelf.retriever,
        "flour starter leader",
        mode="lexical",
        limit=2,
        user_id="someone",
        expand="parent-section",
        facets=True,
    )
    search.filters = dataclasses.replace(search.filters, user_id=None)  # (no such user)
    search.parts = search.parts._replace(seen_by=renamed)
    run([Recall(), Fuse(), Cite(), SeenBy(), Expand(), Facets()], search)
    assert len(search.hits) == 2
    assert all(h.document.title.startswith("mine: ") for h in search.hits)
    assert all(h.citation.title.startswith("mine: ") for h in search.hits)
    assert all(h.context is not None and h.context.id == h.chunk.parent_id for h in search.hits)
    assert sum(search.facets["type"].values()) == len(set(search.pool))


def test_the_reader_reads_in_few_calls_and_only_what_is_asked(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shelf.add(notes)
    store = shelf.store
    calls: list[tuple[str, int]] = []
    for name in ("chunk_places", "get_chunks", "get_documents"):
        real = getattr(store, name)

        def counting(ids: Sequence[str], real: object = real, name: str = name) -> object:
            calls.append((name, len(ids)))
            return real(ids)  # type: ignore[operator]

        monkeypatch.setattr(store, name, counting)
    snippets = [c for d in shelf.documents() for c in store.chunks_of_document(d.id, Tier.SNIPPET)]
    cands = [Candidate(c.id) for c in snippets]
    assert len(cands) >= 4
    reader = Reader(store, wanted=1)
    documents = reader.document_ids(cands)
    assert calls == [("chunk_places", len(cands))]  # every untold candidate's place at once
    assert set(documents) == {c.id for c in cands}
    calls.clear()
    first = reader.chunk(cands[0], iter(cands[:3]), 3)
    assert first is not None and calls == [("get_chunks", 3)]
    assert reader.chunk(cands[1], iter(cands), 8) is not None and len(calls) == 1  # read with it
    calls.clear()
    doc = reader.document(first.document_id, cands, 4)
    assert doc is not None and calls[0][0] == "get_documents"
    assert reader.document(first.document_id, cands, 4) is doc and len(calls) == 1


# -- the worked example of docs/search.md ("Adding a rule"): one stage, one line ------------
class DraftsLast(NamedTuple):
    tag: str = "draft"

    @property
    def name(self) -> str:
        return "drafts"

    def __call__(self, search: Search) -> None:
        documents = search.reader.document_ids(search.candidates)  # (told: no read)
        drafts = search.parts.store.documents_matching(
            SearchFilters(document_ids=tuple(set(documents.values())), tags=(self.tag,))
        )
        for c in search.candidates:
            if documents.get(c.id) in drafts:
                c.score *= 0.5
        ranked(search.candidates)  # precedence, then score, then id


def test_a_new_rule_is_one_stage_and_one_line_in_the_order(shelf: Shelf, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    (root / "plan.md").write_text("---\ntags: [draft]\n---\n# Plan\n\nThe release plan for May.\n")
    (root / "final.md").write_text("# Final\n\nThe release plan, as it shipped in June.\n")
    shelf.add(root)
    before = [h.document.rel_path for h in shelf.search("release plan", mode="lexical").hits]
    assert before[0] == "plan.md"  # the shorter note first, by BM25
    stages = list(product(shelf.fusion).stages)
    at = next(n for n, s in enumerate(stages) if s.name == "concepts") + 1
    stages.insert(at, DraftsLast())  # the one line
    shelf.ranking = Ranking(tuple(stages), shelf.fusion)
    result = shelf.search("release plan", mode="lexical")
    assert [h.document.rel_path for h in result.hits] == ["final.md", "plan.md"]
    assert "drafts" in result.timings_ms


def test_the_docs_list_the_stages_in_the_products_order() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "search.md").read_text()
    rows = re.findall(r"^\| \d+ \| (\w[\w-]*) \| `stages/(\w+)\.py` \|", text, re.M)
    stages = product(FusionSettings()).stages
    assert [name for name, _ in rows] == [s.name for s in stages]
    assert [f"docshelf.search.stages.{module}" for _, module in rows] == [
        type(s).__module__ for s in stages
    ]
    order = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    assert " → ".join(s.name for s in stages) in order.replace("\n", " ")
