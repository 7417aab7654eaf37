"""Abstaining when the answer never mentions what the question quoted as code
(knowledge/abstain.py, ``unquoted``): `bench` asked of a book that covers only the dev and
release profiles."""

from __future__ import annotations

from pathlib import Path

from docshelf.knowledge.abstain import unquoted
from docshelf.shelf import Shelf
from tests.asking import abstains, library

BOOK = (
    "# Profiles\n\n## Optimisation levels\n\n"
    "The dev profile builds with opt-level 0, so that builds are quick.\n"
    "The release profile builds with opt-level 3, so that programs are fast.\n"
    "Run the tests one at a time with --test-threads=1 when they share a file.\n"
)


def test_a_code_span_the_answer_never_holds_in_order_is_unquoted() -> None:
    said = "The release profile builds with opt-level 3. Use cargo test -- --test-threads=1."
    assert unquoted("What opt-level does the `release` profile use?", said) == []
    assert unquoted("Is `opt-level` 3 for `release`?", said) == []
    assert unquoted("What about `cargo test`?", said) == []
    assert unquoted("And `--test-threads`?", said) == []
    assert unquoted("What opt-level for the `bench` profile?", said) == ["bench"]
    assert unquoted("Is it `test cargo`?", said) == ["test cargo"]  # not in that order
    assert unquoted("With `rustup target add` and `bench`, `bench`?", said) == [
        "rustup target add",
        "bench",
    ]
    assert unquoted("No code here, only bench.", said) == []


def test_an_answer_that_never_mentions_the_quoted_code_abstains(
    shelf: Shelf, tmp_path: Path
) -> None:
    library(shelf, tmp_path / "book", {"profiles.md": BOOK})
    question = "What opt-level does the `bench` profile build with?"
    abstains(shelf, question, "The closest passages never mention `bench`.")
    named = shelf.ask("What opt-level does the `release` profile build with?")
    assert named.answered is True and "opt-level 3" in named.answer, named.answer
