"""The library's check (``docshelf status --check``, ingest/check.py): every cited file
on disk, every chunk reachable, every index entry in the store — and ``--repair``, which
mends what it can and says what it did, never taking a failure to read for a deletion."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docshelf.search.engines.tantivy import ANALYZER, read_pointer, text_analyzer
from docshelf.search.engines.usearch_graph import read_checkpoint, usearch_index
from docshelf.shelf import Shelf
from docshelf.store.sqlite import SQLiteStore
from tests.conftest import FILLER
from tests.fakes import HashEmbedder


def _kinds(shelf: Shelf) -> list[str]:
    return [p.kind for p in shelf.check()]


def _cited(shelf: Shelf, query: str) -> list[str]:
    return [h.citation.path for h in shelf.search(query, mode="lexical").hits]


# -- every cited path exists ---------------------------------------------------------


def test_a_file_gone_from_disk_is_found_and_repair_forgets_it_as_sync_would(
    shelf: Shelf, notes: Path
) -> None:
    shelf.add(notes)
    (notes / "todo.txt").unlink()  # gone, and no sync since
    [problem] = shelf.check()
    assert problem.kind == "gone_files" and problem.items == [str(notes / "todo.txt")]
    assert problem.repairable
    [done] = shelf.check(repair=True)
    assert done.repaired == "forgot 1 files gone from disk, and 1 documents only they held"
    assert {d.rel_path for d in shelf.documents()} == {"projects/raft.md", "cooking.md"}
    assert _cited(shelf, "plumber") == []
    assert shelf.check() == []
    assert shelf.sync().removed == 0  # nothing left for sync to do


def test_repair_cites_a_document_at_the_copy_that_remains(shelf: Shelf, notes: Path) -> None:
    shutil.copy(notes / "todo.txt", notes / "todo-copy.txt")
    shelf.add(notes)
    (notes / "todo.txt").unlink()
    assert _kinds(shelf) == ["gone_files"]
    [done] = shelf.check(repair=True)
    assert done.repaired == "forgot 1 files gone from disk, and 0 documents only they held"
    assert _cited(shelf, "plumber") == [str(notes / "todo-copy.txt")]
    assert shelf.check() == []


def _stat_refused(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``os.stat`` as a folder without permissions answers it (the tests run as root,
    whom permissions do not stop), for anything under ``folder``."""
    real = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if Path(path).is_relative_to(folder) and Path(path) != folder:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)


def test_a_file_under_an_unreadable_folder_is_reported_and_never_forgotten(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shelf.add(notes)
    _stat_refused(monkeypatch, notes / "projects")
    [problem] = shelf.check(repair=True)
    assert problem.kind == "unreadable_files" and not problem.repairable
    assert problem.items == [f"{notes / 'projects' / 'raft.md'}: unreadable: Permission denied"]
    assert problem.repaired is None
    assert len(shelf.documents()) == 3


def test_a_file_gone_under_a_folder_that_cannot_be_listed_is_kept(
    shelf: Shelf, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The folder can be passed through, not read: the file's absence is no deletion.
    shelf.add(notes)
    (notes / "projects" / "raft.md").unlink()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m: real(p, m) and Path(p) != notes / "projects")
    [problem] = shelf.check(repair=True)
    assert problem.kind == "unreadable_files" and problem.repaired is None
    assert len(shelf.documents()) == 3


def test_a_missing_source_is_reported_and_its_documents_kept(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    moved = notes.with_name("elsewhere")
    notes.rename(moved)  # renamed, unmounted: missing, not emptied
    [problem] = shelf.check(repair=True)
    assert problem.kind == "missing_source" and problem.repaired is None
    assert problem.hint and f"docshelf remove {shelf.sources()[0].id}" in problem.hint
    assert len(shelf.documents()) == 3
    moved.rename(notes)
    assert shelf.check() == []


# -- every chunk reachable -------------------------------------------------------------


def _raw(shelf: Shelf) -> sqlite3.Connection:
    """The library's database, beside the store, foreign keys off (as an old or broken
    writer left it)."""
    store = shelf.store
    assert isinstance(store, SQLiteStore)
    return sqlite3.connect(store.path, isolation_level=None)


def test_chunks_of_no_document_are_found_and_dropped(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    [doc] = [d for d in shelf.documents() if d.rel_path == "todo.txt"]
    with _raw(shelf) as db:
        db.execute("DELETE FROM files WHERE document_id = ?", (doc.id,))
        db.execute("DELETE FROM documents WHERE id = ?", (doc.id,))  # no cascade: FKs off
    [problem] = shelf.check()
    assert problem.kind == "orphan_chunks" and problem.text.endswith("belong to no document")
    [done] = shelf.check(repair=True)
    assert done.repaired is not None and done.repaired.startswith("dropped ")
    assert shelf.check() == []
    assert _cited(shelf, "plumber") == []


def test_a_complete_document_without_snippets_is_reported(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    [doc] = [d for d in shelf.documents() if d.rel_path == "todo.txt"]
    with _raw(shelf) as db:
        db.execute("DELETE FROM chunks WHERE document_id = ? AND tier = 'snippet'", (doc.id,))
    [problem] = shelf.check(repair=True)
    assert problem.kind == "no_snippets" and problem.items == [doc.id]
    assert problem.repaired is None and problem.hint


def test_a_stale_citation_is_repaired(shelf: Shelf, notes: Path) -> None:
    shutil.copy(notes / "todo.txt", notes / "todo-copy.txt")
    shelf.add(notes)
    [cited] = {d.path for d in shelf.documents()} & {
        str(notes / "todo.txt"),
        str(notes / "todo-copy.txt"),
    }
    shelf.store.delete_file(cited)  # as a library from before the mend
    Path(cited).unlink()
    [done] = shelf.check(repair=True)
    assert done.kind == "stale_citations"
    assert done.repaired == "cited 1 document at a file that holds them"
    assert shelf.check() == []


# -- every index entry in the store ----------------------------------------------------


@pytest.fixture
def sidecars(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shelf]:
    """A library whose tantivy and usearch indexes are on (thresholds of a few)."""
    monkeypatch.setenv("DOCSHELF_ANN_THRESHOLD", "2")
    monkeypatch.setenv("DOCSHELF_LEXICAL_THRESHOLD", "2")
    with Shelf(isolated_home, embedder=HashEmbedder()) as s:
        yield s


def _many(root: Path, n: int = 8) -> Path:
    root.mkdir()
    for i in range(n):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nword{i} and quorum. {FILLER}\n")
    return root


def test_sidecar_indexes_that_hold_what_the_store_holds_pass(
    sidecars: Shelf, tmp_path: Path
) -> None:
    sidecars.add(_many(tmp_path / "lib"))
    st = sidecars.status()
    assert st.vector_index["path"] == "ann" and st.lexical_index["path"] == "tantivy"
    assert sidecars.check() == []
    (tmp_path / "lib" / "n0.md").unlink()
    sidecars.sync()
    assert sidecars.check() == []


def test_a_lexical_index_out_of_step_with_the_store_is_found_and_rebuilt(
    sidecars: Shelf, tmp_path: Path
) -> None:
    import tantivy

    sidecars.add(_many(tmp_path / "lib"))
    index = sidecars.lexical_index
    assert index is not None
    pointer = read_pointer(index.directory)
    assert pointer is not None
    torn = tantivy.Index.open(str(index.directory / pointer.folder))
    torn.register_tokenizer(ANALYZER, text_analyzer())
    writer = torn.writer(heap_size=15_000_000, num_threads=1)
    first = int(sidecars.store.snippet_seqs()[0])  # type: ignore[attr-defined]
    writer.delete_documents_by_term("seq", first)  # a snippet it lost
    writer.add_document(tantivy.Document(seq=10_000, body="ghost"))  # one the store never had
    writer.commit()
    writer.wait_merging_threads()
    [problem] = sidecars.check()
    assert problem.kind == "lexical_sidecar"
    assert problem.text == (
        "the lexical index (tantivy) holds 1 entries the store does not; "
        "the lexical index (tantivy) lacks 1 snippets of the store"
    )
    [done] = sidecars.check(repair=True)
    assert done.repaired == "rebuilt the lexical index (tantivy): rebuilt"
    assert sidecars.check() == []


def test_a_vector_index_out_of_step_with_the_store_is_found_and_rebuilt(
    sidecars: Shelf, tmp_path: Path
) -> None:
    sidecars.add(_many(tmp_path / "lib"))
    index = sidecars.vector_index
    assert index is not None
    checkpoint = read_checkpoint(index.directory)
    assert checkpoint is not None
    path = str(index.directory / checkpoint.file)
    graph = usearch_index().restore(path)
    keys = np.sort(np.asarray(graph.keys[:], dtype=np.uint64))
    graph.remove(keys[:2])  # two snippets it lost
    graph.save(path)
    [problem] = sidecars.check()
    assert problem.kind == "vector_sidecar"
    assert problem.text == "the vector index (usearch) lacks 2 snippets of the store"
    [done] = sidecars.check(repair=True)
    assert done.repaired == "rebuilt the vector index (usearch): rebuilt"
    assert sidecars.check() == []


def test_an_index_switched_on_but_never_built_is_found_and_built(
    sidecars: Shelf, tmp_path: Path
) -> None:
    sidecars.add(_many(tmp_path / "lib"))
    index = sidecars.lexical_index
    assert index is not None
    (index.directory / "current.json").unlink()  # its files lost
    [problem] = sidecars.check()
    assert problem.text == "the lexical index (tantivy) is on but not built (fts5 answers)"
    sidecars.check(repair=True)
    assert sidecars.check() == []


# -- sync runs the cheap part ------------------------------------------------------------


def test_sync_mends_chunks_of_no_document_and_reports_what_it_cannot(
    shelf: Shelf, notes: Path
) -> None:
    shelf.add(notes)
    [cooking] = [d.id for d in shelf.documents() if d.rel_path == "cooking.md"]
    with _raw(shelf) as db:
        columns = [r[1] for r in db.execute("PRAGMA table_info(chunks)")]
        copied = ", ".join(
            {"seq": "NULL", "id": "'chunk_stray_0'", "document_id": "'doc_gone'"}.get(c, c)
            for c in columns
        )
        db.execute(f"INSERT INTO chunks SELECT {copied} FROM chunks LIMIT 1")  # of no document
        db.execute("DELETE FROM chunks WHERE document_id = ? AND tier = 'snippet'", (cooking,))
    report = shelf.sync()
    assert len(report.repaired) == 1 and report.repaired[0].startswith("dropped ")
    assert report.problems == ["1 complete document has no snippets: search cannot find them"]
    assert _kinds(shelf) == ["no_snippets"]


# -- the command ------------------------------------------------------------------------


def test_status_check_and_repair_at_the_command_line(
    notes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from docshelf.cli import quick

    def status(*flags: str) -> dict[str, Any]:
        assert quick.main(["status", *flags, "--json"])
        out: dict[str, Any] = json.loads(capsys.readouterr().out)["result"]
        return out

    with Shelf(embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
    (notes / "todo.txt").unlink()
    found = status("--check")
    assert found["problems"] == ["1 file the library holds is gone from disk"]
    assert found["problem_details"] == [
        {
            "kind": "gone_files",
            "problem": "1 file the library holds is gone from disk",
            "items": [str(notes / "todo.txt")],
            "hint": None,
        }
    ]
    assert "repaired" not in found
    mended = status("--repair")
    assert mended["repaired"] == ["forgot 1 files gone from disk, and 1 documents only they held"]
    assert mended["problems"] == [] and mended["documents"] == 2
    assert status("--check")["problems"] == []
