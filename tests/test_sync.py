"""Sources: add, sync (stat check, hash), edits, deletes, moves, hostile files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from docshelf.errors import Conflict, InvalidInput, NotFound
from docshelf.model import Tier
from docshelf.search.engines import own_engines
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests.conftest import FILLER
from tests.fakes import HashEmbedder


def _lexical_ids(shelf: Shelf, word: str) -> list[str]:
    return [cid for cid, _ in own_engines(shelf.store).lexical.search([word], 100, SearchFilters())]


def _vector_ids(shelf: Shelf) -> set[str]:
    return set(shelf.store.vector_snapshot().chunk_ids)


def test_add_indexes_supported_files_and_skips_hidden(shelf: Shelf, notes: Path) -> None:
    report = shelf.add(notes)
    assert (report.added, report.failed) == (3, 0)
    docs = {d.rel_path: d for d in shelf.documents()}
    assert set(docs) == {"projects/raft.md", "cooking.md", "todo.txt"}
    assert docs["cooking.md"].title == "Bread"
    assert set(docs["cooking.md"].tags) >= {"baking", "food"}
    assert docs["projects/raft.md"].title == "Raft"
    assert docs["todo.txt"].title == "todo"
    assert not _lexical_ids(shelf, "hidden")
    assert shelf.check() == []


def test_re_add_and_sync_do_nothing_when_unchanged(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    shelf.add(notes)
    embedded = len(embedder.embedded)
    generation = shelf.store.generation()
    again = shelf.add(notes)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 3, 0)
    synced = shelf.sync()
    assert (synced.added, synced.updated, synced.unchanged) == (0, 0, 3)
    assert len(embedder.embedded) == embedded
    assert shelf.store.generation() == generation


def test_touched_but_same_bytes_is_unchanged(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    f = notes / "todo.txt"
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10_000_000_000))
    report = shelf.sync()
    assert (report.unchanged, report.updated) == (3, 0)
    # the new stat is remembered, so the next sync does not even hash it
    rec = shelf.store.files_of_source(report_source(shelf))[str(f)]
    assert rec.mtime_ns == f.stat().st_mtime_ns


def report_source(shelf: Shelf) -> str:
    return shelf.sources()[0].id


def test_edit_replaces_chunks_and_vectors_without_leftovers(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    raft = notes / "projects" / "raft.md"
    old_doc = next(d for d in shelf.documents() if d.rel_path == "projects/raft.md")
    old_chunks = {c.id for c in shelf.store.chunks_of_document(old_doc.id, Tier.SNIPPET)}
    raft.write_text("# Raft\n\nNow about zookeeper only.\n")
    report = shelf.sync()
    assert (report.updated, report.added) == (1, 0)
    assert shelf.store.get_document(old_doc.id) is None
    assert not _lexical_ids(shelf, "heartbeat")
    assert _lexical_ids(shelf, "zookeeper")
    assert not old_chunks & _vector_ids(shelf)
    assert shelf.store.get_chunks(sorted(old_chunks)) == []
    assert shelf.check() == []


def test_unchanged_text_is_not_embedded_again(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    shelf.add(notes)
    raft = notes / "projects" / "raft.md"
    before = len(embedder.embedded)
    raft.write_text(raft.read_text() + "\n## Snapshots\n\nCompaction keeps the log short.\n")
    shelf.sync()
    new_texts = embedder.embedded[before:]
    assert new_texts, "the changed snippet must be embedded"
    assert all("heartbeat" not in t for t in new_texts), "unchanged snippets come from the cache"


def test_delete_removes_everywhere(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    (notes / "cooking.md").unlink()
    report = shelf.sync()
    assert report.removed == 1
    assert not _lexical_ids(shelf, "sourdough")
    assert {d.rel_path for d in shelf.documents()} == {"projects/raft.md", "todo.txt"}
    assert shelf.check() == []


def test_move_keeps_document_and_vectors(shelf: Shelf, notes: Path, embedder: HashEmbedder) -> None:
    shelf.add(notes)
    doc = next(d for d in shelf.documents() if d.rel_path == "cooking.md")
    before = len(embedder.embedded)
    (notes / "food").mkdir()
    shutil.move(notes / "cooking.md", notes / "food" / "bread.md")
    report = shelf.sync()
    assert (report.moved, report.removed, report.added) == (1, 0, 0)
    moved = shelf.store.get_document(doc.id)
    assert moved is not None and moved.rel_path == "food/bread.md"
    assert len(embedder.embedded) == before
    assert shelf.check() == []


def test_copy_is_one_document_with_two_files(shelf: Shelf, notes: Path) -> None:
    shutil.copy(notes / "todo.txt", notes / "todo-copy.txt")
    report = shelf.add(notes)
    assert (report.added, report.copies, report.unchanged) == (3, 1, 0)  # said, not hidden
    assert len(shelf.documents()) == 3
    todo = next(d for d in shelf.documents() if d.title.startswith("todo"))
    assert len(shelf.document(todo.id).files) == 2
    (notes / "todo.txt").unlink()
    shelf.sync()
    held = shelf.store.get_document(todo.id)  # the copy still holds it, and is cited
    assert held is not None and (held.path, held.rel_path) == (
        str(notes / "todo-copy.txt"),
        "todo-copy.txt",
    )
    assert _cited(shelf, "plumber") == [str(notes / "todo-copy.txt")]
    assert shelf.check() == []


def _cited(shelf: Shelf, query: str) -> list[str]:
    return [h.citation.path for h in shelf.search(query, mode="lexical").hits]


def test_the_same_bytes_in_two_sources_stay_cited_where_they_are(
    shelf: Shelf, tmp_path: Path
) -> None:
    # add A; copy it to B; add B; remove A and delete it; sync: every citation is at a
    # file that exists, in B, whose source owns the document.
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    (a / "alpha.md").write_text("# Alpha\n\nThe quorum decides every write. " + FILLER + "\n")
    shelf.add(a)
    shutil.copytree(a, b)
    assert (shelf.add(b).copies, shelf.sync().unchanged) == (1, 2)
    assert _cited(shelf, "quorum") == [str(a / "alpha.md")]
    shelf.remove(str(a))
    assert _cited(shelf, "quorum") == [str(b / "alpha.md")]
    shutil.rmtree(a)
    shelf.sync()
    assert _cited(shelf, "quorum") == [str(b / "alpha.md")]
    [doc] = shelf.documents()
    [source] = shelf.sources()
    assert (doc.source_id, doc.rel_path, source.path) == (source.id, "alpha.md", str(b))
    assert shelf.check() == []


def test_identical_files_are_one_document_and_the_add_says_so(shelf: Shelf, tmp_path: Path) -> None:
    notes = tmp_path / "same"
    notes.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (notes / name).write_text("# Herons\n\nThree notes with the same words. " + FILLER)
    report = shelf.add(notes)
    assert (report.added, report.copies) == (1, 2)
    [doc] = shelf.documents()
    assert sorted(shelf.document(doc.id).files) == [
        str(notes / n) for n in ("a.md", "b.md", "c.md")
    ]
    assert _cited(shelf, "herons") == [str(notes / "a.md")]  # the first file the walk met
    assert (shelf.sync().unchanged, shelf.check()) == (3, [])


def test_sync_mends_a_library_that_cites_a_path_no_file_is_at(shelf: Shelf, notes: Path) -> None:
    # What a library written before the mend holds: the first copy's file forgotten, the
    # document still cited there.
    shutil.copy(notes / "todo.txt", notes / "todo-copy.txt")
    shelf.add(notes)
    [cited] = _cited(shelf, "plumber")
    [other] = {str(notes / "todo.txt"), str(notes / "todo-copy.txt")} - {cited}
    shelf.store.delete_file(cited)
    Path(cited).unlink()
    assert [p.text for p in shelf.check()] == [
        "1 document is cited at a path none of their files is at"
    ]
    shelf.sync()
    assert _cited(shelf, "plumber") == [other]
    assert shelf.check() == []


def _scandir_failing(monkeypatch: pytest.MonkeyPatch, fail: Callable[[Path], None]) -> None:
    """``os.scandir`` as the walk calls it, with ``fail(folder)`` run first."""
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        fail(Path(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)  # the walk's, and any other: it passes through


def test_an_unreadable_subfolder_is_a_failure_not_a_deletion(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shelf.add(notes)
    before = {d.id for d in shelf.documents()}

    def locked(folder: Path) -> None:
        if folder.name == "projects":
            raise PermissionError(13, "Permission denied", str(folder))

    _scandir_failing(monkeypatch, locked)
    report = shelf.sync()
    assert report.removed == 0
    assert [(f.path, f.reason) for f in report.failures] == [
        (str(notes / "projects"), "unreadable folder: Permission denied")
    ]
    assert {d.id for d in shelf.documents()} == before
    assert _cited(shelf, "heartbeat") == [str(notes / "projects" / "raft.md")]
    monkeypatch.undo()
    report = shelf.sync()  # readable again: all there, nothing to report
    assert (report.removed, report.failures, report.unchanged) == (0, [], 3)


def test_a_source_renamed_during_its_sync_loses_nothing(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        (notes / f"box{n}").mkdir()
        (notes / f"box{n}" / f"note{n}.md").write_text(f"# Note {n}\n\nItem {n}. {FILLER}\n")
    shelf.add(notes)
    before = {d.id for d in shelf.documents()}
    moved = notes.with_name("notes-renamed")

    def rename_once(folder: Path) -> None:  # under way: the first subfolder's turn
        if folder.name == "box0" and notes.exists():
            notes.rename(moved)

    _scandir_failing(monkeypatch, rename_once)
    report = shelf.sync()
    assert moved.is_dir() and report.removed == 0 and report.failures
    assert {d.id for d in shelf.documents()} == before
    monkeypatch.undo()
    moved.rename(notes)  # back: nothing was lost, nothing to add again
    report = shelf.sync()
    assert (report.removed, report.added, report.failures) == (0, 0, [])


def test_remove_source(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    report = shelf.remove(str(notes))
    assert report.removed == 3
    assert shelf.documents() == [] and shelf.sources() == []
    assert shelf.store.stats().snippets == 0 and _vector_ids(shelf) == set()
    with pytest.raises(NotFound):
        shelf.remove("src_nope")


def test_add_single_file_and_errors(shelf: Shelf, notes: Path, tmp_path: Path) -> None:
    report = shelf.add(notes / "todo.txt")
    assert report.added == 1
    with pytest.raises(NotFound):
        shelf.add(tmp_path / "missing")
    (tmp_path / "x.exe").write_bytes(b"MZ")
    with pytest.raises(InvalidInput, match="unsupported"):
        shelf.add(tmp_path / "x.exe")


def test_subfolder_of_a_source_syncs_that_source(shelf: Shelf, notes: Path) -> None:
    first = shelf.add(notes)
    again = shelf.add(notes / "projects")
    assert again.source_id == first.source_id
    assert len(shelf.sources()) == 1


def test_docshelfignore(shelf: Shelf, notes: Path) -> None:
    (notes / ".docshelfignore").write_text("projects/\n*.txt\n")
    shelf.add(notes)
    assert {d.rel_path for d in shelf.documents()} == {"cooking.md"}


def test_hostile_files_are_reported_and_the_rest_indexed(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (notes / "empty.md").write_bytes(b"")
    (notes / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    (notes / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (notes / "loop").symlink_to(notes, target_is_directory=True)
    (notes / "self.md").symlink_to(notes / "self.md")
    (notes / "dangling.md").symlink_to(notes / "nowhere.md")
    big = notes / "big.md"
    with big.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    locked = notes / "locked.md"
    locked.write_text("# secret\n")
    locked.chmod(0)
    monkeypatch.setenv("DOCSHELF_MAX_FILE_MB", "25")
    try:
        report = shelf.add(notes)
    finally:
        locked.chmod(0o644)
    reasons = {Path(f.path).name: f.reason for f in report.failures}
    assert "empty" in reasons["empty.md"]
    assert "binary" in reasons["binary.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "loop" in reasons["loop"]
    assert "self.md" in reasons and "dangling.md" in reasons
    assert "too large" in reasons["big.md"]
    if os.geteuid() != 0:  # root reads anything
        assert "permission" in reasons["locked.md"]
    assert report.added >= 3
    assert {"projects/raft.md", "cooking.md", "todo.txt"} <= {d.rel_path for d in shelf.documents()}
    assert shelf.status().failure_count == len(report.failures)


def test_file_deleted_between_listing_and_reading(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docshelf.ingest.prepare as prepare_mod  # sync reads files through it
    from docshelf.ingest.prepare import read_file as real

    def vanishing(path: Path, max_bytes: int, found: Any = None) -> tuple[bytes, os.stat_result]:
        if path.name == "todo.txt":
            path.unlink()
        return real(path, max_bytes, found)

    monkeypatch.setattr(prepare_mod, "read_file", vanishing)
    report = shelf.add(notes)
    assert [Path(f.path).name for f in report.failures] == ["todo.txt"]
    assert "vanished" in report.failures[0].reason
    assert report.added == 2


def test_model_mismatch_is_a_clear_error(isolated_home: Path, notes: Path) -> None:
    with Shelf(isolated_home, embedder=HashEmbedder("model-a")) as s:
        s.add(notes)
    with pytest.raises(Conflict, match="reindex"):
        Shelf(isolated_home, embedder=HashEmbedder("model-b"))
    with Shelf(isolated_home, embedder=None) as s:
        result = s.search("raft")
        assert result.mode == "lexical" and result.notice
        (notes / "new.md").write_text("# New\n\nfresh\n")
        with pytest.raises(Conflict, match="no vectors"):
            s.sync()


def test_reindex_switches_model(isolated_home: Path, notes: Path) -> None:
    with Shelf(isolated_home, embedder=None) as s:
        s.add(notes)
        assert s.store.get_meta("embedding_model") == "none"
    b = HashEmbedder("model-b")
    with Shelf(isolated_home, embedder=b, check_model=False) as s:
        result = s.reindex()
        assert result["snippets"] == s.store.stats().snippets > 0
        assert s.check() == []
    with Shelf(isolated_home, embedder=HashEmbedder("model-b")) as s:
        assert s.search("leader election").mode == "hybrid"
