"""Reindex: rebuild chunks, vectors and derived indexes — after a change of embedding
model or chunking settings, or to repair — while search keeps answering.

The new generation is built beside the live one: each document is re-read (its
file, or its uploaded blob, when the bytes still match its fingerprint; else its
stored chunks are re-embedded as they are), chunked with the current settings,
embedded, and *staged* in the store. Search reads only the live tables
meanwhile. Staging is resumable: a rerun for the same target (model and
chunking) skips what is staged. When every document is staged, one transaction
swaps them all in and records the new model, so a reader sees either the old
generation or the new one, never a mix; the derived ANN index is rebuilt after.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from docshelf.accounts.access import visible
from docshelf.chunk import CHUNKER_META, CHUNKER_VERSION
from docshelf.errors import Conflict, DocshelfError, InvalidInput
from docshelf.ingest.prepare import embed_texts, prepare, read_file
from docshelf.model import Chunk, Document, Failure, Tier, fingerprint
from docshelf.parse.links import WikiLink
from docshelf.progress import ProgressEvent, Rate
from docshelf.store.rows import chunk_from_row, chunk_row

if TYPE_CHECKING:
    from docshelf.runtime import Progress, Runtime

FORMAT = "2"  # of the staged data (2: chunk rows with their inner headings)


@dataclass
class ReindexReport:
    target: str
    embedding_model: str
    documents: int = 0  # swapped in
    rechunked: int = 0  # re-read from their bytes and chunked anew
    reembedded: int = 0  # bytes unavailable: their stored chunks re-embedded as they are
    resumed: int = 0  # staged by an earlier, interrupted run
    snippets: int = 0
    failures: list[Failure] = field(default_factory=list)
    vector_index: str = ""
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        out["failures"] = [{"path": f.path, "reason": f.reason} for f in self.failures]
        out["seconds"] = round(self.seconds, 2)
        return out


def target_of(rt: Runtime) -> str:
    """What a generation is made for: the embedding model and the chunking settings."""
    model = rt.embedder.model_id if rt.embedder else "none"
    chunking = json.dumps(dataclasses.asdict(rt.chunk_settings), sort_keys=True)
    digest = hashlib.sha256(f"{FORMAT}|{model}|{chunking}".encode()).hexdigest()[:16]
    return f"{model}:{digest}"


def _bytes_of(rt: Runtime, doc: Document) -> bytes | None:
    """The document's bytes, if a file or blob still holds exactly them."""
    for record in rt.store.files_of_document(doc.id):
        try:
            data, _ = read_file(Path(record.path), rt.settings.max_file_bytes)
        except InvalidInput:
            continue
        if fingerprint(data) == doc.sha256:
            return data
    job = rt.store.get_job(doc.id)
    if job is not None:
        try:
            data = rt.blobs.read(job.blob_sha256)
        except DocshelfError:
            return None
        if fingerprint(data) == doc.sha256:
            return data
    return None


def _stage(rt: Runtime, doc: Document, target: str, *, reread: bool = True) -> tuple[bool, int]:
    """Build and stage one document's next generation: (re-chunked?, snippets). Without
    ``reread`` (or when its bytes are gone) its stored chunks are re-embedded as they are."""
    store = rt.store
    data = _bytes_of(rt, doc) if reread else None
    links: list[WikiLink] = []
    aliases: tuple[str, ...] = ()
    if data is not None:  # titled as a sync titles it (a better parser's title comes too)
        prepared = prepare(
            data,
            file_type=doc.file_type,
            path=doc.path,
            rel_path=doc.rel_path,
            source_id=doc.source_id,
            host=rt.host,
            chunking=rt.chunking(),
            embedding_model=rt.model_id,
            fp=doc.sha256,
            limits=rt.settings.parse,
        )
        new_doc = dataclasses.replace(
            prepared.document,
            source_host=doc.source_host,
            added_at=doc.added_at,
            updated_at=time.time(),
            status=doc.status,
        )
        chunks = prepared.chunks
        links, aliases = prepared.links, prepared.aliases
    else:
        chunks = [
            *store.chunks_of_document(doc.id, Tier.SECTION),
            *store.chunks_of_document(doc.id, Tier.SNIPPET),
        ]
        model = rt.embedder.model_id if rt.embedder else None
        new_doc = dataclasses.replace(doc, embedding_model=model, updated_at=time.time())
    snippets = [c for c in chunks if c.tier is Tier.SNIPPET]
    vectors = None
    if rt.embedder is not None and snippets:
        vectors = embed_texts(store, rt.embedder, [c.retrieval_text for c in snippets])
    record = {
        "document": {k: v for k, v in dataclasses.asdict(new_doc).items() if k != "chunk_counts"},
        "chunks": [list(chunk_row(c)) for c in chunks],
        "rechunked": data is not None,
        "links": [dataclasses.asdict(link) for link in links] if data is not None else None,
        "aliases": list(aliases),
    }
    store.stage_reindex(
        doc.id,
        target,
        json.dumps(record),
        np.ascontiguousarray(vectors, dtype=np.float32).tobytes() if vectors is not None else None,
    )
    return data is not None, len(snippets)


def _unstage(raw: str, vectors: bytes | None, dim: int) -> tuple[Document, list[Chunk], Any, Any]:
    record = json.loads(raw)
    fields = record["document"]
    for key in ("tags", "concept_ids"):
        fields[key] = tuple(fields[key])
    doc = Document(**fields)
    chunks = [chunk_from_row(r) for r in record["chunks"]]
    matrix = None
    if vectors is not None:
        matrix = np.frombuffer(vectors, dtype=np.float32).reshape(-1, dim)
    links = record["links"]
    return doc, chunks, matrix, (links, record["aliases"])


def reindex(
    rt: Runtime, *, document_id: str | None = None, progress: Progress | None = None
) -> ReindexReport:
    started = time.perf_counter()
    store = rt.store
    model = rt.embedder.model_id if rt.embedder else "none"
    target = target_of(rt)
    report = ReindexReport(target=target, embedding_model=model)
    if document_id is not None:
        bound = store.get_meta("embedding_model")
        if bound not in (None, model):
            raise Conflict(
                f"The library's vectors are made with {bound}; one document cannot move to "
                f"{model} alone. Run `docshelf reindex` for the whole library."
            )
        docs = [visible(store, document_id, None)]
    else:
        store.clear_reindex(keep_target=target)  # staged for another target: useless now
        docs = [d for d in store.list_documents() if d.status == "complete"]
    staged = store.staged_reindex(target) if document_id is None else set()
    for n, doc in enumerate(docs):
        if progress:
            progress(ProgressEvent("embed", n, len(docs), "documents", doc.rel_path))
        if doc.id in staged:
            report.resumed += 1
            continue
        try:
            rechunked, snippets = _stage(rt, doc, target)
        except InvalidInput as exc:
            # Its bytes no longer parse (a parser changed): keep its chunks, but give them
            # vectors of the new model like every other document's.
            report.failures.append(Failure(doc.path, exc.message))
            rechunked, snippets = _stage(rt, doc, target, reread=False)
        report.rechunked += rechunked
        report.reembedded += not rechunked
        report.snippets += snippets
    _switch(rt, target, [d.id for d in docs], report, progress)
    if document_id is None and not report.reembedded:
        # every document chunked anew by this chunker: no reindex is due any more
        store.set_meta(CHUNKER_META, str(CHUNKER_VERSION))
    report.vector_index = rt.maintain_indexes(rebuild=True, progress=progress)
    report.seconds = time.perf_counter() - started
    return report


def run(
    rt: Runtime,
    progress: Progress | None = None,
    *,
    index_only: bool = False,
    document_id: str | None = None,
) -> dict[str, object]:
    """``docshelf reindex``: the whole reindex (or ``document_id``'s), or with
    ``index_only`` just the derived indexes rebuilt from the store (a repair)."""
    if index_only:
        lexical = rt.maintain_lexical_index(rebuild=True, progress=progress)
        vector = rt.maintain_vector_index(rebuild=True, progress=progress)
        return {"vector_index": vector, "lexical_index": lexical}
    report = reindex(rt, document_id=document_id, progress=progress)
    rt.changed()
    return report.as_json()


def _switch(
    rt: Runtime, target: str, ids: list[str], report: ReindexReport, progress: Progress | None
) -> None:
    """One transaction: every staged document replaces its live self; the model is recorded."""
    store = rt.store
    embedder = rt.embedder
    dim = embedder.dim if embedder else 0
    with store.transaction():
        for n, doc_id in enumerate(ids):
            if progress:
                progress(ProgressEvent("switch", n, len(ids), "documents"))
            staged = store.take_staged(doc_id)
            if staged is None or store.get_document(doc_id) is None:
                continue  # deleted meanwhile, or never staged (it failed): left as it is
            doc, chunks, vectors, (links, aliases) = _unstage(*staged, dim)
            rt.writer.put(
                doc,
                chunks,
                vectors,
                links=None if links is None else [WikiLink(**k) for k in links],
                aliases=aliases,
            )
            report.documents += 1
        store.set_meta("embedding_model", embedder.model_id if embedder else "none")
        if embedder is not None:
            store.set_meta("embedding_dim", str(embedder.dim))


class ReindexRunner:
    """One library-wide reindex at a time, in a thread of this process, with its progress
    (``POST /v1/reindex`` starts it, ``GET`` follows it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state: dict[str, Any] = {"state": "idle"}

    def start(self, rt: Runtime) -> dict[str, Any] | None:
        """Start a reindex; the state it starts in (what ``POST`` answers, whatever the
        thread has done by then), or None while one runs."""
        with self._lock:
            if self.state["state"] == "running":
                return None
            self.state = started = {"state": "running", "done": 0, "total": 0, "phase": "starting"}
        threading.Thread(target=self._run, args=(rt,), daemon=True).start()
        return dict(started)

    def _run(self, rt: Runtime) -> None:
        rate = Rate(time.monotonic)

        def progress(event: ProgressEvent) -> None:
            # what GET /v1/reindex shows: the event, its rate and its ETA
            rate.observe(event)
            per_second, eta = rate.per_second(event), rate.eta(event)
            self.state = {
                "state": "running",
                **event.as_json(),
                "rate": None if per_second is None else round(per_second, 2),
                "eta_seconds": None if eta is None else round(eta, 1),
            }
            del self.state["event"]

        try:
            report = reindex(rt, progress=progress)
            rt.changed()
        except Exception as exc:  # reported through GET /v1/reindex
            message = exc.message if isinstance(exc, DocshelfError) else repr(exc)
            self.state = {"state": "failed", "error": message}
        else:
            self.state = {"state": "done", "result": report.as_json()}
