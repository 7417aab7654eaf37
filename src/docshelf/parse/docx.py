"""DOCX: headings, paragraphs, lists and tables of a Word document, with python-docx.

- Headings: paragraphs in a "Heading N" style (or a style based on one), or
  with an explicit outline level; "Title" is a level-1 heading.
- Lists: consecutive numbered or bulleted paragraphs (or "List …" styles)
  are one LIST block, ``- item`` per line, indented by list level.
- Tables: one TABLE block each, a line per row, cells joined with `` | ``
  (text of nested tables stays inside its cell).
- Content controls (``w:sdt``) are read through; headers, footers, comments
  and footnotes are not read.
- Title: the core properties' title, else the first level-1 heading.

Before python-docx opens the file, the zip directory is checked: too many
members, or members that would inflate to more than a limit or by a ratio
no real document has, are refused as a likely zip bomb, without inflating
anything.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator

import docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import PackageNotFoundError
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse._blocks import BodyBuilder, one_line

__all__ = ["MAX_INFLATED_MB", "parse_docx"]

MAX_INFLATED_MB = 256  # all members together, as the zip directory declares them
_MAX_MEMBERS = 10_000
_MAX_RATIO = 200  # inflated / compressed size of one member (real XML stays far below)
_RATIO_FROM_BYTES = 10 * 1024 * 1024  # small members may compress as well as they like
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
_MAX_STYLE_DEPTH = 8

_P, _TBL, _SDT, _SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_TR, _TC, _T = qn("w:tr"), qn("w:tc"), qn("w:t")


def parse_docx(data: bytes) -> ParsedDocument:
    """Parse a DOCX file's bytes into headings, paragraphs, lists and tables."""
    _check_archive(data)
    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise InvalidInput(f"malformed DOCX: {exc}") from None
    except etree.XMLSyntaxError as exc:
        raise InvalidInput(f"malformed DOCX (bad XML: {exc})") from None
    builder = BodyBuilder()
    items: list[str] = []

    def flush_list() -> None:
        builder.add(BlockKind.LIST, "\n".join(items))
        items.clear()

    for block in _blocks(document):
        if isinstance(block, Table):
            flush_list()
            builder.add(BlockKind.TABLE, _table_text(block))
            continue
        text = block.text
        kind, level = _kind(block)
        if kind is BlockKind.LIST:
            if text.strip():
                items.append(f"{'  ' * level}- {one_line(text)}")
            continue
        flush_list()
        builder.add(kind, text, level=level)
    flush_list()
    if not builder.blocks:
        raise InvalidInput("no text in the DOCX document")
    title = one_line(document.core_properties.title or "") or builder.first_heading(1)
    return builder.build(title=title)


def _check_archive(data: bytes) -> None:
    if not data.strip():
        raise InvalidInput("empty file")
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        raise InvalidInput("not a DOCX file (a legacy Word .doc file; save it as .docx)")
    if not data.startswith(b"PK"):
        raise InvalidInput("not a DOCX file (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise InvalidInput(f"not a DOCX file (damaged zip archive: {exc})") from None
    if len(members) > _MAX_MEMBERS:
        raise InvalidInput(f"DOCX has {len(members)} zip members (a zip bomb?)")
    names = {m.filename for m in members}
    if "[Content_Types].xml" not in names or not any(n.startswith("word/") for n in names):
        raise InvalidInput("not a DOCX file (a zip archive without a Word document in it)")
    total = sum(m.file_size for m in members)
    if total > MAX_INFLATED_MB * 1024 * 1024:
        mb = total // (1024 * 1024)
        raise InvalidInput(
            f"DOCX would inflate to {mb} MB, over the {MAX_INFLATED_MB} MB limit (a zip bomb?)"
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > _RATIO_FROM_BYTES and ratio > _MAX_RATIO:
            raise InvalidInput(
                f"DOCX member {member.filename} would inflate {ratio:.0f} times (a zip bomb?)"
            )


# -- reading the body ----------------------------------------------------------------------


def _blocks(document: DocxDocument) -> Iterator[Paragraph | Table]:
    """Paragraphs and tables of the body in order, looking inside content controls."""
    body = document.element.body
    stack = [iter(body)]
    while stack:
        element = next(stack[-1], None)
        if element is None:
            stack.pop()
        elif element.tag == _P:
            yield Paragraph(element, document)
        elif element.tag == _TBL:
            yield Table(element, document)
        elif element.tag == _SDT:
            content = element.find(_SDT_CONTENT)
            if content is not None:
                stack.append(iter(content))


def _kind(paragraph: Paragraph) -> tuple[BlockKind, int]:
    """(HEADING, level), (LIST, nesting level from 0) or (PARAGRAPH, 0)."""
    properties = paragraph._p.pPr
    outline = properties.find(qn("w:outlineLvl")) if properties is not None else None
    if outline is not None:
        value = outline.get(qn("w:val"), "")
        if value.isdigit() and int(value) < 9:
            return BlockKind.HEADING, int(value) + 1
    style = paragraph.style
    names = []
    for _ in range(_MAX_STYLE_DEPTH):
        if style is None:
            break
        names.append((style.name or "").strip())
        style = style.base_style
    for name in names:
        match = _HEADING_STYLE.match(name)
        if match:
            return BlockKind.HEADING, int(match.group(1))
        if name.lower() == "title":
            return BlockKind.HEADING, 1
    numbering = properties.find(qn("w:numPr")) if properties is not None else None
    if numbering is not None or any(n.lower().startswith("list") for n in names[:1]):
        nesting = numbering.find(qn("w:ilvl")) if numbering is not None else None
        value = nesting.get(qn("w:val"), "0") if nesting is not None else "0"
        return BlockKind.LIST, min(int(value), 8) if value.isdigit() else 0
    return BlockKind.PARAGRAPH, 0


def _table_text(table: Table) -> str:
    """A line per row, cells joined with " | "; a cell's paragraphs joined with spaces."""
    lines = []
    for row in table._tbl.iterchildren(_TR):
        cells = [
            one_line(" ".join("".join(t.text or "" for t in p.iter(_T)) for p in cell.iter(_P)))
            for cell in row.iterchildren(_TC)
        ]
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)
