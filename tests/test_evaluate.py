"""The evaluation instruments: metrics, configurations, the paired test, comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.errors import InvalidInput
from docshelf.evaluate.beir import (
    mrr_at_k,
    ndcg_at_k,
    paired_randomization_test,
    parse_config,
    recall_at_k,
)
from docshelf.search.stages.cite import Cite


def test_metrics_on_known_rankings() -> None:
    grades = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], grades, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "a"], grades, 1) == 0.0
    assert recall_at_k(["x", "b"], grades, 10) == 0.5
    assert mrr_at_k(["x", "y", "a"], grades, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "a"], grades, 2) == 0.0


def test_configurations() -> None:
    assert parse_config("lexical") == ("lexical", None)
    mode, ranking = parse_config("hybrid:convex:0.6")
    assert mode == "hybrid" and ranking is not None
    fusion = ranking.settings
    assert (fusion.method, fusion.vector_weight, fusion.lexical_weight) == ("convex", 0.6, 0.4)
    assert parse_config("hybrid:rrf")[1] is not None
    capped = parse_config("hybrid+perdoc:3")[1]
    assert capped is not None and capped.settings.per_document == 3
    assert Cite(3, 5) in capped.stages  # (the product's repeated blocks rule stays)
    plain = parse_config("hybrid+repeats:0")[1]
    assert plain is not None and Cite(0, 0) in plain.stages
    for bad in ("fuzzy", "vector:rrf", "hybrid:magic", "hybrid:convex:1.5", "hybrid:convex:x"):
        with pytest.raises(InvalidInput):
            parse_config(bad)


def test_paired_test_separates_real_and_null_differences() -> None:
    a = [0.2, 0.4, 0.1, 0.5, 0.3] * 8
    assert paired_randomization_test(a, [x + 0.2 for x in a]) < 0.01
    assert paired_randomization_test(a, a) == 1.0
    noisy = [x + (0.05 if i % 2 else -0.05) for i, x in enumerate(a)]
    assert paired_randomization_test(a, noisy) > 0.5


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.lists(st.floats(0, 1), max_size=30))
def test_paired_test_is_a_probability_and_symmetric(xs: list[float], ys: list[float]) -> None:
    ys = (ys + xs)[: len(xs)]
    p = paired_randomization_test(xs, ys, rounds=200)
    assert 0 < p <= 1
    assert p == paired_randomization_test(ys, xs, rounds=200)


def _dataset(root: Path) -> Path:
    ds = root / "tiny"
    (ds / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Raft", "text": "Raft elects a leader with heartbeats."},
        {"_id": "d2", "title": "Bread", "text": "Sourdough needs a starter and flour."},
        {"_id": "d3", "title": "Paxos", "text": "Paxos reaches consensus among acceptors."},
    ]
    (ds / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    (ds / "queries.jsonl").write_text(
        "\n".join(
            json.dumps(q)
            for q in [
                {"_id": "q1", "text": "leader heartbeats"},
                {"_id": "q2", "text": "sourdough starter"},
                {"_id": "q3", "text": "acceptors consensus"},
            ]
        )
    )
    (ds / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq3\td3\t1\n"
    )
    return ds


def test_eval_comparison_and_per_query_lines(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"DOCSHELF_EMBEDDER": "none"}
    ds = _dataset(tmp_path)
    lines = tmp_path / "per-query.jsonl"
    result = runner.invoke(
        app,
        [
            "--json",
            "eval",
            str(ds),
            "--mode",
            "lexical",
            "--against",
            "lexical",
            "--per-query",
            str(lines),
        ],
        env=env,
    )
    envelope = json.loads(result.stdout)
    assert envelope["ok"], envelope
    r = envelope["result"]
    assert r["queries"] == 3 and r["a"]["ndcg@10"] == 1.0
    assert r["difference"]["ndcg@10"] == {"delta": 0.0, "p_value": 1.0, "better": 0, "worse": 0}
    assert r["a"]["candidate_recall@100"] == 1.0 and "lexical" in r["a"]["stages_ms"]
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    assert len(rows) == 3 and set(rows[0]) == {"a", "b"}
    assert rows[0]["a"]["query_id"] == "q1" and rows[0]["a"]["ndcg@10"] == 1.0

    bad = runner.invoke(app, ["--json", "eval", str(ds), "--mode", "hybrid:magic"], env=env)
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_input"
