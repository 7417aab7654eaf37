"""Pseudo-relevance feedback on the vector side of hybrid search."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from docshelf.errors import InvalidInput
from docshelf.evaluate.beir import parse_config
from docshelf.search.order import FusionSettings
from docshelf.search.stages.feedback import feedback_query
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder

unit = arrays(np.float32, 8, elements=st.floats(-1, 1, width=32)).filter(
    lambda v: float(np.linalg.norm(v)) > 0.1
)


@given(unit, st.lists(unit, min_size=1, max_size=5), st.floats(0.1, 3))
def test_feedback_moves_the_query_toward_the_top_snippets(
    q: np.ndarray, docs: list[np.ndarray], weight: float
) -> None:
    q = q / np.linalg.norm(q)
    mean = np.mean(np.stack(docs), axis=0)
    moved = feedback_query(q, docs, weight)
    if float(np.linalg.norm(q + weight * mean)) < 1e-3:
        return  # cancelled out: nothing meaningful to check
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0, abs=1e-4)
    # no further from the feedback's centre than the query was
    assert float(moved @ mean) >= float(q @ mean) - 1e-4


def test_no_feedback_leaves_the_query_alone() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert feedback_query(q, [], 1.0) is not None
    np.testing.assert_array_equal(feedback_query(q, [], 1.0), q)
    np.testing.assert_array_equal(feedback_query(q, [np.array([0, 1], np.float32)], 0.0), q)


def test_configurations_with_feedback() -> None:
    _, ranking = parse_config("hybrid:convex:0.85:5:0.5")
    assert ranking is not None
    fusion = ranking.settings
    assert (fusion.vector_weight, fusion.feedback_docs, fusion.feedback_weight) == (0.85, 5, 0.5)
    _, off = parse_config("hybrid:convex:0.8:0")
    assert off is not None and off.settings.feedback_docs == 0
    for bad in ("hybrid:convex:0.8:x", "hybrid:convex:0.8:-1", "hybrid:convex:0.8:5:1:2"):
        with pytest.raises(InvalidInput):
            parse_config(bad)


def test_feedback_brings_in_what_the_top_hit_is_like(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nRaft leader heartbeat timeout term.\n")
    (notes / "c.md").write_text("# C\n\nHeartbeat timeout term candidate votes.\n")
    (notes / "d.md").write_text("# D\n\nSourdough flour water salt oven.\n")
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as shelf:
        shelf.add(notes)

        def scores() -> dict[str, float]:
            result = shelf.search("raft leader", mode="hybrid", limit=3)
            return {h.document.title: h.scores.fused for h in result.hits}

        shelf.fusion = dataclasses.replace(FusionSettings(), feedback_docs=0)
        before = scores()
        shelf.fusion = dataclasses.replace(FusionSettings(), feedback_docs=1, feedback_weight=1.0)
        after = scores()
        timings = shelf.search("raft leader", mode="hybrid").timings_ms
    assert max(before, key=lambda t: before[t]) == "A" == max(after, key=lambda t: after[t])
    assert after["C"] > after["D"]  # C shares A's words, not the query's
    assert after["C"] - after["D"] > before["C"] - before["D"]
    assert "feedback" in timings
