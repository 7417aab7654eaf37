"""Blocks many files repeat (a footer on every note of a vault): recognised as documents
are written (``plaintext.repeat_key``, the store's ``repeats``) and never cited as a hit
(search/stages/cite.py), on a vault made here."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from docshelf.plaintext import repeat_key
from docshelf.search.order import FusionSettings
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder

FOOTER = """%% Hub footer: Please don't edit anything below this line %%

# This note in GitHub

<span class="git-footer">[Edit In GitHub](https://github.dev/hub/blob/main/{name}.md "edit") | \
[Copy this note](https://raw.example.org/hub/main/{name}.md "copy")</span>
"""

NOTES = {
    "bread": "Sourdough bread needs a starter, flour, water and salt.",
    "raft": "Raft elects a leader that replicates its log to the followers.",
    "paxos": "Paxos reaches consensus among acceptors in two phases.",
    "zab": "Zab is the protocol ZooKeeper uses to broadcast its updates.",
    "plugins": "To release a plugin, tag a version and attach main.js to the release.",
    "themes": "A theme is a CSS file; publish it by adding it to the community list.",
}


def vault(root: Path, names: list[str]) -> Path:
    root.mkdir()
    for name in names:
        body = f"{NOTES[name]} {FILLER}"  # (long: the footer is a snippet of its own)
        (root / f"{name}.md").write_text(
            f"# {name.title()}\n\n{body}\n\n{FOOTER.format(name=name)}"
        )
    return root


def test_a_footer_linking_each_file_has_one_key() -> None:
    one, two = FOOTER.format(name="bread"), FOOTER.format(name="raft")
    assert one != two and repeat_key(one) == repeat_key(two) is not None
    assert repeat_key("Edit in GitHub") != repeat_key("Edit on GitHub")
    assert repeat_key("Edit **in** [GitHub](https://x.y)") == repeat_key("edit in github")
    assert repeat_key("https://example.org/a") is None and repeat_key(" -- ") is None


@given(st.text())
def test_any_text_has_a_key_or_none(text: str) -> None:
    key = repeat_key(text)
    assert key is None or len(key) == 16


def test_a_footer_on_every_note_is_never_a_hit(tmp_path: Path) -> None:
    """Six notes end in the same footer (each linking its own file): no search cites it,
    whatever it asks; the notes' own words are found as before. Without the rule
    (``repeated_in=0``) the footer is the first hit of a question about it."""
    notes = vault(tmp_path / "vault", list(NOTES))
    for rule in (5, 0):
        fusion = FusionSettings(repeated_in=rule)
        with Shelf(tmp_path / f"home{rule}", embedder=HashEmbedder(), fusion=fusion) as shelf:
            shelf.add(notes)
            for mode in ("lexical", "vector", "hybrid"):
                hits = shelf.search("edit this note in github", mode=mode, limit=10).hits
                footers = [h for h in hits if "git-footer" in h.chunk.text]
                assert not footers if rule else footers, (rule, mode)
            found = shelf.search("how do I release a plugin", mode="hybrid").hits
            assert found and found[0].document.rel_path == "plugins.md"


def footer_hits(shelf: Shelf) -> set[str]:
    hits = shelf.search("edit this note in github", mode="lexical", limit=10).hits
    return {h.document.rel_path for h in hits if "git-footer" in h.chunk.text}


def test_a_block_is_repeated_from_five_documents_on(tmp_path: Path) -> None:
    """Five notes sharing a block: none is cited for it. One deleted, its blocks go with
    it, and each of the four left may be cited for it again."""
    notes = vault(tmp_path / "vault", list(NOTES)[:5])
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        assert not footer_hits(shelf)
        (notes / "bread.md").unlink()
        shelf.sync()
        assert footer_hits(shelf) == {"raft.md", "paxos.md", "zab.md", "plugins.md"}
