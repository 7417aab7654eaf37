"""The text shown is the text in the file, and results say when they are weak (issue 42):
search hits and contexts carry their text as a person reads it (``display_text``,
``display``), which the CLI shows on a real terminal; a note's summary holds no comment;
a nonsense query's result says it matches nothing well instead of showing 0.85."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docshelf import views
from docshelf.cli import quick
from docshelf.cli.command import Outcome
from docshelf.search.stages import weak
from docshelf.shelf import Shelf
from docshelf.terminal import printable_tree
from tests.fakes import HashEmbedder

# A Flask-style page as its author wrote it: Sphinx roles, a code block, a doctest.
FLASK_RST = """Blueprints
==========

A :class:`Blueprint` records routes; register it with
:meth:`~flask.Flask.register_blueprint` on the application.

.. code-block:: python

    app = Flask(__name__)

    @app.route('/pages/<page>')
    def show(page):
        return render_template(f'pages/{page}.html')

>>> app.url_map.bind('localhost').match('/pages/about')
('show', {'page': 'about'})
"""
# A Rust-book chapter's Markdown, with what the book's sources carry besides text.
RUST_MD = """# Installation

## Updating and Uninstalling

<!-- Old headings. Do not remove or links may break. -->
<a id="local-documentation"></a>

Once Rust is installed via `rustup`, updating is easy:

<span class="filename">Filename: src/main.rs</span>

```rust
fn main() {
    println!("Hello, <world>!"); // __not__ emphasis
}
```
"""
# An Obsidian hub note: its only sentence is a comment to whoever edits it.
VAULT_NOTE = """# PARA

%% Add a description below this line. It doesn't need to be long: one or two sentences \
should be a good start. %%

PARA sorts notes into projects, areas, resources and archives by how actionable they are.
Use the `#para` tag on every note that follows it, and review the projects every week.

%% Hub footer: Please don't edit anything below this line %%
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "blueprints.rst").write_text(FLASK_RST)
    (root / "installation.md").write_text(RUST_MD)
    (root / "PARA.md").write_text(VAULT_NOTE)
    return root


def _hit(shelf: Shelf, query: str, path: str) -> dict[str, object]:
    hits = views.search(shelf.search(query, mode="lexical"))["hits"]
    return next(h for h in hits if str(h["citation"]["path"]).endswith(path))


def test_hits_carry_their_text_as_written_and_as_a_person_reads_it(
    shelf: Shelf, folder: Path
) -> None:
    shelf.add(folder)
    flask = _hit(shelf, "blueprint pages", "blueprints.rst")
    shown = str(flask["display_text"])
    for written in ("app = Flask(__name__)", "@app.route('/pages/<page>')", ">>> app.url_map"):
        assert written in shown
    assert "A Blueprint records routes; register it with register_blueprint() on" in shown
    assert ":class:" not in shown and ":meth:" not in shown and "~flask" not in shown
    assert ":class:`Blueprint`" in str(flask["text"])  # the stored text stays as written

    rust = _hit(shelf, "updating rustup", "installation.md")
    shown = str(rust["display_text"])
    assert "Once Rust is installed via rustup, updating is easy:" in shown
    assert "Filename: src/main.rs" in shown
    assert 'println!("Hello, <world>!"); // __not__ emphasis' in shown  # code as written
    for markup in ("<!--", "Old headings", "<a id=", "<span", "`", "##"):
        assert markup not in shown

    context = views.context(shelf.context(str(rust["chunk_id"]), "parent-section"))
    assert context["display"]["hit"] == shown
    assert "<!--" in context["text"]  # the stored text stays as written


def _at_a_terminal(*argv: str) -> str:
    """``docshelf ARGV`` run with a pseudo-terminal as its stdin, stdout and stderr: what
    a person sees (escape codes and all)."""
    parent, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "DOCSHELF_EMBEDDER": "none", "TERM": "xterm"}
    env["DOCSHELF_SEARCH_HELPER"] = "off"
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", *argv],
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        close_fds=True,
    )
    os.close(child)
    out = b""
    while True:
        try:
            data = os.read(parent, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        out += data
    assert proc.wait(timeout=120) == 0, out.decode(errors="replace")
    os.close(parent)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode()).replace("\r\n", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n"))


def test_the_terminal_shows_code_and_roles_as_the_file_reads(
    isolated_home: Path, folder: Path
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:
        shelf.add(folder)
        [hit] = shelf.search("blueprint", mode="lexical", limit=1).hits
    shown = _at_a_terminal("search", "blueprint", "--limit", "1", "--mode", "lexical")
    assert "A Blueprint records routes; register it with register_blueprint() on" in shown
    assert "app = Flask(__name__)" in shown and "@app.route('/pages/<page>')" in shown
    assert ":class:" not in shown and ":meth:" not in shown
    head = shown.split("\n")[0]
    assert head == "1. Blueprints (blueprints.rst#0)"  # no score: it means nothing alone

    shown = _at_a_terminal("context", hit.chunk.id, "--mode", "parent-section")
    assert ">>> app.url_map.bind('localhost').match('/pages/about')" in shown
    assert "{'page': 'about'}" in shown and "register_blueprint() on" in shown


def test_a_notes_summary_is_its_prose_not_its_comments(
    shelf: Shelf, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_ENRICH", "auto")
    shelf.add(folder)
    para = next(d for d in shelf.documents() if d.rel_path == "PARA.md")
    [result] = shelf.enrich([para.id])
    summary = result.enrichment.summary
    assert summary.startswith("PARA sorts notes into projects")
    assert "description below this line" not in summary and "Hub footer" not in summary
    assert "Use the #para tag on every note" in summary  # no backticks


def test_a_nonsense_query_is_weak_and_says_so_on_a_terminal(
    shelf: Shelf, embedder: HashEmbedder, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a floor for the test's embedder (bag of words: unrelated texts score near 0)
    monkeypatch.setitem(weak.MEANING_FLOOR, embedder.model_id, 0.35)
    shelf.add(folder)
    nonsense = views.search(shelf.search("xqzv blorf wibble", limit=3))
    assert nonsense["hits"] and nonsense["weak"] is True
    assert all(h["weak"] for h in nonsense["hits"])
    assert nonsense["hits"][0]["score"] == 0.85  # the fused score a person was shown
    answered = views.search(shelf.search("register a blueprint", limit=3))
    assert answered["weak"] is False
    blueprint = next(h for h in answered["hits"] if h["citation"]["title"] == "Blueprints")
    assert blueprint["weak"] is False  # it holds the query's words

    out = _TerminalIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("COLUMNS", "200")
    quick.render_hits(Outcome(printable_tree(nonsense), []))
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert shown.startswith("No close match: no hit holds half of the query's words")
    assert "0.850" not in shown and "0.85" not in shown


class _TerminalIO:
    """A stdout that says it is a terminal."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True

    def getvalue(self) -> str:
        return "".join(self.parts)
