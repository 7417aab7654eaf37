"""Plain text: paragraphs are runs of non-blank lines; there are no headings."""

from __future__ import annotations

from docshelf.model import Block, BlockKind, ParsedDocument


def parse_text(body: str) -> ParsedDocument:
    """Parse decoded text (LF line ends): one PARAGRAPH block per run of non-blank lines."""
    return ParsedDocument(body=body, blocks=tuple(_paragraphs(body)))


def _paragraphs(body: str) -> list[Block]:
    blocks: list[Block] = []
    start: int | None = None  # offset of the current paragraph's first line
    end = 0  # end of the last non-blank line seen
    pos = 0
    for line in body.split("\n"):
        if line.strip():
            if start is None:
                start = pos + (len(line) - len(line.lstrip()))
            end = pos + len(line.rstrip())
        elif start is not None:
            blocks.append(Block(BlockKind.PARAGRAPH, start, end, ()))
            start = None
        pos += len(line) + 1
    if start is not None:
        blocks.append(Block(BlockKind.PARAGRAPH, start, end, ()))
    return blocks
