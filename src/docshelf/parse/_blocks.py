"""Building a body and its blocks for formats whose body is extracted text.

Markdown and plain text keep the file's own text as the body. PDF, HTML, DOCX
and reStructuredText do not: their parsers extract one text per structural
unit and hand it to a :class:`BodyBuilder`, which joins the units with blank
lines, records each unit's span as a :class:`~docshelf.model.Block` and keeps
the heading path in force (a heading of level N closes the open headings of
level N and deeper, as in ``parse.markdown``).
"""

from __future__ import annotations

import re

from docshelf.model import Block, BlockKind, ParsedDocument

_SPACES = re.compile(r"\s+")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_SEPARATOR = "\n\n"
# NUL bytes in this many first bytes of a text format (no UTF-16 BOM): binary content
BINARY_SNIFF_BYTES = 8192


def one_line(text: str) -> str:
    """Whitespace collapsed to single spaces, stripped."""
    return _SPACES.sub(" ", text).strip()


def clean(text: str) -> str:
    """Control characters (other than tab and line ends) removed."""
    return _CONTROL.sub("", text)


class BodyBuilder:
    """Accumulates units of text into a body, blocks and heading paths."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._blocks: list[Block] = []
        self._length = 0
        self._headings: list[tuple[int, str]] = []  # the open headings: (level, text)

    def add(
        self,
        kind: BlockKind,
        text: str,
        *,
        level: int = 0,
        page: int | None = None,
        ocr: float | None = None,
    ) -> None:
        """Append one unit; blank text is ignored. Headings are kept to one line. ``ocr``:
        the unit was read by OCR, with this mean word confidence (0 to 1)."""
        text = clean(text)
        text = one_line(text) if kind is BlockKind.HEADING else text.strip("\n").rstrip()
        if not text.strip():
            return
        if kind is BlockKind.HEADING:
            level = min(max(level, 1), 6)
            while self._headings and self._headings[-1][0] >= level:
                self._headings.pop()
            self._headings.append((level, text))
        else:
            level = 0
        if self._parts:
            self._parts.append(_SEPARATOR)
            self._length += len(_SEPARATOR)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        path = tuple(t for _, t in self._headings)
        self._blocks.append(
            Block(kind, start, self._length, path, level=level, page=page, ocr_confidence=ocr)
        )

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(self._blocks)

    @property
    def body(self) -> str:
        return "".join(self._parts)

    def first_heading(self, max_level: int = 6) -> str | None:
        """The text of the first heading of at most ``max_level``, if any."""
        body = self.body
        for block in self._blocks:
            if block.kind is BlockKind.HEADING and block.level <= max_level:
                return body[block.start : block.end]
        return None

    def build(
        self,
        *,
        title: str | None = None,
        page_count: int | None = None,
        pages_without_text: int = 0,
        warnings: tuple[str, ...] = (),
        ocr_pages: int = 0,
    ) -> ParsedDocument:
        return ParsedDocument(
            body=self.body,
            blocks=self.blocks,
            title=one_line(title) if title and title.strip() else None,
            page_count=page_count,
            pages_without_text=pages_without_text,
            warnings=warnings,
            ocr_pages=ocr_pages,
        )
