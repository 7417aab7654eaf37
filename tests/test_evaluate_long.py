"""The long-document evaluation: passages grouped into multi-section files, scored on
(file, heading); and indexes built with or without the structural header."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from docshelf.chunk import ChunkSettings
from docshelf.cli import app
from docshelf.evaluate.beir import Dataset, load_beir
from docshelf.evaluate.long import (
    MAX_PER_FILE,
    MIN_PER_FILE,
    build_long_index,
    evaluate_long,
    hit_sections,
    long_corpus,
    without_header,
)
from docshelf.model import Tier
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder

TOPICS = [
    ("Raft", "Raft elects a leader with heartbeats and replicates a log."),
    ("Sourdough", "Sourdough bread rises with a starter of wild yeast and flour."),
    ("Paxos", "Paxos reaches consensus among acceptors through ballots."),
    ("Glaciers", "Glaciers carve valleys as compacted snow flows downhill."),
    ("Violin", "The violin has four strings tuned in perfect fifths."),
    ("Photosynthesis", "Plants turn sunlight, water and carbon dioxide into sugar."),
    ("Chess", "Chess openings such as the Sicilian shape the middlegame."),
    ("Volcano", "A volcano erupts when magma pressure breaks the crust."),
    ("Tides", "Tides follow the gravitational pull of the moon."),
    ("Origami", "Origami folds a single square sheet without cutting it."),
    ("Espresso", "Espresso forces hot water through finely ground coffee."),
    ("Comets", "Comets grow tails of ice vapour near the sun."),
    ("Beekeeping", "Beekeepers harvest honey from frames in the hive."),
    ("Sailing", "Sailing upwind means tacking across the breeze."),
    ("Pottery", "Pottery is fired clay shaped on a wheel and glazed."),
    ("Tango", "Tango is a dance from Buenos Aires danced in close embrace."),
    ("Cheese", "Cheese ripens as cultures and rennet curdle milk."),
    ("Lighthouse", "A lighthouse warns ships with a rotating lamp."),
    ("Saffron", "Saffron is the dried stigma of the crocus flower."),
    ("Quasar", "A quasar is a luminous nucleus of a distant galaxy."),
]
QUERIES = {
    "q1": ("leader heartbeats log", "d0"),
    "q2": ("wild yeast starter", "d1"),
    "q3": ("magma crust erupts", "d7"),
    "q4": ("crocus stigma", "d18"),
}


def _dataset(root: Path) -> Path:
    ds = root / "tiny-long"
    (ds / "qrels").mkdir(parents=True)
    # Each passage long enough to be a snippet of its own (FILLER is the same everywhere).
    corpus = [
        {"_id": f"d{i}", "title": t, "text": f"{x} {FILLER} {FILLER}"}
        for i, (t, x) in enumerate(TOPICS)
    ]
    (ds / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    (ds / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, (t, _) in QUERIES.items())
    )
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, (_, d) in QUERIES.items()]
    (ds / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return ds


def test_files_are_deterministic_and_hold_every_passage_once(tmp_path: Path) -> None:
    ds = load_beir(_dataset(tmp_path))
    corpus = long_corpus(ds)
    assert corpus == long_corpus(ds)
    assert len(corpus.files) >= 2
    assert sorted(corpus.section_of) == sorted(cid for cid, _, _ in ds.corpus)
    first = corpus.files[0]
    assert first.text.startswith("# Notes 0001\n")
    for heading in first.headings:
        assert f"\n## {heading}\n" in first.text
    name, heading = corpus.section_of["d0"]
    assert heading == "Raft" and "Raft elects a leader" in next(
        f.text for f in corpus.files if f.name == name
    )
    assert corpus.qrels(ds)["q1"] == {(name, "Raft"): 1}


@given(st.integers(0, 60), st.integers(0, 3))
def test_groups_are_8_to_12_passages(n: int, seed: int) -> None:
    ds = Dataset("x", Path("."), [(f"p{i}", f"T{i}", "text") for i in range(n)], {}, {})
    corpus = long_corpus(ds, seed)
    sizes = [len(f.headings) for f in corpus.files]
    assert sum(sizes) == n and len(corpus.section_of) == n
    assert all(MIN_PER_FILE <= s <= MAX_PER_FILE for s in sizes[:-1])
    assert all(1 <= s <= MAX_PER_FILE for s in sizes[-1:])


def test_a_hit_counts_only_with_the_right_file_and_heading() -> None:
    headings = {"a.md": ("Raft", "Paxos"), "b.md": ("Raft",)}
    hits = [
        ("a.md", ("Notes 0001",)),  # the file's H1 alone: no passage heading
        ("b.md", ("Notes 0002", "Raft")),
        ("a.md", ("Notes 0001", "Raft")),
        ("a.md", ("Notes 0001", "Raft")),
    ]
    assert hit_sections(hits, headings) == [("a.md", ""), ("b.md", "Raft"), ("a.md", "Raft")]


def test_long_doc_eval_scores_cited_sections(tmp_path: Path) -> None:
    ds = load_beir(_dataset(tmp_path))
    corpus = long_corpus(ds)
    with Shelf(tmp_path / "h", embedder=HashEmbedder()) as shelf:
        files = build_long_index(shelf, corpus)
        assert sorted(files.values()) == [f.name for f in corpus.files]
        result = evaluate_long(shelf, ds, corpus, files, mode="lexical", k=10)
        again = build_long_index(shelf, corpus)  # cached: nothing indexed twice
        assert again == files and shelf.status().documents == len(corpus.files)
    out = result.as_json()
    assert out["evaluation"] == "long-doc" and out["queries"] == 4
    assert out["hit@1"] == 1.0 and out["hit@10"] == 1.0 and out["mrr@10"] == 1.0
    assert result.per_query[0].top[0] == corpus.section_of["d0"]


def test_without_header_the_chunks_carry_no_header(tmp_path: Path) -> None:
    ds = load_beir(_dataset(tmp_path))
    corpus = long_corpus(ds)
    assert without_header(ChunkSettings()).header_max_tokens == 0
    for header, home in ((True, "on"), (False, "off")):
        with Shelf(tmp_path / home, embedder=HashEmbedder()) as shelf:
            files = build_long_index(shelf, corpus, header=header)
            doc = next(iter(files))
            snippets = shelf.store.chunks_of_document(doc, Tier.SNIPPET)
            assert snippets
            if header:
                assert all(c.header.startswith("[DOC: Notes ") for c in snippets)
                assert any("[PATH: " in c.header for c in snippets)
            else:
                assert all(c.header == "" for c in snippets)
                assert all(c.retrieval_text == c.text for c in snippets)


def test_cli_long_doc_and_header_comparison(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"DOCSHELF_EMBEDDER": "none"}
    ds = _dataset(tmp_path)
    lines = tmp_path / "rows.jsonl"
    result = runner.invoke(
        app,
        ["--json", "eval", str(ds), "--long-doc", "--mode", "lexical", "--per-query", str(lines)],
        env=env,
    )
    envelope = json.loads(result.stdout)
    assert envelope["ok"], envelope
    r = envelope["result"]
    assert r["evaluation"] == "long-doc" and r["header"] is True and r["files"] == 2
    assert r["hit@1"] == 1.0 and r["hit@5"] == 1.0 and "ndcg@10" in r
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    assert rows[0]["query_id"] == "q1" and rows[0]["hit@1"] == 1.0

    both = runner.invoke(
        app,
        ["--json", "eval", str(ds), "--long-doc", "--mode", "lexical", "--header", "compare"],
        env=env,
    )
    r = json.loads(both.stdout)["result"]
    assert r["a"]["header"] is True and r["b"]["header"] is False
    assert set(r["difference"]) == {"hit@1", "hit@5", "hit@10", "mrr@10", "ndcg@10"}

    passages = runner.invoke(
        app, ["--json", "eval", str(ds), "--mode", "lexical", "--header", "off"], env=env
    )
    r = json.loads(passages.stdout)["result"]
    assert r["ndcg@10"] == 1.0 and r["queries"] == 4

    bad = runner.invoke(app, ["--json", "eval", str(ds), "--header", "maybe"], env=env)
    assert json.loads(bad.stdout)["error"]["code"] == "invalid_input"
