"""Live watching: create, modify, delete, rename and bursts, followed by syncs."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from docshelf.ingest.watch import sources_touched, watch_in_background
from docshelf.model import SyncReport
from docshelf.shelf import Shelf


@pytest.fixture
def watching(shelf: Shelf, notes: Path) -> Iterator[list[SyncReport]]:
    shelf.add(notes)
    reports: list[SyncReport] = []
    thread, stop = watch_in_background(shelf, reports.append)
    wait_for(lambda: len(reports) >= 1)  # the catch-up sync on start
    time.sleep(0.3)  # let the watcher settle
    yield reports
    stop.set()
    thread.join(10)
    assert not thread.is_alive()


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def paths(shelf: Shelf) -> set[str]:
    return {d.rel_path for d in shelf.documents()}


def test_changes_are_followed(shelf: Shelf, notes: Path, watching: list[SyncReport]) -> None:
    (notes / "new.md").write_text("# New\n\nA fresh idea about gardening.\n")
    wait_for(lambda: "new.md" in paths(shelf))
    (notes / "new.md").write_text("# New\n\nNow about beekeeping instead.\n")
    wait_for(lambda: bool(shelf.search("beekeeping", mode="lexical").hits))
    assert not shelf.search("gardening", mode="lexical").hits
    shutil.move(notes / "todo.txt", notes / "projects" / "todo.txt")
    wait_for(lambda: "projects/todo.txt" in paths(shelf))
    assert "todo.txt" not in paths(shelf)
    (notes / "cooking.md").unlink()
    wait_for(lambda: "cooking.md" not in paths(shelf))
    # (its sync's report reaches on_sync just after the commit)
    wait_for(lambda: any(r.removed for r in watching))
    # hidden folders do not wake the watcher up
    before = len(watching)
    (notes / ".obsidian" / "workspace.json").write_text("{}")
    time.sleep(1.5)
    assert len(watching) == before


def test_a_burst_is_a_few_syncs(shelf: Shelf, notes: Path, watching: list[SyncReport]) -> None:
    before = len(watching)
    burst = notes / "burst"
    burst.mkdir()
    for i in range(1000):
        (burst / f"n{i:04}.md").write_text(f"# Note {i}\n\nBurst note number {i}.\n")
    # The documents are committed before the sync's report reaches on_sync: wait for both.
    wait_for(
        lambda: (
            len(shelf.documents(limit=2000)) == 1003
            and sum(r.added for r in watching[before:]) == 1000
        ),
        timeout=60,
    )
    syncs = len(watching) - before
    assert 1 <= syncs <= 5, f"{syncs} syncs for one burst"
    assert sum(r.added for r in watching[before:]) == 1000


def test_sources_touched(shelf: Shelf, notes: Path, tmp_path: Path) -> None:
    shelf.add(notes)
    src = shelf.sources()[0].id
    assert sources_touched(shelf, [str(notes / "a.md"), str(tmp_path / "elsewhere.md")]) == [src]
