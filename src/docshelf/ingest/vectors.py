"""Ingest's second phase: vectors for documents already searchable by their words.

``sync`` writes each document as soon as it is parsed and chunked, without vectors:
``put_document`` leaves it *pending* (``Store.claim_embedding``), and the lexical
engines find it from that commit on. ``EmbedPending`` then gives the pending documents
their snippets' vectors, oldest first — this run's and any an earlier run left (killed,
or an ``add --background`` whose embedding stopped). Search meanwhile ranks a pending
document's snippets by their words alone (``search/stages/fuse.py``) and says how much
of the library it searches by meaning (``Store.embedding_backlog``).

Any process of the library may run it (an ``add``, its background child, ``serve``):
it leases a few documents at a time under its owner token (``owners``), so two never
embed the same document, and a killed one's documents are taken at once on its host.
Each batch of ``BATCH`` snippets is embedded in one model call and committed with the
documents it finishes: a process killed loses at most that batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from docshelf import owners
from docshelf.ingest.prepare import embed_texts
from docshelf.model import Chunk
from docshelf.progress import Progress, ProgressEvent

if TYPE_CHECKING:
    from docshelf.runtime import Runtime

RATE = "embed_seconds_per_snippet:"  # meta key (+ model id): the model's measured rate
LEASE_SECONDS = 120.0  # renewed after every batch
CLAIM = 16  # documents leased at a time
BATCH = 256  # snippets per model call and commit
PAGE = 512  # snippets of one document read at a time (a large one comes in pages)
CLOCK: Callable[[], float] = time.monotonic


@dataclass
class Embedded:
    """What one run of the second phase did (for its progress and report)."""

    documents: int = 0  # pending when it began (more may come: another add)
    finished: int = 0
    snippets: int = 0  # embedded (or found in the embedding cache)
    snippets_total: int | None = None  # of pending documents, without vectors when it began


def measured_rate(rt: Runtime) -> float | None:
    """The model's seconds per snippet as the last run measured it here (None: never)."""
    if rt.embedder is None:
        return None
    value = rt.store.get_meta(RATE + rt.embedder.model_id)
    return float(value) if value else None


class EmbedPending:
    """Embeds pending documents until none is left to take (or ``stop`` is set)."""

    def __init__(
        self,
        rt: Runtime,
        progress: Progress | None = None,
        *,
        stop: threading.Event | None = None,
    ) -> None:
        self.rt = rt
        self.progress = progress
        self.stop = stop or threading.Event()
        self.owner = owners.this_process()
        self.done = Embedded()

    def run(self, claims: int | None = None) -> Embedded:
        """Embed until nothing is left to take (or ``claims`` leases of up to ``CLAIM``
        documents were taken: a worker between jobs takes one)."""
        store = self.rt.store
        if self.rt.embedder is None:
            return self.done
        self.done.documents = store.pending_embedding()
        if self.progress is not None:
            self.done.snippets_total = store.pending_snippets()
        taken = 0
        computed, started = self.rt.embed_counts.computed, CLOCK()
        while not self.stop.is_set() and (claims is None or taken < claims):
            ids = store.claim_embedding(time.time(), LEASE_SECONDS, self.owner, CLAIM)
            if not ids:
                break
            taken += 1
            self._documents(ids)
        if (made := self.rt.embed_counts.computed - computed) >= BATCH:
            self._remember_rate((CLOCK() - started) / made)
        return self.done

    def _remember_rate(self, seconds: float) -> None:
        """The model's seconds per snippet in this run, for the next run's ETA."""
        assert self.rt.embedder is not None
        with self.rt.store.transaction():
            self.rt.store.set_meta(RATE + self.rt.embedder.model_id, f"{seconds:.6f}")

    def _documents(self, ids: list[str]) -> None:
        """The leased documents' snippets without vectors, a batch at a time."""
        chunks: list[Chunk] = []
        finishing: list[str] = []
        for n, doc_id in enumerate(ids):
            while True:
                page = self.rt.store.snippets_without_vectors(PAGE, document_id=doc_id)
                whole = len(page) < PAGE
                chunks.extend(page)
                if whole:
                    finishing.append(doc_id)
                if len(chunks) >= BATCH or not whole:
                    self._commit(chunks, finishing, ids[n:])
                    chunks, finishing = [], []
                if whole or self.stop.is_set():
                    break
            if self.stop.is_set():
                return  # the leases go when they run out (or with this process)
        self._commit(chunks, finishing, [])

    def _commit(self, chunks: list[Chunk], finishing: list[str], held: list[str]) -> None:
        """Embed ``chunks`` and write their vectors with the ``finishing`` documents done,
        in one transaction; the leases of the documents still ``held`` are renewed."""
        rt = self.rt
        vectors = None
        if chunks:
            assert rt.embedder is not None
            counts = rt.embed_counts
            before = counts.cached, counts.computed
            vectors = embed_texts(
                rt.store,
                rt.embedder,
                [c.retrieval_text for c in chunks],
                counts,
                on_step=self._step,
            )
            rt.metrics.embedded(
                cached=counts.cached - before[0], computed=counts.computed - before[1]
            )
            self.done.snippets += len(chunks)
        with rt.store.transaction():
            rt.writer.add_vectors([c.id for c in chunks], vectors, finishing)
        self.done.finished += len(finishing)
        if held:
            rt.store.renew_embedding(held, self.owner, time.time() + LEASE_SECONDS)
        self._report()

    def _step(self, done: int, total: int) -> None:
        if self.progress is not None:
            self._report(extra=done)

    def _report(self, extra: int = 0) -> None:
        if self.progress is None:
            return
        d = self.done
        total = max(d.documents, d.finished)
        snippets = d.snippets + extra
        known = d.snippets_total
        self.progress(
            ProgressEvent(
                "embed",
                d.finished,
                total,
                "files",
                snippets=snippets,
                snippets_total=max(known, snippets) if known is not None else None,
            )
        )
