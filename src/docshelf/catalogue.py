"""The catalogue: what the library holds — one document with its files, sections,
links and claims as a user sees it, and the library's status."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from docshelf.accounts.access import files_seen, visible
from docshelf.model import Chunk, Distillate, Document, Failure, Tier
from docshelf.parse.links import WikiLink
from docshelf.store import FACETS, Listing, SearchFilters, Store

if TYPE_CHECKING:
    from docshelf.runtime import Runtime


@dataclass
class DocumentView:
    document: Document
    files: list[str]
    sections: list[Chunk]
    links: list[tuple[WikiLink, list[str]]] = field(default_factory=list)
    backlinks: list[Document] = field(default_factory=list)
    distillates: list[Distillate] = field(default_factory=list)


@dataclass
class Status:
    home: str
    database: str
    embedding_model: str
    documents: int
    sources: int
    sections: int
    snippets: int
    snippets_with_vectors: int
    by_status: dict[str, int]
    by_file_type: dict[str, int]
    pages_without_text: int
    unmapped_tags: dict[str, int]
    failures: list[Failure]
    failure_count: int
    # which vector search answers: {"path": "ann"|"exact"|"native", ...} (search/engines/usearch.py)
    vector_index: dict[str, object] = field(default_factory=dict)
    lexical_index: dict[str, object] = field(default_factory=dict)
    enrichment: dict[str, int] = field(default_factory=dict)  # pending, llm, offline, failed
    # why a ``docshelf reindex`` is due (chunks made by an older chunker), or None
    reindex_due: str | None = None
    embedding_pending: int = 0  # documents searchable by their words only (ingest/vectors.py)
    ocr_pages: int = 0  # pages (and images) whose text OCR read

    @property
    def embedding_coverage(self) -> float:
        return self.snippets_with_vectors / self.snippets if self.snippets else 1.0


def _may_see(store: Store, document_id: str, user_id: str | None) -> bool:
    return user_id is None or store.has_access(user_id, document_id)


def document_view(store: Store, document_id: str, user_id: str | None) -> DocumentView:
    """The document as ``user_id`` sees it (their name for it; only the links and
    backlinks to documents they may see)."""
    doc = visible(store, document_id, user_id)
    link = store.access_links(user_id, [document_id]).get(document_id) if user_id else None
    files = [r.path for r in files_seen(store, document_id, user_id, link)]
    links = [
        (link, [d for d in targets if _may_see(store, d, user_id)])
        for link, targets in store.links_of(doc.id)
    ]
    backlinks = [
        d
        for d in map(store.get_document, store.backlinks(doc.id))
        if d is not None and _may_see(store, d.id, user_id)
    ]
    sections = store.chunks_of_document(document_id, Tier.SECTION)
    distillates = store.distillates_of(doc.id)
    return DocumentView(doc, files, sections, links, backlinks, distillates)


def status(rt: Runtime) -> Status:
    store = rt.store
    s = store.stats()
    return Status(
        home=str(rt.settings.home),
        database=store.url,
        embedding_model=store.get_meta("embedding_model")
        or (rt.embedder.model_id if rt.embedder else "none"),
        documents=s.documents,
        sources=s.sources,
        sections=s.sections,
        snippets=s.snippets,
        snippets_with_vectors=s.snippets_with_vectors,
        by_status=s.by_status,
        by_file_type=s.by_file_type,
        pages_without_text=s.pages_without_text,
        unmapped_tags={
            tag: n for tag, n in store.tag_counts().items() if rt.taxonomy.resolve(tag) is None
        },
        failures=store.list_failures(limit=20),
        failure_count=store.count_failures(),
        enrichment=s.by_enrichment,
        vector_index=rt.vector_index.state() if rt.vector_index else {"path": "native"},
        lexical_index=rt.lexical_index.state() if rt.lexical_index else {"path": "native"},
        reindex_due=reindex_due(store) if s.documents else None,
        embedding_pending=store.pending_embedding(),
        ocr_pages=s.ocr_pages,
    )


def document_id(store: Store, given: str) -> str:
    """The id of the one document whose id is ``given`` or starts with it (``doc_`` may be
    left out): every document is looked at, so only for the library's own terminal.
    ``NotFound`` when none; ``InvalidInput`` naming a few when several start so."""
    from docshelf.errors import InvalidInput, NotFound

    if store.get_document(given) is not None:
        return given
    prefix = given if given.startswith("doc_") else f"doc_{given}"
    found = store.document_ids_starting(prefix, 6) if given else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"No document {given!r}")
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    raise InvalidInput(f"{given!r} starts several documents' ids ({shown}); give more of one")


def reindex_due(store: Store) -> str | None:
    """Why the library's chunks want a ``docshelf reindex``: made by an older chunker than
    this one (meta ``chunker_version``, kept from a library's first write and after every
    full reindex), or None."""
    from docshelf.chunk import CHUNKER_META
    from docshelf.chunk import reindex_due as due

    return due(store.get_meta(CHUNKER_META))


# Clearing a single-valued facet's own filter before counting it keeps its other values
# in sight (choosing "PDF" must not hide "Markdown"); tags and concepts add up, so their
# counts are within what is chosen.
_OWN_FILTER: dict[str, tuple[str, ...]] = {
    "type": ("file_type",),
    "doctype": ("document_type",),
    "source": ("source_id",),
    "date": ("dated_from", "dated_before"),
}


@dataclass(frozen=True)
class Facets:
    """Document counts per facet value over a library narrowed by filters, and how many
    documents match all the filters (``total``)."""

    counts: dict[str, dict[str, int]]
    total: int


class FacetEngine(Protocol):
    """An engine that counts facets itself (Typesense's documents collection), or says
    it cannot for these filters (None: the store counts)."""

    def facet_counts(
        self, filters: SearchFilters, facets: Sequence[str]
    ) -> dict[str, dict[str, int]] | None: ...


def library_facets(
    store: Store, filters: SearchFilters, engine: FacetEngine | None = None
) -> Facets:
    """The facets (``store.FACETS``) of the documents matching ``filters`` (give its
    ``user_id``: only what that user may read is counted), counted by ``engine`` where
    it can, else by the store. Each single-valued facet is counted without its own
    filter, so the other values of a chosen facet stay choosable; every count is exact,
    over the whole matching set."""

    def count(filters: SearchFilters, facets: Sequence[str]) -> dict[str, dict[str, int]]:
        counted = engine.facet_counts(filters, facets) if engine is not None else None
        return counted if counted is not None else store.facet_counts(filters, facets)

    counts: dict[str, dict[str, int]] = {}
    plain = [f for f in FACETS if all(getattr(filters, k) is None for k in _OWN_FILTER.get(f, ()))]
    counts.update(count(filters, plain))
    for facet in FACETS:
        if facet not in counts:
            cleared: dict[str, Any] = dict.fromkeys(_OWN_FILTER[facet])
            widened = dataclasses.replace(filters, **cleared)
            counts.update(count(widened, [facet]))
    total = store.count_documents(listing=Listing(filters=filters))
    return Facets({f: counts[f] for f in FACETS}, total)
