"""Around a hit: its context (neighbours, section, section's neighbours) and the key
claims (distillates) of a document or a query — the reads that follow a search."""

from __future__ import annotations

from typing import TYPE_CHECKING

from docshelf.errors import InvalidInput, NotFound
from docshelf.model import Chunk, Citation, Distillate, Document, InnerHeading, PageBreak, Tier
from docshelf.plaintext import markup_of
from docshelf.search import citing, spans
from docshelf.search.filters import with_query_fields
from docshelf.search.pipeline import SeenBy
from docshelf.search.query import lexical_terms, parse_query
from docshelf.search.results import CONTEXT_MODES, MAX_LIMIT, ContextResult
from docshelf.store.base import SearchFilters, Store

if TYPE_CHECKING:
    from docshelf.knowledge.taxonomy import Taxonomy


class Around:
    """Context and distillates over one store, as each caller sees their documents."""

    def __init__(self, store: Store, seen_by: SeenBy, taxonomy: Taxonomy) -> None:
        self.store = store
        self.seen_by = seen_by
        self.taxonomy = taxonomy

    def visible(self, document_id: str, user_id: str | None) -> Document:
        """The document as the caller sees it, if they may see it; another user's is
        answered as unknown."""
        doc = self.store.get_document(document_id)
        if doc is None or (user_id is not None and not self.store.has_access(user_id, doc.id)):
            raise NotFound(f"No document {document_id!r}")
        return self.seen_by([doc], user_id)[0]

    def context(
        self,
        chunk_id: str,
        mode: str = "snippet-window",
        window: int = 1,
        user_id: str | None = None,
        anchor: int | None = None,
    ) -> ContextResult:
        """Widen a hit: its neighbouring snippets, the section of its heading, or that
        section with its neighbours, bounded (search/spans.py); a section chunk asked for
        by its id is itself, or itself and its neighbours. With a search citation's
        ``anchor``, cited as the search cited it (under the inner heading, or at the later
        page, that starts there; any other anchor: under the chunk's own heading, on its
        pages)."""
        if mode not in CONTEXT_MODES:
            raise InvalidInput(
                f"Unknown context mode {mode!r}; use one of {', '.join(CONTEXT_MODES)}"
            )
        if not 0 <= window <= 20:
            raise InvalidInput(f"window must be between 0 and 20, not {window}")
        found = self.store.get_chunks([chunk_id])
        if not found:
            raise NotFound(f"No chunk {chunk_id!r}")
        chunk = found[0]
        try:
            doc = self.visible(chunk.document_id, user_id)
        except NotFound:
            raise NotFound(f"No chunk {chunk_id!r}") from None
        at: InnerHeading | PageBreak | None = None
        if anchor is not None:
            at = citing.inner_at(chunk, anchor) or citing.page_at(chunk, anchor)
        cut = spans.Span(0, 0)
        if mode == "snippet-window":
            chunks = self._neighbours(chunk, window)
        elif chunk.tier is Tier.SECTION:  # a section chunk asked for by its id: itself
            chunks = [chunk] if mode == "parent-section" else self._neighbours(chunk, 1)
        else:  # the section of the hit's heading (or with its neighbours), bounded
            snippets = self.store.chunks_of_document(chunk.document_id, Tier.SNIPPET)
            place = at.start if at is not None else chunk.start
            path = citing.cited_path(chunk, at)
            neighbourhood = mode == "section-neighborhood"
            cut = spans.around(snippets, chunk, place, path, neighbourhood)
            chunks = snippets[cut.lo : cut.hi]
        markup = markup_of(doc.file_type, any(c.heading_path for c in chunks))
        return ContextResult(
            chunk_id,
            mode,
            chunks,
            Citation.for_chunk(chunk, doc, at),
            markup,
            cut.cut_before,
            cut.cut_after,
        )

    def _neighbours(self, chunk: Chunk, window: int) -> list[Chunk]:
        tier = self.store.chunks_of_document(chunk.document_id, chunk.tier)
        lo, hi = max(0, chunk.index - window), chunk.index + window + 1
        return tier[lo:hi]

    def distillates(
        self,
        query: str | None = None,
        *,
        document_id: str | None = None,
        limit: int = 20,
        user_id: str | None = None,
    ) -> list[tuple[Distillate, Document]]:
        """Key claims: a document's (``document_id``), or those matching ``query``."""
        if document_id is not None:
            doc = self.visible(document_id, user_id)
            return [(d, doc) for d in self.store.distillates_of(doc.id)[:limit]]
        if not query or not query.strip():
            raise InvalidInput("Give a query or a document id to list distillates")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        parsed = parse_query(query)
        filters = with_query_fields(SearchFilters(), parsed.fields, user_id, self.taxonomy)
        found = self.store.search_distillates(lexical_terms(parsed.text), limit, filters)
        listed = self.store.list_documents(
            document_ids=tuple(dict.fromkeys(x.document_id for x, _ in found))
        )
        docs = {d.id: d for d in self.seen_by(listed, user_id)}
        return [(x, docs[x.document_id]) for x, _ in found if x.document_id in docs]
