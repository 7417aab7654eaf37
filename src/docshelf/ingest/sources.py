"""Finding the files of a source: hidden folders skipped, ``.docshelfignore`` honoured,
symlink loops and unreadable folders reported rather than fatal.

Nothing found here is opened: what is not a regular file (a FIFO, a socket, a
device) is reported from its ``stat``, and so are names that are not valid
UTF-8 and symlinks that lead outside the source (unless the source follows
them). What a file found here is, is checked again on the descriptor it is read
from (``FoundFile.changed``): a file swapped after the walk (for a symlink to
``/etc/passwd``, say) is a failure, never read.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docshelf.model import Failure
from docshelf.parse import file_type_for

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE = ".docshelfignore"


@dataclass(frozen=True)
class FoundFile:
    path: Path  # absolute, as reached from the source root (symlinks not resolved)
    rel_path: str  # relative to the source root, with forward slashes
    stat: os.stat_result
    file_type: str  # what parses it (``parse.FILE_TYPES``), decided once, here
    link: bool = False  # the name itself is a symlink (opened following it; else not)
    # The source's real path, where the file must lie when the source follows no symlink
    # out of it (None: it does, or nothing to check)
    within: Path | None = None

    def changed(self, fd: int, st: os.stat_result) -> str | None:
        """Why the file open at ``fd`` (``st``: its ``fstat``) is not the one the walk
        found and checked, or None: another file (a symlink now leading elsewhere, a
        file replaced), or one outside the source (a folder on its path swapped for a
        symlink)."""
        if (st.st_dev, st.st_ino) != (self.stat.st_dev, self.stat.st_ino):
            return "it is no longer the file the scan found (replaced, or a symlink moved)"
        if self.within is not None:
            try:
                real = Path(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                return None  # no /proc: the descriptor's own identity is the check
            if not real.is_relative_to(self.within):
                return "it now lies outside the source"
        return None


def _load_ignore(root: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec  # only for a folder with an ignore file

    return pathspec.GitIgnoreSpec.from_lines(lines)


def walk(
    root: Path, *, follow_symlinks: bool = False, images: bool = False
) -> Iterator[FoundFile | Failure]:
    """Every supported file under ``root`` (a folder), and a ``Failure`` per problem
    (``images``: PNG and JPEG files too, read by OCR: DOCSHELF_OCR_IMAGES).

    Hidden files and folders (``.git``, ``.obsidian``, ...) are skipped. Symlinks
    that stay inside ``root`` are followed; those that lead outside it are
    reported, not followed, unless ``follow_symlinks``. A folder symlink is
    followed once: a link back to a folder already on the current path is
    reported as a loop.
    """
    ignore = _load_ignore(root)
    walker = _Walker(root, root.resolve(), ignore, follow_symlinks, images)
    yield from walker.folder(root, (), "")


def single_file(path: Path, file_type: str, *, follow_symlinks: bool) -> FoundFile | Failure:
    """A file source's file, checked as a folder's are: a symlink (its real path was
    taken when it was added) leads outside it unless the source follows symlinks."""
    try:
        st = os.lstat(path)
        link = stat_mod.S_ISLNK(st.st_mode)
        if link and not follow_symlinks:
            return Failure(str(path), OUTSIDE)
        st = os.stat(path) if link else st
    except OSError as exc:
        return Failure(str(path), f"unreadable: {exc.strerror or exc}")
    if not stat_mod.S_ISREG(st.st_mode):
        return Failure(str(path), "not a regular file")
    within = None if follow_symlinks else Path(os.path.realpath(path))
    return FoundFile(path, path.name, st, file_type, link, within)


def printable_path(path: str | Path) -> str:
    """``path`` as text that any store and JSON can hold: bytes that are not UTF-8
    (kept by Python as lone surrogates) are shown as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_utf8(name: str) -> bool:
    """False for a file name with bytes that are not UTF-8 (Python's surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


BAD_NAME = "the name is not valid UTF-8; rename it to index it"
# How a failure to read a file or folder starts (sync keeps what it held: not a deletion).
UNREADABLE = ("unreadable", "source folder is missing or unreadable")
OUTSIDE = (
    "symlink to a place outside the source, not followed "
    "(`docshelf add SOURCE --follow-symlinks` follows them)"
)


@dataclass(frozen=True)
class _Walker:
    root: Path
    real_root: Path
    ignore: pathspec.GitIgnoreSpec | None
    follow_symlinks: bool
    images: bool = False

    def folder(
        self, folder: Path, ancestors: tuple[tuple[int, int], ...], rel: str
    ) -> Iterator[FoundFile | Failure]:
        """The files under ``folder``, ``rel`` below the root ("" or "a/b/")."""
        try:
            st = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            yield Failure(printable_path(folder), f"unreadable folder: {exc.strerror or exc}")
            return
        here = (st.st_dev, st.st_ino)
        if here in ancestors:
            yield Failure(printable_path(folder), "symlink loop: this folder contains itself")
            return
        ancestors = (*ancestors, here)
        for entry in entries:
            if not entry.name.startswith("."):
                yield from self.entry(entry, ancestors, rel + entry.name)

    def entry(
        self, entry: os.DirEntry[str], ancestors: tuple[tuple[int, int], ...], rel: str
    ) -> Iterator[FoundFile | Failure]:
        path = Path(entry.path)  # rel: its path below the root, with forward slashes
        try:
            is_dir = entry.is_dir()  # follows symlinks
        except OSError as exc:
            yield Failure(printable_path(path), f"unreadable: {exc.strerror or exc}")
            return
        if self.ignore is not None and self.ignore.match_file(rel + ("/" if is_dir else "")):
            return
        file_type = None if is_dir else file_type_for(entry.name, images=self.images)
        if not is_dir and file_type is None:
            return
        if not is_utf8(entry.name):
            yield Failure(printable_path(path), BAD_NAME)
            return
        link = entry.is_symlink()
        if not self.follow_symlinks and link and not self._inside(path):
            yield Failure(str(path), OUTSIDE)
            return
        if is_dir:
            yield from self.folder(path, ancestors, rel + "/")
            return
        try:
            stat = entry.stat()
        except OSError as exc:  # a dangling symlink, or a file gone since listing
            yield Failure(str(path), f"unreadable: {exc.strerror or exc}")
            return
        if not stat_mod.S_ISREG(stat.st_mode):  # a FIFO would block whoever opens it
            yield Failure(str(path), "not a regular file")
            return
        assert file_type is not None
        within = None if self.follow_symlinks else self.real_root
        yield FoundFile(path, rel, stat, file_type, link, within)

    def _inside(self, path: Path) -> bool:
        """Whether a symlink leads to a place inside the source (a dangling or looping
        link counts as inside: reading it reports the problem)."""
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return True
        return target.is_relative_to(self.real_root)
