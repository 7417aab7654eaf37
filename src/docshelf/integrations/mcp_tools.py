"""The MCP tools' bodies: parse nothing (the SDK validated the arguments against the
signatures here, whose types and descriptions are the tools' schemas: ``mcp_schemas.py``),
call the shelf, shape the result (``mcp_render.py``). docshelf's errors become tool
errors naming their code (``translated``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from docshelf import views
from docshelf.errors import DocshelfError, NotFound
from docshelf.integrations import mcp_render as render
from docshelf.integrations.mcp_schemas import (
    DEFAULT_DOCUMENTS,
    DEFAULT_MAX_CHARS,
    MAX_DOCUMENTS,
    MAX_HITS,
    ContextMode,
    MaxChars,
    SearchFiltersArg,
)
from docshelf.search.filters import SearchMode
from docshelf.shelf import Shelf

JSON = dict[str, Any]
# Who calls a tool: a user id, or None for the local admin. May raise ToolError.
Identity = Callable[[Context], str | None]


class Tools:
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
        render.fit_hits(out, [render.hit(h) for h in result.hits], max_chars)
        shown = {h["chunk_id"] for h in out["hits"]}
        actions = []
        for hit in [h for h in result.hits if h.chunk.id in shown][:2]:
            actions.append(
                render.action(
                    "get_context",
                    f"Read the section around {hit.citation.label}",
                    chunk_id=hit.chunk.id,
                    mode="parent-section",
                )
            )
        if result.hits:
            top = result.hits[0]
            actions.append(
                render.action(
                    "get_document",
                    "See the top hit's document: sections, tags, links",
                    document_id=top.document.id,
                )
            )
        else:
            actions.append(render.action("list_sources", "See what the library holds"))
            if result.mode != "lexical":
                actions.append(
                    render.action(
                        "search_documents",
                        "Try exact words only",
                        query=query,
                        mode="lexical",
                    )
                )
        out["next_actions"] = actions
        while render.size(out) > max_chars and len(out["hits"]) > 1:  # the actions took the room
            out["hits"].pop()
            notes = out.setdefault(
                "truncated", {"max_chars": max_chars, "texts_cut": 0, "hint": render.MORE_HITS}
            )
            notes["hits_omitted"] = len(result.hits) - len(out["hits"])
        overflow = render.size(out) - max_chars
        if overflow > 0 and out["hits"]:  # one hit left, still too long: shorten its text
            top_hit = out["hits"][0]
            top_hit["text"] = render.cut(
                top_hit["text"], max(len(top_hit["text"]) - overflow - 20, 0)
            )
            notes = out.setdefault(
                "truncated", {"max_chars": max_chars, "hits_omitted": 0, "hint": render.MORE_HITS}
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
            "citation": render.citation(result.citation),
            # the pieces joined in text, by id only: the text comes once
            "chunks": [
                {"chunk_id": c.id, "heading_path": list(c.heading_path)} for c in result.chunks
            ],
            "document_id": result.chunks[0].document_id if result.chunks else None,
        }
        room = max(max_chars - render.size(out) - 600, 200)  # 600: next actions and notes
        while True:
            shaped = self._context_page(out, result.text, offset, room, chunk_id, mode)
            overflow = render.size(shaped) - max_chars
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
                    render.action(
                        "get_context",
                        "Read on from where this text stops",
                        chunk_id=chunk_id,
                        mode=mode,
                        offset=end,
                    )
                )
        elif mode in wider:
            actions.append(
                render.action(
                    "get_context", "Read more around it", chunk_id=chunk_id, mode=wider[mode]
                )
            )
        if base["document_id"]:
            actions.append(
                render.action(
                    "get_document", "See the whole document", document_id=base["document_id"]
                )
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
        briefs = [render.document_brief(d) for d in docs[:limit]]
        shown = len(briefs)
        out = self._sources_page(sources, briefs, shown, len(docs) > limit, offset, max_chars)
        while render.size(out) > max_chars and shown > 1:  # fewer documents until it fits
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
            render.action(
                "search_documents",
                f"Search only {s['path']}",
                query="<your question>",
                filters={"source": s["id"]},
            )
            for s in sources[:3]
        ]
        if more:
            actions.append(
                render.action("list_sources", "The next page of documents", offset=offset + shown)
            )
        if documents:
            actions.append(
                render.action(
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
        for key in render.DOCUMENT_FIELDS:
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
        cut = render.fit_lists(out, ("links", "backlinks", "key_claims", "sections"), max_chars)
        if cut:
            out["truncated"] = {
                "max_chars": max_chars,
                "omitted": cut,
                "hint": "Raise max_chars to see every entry",
            }
        actions = [
            render.action(
                "get_context",
                f"Read the section {' > '.join(x['heading_path']) or '(top)'}",
                chunk_id=x["chunk_id"],
                mode="parent-section",
            )
            for x in out["sections"][:3]
        ]
        actions += [
            render.action(
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
            render.action(
                "get_context",
                f"Check source [{c['n']}]",
                chunk_id=c["chunk_id"],
                mode="parent-section",
            )
            for c in out["citations"][:3]
        ]
        return out


def translated(fn: Callable[..., JSON]) -> Callable[..., JSON]:
    """The tool body with docshelf's errors as tool errors ``code: message``."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> JSON:
        try:
            return fn(*args, **kwargs)
        except DocshelfError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None

    return tool
