"""Issue 41: private files everywhere docshelf writes.

Everything docshelf makes in its home or beside the database (the sidecar indexes, the
uploads' bytes, the export archive) is its owner's alone whatever the umask (folders
0700, files 0600); a home left open by an older version is tightened when the library
opens (the user's own files in it, and the documents, left as they are). The tests run
as root: modes are what they observe, not permission errors."""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import docshelf.portable as portable_mod
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder


@pytest.fixture
def permissive() -> Iterator[None]:
    """A umask that lets group and others read what is made with the default modes."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _open_to_others(top: Path) -> list[str]:
    """What under ``top`` (and ``top``) others could read or enter (symlinks aside)."""
    found = []
    for path in [top, *top.rglob("*")]:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            found.append(f"{oct(stat.S_IMODE(st.st_mode))} {path.relative_to(top.parent)}")
    return found


def _notes(tmp_path: Path, count: int = 12, start: int = 0) -> Path:
    root = tmp_path / "notes"
    root.mkdir(exist_ok=True)
    for i in range(start, start + count):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nThe lantern number {i} by the harbour.\n")
    return root


# -- what docshelf writes --------------------------------------------------------------------


def test_the_export_archive_is_private_from_its_first_byte(tmp_path: Path, shelf: Shelf) -> None:
    shelf.add(_notes(tmp_path))
    dest = tmp_path / "out" / "library.zip"
    dest.parent.mkdir()
    seen: list[int] = []
    real_write = portable_mod._write_line

    def write_line(out: Any, obj: dict[str, Any]) -> None:  # the partial file, being written
        seen.extend(_mode(p) for p in dest.parent.iterdir())
        real_write(out, obj)

    old = os.umask(0)  # the most permissive
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(portable_mod, "_write_line", write_line)
            shelf.export_library(dest)
        assert seen and set(seen) == {0o600}
        assert _mode(dest) == 0o600
        dest.chmod(0o644)  # an archive left open earlier, replaced: the new one is private
        shelf.export_library(dest, overwrite=True)
        assert _mode(dest) == 0o600
    finally:
        os.umask(old)
    with zipfile.ZipFile(dest) as zf:
        assert "documents.jsonl" in zf.namelist()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["library.zip"]


def test_the_sidecar_indexes_and_the_uploads_are_private(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, permissive: None
) -> None:
    monkeypatch.setenv("DOCSHELF_ANN_THRESHOLD", "1")
    monkeypatch.setenv("DOCSHELF_LEXICAL_THRESHOLD", "1")
    notes = _notes(tmp_path)
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)  # both sidecars built
        assert (isolated_home / "docshelf.ann" / "current.json").exists()
        assert (isolated_home / "docshelf.lex" / "current.json").exists()
        _notes(tmp_path, 6, start=100)
        shelf.sync()  # and the changes folded in (new segments, a new graph)
        shelf.maintain_indexes(force=True)
        assert shelf.search("lantern", limit=3).hits
        admin = shelf.users()[0]
        shelf.upload(admin.id, "small.md", b"# Up\n\nAn uploaded note.\n")
        writer = shelf.blob_writer(8 << 20)
        writer.write(os.urandom(2 << 20))  # past the in-memory spool: a temporary file
        writer.commit()
        assert any((isolated_home / "blobs").rglob("*")), "no blob stored"
        assert _open_to_others(isolated_home) == []
    assert _open_to_others(isolated_home) == []


def test_a_home_left_open_by_an_older_version_is_tightened(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, permissive: None
) -> None:
    monkeypatch.setenv("DOCSHELF_ANN_THRESHOLD", "1")
    monkeypatch.setenv("DOCSHELF_LEXICAL_THRESHOLD", "1")
    notes = _notes(tmp_path)
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes)
        shelf.upload(shelf.users()[0].id, "up.md", b"# Up\n\nAn uploaded note.\n")
    # As an older version (or a hand) left it: everything open to others
    (isolated_home / "models").mkdir()
    (isolated_home / "models" / "model.onnx").write_bytes(b"onnx")
    (isolated_home / "search-helper.log").write_text("a log\n")
    for path in [isolated_home, *isolated_home.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    mine = isolated_home / "mine.txt"  # not docshelf's: left as it is
    mine.write_text("my own file\n")
    mine.chmod(0o644)
    assert len(_open_to_others(isolated_home)) > 10
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        assert shelf.search("lantern", limit=3).hits
    assert _open_to_others(isolated_home) == [f"0o644 {mine.relative_to(isolated_home.parent)}"]
    assert _mode(isolated_home) == 0o700
    assert _mode(isolated_home / "docshelf.db") == 0o600
    assert _mode(isolated_home / "models" / "model.onnx") == 0o600
    assert all(_mode(p) == 0o644 for p in notes.iterdir())  # the documents: the user's


def test_a_database_elsewhere_and_its_sidecars_are_tightened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, permissive: None
) -> None:
    monkeypatch.setenv("DOCSHELF_LEXICAL_THRESHOLD", "1")
    folder = tmp_path / "shared"
    folder.mkdir()
    monkeypatch.setenv("DOCSHELF_DATABASE_URL", f"sqlite:///{folder / 'lib.db'}")
    with Shelf(embedder=HashEmbedder()) as shelf:
        shelf.add(_notes(tmp_path))
    assert (folder / "lib.lex").is_dir()
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    with Shelf(embedder=HashEmbedder()):
        pass
    assert _mode(folder) == 0o755  # the user's folder: left as it is
    assert [p for p in _open_to_others(folder) if p != "0o755 shared"] == []


def test_private_dir_makes_its_missing_parents_private(tmp_path: Path, permissive: None) -> None:
    from docshelf.durable import private_dir

    private_dir(tmp_path / "a" / "b" / "c")
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
