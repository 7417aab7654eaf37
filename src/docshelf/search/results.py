"""What search answers with, its bounds, and the filters a query string adds."""

from __future__ import annotations

from dataclasses import dataclass, field

from docshelf.model import Chunk, Citation, Hit
from docshelf.search.query import ParsedQuery
from docshelf.store.base import SearchFilters
from docshelf.taxonomy import Taxonomy

SEARCH_MODES: tuple[str, ...] = ("hybrid", "lexical", "vector")
CONTEXT_MODES: tuple[str, ...] = ("snippet-window", "parent-section", "section-neighborhood")
GROUPS: tuple[str, ...] = ("snippet", "section", "document")
MAX_LIMIT = 200
CACHED_LIMIT = 50  # searches asking for more hits (or expanded sections) are not cached
CANDIDATE_POOL = 100  # candidates per side (lexical, vector) before fusion


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    notice: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    candidates: list[str] = field(default_factory=list)  # document ids of the fused pool
    facets: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class ContextResult:
    chunk_id: str
    mode: str
    chunks: list[Chunk]
    citation: Citation

    @property
    def text(self) -> str:
        return "\n\n".join(c.text for c in self.chunks)


def with_query_fields(
    filters: SearchFilters, parsed: ParsedQuery, user_id: str | None, taxonomy: Taxonomy
) -> SearchFilters:
    """Filters from the query string (``tag:x`` …) and the caller, on top of ``filters``;
    a field in the query replaces the same single-valued filter, tags and concepts add up
    (a concept includes its narrower concepts)."""
    given = dict(parsed.fields)
    tags = (*filters.tags, *(value for name, value in parsed.fields if name == "tags"))
    concepts = [value for name, value in parsed.fields if name == "concepts"]
    groups = (*filters.concept_groups, *(concept_group(taxonomy, c) for c in concepts))
    return SearchFilters(
        user_id=user_id if user_id is not None else filters.user_id,
        source_id=given.get("source_id", filters.source_id),
        path_prefix=given.get("path_prefix", filters.path_prefix),
        file_type=given.get("file_type", filters.file_type),
        tags=tags,
        document_ids=filters.document_ids,
        concept_groups=groups,
    )


def concept_group(taxonomy: Taxonomy, name: str) -> tuple[str, ...]:
    """The concept ids a filter on ``name`` (an id or a label) matches; an unknown name
    matches nothing."""
    concept = taxonomy.resolve(name)
    return tuple(sorted(taxonomy.narrower_or_same(concept))) if concept else (name,)
