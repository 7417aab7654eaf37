"""Issue 41: a file is read as the walk found it (no-follow opens).

A file swapped after the walk — for a symlink to a secret, or through a folder on its
path swapped for a link — is a failure ("changed while being read"), never read; so is
a followed link that leads elsewhere than when the walk saw it, and a file source that
became a symlink. The swaps are made deterministically, between the walk and the read,
by wrapping the read. The tests run as root: what was indexed is what they observe."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import docshelf.ingest.prepare as prepare_mod
from docshelf.errors import InvalidInput
from docshelf.ingest.prepare import read_file
from docshelf.ingest.sources import FoundFile
from docshelf.search.engines import own_engines
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters

SECRET = "# Secret\n\nThe passphrase is tangerine.\n"


def _notes(tmp_path: Path, count: int) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(count):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nThe lantern number {i} by the harbour.\n")
    return root


def _ids(shelf: Shelf, word: str) -> list[str]:
    return [cid for cid, _ in own_engines(shelf.store).lexical.search([word], 10, SearchFilters())]


def _swap_before_reading(
    monkeypatch: pytest.MonkeyPatch, name: str, swap: Callable[[], None]
) -> list[str]:
    """Run ``swap`` just before ``sync`` reads the file named ``name`` (after the walk
    found it); returns the names read."""
    real = prepare_mod.read_file
    read: list[str] = []

    def reading(path: Path, *args: Any) -> Any:
        if path.name == name and name not in read:
            swap()
        read.append(path.name)
        return real(path, *args)

    monkeypatch.setattr(prepare_mod, "read_file", reading)
    return read


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(SECRET)
    return outside


def _replace_by_link(path: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        path.unlink()
        path.symlink_to(target)

    return swap


def test_a_file_swapped_for_a_symlink_after_the_walk_is_not_read(
    shelf: Shelf, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes, outside = _notes(tmp_path, 3), _outside(tmp_path)
    victim = notes / "n1.md"
    read = _swap_before_reading(
        monkeypatch, "n1.md", _replace_by_link(victim, outside / "secret.md")
    )
    report = shelf.add(notes)
    assert "n1.md" in read  # the swap happened between the walk and the read
    assert [(Path(f.path).name, f.reason) for f in report.failures] == [
        ("n1.md", "changed while being read: it is now a symlink")
    ]
    assert report.added == 2 and not _ids(shelf, "tangerine")


def test_a_folder_swapped_for_a_symlink_after_the_walk_is_not_read(
    shelf: Shelf, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes, outside = _notes(tmp_path, 2), _outside(tmp_path)
    (notes / "sub").mkdir()
    (notes / "sub" / "secret.md").write_text("# Mine\n\nA harmless note.\n")

    def swap() -> None:  # the last name is a file still: only its folder moved
        (notes / "sub" / "secret.md").unlink()
        (notes / "sub").rmdir()
        (notes / "sub").symlink_to(outside, target_is_directory=True)

    _swap_before_reading(monkeypatch, "secret.md", swap)
    report = shelf.add(notes)
    assert [(Path(f.path).name, f.reason.split(":")[0]) for f in report.failures] == [
        ("secret.md", "changed while being read")
    ]
    assert not _ids(shelf, "tangerine")


def test_a_folder_swapped_during_the_walk_is_caught_on_the_descriptor(tmp_path: Path) -> None:
    # The walk itself raced: it stat'ed the name through a folder already swapped for a
    # link leading outside. The descriptor read is then outside the source.
    notes, outside = _notes(tmp_path, 1), _outside(tmp_path)
    (notes / "sub").symlink_to(outside, target_is_directory=True)
    path = notes / "sub" / "secret.md"
    found = FoundFile(path, "sub/secret.md", path.stat(), "markdown", False, notes.resolve())
    with pytest.raises(InvalidInput, match="changed while being read: it now lies outside"):
        read_file(path, 1 << 20, found)
    inside = notes / "n0.md"
    st = inside.stat()
    ok = FoundFile(inside, "n0.md", st, "markdown", False, notes.resolve())
    assert read_file(inside, 1 << 20, ok)[0].startswith(b"# Note 0")


def test_a_followed_symlink_moved_after_the_walk_is_not_read(
    shelf: Shelf, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes, outside = _notes(tmp_path, 2), _outside(tmp_path)
    link = notes / "link.md"
    link.symlink_to(notes / "n0.md")  # inside the source when the walk saw it
    _swap_before_reading(monkeypatch, "link.md", _replace_by_link(link, outside / "secret.md"))
    report = shelf.add(notes, follow_symlinks=True)
    assert [(Path(f.path).name, f.reason.split(":")[0]) for f in report.failures] == [
        ("link.md", "changed while being read")
    ]
    assert not _ids(shelf, "tangerine")
    monkeypatch.undo()
    assert shelf.sync().failures == []  # followed as the source allows, now it is checked
    assert _ids(shelf, "tangerine")


def test_symlinks_inside_a_source_are_still_read(shelf: Shelf, tmp_path: Path) -> None:
    notes = _notes(tmp_path, 1)
    (notes / "inside.md").symlink_to(notes / "n0.md")
    (notes / "real").mkdir()
    (notes / "real" / "deep.md").write_text("# Deep\n\nThe copper meadow.\n")
    (notes / "alias").symlink_to(notes / "real", target_is_directory=True)
    report = shelf.add(notes)
    assert report.failures == []
    files = shelf.store.files_of_source(report.source_id or "")
    assert {f"{notes}/inside.md", f"{notes}/alias/deep.md"} <= set(files)


def test_a_file_source_replaced_by_a_symlink_is_not_read(shelf: Shelf, tmp_path: Path) -> None:
    notes, outside = _notes(tmp_path, 1), _outside(tmp_path)
    source = notes / "n0.md"
    report = shelf.add(source)
    assert report.added == 1
    source.unlink()
    source.symlink_to(outside / "secret.md")
    again = shelf.sync()
    assert [Path(f.path).name for f in again.failures] == ["n0.md"]
    assert "outside the source" in again.failures[0].reason
    assert not _ids(shelf, "tangerine") and _ids(shelf, "lantern")  # kept, not replaced
