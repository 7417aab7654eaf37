"""Library filing: files dropped in an inbox are indexed, enriched, and moved into
``LIBRARY/<type>/<category>/<name>``; the index follows the move without
re-embedding anything.

Each file takes three steps, and a crash between any two leaves the file in
exactly one place (or, for a moment, one file under two names) with an index
that a re-run repairs:

1. **index** — the inbox and the library are ordinary sources; syncing both
   indexes new inbox files (and enriches them), and repairs what an earlier run
   left half done (a file already in the library is recognised by its content
   and re-pointed, never re-embedded).
2. **move** — ``link(src, dest)`` then ``unlink(src)``: a hard link never
   overwrites, so a name that is taken is never clobbered, and between the two
   calls there is one file with two names, not two files. Across file systems,
   the bytes are copied to a temporary name in the destination folder, fsynced
   and linked into place, then the inbox name is removed. A re-run that finds
   the destination already holding the same file just removes the inbox name.
3. **follow** — in one transaction: the library's file record is written, the
   inbox's is deleted, and the document's path moves.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from docshelf.durable import fsync
from docshelf.errors import Conflict, InvalidInput
from docshelf.model import Document, Failure, Source, SyncReport, fingerprint
from docshelf.progress import ProgressEvent
from docshelf.store import FileRecord, Store

if TYPE_CHECKING:
    from docshelf.runtime import Progress, Runtime


class Library(Protocol):
    """What filing asks of the library it files into (a ``Shelf``)."""

    @property
    def store(self) -> Store: ...

    @property
    def runtime(self) -> Runtime: ...

    def add(self, path: str | Path) -> SyncReport: ...

    def sync(
        self, source_id: str | None = None, progress: Progress | None = None
    ) -> SyncReport: ...

    def enrich(self, document_ids: Sequence[str] | None = None) -> list[Any]: ...


_UNSAFE = re.compile(r"[^\w.\- ]+")


@dataclass
class FilingReport:
    filed: list[tuple[str, str]] = field(default_factory=list)  # (from, to)
    failures: list[Failure] = field(default_factory=list)
    repaired: int = 0  # documents re-pointed after an interrupted run


def segment(value: str | None, fallback: str) -> str:
    """A safe folder name: no separators, no dots of its own, not empty."""
    cleaned = _UNSAFE.sub("-", (value or "").strip()).strip(" .-")
    return cleaned[:80] or fallback


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _free_name(folder: Path, name: str, src: Path) -> Path:
    """``folder/name``, or ``name (2)``, ``(3)``… when taken by another file. A name that
    already is ``src`` (a run interrupted after linking) is returned as it is."""
    stem, suffix = os.path.splitext(name)
    n = 1
    while True:
        candidate = folder / (name if n == 1 else f"{stem} ({n}){suffix}")
        if not candidate.exists() or _same_file(candidate, src):
            return candidate
        n += 1


def move_no_clobber(src: Path, dest: Path) -> None:
    """Move ``src`` to ``dest``, never overwriting; ``FileExistsError`` if ``dest`` is taken
    by another file. Safe to repeat after a crash at any point."""
    if dest.exists():
        if not _same_file(src, dest):
            raise FileExistsError(errno.EEXIST, "taken", str(dest))
    else:
        try:
            os.link(src, dest)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            _copy_into_place(src, dest)
    src.unlink()
    fsync(dest.parent)
    fsync(src.parent)


def _copy_into_place(src: Path, dest: Path) -> None:
    """Across file systems: copy to a hidden name beside ``dest``, fsync, link into place
    (never overwriting), and check the bytes before the caller removes the original."""
    tmp = dest.with_name(f".{dest.name}.docshelf-filing")
    shutil.copy2(src, tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    try:
        os.link(tmp, dest)
    finally:
        tmp.unlink()
    if fingerprint(dest.read_bytes()) != fingerprint(src.read_bytes()):
        raise OSError(errno.EIO, "the copy differs from the original", str(dest))


class Filing:
    def __init__(self, shelf: Library, inbox: str | Path, library: str | Path) -> None:
        self.shelf = shelf
        self.inbox = Path(inbox).expanduser().resolve()
        self.library = Path(library).expanduser().resolve()
        for p, what in ((self.inbox, "inbox"), (self.library, "library")):
            if not p.is_dir():
                raise InvalidInput(f"The {what} {p} is not a folder")
        if self.inbox.is_relative_to(self.library) or self.library.is_relative_to(self.inbox):
            raise InvalidInput("The inbox and the library must not be inside one another")

    def _source(self, path: Path) -> Source:
        source = self.shelf.store.find_source(str(path))
        if source is None:
            self.shelf.add(path)
            source = self.shelf.store.find_source(str(path))
        if source is None or source.kind != "folder":
            raise Conflict(f"{path} is indexed as part of another source; file elsewhere")
        return source

    def run(self, progress: Progress | None = None) -> FilingReport:
        """File everything in the inbox; finish what an interrupted run left."""
        report = FilingReport()
        library = self._source(self.library)
        inbox = self._source(self.inbox)
        before = self._dangling()
        self.shelf.sync(library.id)
        self.shelf.sync(inbox.id, progress=progress)
        report.repaired = len(before - self._dangling())
        records = sorted(self.shelf.store.files_of_source(inbox.id).values(), key=lambda r: r.path)
        for n, record in enumerate(records):
            if progress:
                progress(ProgressEvent("file", n, len(records), "files", record.path))
            try:
                report.filed.append((record.path, str(self.file_one(record, library))))
            except (OSError, InvalidInput) as exc:
                reason = exc.message if isinstance(exc, InvalidInput) else str(exc)
                report.failures.append(Failure(record.path, reason))
        return report

    def _dangling(self) -> set[str]:
        """Documents whose recorded path no longer exists (an interrupted filing)."""
        return {d.id for d in self.shelf.store.list_documents() if not Path(d.path).exists()}

    def destination(self, doc: Document, name: str) -> Path:
        folder = (
            self.library / segment(doc.document_type, "other") / segment(doc.category, "general")
        )
        return folder / segment(name, "document")

    def file_one(self, record: FileRecord, library: Source) -> Path:
        store = self.shelf.store
        doc = store.get_document(record.document_id)
        if doc is None:
            raise InvalidInput("no longer indexed")
        if doc.enriched_at is None:  # enrichment off, or still pending: classify now
            self.shelf.enrich([doc.id])
            doc = store.get_document(doc.id) or doc
        src = Path(record.path)
        planned = self.destination(doc, src.name)
        planned.parent.mkdir(parents=True, exist_ok=True)
        dest = _free_name(planned.parent, planned.name, src)
        move_no_clobber(src, dest)
        self.follow(record, dest, library)
        return dest

    def follow(self, old: FileRecord, dest: Path, library: Source) -> None:
        """The index follows the move: one transaction, nothing re-embedded."""
        st = dest.stat()
        rel = dest.relative_to(self.library).as_posix()
        record = FileRecord(str(dest), library.id, old.document_id, st.st_size, st.st_mtime_ns)
        self.shelf.runtime.writer.relocate(record, rel, moved_from=[old.path])


def watch_inbox(
    filing: Filing,
    stop: threading.Event | None = None,
    on_run: Callable[[FilingReport], None] | None = None,
) -> None:
    """File the inbox now, and again after every burst of changes in it."""
    from watchfiles import watch

    report = filing.run()
    if on_run:
        on_run(report)
    for _ in watch(filing.inbox, debounce=500, stop_event=stop):
        time.sleep(0.05)  # let a writer finish its last block
        report = filing.run()
        if on_run:
            on_run(report)
