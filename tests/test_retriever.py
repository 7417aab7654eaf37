"""The Retriever built from its parts, its public stages, and the engines chosen for a store."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from docshelf.config import Settings
from docshelf.knowledge.taxonomy import configured_taxonomy
from docshelf.model import Document
from docshelf.search.ann import SidecarVectorIndex
from docshelf.search.cache import RetrievalCache
from docshelf.search.engines import (
    ExactVectorSearch,
    NativeVectorEngine,
    StoreLexicalSearch,
    engines_for,
)
from docshelf.search.fusion import FusionSettings, fuse
from docshelf.search.lexical import SidecarLexicalIndex
from docshelf.search.query import lexical_terms, parse_query
from docshelf.search.results import CANDIDATE_POOL, SearchResult
from docshelf.search.retriever import Retriever
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters, Store
from docshelf.telemetry import Metrics
from tests.fakes import HashEmbedder

QUERIES = ["leader election heartbeat", "starter flour", "plumber leak", "replicated log"]


def test_engines_follow_what_the_store_can_do(store: Store, tmp_path: Path) -> None:
    engines = engines_for(store, Settings.from_env(tmp_path))
    if store.url.startswith("sqlite"):
        assert isinstance(engines.lexical, SidecarLexicalIndex)
        assert isinstance(engines.vector, SidecarVectorIndex)
        assert engines.lexical is engines.lexical_sidecar
        assert engines.vector is engines.vector_sidecar
    else:  # PostgreSQL answers both by itself: its full-text search and pgvector HNSW
        assert isinstance(engines.lexical, StoreLexicalSearch)
        assert isinstance(engines.vector, NativeVectorEngine)
        assert engines.lexical_sidecar is None and engines.vector_sidecar is None


def test_the_exact_scan_agrees_with_the_sidecar_below_its_threshold(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    shelf.add(notes)
    assert shelf.vector_index is not None and shelf.vector_index.path == "exact"
    exact = ExactVectorSearch(shelf.store)
    for text in QUERIES:
        q = embedder.embed([text])[0]
        for filters in (SearchFilters(), SearchFilters(file_type="text")):
            got = exact.search(q, 5, filters)
            assert got, (text, filters)
            assert got == shelf.vector_index.search(q, 5, filters)


def _own_retriever(shelf: Shelf, embedder: HashEmbedder, fusion: FusionSettings) -> Retriever:
    """A Retriever wired by hand, from parts only: nothing of the Shelf but its store."""
    engines = engines_for(shelf.store, shelf.settings)

    def seen_by(docs: Sequence[Document], user_id: str | None) -> list[Document]:
        return list(docs)

    return Retriever(
        shelf.store,
        lexical=engines.lexical,
        vector=engines.vector,
        embedder=lambda: embedder,
        fusion=fusion,
        reranker=None,
        rerank_top_k=20,
        taxonomy=configured_taxonomy(),
        cache=RetrievalCache[SearchResult](0),
        metrics=Metrics(),
        seen_by=seen_by,
    )


def _ids(result: SearchResult) -> list[tuple[str, float]]:
    return [(h.chunk.id, round(h.score, 9)) for h in result.hits]


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_a_retriever_from_its_parts_answers_as_the_shelf_does(
    shelf: Shelf, notes: Path, embedder: HashEmbedder, mode: str
) -> None:
    shelf.add(notes)
    retriever = _own_retriever(shelf, embedder, shelf.fusion)
    for text in QUERIES:
        mine = retriever.search(text, mode=mode, limit=5)
        theirs = shelf.search(text, mode=mode, limit=5)
        assert mine.hits, text
        assert _ids(mine) == _ids(theirs)
        assert mine.candidates == theirs.candidates


def test_the_public_stages_compose_to_search(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    """recall → fuse → hits by hand is search without feedback (what bench/feedback.py
    replays); with feedback on, feedback_recall gives search's second vector list."""
    shelf.add(notes)
    plain = dataclasses.replace(shelf.fusion, feedback_docs=0, concept_boost=0.0)
    retriever = _own_retriever(shelf, embedder, plain)
    none = SearchFilters()
    for text in QUERIES:
        parsed = parse_query(text)
        lexical = retriever.lexical_recall(lexical_terms(parsed.text), CANDIDATE_POOL, none)
        qvec = np.asarray(embedder.embed([parsed.text])[0], dtype=np.float32)
        vector = retriever.vector_recall(qvec, CANDIDATE_POOL, none)
        fused = fuse(lexical, vector, plain)
        hits, pool = retriever.hits(fused, 5, parsed, "snippet", None)
        searched = retriever.search(text, limit=5)
        assert hits and [h.chunk.id for h in hits] == [h.chunk.id for h in searched.hits]
        assert pool == searched.candidates

        retriever.fusion = dataclasses.replace(plain, feedback_docs=2, feedback_weight=1.0)
        moved = retriever.feedback_recall(qvec, fused, CANDIDATE_POOL, none)
        again = fuse(lexical, moved, retriever.fusion)
        hits, _ = retriever.hits(again, 5, parsed, "snippet", None)
        searched = retriever.search(text, limit=5)
        assert [h.chunk.id for h in hits] == [h.chunk.id for h in searched.hits]
        retriever.fusion = plain


def test_a_library_of_another_model_is_searched_lexically(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    shelf.add(notes)
    other = HashEmbedder(model_id="another-model")
    retriever = _own_retriever(shelf, other, shelf.fusion)
    assert not retriever.can_embed_queries()
    result = retriever.search("leader election", limit=3)
    assert result.mode == "lexical" and result.notice and result.hits
    assert not other.embedded  # no query vector from a model the library was not made with
    assert _own_retriever(shelf, embedder, shelf.fusion).can_embed_queries()
