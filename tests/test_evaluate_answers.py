"""``docshelf eval DOCQA --answers``: the answer scorer's rules on small cases, and a run
on a docqa set made in the test (answerable and unanswerable questions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.evaluate.answer_score import Asked, correct, is_cited, normalized, table
from tests.test_evaluate_docqa import _write_set


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("1,500 Plugins cost $200!", ["1500", "plugin", "cost", "200", "dollar"]),
        (
            "Python 3.10 uses 1MB & 50%",
            ["python", "3.10", "use", "1", "mb", "and", "50", "percent"],
        ),
        ("Four antibodies", ["4", "antibody"]),
        (  # the stripper strips again while three letters remain: "name" and "home" too
            "__name__ @ home",
            ["underscor", "underscor", "nam", "underscor", "underscor", "at", "hom"],
        ),
        ("Sherlocking, as the term goes", ["sherlock", "as", "the", "term", "goe"]),
    ],
)
def test_answers_and_gold_compare_as_normalised_tokens(text: str, tokens: list[str]) -> None:
    assert normalized(text) == tokens


def test_span_answers_hold_a_variant_on_token_boundaries() -> None:
    gold = {"answer_type": "span", "variants": ["8", "half"]}
    assert correct("You start by turning off eight plugins", gold)
    assert not correct("You start with 18 plugins", gold)  # 8 is not in 18
    both: dict[str, Any] = {"answer_type": "span", "variants": [["1MB", ["64K", "64 KB"]]]}
    assert correct("a 1 MB buffer and 64 KB pages", both)
    assert not correct("a 1 MB buffer", both)  # all of the list
    assert correct("It is 3.10", {"answer_type": "span", "variants": ["3.10"]})
    assert not correct("It is 3.1", {"answer_type": "span", "variants": ["3.10"]})
    assert correct("Version v2!", {"answer_type": "span", "variants": ["re:v\\d+!"]})


def test_summary_answers_hold_half_their_key_phrases() -> None:
    gold = {"answer_type": "summary", "key_phrases": ["bug", "screenshare", ["video", "camera"]]}
    assert correct("A bug hides the screenshare", gold)
    assert correct("Turn the camera on: a known bug", gold)
    assert not correct("Turn the camera on", gold)  # 1 of 3 is under half


def test_a_citation_must_be_the_gold_place() -> None:
    gold = [{"path": "a/b.md", "heading": "`Setup` steps {#setup}", "page": None}]
    assert is_cited([{"path": "a/b.md", "heading": "Guide > Setup steps", "page": None}], gold)
    assert not is_cited([{"path": "a/c.md", "heading": "Setup steps", "page": None}], gold)
    pdf = [{"path": "p.pdf", "heading": None, "page": 5}]
    assert is_cited([{"path": "p.pdf", "heading": "Intro", "page": 5}], pdf)
    assert not is_cited([{"path": "p.pdf", "heading": None, "page": 6}], pdf)
    assert is_cited([{"path": "p.pdf", "heading": None, "page": 4, "page_end": 6}], pdf)


def test_the_table_counts_accuracy_citation_and_abstention() -> None:
    asked = [
        Asked("q1", "notes", "factual", True, True, True, True),
        Asked("q2", "notes", "factual", True, True, False, False),
        Asked("q3", "notes", "keyword", True, False),
        Asked("u1", "notes", "unanswerable off-domain", False, False),
        Asked("u2", "notes", "unanswerable near-miss", False, True),
    ]
    all_ = table(asked)["all"]
    assert all_["accuracy"] == pytest.approx(1 / 3) or all_["accuracy"] == 0.3333
    assert (all_["cited_accuracy"], all_["wrong"], all_["false_abstention"]) == (
        0.3333,
        0.3333,
        0.3333,
    )
    assert (all_["abstention_recall"], all_["false_answer"]) == (0.5, 0.5)


def test_eval_answers_on_a_docqa_set(tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set")
    gold = [
        {"id": "q1", "answer_type": "span", "variants": ["installer"]},
        {"id": "q2", "answer_type": "summary", "key_phrases": ["fold", "markers"]},
        {"id": "q3", "answer_type": "span", "variants": ["4"]},
        {"id": "q4", "answer_type": "span", "variants": ["river"]},
        {
            "id": "u1",
            "collection": "notes",
            "question": "zebra quantum chromodynamics",
            "answerable": False,
            "kind": "off-domain",
        },
    ]
    (root / "answers.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    per = tmp_path / "answers.jsonl"
    result = CliRunner().invoke(
        app,
        ["--json", "eval", str(root), "--answers", "--per-query", str(per)],
        env={"DOCSHELF_EMBEDDER": "none"},
    )
    envelope = json.loads(result.stdout)
    assert envelope["ok"], envelope
    r = envelope["result"]
    assert r["format"] == "docqa-answers" and r["questions"] == 5
    scores = r["scores"]
    by_id = {row["id"]: row for row in r["per_question"]}
    assert by_id["q1"]["correct"] and by_id["q1"]["cited"]  # the installer, under Setup
    assert by_id["q3"]["correct"] and by_id["q3"]["cited"]  # four philosophers, p.2
    assert not by_id["u1"]["answered"]  # no word of it anywhere: abstained
    assert scores["kind"]["unanswerable off-domain"]["abstention_recall"] == 1.0
    assert scores["collection"]["papers"]["accuracy"] == 1.0
    assert [json.loads(line)["id"] for line in per.read_text().splitlines()] == [
        "q1",
        "q2",
        "q4",
        "u1",
        "q3",
    ]


def test_answers_need_a_docqa_set_with_its_gold(tmp_path: Path) -> None:
    root = _write_set(tmp_path / "set")
    result = CliRunner().invoke(
        app, ["--json", "eval", str(root), "--answers"], env={"DOCSHELF_EMBEDDER": "none"}
    )
    envelope = json.loads(result.stdout)
    assert not envelope["ok"] and "answers.jsonl" in envelope["error"]["message"]
