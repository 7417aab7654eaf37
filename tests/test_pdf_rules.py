"""The list of PDF rules (``parse.pdf.RULES``) kept honest: each rule has a one-sentence
docstring and a focused test (tests/test_pdf_layout_rules.py,
tests/test_pdf_heading_rules.py), docs/formats.md lists the rules in order, and no rule
module hides a threshold or a regular expression outside ``parse.pdf_thresholds``.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from docshelf.parse.pdf import RULES
from tests import test_pdf_heading_rules, test_pdf_layout_rules

ROOT = Path(__file__).resolve().parent.parent
PARSE = ROOT / "src" / "docshelf" / "parse"
_TESTS = {**vars(test_pdf_layout_rules), **vars(test_pdf_heading_rules)}


def _summary(doc: str) -> str:
    """A docstring's first paragraph on one line, its ``literals`` left out."""
    return " ".join(re.sub(r"``.*?``", "…", doc.split("\n\n")[0], flags=re.S).split())


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
def test_every_rule_has_a_one_sentence_docstring_and_a_test(rule: object) -> None:
    name = getattr(rule, "__name__", "")
    summary = _summary(inspect.getdoc(rule) or "")
    assert summary.endswith("."), f"{name}: no one-sentence docstring"
    assert not re.search(r"[.!?] +[A-Z]", summary), f"{name}: more than one sentence"
    assert callable(_TESTS.get(f"test_{name}")), f"{name} has no test_{name}"


def test_the_rules_are_listed_once() -> None:
    names = [rule.__name__ for rule in RULES]
    assert len(names) == len(set(names))


def test_docs_list_the_rules_in_order() -> None:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = text.split("### PDF", 1)[1].split("\n### ", 1)[0]
    listed = re.findall(r"^\d+\. `(\w+)`", section, flags=re.M)
    assert listed == [rule.__name__ for rule in RULES], "docs/formats.md: list the rules in order"


# The numbers a rule module may write out: none of them is a threshold (0, 1 and 2 count,
# halve and double; 5 and 10 are the Roman V and X, 0xFFFD the replacement character).
_PLAIN_NUMBERS = {0, 1, 2}
_ALLOWED = {"pdf_structure.py": {5, 10}, "pdf_page.py": {0xFFFD}}


@pytest.mark.parametrize(
    "module",
    [
        "pdf.py",
        "pdf_page.py",
        "pdf_layout.py",
        "pdf_pieces.py",
        "pdf_structure.py",
        "pdf_bylines.py",
        "pdf_title.py",
        "pdf_text.py",
    ],
)
def test_thresholds_and_patterns_live_in_one_place(module: str) -> None:
    tree = ast.parse((PARSE / module).read_text(encoding="utf-8"))
    allowed = _PLAIN_NUMBERS | _ALLOWED.get(module, set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            value, line = node.value, node.lineno
            assert isinstance(value, bool) or value in allowed, f"{module}:{line}: {value}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            called = f"{node.value.id}.{node.attr}"
            assert called == "re.Match" or node.value.id != "re", f"{module}: {called}"
