"""Library filing: inbox → LIBRARY/<type>/<category>/<name>, the index following the
move without re-embedding; collisions; hostile names; a real SIGKILL between the
move and the index update, then a re-run that finishes the work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from docshelf.cli import app
from docshelf.errors import InvalidInput
from docshelf.ingest.filing import Filing, segment
from docshelf.model import Tier
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder

BREAD = "---\ntags: [food]\n---\n# Bread\n\nFeed the starter the night before baking bread.\n"
RAFT = "# Raft\n\nRaft elects a leader; the leader replicates its log to followers.\n"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    inbox, library = tmp_path / "inbox", tmp_path / "library"
    inbox.mkdir()
    library.mkdir()
    (inbox / "bread.md").write_text(BREAD)
    (inbox / "raft notes.md").write_text(RAFT)
    return inbox, library


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _check_index(shelf: Shelf, library: Path, inbox: Path) -> None:
    """Every document lives at one existing library path, recorded once; nothing dangles."""
    docs = shelf.documents()
    for doc in docs:
        assert Path(doc.path).is_file() and Path(doc.path).is_relative_to(library), doc.path
        records = shelf.store.files_of_document(doc.id)
        assert [r.path for r in records] == [doc.path]
    assert not any(
        Path(r.path).is_relative_to(inbox)
        for s in shelf.sources()
        for r in shelf.store.files_of_source(s.id).values()
    )
    assert shelf.check() == []


def test_inbox_files_move_into_the_library(
    shelf: Shelf, embedder: HashEmbedder, folders: tuple[Path, Path]
) -> None:
    inbox, library = folders
    report = Filing(shelf, inbox, library).run()
    assert report.failures == [] and len(report.filed) == 2
    assert _files(inbox) == []
    assert _files(library) == ["note/food/bread.md", "note/general/raft notes.md"]
    _check_index(shelf, library, inbox)
    bread = next(d for d in shelf.documents() if d.title == "Bread")
    assert bread.document_type == "note" and bread.category == "food"
    # The index followed: nothing was embedded twice, and hits cite the new place.
    embedded = len(embedder.embedded)
    hit = shelf.search("starter baking").hits[0]
    assert hit.citation.path == str(library / "note/food/bread.md")
    assert len(embedder.embedded) == embedded + 1  # the query only
    # A second run has nothing to do; the moved files are not indexed twice.
    again = Filing(shelf, inbox, library).run()
    assert again.filed == [] and len(shelf.documents()) == 2
    assert shelf.sync().moved == 0


def test_a_taken_name_gets_a_number(shelf: Shelf, folders: tuple[Path, Path]) -> None:
    inbox, library = folders
    (library / "note" / "food").mkdir(parents=True)
    (library / "note" / "food" / "bread.md").write_text("---\ntags: [food]\n---\n# Rye\n\nRye.\n")
    Filing(shelf, inbox, library).run()
    assert (library / "note/food/bread (2).md").read_text() == BREAD
    assert "Rye" in (library / "note/food/bread.md").read_text()
    _check_index(shelf, library, inbox)


def test_bad_files_stay_in_the_inbox(shelf: Shelf, folders: tuple[Path, Path]) -> None:
    inbox, library = folders
    (inbox / "broken.md").write_bytes(b"# Broken\n\n\xff\xfe not UTF-8\n")
    (inbox / "photo.jpg").write_bytes(b"\xff\xd8\xff binary")
    report = Filing(shelf, inbox, library).run()
    assert len(report.filed) == 2
    assert _files(inbox) == ["broken.md", "photo.jpg"]  # nothing lost
    assert any(f.path.endswith("broken.md") for f in shelf.status().failures)


def test_inbox_and_library_must_be_apart(shelf: Shelf, tmp_path: Path) -> None:
    (tmp_path / "lib" / "in").mkdir(parents=True)
    with pytest.raises(InvalidInput):
        Filing(shelf, tmp_path / "lib" / "in", tmp_path / "lib")
    with pytest.raises(InvalidInput):
        Filing(shelf, tmp_path / "lib", tmp_path / "lib")
    with pytest.raises(InvalidInput):
        Filing(shelf, tmp_path / "nope", tmp_path / "lib")


@given(st.text())
def test_folder_names_are_always_safe(value: str) -> None:
    name = segment(value, "general")
    assert name and "/" not in name and "\x00" not in name
    assert name not in (".", "..") and not name.startswith(".")


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from docshelf.ingest import filing
    from docshelf.shelf import Shelf

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[3] == "after-link":  # one file, two names: linked, inbox name not removed
        def half(src, dest):
            os.link(src, dest)
            die()
        filing.move_no_clobber = half
    else:  # moved, index not updated
        filing.Filing.follow = die
    with Shelf() as shelf:
        filing.Filing(shelf, sys.argv[1], sys.argv[2]).run()
    """
)


@pytest.mark.parametrize("point", ["after-link", "after-move"])
def test_a_kill_mid_filing_is_finished_by_a_rerun(
    folders: tuple[Path, Path], point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox, library = folders
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(inbox), str(library), point],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr.decode()
    moved = [p for p in _files(library)]
    assert len(moved) == 1  # the first file got as far as the kill
    if point == "after-move":
        assert len(_files(inbox)) == 1  # the file is in exactly one place
    with Shelf() as shelf:
        report = Filing(shelf, inbox, library).run()
        assert report.failures == []
        assert _files(inbox) == []
        assert _files(library) == ["note/food/bread.md", "note/general/raft notes.md"]
        _check_index(shelf, library, inbox)
        assert len(shelf.documents()) == 2
        for doc in shelf.documents():  # chunks intact: nothing was dropped and re-added
            assert shelf.store.chunks_of_document(doc.id, Tier.SNIPPET)


def test_cli_inbox(folders: tuple[Path, Path]) -> None:
    inbox, library = folders
    result = CliRunner().invoke(
        app,
        ["--json", "inbox", str(inbox), "--library", str(library)],
        env={"DOCSHELF_EMBEDDER": "none"},
    )
    env = json.loads(result.stdout.strip().splitlines()[-1])
    assert env["ok"] and len(env["result"]["filed"]) == 2 and env["next_actions"]
    result = CliRunner().invoke(
        app, ["--json", "inbox", str(inbox), "--library", str(inbox)], env={}
    )
    env = json.loads(result.stdout.strip().splitlines()[-1])
    assert not env["ok"] and env["error"]["code"] == "invalid_input"


def test_watch_mode_files_new_arrivals(shelf: Shelf, folders: tuple[Path, Path]) -> None:
    import threading
    import time

    from docshelf.ingest.filing import watch_inbox

    inbox, library = folders
    stop = threading.Event()
    runs: list[int] = []
    watcher = threading.Thread(
        target=watch_inbox,
        args=(Filing(shelf, inbox, library), stop, lambda r: runs.append(len(r.filed))),
    )
    watcher.start()
    try:
        deadline = time.monotonic() + 30
        while not runs and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runs == [2]  # what was there at the start
        (inbox / "later.md").write_text("# Later\n\nA note that arrives while watching.\n")
        while not list(library.rglob("later.md")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p.parts[-3] for p in library.rglob("later.md")] == ["note"]
        assert _files(inbox) == []
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert not watcher.is_alive()
