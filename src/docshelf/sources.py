"""Finding the files of a source: hidden folders skipped, ``.docshelfignore`` honoured,
symlink loops and unreadable folders reported rather than fatal."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from docshelf.model import Failure
from docshelf.parse import file_type_for

IGNORE_FILE = ".docshelfignore"


@dataclass(frozen=True)
class FoundFile:
    path: Path  # absolute, as reached from the source root (symlinks not resolved)
    rel_path: str  # relative to the source root, with forward slashes
    stat: os.stat_result


def _load_ignore(root: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def walk(root: Path) -> Iterator[FoundFile | Failure]:
    """Every supported file under ``root`` (a folder), and a ``Failure`` per problem.

    Hidden files and folders (``.git``, ``.obsidian``, ...) are skipped. Folder
    symlinks are followed once: a link back to a folder already on the current
    path is reported as a loop.
    """
    ignore = _load_ignore(root)
    yield from _walk_dir(root, root, ignore, ())


def _walk_dir(
    root: Path,
    folder: Path,
    ignore: pathspec.GitIgnoreSpec | None,
    ancestors: tuple[tuple[int, int], ...],
) -> Iterator[FoundFile | Failure]:
    try:
        st = folder.stat()
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        yield Failure(str(folder), f"unreadable folder: {exc.strerror or exc}")
        return
    here = (st.st_dev, st.st_ino)
    if here in ancestors:
        yield Failure(str(folder), "symlink loop: this folder contains itself")
        return
    ancestors = (*ancestors, here)
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        rel = path.relative_to(root).as_posix()
        try:
            is_dir = entry.is_dir()  # follows symlinks
        except OSError as exc:
            yield Failure(str(path), f"unreadable: {exc.strerror or exc}")
            continue
        if ignore is not None and ignore.match_file(rel + ("/" if is_dir else "")):
            continue
        if is_dir:
            yield from _walk_dir(root, path, ignore, ancestors)
            continue
        if file_type_for(entry.name) is None:
            continue
        try:
            stat = entry.stat()
        except OSError as exc:  # a dangling symlink, or a file gone since listing
            yield Failure(str(path), f"unreadable: {exc.strerror or exc}")
            continue
        yield FoundFile(path, rel, stat)
