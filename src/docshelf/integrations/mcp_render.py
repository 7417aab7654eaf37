"""The MCP tools' results shaped for a model's context window: compact JSON (no
indentation), only what an agent uses (no hashes, timestamps or owner ids), each text
once, and within ``max_chars`` characters — a result cut to fit says so under
``truncated``. The tool bodies (``mcp_tools.py``) call these.
"""

from __future__ import annotations

import json
from typing import Any

from docshelf.model import Citation, Document, Hit

JSON = dict[str, Any]


def action(tool: str, description: str, **arguments: Any) -> JSON:
    return {"tool": tool, "arguments": arguments, "description": description}


def compact_json(value: Any) -> str:
    """The result as an agent reads it: JSON without indentation or padding."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def size(value: Any) -> int:
    return len(compact_json(value))


def cut(text: str, chars: int) -> str:
    """``text`` cut to at most ``chars`` characters, at a word boundary when one is near."""
    if len(text) <= chars:
        return text
    head = text[: max(chars - 1, 0)]
    space = head.rfind(" ")
    if space > chars * 0.8:
        head = head[:space]
    return head.rstrip() + "…"


def citation(c: Citation) -> JSON:
    """The citation an agent quotes and opens: label, path, headings, pages if any."""
    out: JSON = {"label": c.label, "path": c.path, "heading_path": list(c.heading_path)}
    out["anchor"] = c.anchor  # get_context(chunk_id, anchor=…) cites the same heading
    if c.page_start is not None:
        out["page_start"] = c.page_start
        out["page_end"] = c.page_end
    return out


def hit(h: Hit) -> JSON:
    return {
        "chunk_id": h.chunk.id,
        "document_id": h.document.id,
        "score": round(h.score, 4),
        "citation": citation(h.citation),
        "text": h.chunk.text,
    }


MORE_HITS = "Raise max_chars, narrow the query or its filters, or read a hit whole with get_context"


def fit_hits(out: JSON, hits: list[JSON], max_chars: int) -> None:
    """Put as many whole hits into ``out`` as ``max_chars`` allows (the first always,
    its text cut if need be); what was left out is said under ``truncated``."""
    kept: list[JSON] = []
    cut_texts = 0
    for h in hits:
        room = max_chars - size({**out, "hits": [*kept, h]}) - 200  # 200: the notes below
        if room >= 0:
            kept.append(h)
            continue
        if not kept:  # the first hit always comes, its text shortened
            text = h["text"]
            keep = max(len(text) + room, 200)
            kept.append({**h, "text": cut(text, keep)})
            cut_texts = 1
        break
    out["hits"] = kept
    omitted = len(hits) - len(kept)
    if omitted or cut_texts:
        out["truncated"] = {
            "max_chars": max_chars,
            "hits_omitted": omitted,
            "texts_cut": cut_texts,
            "hint": MORE_HITS,
        }


# What get_document shows of the record (no hashes, timestamps or owner ids).
DOCUMENT_FIELDS = (
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


def document_brief(d: Document) -> JSON:
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


def fit_lists(out: JSON, keys: tuple[str, ...], max_chars: int) -> dict[str, int]:
    """Shorten the lists under ``keys`` (the first named first, from their ends) until
    ``out`` fits ``max_chars`` with room for notes; how many entries each lost."""
    omitted: dict[str, int] = {}
    for key in keys:
        while out[key] and size(out) + 600 > max_chars:
            out[key].pop()
            omitted[key] = omitted.get(key, 0) + 1
    return omitted
