"""Running enrichment against a library: pick the producer (LLM or offline), use the
cache, write the result, and keep the retrieval header in step with the concepts.

Enrichment follows indexing: a document is searchable as soon as it is
``complete``; its enrichment is pending (``enriched_at`` is NULL) until a run
of ``add``/``sync``, a worker with nothing else to do, or ``docshelf enrich``
takes it. Each step is one transaction, so a crash leaves it pending, never half
written. Results are cached by (fingerprint, locale, producer).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from docshelf import owners, telemetry
from docshelf.accounts.access import visible
from docshelf.chunk import build_header
from docshelf.errors import DocshelfError, NotFound, Unavailable
from docshelf.ingest.prepare import embed_texts
from docshelf.knowledge.enrich import (
    DECIDED,
    EnrichSettings,
    concept_texts,
    considered_of,
    from_json,
    llm_enrichment,
    llm_excerpts,
    offline_enrichment,
    to_json,
)
from docshelf.model import Chunk, Document, Enrichment, Tier
from docshelf.progress import Progress, ProgressEvent

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.chunk import ChunkSettings
    from docshelf.config import Settings
    from docshelf.embed import Embedder
    from docshelf.ingest.writer import DocumentWriter
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.llm import LLM
    from docshelf.shared.caches import SummaryCache
    from docshelf.store import Store

log = logging.getLogger("docshelf")

OFFLINE_VERSION = "2"  # bump when the offline producer changes its output (2: prose as read)
# Concept sources whose labels go into the retrieval header. Concepts matched by
# embedding similarity stay out: they came from these very vectors and would only
# echo them, at the price of re-embedding every document.
HEADER_SOURCES = ("frontmatter", "manual", "manifest", "llm")
LEASE_SECONDS = 120.0
# A document's chunks are read, re-headed and written this many at a time: enrichment
# holds a page of them and the snippets it considers, never the whole document (issue
# 41: a 24.8 MB note's 60,845 chunks, loaded at once, took 240 MB).
PAGE_CHUNKS = 512
HEADERS_KEPT = 4096  # the headers of so many heading paths kept while a document is re-headed


class Wiring(Protocol):
    """What enrichment uses of a library's wiring (a ``Runtime`` is one). Named here, so
    the enricher depends on these parts and not on the module that builds them, which
    makes the enricher in turn."""

    @property
    def store(self) -> Store: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def embedder(self) -> Embedder | None: ...
    @property
    def llm(self) -> LLM | None: ...
    @property
    def taxonomy(self) -> Taxonomy: ...
    @property
    def summaries(self) -> SummaryCache: ...
    @property
    def chunk_settings(self) -> ChunkSettings: ...
    @property
    def count_tokens(self) -> Callable[[str], int]: ...
    @property
    def writer(self) -> DocumentWriter: ...
    @property
    def enricher(self) -> Enricher: ...
    def changed(self) -> None: ...
    def enriched(self) -> None: ...


class Wired(Protocol):
    """Anything that carries the wiring: a ``Runtime`` itself, or a ``Shelf``."""

    @property
    def runtime(self) -> Wiring: ...


@dataclass(frozen=True)
class EnrichResult:
    document_id: str
    mode: str  # "llm" | "offline"
    cached: bool
    enrichment: Enrichment
    reembedded: int = 0  # snippets re-embedded because the header's concepts changed
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    ms: float = 0.0
    notice: str | None = None


class Enricher:
    def __init__(self, wired: Wired, settings: EnrichSettings | None = None) -> None:
        """``wired``: the library's ``Runtime`` (or a ``Shelf``, which carries one)."""
        self.rt = wired.runtime
        self.store = self.rt.store
        self.settings = settings or EnrichSettings(locale=self.rt.settings.locale)
        self._concepts: tuple[str, npt.NDArray[np.float32]] | None = None
        # told (texts done, of total) after each model batch while a run reports progress
        self._on_step: Callable[[int, int], None] | None = None

    @property
    def use_llm(self) -> bool:
        # "off" only stops enrichment after indexing; an explicit run may use the LLM.
        return self.rt.llm is not None and self.rt.settings.enrich != "offline"

    def producer(self) -> str:
        if self.use_llm and self.rt.llm is not None:
            return f"llm:{self.rt.llm.model}:{self.rt.taxonomy.version}"
        model = self.rt.embedder.model_id if self.rt.embedder else "none"
        return f"offline:{OFFLINE_VERSION}:{model}:{self.rt.taxonomy.version}"

    # -- the queue ---------------------------------------------------------------------
    def run_pending(
        self, limit: int | None = None, *, progress: Progress | None = None, expected: int = 0
    ) -> list[EnrichResult]:
        """Enrich documents waiting for it, one lease at a time, until none is left.
        A lease names this process, so one left by a process that was killed is taken
        at once by the next run on this host (on another, once it runs out).
        ``progress`` hears of each document (of ``expected``, or more if more turn up:
        the queue is shared with workers and earlier runs)."""
        done: list[EnrichResult] = []
        tried = 0
        while limit is None or tried < limit:
            doc_id = self.store.claim_enrichment(time.time(), LEASE_SECONDS, owners.this_process())
            if doc_id is None:
                break
            if progress:
                total = max(expected, tried + 1)
                doc = self.store.get_document(doc_id)
                name = doc.rel_path if doc is not None else doc_id
                self._on_step = _reporter(progress, tried, total, name)
                progress(ProgressEvent("enrich", tried, total, "documents", name))
            tried += 1
            try:
                result = self.enrich_safely(doc_id)
            finally:
                self._on_step = None
            if result is not None:
                done.append(result)
        if progress and tried:
            progress(ProgressEvent("enrich", tried, max(expected, tried), "documents", "done"))
        return done

    def enrich_safely(self, document_id: str) -> EnrichResult | None:
        """``enrich`` for background runs: a failure is logged and recorded, never raised
        (so one bad document cannot stop the queue or be retried forever)."""
        try:
            return self.enrich(document_id)
        except NotFound:
            return None
        except Exception as exc:
            log.exception("enrichment of %s failed", document_id)
            self.store.enrichment_failed(document_id, time.time())
            message = exc.message if isinstance(exc, DocshelfError) else type(exc).__name__
            with self.store.transaction():
                self.store.add_event(
                    document_id, "document.enriched", message=f"enrichment failed: {message}"
                )
            return None

    # -- one document ---------------------------------------------------------------------
    def enrich(self, document_id: str) -> EnrichResult:
        started = time.perf_counter()
        doc = self.store.get_document(document_id)
        if doc is None:
            raise NotFound(f"No document {document_id!r}")
        chunks = StoredChunks(self.store, doc.id)
        producer = self.producer()
        with telemetry.span("enrich", document_id=doc.id, producer=producer):
            cached = self._cached(doc, producer)
            if cached is not None:
                result = EnrichResult(doc.id, cached.mode, True, cached)
            else:
                result = self._compute(doc, chunks)
                if result.notice is None:  # a fallback is not what this producer makes
                    self.rt.summaries.put(
                        doc.sha256, self.settings.locale, producer, to_json(result.enrichment)
                    )
            reembedded = self._write(doc, chunks, result.enrichment)
        ms = (time.perf_counter() - started) * 1000
        return dataclasses.replace(result, reembedded=reembedded, ms=ms)

    def _cached(self, doc: Document, producer: str) -> Enrichment | None:
        raw = self.rt.summaries.get(doc.sha256, self.settings.locale, producer)
        e = from_json(raw) if raw is not None else None
        cited = [i for _, ids in e.claims or () for i in ids] if e is not None else []
        if e is None or not self._snippets_exist(doc, cited):
            return None  # unreadable, or its citations point at chunks that are gone
        if doc.concept_source in DECIDED:
            e = dataclasses.replace(
                e,
                concept_ids=doc.concept_ids,
                concept_source=doc.concept_source,
                category=doc.concept_ids[0] if doc.concept_ids else e.category,
            )
        return e

    def _snippets_exist(self, doc: Document, chunk_ids: list[str]) -> bool:
        """Whether every one of ``chunk_ids`` is a snippet of ``doc`` (a cached
        enrichment's citations; a few chunks read, not the document's)."""
        wanted = set(chunk_ids)
        found = {
            c.id
            for c in self.store.get_chunks(list(wanted))
            if c.document_id == doc.id and c.tier is Tier.SNIPPET
        }
        return found == wanted

    def _snippet_vectors(
        self, snippets: list[Chunk], done: int = 0, total: int | None = None
    ) -> npt.NDArray[np.float32] | None:
        embedder = self.rt.embedder
        if embedder is None or not snippets:
            return None
        # The embedding cache holds every indexed snippet's vector: no model call here.
        return self._embed([c.retrieval_text for c in snippets], done, total)

    def _embed(
        self, texts: Sequence[str], done: int = 0, total: int | None = None
    ) -> npt.NDArray[np.float32]:
        """``embed_texts`` with this library's model, one batch at a time while a run
        reports progress (the taxonomy's concepts, re-headed snippets: many texts). A
        batch of a longer run (``done`` texts before it, of ``total``) reports as such."""
        embedder = self.rt.embedder
        assert embedder is not None
        on_step = self._on_step
        if on_step is not None and total is not None:
            report = on_step

            def on_step(texts_done: int, _texts: int) -> None:
                report(done + texts_done, total)

        return embed_texts(self.store, embedder, texts, on_step=on_step)

    def _concept_vectors(self) -> npt.NDArray[np.float32] | None:
        embedder = self.rt.embedder
        if embedder is None or not self.rt.taxonomy.concepts:
            return None
        key = f"{embedder.model_id}:{self.rt.taxonomy.version}"
        if self._concepts is None or self._concepts[0] != key:
            _, texts = concept_texts(self.rt.taxonomy)
            self._concepts = (key, self._embed(texts))
        return self._concepts[1]

    def _compute(self, doc: Document, chunks: StoredChunks) -> EnrichResult:
        import numpy as np

        # a long document's centre is found among a bounded number of its snippets, the
        # same ones ``offline_enrichment`` would take, so the step's cost has a ceiling;
        # only those are kept as the snippets are read
        snippets = chunks.considered(doc, self.settings.max_snippets)
        vectors = self._snippet_vectors(snippets)
        notice = None
        llm = self.rt.llm
        if self.use_llm and llm is not None and snippets:
            if vectors is not None:
                centroid = vectors.mean(axis=0)
                ranked = [int(i) for i in np.argsort(-(vectors @ centroid), kind="stable")]
            else:
                ranked = list(range(len(snippets)))
            excerpts = llm_excerpts(snippets, ranked, self.settings.llm_excerpt_tokens)
            try:
                outcome = llm_enrichment(llm, doc, excerpts, self.rt.taxonomy, self.settings)
            except Unavailable as exc:
                notice = f"the LLM failed ({exc.message}); enriched offline"
            else:
                if outcome.enrichment is not None:
                    return EnrichResult(
                        doc.id,
                        "llm",
                        False,
                        outcome.enrichment,
                        prompt_tokens=outcome.prompt_tokens,
                        completion_tokens=outcome.completion_tokens,
                        llm_calls=outcome.calls,
                    )
                notice = f"the LLM's reply stayed invalid ({outcome.error}); enriched offline"
        embedder = self.rt.embedder
        enrichment = offline_enrichment(
            doc,
            chunks,
            snippets=snippets,
            snippet_vectors=vectors,
            embed=self._embed if embedder is not None else None,
            taxonomy=self.rt.taxonomy,
            concept_vectors=self._concept_vectors(),
            settings=self.settings,
        )
        return EnrichResult(doc.id, "offline", False, enrichment, notice=notice)

    def write(self, doc: Document, e: Enrichment) -> int:
        """Store an enrichment made elsewhere (a manifest's, knowledge/manifest.py) as
        this enricher stores its own; how many snippets were re-embedded."""
        return self._write(doc, StoredChunks(self.store, doc.id), e)

    def _write(self, doc: Document, chunks: StoredChunks, e: Enrichment) -> int:
        """Store the enrichment; when the header's concepts change, re-header the chunks
        and re-embed the snippets whose retrieval text changed — all in one transaction,
        a page of chunks at a time (whether any header changes is seen first, outside it)."""
        labels = (
            self.rt.taxonomy.labels(e.concept_ids) if e.concept_source in HEADER_SOURCES else []
        )
        headers = Headers(
            doc.title, labels, self.rt.chunk_settings.header_max_tokens, self.rt.count_tokens
        )
        changes = any(c.header != headers[c.heading_path] for page in chunks.pages() for c in page)
        now = time.time()
        reembedded = 0
        with self.store.transaction():
            if changes:
                reembedded = self._rehead(doc, chunks, headers, now)
            if not self.store.put_enrichment(doc.id, e, now):
                raise NotFound(f"Document {doc.id!r} was removed while being enriched")
            self.store.add_event(
                doc.id, "document.enriched", message=f"{e.document_type}; {e.mode}"
            )
        return reembedded

    def _rehead(self, doc: Document, chunks: StoredChunks, headers: Headers, at: float) -> int:
        """Replace the chunks whose header changed, a page at a time, the snippets with
        their new vectors (inside the caller's transaction); how many snippets changed."""
        reembedded = 0
        total = doc.chunk_counts.get(Tier.SNIPPET.value)
        for page in chunks.pages():
            changed = [
                dataclasses.replace(c, header=headers[c.heading_path])
                for c in page
                if c.header != headers[c.heading_path]
            ]
            if not changed:
                continue
            snippets = [c for c in changed if c.tier is Tier.SNIPPET]
            vectors = self._snippet_vectors(snippets, reembedded, total)
            self.rt.writer.replace_chunks(doc, changed, vectors, at)
            reembedded += len(snippets)
        return reembedded


class Headers(dict[tuple[str, ...], str]):
    """The retrieval header of a document's chunks under each heading path, with these
    concept labels (``build_header``), made once per path: a section's snippets share
    theirs. At most ``HEADERS_KEPT`` are kept."""

    def __init__(
        self, title: str, labels: Sequence[str], max_tokens: int, count_tokens: Callable[[str], int]
    ) -> None:
        super().__init__()
        self.title = title
        self.labels = labels
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens

    def __missing__(self, path: tuple[str, ...]) -> str:
        if len(self) >= HEADERS_KEPT:
            self.clear()
        header = build_header(self.title, path, self.labels, self.max_tokens, self.count_tokens)
        self[path] = header
        return header


class StoredChunks:
    """A document's chunks, sections then snippets, each in order, read from the store
    ``PAGE_CHUNKS`` at a time each time they are gone through: enrichment goes through a
    large document more than once and never holds it whole."""

    def __init__(self, store: Store, document_id: str, page: int | None = None) -> None:
        self.store = store
        self.document_id = document_id
        self.page = page or PAGE_CHUNKS

    def __iter__(self) -> Iterator[Chunk]:
        for page in self.pages():
            yield from page

    def pages(self, tiers: Sequence[Tier] = (Tier.SECTION, Tier.SNIPPET)) -> Iterator[list[Chunk]]:
        for tier in tiers:
            after = -1
            while True:
                page = self.store.chunks_after(self.document_id, tier, after, self.page)
                if page:
                    yield page
                if len(page) < self.page:
                    break
                after = page[-1].index

    def snippets(self) -> Iterator[Chunk]:
        for page in self.pages((Tier.SNIPPET,)):
            yield from page

    def considered(self, doc: Document, limit: int) -> list[Chunk]:
        """The snippets enrichment looks at (``considered``), read a page at a time."""
        count = doc.chunk_counts.get(Tier.SNIPPET.value)
        if count is None:  # a record without its counts: count them first
            count = sum(len(p) for p in self.pages((Tier.SNIPPET,)))
        return considered_of(self.snippets(), count, limit)


def enrich_documents(
    rt: Wiring,
    document_ids: Sequence[str] | None = None,
    *,
    user_id: str | None = None,
    progress: Progress | None = None,
) -> list[EnrichResult]:
    """Enrich documents now (all of ``user_id``'s indexed ones when ``document_ids`` is
    None); unchanged documents are answered from the enrichment cache."""
    if document_ids is None:  # the indexed ones: a queued or failed upload has no text
        docs = rt.store.list_documents(user_id=user_id)
        ids = [d.id for d in docs if d.status == "complete"]
    else:
        ids = [visible(rt.store, i, user_id).id for i in document_ids]
    results = []
    for n, doc_id in enumerate(ids):
        if progress:
            progress(ProgressEvent("enrich", n, len(ids), "documents", doc_id))
        results.append(rt.enricher.enrich(doc_id))
    rt.enriched()
    if progress and ids:
        progress(ProgressEvent("enrich", len(ids), len(ids), "documents", "done"))
    return results


def _reporter(progress: Progress, done: int, total: int, name: str) -> Callable[[int, int], None]:
    """Model batches inside one document's enrichment, as events of the enrich phase."""

    def step(texts_done: int, texts: int) -> None:
        progress(ProgressEvent("enrich", done, total, "documents", name, texts_done, texts))

    return step
