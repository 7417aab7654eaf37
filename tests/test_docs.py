"""Docs that cannot go stale, and the public API pinned."""

from __future__ import annotations

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
