"""Uploads and their jobs: bytes sent to the library (``POST /v1/documents``) are kept
in the blob store, registered as a queued document and job, and taken through the
stages by a worker (``ingest/worker.py``); a job can be followed, retried, and the
document deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from docshelf.accounts.access import job_seen, title_from_name, visible
from docshelf.accounts.event_ids import EventIds
from docshelf.blobs import BlobWriter
from docshelf.errors import Conflict, DocshelfError, NotFound, Unavailable, UnsupportedType
from docshelf.ingest.held import HOLD_BYTES
from docshelf.ingest.sync import unsupported_type_message
from docshelf.model import Document, Event, Job, Stage, document_id
from docshelf.parse import file_type_for
from docshelf.store import NewEvent, NewUpload

if TYPE_CHECKING:
    from docshelf.runtime import Runtime

MAX_NAME_CHARS = 200  # an upload's name, cut to this (sanitize_filename)
log = logging.getLogger("docshelf")


@dataclass(frozen=True)
class UploadResult:
    document_id: str
    status: str
    fingerprint: str
    created: bool  # a new document and job
    linked: bool  # the caller got access by this upload


def sanitize_filename(name: str) -> str:
    """A display name from an uploaded file name: never a path.

    Only the last component survives (``/`` and ``\\`` both separate), control
    characters and NUL are dropped, ``..`` and leading dots are stripped.
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable())
    base = base.strip().lstrip(".").strip()
    return _cut_name(base) or "upload"


def upload_name(name: str) -> str:
    """The name an upload is kept under (``sanitize_filename``), or UnsupportedType when
    no parser reads its type (its extension picks the parser)."""
    clean = sanitize_filename(name)
    if file_type_for(clean) is None:
        raise UnsupportedType(unsupported_type_message(clean))
    return clean


def _cut_name(name: str, limit: int = MAX_NAME_CHARS) -> str:
    """``name`` in at most ``limit`` characters: the stem is cut, the extension (which
    picks the parser) is kept."""
    if len(name) <= limit:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext) >= limit // 2:
        return name[:limit].rstrip()
    return f"{stem[: limit - len(ext) - 1].rstrip()}.{ext}"


class Intake:
    """The uploads a process is receiving now, so that its own ingest workers let them
    pass first: a worker waits for a quiet moment (at most ``quiet``'s timeout, so a
    steady stream of uploads cannot starve it) before each stage and each batch it
    embeds. An upload's request is then its own work only, not a model's batch
    competing for the GIL and the cores (issue 20: upload p95 with the model loaded)."""

    def __init__(self) -> None:
        self._receiving = 0
        self._remote = False
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def receiving(self) -> Iterator[None]:
        with self._changed:
            self._receiving += 1
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._receiving -= 1
                if not self._receiving:
                    self._changed.notify_all()

    @property
    def busy(self) -> int:
        return self._receiving

    def quiet(self, timeout: float) -> bool:
        """Wait until no upload is being received (True), or ``timeout`` s (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._receiving, timeout)

    def wait_busy(self, timeout: float) -> bool:
        """Wait until an upload is being received (True), or ``timeout`` s (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._receiving > 0, timeout)

    def set_remote(self, busy: bool) -> None:
        """Another process (``serve``'s server, for its worker process) is receiving
        uploads (True) or is done (False): counted as one upload being received here."""
        with self._changed:
            if busy != self._remote:
                self._remote = busy
                self._receiving += 1 if busy else -1
            self._changed.notify_all()


_intakes: weakref.WeakKeyDictionary[object, Intake] = weakref.WeakKeyDictionary()
_intakes_lock = threading.Lock()


def intake_of(runtime: Runtime) -> Intake:
    """The library's :class:`Intake` in this process (the API and the in-process workers
    share one runtime, so they share it)."""
    with _intakes_lock:
        intake = _intakes.get(runtime)
        if intake is None:
            intake = _intakes[runtime] = Intake()
        return intake


def _once(check: Callable[[], None]) -> Callable[[], None]:
    """``check`` until it has passed once (a failure is checked again next time)."""
    passed = False

    def run() -> None:
        nonlocal passed
        if not passed:
            check()
            passed = True

    return run


class _Refused(Exception):
    """One upload of a batch refused for its own reason (``error``), before it wrote."""

    def __init__(self, error: DocshelfError) -> None:
        super().__init__(error.message)
        self.error = error


class Upload(NamedTuple):
    """One upload to record: its bytes in the blob store already, or ``data`` to hold in
    the store with its record (``ingest/held.py``)."""

    user_id: str
    name: str
    sha256: str
    size: int
    data: bytes | None = None


class Uploads:
    """Uploads, jobs and their events (``Shelf``'s)."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.store = runtime.store
        self.ids = EventIds(runtime.store)

    def receive_many(
        self, received: Sequence[tuple[str, str, BlobWriter]]
    ) -> list[UploadResult | BaseException]:
        """Record uploads read whole (``(user_id, name, writer)`` each): the small ones'
        bytes held in the store with their records, the others' made durable in the blob
        store first (their fsyncs side by side), then all recorded in one durable
        transaction. One outcome per upload: its result, or the error it failed with."""
        writers = [writer for _, _, writer in received]
        held = [writer.in_memory(HOLD_BYTES) for writer in writers]
        hashes: list[str | BaseException] = [writer.digest() for writer in writers]
        to_store = [i for i, data in enumerate(held) if data is None]
        stored = self.rt.blobs.commit_many([writers[i] for i in to_store])
        for i, outcome in zip(to_store, stored, strict=True):
            hashes[i] = outcome
        for writer, data in zip(writers, held, strict=True):
            if data is not None:
                writer.abort()  # nothing was written to disk: its bytes go with its record
        outcomes: dict[int, UploadResult | BaseException] = {
            i: sha for i, sha in enumerate(hashes) if isinstance(sha, BaseException)
        }
        todo = [i for i in range(len(received)) if i not in outcomes]
        if todo:
            uploads = [
                Upload(received[i][0], received[i][1], str(hashes[i]), writers[i].size, held[i])
                for i in todo
            ]
            try:
                recorded: Sequence[UploadResult | BaseException] = self.register_many(uploads)
            except Exception as exc:  # the store failed the transaction: none is recorded
                recorded = [exc] * len(todo)
            outcomes.update(zip(todo, recorded, strict=True))
        return [outcomes[i] for i in range(len(received))]

    def register(self, user_id: str, name: str, sha256: str, size: int) -> UploadResult:
        outcome = self.register_many([Upload(user_id, name, sha256, size)])[0]
        if isinstance(outcome, DocshelfError):
            raise outcome
        return outcome

    def register_many(self, uploads: Sequence[Upload]) -> list[UploadResult | DocshelfError]:
        """Record several uploads in one durable transaction: one commit for all of them
        (the API's group commit), on disk before it returns — an answered upload survives
        a power cut, its held bytes with it. The new documents are written a statement
        per table for all of them (``Store.add_uploads``); bytes someone has already get
        an access link each. One refused (its stored bytes deleted meanwhile, a library
        bound to another model) is that one's error and leaves the others: it is refused
        before anything is written, so no savepoint is needed around each; a failing store
        (a full disk) raises, and none is recorded."""
        outcomes: dict[int, UploadResult | DocshelfError] = {}
        with self.store.transaction(durable=True):
            known = self.store.get_documents([document_id(u.sha256) for u in uploads])
            writable = _once(self.rt.check_writable)  # the model binding: read once a batch
            new: dict[str, NewUpload] = {}  # document id -> the upload that creates it
            copies: list[int] = []  # uploads of bytes stored already, or new in this batch
            for i, upload in enumerate(uploads):
                try:
                    created = self._new(upload, known, new, writable)
                except _Refused as refused:
                    outcomes[i] = refused.error
                    continue
                if created is None:
                    copies.append(i)
                else:
                    new[created.document.id] = created
                    outcomes[i] = UploadResult(
                        created.document.id, created.job.stage.value, upload.sha256, True, True
                    )
            self.rt.writer.add_uploads(list(new.values()))
            queued = Stage.QUEUED.value
            self.store.add_events(
                [
                    event
                    for n in new.values()
                    for event in (
                        NewEvent(n.document.id, "stage", queued, 0, "queued"),
                        NewEvent(n.document.id, "document.queued", queued, None, n.title),
                    )
                ]
            )
            for i in copies:  # their documents exist now
                doc_id = document_id(uploads[i].sha256)
                doc = known.get(doc_id) or new[doc_id].document
                outcomes[i] = self._link(uploads[i], doc)
        for doc_id in new:
            self.rt.wake_workers(doc_id)
        return [outcomes[i] for i in range(len(uploads))]

    def _new(
        self,
        upload: Upload,
        known: Mapping[str, Document],
        new: Mapping[str, NewUpload],
        check_writable: Callable[[], None],
    ) -> NewUpload | None:
        """The rows of an upload whose bytes no document holds yet, or None if one does
        (in the store, or new in this batch). Writes nothing; this upload's own refusals
        raise ``_Refused``."""
        user_id, name, sha256, size, data = upload
        file_type = file_type_for(name)
        if file_type is None:
            raise _Refused(UnsupportedType(unsupported_type_message(name)))
        doc_id = document_id(sha256)
        if data is None and not self.rt.blobs.exists(sha256):
            # the same bytes were deleted between the blob write and this transaction
            raise _Refused(
                Unavailable("The upload raced with a deletion of the same file; send it again")
            )
        if doc_id in known or doc_id in new:
            return None
        try:
            check_writable()
        except Conflict as exc:  # bound to another model
            raise _Refused(exc) from None
        now = time.time()
        queued = Stage.QUEUED
        document = Document(
            id=doc_id,
            sha256=sha256,
            title=title_from_name(name),
            path=f"upload://{sha256}",
            rel_path=name,
            source_id=None,
            source_host=self.rt.host,
            file_type=file_type,
            size_bytes=size,
            added_at=now,
            updated_at=now,
            status=queued.value,
            embedding_model=self.rt.model_id,
        )
        job = Job(
            doc_id, queued, "queued", 0, now, None, None, None, sha256, file_type, name, now, now
        )
        return NewUpload(document, job, data, user_id, name)

    def _link(self, upload: Upload, doc: Document) -> UploadResult:
        """Bytes a document holds already: an access link for this user (if new), with
        its own events; nothing parsed or embedded again."""
        if upload.data is not None and not self.rt.blobs.exists(upload.sha256):
            # a folder's file holds these bytes, not the blob store: the upload keeps its
            # own copy, as a larger upload's is kept before its record
            self.rt.blobs.keep(upload.data)
        linked = self.store.grant(upload.user_id, doc.id, title=upload.name)
        if linked:  # (no metric tells this from a new upload: /metrics is unauthenticated)
            self.rt.writer.changed()  # the user sees one more document
            self.store.add_events(self._link_events(doc, upload.name, upload.user_id))
        status = Stage.QUEUED.value if linked else doc.status
        return UploadResult(doc.id, status, upload.sha256, created=False, linked=linked)

    def _link_events(self, doc: Document, name: str, user_id: str) -> list[NewEvent]:
        """A new link's own events, addressed to its user (they see no earlier ones): the
        stream of a fresh upload — its own ``queued``, then the document's recorded run
        replayed (the stages it went through, as they were recorded), so far as it has
        gone (the rest reaches them as it happens). A run of the same bytes is a run of
        theirs; only what another holder did (their ``queued``, a retry they asked for, a
        failure a retry overcame) is left out. A document that came from a folder has
        no recorded run (nor one that ends as it did): its stages are told from its
        record."""
        queued = Stage.QUEUED.value
        own = [
            NewEvent(doc.id, "stage", queued, 0, "queued", user_id),
            NewEvent(doc.id, "document.queued", queued, None, name, user_id),
        ]
        run = self._recorded_run(doc.id)
        ended = [e.stage for e in run if e.kind == "stage"][-1:]
        if doc.status in (Stage.COMPLETE.value, Stage.FAILED.value) and ended != [doc.status]:
            run = self._told_run(doc)  # none recorded, or not the run that made the record
        return own + [dataclasses.replace(e, user_id=user_id) for e in run]

    def _recorded_run(self, document_id: str) -> list[NewEvent]:
        shared: list[Event] = []
        after = 0
        while batch := self.store.events_after(after, document_id=document_id, limit=1000):
            shared += [e for e in batch if e.user_id is None]
            after = batch[-1].seq
        kept = [
            e
            for i, e in enumerate(shared)
            if e.stage != Stage.QUEUED.value
            and e.kind not in ("document.queued", "document.removed")
            and not (e.stage == Stage.FAILED.value and _followed(shared, i))
        ]
        return [NewEvent(e.document_id, e.kind, e.stage, e.progress_pct, e.message) for e in kept]

    def _told_run(self, doc: Document) -> list[NewEvent]:
        """The stages of a document indexed from a folder (it has no recorded run): the
        pipeline's, from its record."""
        if doc.status == Stage.FAILED.value:
            failure = NewEvent(doc.id, "stage", doc.status, 100, "failed")
            return [failure, NewEvent(doc.id, "document.failed", doc.status, None, "failed")]
        snippets = doc.chunk_counts.get("snippet", 0)
        steps = [
            (Stage.PARSING, 10, "parsing"),
            (Stage.CHUNKING, 30, "parsed"),
            (Stage.EMBEDDING, 40, f"{snippets} snippets to embed"),
            (Stage.INDEXING, 95, "indexing"),
            (Stage.COMPLETE, 100, "complete"),
        ]
        run = [NewEvent(doc.id, "stage", s.value, pct, m) for s, pct, m in steps]
        return [*run, NewEvent(doc.id, "document.completed", "complete", 100, "complete")]

    def upload(self, user_id: str, name: str, data: bytes) -> UploadResult:
        clean = upload_name(name)
        with self.rt.blobs.writer(self.rt.settings.max_upload_bytes) as writer:
            writer.write(data)
            outcome = self.receive_many([(user_id, clean, writer)])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def job(self, document_id: str, user_id: str | None = None) -> Job:
        visible(self.store, document_id, user_id)
        job = self.store.get_job(document_id)
        if job is None:
            raise NotFound(f"Document {document_id!r} has no ingest job (it came from a source)")
        if user_id is None:
            return job
        return job_seen(job, self.store.access_links(user_id, [document_id]).get(document_id))

    def retry(self, document_id: str, user_id: str | None = None) -> Job:
        job = self.job(document_id, user_id)
        if job.status != "failed":
            raise Conflict(f"Document {document_id} is {job.status}, not failed; nothing to retry")
        with self.store.transaction():
            self.store.update_job(
                document_id,
                status="queued",
                attempts=0,
                next_attempt_at=time.time(),
                last_error=None,
            )
            self.store.set_document_status(document_id, job.stage.value)
            self.store.add_event(
                document_id,
                "stage",
                stage=Stage.QUEUED.value,
                progress_pct=0,
                message=f"retry requested; resuming at {job.stage.value}",
            )
            self.store.add_event(document_id, "document.queued", stage="queued", message="retry")
        self.rt.wake_workers(document_id)
        return self.job(document_id, user_id)

    def delete_document(self, document_id: str, user_id: str | None = None) -> bool:
        doc = visible(self.store, document_id, user_id)
        self.rt.writer.changed()  # whatever happens next, this user sees one document fewer
        with self.store.transaction():
            if user_id is not None:
                self.store.revoke_access(user_id, doc.id)
            self.store.add_event(doc.id, "document.removed", message=doc.rel_path, user_id=user_id)
            if user_id is not None and self.store.access_count(doc.id):
                return False
            if self.store.files_of_document(doc.id):
                return False  # still held by a file in a source; sync decides
            self.store.delete_document(doc.id)
        self._drop_bytes(doc)
        return True

    def _drop_bytes(self, doc: Document) -> None:
        """The bytes of a document whose deletion has committed (never before: a failed
        commit, say a full disk, must leave the document whole, bytes and all). Under
        the writer lock, so that an upload of the same bytes registering meanwhile
        either came first (its new document keeps them) or finds them gone and is asked
        to send them again. Bytes that cannot go stay behind, orphaned and logged: the
        document is gone either way."""
        try:
            with self.store.transaction():
                if self.store.get_document(doc.id) is None:
                    self.rt.blobs.delete(doc.sha256)
        except (DocshelfError, OSError) as exc:
            log.warning("the bytes of deleted document %s stay in the blob store: %s", doc.id, exc)

    def events(
        self,
        after: int = 0,
        *,
        document_id: str | None = None,
        lifecycle: bool = False,
        user_id: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        """Events after the one numbered ``after``, numbered as their caller sees them:
        the store's sequence for the local caller; for a user, one document's stream
        counted 1, 2, 3 … from their access on, and the lifecycle stream by opaque ids
        (``accounts/event_ids.py``) — no number a user sees moves with another's work."""
        if document_id is not None:
            visible(self.store, document_id, user_id)
        kinds = "document.%" if lifecycle else "stage"
        if user_id is None:
            return self.store.events_after(after, document_id=document_id, kinds=kinds, limit=limit)
        if document_id is not None:
            found = self.store.events_after(
                0, document_id=document_id, kinds=kinds, user_id=user_id, limit=limit, offset=after
            )
            return [dataclasses.replace(e, seq=after + n) for n, e in enumerate(found, 1)]
        found = self.store.events_after(
            self.ids.seq(after, user_id), kinds=kinds, user_id=user_id, limit=limit
        )
        return [dataclasses.replace(e, seq=self.ids.token(e.seq, user_id)) for e in found]


def _followed(events: Sequence[Event], i: int) -> bool:
    """Whether a stage event comes after ``events[i]`` (a failure a retry overcame)."""
    return any(e.kind == "stage" for e in events[i + 1 :])
