"""Ingest's first phase: prepared documents to the store in small commits, searchable by
their words from each commit on; their vectors come after (``ingest/vectors.py``).

A commit holds the documents parsed since the last one, and comes once they hold
``batch_snippets`` snippets or the parsing has taken ``commit_seconds`` — the first
after ``FIRST_COMMIT_SECONDS``, so a new library answers a search within seconds. So a
process killed at any moment loses at most that much parsing: what is committed stays,
and the next ``add`` finds it unchanged and goes on with the rest (writing each document
as soon as it was parsed was measured 20% slower: parsing and writing in turn, each runs
slower).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docshelf.model import SyncReport
from docshelf.progress import Progress, ProgressEvent
from docshelf.store import FileRecord

if TYPE_CHECKING:
    from docshelf.ingest.prepare import Prepared
    from docshelf.runtime import Runtime

FIRST_COMMIT_SECONDS = 1.0  # of parsing before a run's first commit
CLOCK: Callable[[], float] = time.monotonic  # (a test drives the pacing with a fake one)


@dataclass
class Tally:
    """What one run of ingest has done so far, for its progress events."""

    files: int = 0  # files to parse (the todo list)
    written: int = 0  # of them: written, searchable by their words (or unchanged, failed)
    parsed_snippets: int = 0
    seen: int = 0  # files read (and parsed, when new), written or not
    # the model's seconds per snippet on this machine, as last measured (ingest/vectors.py);
    # None: no ETA for the whole job until the embedding measures it
    model_seconds: float | None = None
    waiting: int = 0  # snippets an earlier run left without vectors
    started: float = dataclasses.field(default_factory=lambda: CLOCK())

    def eta(self) -> float | None:
        """Seconds left for the whole job: the files still to parse at the rate so far,
        then the vectors of every snippet (those parsed, those the files left will bring
        at the same count per file, those left waiting) at the model's measured rate."""
        if self.model_seconds is None or not self.seen:
            return None
        left = self.files - self.seen
        per_file = (CLOCK() - self.started) / self.seen
        snippets = self.parsed_snippets * self.files / self.seen + self.waiting
        return left * per_file + snippets * self.model_seconds


@dataclass(frozen=True)
class Pending:
    """A prepared document waiting to be written, and the file it came from (if any)."""

    prepared: Prepared
    record: FileRecord | None
    previous: FileRecord | None


def event(phase: str, tally: Tally, item: str) -> ProgressEvent:
    return ProgressEvent(
        phase,
        tally.written,
        tally.files,
        "files",
        item,
        snippets=tally.parsed_snippets,
        eta=tally.eta(),
    )


class BatchWriter:
    """One run's documents, committed a few seconds' parsing at a time (module doc)."""

    def __init__(
        self, rt: Runtime, report: SyncReport, tally: Tally, progress: Progress | None
    ) -> None:
        self.rt = rt
        self.report = report
        self.tally = tally
        self.progress = progress
        self.committed_at = CLOCK()
        self.first = True  # no commit yet in this run

    def write(self, items: Iterable[Pending | None]) -> None:
        batch: list[Pending] = []
        pending = 0
        for item in items:
            if item is not None:
                batch.append(item)
                pending += len(item.prepared.snippets)
            if batch and self._due(pending):
                self._write_batch(batch)
                batch, pending = [], 0
        self._write_batch(batch)

    def _due(self, snippets: int) -> bool:
        """Whether the batch of ``snippets`` is to be written now."""
        if snippets >= self.rt.batch_snippets:
            return True
        wait = FIRST_COMMIT_SECONDS if self.first else self.rt.commit_seconds
        return CLOCK() - self.committed_at >= wait

    def _write_batch(self, batch: list[Pending]) -> None:
        if not batch:
            return
        for item in batch:
            prepared = item.prepared
            # One transaction: the old content leaves as the new arrives. Without vectors:
            # the document waits for them, searchable by its words meanwhile.
            with self.rt.store.transaction():
                self.rt.writer.put(
                    prepared.document,
                    prepared.chunks,
                    None,
                    links=prepared.links,
                    aliases=prepared.aliases,
                    file=item.record,
                    previous=item.previous,
                )
            self.tally.written += 1
            if item.previous is None:
                self.report.added += 1
            else:
                self.report.updated += 1
        self.committed_at = CLOCK()
        self.first = False
        if self.progress is not None:
            self.progress(event("parse", self.tally, batch[-1].prepared.document.rel_path))
