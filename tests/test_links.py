"""Obsidian vaults: wikilinks in every form, backlinks, tags, renames."""

from __future__ import annotations

import shutil
from pathlib import Path

from docshelf.parse import parse
from docshelf.parse.links import WikiLink, names_for, note_name, wikilinks
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests.fakes import HashEmbedder


def links_of(text: str) -> list[WikiLink]:
    return wikilinks(parse(text.encode(), "markdown"))


def test_every_wikilink_form() -> None:
    found = links_of(
        "# Note\n\nSee [[Raft]], [[raft|the algorithm]], [[Raft#Leader election]], "
        "[[Papers/Paxos.md]] and ![[diagram]].\n\n"
        "```\n[[not a link]]\n```\n\nInline `[[also not]]` code.\n"
    )
    assert found == [
        WikiLink("raft", None, None, False),
        WikiLink("raft", None, "the algorithm", False),
        WikiLink("raft", "Leader election", None, False),
        WikiLink("papers/paxos", None, None, False),
        WikiLink("diagram", None, None, True),
    ]


def test_malformed_links_are_ignored() -> None:
    assert links_of("[[]] [[ ]] [[a\nb]] [[[x]]] [not](a) [[#only heading]]\n") == [
        WikiLink("x", None, None, False)
    ]


def test_names() -> None:
    assert note_name(" Notes/Raft.MD ") == "notes/raft"
    assert names_for("notes/Raft.md", "Raft consensus", ["RAFT", "replicated log"]) == [
        "notes/raft",
        "raft",
        "raft consensus",
        "replicated log",
    ]


def make_vault(root: Path) -> Path:
    vault = root / "vault"
    (vault / "papers").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.md").write_text("[[raft]]\n")
    (vault / "raft.md").write_text(
        "---\naliases: [Replicated log]\ntags: [distributed]\n---\n# Raft\n\n"
        "Consensus by leader election, see [[papers/paxos|Paxos]]. #consensus\n"
    )
    (vault / "papers" / "paxos.md").write_text("# Paxos\n\nThe original; compare [[Raft#Log]].\n")
    (vault / "daily.md").write_text(
        "# Daily\n\nRead about [[replicated log]] and [[Missing note]].\n"
    )
    return vault


def test_links_and_backlinks_in_a_vault(tmp_path: Path, shelf: Shelf) -> None:
    shelf.add(make_vault(tmp_path))
    docs = {d.rel_path: d for d in shelf.documents()}
    assert set(docs) == {"raft.md", "papers/paxos.md", "daily.md"}
    raft = shelf.document(docs["raft.md"].id)
    assert [(link.target, targets) for link, targets in raft.links] == [
        ("papers/paxos", [docs["papers/paxos.md"].id])
    ]
    assert {d.rel_path for d in raft.backlinks} == {"papers/paxos.md", "daily.md"}
    daily = shelf.document(docs["daily.md"].id)
    assert [targets for _, targets in daily.links] == [[docs["raft.md"].id], []]
    assert set(docs["raft.md"].tags) == {"distributed", "consensus"}
    hits = shelf.search("consensus", filters=SearchFilters(tags=("consensus",))).hits
    assert {h.document.rel_path for h in hits} == {"raft.md"}


def test_renamed_note_keeps_document_vectors_and_links(tmp_path: Path, isolated_home: Path) -> None:
    vault = make_vault(tmp_path)
    embedder = HashEmbedder()
    with Shelf(isolated_home, embedder=embedder) as shelf:
        shelf.add(vault)
        paxos = next(d for d in shelf.documents() if d.rel_path == "papers/paxos.md")
        before = len(embedder.embedded)
        shutil.move(vault / "papers" / "paxos.md", vault / "papers" / "paxos-1989.md")
        report = shelf.sync()
        assert (report.moved, report.added, report.removed) == (1, 0, 0)
        assert len(embedder.embedded) == before
        moved = shelf.document(paxos.id)
        assert moved.document.rel_path == "papers/paxos-1989.md"
        # the old name no longer resolves; the title still does
        raft = next(d for d in shelf.documents() if d.rel_path == "raft.md")
        assert [targets for _, targets in shelf.document(raft.id).links] == [[]]
        assert {d.rel_path for d in moved.backlinks} == set()
        assert "papers/paxos-1989" in [n for n in names_for(moved.document.rel_path, "", ())]
