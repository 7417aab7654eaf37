"""Prepared documents to the store in small commits: many documents' snippets embedded
per model call, each document written in its own transaction as soon as its batch is
embedded.

A batch ends at ``batch_snippets`` snippets (the model pads less in larger groups),
and sooner when its work would take the time since the last commit past
``commit_seconds``: the work already done (parsing since the last commit) plus the
model's time for the snippets waiting, at the rate it embedded the last batch. The
first batch is small (``FIRST_BATCH`` snippets): it gives the rate, and a first
commit early. So a process killed at any moment loses at most about that much work:
what is committed stays, and the next ``add`` finds it unchanged and goes on with the
rest. Without a model a batch is only parsed, so it ends at ``batch_snippets`` or
``commit_seconds`` of parsing (writing each document as soon as it is parsed instead
was measured 20% slower: parsing and writing in turn, each runs slower).
"""

from __future__ import annotations

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

FIRST_BATCH = 64  # snippets in the first batch of a run (before the model's rate is known)
CLOCK: Callable[[], float] = time.monotonic  # (a test drives the pacing with a fake one)


@dataclass
class Tally:
    """What one run of ingest has done so far, for its progress events."""

    files: int = 0  # files to parse (the todo list)
    written: int = 0  # documents written (or found unchanged) of them
    parsed_snippets: int = 0
    embedded_snippets: int = 0


@dataclass(frozen=True)
class Pending:
    """A prepared document waiting for its vectors, and the file it came from (if any)."""

    prepared: Prepared
    record: FileRecord | None
    previous: FileRecord | None


def event(phase: str, tally: Tally, item: str) -> ProgressEvent:
    snippets = tally.embedded_snippets if phase == "embed" else tally.parsed_snippets
    return ProgressEvent(
        phase,
        tally.written,
        tally.files,
        "files",
        item,
        snippets=snippets,
        snippets_total=tally.parsed_snippets if phase == "embed" else None,
    )


class BatchWriter:
    """One run's documents, embedded in batches and committed one by one (module doc)."""

    def __init__(
        self, rt: Runtime, report: SyncReport, tally: Tally, progress: Progress | None
    ) -> None:
        self.rt = rt
        self.report = report
        self.tally = tally
        self.progress = progress
        self.committed_at = CLOCK()
        self.seconds_per_snippet: float | None = None  # the model's, in the last batch

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
        """Whether the batch of ``snippets`` is to be embedded and written now."""
        if snippets >= self.rt.batch_snippets:
            return True
        work = CLOCK() - self.committed_at  # parsing, since the last commit
        if self.rt.embedder is None:
            return work >= self.rt.commit_seconds
        if self.seconds_per_snippet is None:
            return snippets >= FIRST_BATCH or work >= self.rt.commit_seconds
        return work + snippets * self.seconds_per_snippet >= self.rt.commit_seconds

    def _write_batch(self, batch: list[Pending]) -> None:
        if not batch:
            return
        embedder = self.rt.embedder
        vectors = None
        if embedder is not None:
            texts = [c.retrieval_text for item in batch for c in item.prepared.snippets]
            from docshelf.ingest.prepare import embed_texts

            counts = self.rt.embed_counts
            computed = counts.computed
            started = CLOCK()
            vectors = embed_texts(
                self.rt.store, embedder, texts, counts, on_step=self._on_step(batch)
            )
            if counts.computed > computed:  # the model's rate, for the next batch's size
                self.seconds_per_snippet = (CLOCK() - started) / (counts.computed - computed)
        offset = 0
        for item in batch:
            n = len(item.prepared.snippets)
            doc_vectors = vectors[offset : offset + n] if vectors is not None else None
            offset += n
            prepared = item.prepared
            # One transaction: the old content leaves as the new arrives.
            with self.rt.store.transaction():
                self.rt.writer.put(
                    prepared.document,
                    prepared.chunks,
                    doc_vectors,
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

    def _on_step(self, batch: list[Pending]) -> Callable[[int, int], None] | None:
        """Progress of the model's steps through ``batch``, as embed events."""
        if self.progress is None:
            return None
        report_to, tally = self.progress, self.tally
        base = tally.embedded_snippets
        last = batch[-1].prepared.document.rel_path

        def on_step(done: int, total: int) -> None:
            tally.embedded_snippets = base + done
            report_to(event("embed", tally, last))

        return on_step
