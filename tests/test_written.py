"""Words as written (search/stages/written.py): a query word that holds punctuation the
engines split it at is looked for as typed, and the snippets that hold it rank first in
every mode; ordinary words, hyphenated or not, are left to the engines."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.search.stages.written import as_written, holds
from docshelf.shelf import Shelf


@pytest.mark.parametrize(
    ("query", "written"),
    [
        ("__name__", ["__name__"]),
        ("what does Flask(__name__) do?", ["flask(__name__)"]),
        ("flask run --port 5001", ["--port"]),
        ("std::io and s[0]", ["std::io", "s[0]"]),
        ("SESSION_COOKIE_SAMESITE", ["session_cookie_samesite"]),
        ("as of version 0.15.9?", ["0.15.9"]),
        ("C++ or C#", ["c++", "c#"]),
        ("“__name__” (_x)", ["__name__", "_x"]),
        ("opt-level default", []),
        ("don't stop, won\u2019t stop", []),
        ("X-Frame-Options: SAMEORIGIN", []),
        ("e.g. the U.S. army", []),
        ("(see below) [link]", []),
        ('"a quoted phrase" -- ...', []),
    ],
)
def test_the_words_to_read_as_written(query: str, written: list[str]) -> None:
    assert as_written(query) == written


@given(st.lists(st.from_regex(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)?", fullmatch=True), max_size=6))
def test_ordinary_words_are_never_read_as_written(words: list[str]) -> None:
    assert as_written(" ".join(words) + "?") == []


def test_a_word_as_written_stands_on_its_own() -> None:
    assert holds("app = Flask(__name__)", ["__name__", "flask(__name__)"])
    assert holds("Run FLASK RUN --PORT 5001.", ["--port"])
    assert not holds("max_x = 1", ["_x"])  # inside a longer word
    assert not holds("see the --portal", ["--port"])
    assert not holds("app = Flask(__name__)", ["__name__", "--port"])  # every one


def test_a_snippet_holding_the_word_as_written_comes_first(shelf: Shelf, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "naming.md").write_text(
        "# Naming notes\n\nGive every note a name. A good name is short; the name of a "
        "note is its title, and renaming a note renames its links. Name things well.\n"
    )
    (notes / "app.md").write_text(
        "# The application\n\nThe application object is made in the module:\n\n"
        "```python\napp = Flask(__name__)\n```\n\nRun it with `flask run --port 5001`.\n"
    )
    (notes / "ports.md").write_text(
        "# Ports\n\nA port is a number. The port a server listens on, the ports it "
        "opens, a port taken by another program: ports, ports, ports.\n"
    )
    shelf.add(notes)
    for mode in ("lexical", "vector", "hybrid"):
        for query in ("__name__", "--port", "Flask(__name__)"):
            hits = shelf.search(query, mode=mode).hits
            assert hits, (mode, query)
            first = hits[0]
            assert first.document.rel_path == "app.md", (mode, query)
            assert "written" in first.placed_by, (mode, query)
        plain = shelf.search("name", mode=mode).hits  # the words alone: the engines' order
        assert all("written" not in h.placed_by for h in plain)


def test_two_dashes_make_a_flag_not_an_exclusion() -> None:
    from docshelf.search.query import parse_query

    assert parse_query("flask run --port 5001").excluded == ()
    assert parse_query("flask run --port 5001").text == "flask run --port 5001"
    assert parse_query("raft -paxos").excluded == ("paxos",)
