"""The one filter vocabulary every face speaks (SPEC §4).

A search may be narrowed by metadata. The names below are what people and
programs write: ``tag:x`` in a query, ``--filter tag=x`` on the command line,
``{"tag": ["x"]}`` in the HTTP API, the MCP tool and the LangChain retriever.
This module says once what each name means and turns what a face received
into the store's :class:`~docshelf.store.SearchFilters`, so no face can fall
behind the others (MCP and LangChain once lacked the concept filter).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from docshelf.errors import InvalidInput
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.model import DOCUMENT_TYPES
from docshelf.parse import FILE_TYPES
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    from docshelf.search.filters_model import Filters

__all__ = [
    "FILTER_KEYS",
    "SEARCH_MODES",
    "VOCABULARY",
    "FilterName",
    "Filters",
    "SearchFilters",
    "SearchMode",
    "concept_group",
    "query_field",
    "with_query_fields",
]

SearchMode = Literal["hybrid", "lexical", "vector"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)


@dataclass(frozen=True)
class FilterName:
    """One filter: its public name, the field it fills, whether values add up."""

    key: str  # what faces write: tag, path, …
    field: str  # the ParsedQuery field (a SearchFilters attribute, or "concepts")
    repeatable: bool  # repeatable values must all match; a single one replaces
    meaning: str


VOCABULARY: tuple[FilterName, ...] = (
    FilterName("source", "source_id", False, "A source id"),
    FilterName("path", "path_prefix", False, "A path prefix"),
    FilterName("type", "file_type", False, "A file type: markdown, text, pdf, html, docx, rst"),
    FilterName(
        "doctype",
        "document_type",
        False,
        "A document type (from enrichment): paper, book, report, manual, transcript, article, note",
    ),
    FilterName("tag", "tags", True, "Tags the document must all have"),
    FilterName("concept", "concepts", True, "Concepts (ids or labels; narrower ones included)"),
)
FILTER_KEYS: tuple[str, ...] = tuple(f.key for f in VOCABULARY)
_BY_KEY = {f.key: f for f in VOCABULARY}


def __getattr__(name: str) -> Any:
    """``Filters``, the pydantic model of the filters, from ``filters_model.py`` on first
    use: pydantic is not imported by a search that needs no model (a CLI search)."""
    if name == "Filters":
        from docshelf.search.filters_model import Filters

        return Filters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _meaning(key: str) -> str:
    return _BY_KEY[key].meaning


def file_types() -> tuple[str, ...]:
    """The file types a ``type`` filter may name (what the parsers read)."""
    return tuple(sorted(set(FILE_TYPES.values())))


def document_types() -> tuple[str, ...]:
    """The document types a ``doctype`` filter may name (what enrichment assigns)."""
    return DOCUMENT_TYPES


def file_type_names() -> tuple[str, ...]:
    """What a ``type`` filter accepts: the file types and the extensions that name one."""
    return (
        *file_types(),
        *sorted(e.lstrip(".") for e in FILE_TYPES if e.lstrip(".") not in file_types()),
    )


def known_value(key: str, value: str, fold: bool = True) -> str:
    """``value`` for the ``type`` or ``doctype`` filter, lower-cased (a file type may be
    named by its extension: ``md`` is ``markdown``; in the query syntax in any case), or
    InvalidInput
    naming the known values: ``type:article`` must not silently match nothing when
    ``article`` is a document type, not a file type."""
    wanted = value.lower() if fold else value  # the query syntax ignores case
    if key == "type" and wanted not in file_types():
        wanted = FILE_TYPES.get("." + wanted.lstrip("."), wanted)  # md, .txt: by extension
    if key == "type" and wanted not in file_types():
        hint = (
            f"; for the document type, use doctype:{wanted}" if wanted in document_types() else ""
        )
        raise InvalidInput(
            f"Unknown file type {value!r}; file types are {', '.join(file_types())}{hint}"
        )
    if key == "doctype" and wanted not in document_types():
        hint = f"; for the file type, use type:{wanted}" if wanted in file_types() else ""
        raise InvalidInput(
            f"Unknown document type {value!r}; document types are "
            f"{', '.join(document_types())}{hint}"
        )
    return wanted


def query_field(key: str, value: str) -> tuple[str, str] | None:
    """``tag:x`` in a query as a ``(field, value)`` pair, or None when ``key`` names no
    filter (then the token is plain text). Keys are matched in any case; the ``#`` of a
    tag written ``tag:#x`` is dropped."""
    found = _BY_KEY.get(key.lower())
    if found is None or not value:
        return None
    if found.key in ("type", "doctype"):
        return found.field, known_value(found.key, value)
    return found.field, value.lstrip("#") if found.key == "tag" else value


def concept_group(taxonomy: Taxonomy, name: str) -> tuple[str, ...]:
    """The concept ids a filter on ``name`` (an id or a label) matches; an unknown name
    matches nothing."""
    concept = taxonomy.resolve(name)
    return tuple(sorted(taxonomy.narrower_or_same(concept))) if concept else (name,)


def with_query_fields(
    filters: SearchFilters,
    fields: Iterable[tuple[str, str]],
    user_id: str | None,
    taxonomy: Taxonomy,
) -> SearchFilters:
    """Filters from the query string (``tag:x`` …, see :func:`query_field`) and the
    caller, on top of ``filters``; a field in the query replaces the same single-valued
    filter, tags and concepts add up (a concept includes its narrower concepts)."""
    pairs = list(fields)
    given = dict(pairs)
    tags = (*filters.tags, *(value for name, value in pairs if name == "tags"))
    concepts = [value for name, value in pairs if name == "concepts"]
    groups = (*filters.concept_groups, *(concept_group(taxonomy, c) for c in concepts))
    return SearchFilters(
        user_id=user_id if user_id is not None else filters.user_id,
        source_id=given.get("source_id", filters.source_id),
        path_prefix=given.get("path_prefix", filters.path_prefix),
        file_type=given.get("file_type", filters.file_type),
        document_type=given.get("document_type", filters.document_type),
        tags=tags,
        document_ids=filters.document_ids,
        concept_groups=groups,
    )
