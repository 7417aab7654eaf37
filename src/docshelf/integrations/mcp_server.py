"""The MCP server: the library as tools an agent can call to ground its answers.

    docshelf mcp      # stdio, for a local agent; acts as the local admin, like the CLI
    docshelf serve    # also streamable HTTP at /mcp, behind the same bearer tokens

Tools (all read-only): ``search_documents``, ``get_context``, ``list_sources``,
``get_document``, ``ask``. Results are made for a model's context window: compact
JSON (no indentation), only what an agent uses (no hashes, timestamps or owner
ids), each text once, and at most ``max_chars`` characters per result
(``DEFAULT_MAX_CHARS`` unless asked; a result cut to fit says so under
``truncated`` and names the call that reads the rest in ``next_actions``). Every
hit and context carries its ``citation.label`` to quote. docshelf's errors, and
arguments the schema refuses, become tool errors whose text starts with the error
code (``not_found: No chunk 'chunk_x'``, ``invalid_input: mode must be one of …``).
The agent skill file (docs/agents/docshelf-skill.md) says how to use them; it is
also served as the ``docshelf://skill`` resource.

The tools are one thin face over :class:`~docshelf.shelf.Shelf`; who is asking
is decided by an ``Identity`` function: nobody (``None``, the local admin) over
stdio, the token's user over HTTP (see ``docshelf.api.mcp``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from docshelf import __version__, views
from docshelf.errors import DocshelfError, NotFound
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.model import Citation, Document, Hit
from docshelf.search.filters import FILTER_KEYS, Filters, SearchFilters, SearchMode
from docshelf.shelf import Shelf

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MAX_HITS",
    "Identity",
    "SearchFiltersArg",
    "build_server",
    "compact_json",
    "run_stdio",
]

JSON = dict[str, Any]
# Who calls a tool: a user id, or None for the local admin. May raise ToolError.
Identity = Callable[[Context], str | None]

INSTRUCTIONS = (
    "docshelf searches the user's own documents (notes, papers, manuals) and cites every hit. "
    "Call search_documents first; quote a hit's citation.label when you use it; call get_context "
    "with a hit's chunk_id to read the surrounding section before answering from it. "
    "Every result fits in max_chars characters; one cut to fit has a 'truncated' field. "
    "Results list next_actions: tool calls worth making next. "
    "The resource docshelf://skill explains the whole workflow."
)
DEFAULT_MAX_CHARS = 8000  # about 2,000 tokens: a result never floods the context window
MIN_MAX_CHARS, MAX_MAX_CHARS = 1000, 60000
MAX_HITS = 25  # more hits than this rarely help an agent, and cannot fit a budget anyway
DEFAULT_DOCUMENTS, MAX_DOCUMENTS = 50, 200  # list_sources paging
SKILL_FILE = Path(__file__).resolve().parents[3] / "docs" / "agents" / "docshelf-skill.md"
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


MaxChars = Annotated[
    int,
    Field(
        ge=MIN_MAX_CHARS,
        le=MAX_MAX_CHARS,
        description=f"At most this many characters in the result (default {DEFAULT_MAX_CHARS})",
    ),
]


def _action(tool: str, description: str, **arguments: Any) -> JSON:
    return {"tool": tool, "arguments": arguments, "description": description}


def compact_json(value: Any) -> str:
    """The result as an agent reads it: JSON without indentation or padding."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _size(value: Any) -> int:
    return len(compact_json(value))


def _cut(text: str, chars: int) -> str:
    """``text`` cut to at most ``chars`` characters, at a word boundary when one is near."""
    if len(text) <= chars:
        return text
    head = text[: max(chars - 1, 0)]
    space = head.rfind(" ")
    if space > chars * 0.8:
        head = head[:space]
    return head.rstrip() + "…"


def _citation(c: Citation) -> JSON:
    """The citation an agent quotes and opens: label, path, headings, pages if any."""
    out: JSON = {"label": c.label, "path": c.path, "heading_path": list(c.heading_path)}
    out["anchor"] = c.anchor  # get_context(chunk_id, anchor=…) cites the same heading
    if c.page_start is not None:
        out["page_start"] = c.page_start
        out["page_end"] = c.page_end
    return out


def _hit(h: Hit) -> JSON:
    return {
        "chunk_id": h.chunk.id,
        "document_id": h.document.id,
        "score": round(h.score, 4),
        "citation": _citation(h.citation),
        "text": h.chunk.text,
    }


_MORE_HITS = (
    "Raise max_chars, narrow the query or its filters, or read a hit whole with get_context"
)


def _fit_hits(out: JSON, hits: list[JSON], max_chars: int) -> None:
    """Put as many whole hits into ``out`` as ``max_chars`` allows (the first always,
    its text cut if need be); what was left out is said under ``truncated``."""
    kept: list[JSON] = []
    cut_texts = 0
    for h in hits:
        room = max_chars - _size({**out, "hits": [*kept, h]}) - 200  # 200: the notes below
        if room >= 0:
            kept.append(h)
            continue
        if not kept:  # the first hit always comes, its text shortened
            text = h["text"]
            keep = max(len(text) + room, 200)
            kept.append({**h, "text": _cut(text, keep)})
            cut_texts = 1
        break
    out["hits"] = kept
    omitted = len(hits) - len(kept)
    if omitted or cut_texts:
        out["truncated"] = {
            "max_chars": max_chars,
            "hits_omitted": omitted,
            "texts_cut": cut_texts,
            "hint": _MORE_HITS,
        }


# What get_document shows of the record (no hashes, timestamps or owner ids).
_DOCUMENT_FIELDS = (
    "title",
    "path",
    "file_type",
    "document_type",
    "category",
    "summary",
    "status",
    "tags",
    "concept_ids",
    "page_count",
)


def _document_brief(d: Document) -> JSON:
    out: JSON = {
        "document_id": d.id,
        "title": d.title,
        "path": d.path,
        "file_type": d.file_type,
        "status": d.status,
        "tags": list(d.tags),
    }
    if d.document_type:
        out["document_type"] = d.document_type
    return out


def _fit_lists(out: JSON, keys: tuple[str, ...], max_chars: int) -> dict[str, int]:
    """Shorten the lists under ``keys`` (the first named first, from their ends) until
    ``out`` fits ``max_chars`` with room for notes; how many entries each lost."""
    omitted: dict[str, int] = {}
    for key in keys:
        while out[key] and _size(out) + 600 > max_chars:
            out[key].pop()
            omitted[key] = omitted.get(key, 0) + 1
    return omitted


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
        limit: Annotated[int, Field(ge=1, le=MAX_HITS, description="Number of hits")] = 8,
        mode: Annotated[
            SearchMode, Field(description="hybrid (default), lexical (exact words) or vector")
        ] = "hybrid",
        filters: Annotated[
            SearchFiltersArg | None, Field(description="Optional metadata filters")
        ] = None,
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> JSON:
        user_id = self.identity(ctx)
        result = self.shelf.search(
            query,
            limit=limit,
            mode=mode,
            filters=(filters or SearchFiltersArg()).to_search_filters(self.shelf.taxonomy),
            user_id=user_id,
        )
        out: JSON = {"query": result.query, "mode": result.mode}
        if result.notice:
            out["notice"] = result.notice
        _fit_hits(out, [_hit(h) for h in result.hits], max_chars)
        shown = {h["chunk_id"] for h in out["hits"]}
        actions = []
        for hit in [h for h in result.hits if h.chunk.id in shown][:2]:
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
        while _size(out) > max_chars and len(out["hits"]) > 1:  # the actions took the room
            out["hits"].pop()
            notes = out.setdefault(
                "truncated", {"max_chars": max_chars, "texts_cut": 0, "hint": _MORE_HITS}
            )
            notes["hits_omitted"] = len(result.hits) - len(out["hits"])
        overflow = _size(out) - max_chars
        if overflow > 0 and out["hits"]:  # one hit left, still too long: shorten its text
            top_hit = out["hits"][0]
            top_hit["text"] = _cut(top_hit["text"], max(len(top_hit["text"]) - overflow - 20, 0))
            notes = out.setdefault(
                "truncated", {"max_chars": max_chars, "hits_omitted": 0, "hint": _MORE_HITS}
            )
            notes["texts_cut"] = 1
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
        offset: Annotated[
            int,
            Field(ge=0, description="Start the text here (a cut result's truncated.next_offset)"),
        ] = 0,
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
        anchor: Annotated[
            int | None,
            Field(ge=0, description="The hit's citation.anchor: cited under the same heading"),
        ] = None,
    ) -> JSON:
        result = self.shelf.context(
            chunk_id, mode, window, user_id=self.identity(ctx), anchor=anchor
        )
        out: JSON = {
            "chunk_id": result.chunk_id,
            "mode": result.mode,
            "citation": _citation(result.citation),
            # the pieces joined in text, by id only: the text comes once
            "chunks": [
                {"chunk_id": c.id, "heading_path": list(c.heading_path)} for c in result.chunks
            ],
            "document_id": result.chunks[0].document_id if result.chunks else None,
        }
        room = max(max_chars - _size(out) - 600, 200)  # 600: next actions and notes
        while True:
            shaped = self._context_page(out, result.text, offset, room, chunk_id, mode)
            overflow = _size(shaped) - max_chars
            if overflow <= 0 or room <= 200:
                return shaped
            room = max(room - overflow - 20, 200)  # escapes (newlines, quotes) took more

    @staticmethod
    def _context_page(
        base: JSON, full: str, offset: int, room: int, chunk_id: str, mode: str
    ) -> JSON:
        out = dict(base)
        total = len(full)
        text = full[offset : offset + room]
        end = offset + len(text)
        if end < total:  # cut at a word boundary, and say where to go on
            space = text.rfind(" ")
            if space > len(text) * 0.8:
                text, end = text[:space], offset + space
        out["text"] = text
        wider = {"snippet-window": "parent-section", "parent-section": "section-neighborhood"}
        actions = []
        if offset or end < total:
            out["truncated"] = {"offset": offset, "shown": end - offset, "total_chars": total}
            if end < total:
                out["truncated"]["next_offset"] = end
                actions.append(
                    _action(
                        "get_context",
                        "Read on from where this text stops",
                        chunk_id=chunk_id,
                        mode=mode,
                        offset=end,
                    )
                )
        elif mode in wider:
            actions.append(
                _action("get_context", "Read more around it", chunk_id=chunk_id, mode=wider[mode])
            )
        if base["document_id"]:
            actions.append(
                _action("get_document", "See the whole document", document_id=base["document_id"])
            )
        out["next_actions"] = actions
        return out

    def list_sources(
        self,
        ctx: Context,
        offset: Annotated[int, Field(ge=0, description="Skip this many documents")] = 0,
        limit: Annotated[
            int, Field(ge=1, le=MAX_DOCUMENTS, description="Documents on this page")
        ] = DEFAULT_DOCUMENTS,
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> JSON:
        user_id = self.identity(ctx)
        sources = [
            {"id": s.id, "path": s.path, "kind": s.kind}
            for s in self.shelf.sources()
            if user_id is None or s.user_id == user_id
        ]
        docs = self.shelf.documents(user_id=user_id, limit=limit + 1, offset=offset)
        briefs = [_document_brief(d) for d in docs[:limit]]
        shown = len(briefs)
        out = self._sources_page(sources, briefs, shown, len(docs) > limit, offset, max_chars)
        while _size(out) > max_chars and shown > 1:  # fewer documents until it fits
            shown -= 1
            out = self._sources_page(sources, briefs, shown, True, offset, max_chars)
        return out

    @staticmethod
    def _sources_page(
        sources: list[JSON],
        briefs: list[JSON],
        shown: int,
        more: bool,
        offset: int,
        max_chars: int,
    ) -> JSON:
        documents = briefs[:shown]
        more = more or shown < len(briefs)
        out: JSON = {
            "sources": sources,
            "documents": documents,
            "offset": offset,
            "next_offset": offset + shown if more else None,
        }
        if shown < len(briefs):
            out["truncated"] = {
                "max_chars": max_chars,
                "documents_omitted": len(briefs) - shown,
                "hint": "Page on with next_offset, or raise max_chars",
            }
        actions = [
            _action(
                "search_documents",
                f"Search only {s['path']}",
                query="<your question>",
                filters={"source": s["id"]},
            )
            for s in sources[:3]
        ]
        if more:
            actions.append(
                _action("list_sources", "The next page of documents", offset=offset + shown)
            )
        if documents:
            actions.append(
                _action(
                    "get_document", "Look at a document", document_id=documents[0]["document_id"]
                )
            )
        out["next_actions"] = actions
        return out

    def get_document(
        self,
        ctx: Context,
        document_id: Annotated[str, Field(description="A document_id from a hit or list_sources")],
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> JSON:
        user_id = self.identity(ctx)
        view = views.document_view(self.shelf.document(document_id, user_id))
        out: JSON = {"document_id": view["id"]}
        for key in _DOCUMENT_FIELDS:
            if view.get(key) not in (None, [], ""):
                out[key] = view[key]
        out["sections"] = [
            {"chunk_id": x["chunk_id"], "heading_path": x["heading_path"]} for x in view["sections"]
        ]
        links: dict[str, JSON] = {}  # each target once, however (alias, heading) it is linked
        for link in view["links"]:
            seen = links.setdefault(link["target"], {"target": link["target"], "document_ids": []})
            seen["document_ids"] = sorted({*seen["document_ids"], *link["document_ids"]})
        out["links"] = list(links.values())
        out["backlinks"] = [
            {"document_id": b["document_id"], "title": b["title"]} for b in view["backlinks"]
        ]
        out["key_claims"] = [
            {"n": x["n"], "text": x["text"], "chunk_ids": x["chunk_ids"]}
            for x in view["distillates"]
        ]
        try:
            job = self.shelf.job(document_id, user_id)
            out["job"] = {"stage": job.stage.value, "status": job.status, "error": job.last_error}
        except NotFound:  # it came from a source: no ingest job
            out["job"] = None
        cut = _fit_lists(out, ("links", "backlinks", "key_claims", "sections"), max_chars)
        if cut:
            out["truncated"] = {
                "max_chars": max_chars,
                "omitted": cut,
                "hint": "Raise max_chars to see every entry",
            }
        actions = [
            _action(
                "get_context",
                f"Read the section {' > '.join(x['heading_path']) or '(top)'}",
                chunk_id=x["chunk_id"],
                mode="parent-section",
            )
            for x in out["sections"][:3]
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


def _subclasses(cls: type[DocshelfError]) -> list[type[DocshelfError]]:
    found: list[type[DocshelfError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


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


_CODES = {DocshelfError.code, *(c.code for c in _subclasses(DocshelfError))}


class _Server(MCPServer):
    """The SDK's server with docshelf's two conventions for every tool result: the text
    an agent reads is compact JSON, and refused arguments are a short ``invalid_input``."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(schema_message(exc.__cause__)) from None
            # the SDK's "Error executing tool NAME: " before our "code: message"
            message = str(exc).removeprefix(f"Error executing tool {name}: ")
            if message != str(exc) and message.split(":", 1)[0] in _CODES:
                raise ToolError(message) from None
            raise
        if isinstance(result, CallToolResult) and result.structured_content is not None:
            text = TextContent(type="text", text=compact_json(result.structured_content))
            return result.model_copy(update={"content": [text]})
        return result


def build_server(shelf: Shelf, identity: Identity) -> MCPServer:
    """The MCP server over ``shelf``; ``identity`` says who calls (see ``Identity``)."""
    server: MCPServer = _Server(
        "docshelf",
        title="docshelf",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    tools = _Tools(shelf, identity)
    budget = f" At most max_chars characters (default {DEFAULT_MAX_CHARS})."
    descriptions = {
        "search_documents": (
            "Search the user's documents (hybrid lexical + semantic). Returns hits with the "
            "snippet text, a score and a citation whose label you should quote "
            "(e.g. 'Raft (projects/raft.md#1)'), and next_actions. Filters: "
            f"{', '.join(FILTER_KEYS)}." + budget
        ),
        "get_context": (
            "Widen a search hit: its neighbouring snippets, its whole section, or the section "
            "and its neighbours. Use before answering from a hit. A long text is cut to fit; "
            "truncated.next_offset reads on." + budget
        ),
        "list_sources": (
            "The folders registered in the library and a page of its documents "
            "(ids, titles, types, status, tags); page with offset and limit." + budget
        ),
        "get_document": (
            "A document's record: title, path, types, summary, tags, concepts, sections (with "
            "chunk ids for get_context), wiki links (each once) and backlinks, key claims, and "
            "its ingest job if uploaded." + budget
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

    @server.resource(
        "docshelf://skill",
        name="docshelf-skill",
        title="How to use docshelf as an agent",
        description="Search, expand and cite with docshelf: the workflow, budgets, errors",
        mime_type="text/markdown",
    )
    def skill() -> str:
        return skill_text()

    return server


def skill_text() -> str:
    """The agent skill file (docs/agents/docshelf-skill.md) when the docs are beside the
    code (a checkout or an editable install), else the server's short instructions."""
    try:
        return SKILL_FILE.read_text(encoding="utf-8")
    except OSError:
        return INSTRUCTIONS


def local_admin(ctx: Context) -> None:
    """The stdio identity: the local admin, as the CLI acts (every document is visible)."""
    return None


def run_stdio(shelf: Shelf) -> None:
    """Serve ``shelf`` over stdin/stdout until the client closes the pipe."""
    build_server(shelf, local_admin).run("stdio")
