"""The agent skill file (docs/agents/docshelf-skill.md) names only what exists: CLI
commands and their options, MCP tools, their arguments and result fields, filter keys
and error codes. An agent that follows it must never call something that is not there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import typer.main

from docshelf.cli import app
from docshelf.errors import DocshelfError
from docshelf.search.filters import FILTER_KEYS
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.optional import require_module

require_module("mcp", "pip install 'docshelf[mcp]'")

from mcp.types import CallToolResult  # noqa: E402

from docshelf.integrations.mcp_server import build_server, local_admin, skill_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SKILL = ROOT / "docs" / "agents" / "docshelf-skill.md"


def _keys(value: Any) -> set[str]:
    """Every key of a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _codes(cls: type[DocshelfError]) -> set[str]:
    return {cls.code} | {c for sub in cls.__subclasses__() for c in _codes(sub)}


def test_the_skill_is_linked_and_served() -> None:
    text = SKILL.read_text(encoding="utf-8")
    assert "docs/agents/docshelf-skill.md" in (ROOT / "README.md").read_text()
    assert "agents/docshelf-skill.md" in (ROOT / "docs" / "mcp.md").read_text()
    assert skill_text() == text  # the docshelf://skill resource


def test_every_cli_command_and_option_the_skill_names_exists() -> None:
    text = SKILL.read_text(encoding="utf-8")
    group: Any = typer.main.get_command(app)  # a click group of the commands
    calls = re.findall(r"`docshelf ([^`]+)`", text)
    assert len(calls) >= 6
    for call in calls:
        words = [w for w in call.split() if not w.startswith('"')]
        words = [w for w in words if w != "--json"]  # the global flag
        command = group.commands.get(words[0])
        assert command is not None, f"no command {words[0]!r} (from `docshelf {call}`)"
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        for word in words[1:]:
            if word.startswith("-"):
                assert word in options, f"`docshelf {words[0]}` has no option {word}"
    for flag in re.findall(r"`(--?[a-z][\w-]*)(?:[ `/])", text):
        assert any(
            flag in (*p.opts, *p.secondary_opts) for c in group.commands.values() for p in c.params
        ) or flag in ("--json",), flag


def test_every_tool_argument_field_filter_and_code_the_skill_names_exists(
    shelf: Shelf, notes: Path
) -> None:
    (notes / "long.md").write_text(
        "# Long\n\n" + "".join(f"## Part {i}\n\n{FILLER} See [[Note {i}]].\n\n" for i in range(40))
    )
    shelf.add(notes)
    long_id = next(d.id for d in shelf.documents() if d.title == "Long")
    server = build_server(shelf, local_admin)
    text = SKILL.read_text(encoding="utf-8")

    async def gather() -> tuple[set[str], set[str], set[str]]:
        tools = await server.list_tools()
        names = {t.name for t in tools}
        arguments = {k for t in tools for k in _keys(t.input_schema.get("properties", {}))}
        found = await server.call_tool("search_documents", {"query": "heartbeat", "limit": 2})
        assert isinstance(found, CallToolResult) and found.structured_content
        hit = found.structured_content["hits"][0]
        results = [
            found.structured_content,
            (await server.call_tool("get_context", {"chunk_id": hit["chunk_id"]})),
            (await server.call_tool("get_context", {"chunk_id": hit["chunk_id"]})),
            (await server.call_tool("list_sources", {"limit": 1})),
            (await server.call_tool("get_document", {"document_id": hit["document_id"]})),
            (await server.call_tool("get_document", {"document_id": long_id, "max_chars": 1000})),
            (await server.call_tool("ask", {"question": "what is a heartbeat?"})),
            (
                await server.call_tool(
                    "search_documents", {"query": "heartbeat follower", "max_chars": 1000}
                )
            ),
            (
                await server.call_tool(
                    "get_context", {"chunk_id": hit["chunk_id"], "max_chars": 1000}
                )
            ),
        ]
        fields: set[str] = set()
        for r in results:
            fields |= _keys(r if isinstance(r, dict) else getattr(r, "structured_content", None))
        return names, arguments, fields

    names, arguments, fields = anyio.run(gather)
    assert all(f"`{name}`" in text for name in names)  # every tool is explained
    known = names | arguments | fields
    named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", text))
    named |= {
        part
        for dotted in re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", text)
        for part in dotted.split(".")
    }
    named -= _codes(DocshelfError)
    assert named and named <= known, sorted(named - known)
    table = re.findall(r"^\| `([a-z]+)` \|", text, flags=re.MULTILINE)
    assert [k for k in table if k in FILTER_KEYS] == list(FILTER_KEYS)  # the filters, all
    codes = set(re.findall(r"`([a-z_]+)`", text.split("## Errors", 1)[1].split("##", 1)[0]))
    assert {"invalid_input", "not_found", "unavailable"} <= codes <= _codes(DocshelfError)
