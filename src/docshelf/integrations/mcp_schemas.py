"""The MCP tools' arguments and descriptions: their bounds, the filter argument, what
each tool says it does, and the one line an agent reads when the schema refuses some
arguments (``schema_message``). The argument types themselves are the tool bodies'
signatures (``mcp_tools.py``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.search.filters import FILTER_KEYS, SearchFilters
from docshelf.search.filters_model import Filters

DEFAULT_MAX_CHARS = 8000  # about 2,000 tokens: a result never floods the context window
MIN_MAX_CHARS, MAX_MAX_CHARS = 1000, 60000
MAX_HITS = 25  # more hits than this rarely help an agent, and cannot fit a budget anyway
DEFAULT_DOCUMENTS, MAX_DOCUMENTS = 50, 200  # list_sources paging
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)

ContextMode = Literal["snippet-window", "parent-section", "section-neighborhood"]


class SearchFiltersArg(Filters):
    """Metadata filters for ``search_documents`` (the vocabulary of
    ``docshelf.search.filters``); all given ones must match."""

    # The tool's first name for ``tag``, still accepted from agents that learnt it.
    tags: str | list[str] = Field(default_factory=list, description="Same as tag")

    def to_search_filters(self, taxonomy: Taxonomy) -> SearchFilters:
        more = [self.tags] if isinstance(self.tags, str) else self.tags
        merged = Filters(**{**self.model_dump(exclude={"tags"}), "tag": [*self.tag, *more]})
        return merged.to_search_filters(taxonomy)


NotebookArg = Annotated[
    str | None,
    Field(description="Stay within this notebook: its name or id (list_notebooks)", max_length=200),
]
MaxChars = Annotated[
    int,
    Field(
        ge=MIN_MAX_CHARS,
        le=MAX_MAX_CHARS,
        description=f"At most this many characters in the result (default {DEFAULT_MAX_CHARS})",
    ),
]

_BUDGET = f" At most max_chars characters (default {DEFAULT_MAX_CHARS})."
DESCRIPTIONS = {
    "search_documents": (
        "Search the user's documents (hybrid lexical + semantic). Returns hits with the "
        "snippet text, a score and a citation whose label you should quote "
        "(e.g. 'Raft (projects/raft.md#1)'), and next_actions. Filters: "
        f"{', '.join(FILTER_KEYS)}." + _BUDGET
    ),
    "get_context": (
        "Widen a search hit: its neighbouring snippets, the section it is in (up to "
        "6,000 characters around the hit), or that section with the ones beside it (up to "
        "12,000). Use before answering from a hit. "
        "A long text is cut to fit; truncated.next_offset reads on." + _BUDGET
    ),
    "list_sources": (
        "The folders registered in the library and a page of its documents "
        "(ids, titles, types, status, tags); page with offset and limit." + _BUDGET
    ),
    "get_document": (
        "A document's record: title, path, types, summary, tags, concepts, sections (with "
        "chunk ids for get_context), wiki links (each once) and backlinks, key claims, and "
        "its ingest job if uploaded." + _BUDGET
    ),
    "ask": (
        "A grounded answer to a question, with inline [n] citations that map to the "
        "retrieved chunks (each verified); mode says whether an LLM or the extractive "
        "offline form wrote it." + _BUDGET
    ),
    "list_notebooks": (
        "The user's notebooks (named sets of sources and documents, with filters) and "
        "those shared with them read-only; pass one's name or id as notebook to "
        "search_documents, ask or get_context to stay within it." + _BUDGET
    ),
}


def schema_message(exc: ValidationError) -> str:
    """Arguments the tool schema refused, said in a line an agent can act on (not the
    validator's report, with its types, inputs and URLs)."""
    parts: list[str] = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden" and len(err["loc"]) == 2 and err["loc"][0] == "filters":
            parts.append(f"unknown filter {err['loc'][1]!r}; use {', '.join(FILTER_KEYS)}")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument {where!r}")
        elif kind == "missing":
            parts.append(f"{where} is required")
        elif kind == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            parts.append(f"{where} must be one of {expected}")
        elif kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            bound = next(iter(err.get("ctx", {}).values()), "")
            word = {"greater_than_equal": "at least", "less_than_equal": "at most"}.get(
                kind, kind.replace("_", " ")
            )
            parts.append(f"{where} must be {word} {bound}")
        elif kind == "value_error" and err.get("ctx", {}).get("error") is not None:
            parts.append(str(err["ctx"]["error"]))  # a check's own words (filters.py)
        else:
            parts.append(f"{where}: {err['msg'][:1].lower()}{err['msg'][1:]}")
    return "invalid_input: " + "; ".join(parts)
