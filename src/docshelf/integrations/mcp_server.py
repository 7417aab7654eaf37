"""The MCP server: the library as tools an agent can call to ground its answers.

    docshelf mcp      # stdio, for a local agent; acts as the local admin, like the CLI
    docshelf serve    # also streamable HTTP at /mcp, behind the same bearer tokens

Tools (all read-only): ``search_documents``, ``get_context``, ``list_sources``,
``get_document``, ``ask``. Results are made for a model's context window: compact
JSON (no indentation), only what an agent uses (no hashes, timestamps or owner
ids), each text once, and at most ``max_chars`` characters per result, all of it
(``DEFAULT_MAX_CHARS`` unless asked; a result cut to fit says so under
``truncated`` and names the call that reads the rest in ``next_actions``; a small
budget keeps the text and says less around it). Every hit and context carries its
``citation.label`` to quote. docshelf's errors, and arguments the schema refuses,
become tool errors whose text starts with the error code (``not_found: No chunk
'chunk_x'``, ``invalid_input: mode must be one of …``), in at most ``MIN_MAX_CHARS``.
The agent skill file (docs/agents/docshelf-skill.md) says how to use them; it is
also served as the ``docshelf://skill`` resource.

The tools are one thin face over :class:`~docshelf.shelf.Shelf`; who is asking
is decided by an ``Identity`` function: nobody (``None``, the local admin) over
stdio, the token's user over HTTP (see ``docshelf.api.mcp``).

This module builds the server; the tool bodies are ``mcp_tools.py``, their arguments'
bounds and descriptions ``mcp_schemas.py``, the shaping of their results
``mcp_render.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from docshelf import __version__
from docshelf.errors import DocshelfError
from docshelf.integrations.mcp_render import compact_json, cut
from docshelf.integrations.mcp_schemas import (
    DEFAULT_MAX_CHARS,
    DESCRIPTIONS,
    MAX_HITS,
    MIN_MAX_CHARS,
    READ_ONLY,
    SearchFiltersArg,
    schema_message,
)
from docshelf.integrations.mcp_tools import Identity, Tools, translated
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

INSTRUCTIONS = (
    "docshelf searches the user's own documents (notes, papers, manuals) and cites every hit. "
    "Call search_documents first; quote a hit's citation.label when you use it; call get_context "
    "with a hit's chunk_id to read the surrounding section before answering from it. "
    "Every result fits in max_chars characters; one cut to fit has a 'truncated' field. "
    "Results list next_actions: tool calls worth making next. "
    "The resource docshelf://skill explains the whole workflow."
)
SKILL_FILE = Path(__file__).resolve().parents[3] / "docs" / "agents" / "docshelf-skill.md"


def _subclasses(cls: type[DocshelfError]) -> list[type[DocshelfError]]:
    found: list[type[DocshelfError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


_CODES = {DocshelfError.code, *(c.code for c in _subclasses(DocshelfError))}


class _Server(MCPServer):
    """The SDK's server with docshelf's two conventions for every tool result: the text
    an agent reads is compact JSON, and refused arguments are a short ``invalid_input``."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # An error fits the smallest budget: it may echo what the caller sent.
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(cut(schema_message(exc.__cause__), MIN_MAX_CHARS)) from None
            # the SDK's "Error executing tool NAME: " before our "code: message"
            message = str(exc).removeprefix(f"Error executing tool {name}: ")
            if message != str(exc) and message.split(":", 1)[0] in _CODES:
                raise ToolError(cut(message, MIN_MAX_CHARS)) from None
            raise ToolError(cut(str(exc), MIN_MAX_CHARS)) from exc
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
    tools = Tools(shelf, identity)
    for name, description in DESCRIPTIONS.items():
        server.add_tool(
            translated(getattr(tools, name)),
            name=name,
            description=description,
            annotations=READ_ONLY,
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
