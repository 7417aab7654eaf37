"""Background ingest: workers that claim jobs from the store and run their stages.

    queued → parsing → chunking → embedding → indexing → complete   (or failed)

The job's row in the store is its truth. A worker leases a job (renewing the
lease while it works) and runs the stage the job is at; each stage commits its
output together with the move to the next stage and its event, in one
transaction, after checking that the worker still holds the lease. A worker
killed at any point leaves the job at the last committed stage; another worker
claims it and resumes there: at once on the same host (a worker's name starts with
its process's token, ``owners``, so a dead one's lease is seen to be over), once
the lease expires from another. Re-running a stage
rewrites the same rows (chunk ids and vectors are keyed by content), so
nothing is written twice.

Search only sees documents whose status is ``complete``, so chunks waiting
for their vectors are never visible.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import docshelf.parse as parse_mod
from docshelf import owners, telemetry
from docshelf.backoff import Backoff
from docshelf.errors import DocshelfError, InvalidInput
from docshelf.ingest.prepare import (
    ChunkedFile,
    Chunking,
    chunk_file,
    chunk_parsed,
    embed_texts,
    portable_counter,
)
from docshelf.ingest.uploads import intake_of
from docshelf.model import Block, BlockKind, Chunk, Document, Job, ParsedDocument, Stage, Tier
from docshelf.parse import parse

if TYPE_CHECKING:
    from docshelf.runtime import Wired

log = logging.getLogger("docshelf.worker")

PROGRESS = {
    Stage.QUEUED: 0,
    Stage.PARSING: 10,
    Stage.CHUNKING: 30,
    Stage.EMBEDDING: 40,
    Stage.INDEXING: 95,
    Stage.COMPLETE: 100,
}


class LeaseLost(Exception):
    """Another worker owns the job now; stop without writing."""


@dataclass(frozen=True)
class WorkerSettings:
    lease_seconds: float = 30.0
    poll_seconds: float = 0.25
    max_attempts: int = 5
    backoff_base: float = 2.0  # seconds before the first retry; doubles each attempt
    backoff_cap: float = 300.0
    embed_batch: int = 64  # snippets embedded and committed per step of the embedding stage
    # before each stage and embedding batch: wait at most this long for the uploads this
    # process is receiving to be answered (``ingest.uploads.Intake``)
    yield_seconds: float = 1.0
    write_batch: int = 2_000  # chunks of a large file written per transaction

    def backoff(self, attempts: int) -> float:
        """Exponential backoff with full jitter in [0.5, 1.5) of the nominal delay."""
        nominal = min(self.backoff_cap, self.backoff_base * 2.0 ** max(0, attempts - 1))
        return float(nominal * (0.5 + random.random()))


class Worker:
    def __init__(
        self,
        wired: Wired,
        settings: WorkerSettings | None = None,
        *,
        name: str | None = None,
        on_stage: Callable[[Job, Stage], None] | None = None,
    ) -> None:
        """``wired``: the library's ``Runtime`` (or a ``Shelf``, which carries one)."""
        self.rt = wired.runtime
        self.store = self.rt.store
        self.settings = settings or WorkerSettings()
        # the process's token first: a worker on this host sees a dead one's leases over
        self.name = name or f"{owners.this_process()}:{uuid.uuid4().hex[:6]}"
        self.on_stage = on_stage  # a hook for tests and metrics: called before each stage
        self.alive_at = time.time()
        # a store or disk that keeps failing (full, read-only, down): one log line per change
        self.trouble = Backoff(
            base=self.settings.poll_seconds,
            cap=self.settings.backoff_cap / 10,
            logger=log,
            what=f"worker {self.name}",
        )
        self.stopping = threading.Event()  # ``run``'s stop: set, the job in flight is released
        self.gauges = telemetry.WorkerGauges(self.name)
        self.intake = intake_of(self.rt)

    # -- the loop --------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Work until ``stop`` is set: claim due jobs; when none is left, acknowledge the
        wake-ups received (their work is committed) and wait for the next one — or
        for the poll interval, which catches retries and expired leases."""
        self.stopping = stop
        consumer = self.rt.transport.consumer()
        self.gauges.started()
        try:
            while not stop.is_set():
                self.alive_at = time.time()
                self.gauges.beat()
                try:
                    worked = self.run_once() or self.embed_some() or self.enrich_one()
                except Exception as exc:  # never let one bad job kill the worker: back off
                    reason = exc.message if isinstance(exc, DocshelfError) else repr(exc)
                    trace = None if isinstance(exc, DocshelfError) else exc
                    stop.wait(self.trouble.failed(reason, exc_info=trace))
                    continue
                self.trouble.succeeded()
                if not worked:
                    self.rt.maintain_indexes()  # idle: checkpoint what ingest added
                    consumer.ack()
                    consumer.wait(self.settings.poll_seconds)
        finally:
            self.gauges.stopped()
            consumer.close()

    def run_once(self) -> bool:
        """Claim one due job and take it as far as it goes. False when none was due."""
        job = self.store.claim_job(self.name, self.settings.lease_seconds, time.time())
        if job is None:
            return False
        stop_renewing = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(job, stop_renewing), daemon=True)
        renewer.start()
        self.gauges.busy(True)
        try:
            self._advance(job)
        except LeaseLost:
            log.warning("worker %s lost the lease on %s", self.name, job.document_id)
        finally:
            self.gauges.busy(False)
            stop_renewing.set()
            renewer.join()
        return True

    def embed_some(self) -> bool:
        """With no job due, embed a few documents an ``add`` left searchable by their words
        only (``add --background``, or killed; ingest/vectors.py). False when none waits."""
        if self.rt.embedder is None or not self.store.pending_embedding(time.time()):
            return False
        from docshelf.ingest.vectors import EmbedPending

        return EmbedPending(self.rt, stop=self.stopping).run(claims=1).finished > 0

    def enrich_one(self) -> bool:
        """With no job due, enrich one document whose enrichment is pending (it follows
        indexing; ingest always comes first). False when there was none."""
        if self.rt.settings.enrich == "off":
            return False
        return bool(self.rt.enrich_pending(limit=1))

    def _renew(self, job: Job, stop: threading.Event) -> None:
        while not stop.wait(self.settings.lease_seconds / 3):
            until = time.time() + self.settings.lease_seconds
            renewed = self.store.renew_lease(job.document_id, self.name, until)
            self.gauges.renewed(renewed)
            if not renewed:
                return
            self.alive_at = time.time()

    def _advance(self, job: Job) -> None:
        stage = job.stage
        if stage is Stage.QUEUED:
            with self.store.transaction():  # the job update and its event together
                stage = self._move(job, Stage.PARSING, "parsing")
        while not stage.terminal:
            if self.stopping.is_set():  # shutting down: hand the job back where it stands
                self._release(job, stage)
                return
            if self.on_stage:
                self.on_stage(job, stage)
            self.intake.quiet(self.settings.yield_seconds)
            started = time.perf_counter()
            try:
                with telemetry.span(f"ingest.{stage.value}", document_id=job.document_id):
                    stage = self._run_stage(job, stage)
            except LeaseLost:
                raise
            except InvalidInput as exc:  # the input is bad: retrying cannot help
                self.rt.metrics.failure(stage.value, exc.code)
                self._fail(job, stage, exc.message)
                return
            except Exception as exc:
                self.rt.metrics.failure(stage.value, type(exc).__name__)
                self._retry_later(job, stage, f"{type(exc).__name__}: {exc}")
                return
            self.rt.metrics.stage_done(stage.value, (time.perf_counter() - started) * 1000)

    def _run_stage(self, job: Job, stage: Stage) -> Stage:
        if stage is Stage.PARSING:
            return self._parse(job)
        if stage is Stage.CHUNKING:
            return self._chunk(job)
        if stage is Stage.EMBEDDING:
            return self._embed(job)
        if stage is Stage.INDEXING:
            return self._index(job)
        raise ValueError(f"no stage runner for {stage}")

    # -- stage bookkeeping ---------------------------------------------------------------
    def _owned(self, job: Job) -> None:
        """Fencing: inside a transaction, make sure the lease is still ours."""
        current = self.store.get_job(job.document_id)
        if current is None or current.lease_owner != self.name or current.status != "running":
            raise LeaseLost(job.document_id)

    def _move(self, job: Job, to: Stage, message: str, pct: int | None = None) -> Stage:
        """Record the move to ``to`` (call inside the stage's transaction)."""
        self._owned(job)
        status = "complete" if to is Stage.COMPLETE else "running"
        self.store.update_job(job.document_id, stage=to.value, status=status)
        if to is not Stage.COMPLETE:
            self.store.set_document_status(job.document_id, to.value)
        progress = PROGRESS.get(to, 0) if pct is None else pct
        self.store.add_event(
            job.document_id, "stage", stage=to.value, progress_pct=progress, message=message
        )
        return to

    def _document(self, job: Job) -> Document:
        doc = self.store.get_document(job.document_id)
        if doc is None:  # deleted while queued
            raise LeaseLost(job.document_id)
        return doc

    # -- the stages --------------------------------------------------------------------------
    def _parse(self, job: Job) -> Stage:
        self.rt.blobs.settle(job.blob_sha256)  # a small upload's bytes, from the store
        chunking = self.rt.chunking()
        local = self._blob_path(job.blob_sha256)
        if local is not None and portable_counter(chunking.count_tokens):
            return self._parse_and_chunk(job, local, chunking)
        data = self.rt.blobs.read(job.blob_sha256)
        if len(data) > parse_mod.IN_PROCESS_BYTES and portable_counter(chunking.count_tokens):
            return self._parse_and_chunk(job, data, chunking)
        # No more copies of a large file alive at once than needed: the bytes go once
        # parsed, the parsed document once it is JSON.
        parsed = parse(data, job.file_type, self.rt.settings.parse)
        del data
        characters = len(parsed.body)
        payload = json.dumps(asdict(parsed)).encode("utf-8")
        del parsed
        with self.store.transaction():
            self.store.put_payload(job.document_id, Stage.PARSING.value, payload)
            return self._move(job, Stage.CHUNKING, f"parsed {characters} characters")

    def _blob_path(self, sha256: str) -> Path | None:
        """A large blob's file in a local blob store (the sandbox's child reads it, not
        this process), else None."""
        try:
            local = self.rt.blobs.local_path(sha256)
            return local if local and local.stat().st_size > parse_mod.IN_PROCESS_BYTES else None
        except OSError:
            return None  # read() below says what is wrong

    def _parse_and_chunk(self, job: Job, data: bytes | Path, chunking: Chunking) -> Stage:
        """A large file: parsed and chunked in the sandbox's child (``chunk_file``), so
        neither the time nor the memory is this process's (a server's event loop shares
        its GIL); the chunks are written with both stage moves, no payload between."""
        doc = self._document(job)
        started = False

        def write(head: ChunkedFile, chunks: list[Chunk]) -> None:
            # The first batch with the document and the move to chunking, each further
            # one in its own transaction: one over all of a huge file's chunks would hold
            # the store (SQLite: its one connection) for seconds, and every request with
            # it. Killed in between, the job is at chunking without a payload: it parses
            # again, and ``put`` replaces what was written.
            nonlocal started
            if started:
                self.intake.quiet(self.settings.yield_seconds)
                with self.store.transaction():
                    self._owned(job)
                    self.rt.writer.add_chunks(doc, chunks)
                return
            with self.store.transaction():
                self._move(job, Stage.CHUNKING, f"parsed {head.characters} characters")
                self.rt.writer.put(
                    dataclasses.replace(doc, **head.fields, status=Stage.CHUNKING.value),
                    chunks,
                    links=head.links,
                    aliases=head.aliases,
                )
                self.store.delete_payload(job.document_id)
            started = True

        head = chunk_file(
            data,
            file_type=job.file_type,
            fp=doc.sha256,
            title=None,
            fallback_title=doc.title,
            chunking=chunking,
            limits=self.rt.settings.parse,
            on_chunks=write,
            batch=self.settings.write_batch,
        )
        del data
        if not started:  # no chunks at all
            write(head, [])
        with self.store.transaction():
            snippets = head.fields["chunk_counts"]["snippet"]
            return self._move(job, Stage.EMBEDDING, f"{snippets} snippets to embed")

    def _chunk(self, job: Job) -> Stage:
        raw = self.store.get_payload(job.document_id, Stage.PARSING.value)
        if raw is None:  # parsed output lost (should not happen): parse again
            with self.store.transaction():
                return self._move(job, Stage.PARSING, "parsing again")
        parsed = _parsed_from_json(raw)
        del raw  # a large file's payload is not kept through chunking
        doc = self._document(job)
        chunked = chunk_parsed(
            parsed, fp=doc.sha256, title=parsed.title or doc.title, chunking=self.rt.chunking()
        )
        counts = chunked.fields()["chunk_counts"]
        updated = dataclasses.replace(doc, **chunked.fields(), status=Stage.CHUNKING.value)
        with self.store.transaction():
            self._owned(job)
            self.rt.writer.put(
                updated,
                chunked.chunks,
                links=chunked.links(job.file_type),
                aliases=parsed.aliases,
            )
            self.store.delete_payload(job.document_id)
            return self._move(job, Stage.EMBEDDING, f"{counts['snippet']} snippets to embed")

    def _embed(self, job: Job) -> Stage:
        embedder = self.rt.embedder
        # counted, not loaded: a huge file's snippets are read a batch at a time below
        total = self._document(job).chunk_counts.get(Tier.SNIPPET.value, 0)
        if embedder is not None:
            while True:
                todo = self.store.snippets_without_vectors(
                    self.settings.embed_batch, document_id=job.document_id
                )
                if not todo:
                    break
                if self.stopping.is_set():  # the batches committed so far stay done
                    return Stage.EMBEDDING
                self.rt.rate_limit.wait()
                self.intake.quiet(self.settings.yield_seconds)
                counts_before = (self.rt.embed_counts.cached, self.rt.embed_counts.computed)
                vectors = embed_texts(
                    self.store, embedder, [c.retrieval_text for c in todo], self.rt.embed_counts
                )
                self.rt.metrics.embedded(
                    cached=self.rt.embed_counts.cached - counts_before[0],
                    computed=self.rt.embed_counts.computed - counts_before[1],
                )
                with self.store.transaction():
                    self._owned(job)
                    self.store.put_vectors([c.id for c in todo], vectors)
                    left = len(self.store.snippets_without_vectors(1, document_id=job.document_id))
                    done = total - left if left else total
                    pct = 40 + int(55 * done / max(total, 1))
                    self.store.add_event(
                        job.document_id,
                        "stage",
                        stage=Stage.EMBEDDING.value,
                        progress_pct=min(pct, 94),
                        message=f"embedded {done}/{total} snippets",
                    )
        with self.store.transaction():
            return self._move(job, Stage.INDEXING, "indexing")

    def _index(self, job: Job) -> Stage:
        with self.store.transaction():
            self._owned(job)
            self.store.set_document_status(job.document_id, Stage.COMPLETE.value)
            self.store.finish_embedding([job.document_id])  # its vectors came in _embed
            stage = self._move(job, Stage.COMPLETE, "complete")
            self.store.update_job(
                job.document_id, lease_owner=None, lease_expires_at=None, last_error=None
            )
            self.store.add_event(
                job.document_id,
                "document.completed",
                stage="complete",
                progress_pct=100,
                message="complete",  # no file name: the document may be shared
            )
        return stage

    # -- failure ------------------------------------------------------------------------------
    def _fail(self, job: Job, stage: Stage, reason: str) -> None:
        """Dead-letter: the job stops at ``failed`` with its reason, until retried by hand."""
        with self.store.transaction():
            self._owned(job)
            self.store.update_job(
                job.document_id,
                status="failed",
                last_error=reason,
                lease_owner=None,
                lease_expires_at=None,
            )
            self.store.set_document_status(job.document_id, Stage.FAILED.value)
            self.store.add_event(
                job.document_id,
                "stage",
                stage=Stage.FAILED.value,
                progress_pct=100,
                message=f"{stage.value}: {reason}",
            )
            self.store.add_event(job.document_id, "document.failed", stage="failed", message=reason)
        try:
            self.rt.transport.dead_letter(job.document_id, reason)
        except DocshelfError as exc:  # the store already holds the dead-letter state
            log.warning("could not dead-letter %s on the broker: %s", job.document_id, exc)

    def _release(self, job: Job, stage: Stage) -> None:
        """Give the job back, due now, at the stage it reached (what that stage committed
        stays; no attempt is counted, no event written); another worker resumes it."""
        with self.store.transaction():
            self._owned(job)
            self.store.update_job(
                job.document_id,
                status="queued",
                next_attempt_at=time.time(),
                lease_owner=None,
                lease_expires_at=None,
            )
        log.info("worker %s released %s at %s (shutting down)", self.name, job.document_id, stage)
        self.rt.wake_workers(job.document_id)

    def _retry_later(self, job: Job, stage: Stage, reason: str) -> None:
        current = self.store.get_job(job.document_id)
        attempts = (current.attempts if current else job.attempts) + 1
        if attempts >= self.settings.max_attempts:
            self._fail(job, stage, f"{reason} (after {attempts} attempts)")
            return
        delay = self.settings.backoff(attempts)
        with self.store.transaction():
            self._owned(job)
            self.store.update_job(
                job.document_id,
                status="queued",
                attempts=attempts,
                next_attempt_at=time.time() + delay,
                last_error=reason,
                lease_owner=None,
                lease_expires_at=None,
            )
            self.store.add_event(
                job.document_id,
                "stage",
                stage=stage.value,
                progress_pct=PROGRESS.get(stage, 0),
                message=f"attempt {attempts} failed ({reason}); retrying in {delay:.1f}s",
            )


def _parsed_from_json(raw: bytes) -> ParsedDocument:
    data = json.loads(raw)
    blocks = tuple(
        Block(
            kind=BlockKind(b["kind"]),
            start=b["start"],
            end=b["end"],
            heading_path=tuple(b["heading_path"]),
            level=b["level"],
            page=b["page"],
            ocr_confidence=b.get("ocr_confidence"),  # (a payload from before OCR: none)
        )
        for b in data["blocks"]
    )
    return ParsedDocument(
        body=data["body"],
        blocks=blocks,
        title=data["title"],
        tags=tuple(data["tags"]),
        aliases=tuple(data["aliases"]),
        page_count=data["page_count"],
        pages_without_text=data["pages_without_text"],
        warnings=tuple(data["warnings"]),
        ocr_pages=data.get("ocr_pages", 0),
    )


def _load_model(embedder: object) -> None:
    """Load a packaged local model now (a remote one has nothing to load; a failure is
    the first job's to report, as it would have been)."""
    if type(embedder).__module__ != "docshelf.embed.local":
        return
    try:
        embedder.embed(["warm up"])  # type: ignore[attr-defined]
    except Exception as exc:
        log.warning("could not load the embedding model before serving: %s", exc)


class WorkerPool:
    """``n`` workers in threads of this process (what ``serve`` runs)."""

    def __init__(self, wired: Wired, n: int, settings: WorkerSettings | None = None) -> None:
        self.workers = [Worker(wired, settings) for _ in range(n)]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Load the embedding model, then start the workers. ``serve`` calls this before
        it accepts a connection, so the model's start-up (seconds of imports holding the
        GIL) never competes with a request, nor a request with it."""
        if self.workers:
            _load_model(self.workers[0].rt.embedder)
        for w in self.workers:
            t = threading.Thread(target=w.run, args=(self._stop,), name=w.name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)

    @property
    def alive(self) -> bool:
        return bool(self._threads) and all(t.is_alive() for t in self._threads)
