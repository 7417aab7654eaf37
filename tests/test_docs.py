"""Docs that cannot go stale, and the public API pinned."""

from __future__ import annotations

import re
from pathlib import Path

import docshelf
from docshelf.cli.reference import render

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current() -> None:
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == render(), "docs/cli.md is stale: run `make docs-cli`"


def test_every_command_has_help() -> None:
    text = render()
    for section in text.split("\n## ")[1:]:
        usage_and_help = section.split("```")[1]
        lines = [ln for ln in usage_and_help.splitlines() if ln.strip()]
        assert len(lines) >= 2 and not lines[1].startswith("Options"), section[:60]


def test_public_api_is_pinned() -> None:
    assert docshelf.__all__ == [
        "Chunk",
        "Citation",
        "Conflict",
        "ContextResult",
        "DocshelfError",
        "Document",
        "Hit",
        "InvalidInput",
        "NotFound",
        "SearchFilters",
        "SearchResult",
        "Shelf",
        "Source",
        "SyncReport",
        "Unavailable",
    ]
    for name in docshelf.__all__:
        assert getattr(docshelf, name) is not None


def test_readme_first_screen_has_the_two_commands() -> None:
    first = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:30])
    assert "make run" in first and "make test" in first


def _anchors(page: Path) -> set[str]:
    """The heading anchors a Markdown page offers, as GitHub makes them: lower case,
    punctuation dropped, spaces as hyphens, a repeated one numbered."""
    counts: dict[str, int] = {}
    anchors: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = "".join(ch for ch in text if ch.isalnum() or ch in " -_").replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_relative_links_in_the_docs_reach_their_page_and_heading() -> None:
    pages = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (
                anchor and linked.suffix == ".md" and anchor not in _anchors(linked)
            ):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_benchmarks_holds_current_figures_on_one_page() -> None:
    """History goes to docs/benchmarks/ by topic; BENCHMARKS.md stays readable."""
    lines = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400, len(lines)
