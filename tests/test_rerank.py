"""The reranking port: a fake cross-encoder model, and an LLM judge on a fake server."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from docshelf.errors import InvalidInput, Unavailable
from docshelf.llm.openai import OpenAILLM
from docshelf.rerank import make_reranker
from docshelf.rerank.cross_encoder import CrossEncoderReranker
from docshelf.rerank.llm_judge import LLMJudge, parse_scores
from docshelf.shelf import Shelf
from tests.fake_llm import Script, fake_llm_server


class FakeCrossEncoder:
    """Scores a (query, passage) pair by how often 'sourdough' appears in the passage."""

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, pairs: Sequence[tuple[str, str]], show_progress_bar: bool = False) -> Any:
        self.calls += 1
        return [float(p.lower().count("sourdough")) for _, p in pairs]


@pytest.fixture
def library(shelf: Shelf, notes: Path) -> Shelf:
    shelf.add(notes)
    return shelf


def test_factory() -> None:
    assert make_reranker("none") is None
    with pytest.raises(Unavailable):
        make_reranker("llm", llm=None)
    with pytest.raises(Unavailable):
        make_reranker("cross-encoder:/no/such/model")
    with pytest.raises(InvalidInput):
        make_reranker("magic")


def test_cross_encoder_reorders_the_top_k(library: Shelf) -> None:
    fused = library.search("flour", mode="lexical").hits
    model = FakeCrossEncoder()
    library.reranker = CrossEncoderReranker("unused", model=model)
    reranked = library.search("flour", mode="lexical")
    assert model.calls == 1 and "rerank" in reranked.timings_ms
    assert reranked.hits[0].document.rel_path == "cooking.md"
    # header [PATH: Sourdough] and the heading itself
    assert [h.scores.rerank for h in reranked.hits] == [2.0, 0.0]
    assert {h.chunk.id for h in reranked.hits} == {h.chunk.id for h in fused}


def test_a_reranked_hit_names_no_rule_that_placed_it(library: Shelf) -> None:
    """A rule's lift (``placed_by``) explains the fused order; the reranker's replaces it."""
    fused = library.search("leader election", mode="lexical").hits
    assert fused[0].placed_by == ("named",)  # the heading the query is
    library.reranker = CrossEncoderReranker("unused", model=FakeCrossEncoder())
    reranked = library.search("leader election", mode="lexical").hits
    assert reranked and all(h.placed_by == () for h in reranked)


def test_parse_judge_scores() -> None:
    assert parse_scores('Sure! {"scores": [3, 9.5]}', 2) == [3.0, 9.5]
    for bad in ('{"scores": [1]}', "{not json}", '{"scores": [1, "x"]}', "7, 3", '{"s": [1,2]}'):
        assert parse_scores(bad, 2) is None
    assert parse_scores('{"scores": [true, 1]}', 2) is None


def test_llm_judge_with_retry_and_fallback(library: Shelf) -> None:
    fused = [h.chunk.id for h in library.search("flour", mode="lexical").hits]
    assert len(fused) == 2
    script = Script(("ok", "I think the first"), ("ok", '{"scores": [0, 10]}'))
    with fake_llm_server(script) as url:
        library.reranker = LLMJudge(OpenAILLM(url, "judge", backoff=0.01))
        judged = [h.chunk.id for h in library.search("flour", mode="lexical").hits]
    assert judged == list(reversed(fused)) and len(script.requests) == 2

    broken = Script(("ok", "no"), ("ok", "still no"))
    with fake_llm_server(broken) as url:
        library.reranker = LLMJudge(OpenAILLM(url, "judge", backoff=0.01))
        assert [h.chunk.id for h in library.search("flour", mode="lexical").hits] == fused

    slow = Script(("sleep", 1.0), ("sleep", 1.0))
    with fake_llm_server(slow) as url:
        library.reranker = LLMJudge(OpenAILLM(url, "judge", timeout=0.2, attempts=1))
        result = library.search("flour", mode="lexical")
    assert [h.chunk.id for h in result.hits] == fused  # over budget: the fused order stands
    assert all(h.scores.rerank is None for h in result.hits)
