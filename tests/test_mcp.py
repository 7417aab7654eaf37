"""The MCP server, driven by the MCP SDK's own client: over stdio (``docshelf mcp`` in a
real subprocess, acting as the local admin), over streamable HTTP (``/mcp`` in the API
served by uvicorn, behind the bearer tokens, scoped to the caller), and in memory for the
property test of the budgets."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import docshelf
from docshelf.api import create_app
from docshelf.integrations.mcp_schemas import MAX_MAX_CHARS, MIN_MAX_CHARS
from docshelf.integrations.mcp_server import (
    DEFAULT_MAX_CHARS,
    MAX_HITS,
    build_server,
    local_admin,
)
from docshelf.model import User
from docshelf.search import spans
from docshelf.search.filters import FILTER_KEYS
from docshelf.search.results import CONTEXT_MODES
from docshelf.shelf import Shelf
from tests.live_server import serve
from tests.optional import require_module

require_module("mcp", "pip install 'docshelf[mcp]'")

import httpx2  # noqa: E402  (after the check: it comes with the mcp SDK)
from mcp import Client, ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

TOOLS = {
    "search_documents",
    "get_context",
    "list_sources",
    "get_document",
    "ask",
    "list_notebooks",
}
Session = Callable[[ClientSession], Awaitable[None]]


def run(session_body: Session, connect: Callable[[], Any], seconds: float = 30) -> None:
    """Open a client session with ``connect()`` and run ``session_body`` in it."""

    async def main() -> None:
        with anyio.fail_after(seconds):
            async with connect() as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session_body(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's JSON result; the text content an agent reads says the same."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0]
    assert text.type == "text" and json.loads(text.text) == result.structured_content
    return dict(result.structured_content)


def schema_of(tool: Any) -> dict[str, Any]:
    """A tool's arguments' schemas by name, a nested model's (``$ref``) as its properties."""
    schema = tool.input_schema
    found: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        ref = next((p["$ref"] for p in [prop, *prop.get("anyOf", [])] if "$ref" in p), None)
        if ref is not None:
            prop = schema["$defs"][ref.rsplit("/", 1)[1]]["properties"]
        found[name] = prop
    return found


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content if c.type == "text")


# -- both transports: the same library, the same client, the same answers -------------------

Prepare = Callable[[Shelf, "str | None"], None]


@contextmanager
def mcp_library(transport: str, home: Path, prepare: Prepare) -> Iterator[Callable[[], Any]]:
    """A lexical-only library made by ``prepare(shelf, user_id)``, and how to reach its MCP
    server: ``docshelf mcp`` in a subprocess over stdio (the local admin), or ``/mcp`` of
    the API served by uvicorn over streamable HTTP (a user's bearer token)."""
    with Shelf(home, embedder=None) as shelf:
        if transport == "stdio":
            prepare(shelf, None)
        else:
            user, token = shelf.create_user("agent")
            prepare(shelf, user.id)
            with serve(create_app(shelf)) as url:
                yield http_connect(url, token)
            return
    params = stdio_server(str(home))
    yield lambda: stdio_client(params)


def stdio_server(home: str) -> StdioServerParameters:
    """``docshelf mcp`` in a subprocess over the library at ``home``, lexical-only, running
    the docshelf this test imports (the SDK passes the child only a few variables)."""
    source = str(Path(docshelf.__file__).resolve().parents[1])
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docshelf.cli", "mcp"],
        env={"DOCSHELF_HOME": home, "DOCSHELF_EMBEDDER": "none", "PYTHONPATH": source},
    )


def http_connect(url: str, token: str | None) -> Callable[[], Any]:
    @asynccontextmanager
    async def connect() -> AsyncIterator[Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers) as client,
            streamable_http_client(f"{url}/mcp", http_client=client) as streams,
        ):
            yield streams

    return connect


TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


# -- stdio: `docshelf mcp` in a subprocess ---------------------------------------------------


def test_stdio_server_in_a_subprocess_searches_expands_and_lists(
    isolated_home: Path, notes: Path
) -> None:
    with Shelf(isolated_home, embedder=None) as shelf:  # a lexical-only library
        shelf.add(notes)
    params = stdio_server(str(isolated_home))

    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.annotations and t.annotations.read_only_hint for t in listed.tools)
        search = next(t for t in listed.tools if t.name == "search_documents")
        assert {"query", "limit", "mode", "filters"} <= set(search.input_schema["properties"])
        widen = next(t for t in listed.tools if t.name == "get_context")
        for bound in (spans.SECTION_CHARS, spans.NEIGHBOURHOOD_CHARS):  # says how far it goes
            assert f"up to {bound:,}" in (widen.description or "")

        found = await call(session, "search_documents", query="leader election", limit=3)
        assert found["mode"] == "lexical" and "notice" in found  # no embedder: says so
        top = found["hits"][0]
        assert top["citation"]["label"] == "Raft (projects/raft.md#1)"
        assert top["citation"]["heading_path"] == ["Raft", "Leader election"]
        assert "heartbeat" in top["text"]
        actions = found["next_actions"]
        assert actions[0] == {
            "tool": "get_context",
            "arguments": {"chunk_id": top["chunk_id"], "mode": "parent-section"},
            "description": "Read the section around Raft (projects/raft.md#1)",
        }
        assert {"tool": "get_document", "arguments": {"document_id": top["document_id"]}} in [
            {k: a[k] for k in ("tool", "arguments")} for a in actions
        ]

        filtered = await call(session, "search_documents", query="flour", filters={"type": "text"})
        assert [h["citation"]["label"] for h in filtered["hits"]] == ["todo (todo.txt#0)"]
        tagged = await call(
            session, "search_documents", query="flour", filters={"tags": ["baking"]}
        )
        assert [h["citation"]["label"] for h in tagged["hits"]] == ["Bread (cooking.md#0)"]

        context = await call(session, "get_context", chunk_id=top["chunk_id"])
        assert context["mode"] == "parent-section"
        assert "Raft is a consensus algorithm" in context["text"]
        assert context["citation"]["label"] == "Raft (projects/raft.md#1)"
        assert context["next_actions"][0]["arguments"]["mode"] == "section-neighborhood"

        sources = await call(session, "list_sources")
        assert [s["path"] for s in sources["sources"]] == [str(notes.resolve())]
        assert len(sources["documents"]) == 3 and sources["next_offset"] is None

        answered = await call(session, "ask", question="what do followers do without heartbeats?")
        assert answered["mode"] == "extractive" and answered["citations"]
        cited = answered["citations"][0]
        assert f"[{cited['n']}]" in answered["answer"]
        assert answered["next_actions"][0]["arguments"]["chunk_id"] == cited["chunk_id"]

        document = await call(session, "get_document", document_id=top["document_id"])
        assert document["title"] == "Raft" and document["job"] is None
        assert document["sections"] and document["next_actions"][0]["tool"] == "get_context"

        missing = await session.call_tool("get_context", {"chunk_id": "chunk_nope_1"})
        assert "not_found: No chunk 'chunk_nope_1'" in error_text(missing)
        bad = await session.call_tool("get_context", {"chunk_id": "x", "mode": "everything"})
        assert "mode" in error_text(bad)
        empty = await session.call_tool("search_documents", {"query": "  "})
        assert error_text(empty).endswith(
            "invalid_input: The query is empty; give some words to search for"
        )

    run(body, lambda: stdio_client(params))


PAXOS = "---\ntags: [consensus]\n---\n# Paxos\n\nAcceptors promise ballots.\n"


@TRANSPORTS
def test_search_takes_every_filter_of_the_vocabulary(
    isolated_home: Path, notes: Path, transport: str
) -> None:
    """Every filter (search/filters.py) as the CLI and HTTP have them, over both transports."""
    (notes / "paxos.md").write_text(PAXOS)  # its tag maps to distributed-systems
    os.utime(notes / "paxos.md", (1_710_000_000, 1_710_000_000))  # changed in March 2024

    def prepare(shelf: Shelf, user_id: str | None) -> None:
        shelf.add(notes, user_id=user_id)
        shelf.enrich(user_id=user_id)  # offline: each gets a document type
        assert {d.document_type for d in shelf.documents()} == {"note"}

    async def labels(session: ClientSession, query: str, **filters: Any) -> list[str]:
        found = await call(session, "search_documents", query=query, filters=filters)
        return sorted(h["citation"]["label"] for h in found["hits"])

    async def body(session: ClientSession) -> None:
        search = next(t for t in (await session.list_tools()).tools if t.name == "search_documents")
        schema = json.dumps(search.input_schema)
        assert all(f'"{key}"' in schema for key in FILTER_KEYS)

        words = "acceptors ballots flour"
        assert len(await labels(session, words)) == 3
        # a broader concept includes its narrower ones; a label works like an id
        assert await labels(session, words, concept=["computing"]) == ["Paxos (paxos.md#0)"]
        assert await labels(session, words, concept=["Food"]) == ["Bread (cooking.md#0)"]
        assert await labels(session, words, concept=["no-such-thing"]) == []
        assert await labels(session, words, type="text") == ["todo (todo.txt#0)"]
        assert await labels(session, words, type="markdown") == [
            "Bread (cooking.md#0)",
            "Paxos (paxos.md#0)",
        ]
        assert await labels(session, words, tag=["#baking"]) == ["Bread (cooking.md#0)"]
        # Issue 42: "`filters.tag` as a plain string is rejected": one string is a list of one
        assert await labels(session, words, tag="#baking") == ["Bread (cooking.md#0)"]
        assert await labels(session, words, tags="baking") == ["Bread (cooking.md#0)"]
        assert await labels(session, words, concept="Food") == ["Bread (cooking.md#0)"]
        tag_schema = schema_of(search)["filters"]["tag"]
        assert {"type": "string"} in tag_schema["anyOf"]
        assert await labels(session, words, type="markdown", concept=["food"]) == [
            "Bread (cooking.md#0)"
        ]
        bad = await session.call_tool(
            "search_documents", {"query": "flour", "filters": {"colour": "red"}}
        )
        assert error_text(bad) == (
            "invalid_input: unknown filter 'colour'; use " + ", ".join(FILTER_KEYS)
        )
        # a document type is not a file type: said so, never a silent empty result
        wrong = await session.call_tool(
            "search_documents", {"query": "flour", "filters": {"type": "note"}}
        )
        assert "use doctype:note" in error_text(wrong) and "markdown" in error_text(wrong)
        in_query = await session.call_tool("search_documents", {"query": "flour type:article"})
        assert error_text(in_query).startswith("invalid_input: Unknown file type 'article'")
        assert await labels(session, words, doctype="note") == [
            "Bread (cooking.md#0)",
            "Paxos (paxos.md#0)",
            "todo (todo.txt#0)",
        ]
        assert await labels(session, words, doctype="paper") == []
        assert await labels(session, words, date="2024") == ["Paxos (paxos.md#0)"]
        assert await labels(session, words, date="2024-04..", type="text") == ["todo (todo.txt#0)"]
        assert await labels(session, words, filetype="text") == ["todo (todo.txt#0)"]
        when = await session.call_tool(
            "search_documents", {"query": "flour", "filters": {"date": "March"}}
        )
        assert error_text(when).startswith("invalid_input: Bad date 'March'; use YYYY")

    with mcp_library(transport, isolated_home, prepare) as connect:
        run(body, connect)


LONG_WORDS = "The gossip protocol spreads updates to random peers every round. "


@TRANSPORTS
def test_results_are_compact_within_budget_and_paged(
    isolated_home: Path, notes: Path, transport: str
) -> None:
    """The budgets an agent relies on, over both transports: compact JSON, at most
    max_chars characters, the section text once and readable on with offset, no internal
    fields, list paging, refused arguments as one short line."""
    (notes / "gossip.md").write_text("# Gossip\n\n## Rounds\n\n" + LONG_WORDS * 400)
    for i in range(12):
        (notes / f"n{i:02}.md").write_text(f"# Note {i}\n\nGossip note number {i}.\n")

    def prepare(shelf: Shelf, user_id: str | None) -> None:
        shelf.add(notes, user_id=user_id)

    async def raw(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, Any]:
        result = await session.call_tool(tool, arguments)
        assert not result.is_error, result.content
        text = result.content[0]
        assert text.type == "text"
        return text.text, result.structured_content

    async def body(session: ClientSession) -> None:
        text, found = await raw(session, "search_documents", query="gossip peers", limit=25)
        assert "\n" not in text and ": " not in text[:40]  # compact, not pretty-printed
        assert len(text) <= DEFAULT_MAX_CHARS
        for noise in ("sha256", "added_at", "updated_at", "user_id", "scores"):
            assert f'"{noise}"' not in text
        small, cut = await raw(
            session, "search_documents", query="gossip peers", limit=25, max_chars=1000
        )
        assert len(small) <= 1000 and cut["truncated"]["hits_omitted"] > 0
        assert len(cut["hits"]) < len(found["hits"])
        gossip = next(h for h in found["hits"] if h["citation"]["path"].endswith("gossip.md"))

        text, context = await raw(
            session, "get_context", chunk_id=gossip["chunk_id"], max_chars=3000
        )
        assert len(text) <= 3000
        assert text.count("The gossip protocol spreads") == context["text"].count(
            "The gossip protocol spreads"
        )  # the section's text once: chunks are named, not repeated
        assert all(set(c) == {"chunk_id", "heading_path"} for c in context["chunks"])
        truncated = context["truncated"]
        assert truncated["total_chars"] > 3000 and truncated["offset"] == 0
        on = context["next_actions"][0]
        assert on["arguments"]["offset"] == truncated["next_offset"]
        pages = [context["text"]]
        offset = truncated["next_offset"]
        while offset is not None:  # read the whole section on, page by page
            text, more = await raw(
                session, "get_context", chunk_id=gossip["chunk_id"], offset=offset, max_chars=3000
            )
            assert len(text) <= 3000
            pages.append(more["text"])
            offset = more.get("truncated", {}).get("next_offset")
        assert len(pages) >= 3 and sum(map(len, pages)) == truncated["total_chars"]
        _, whole = await raw(session, "get_context", chunk_id=gossip["chunk_id"], max_chars=60000)
        assert "".join(pages) == whole["text"] and "truncated" not in whole

        text, document = await raw(session, "get_document", document_id=gossip["document_id"])
        for noise in ("sha256", "added_at", "updated_at", "source_host", "taxonomy_version"):
            assert f'"{noise}"' not in text
        assert document["title"] == "Gossip" and document["sections"][0]["chunk_id"]

        seen: list[str] = []
        offset = 0
        while offset is not None:
            _, page = await raw(session, "list_sources", offset=offset, limit=5)
            assert len(page["documents"]) <= 5
            seen += [d["document_id"] for d in page["documents"]]
            offset = page["next_offset"]
        assert len(seen) == len(set(seen)) == 16  # 3 notes, gossip, 12 small ones
        text, _ = await raw(session, "list_sources")
        assert '"added_at"' not in text and '"user_id"' not in text

        too_many = await session.call_tool("search_documents", {"query": "gossip", "limit": 100})
        assert error_text(too_many) == f"invalid_input: limit must be at most {MAX_HITS}"
        bad_mode = await session.call_tool("get_context", {"chunk_id": "x", "mode": "everything"})
        message = error_text(bad_mode)
        assert message.startswith("invalid_input: mode must be one of 'snippet-window'")
        for leak in ("pydantic", "validation error", "input_value", "type="):
            assert leak not in message
        missing = await session.call_tool("get_document", {})
        assert error_text(missing) == "invalid_input: document_id is required"

        resources = await session.list_resources()
        assert "docshelf://skill" in [str(r.uri) for r in resources.resources]
        skill = await session.read_resource("docshelf://skill")
        assert "search_documents" in skill.contents[0].text  # type: ignore[union-attr]

    with mcp_library(transport, isolated_home, prepare) as connect:
        run(body, connect, seconds=60)


# -- issue 42: the budget is the whole result; a context page is mostly text -----------------

ROUNDUP = "2021-05-29: Tricks for Mobile, Quick Capture, & Outliner Interoperability"


def roundup_notes(tmp_path: Path) -> Path:
    """A note as the issue met them in the docqa vault: a long title in a deep folder, and
    a long section under it. The folder is padded to a fixed length, so that on the code
    before the fix the calls below answered the issue's numbers exactly (where tmp_path is
    short enough to pad): "max_chars: 1000 returns 1,468 characters; paged context gives
    192 characters of text per call"."""
    base = tmp_path / ("p" * max(121 - len(str(tmp_path)) - 1, 1))
    folder = base / "notes" / "Community" / "Weekly"
    folder.mkdir(parents=True)
    (folder / f"{ROUNDUP}.md").write_text(
        f"# {ROUNDUP}\n\n## Quick Capture Tips\n\n" + LONG_WORDS * 60
    )
    return base / "notes"


async def text_of(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, Any]:
    """A tool's result as the client receives it: every text content, and the JSON."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    text = "".join(c.text for c in result.content if c.type == "text")
    assert json.loads(text) == result.structured_content
    return text, result.structured_content


@TRANSPORTS
def test_max_chars_1000_bounds_the_whole_result_and_pages_are_mostly_text(
    tmp_path: Path, isolated_home: Path, transport: str
) -> None:
    """Issue 42: "`max_chars: 1000` returns 1,468 characters" (the envelope — citation,
    next actions, notes — was left out of the budget); "paged context gives 192
    characters of text per call (~140 calls for one section)"."""
    notes = roundup_notes(tmp_path)

    def prepare(shelf: Shelf, user_id: str | None) -> None:
        shelf.add(notes, user_id=user_id)

    async def body(session: ClientSession) -> None:
        text, found = await text_of(
            session, "search_documents", query="gossip peers", max_chars=1000
        )
        assert len(text) <= 1000  # was 1,468
        top = found["hits"][0]
        assert top["citation"]["label"].startswith(ROUNDUP)  # the label whole, to quote
        assert not top["citation"]["label"].endswith("…")
        assert "gossip protocol spreads" in top["text"]

        pages: list[str] = []
        offset: int | None = 0
        while offset is not None:  # the section read on at the smallest budget
            text, page = await text_of(
                session, "get_context", chunk_id=top["chunk_id"], offset=offset, max_chars=1000
            )
            assert len(text) <= 1000
            pages.append(page["text"])
            offset = page.get("truncated", {}).get("next_offset")
            if offset is not None:  # every page but the last: most of the budget is text
                assert len(page["text"]) >= 500  # was 192
        _, whole = await text_of(session, "get_context", chunk_id=top["chunk_id"])
        assert "".join(pages) == whole["text"] and "truncated" not in whole
        assert len(pages) <= -(-len(whole["text"]) // 500)  # was 21 calls for 3,998 characters

    with mcp_library(transport, isolated_home, prepare) as connect:
        run(body, connect, seconds=60)


# -- the budget on every tool, over random libraries, queries and sizes ----------------------

VOCABULARY = ["gossip", "peers", "round", "leader", "vote", "flour", "starter", "écrit", "東京"]
# Text that takes more room in JSON than it has characters, and words to find.
ODD = ['"', "\\", "\n", "\t", "\u2028", "🚀", "<a id=x></a>", "`code`", "%% c %%"]
piece = st.sampled_from(VOCABULARY + ODD)
words = st.builds(  # up to some 40,000 characters: a section read in pages
    lambda w, times: " ".join(w * times), st.lists(piece, max_size=200), st.integers(1, 40)
)
line = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=160
).map(lambda t: t.replace("\n", " ").strip() or "x")
name = st.text("abcxyz XYZ-_&'(),", min_size=1, max_size=60).map(lambda t: "n" + t.strip())
budget = st.one_of(
    st.integers(1000, 1600), st.integers(1000, 8000), st.integers(1000, MAX_MAX_CHARS)
)


@st.composite
def documents(draw: st.DrawFn) -> list[tuple[str, str]]:
    """1 to 4 notes: (path, text), with long titles and headings, deep folders, long
    sections, tags, and text full of what JSON escapes."""
    found: dict[str, str] = {}
    for _ in range(draw(st.integers(1, 4))):
        folder = "/".join(draw(st.lists(name, max_size=3)))
        path = f"{folder}/{draw(name)}.md".lstrip("/")
        tags = draw(st.lists(st.sampled_from(["a", "b-c", "long_tag_name"]), max_size=3))
        title = draw(line).replace('"', "'")
        sections = draw(st.lists(st.tuples(line, words), min_size=1, max_size=5))
        body = "".join(f"## {heading}\n\n{text}\n\n" for heading, text in sections)
        found[path] = f'---\ntitle: "{title}"\ntags: [{", ".join(tags)}]\n---\n' + body
    return list(found.items())


def within_budget(result: CallToolResult, max_chars: int) -> dict[str, Any]:
    """The result as the client received it fits ``max_chars``; its JSON."""
    assert not result.is_error, result.content
    text = "".join(c.text for c in result.content if c.type == "text")
    assert len(text) <= max_chars, (len(text), max_chars, text[:300])
    assert json.loads(text) == result.structured_content
    return dict(result.structured_content or {})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=documents(), data=st.data())
def test_every_tool_keeps_to_max_chars_whatever_the_library_and_size(
    docs: list[tuple[str, str]], data: st.DataObject
) -> None:
    """The issue's "Must show": the MCP budget honoured on every tool, a property over
    random sizes — every tool through the SDK's client (in memory, JSON-RPC framed),
    every result as received within its ``max_chars``; paging always moves on."""
    draw = data.draw
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "notes"
        for path, text in docs:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
        with Shelf(Path(tmp) / "home", embedder=None) as shelf:
            shelf.add(root)

            async def main() -> None:
                async with Client(build_server(shelf, local_admin), mode="legacy") as client:
                    await calls(client)

            async def calls(client: Client) -> None:
                query = draw(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3))
                query_text = " ".join(query) + draw(st.sampled_from(["", " " + "gossip" * 500]))
                max_chars = draw(budget)
                found = within_budget(
                    await client.call_tool(
                        "search_documents",
                        {
                            "query": query_text,
                            "limit": draw(st.integers(1, MAX_HITS)),
                            "mode": draw(st.sampled_from(["lexical", "hybrid"])),
                            "max_chars": max_chars,
                        },
                    ),
                    max_chars,
                )
                max_chars = draw(budget)
                listed = within_budget(
                    await client.call_tool(
                        "list_sources",
                        {
                            "limit": draw(st.integers(1, 200)),
                            "offset": draw(st.integers(0, 3)),
                            "max_chars": max_chars,
                        },
                    ),
                    max_chars,
                )
                event(f"search: {'cut' if 'truncated' in found else 'whole'}")
                for hit in found["hits"][:2]:
                    max_chars = draw(budget)
                    arguments: dict[str, Any] = {
                        "chunk_id": hit["chunk_id"],
                        "mode": draw(st.sampled_from(CONTEXT_MODES)),
                        "window": draw(st.integers(0, 20)),
                        "max_chars": max_chars,
                    }
                    offset = draw(st.integers(0, 3000))
                    for _ in range(4):  # a few pages on: each fits, each moves on
                        page = within_budget(
                            await client.call_tool("get_context", {**arguments, "offset": offset}),
                            max_chars,
                        )
                        next_offset = page.get("truncated", {}).get("next_offset")
                        event(f"context: {'paged' if next_offset else 'whole'}")
                        if next_offset is None:
                            break
                        assert next_offset > offset
                        offset = next_offset
                    max_chars = draw(budget)
                    within_budget(
                        await client.call_tool(
                            "get_document",
                            {"document_id": hit["document_id"], "max_chars": max_chars},
                        ),
                        max_chars,
                    )
                for brief in listed["documents"][:1]:
                    max_chars = draw(budget)
                    within_budget(
                        await client.call_tool(
                            "get_document",
                            {"document_id": brief["document_id"], "max_chars": max_chars},
                        ),
                        max_chars,
                    )
                max_chars = draw(budget)
                within_budget(
                    await client.call_tool(
                        "ask",
                        {
                            "question": query_text,
                            "limit": draw(st.integers(1, 20)),
                            "max_chars": max_chars,
                        },
                    ),
                    max_chars,
                )
                wrong = await client.call_tool(
                    "get_context", {"chunk_id": "chunk_" + "x" * draw(st.integers(0, 5000))}
                )
                assert wrong.is_error and len(error_text(wrong)) <= MIN_MAX_CHARS

            anyio.run(main)


# -- streamable HTTP: /mcp in the API --------------------------------------------------------


@dataclass
class McpSite:
    url: str
    shelf: Shelf
    alice: User
    tokens: dict[str, str]

    def connect(self, token: str | None) -> Callable[[], Any]:
        @asynccontextmanager
        async def connect() -> AsyncIterator[Any]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with (
                httpx2.AsyncClient(headers=headers) as client,
                streamable_http_client(f"{self.url}/mcp", http_client=client) as streams,
            ):
                yield streams

        return connect


@pytest.fixture
def site(shelf: Shelf, notes: Path) -> Iterator[McpSite]:
    alice, alice_token = shelf.create_user("alice")
    _, bob_token = shelf.create_user("bob")
    shelf.add(notes, user_id=alice.id)
    with serve(create_app(shelf)) as url:
        yield McpSite(url, shelf, alice, {"alice": alice_token, "bob": bob_token})


def test_http_tools_answer_for_the_token_s_user(site: McpSite) -> None:
    seen: dict[str, Any] = {}

    async def alice(session: ClientSession) -> None:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        found = await call(session, "search_documents", query="leader election", limit=2)
        assert found["mode"] == "hybrid"
        top = found["hits"][0]
        assert top["citation"]["label"] == "Raft (projects/raft.md#1)"
        context = await call(
            session, "get_context", chunk_id=top["chunk_id"], mode="snippet-window"
        )
        assert top["chunk_id"] in [c["chunk_id"] for c in context["chunks"]]
        sources = await call(session, "list_sources")
        assert len(sources["sources"]) == 1 and len(sources["documents"]) == 3
        seen["document_id"] = top["document_id"]
        seen["chunk_id"] = top["chunk_id"]

    async def bob(session: ClientSession) -> None:
        found = await call(session, "search_documents", query="leader election")
        assert found["hits"] == []
        assert found["next_actions"][0]["tool"] == "list_sources"
        assert await call(session, "list_sources") == {
            "sources": [],
            "documents": [],
            "offset": 0,
            "next_offset": None,
            "next_actions": [],
        }
        # Alice's ids are answered exactly like unknown ones.
        doc = await session.call_tool("get_document", {"document_id": seen["document_id"]})
        assert error_text(doc).endswith(f"not_found: No document {seen['document_id']!r}")
        ctx = await session.call_tool("get_context", {"chunk_id": seen["chunk_id"]})
        assert "not_found" in error_text(ctx)

    run(alice, site.connect(site.tokens["alice"]))
    run(bob, site.connect(site.tokens["bob"]))


def test_notebooks_through_the_sdk_client(site: McpSite, notes: Path) -> None:
    """An agent lists the notebooks it may read and searches, asks and widens within one;
    a notebook shared with it never shows it a document it does not hold."""
    shelf, alice = site.shelf, site.alice
    shelf.notebooks.create("Baking", alice.id, sources=[str(notes)], filters=["tag=baking"])

    async def as_alice(session: ClientSession) -> None:
        listed = await call(session, "list_notebooks")
        assert [n["name"] for n in listed["notebooks"]] == ["Baking"]
        assert (
            listed["next_actions"][0]["arguments"]["notebook"]
            == listed["notebooks"][0]["notebook_id"]
        )
        everywhere = await call(session, "search_documents", query="leader flour", mode="lexical")
        assert len({h["document_id"] for h in everywhere["hits"]}) > 1
        within = await call(
            session, "search_documents", query="leader flour", mode="lexical", notebook="Baking"
        )
        assert {h["citation"]["label"].split(" (")[0] for h in within["hits"]} == {"Bread"}
        answer = await call(
            session, "ask", question="What does the starter need?", notebook="Baking"
        )
        assert answer["citations"] and all(
            "cooking.md" in c["citation"]["label"] for c in answer["citations"]
        )
        top = within["hits"][0]["chunk_id"]
        assert (await call(session, "get_context", chunk_id=top, notebook="Baking"))["chunks"]
        missing = await session.call_tool("search_documents", {"query": "x", "notebook": "Nope"})
        assert error_text(missing).startswith("not_found: No notebook 'Nope'")

    async def as_bob(session: ClientSession) -> None:
        assert (await call(session, "list_notebooks"))["notebooks"] == []
        hidden = await session.call_tool(
            "search_documents", {"query": "flour", "notebook": "Baking"}
        )
        assert "not_found" in error_text(hidden)  # not shared: as if it did not exist

    run(as_alice, site.connect(site.tokens["alice"]))
    run(as_bob, site.connect(site.tokens["bob"]))
    shelf.notebooks.share("Baking", "bob", alice.id)

    async def as_reader(session: ClientSession) -> None:
        listed = (await call(session, "list_notebooks"))["notebooks"]
        assert [(n["name"], n["read_only"]) for n in listed] == [("Baking", True)]
        found = await call(session, "search_documents", query="flour", notebook="Baking")
        assert found["hits"] == []  # the notebook's documents are alice's, not bob's

    run(as_reader, site.connect(site.tokens["bob"]))


def test_ask_reports_an_abstention_as_data_and_follows_a_conversation(site: McpSite) -> None:
    async def body(session: ClientSession) -> None:
        none = await call(session, "ask", question="zebra quantum chromodynamics")
        assert none["answered"] is False
        assert none["answer"].startswith("No passage in your library answers this")
        assert none["citations"]  # the closest passage, for the agent to judge
        some = await call(session, "ask", question="What does a follower do?")
        assert some["answered"] is True
        first = await call(
            session, "ask", question="How does a follower become a candidate?", conversation="new"
        )
        thread = first["conversation"]
        follow = await call(session, "ask", question="and then what?", conversation=thread)
        assert follow["conversation"] == thread and follow["answered"] is True
        assert any("raft" in c["citation"]["label"] for c in follow["citations"])
        other = await session.call_tool("ask", {"question": "x y z", "conversation": "cv_nope"})
        assert "not_found" in error_text(other)

    run(body, site.connect(site.tokens["alice"]))


@pytest.mark.parametrize("token", [None, "dsk_unknown"])
def test_http_without_a_valid_token_is_refused(site: McpSite, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    raw = httpx.post(f"{site.url}/mcp", json=body, headers=headers)
    assert raw.status_code == 401
    assert raw.headers["www-authenticate"] == "Bearer"
    assert raw.json()["error"]["code"] == "unauthorized"

    async def never(session: ClientSession) -> None:
        raise AssertionError("a session opened without a valid token")

    # The SDK's client sees the refusal as an error response and opens no session.
    with pytest.raises(Exception) as refused:
        run(never, site.connect(token))
    assert "MCPError: Server returned an error response" in _chain(refused.value)


def test_http_endpoint_is_unavailable_until_the_app_starts(shelf: Shelf) -> None:
    from fastapi.testclient import TestClient

    outside = TestClient(create_app(shelf))  # no lifespan: the MCP manager never ran
    r = outside.post("/mcp", json={})
    assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable"


def _chain(exc: BaseException) -> str:
    """Every message in an exception, its causes and (for groups) its members."""
    parts = [f"{type(exc).__name__}: {exc}"]
    if isinstance(exc, BaseExceptionGroup):
        parts += [_chain(e) for e in exc.exceptions]
    if exc.__cause__ is not None:
        parts.append(_chain(exc.__cause__))
    return " | ".join(parts)
