"""A document as units: its blocks in order, plus any text between them, each a stripped
span with its token count (counted only as far as a chunk's limit needs)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from docshelf.chunk.tokens import TokenCounter
from docshelf.model import Block, BlockKind, ParsedDocument

PROBE_CHARS_PER_TOKEN = 5  # see capped_count: prose has ~4 characters per token


@dataclass(frozen=True)
class Unit:
    """A block, or a piece of one, as packed: a stripped span and its token count."""

    start: int
    end: int
    kind: BlockKind
    heading_path: tuple[str, ...]
    page: int | None
    tokens: int
    whole: bool = True  # False for a piece of a cut block
    ocr: float | None = None  # read by OCR: its block's mean word confidence

    @property
    def is_heading(self) -> bool:
        return self.whole and self.kind is BlockKind.HEADING


_NON_SPACE = re.compile(r"\S")
_STRIP_WINDOW = 4096


def strip_span(body: str, start: int, end: int) -> tuple[int, int]:
    """The span without surrounding whitespace (empty at ``start`` if all whitespace).

    Without copying the span: cutting a huge block strips every remainder of it,
    so the time and memory must not grow with the span's length."""
    first = _NON_SPACE.search(body, start, end)
    if first is None:
        return start, start
    start = first.start()
    while end > start:
        tail = body[max(start, end - _STRIP_WINDOW) : end]
        kept = len(tail.rstrip())
        end -= len(tail) - kept
        if kept:
            break
    return start, end


def capped_count(count: TokenCounter, body: str, start: int, end: int, limit: int) -> int:
    """The count of ``body[start:end]``, or ``limit + 1`` once it is clearly over ``limit``.

    Counting a huge span in full (a 25 MB one-line file, or every remainder of it
    as it is cut) costs memory and time in proportion to it, and only spans that
    fit the limit need an exact count: a span whose opening alone is over the
    limit is not counted further.
    """
    size = PROBE_CHARS_PER_TOKEN * (limit + 1)
    while start + size < end:  # growing probes: text of few tokens per character (long
        if count(body[start : start + size]) > limit:  # runs of spaces) is not counted
            return limit + 1  # whole at every cut of it, which would be quadratic
        size *= 4
    return count(body[start:end])


def units_of(doc: ParsedDocument, count: TokenCounter, limit: int) -> list[Unit]:
    """The document's blocks in order, plus any text between them, as units (each
    counted up to ``limit``: see ``capped_count``)."""
    body = doc.body
    units: list[Unit] = []
    pos = 0
    before: Block | None = None  # the block before a gap lends it its heading path and page

    def add(start: int, end: int, kind: BlockKind, ocr: float | None = None) -> None:
        start, end = strip_span(body, start, end)
        if start < end:
            path, page = (before.heading_path, before.page) if before else ((), None)
            tokens = capped_count(count, body, start, end, limit)
            units.append(Unit(start, end, kind, path, page, tokens, ocr=ocr))

    for block in sorted(doc.blocks, key=lambda b: (b.start, b.end)):
        start = min(max(block.start, pos), len(body))
        end = min(block.end, len(body))
        add(pos, start, BlockKind.OTHER)
        before = block
        add(start, end, block.kind, block.ocr_confidence)
        pos = max(pos, end)
    add(pos, len(body), BlockKind.OTHER)
    return units
