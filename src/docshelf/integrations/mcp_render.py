"""The MCP tools' results shaped for a model's context window: compact JSON (no
indentation), only what an agent uses (no hashes, timestamps or owner ids), each text
once, and within ``max_chars`` characters — a result cut to fit says so under
``truncated``. The tool bodies (``mcp_tools.py``) call these.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from docshelf.model import Citation, Document, Hit

JSON = dict[str, Any]


def action(tool: str, description: str, **arguments: Any) -> JSON:
    return {"tool": tool, "arguments": arguments, "description": description}


def compact_json(value: Any) -> str:
    """The result as an agent reads it: JSON without indentation or padding."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def size(value: Any) -> int:
    """How many characters ``value`` takes in the result an agent reads."""
    return len(compact_json(value))


def text_size(text: str) -> int:
    """How many characters ``text`` takes inside the result (quotes, newlines and
    backslashes are escaped; the string's own two quotes are not counted)."""
    return size(text) - 2


def fit_text(text: str, room: int) -> str:
    """The longest start of ``text`` that takes at most ``room`` characters in the result,
    ended at a word boundary when one is near (in its last fifth)."""
    if text_size(text) <= room:
        return text
    lo, hi = 0, len(text)  # text_size grows with the length: the longest start that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_size(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    head = text[:lo]
    space = max(head.rfind(" "), head.rfind("\n"))
    return head[:space] if space > lo * 0.8 else head


def cut(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters of the result, a cut one ending in "…"."""
    if text_size(text) <= room:
        return text
    return fit_text(text, room - 1).rstrip() + "…" if room >= 1 else ""


def spans(text: str, pieces: list[str]) -> list[tuple[int, int] | None]:
    """Where each of ``pieces`` is in ``text``, in order (None: not found as such)."""
    found: list[tuple[int, int] | None] = []
    at = 0
    for piece in pieces:
        start = text.find(piece, at) if piece else -1
        if start < 0:
            found.append(None)
            continue
        found.append((start, start + len(piece)))
        at = start + len(piece)
    return found


def citation(c: Citation) -> JSON:
    """The citation an agent quotes and opens: label, path, headings, pages if any."""
    out: JSON = {"label": c.label, "path": c.path, "heading_path": list(c.heading_path)}
    out["anchor"] = c.anchor  # get_context(chunk_id, anchor=…) cites the same heading
    if c.page_start is not None:
        out["page_start"] = c.page_start
        out["page_end"] = c.page_end
    return out


def label_only(c: Citation, max_chars: int) -> JSON:
    """The citation as its label alone, for a budget too small for the rest (a label
    longer than a quarter of ``max_chars`` cut: a path no budget foresaw)."""
    return {"label": cut(c.label, max_chars // 4)}


def hit(h: Hit) -> JSON:
    out: JSON = {
        "chunk_id": h.chunk.id,
        "document_id": h.document.id,
        "score": round(h.score, 4),
        "citation": citation(h.citation),
        "text": h.chunk.text,
    }
    if h.chunk.ocr_confidence is not None:  # read by OCR: its text may hold OCR's errors
        out["ocr"] = {"confidence": h.chunk.ocr_confidence}
    return out


MORE_HITS = "Raise max_chars, narrow the query or its filters, or read a hit whole with get_context"


CITED = re.compile(r"\[(\d+)\]")  # an answer's citation marker


def citing_only(answer: str, dropped: set[int]) -> str:
    """``answer`` as far as it cites none of the ``dropped`` sources: cut after the marker
    before the first one citing one of them."""
    end = 0
    for marker in CITED.finditer(answer):
        if int(marker.group(1)) in dropped:
            return answer[:end]
        end = marker.end()
    return answer


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


def bounded(out: JSON, max_chars: int) -> JSON:
    """``out`` when it fits in ``max_chars``. Else — only a value no tool's shaping
    foresaw does it: a query, path or title of thousands of characters — ``out`` with
    its longest strings cut, then its longest lists shortened, until it fits; how many
    were cut is said under ``truncated.fields_cut``. Every budget the schema allows holds
    a result of empty lists and one-character strings, so this always ends within it."""
    if size(out) <= max_chars:
        return out
    out = copy.deepcopy(out)
    notes = out.get("truncated")
    if not isinstance(notes, dict):
        notes = out["truncated"] = {"max_chars": max_chars}
    notes["fields_cut"] = 0
    for shorten in (_cut_longest_string, _pop_longest_list, _halve_longest_string):
        while size(out) > max_chars and shorten(out, size(out) - max_chars):
            notes["fields_cut"] += 1
    return out


def _leaves(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) under ``value`` that holds a string or a list."""
    found: list[tuple[Any, Any]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        if isinstance(item, str | list):
            found.append((value, key))
        if isinstance(item, dict | list):
            found += _leaves(item)
    return found


def _longest(out: JSON, kind: type) -> tuple[Any, Any] | None:
    leaves = [(c, k) for c, k in _leaves(out) if isinstance(c[k], kind) and c[k]]
    return max(leaves, key=lambda ck: size(ck[0][ck[1]]), default=None)


KEPT_WHOLE = 40  # ids and names stay whole while longer strings can be cut


def _cut_longest_string(out: JSON, overflow: int) -> bool:
    found = _longest(out, str)
    if found is None or len(found[0][found[1]]) <= KEPT_WHOLE:
        return False
    container, key = found
    text = container[key]
    container[key] = cut(text, max(text_size(text) - overflow - 1, KEPT_WHOLE))
    return True


def _pop_longest_list(out: JSON, overflow: int) -> bool:
    found = _longest(out, list)
    if found is None:
        return False
    found[0][found[1]].pop()
    return True


def _halve_longest_string(out: JSON, overflow: int) -> bool:
    found = _longest(out, str)
    if found is None or len(found[0][found[1]]) <= 1:
        return False
    container, key = found
    container[key] = cut(container[key], len(container[key]) // 2)
    return True
