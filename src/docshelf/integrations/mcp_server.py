"""The MCP server: the library as tools an agent can call to ground its answers.

    docshelf mcp      # stdio, for a local agent; acts as the local admin, like the CLI
    docshelf serve    # also streamable HTTP at /mcp, behind the same bearer tokens

Tools (all read-only): ``search_documents``, ``get_context``, ``list_sources``,
``get_document``. Each returns the JSON shapes of SPEC §9 (``views``) — every
hit and context carries its ``citation.label`` to quote — plus ``next_actions``:
the tool calls worth making next, with their arguments filled in. docshelf's
errors become tool errors whose text starts with the error code
(``not_found: No chunk 'chunk_x'``).

The tools are one thin face over :class:`~docshelf.shelf.Shelf`; who is asking
is decided by an ``Identity`` function: nobody (``None``, the local admin) over
stdio, the token's user over HTTP (see ``docshelf.api.mcp``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from docshelf import __version__, views
from docshelf.errors import DocshelfError, NotFound
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.search.filters import Filters, SearchFilters, SearchMode
from docshelf.search.results import MAX_LIMIT
from docshelf.shelf import Shelf

__all__ = ["Identity", "SearchFiltersArg", "build_server", "run_stdio"]

JSON = dict[str, Any]
# Who calls a tool: a user id, or None for the local admin. May raise ToolError.
Identity = Callable[[Context], str | None]

INSTRUCTIONS = (
    "docshelf searches the user's own documents (notes, papers, manuals) and cites every hit. "
    "Call search_documents first; quote a hit's citation.label when you use it; call get_context "
    "with a hit's chunk_id to read the surrounding section before answering from it. "
    "Results list next_actions: tool calls worth making next."
)
SAMPLE_DOCUMENTS = 50  # list_sources shows this many documents
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)

ContextMode = Literal["snippet-window", "parent-section", "section-neighborhood"]


class SearchFiltersArg(Filters):
    """Metadata filters for ``search_documents`` (the vocabulary of
    ``docshelf.search.filters``); all given ones must match."""

    # The tool's first name for ``tag``, still accepted from agents that learnt it.
    tags: list[str] = Field(default_factory=list, description="Same as tag")

    def to_search_filters(self, taxonomy: Taxonomy) -> SearchFilters:
        merged = Filters(**{**self.model_dump(exclude={"tags"}), "tag": [*self.tag, *self.tags]})
        return merged.to_search_filters(taxonomy)


def _action(tool: str, description: str, **arguments: Any) -> JSON:
    return {"tool": tool, "arguments": arguments, "description": description}


class _Tools:
    """The tool bodies: parse nothing (the SDK validated the arguments), call the shelf,
    shape the JSON. docshelf errors become tool errors naming their code."""

    def __init__(self, shelf: Shelf, identity: Identity) -> None:
        self.shelf = shelf
        self.identity = identity

    def search_documents(
        self,
        ctx: Context,
        query: Annotated[str, Field(description="What to look for, in the user's own words")],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Number of hits")] = 8,
        mode: Annotated[
            SearchMode, Field(description="hybrid (default), lexical (exact words) or vector")
        ] = "hybrid",
        filters: Annotated[
            SearchFiltersArg | None, Field(description="Optional metadata filters")
        ] = None,
    ) -> JSON:
        user_id = self.identity(ctx)
        result = self.shelf.search(
            query,
            limit=limit,
            mode=mode,
            filters=(filters or SearchFiltersArg()).to_search_filters(self.shelf.taxonomy),
            user_id=user_id,
        )
        out = views.search(result)
        actions = []
        for hit in result.hits[:2]:
            actions.append(
                _action(
                    "get_context",
                    f"Read the section around {hit.citation.label}",
                    chunk_id=hit.chunk.id,
                    mode="parent-section",
                )
            )
        if result.hits:
            top = result.hits[0]
            actions.append(
                _action(
                    "get_document",
                    "See the top hit's document: sections, tags, links",
                    document_id=top.document.id,
                )
            )
        else:
            actions.append(_action("list_sources", "See what the library holds"))
            if result.mode != "lexical":
                actions.append(
                    _action(
                        "search_documents",
                        "Try exact words only",
                        query=query,
                        mode="lexical",
                    )
                )
        out["next_actions"] = actions
        return out

    def get_context(
        self,
        ctx: Context,
        chunk_id: Annotated[str, Field(description="A chunk_id from a search hit")],
        mode: Annotated[
            ContextMode,
            Field(
                description="snippet-window (the hit and its neighbours), parent-section "
                "(the whole section), section-neighborhood (the section and its neighbours)"
            ),
        ] = "parent-section",
        window: Annotated[
            int, Field(ge=0, le=20, description="Neighbours on each side (snippet-window)")
        ] = 1,
    ) -> JSON:
        result = self.shelf.context(chunk_id, mode, window, user_id=self.identity(ctx))
        out = views.context(result)
        wider = {"snippet-window": "parent-section", "parent-section": "section-neighborhood"}
        actions = []
        if mode in wider:
            actions.append(
                _action("get_context", "Read more around it", chunk_id=chunk_id, mode=wider[mode])
            )
        document_id = result.chunks[0].document_id if result.chunks else None
        if document_id:
            actions.append(
                _action("get_document", "See the whole document", document_id=document_id)
            )
        out["next_actions"] = actions
        return out

    def list_sources(self, ctx: Context) -> JSON:
        user_id = self.identity(ctx)
        sources = [
            views.source(s) for s in self.shelf.sources() if user_id is None or s.user_id == user_id
        ]
        docs = self.shelf.documents(user_id=user_id, limit=SAMPLE_DOCUMENTS + 1)
        documents = [views.document_brief(d) for d in docs[:SAMPLE_DOCUMENTS]]
        actions = [
            _action(
                "search_documents",
                f"Search only {s['path']}",
                query="<your question>",
                filters={"source": s["id"]},
            )
            for s in sources[:3]
        ]
        if documents:
            actions.append(
                _action(
                    "get_document",
                    "Look at a document",
                    document_id=documents[0]["document_id"],
                )
            )
        return {
            "sources": sources,
            "documents": documents,
            "documents_truncated": len(docs) > SAMPLE_DOCUMENTS,
            "next_actions": actions,
        }

    def get_document(
        self,
        ctx: Context,
        document_id: Annotated[str, Field(description="A document_id from a hit or list_sources")],
    ) -> JSON:
        user_id = self.identity(ctx)
        out = views.document_view(self.shelf.document(document_id, user_id))
        try:
            out["job"] = views.job(self.shelf.job(document_id, user_id))
        except NotFound:  # it came from a source: no ingest job
            out["job"] = None
        actions = [
            _action(
                "get_context",
                f"Read the section {' > '.join(s['heading_path']) or '(top)'}",
                chunk_id=s["chunk_id"],
                mode="parent-section",
            )
            for s in out["sections"][:3]
        ]
        actions += [
            _action(
                "get_document",
                f"Open {b['title']}, which links here",
                document_id=b["document_id"],
            )
            for b in out["backlinks"][:2]
        ]
        out["next_actions"] = actions
        return out

    def ask(
        self,
        ctx: Context,
        question: Annotated[str, Field(description="A question about the user's documents")],
        limit: Annotated[int, Field(ge=1, le=20, description="Hits to answer from")] = 5,
    ) -> JSON:
        out = views.answer(self.shelf.ask(question, limit=limit, user_id=self.identity(ctx)))
        out["next_actions"] = [
            _action(
                "get_context",
                f"Check source [{c['n']}]",
                chunk_id=c["chunk_id"],
                mode="parent-section",
            )
            for c in out["citations"][:3]
        ]
        return out


def _translated(fn: Callable[..., JSON]) -> Callable[..., JSON]:
    """The tool body with docshelf's errors as tool errors ``code: message``."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> JSON:
        try:
            return fn(*args, **kwargs)
        except DocshelfError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    return tool


def build_server(shelf: Shelf, identity: Identity) -> MCPServer:
    """The MCP server over ``shelf``; ``identity`` says who calls (see ``Identity``)."""
    server: MCPServer = MCPServer(
        "docshelf",
        title="docshelf",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    tools = _Tools(shelf, identity)
    descriptions = {
        "search_documents": (
            "Search the user's documents (hybrid lexical + semantic). Returns hits with the "
            "snippet text, scores and a citation whose label you should quote "
            "(e.g. 'Raft (projects/raft.md#1)'), and next_actions."
        ),
        "get_context": (
            "Widen a search hit: its neighbouring snippets, its whole section, or the section "
            "and its neighbours. Use before answering from a hit."
        ),
        "list_sources": (
            "The folders registered in the library and a sample of its documents "
            "(ids, titles, types, status, tags)."
        ),
        "get_document": (
            "A document's record: title, path, type, tags, status, sections (with chunk ids "
            "for get_context), wiki links and backlinks, and its ingest job if uploaded."
        ),
        "ask": (
            "A grounded answer to a question, with inline [n] citations that map to the "
            "retrieved chunks (each verified); mode says whether an LLM or the extractive "
            "offline form wrote it."
        ),
    }
    for name, description in descriptions.items():
        server.add_tool(
            _translated(getattr(tools, name)),
            name=name,
            description=description,
            annotations=_READ_ONLY,
        )
    return server


def local_admin(ctx: Context) -> None:
    """The stdio identity: the local admin, as the CLI acts (every document is visible)."""
    return None


def run_stdio(shelf: Shelf) -> None:
    """Serve ``shelf`` over stdin/stdout until the client closes the pipe."""
    build_server(shelf, local_admin).run("stdio")
