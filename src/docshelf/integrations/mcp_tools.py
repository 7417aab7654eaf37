"""The MCP tools' bodies: parse nothing (the SDK validated the arguments against the
signatures here, whose types and descriptions are the tools' schemas: ``mcp_schemas.py``),
call the shelf, shape the result (``mcp_render.py``). docshelf's errors become tool
errors naming their code (``translated``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

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
    NotebookArg,
    SearchFiltersArg,
)
from docshelf.model import Chunk, Citation
from docshelf.search.filters import SearchMode
from docshelf.shelf import Shelf

if TYPE_CHECKING:
    from docshelf.search.results import SearchResult

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
        notebook: NotebookArg = None,
    ) -> JSON:
        user_id = self.identity(ctx)
        result = self.shelf.search(
            query,
            limit=limit,
            mode=mode,
            filters=(filters or SearchFiltersArg()).to_search_filters(self.shelf.taxonomy),
            user_id=user_id,
            notebook=notebook,
        )
        head: JSON = {"query": result.query, "mode": result.mode}
        if result.notice:
            head["notice"] = result.notice
        hits = [render.hit(h) for h in result.hits]
        for shown in range(len(hits), 0, -1):  # as many whole hits as fit, in rank order
            out = self._search_page(head, hits, result, query, shown, max_chars)
            if render.size(out) <= max_chars:
                return out
        if not hits:
            return self._search_page(head, hits, result, query, 0, max_chars)
        # The top hit alone does not fit: its text is cut to fit, and the rest says less
        # until the text has half the room.
        for lean in range(1, 4):
            out = self._search_page(head, hits, result, query, 1, max_chars, lean)
            room = max_chars - render.size(out)
            if room >= max_chars / 2:
                break
        out["hits"][0]["text"] = render.cut(hits[0]["text"], room)
        return out

    @staticmethod
    def _search_page(
        head: JSON,
        hits: list[JSON],
        result: SearchResult,
        query: str,
        shown: int,
        max_chars: int,
        lean: int = 0,
    ) -> JSON:
        """The result with the first ``shown`` hits. A ``lean`` one has the top hit alone,
        its text left empty for the caller to cut to fit, and leaves out, one more each
        step: (1) the label in the actions' descriptions, (2) the hint and the get_document
        action, (3) the citation but its label."""
        out: JSON = {**head, "hits": hits[:shown]}
        if lean:
            out["hits"] = [{**hits[0], "text": ""}]
        if lean >= 3:
            out["hits"][0]["citation"] = render.label_only(result.hits[0].citation, max_chars)
        if shown < len(hits) or lean:
            out["truncated"] = {
                "max_chars": max_chars,
                "hits_omitted": len(hits) - shown,
                "texts_cut": int(lean > 0),
            }
            if lean < 2:
                out["truncated"]["hint"] = render.MORE_HITS
            if lean >= 3:
                out["truncated"]["citations_as_labels"] = True
        actions = []
        for hit in result.hits[: min(shown, 2)]:
            actions.append(
                render.action(
                    "get_context",
                    "Read the section around the top hit"
                    if lean
                    else f"Read the section around {hit.citation.label}",
                    chunk_id=hit.chunk.id,
                    mode="parent-section",
                )
            )
        if result.hits and lean < 2:
            actions.append(
                render.action(
                    "get_document",
                    "See the top hit's document: sections, tags, links",
                    document_id=result.hits[0].document.id,
                )
            )
        elif not result.hits:
            actions.append(render.action("list_sources", "See what the library holds"))
            if result.mode != "lexical":
                actions.append(
                    render.action(
                        "search_documents", "Try exact words only", query=query, mode="lexical"
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
                "(the section the hit is in, bounded around it), section-neighborhood "
                "(with the sections beside it)"
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
        notebook: NotebookArg = None,
    ) -> JSON:
        result = self.shelf.context(
            chunk_id, mode, window, user_id=self.identity(ctx), anchor=anchor, notebook=notebook
        )
        page = ContextPages(
            result.chunk_id,
            result.mode,
            result.text,
            result.chunks,
            result.citation,
            max_chars,
            anchor,
        )
        offset = min(offset, len(page.text))
        for lean in range(LEANEST + 1):  # the envelope shrinks until the text has the room
            end = page.fit(offset, lean)
            if end == len(page.text) or render.text_size(page.text[offset:end]) >= max_chars / 2:
                break
        return page.shape(offset, end, lean)

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
        if view.get("ocr_pages"):  # pages (or an image) whose text OCR read
            out["ocr_pages"] = view["ocr_pages"]
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
        omitted: dict[str, int] = {}
        for key in ("links", "backlinks", "key_claims", "sections"):  # shortened in this order
            while out[key]:
                over = render.size(self._document_page(out, omitted, max_chars)) - max_chars
                if over <= 0:
                    break
                while out[key] and over > 0:  # the last entries, as many as the overflow
                    over -= render.size(out[key].pop()) + 1
                    omitted[key] = omitted.get(key, 0) + 1
        return self._document_page(out, omitted, max_chars)

    @staticmethod
    def _document_page(base: JSON, omitted: dict[str, int], max_chars: int) -> JSON:
        out = dict(base)
        if omitted:
            out["truncated"] = {
                "max_chars": max_chars,
                "omitted": dict(omitted),
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
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
        notebook: NotebookArg = None,
        conversation: Annotated[
            str | None,
            Field(
                description="A turn of this conversation ('new' starts one; the result gives "
                "its id): a follow-up is searched with the questions before it",
                max_length=100,
            ),
        ] = None,
    ) -> JSON:
        answer = self.shelf.ask(
            question,
            limit=limit,
            user_id=self.identity(ctx),
            notebook=notebook,
            conversation=conversation,
        )

        def shaped(text: str, citations: list[JSON], lean: bool) -> JSON:
            """The answer as far as ``text`` (what cites ``citations`` only); ``lean``: the
            citations as their labels."""
            out: JSON = {
                "question": answer.question,
                "answer": text,
                "mode": answer.mode,
                "answered": answer.answered,  # False: no passage answers; the closest cited
                "citations": citations,
            }
            if answer.conversation:
                out["conversation"] = answer.conversation
            if answer.notice:
                out["notice"] = answer.notice
            if len(citations) < len(answer.citations) or text != answer.answer or lean:
                out["truncated"] = {
                    "max_chars": max_chars,
                    "citations_omitted": len(answer.citations) - len(citations),
                    "hint": "Raise max_chars for the whole answer, or check a source "
                    "with get_context",
                }
                if lean:
                    out["truncated"]["citations_as_labels"] = True
            out["next_actions"] = [
                render.action(
                    "get_context",
                    f"Check source [{c['n']}]",
                    chunk_id=c["chunk_id"],
                    mode="parent-section",
                )
                for c in citations[:3]
            ]
            return out

        fewest = min(len(answer.citations), 1)
        for lean in (False, True):  # whole citations, else their labels alone
            citations = [
                {
                    "n": c.n,
                    "chunk_id": c.chunk_id,
                    "citation": render.label_only(c.citation, max_chars)
                    if lean
                    else render.citation(c.citation),
                }
                for c in answer.citations
            ]
            for kept in range(len(citations), fewest - 1, -1):  # sources from the last
                text = render.citing_only(answer.answer, {c.n for c in answer.citations[kept:]})
                out = shaped(text, citations[:kept], lean)
                if render.size(out) <= max_chars:
                    return out
        # the first source leaves too little room for what cites it: that text cut to fit
        text = render.citing_only(answer.answer, {c.n for c in answer.citations[fewest:]})
        out = shaped("", citations[:fewest], lean=True)
        out["answer"] = render.cut(text, max_chars - render.size(out))
        return out

    def list_notebooks(self, ctx: Context, max_chars: MaxChars = DEFAULT_MAX_CHARS) -> JSON:
        notebooks = self.shelf.notebooks
        reader = notebooks.reader(self.identity(ctx))
        found = [views.notebook(n, reader) for n in notebooks.list(reader)]
        for shown in range(len(found), -1, -1):  # the last ones left out to fit
            out: JSON = {"notebooks": found[:shown]}
            if shown < len(found):
                out["truncated"] = {"max_chars": max_chars, "notebooks_omitted": len(found) - shown}
            out["next_actions"] = [
                render.action(
                    "search_documents", f"Search within {n['name']}", notebook=n["notebook_id"]
                )
                for n in found[: min(shown, 3)]
            ]
            if render.size(out) <= max_chars:
                break
        return out


LEANEST = 2  # ContextPages.shape: how much of the envelope a page may leave out
WIDER = {"snippet-window": "parent-section", "parent-section": "section-neighborhood"}
MIN_PAGE = 200  # characters a page gives when not even a word fits beside its envelope


@dataclass
class ContextPages:
    """``get_context``'s text read page by page within ``max_chars``: each page the text
    from an offset, as much as fits beside what the page says about it (its envelope)."""

    chunk_id: str  # what was asked for: the hit's chunk, in this mode
    mode: str
    text: str  # the context's text: its chunks', joined
    chunks: list[Chunk]
    citation: Citation
    max_chars: int
    anchor: int | None  # the caller's: the pages that read on cite the same heading

    def __post_init__(self) -> None:
        self.spans = render.spans(self.text, [c.text for c in self.chunks])

    def fit(self, offset: int, lean: int) -> int:
        """Where the page from ``offset`` ends: the rest of the text when it fits, else
        the most that fits (cut at a word boundary) beside the envelope of a cut page —
        which depends on where it ends (the chunks on it, the offsets it names), so
        fitted again until it holds."""
        total = len(self.text)
        if offset >= total or render.size(self.shape(offset, total, lean)) <= self.max_chars:
            return total
        end = total - 1  # a cut page
        while True:
            room = self.max_chars - render.size(self.shape(offset, end, lean, text=""))
            fitted = offset + len(render.fit_text(self.text[offset:end], room))
            if fitted == offset:  # not even a word fits beside the envelope: read on anyway
                return max(min(offset + MIN_PAGE, end), offset + 1)
            if fitted >= end:
                return end
            end = fitted

    def shape(self, offset: int, end: int, lean: int, text: str | None = None) -> JSON:
        """The page ``[offset, end)``. One of a text read in pages may be ``lean`` (``fit``
        decides): (1) without the chunk list and the get_document action, (2) with only
        the citation's label, the text, ``truncated`` and the action that reads on (whose
        arguments name the chunk and the mode)."""
        total = len(self.text)
        cut_page = end < total
        lean = lean if offset or cut_page else 0  # the whole text has the whole envelope
        out: JSON = {
            "chunk_id": self.chunk_id,
            "mode": self.mode,
            "citation": render.citation(self.citation),
        }
        if lean < 1:  # the pieces of this text, by id: the text comes once
            out["chunks"] = [
                {"chunk_id": c.id, "heading_path": list(c.heading_path)}
                for c, span in zip(self.chunks, self.spans, strict=True)
                if span is None or (span[0] < end and span[1] > offset) or span[0] == offset
            ]
        out["document_id"] = self.chunks[0].document_id if self.chunks else None
        if lean >= 2:
            out = {"citation": render.label_only(self.citation, self.max_chars)}
        out["text"] = self.text[offset:end] if text is None else text
        actions = []
        if offset or cut_page:
            out["truncated"] = {"offset": offset, "shown": end - offset, "total_chars": total}
            if lean >= 2:
                out["truncated"]["citations_as_labels"] = True
            if cut_page:
                out["truncated"]["next_offset"] = end
                more = {"anchor": self.anchor} if self.anchor is not None else {}
                actions.append(
                    render.action(
                        "get_context",
                        "Read on",
                        chunk_id=self.chunk_id,
                        mode=self.mode,
                        offset=end,
                        **more,
                    )
                )
        elif self.mode in WIDER:
            actions.append(
                render.action(
                    "get_context",
                    "Read more around it",
                    chunk_id=self.chunk_id,
                    mode=WIDER[self.mode],
                )
            )
        if out.get("document_id") and lean < 1:
            actions.append(
                render.action(
                    "get_document", "See the whole document", document_id=out["document_id"]
                )
            )
        out["next_actions"] = actions
        return out


def translated(fn: Callable[..., JSON]) -> Callable[..., JSON]:
    """The tool body as the server calls it: docshelf's errors as tool errors
    ``code: message``, and the result within its ``max_chars`` whatever values it holds
    (``render.bounded``: the last word on the budget, after the body's own shaping)."""

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> JSON:
        try:
            out = fn(*args, **kwargs)
        except DocshelfError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from None
        return render.bounded(out, kwargs.get("max_chars", DEFAULT_MAX_CHARS))

    return tool
