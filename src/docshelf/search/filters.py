"""The one filter vocabulary every face speaks (SPEC §4).

A search may be narrowed by metadata. The names below are what people and
programs write: ``tag:x`` in a query, ``--filter tag=x`` on the command line,
``{"tag": ["x"]}`` in the HTTP API, the MCP tool and the LangChain retriever.
This module says once what each name means and turns what a face received
into the store's :class:`~docshelf.store.SearchFilters`, so no face can fall
behind the others (MCP and LangChain once lacked the concept filter).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from docshelf.errors import InvalidInput
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.model import DOCUMENT_TYPES
from docshelf.parse import FILE_TYPES, IMAGE_TYPES
from docshelf.store.base import SearchFilters

__all__ = [
    "ALIASES",
    "DATE_PATTERN",
    "FILTER_KEYS",
    "SEARCH_MODES",
    "VOCABULARY",
    "FilterName",
    "SearchFilters",
    "SearchMode",
    "concept_group",
    "date_range",
    "meaning",
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
    FilterName(
        "date",
        "dated",
        False,
        "The document's date (its file's last change; an upload's arrival), UTC: a year "
        "or month, or a range of them: 2026, 2026-03, 2025..2026-06, 2025.., ..2026",
    ),
)
FILTER_KEYS: tuple[str, ...] = tuple(f.key for f in VOCABULARY)
# Other names for a filter: ``filetype`` says what ``type`` means, beside ``doctype``.
ALIASES: dict[str, str] = {"filetype": "type"}
_BY_KEY = {f.key: f for f in VOCABULARY}


def _lookup(key: str) -> FilterName | None:
    return _BY_KEY.get(ALIASES.get(key, key))


# A date filter: a year or a month (UTC), or a range FROM..TO of them (either end may be
# left out). Every value the pattern admits means something, so the HTTP schema's
# pattern says exactly what is accepted.
_PERIOD = r"[0-9]{4}(?:-(?:0[1-9]|1[0-2]))?"
DATE_PATTERN = rf"^(?:{_PERIOD}|(?:{_PERIOD})?\.\.(?:{_PERIOD})?)$"
_DATE = re.compile(DATE_PATTERN)


def _month_start(year: int, month: int) -> float:
    """The first second of a month (UTC) in epoch seconds, for any year (0000 and 9999
    too, where the calendar module gives up): days from the civil date."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return float(days * 86400)


def _period(text: str) -> tuple[float, float]:
    """A year or month (UTC) as ``(start, end)`` in epoch seconds, end excluded."""
    year, _, month = text.partition("-")
    y, m = int(year), int(month or 1)
    end = (y + 1, 1) if not month else (y + (m == 12), m % 12 + 1)
    return _month_start(y, m), _month_start(*end)


def date_range(value: str) -> tuple[float | None, float | None]:
    """A ``date`` filter's value as ``(from, before)`` epoch seconds (None: open):
    ``2026`` is that year, ``2026-03`` that month (UTC); ``A..B`` from the start of A to
    the end of B (in either order), ``A..`` from A on, ``..B`` up to B's end, ``..`` any
    date. InvalidInput for anything else."""
    if _DATE.fullmatch(value) is None:
        raise InvalidInput(
            f"Bad date {value!r}; use YYYY or YYYY-MM, or a range FROM..TO of them "
            "(either end may be left out): 2026, 2026-03, 2024..2025-06"
        )
    if ".." not in value:
        return _period(value)
    low, _, high = value.partition("..")
    if low and high and _period(high)[1] <= _period(low)[0]:
        low, high = high, low
    return (_period(low)[0] if low else None, _period(high)[1] if high else None)


def meaning(key: str) -> str:
    """What the filter ``key`` means, in a sentence (for help texts and schemas)."""
    return _BY_KEY[key].meaning


_meaning = meaning


def file_types() -> tuple[str, ...]:
    """The file types a ``type`` filter may name (what the parsers read)."""
    return tuple(sorted({*FILE_TYPES.values(), *IMAGE_TYPES.values()}))


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
    found = _lookup(key.lower())
    if found is None or not value:
        return None
    if found.key in ("type", "doctype"):
        return found.field, known_value(found.key, value)
    if found.key == "date":
        date_range(value)  # checked now: a bad date is the query's error
        return found.field, value
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
    dated = (filters.dated_from, filters.dated_before)
    if "dated" in given:
        dated = date_range(given["dated"])
    return SearchFilters(
        user_id=user_id if user_id is not None else filters.user_id,
        source_id=given.get("source_id", filters.source_id),
        path_prefix=given.get("path_prefix", filters.path_prefix),
        file_type=given.get("file_type", filters.file_type),
        document_type=given.get("document_type", filters.document_type),
        tags=tags,
        document_ids=filters.document_ids,
        concept_groups=groups,
        dated_from=dated[0],
        dated_before=dated[1],
        notebook=filters.notebook,
    )
