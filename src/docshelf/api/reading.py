"""A document opened at a citation: its original bytes and its text as a tree of blocks
(a PDF page as an image with the cited words' boxes: ``pdf_pages``).

Nothing here makes HTML. The text view is JSON (blocks of inline runs, each run
plain text with at most a style or a vetted link) that the web page builds with
DOM calls, so document text is never parsed as markup by anyone. Markdown is read
with markdown-it, its HTML parsed only to be left out (a tag or comment is never
shown; an HTML block shows its text), reStructuredText, HTML and DOCX through their
own parsers (docutils with raw and include directives off; lxml's tree, never the
original markup), the same parse the document was indexed with — so a chunk's
character span points into the body rebuilt here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.token import Token

from docshelf import plaintext
from docshelf.catalogue import DocumentView
from docshelf.config import ParseLimits
from docshelf.errors import InvalidInput, NotFound
from docshelf.ingest.prepare import read_file
from docshelf.model import Block, BlockKind, Chunk, fingerprint
from docshelf.parse import parse
from docshelf.parse.links import note_name

__all__ = [
    "FileChanged",
    "Original",
    "attachment_present",
    "is_attachment",
    "link_spellings",
    "obsidian_uri",
    "original_bytes",
    "text_view",
    "vault_roots",
]

JSON = dict[str, Any]

# A view of a huge document shows this many blocks around the cited one.
MAX_BLOCKS = 2000
MAX_BLOCK_CHARS = 20_000  # one block's text, past which it is cut (a 5 MB "paragraph")
SAFE_SCHEMES = ("http://", "https://", "mailto:")

# HTML is parsed so that it can be left out: a tag or comment is never shown, as text
# or as an element; an HTML block shows its text (plaintext.html_text)
_MD = MarkdownIt("commonmark", {"html": True}).enable("table")
_WIKILINK = re.compile(r"!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]")


class FileChanged(NotFound):
    """The file a folder document came from holds other bytes now (HTTP 410)."""

    code = "gone"


@dataclass(frozen=True)
class Original:
    data: bytes
    name: str


def original_bytes(
    view: DocumentView, read_blob: Callable[[str], bytes | None], max_bytes: int
) -> Original:
    """The document's bytes as they were indexed: the uploaded blob, else the first of
    its files that still holds the same fingerprint. ``FileChanged`` when its files
    hold other bytes now, ``NotFound`` when none is left."""
    doc = view.document
    name = doc.rel_path.rsplit("/", 1)[-1] or "document"
    blob = read_blob(doc.sha256)
    if blob is not None:
        return Original(blob, name)
    changed = False
    for path in dict.fromkeys([doc.path, *view.files]):
        if not path or "://" in path:  # upload://…: the blob was the only copy
            continue
        try:
            data, _ = read_file(Path(path), max_bytes)
        except InvalidInput:  # gone, unreadable or too large now
            continue
        if fingerprint(data) == doc.sha256:
            return Original(data, Path(path).name)
        changed = True
    if changed:
        raise FileChanged(
            f"The file of document {doc.id!r} changed since it was indexed; "
            "sync its source to read the new version"
        )
    raise NotFound(f"The file of document {doc.id!r} is no longer there (moved or deleted)")


# -- text documents ------------------------------------------------------------------------


def text_view(
    data: bytes,
    file_type: str,
    cited: Chunk | None,
    limits: ParseLimits | None = None,
    anchor: int | None = None,
) -> JSON:
    """The document as blocks (``heading``/``paragraph``/``list``/``code``/``table``/
    ``quote``), each ``{kind, id, inlines | items | text, cited?}``; ``target`` is the
    id of the cited chunk's heading (or its first block), where the page scrolls — or,
    given the citation's ``anchor`` inside the chunk (an inner heading it is cited
    under), of the heading there."""
    parsed = parse(data, file_type, limits)
    body, blocks = parsed.body, list(parsed.blocks)
    if not blocks and body.strip():
        blocks = [Block(BlockKind.PARAGRAPH, 0, len(body), ())]
    first_cited = _first_overlap(blocks, cited)
    if cited is not None and anchor is not None and cited.start < anchor < cited.end:
        first_cited = next(
            (i for i, b in enumerate(blocks) if b.start <= anchor < b.end), first_cited
        )
    lo, hi = _window(len(blocks), first_cited)
    markdown = file_type == "markdown" or (file_type == "text" and _looks_markdown(blocks))
    if markdown:  # an Obsidian comment is not shown (blanked: offsets still hold)
        body = plaintext.blank_comments(body)
    target: str | None = None
    if first_cited is not None:
        heading = next(
            (j for j in range(first_cited, lo - 1, -1) if blocks[j].kind is BlockKind.HEADING),
            first_cited,
        )
        target = f"b{heading}"
    out: list[JSON] = []
    for i in range(lo, hi):
        block = blocks[i]
        item = _block(body[block.start : block.end], block, markdown)
        item["id"] = f"b{i}"
        if item["id"] != target and not _shows_anything(item):
            continue  # only a comment or a tag
        if cited is not None and block.start < cited.end and cited.start < block.end:
            item["cited"] = True
        out.append(item)
    return {
        "kind": "text",
        "title": parsed.title,
        "blocks": out,
        "target": target,
        "truncated": lo > 0 or hi < len(blocks),
    }


def _shows_anything(item: JSON) -> bool:
    if item["kind"] == "code":
        return True
    return any(str(v).strip() for v in _texts(item))


def _texts(value: object) -> Iterable[object]:
    if isinstance(value, dict):
        if "text" in value:
            yield value["text"]
        for key in ("inlines", "items", "rows"):
            yield from _texts(value.get(key, ()))
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def _looks_markdown(blocks: Sequence[Block]) -> bool:
    return any(b.kind is not BlockKind.PARAGRAPH for b in blocks)


def _first_overlap(blocks: Sequence[Block], cited: Chunk | None) -> int | None:
    if cited is None:
        return None
    for i, b in enumerate(blocks):
        if b.start < cited.end and cited.start < b.end:
            return i
    # A chunk between blocks (white space): the block before it.
    before = [i for i, b in enumerate(blocks) if b.start <= cited.start]
    return before[-1] if before else None


def _window(n: int, around: int | None) -> tuple[int, int]:
    if n <= MAX_BLOCKS:
        return 0, n
    centre = around or 0
    lo = max(0, min(centre - MAX_BLOCKS // 4, n - MAX_BLOCKS))
    return lo, lo + MAX_BLOCKS


def _block(source: str, block: Block, markdown: bool) -> JSON:
    source = source[:MAX_BLOCK_CHARS]
    kind = block.kind.value if block.kind is not BlockKind.OTHER else "paragraph"
    if kind == "code":
        return {"kind": "code", "text": _code_text(source) if markdown else source}
    if not markdown:
        if kind == "heading":
            return {
                "kind": "heading",
                "level": max(1, min(block.level, 6)),
                "inlines": _plain(source),
            }
        if kind == "list":
            items = [line.strip() for line in source.split("\n") if line.strip()]
            return {"kind": "list", "items": [_plain(item) for item in items]}
        return {"kind": kind if kind in ("table", "quote") else "paragraph", "text": source}
    tokens = _MD.parse(source)
    if kind == "heading":
        level = max(1, min(block.level, 6))
        return {"kind": "heading", "level": level, "inlines": _first_inline(tokens)}
    if kind == "list":
        return {"kind": "list", "items": _list_items(tokens)}
    if kind == "table":
        return {"kind": "table", "rows": _table_rows(tokens)}
    if kind == "quote":
        return {"kind": "quote", "inlines": _all_inlines(tokens)}
    return {"kind": "paragraph", "inlines": _all_inlines(tokens)}


def _code_text(source: str) -> str:
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith(("```", "~~~")):
        lines = lines[1:]
        if lines and lines[-1].strip().startswith(("```", "~~~")):
            lines = lines[:-1]
    return "\n".join(lines)


def _plain(text: str) -> list[JSON]:
    return [{"text": text}]


def _first_inline(tokens: Sequence[Token]) -> list[JSON]:
    inline = next((t for t in tokens if t.type == "inline"), None)
    return _inlines(inline.children or []) if inline is not None else []


def _all_inlines(tokens: Sequence[Token]) -> list[JSON]:
    runs: list[JSON] = []
    for token in tokens:
        if token.type == "inline":
            block = _inlines(token.children or [])
        elif token.type == "html_block":  # its text, never its tags
            block = _plain(plaintext.html_text(token.content))
        else:
            continue
        if runs and any(run["text"].strip() for run in block):
            runs.append({"text": "\n"})
        runs.extend(run for run in block if run["text"])
    return runs


def _list_items(tokens: Sequence[Token]) -> list[list[JSON]]:
    """The items of a (possibly nested) list, each as the inline runs of its text."""
    items: list[list[JSON]] = []
    depth = 0
    for token in tokens:
        if token.type == "list_item_open":
            depth += 1
            items.append([{"text": "\u2003" * (depth - 1)}] if depth > 1 else [])
        elif token.type == "list_item_close":
            depth -= 1
        elif token.type == "inline" and items:
            if len(items[-1]) > (1 if depth > 1 else 0):
                items[-1].append({"text": " "})
            items[-1].extend(_inlines(token.children or []))
    return items


def _table_rows(tokens: Sequence[Token]) -> list[list[list[JSON]]]:
    rows: list[list[list[JSON]]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(_inlines(token.children or []))
    return rows


def _inlines(children: Iterable[Token]) -> list[JSON]:
    """Inline tokens as runs: ``{text}``, with ``style`` (strong/em/code) or ``href``
    (http, https and mailto only; any other link keeps its text and loses its target)."""
    runs: list[JSON] = []
    styles: list[str] = []
    hrefs: list[str | None] = []

    def add(text: str, style: str | None = None) -> None:
        if not text:
            return
        run: JSON = {"text": text}
        style = style or (styles[-1] if styles else None)
        if style:
            run["style"] = style
        href = next((h for h in reversed(hrefs) if h), None)
        if href:
            run["href"] = href
        runs.append(run)

    for t in children:
        if t.type == "text":
            for piece in _wikilinks(t.content):
                add(piece)
        elif t.type in ("softbreak",):
            add(" ")
        elif t.type == "hardbreak":
            add("\n")
        elif t.type == "code_inline":
            add(t.content, "code")
        elif t.type in ("strong_open", "em_open"):
            styles.append(t.type.removesuffix("_open"))
        elif t.type in ("strong_close", "em_close"):
            if styles:
                styles.pop()
        elif t.type == "link_open":
            href = str(t.attrs.get("href", ""))
            hrefs.append(href if href.lower().startswith(SAFE_SCHEMES) else None)
        elif t.type == "link_close":
            if hrefs:
                hrefs.pop()
        elif t.type == "image":
            add(t.content or "image")
        elif t.type == "html_inline":
            continue  # a tag or a comment: never shown
        elif t.content:
            add(t.content)
    return runs


def _wikilinks(text: str) -> list[str]:
    """``[[Note|shown]]`` as a reader sees it ("shown"; "Note > Heading" without an
    alias); the rest unchanged."""
    return [
        _WIKILINK.sub(
            lambda m: m.group(3) or " > ".join(p for p in (m.group(1), m.group(2)) if p), text
        )
    ]


# -- links as written -----------------------------------------------------------------------

_LINK = re.compile(r"(!?)\[\[([^\[\]|#^\n]+)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_NOTE_SUFFIXES = ("", ".md", ".markdown")
MAX_WALK = 20_000  # files looked at to find an embedded attachment by name


def link_spellings(sections: Sequence[Chunk]) -> dict[str, str]:
    """Each link target as its note wrote it first, keyed by the stored (normalised) name.
    A ``\\`` before ``|`` (a link escaped inside a Markdown table) is not part of it."""
    out: dict[str, str] = {}
    for section in sections:
        for m in _LINK.finditer(section.text):
            written = m.group(2).strip()
            out.setdefault(note_name(written), written.rstrip("\\").strip())
    return out


def attachment_present(doc_path: str, source_root: str | None, target: str) -> bool:
    """Whether an embedded file (``![[diagram.png]]``) is in the vault: beside the note,
    at that path from the vault's root, or anywhere in it by name (as Obsidian finds it)."""
    if not target or "://" in doc_path:
        return False
    candidates = [Path(doc_path).parent / target]
    if source_root:
        candidates.append(Path(source_root) / target)
    if any(c.is_file() for c in candidates):
        return True
    if not source_root or not Path(source_root).is_dir():
        return False
    name = PurePosixPath(target).name
    seen = 0
    for _dir, _subdirs, files in os.walk(source_root):
        if name in files:
            return True
        seen += len(files)
        if seen > MAX_WALK:
            break
    return False


def is_attachment(target: str) -> bool:
    """A link to a file that is not a note (an image, a PDF): it never names a document."""
    suffix = PurePosixPath(target).suffix.lower()
    return bool(suffix) and suffix not in _NOTE_SUFFIXES and len(suffix) <= 6


# -- Obsidian -----------------------------------------------------------------------------

OBSIDIAN_NOTES = ("markdown",)


def is_vault(folder: str) -> bool:
    """A folder Obsidian opened as a vault: it holds ``.obsidian/``."""
    try:
        return (Path(folder) / ".obsidian").is_dir()
    except OSError:
        return False


def obsidian_uri(file_type: str, rel_path: str, vault_root: str | None) -> str | None:
    """``obsidian://open?vault=NAME&file=PATH`` for a note of a vault (a source folder
    with ``.obsidian/``), or None. Obsidian names a vault by its folder's name and a
    note by its path in the vault; both are percent-encoded whole."""
    if file_type not in OBSIDIAN_NOTES or not vault_root or not rel_path:
        return None
    name = PurePosixPath(vault_root).name
    if not name:
        return None
    return f"obsidian://open?vault={quote(name, safe='')}&file={quote(rel_path, safe='')}"


def vault_roots(sources: Iterable[Any]) -> dict[str, str]:
    """The folders among ``sources`` (``Source`` records) that are Obsidian vaults, by id."""
    return {s.id: s.path for s in sources if s.kind == "folder" and is_vault(s.path)}
