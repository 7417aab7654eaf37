"""docqa evaluation: the set's format and checks, the scoring rules, a run over a tiny set
made here (Markdown notes and a PDF), and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.cli import eval as eval_cli
from docshelf.config import Settings
from docshelf.errors import InvalidInput
from docshelf.evaluate.docqa import collection_home, run_docqa
from docshelf.evaluate.docqa_set import (
    Cited,
    Gold,
    Question,
    as_result,
    is_docqa,
    load_docqa,
    norm_heading,
    ranks,
)
from tests.fakes import HashEmbedder
from tests.fixtures_formats import paged_pdf

FILLER = (
    "More ordinary words follow here so that each section is long enough to be a snippet "
    "of its own, as the sections of a real note would be."
)

PAGES = [
    ["The first page introduces the study of dining arrangements in general terms."],
    ["The footman never allows more than four philosophers to be seated at once."],
    ["The last page thanks the reviewers and lists the references in full."],
]


def _question(qid: str, collection: str, text: str, kind: str, **gold: Any) -> dict[str, Any]:
    answer = {"path": gold["path"], "heading": gold.get("heading"), "page": gold.get("page")}
    return {
        "id": qid,
        "collection": collection,
        "question": text,
        "answers": [answer],
        "evidence": "",
        "kind": kind,
    }


QUESTIONS = [
    _question(
        "q1",
        "notes",
        "how do I install the widget toolchain",
        "factual",
        path="guides/Widgets & Tools.md",
        heading="`Setup` steps {#setup}",
    ),
    _question(
        "q2",
        "notes",
        "folding regions in the editor",
        "keyword",
        path="guides/Widgets & Tools.md",
        heading="🗃️ Folding and [[Regions|regions]]",
    ),
    _question(
        "q3",
        "papers",
        "how many philosophers may the footman seat",
        "factual",
        path="csp/dining.pdf",
        page=2,
    ),
    _question(
        "q4",
        "notes",
        "footman philosophers seated",  # words of the PDF, asked of the notes: a miss
        "paraphrase",
        path="journal.md",
        heading="Monday",
    ),
]


def _write_set(root: Path, questions: list[dict[str, Any]] = QUESTIONS) -> Path:
    notes = root / "corpora" / "notes"
    (notes / "guides").mkdir(parents=True)
    (notes / "guides" / "Widgets & Tools.md").write_text(
        "# Widgets & Tools\n\nAn overview of the widget kit. " + FILLER + "\n\n"
        "## `Setup` steps {#setup}\n\nTo install the widget toolchain run the installer "
        "and restart. " + FILLER + "\n\n"
        "## 🗃️ Folding and [[Regions|regions]]\n\nThe editor folds regions between "
        "markers. " + FILLER + "\n",
        encoding="utf-8",
    )
    (notes / "journal.md").write_text(
        "# Journal\n\n## Monday\n\nA quiet day with a walk by the river. " + FILLER + "\n",
        encoding="utf-8",
    )
    papers = root / "corpora" / "papers" / "csp"
    papers.mkdir(parents=True)
    (papers / "dining.pdf").write_bytes(paged_pdf(PAGES, title="Dining"))
    (root / "qa.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    return root


# -- headings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "cited"),
    [
        ("Using `@` Bindings", "Using @ Bindings"),
        (
            "A Brief History of the [[Digital garden|Digital Garden]]",
            "A Brief History of the Digital Garden",
        ),
        ("See [[Campaign]] notes", "See Campaign notes"),
        ("🗃️ Folding and Regions", "Folding and Regions"),
        ("The [docs](https://example.org/x) page", "The docs page"),
        ("Setup {#setup .wide}", "Setup"),
        ("## **Bold**   _words_ ", "Bold words"),
        ("Part > Chapter > Using `@` Bindings", "Using @ Bindings"),
    ],
)
def test_headings_compare_as_rendered(written: str, cited: str) -> None:
    assert norm_heading(written) == norm_heading(cited) == cited


def test_heading_case_is_kept() -> None:
    assert norm_heading("Debug Mode") != norm_heading("debug mode")
    assert norm_heading(None) is None


@given(st.text(max_size=60))
def test_heading_normalisation_is_idempotent(text: str) -> None:
    once = norm_heading(text)
    assert once is not None and norm_heading(once) == once
    assert once == once.strip() and "  " not in once


# -- scoring ----------------------------------------------------------------------------


def _md_question(heading: str = "Setup") -> Question:
    return Question("q", "notes", "?", "factual", (Gold("a.md", heading, None),))


def _pdf_question(page: int = 5) -> Question:
    return Question("q", "papers", "?", "factual", (Gold("p.pdf", None, page),))


def test_a_page_range_holding_the_gold_page_is_a_hit() -> None:
    q = _pdf_question(5)
    spanning = as_result(Cited("p.pdf", "Intro", 4, 6), q)
    assert spanning == {"path": "p.pdf", "heading": "Intro", "page": 5}
    assert as_result(Cited("p.pdf", None, 6, 7), q)["page"] == 6
    assert as_result(Cited("other.pdf", None, 4, 6), q)["page"] == 4
    assert ranks([as_result(Cited("p.pdf", None, 6, 7), q), spanning], q, 10) == (2, 1)


def test_duplicates_of_one_place_count_once() -> None:
    q = _md_question("Setup")
    results = [
        {"path": "b.md", "heading": "Intro", "page": None},
        {"path": "b.md", "heading": "Intro", "page": None},  # same place: dropped
        {"path": "b.md", "heading": "`Intro`", "page": None},  # same after normalising
        {"path": "a.md", "heading": "Other", "page": None},
        {"path": "a.md", "heading": "Setup", "page": None},
    ]
    assert ranks(results, q, 10) == (3, 2)
    assert ranks(results, q, 2) == (None, 2)
    # by page for PDF gold: two headings on one page are one place
    p = _pdf_question(3)
    pages = [
        {"path": "p.pdf", "heading": "A", "page": 1},
        {"path": "p.pdf", "heading": "B", "page": 1},
        {"path": "p.pdf", "heading": "C", "page": 3},
    ]
    assert ranks(pages, p, 10) == (2, 1)


def test_the_path_and_the_heading_must_both_match() -> None:
    q = _md_question("Setup")
    assert ranks([{"path": "A.md", "heading": "Setup", "page": None}], q, 10) == (None, None)
    assert ranks([{"path": "a.md", "heading": "setup", "page": None}], q, 10) == (None, 1)
    assert ranks([{"path": "a.md", "heading": None, "page": None}], q, 10) == (None, 1)
    assert ranks([], q, 10) == (None, None)


# -- the set's checks -------------------------------------------------------------------


def _bad(line: object) -> str:
    return line if isinstance(line, str) else json.dumps(line)


GOOD = QUESTIONS[0]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "kind"}, "line 2: missing kind"),
        ({**GOOD, "id": "q9", "answers": []}, "'answers' must be a non-empty list"),
        ({**GOOD, "id": "q9", "answers": ["x.md"]}, "each answer needs a 'path'"),
        ({**GOOD, "id": 7}, "'id' must be a non-empty str"),
        ({**GOOD, "id": "q9", "question": ""}, "'question' must be a non-empty str"),
        (
            {**GOOD, "id": "q9", "answers": [{"path": "journal.md", "heading": 3, "page": None}]},
            "'heading' must be text or null",
        ),
        (
            {**GOOD, "id": "q9", "answers": [{"path": "journal.md", "heading": None, "page": "2"}]},
            "'page' must be a page number",
        ),
        (
            {**GOOD, "id": "q9", "answers": [{"path": "../papers/csp/dining.pdf", "page": 1}]},
            "leaves its collection",
        ),
        (
            {**GOOD, "id": "q9", "collection": "wiki"},
            "unknown collection 'wiki'; corpora/ holds notes, papers",
        ),
        (
            {**GOOD, "id": "q9", "answers": [{"path": "missing.md", "heading": "X"}]},
            "'missing.md' is not a file of collection 'notes'",
        ),
        (GOOD, "question id 'q1' appears twice"),
    ],
)
def test_malformed_sets_are_refused_with_the_line(
    tmp_path: Path, line: object, message: str
) -> None:
    root = _write_set(tmp_path, [GOOD])
    with (root / "qa.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(_bad(line) + "\n")
    with pytest.raises(InvalidInput) as err:
        load_docqa(root)
    assert message in err.value.message


def test_missing_parts_and_empty_sets_are_refused(tmp_path: Path) -> None:
    root = _write_set(tmp_path, [GOOD])
    assert is_docqa(root) and not is_docqa(root / "corpora")
    (root / "qa.jsonl").write_bytes(b"\n\n")
    with pytest.raises(InvalidInput, match="holds no questions"):
        load_docqa(root)
    (root / "qa.jsonl").write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\n")
    with pytest.raises(InvalidInput, match="line 2: not valid UTF-8"):
        load_docqa(root)
    (root / "qa.jsonl").unlink()
    with pytest.raises(InvalidInput, match=r"qa\.jsonl is missing"):
        load_docqa(root)


def test_a_good_set_loads_with_the_collections_it_uses(tmp_path: Path) -> None:
    ds = load_docqa(_write_set(tmp_path))
    assert [q.id for q in ds.questions] == ["q1", "q2", "q3", "q4"]
    assert sorted(ds.collections) == ["notes", "papers"]
    assert ds.questions[2].by_page and not ds.questions[0].by_page


# -- a run ------------------------------------------------------------------------------


def test_every_mode_is_run_and_scored_on_its_own_collection(tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set")
    settings = Settings.from_env(tmp_path / "home")
    report = run_docqa(
        settings, root, embedder=HashEmbedder(), against=["hybrid:convex:0.8:0"], k=10
    )
    assert list(report.runs) == ["lexical", "vector", "hybrid", "hybrid:convex:0.8:0"]
    lexical = {q.query_id: q for q in report.runs["lexical"].per_query}
    assert lexical["q1"].rank == 1 and lexical["q2"].rank == 1
    assert lexical["q3"].rank == 1 and lexical["q3"].results[0]["page"] == 2
    # q4's words are only in the PDF, a collection q4 is not run against
    assert lexical["q4"].rank is None
    assert all(r["path"] != "csp/dining.pdf" for r in lexical["q4"].results)

    out = report.as_json()
    assert out["format"] == "docqa" and out["questions"] == 4
    assert out["collections"]["notes"]["documents"] == 2
    assert out["collections"]["papers"]["documents"] == 1
    lex = out["runs"]["lexical"]
    assert lex["all"]["hit@1"] == 0.75 and lex["all"]["mrr@10"] == 0.75
    assert lex["collection"]["papers"] == {**lex["collection"]["papers"], "n": 1, "hit@1": 1.0}
    assert lex["kind"]["paraphrase"]["hit@10"] == 0.0
    assert set(lex["all"]) >= {"hit@3", "hit@5", "hit@1-file", "hit@5-file", "no_results"}
    assert out["runs"]["vector"]["mode"] == "vector"
    pairs = [(c["a"], c["b"]) for c in out["comparisons"]]
    assert pairs == [("lexical", "hybrid"), ("vector", "hybrid"), ("hybrid:convex:0.8:0", "hybrid")]
    diff = out["comparisons"][0]["difference"]["hit@1"]
    assert 0 < diff["p_value"] <= 1 and {"delta", "better", "worse"} <= set(diff)

    # the libraries are cached: a second run indexes nothing, only the questions are embedded
    for name in ("notes", "papers"):
        assert (collection_home(settings.home, load_docqa(root), name, "fake-hash-64")).is_dir()
    again = HashEmbedder()
    second = run_docqa(settings, root, embedder=again, k=10)
    assert set(again.embedded) <= {q["question"] for q in QUESTIONS}
    placed = [(q.rank, q.results) for q in report.runs["lexical"].per_query]
    assert [(q.rank, q.results) for q in second.runs["lexical"].per_query] == placed


def test_a_run_needs_a_hybrid_configuration(tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set")
    settings = Settings.from_env(tmp_path / "home")
    with pytest.raises(InvalidInput, match="--mode names the hybrid configuration"):
        run_docqa(settings, root, embedder=None, mode="lexical")
    with pytest.raises(InvalidInput):
        run_docqa(settings, root, embedder=None, against=["hybrid:magic"])


# -- the CLI ----------------------------------------------------------------------------


def test_cli_docqa_json_and_run_files(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"DOCSHELF_EMBEDDER": "none"}
    root = _write_set(tmp_path / "set")
    runs = tmp_path / "out" / "runs.jsonl"
    runs.parent.mkdir()
    result = runner.invoke(app, ["--json", "eval", str(root), "--per-query", str(runs)], env=env)
    envelope = json.loads(result.stdout)
    assert envelope["ok"], envelope
    r = envelope["result"]
    assert r["format"] == "docqa" and list(r["runs"]) == ["lexical", "vector", "hybrid"]
    assert r["runs"]["lexical"]["all"]["hit@1"] == 0.75
    # no model: the vector and hybrid runs say they were lexical
    assert (
        r["runs"]["vector"]["mode"] == "lexical" and "lexical only" in r["runs"]["vector"]["notice"]
    )
    assert envelope["next_actions"]
    files = sorted(p.name for p in runs.parent.iterdir())
    assert files == ["runs.hybrid.jsonl", "runs.lexical.jsonl", "runs.vector.jsonl"]
    rows = [json.loads(x) for x in (runs.parent / "runs.lexical.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["q1", "q2", "q3", "q4"]
    top = rows[2]["results"][0]
    assert (top["path"], top["page"], rows[2]["rank"]) == ("csp/dining.pdf", 2, 1)


def test_the_human_form_is_a_table_per_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set")
    report = run_docqa(Settings.from_env(tmp_path / "home"), root, embedder=HashEmbedder())
    screen = Console(record=True, width=200)
    monkeypatch.setattr(eval_cli, "console", screen)
    eval_cli._render_docqa(report.as_json())
    text = screen.export_text()
    for title in ("set: lexical (lexical)", "set: vector (vector)", "set: hybrid (hybrid)"):
        assert title in text
    assert "collection=papers" in text and "kind=known-item" not in text
    assert "kind=paraphrase" in text and "hybrid vs lexical" in text
    assert "notes: 2 documents" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "vector"], "--mode names the hybrid configuration"),
        (["--long-doc"], "--long-doc and --header apply to BEIR data"),
        (["--format", "xml"], "Unknown --format"),
    ],
)
def test_cli_docqa_refuses_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    root = _write_set(tmp_path / "set", [GOOD])
    out = CliRunner().invoke(
        app, ["--json", "eval", str(root), *args], env={"DOCSHELF_EMBEDDER": "none"}
    )
    envelope = json.loads(out.stdout)
    assert out.exit_code == 1 and envelope["error"]["code"] == "invalid_input"
    assert message in envelope["error"]["message"]


def test_cli_format_docqa_on_other_data_says_what_is_missing(tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app,
        ["--json", "eval", str(tmp_path), "--format", "docqa"],
        env={"DOCSHELF_EMBEDDER": "none"},
    )
    assert "qa.jsonl is missing" in json.loads(out.stdout)["error"]["message"]
