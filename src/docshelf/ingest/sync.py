"""Sync: registered sources (files and folders, indexed where they live) followed into
the library — new, changed, moved and deleted files — and documents given as bytes.

Each file is read, fingerprinted and checked once; files whose bytes the library
already holds are re-pointed, not parsed again. Many documents' snippets are
embedded per model call, and each document is written on its own, some seconds'
work at a time (``ingest/batches.py``).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from docshelf.errors import Conflict, InvalidInput, NotFound
from docshelf.ingest import check
from docshelf.ingest import settled as settled_failures
from docshelf.ingest.batches import BatchWriter, Pending, Tally, event
from docshelf.ingest.sources import (
    BAD_NAME,
    UNREADABLE,
    FoundFile,
    is_utf8,
    printable_path,
    single_file,
    walk,
)
from docshelf.model import (
    Document,
    Failure,
    Source,
    SyncReport,
    document_id,
    fingerprint,
)
from docshelf.parse import FILE_TYPES, IMAGE_TYPES, file_type_for
from docshelf.progress import Progress, ProgressEvent
from docshelf.store import FileRecord, Store

if TYPE_CHECKING:
    from docshelf.ingest.prepare import Prepared
    from docshelf.runtime import Runtime

SCAN_EVERY = 256  # files found between two scan events


def unsupported_type_message(name: str) -> str:
    return (
        f"{name}: unsupported file type; supported: {', '.join(sorted(FILE_TYPES))} "
        f"(and {', '.join(sorted(IMAGE_TYPES))} with DOCSHELF_OCR_IMAGES=1)"
    )


class Sync:
    """Sources in: ``add``, ``sync``, ``remove``, ``add_documents`` (``Shelf``'s)."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.store = runtime.store
        self.writer = runtime.writer
        # the call in progress leaves the vectors to another process (``add --background``)
        self.background = False

    # -- sources -----------------------------------------------------------------
    def add(
        self,
        path: str | Path,
        progress: Progress | None = None,
        *,
        user_id: str | None = None,
        follow_symlinks: bool | None = None,
        background: bool = False,
    ) -> SyncReport:
        self.background = background
        target = Path(path).expanduser()
        try:
            target = target.resolve(strict=True)
        except FileNotFoundError:
            raise NotFound(f"No such file or folder: {printable_path(path)}") from None
        except (OSError, RuntimeError) as exc:
            raise InvalidInput(f"Cannot resolve {printable_path(path)}: {exc}") from None
        if not is_utf8(str(target)):
            raise InvalidInput(f"{printable_path(target)}: {BAD_NAME}")
        if not target.is_dir() and file_type_for(target.name, images=self.images) is None:
            raise InvalidInput(unsupported_type_message(target.name))
        from docshelf.accounts import users as users_mod

        owner = user_id or users_mod.ensure_local_admin(self.store).id
        source = self.store.find_source(str(target))
        if source is not None and source.user_id not in (None, owner):
            raise Conflict(f"{target} is already a source of another user")
        if source and follow_symlinks is not None and follow_symlinks != source.follow_symlinks:
            self.store.set_follow_symlinks(source.id, follow_symlinks)
            source = dataclasses.replace(source, follow_symlinks=follow_symlinks)
        if source is not None:
            return self.sync_source(source, progress)
        for other in self.store.list_sources():
            other_path = Path(other.path)
            if other.kind == "folder" and target.is_relative_to(other_path):
                return self.sync_source(other, progress)
            if target.is_dir() and other_path.is_relative_to(target):
                raise Conflict(
                    f"{other.path} is already a source inside {target}; remove it first "
                    f"(`docshelf remove {other.id}`), then add the larger folder"
                )
        self.rt.check_writable()
        import hashlib

        source = Source(
            id="src_" + hashlib.sha256(str(target).encode()).hexdigest()[:12],
            path=str(target),
            kind="folder" if target.is_dir() else "file",
            host=self.rt.host,
            added_at=time.time(),
            user_id=owner,
            follow_symlinks=bool(follow_symlinks),
        )
        self.store.add_source(source)
        return self.sync_source(source, progress, checked=True)

    def sync(
        self,
        source_id: str | None = None,
        progress: Progress | None = None,
        *,
        full: bool = False,
        background: bool = False,
    ) -> SyncReport:
        self.background = background
        if source_id:
            sources = [named(self.store, source_id, by_path=False)]
        else:
            sources = self.store.list_sources()
        report = SyncReport(source_id=source_id)
        for source in sources:  # every source's words first, then the vectors of all
            report.merge(self.sync_source(source, progress, full=full, finish=False))
        changed = report.added + report.updated + report.removed + report.moved + report.copies
        self._finish(progress, indexes=bool(changed))
        check.mend(self.rt, report)  # stale citations, chunks of no document, ...
        return report

    def remove(self, target: str) -> SyncReport:
        source = named(self.store, target)
        report = SyncReport(source_id=source.id)
        with self.store.transaction():
            for record in self.store.files_of_source(source.id).values():
                report.removed += self.writer.drop_file(record)
            self.store.delete_source(source.id)
        self.rt.maintain_indexes()
        return report

    def _scan(self, source: Source) -> Iterator[FoundFile | Failure]:
        root = Path(source.path)
        if source.kind == "folder":
            if not root.is_dir():
                yield Failure(source.path, "source folder is missing or unreadable")
                return
            yield from walk(root, follow_symlinks=source.follow_symlinks, images=self.images)
            return
        file_type = file_type_for(root.name, images=self.images)
        if file_type is None:  # an image added while DOCSHELF_OCR_IMAGES was on, now off
            yield Failure(source.path, unsupported_type_message(root.name))
            return
        yield single_file(root, file_type, follow_symlinks=source.follow_symlinks)

    def sync_source(
        self,
        source: Source,
        progress: Progress | None,
        *,
        checked: bool = False,
        full: bool = False,
        finish: bool = True,
    ) -> SyncReport:
        """One source: stat-check its files, index what changed, forget what is gone
        (``checked``: the caller has just checked the library is writable; ``full``: read
        every file, trusting no size and mtime, and try the failed ones again; ``finish``:
        then the vectors, the indexes' upkeep and enrichment, ``_finish``)."""
        report = SyncReport(source_id=source.id)
        known = self.store.files_of_source(source.id)
        settled = {} if full else self.store.settled_failures(source.id)
        seen: set[str] = set()
        todo: list[FoundFile] = []
        source_missing = False
        for n, found in enumerate(self._scan(source), 1):
            if progress and n % SCAN_EVERY == 0:
                progress(ProgressEvent("scan", n, None, "files", _rel(found)))
            if isinstance(found, Failure):
                report.failures.append(found)
                source_missing = source_missing or found.path == source.path
                continue
            key = str(found.path)
            seen.add(key)
            rec = known.get(key)
            if rec and not full and (rec.size, rec.mtime_ns) == _stat_of(found.stat):
                report.unchanged += 1
            elif failed := settled_failures.unchanged(settled.get(key), found, self.keys):
                report.failures.append(failed)  # the same file the same parsers failed on
            else:
                todo.append(found)
        if progress:
            scanned = len(seen) + len(report.failures)
            progress(ProgressEvent("scan", scanned, scanned, "files", f"{len(todo)} to index"))
        if todo and not checked:
            self.rt.check_writable()
        source_missing = source_missing or not _still_there(source)
        gone = {} if source_missing else _gone(known, seen, report.failures)
        self._ingest(source, todo, known, gone, settled, report, progress)
        # nothing gone and no failures, now or recorded: no write (nor its lock) at all
        if gone or report.failures or self.store.count_failures():
            with self.store.transaction():
                for record in gone.values():
                    report.removed += self.writer.drop_file(record)
                self.store.record_failures(source.id, report.failures)
        if finish:
            self._finish(progress, indexes=bool(todo or gone))
        return report

    def finish_pending(self, progress: Progress | None) -> int:
        """``Shelf.embed_pending``: the second phase for whatever waits, then enrichment."""
        self.background = False
        return self._finish(progress, indexes=False)

    def _finish(self, progress: Progress | None, *, indexes: bool) -> int:
        """After the words: ingest's second phase (``ingest/vectors.py``), vectors for every
        document waiting for them — this run's and any an earlier run left — unless the
        caller leaves them to another process; the derived indexes' upkeep (shown when
        ``indexes`` or vectors changed); enrichment. How many documents were embedded."""
        done = 0
        if not self.background and self.rt.embedder and self.store.pending_embedding():
            from docshelf.ingest.vectors import EmbedPending

            done = EmbedPending(self.rt, progress).run().finished
        self.rt.maintain_indexes(progress=progress if indexes or done else None)
        if not self.background:
            self._enrich_after_ingest(progress)
        return done

    def _enrich_after_ingest(self, progress: Progress | None) -> None:
        """Enrichment follows indexing when it is on (DOCSHELF_ENRICH), for all that is
        pending: this run's documents, and any an earlier run left (killed while it
        enriched: a lease of a process that has died is over, ``owners``)."""
        if self.rt.settings.enrich == "off":
            return
        waiting = self.store.pending_enrichment(time.time())
        if waiting and self.rt.enrich_pending(progress=progress, expected=waiting):
            self.rt.maintain_indexes()  # (what enrichment wrote: Typesense's documents)

    @property
    def images(self) -> bool:
        """Whether PNG and JPEG files are documents (DOCSHELF_OCR_IMAGES)."""
        return self.rt.settings.parse.reads_images

    @cached_property
    def keys(self) -> settled_failures.Keys:
        """What a settled failure is remembered under besides the file (``settled.Keys``)."""
        return settled_failures.Keys.of(self.rt.settings)

    # -- ingest --------------------------------------------------------------------
    def _ingest(
        self,
        source: Source,
        todo: list[FoundFile],
        known: dict[str, FileRecord],
        gone: dict[str, FileRecord],
        settled: dict[str, Failure],
        report: SyncReport,
        progress: Progress | None,
    ) -> None:
        tally = self._tally(len(todo), progress)
        copies = _Copies()

        def items() -> Iterator[Pending | None]:
            for found in todo:
                if progress:
                    progress(event("parse", tally, found.rel_path))
                item = self._prepare_file(source, found, known, gone, settled, report, copies)
                tally.seen += 1
                if item is None:
                    tally.written += 1  # unchanged, moved or failed: nothing to embed
                else:
                    tally.parsed_snippets += len(item.prepared.snippets)
                yield item

        BatchWriter(self.rt, report, tally, progress).write(items())
        for record, found, previous in copies.waiting:  # their bytes are in the store now
            if (existing := self.store.get_document(record.document_id)) is not None:
                self._link_existing(existing, record, found, previous, gone, report)
        if progress and todo:
            progress(event("parse", tally, "done"))

    def _tally(self, files: int, progress: Progress | None) -> Tally:
        """A run's tally, with what its whole-job ETA needs: the model's measured rate
        and the snippets an earlier run left waiting (read only for a progress display)."""
        tally = Tally(files=files)
        if progress is not None and files and self.rt.embedder is not None:
            from docshelf.ingest.vectors import measured_rate

            tally.model_seconds = measured_rate(self.rt)
            tally.waiting = self.store.pending_snippets() if tally.model_seconds else 0
        return tally

    def add_documents(
        self, items: Iterable[tuple[str, bytes, str | None]], progress: Progress | None = None
    ) -> SyncReport:
        self.rt.check_writable()
        report = SyncReport(source_id=None)
        listed = list(items)
        tally = Tally(files=len(listed))

        def pending() -> Iterator[Pending | None]:
            for name, data, title in listed:
                if progress:
                    progress(event("parse", tally, name))
                file_type = file_type_for(name, images=self.images)
                tally.written += 1  # until it turns out to need writing
                if file_type is None:
                    report.failures.append(Failure(name, "unsupported file type"))
                    continue
                fp = fingerprint(data)
                if self.store.get_document(document_id(fp)) is not None:
                    report.unchanged += 1
                    continue
                try:
                    prepared = self.prepare(data, file_type, name, name, None, title, fp)
                except InvalidInput as exc:
                    report.failures.append(Failure(name, exc.message))
                    continue
                tally.written -= 1
                tally.parsed_snippets += len(prepared.snippets)
                yield Pending(prepared, None, None)

        BatchWriter(self.rt, report, tally, progress).write(pending())
        self.background = False
        self._finish(progress, indexes=False)
        return report

    def prepare(
        self,
        data: bytes,
        file_type: str,
        path: str,
        rel_path: str,
        source_id: str | None,
        title: str | None = None,
        fp: str | None = None,
    ) -> Prepared:
        """``ingest.prepare`` with this library's chunking, taxonomy and model."""
        from docshelf.ingest.prepare import prepare  # parsing and chunking: only for a change

        rt = self.rt
        return prepare(
            data,
            file_type=file_type,
            path=path,
            rel_path=rel_path,
            source_id=source_id,
            host=rt.host,
            chunking=rt.chunking(),
            title=title,
            embedding_model=rt.model_id,
            fp=fp,
            limits=rt.settings.parse,
        )

    def _prepare_file(
        self,
        source: Source,
        found: FoundFile,
        known: dict[str, FileRecord],
        gone: dict[str, FileRecord],
        settled: dict[str, Failure],
        report: SyncReport,
        copies: _Copies,
    ) -> Pending | None:
        from docshelf.ingest.prepare import read_file

        path = str(found.path)
        try:
            data, st = read_file(found.path, self.rt.settings.max_file_bytes, found)
        except InvalidInput as exc:  # the moment's, but too large: settled with the walk's stat
            report.failures.append(self._failed(path, exc.message, found.stat, None))
            return None
        fp = fingerprint(data)
        doc_id = document_id(fp)
        record = FileRecord(path, source.id, doc_id, st.st_size, st.st_mtime_ns)
        previous = known.get(path)
        if previous is not None and previous.document_id == doc_id:
            if (previous.size, previous.mtime_ns) != _stat_of(st):  # touched, same bytes
                self.store.put_file(record)  # remember the new stat
            report.unchanged += 1
            return None
        if doc_id in copies.held:  # bytes another file of this run brings: linked after it
            copies.waiting.append((record, found, previous))
            return None
        existing = self.store.get_document(doc_id)
        if existing is not None:
            self._link_existing(existing, record, found, previous, gone, report)
            return None
        skipped = settled_failures.same_bytes(settled.get(path), fp, self.keys, st)
        if skipped is not None:  # touched, the same bytes that failed: not parsed again
            report.failures.append(skipped)
            return None
        try:
            prepared = self.prepare(data, found.file_type, path, found.rel_path, source.id, fp=fp)
        except InvalidInput as exc:  # the bytes' (passed over until the file changes), or a limit's
            report.failures.append(self._failed(path, exc.message, st, fp))
            return None
        copies.held.add(doc_id)
        return Pending(prepared, record, previous)

    def _failed(self, path: str, reason: str, st: os.stat_result, fp: str | None) -> Failure:
        """A file's failure, settled when the file decides it (``failures.decided_by``:
        passed over until it changes), plain when the moment does (tried next time)."""
        return settled_failures.failure(path, reason, st, fp, self.keys)

    def _link_existing(
        self,
        existing: Document,
        record: FileRecord,
        found: FoundFile,
        previous: FileRecord | None,
        gone: dict[str, FileRecord],
        report: SyncReport,
    ) -> None:
        """Bytes we already have under another path: a move, or a copy. Nothing is re-parsed."""
        moved_from = [p for p, r in gone.items() if r.document_id == existing.id]
        self.writer.relocate(
            record,
            found.rel_path,
            previous=previous,
            moved_from=moved_from,
            repoint=bool(moved_from) or not Path(existing.path).exists(),
        )
        for p in moved_from:
            del gone[p]
        if moved_from:
            report.moved += 1
        else:
            report.copies += 1


@dataclasses.dataclass
class _Copies:
    """The documents this run is bringing in, and the files that hold the same bytes as
    one of them: each is cited at its path once the first is written."""

    held: set[str] = dataclasses.field(default_factory=set)
    waiting: list[tuple[FileRecord, FoundFile, FileRecord | None]] = dataclasses.field(
        default_factory=list
    )


def _still_there(source: Source) -> bool:
    """Whether a folder source's root is still a folder once its walk is done (renamed or
    unmounted during the walk, it is missing: nothing under it is gone)."""
    return source.kind != "folder" or Path(source.path).is_dir()


def _gone(
    known: dict[str, FileRecord], seen: set[str], failures: list[Failure]
) -> dict[str, FileRecord]:
    """The known files the walk did not see — not those it could not read: a file that
    could not be read, or any file under a folder that could not (its permissions, gone
    during the walk), is a failure to report, never a deletion. What the walk leaves out
    by rule (a symlink leading outside, a name that is not UTF-8) is gone."""
    failed = {f.path for f in failures if f.reason.startswith(UNREADABLE)}
    folders = tuple(path.rstrip(os.sep) + os.sep for path in failed)
    return {
        p: r
        for p, r in known.items()
        if p not in seen and p not in failed and not p.startswith(folders)
    }


def _stat_of(st: os.stat_result) -> tuple[int, int]:
    """What tells a file unchanged without reading it: its size and mtime."""
    return st.st_size, st.st_mtime_ns


def _rel(found: FoundFile | Failure) -> str:
    return found.rel_path if isinstance(found, FoundFile) else found.path


def named(store: Store, target: str, *, by_path: bool = True) -> Source:
    """The source ``target`` names: by its id, or (``by_path``) by the path it was added
    with; ``NotFound`` when there is none."""
    source = store.get_source(target)
    if source is None and by_path:
        source = store.find_source(str(Path(target).expanduser().resolve()))
    if source is None:
        raise NotFound(f"No source {target!r}; `docshelf list` shows the sources")
    return source
