"""MCP result sizes, over stdio with the official client (docs/benchmarks/mcp-payloads.md).

    python bench/mcp_sizes.py DOCSHELF_EXECUTABLE LIBRARY_HOME

prints the characters an agent receives for search_documents (limit 8, 25, 100),
get_context (parent-section), list_sources and get_document, whether internal fields
appear, and what a refused argument says. Point it at two installs to compare.
"""

import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

BIN, HOME = sys.argv[1], sys.argv[2]
params = StdioServerParameters(
    command=BIN, args=["mcp"], env={"DOCSHELF_HOME": HOME, "DOCSHELF_EMBEDDER": "none"}
)


def text(r: CallToolResult) -> str:
    """The text content an agent reads."""
    return "".join(getattr(c, "text", "") for c in r.content)


def size(r: Any) -> int:
    return sum(len(c.text) for c in r.content if c.type == "text")


async def main() -> None:
    async with stdio_client(params) as (rd, wr), ClientSession(rd, wr) as s:
        await s.initialize()
        for limit in (8, 25, 100):
            r = await s.call_tool(
                "search_documents", {"query": "chain replication", "limit": limit}
            )
            print(
                f"search_documents limit={limit}: {size(r)} chars, error={r.is_error}",
                (text(r)[:160] if r.is_error else f"hits={len(r.structured_content['hits'])}"),
            )
        r = await s.call_tool("search_documents", {"query": "chain replication", "limit": 8})
        hit = r.structured_content["hits"][0]
        c = await s.call_tool("get_context", {"chunk_id": hit["chunk_id"]})
        sc = c.structured_content
        print(
            f"get_context parent-section: {size(c)} chars; section text {len(sc['text'])} chars;"
            f" text repeated in chunks: {any('text' in x for x in sc['chunks'])};"
            f" truncated={sc.get('truncated')}"
        )
        noise = [
            k
            for k in ("sha256", "added_at", "user_id", "updated_at", "host")
            if f'"{k}"' in text(c) + text(r)
        ]
        print("noise fields in search/get_context text:", noise)
        ls = await s.call_tool("list_sources", {})
        print(
            f"list_sources: {size(ls)} chars, documents={len(ls.structured_content['documents'])},"
            f" keys={sorted(ls.structured_content)}"
        )
        bad = await s.call_tool("get_context", {"chunk_id": "x", "mode": "everything"})
        print("schema error:", text(bad))
        bad = await s.call_tool("search_documents", {"query": "x", "filters": {"colour": "red"}})
        print("schema error:", text(bad))
        print("pretty-printed:", "\n  " in text(r))


anyio.run(main)


async def more() -> None:
    async with stdio_client(params) as (rd, wr), ClientSession(rd, wr) as s:
        await s.initialize()
        r = await s.call_tool("search_documents", {"query": "MOC dashboard", "limit": 3})
        d = await s.call_tool(
            "get_document", {"document_id": r.structured_content["hits"][0]["document_id"]}
        )
        t = text(d)
        print(
            f"get_document: {size(d)} chars; noise fields:",
            [
                k
                for k in (
                    "sha256",
                    "added_at",
                    "updated_at",
                    "enriched_at",
                    "user_id",
                    "source_host",
                    "taxonomy_version",
                )
                if f'"{k}"' in t
            ],
        )
        ls = await s.call_tool("list_sources", {})
        t = text(ls)
        print(
            "list_sources noise fields:",
            [k for k in ("added_at", "user_id", "host", "follow_symlinks") if f'"{k}"' in t],
        )


anyio.run(more)
