"""Obsidian-style links between notes: ``[[note]]``, ``[[note|alias]]``,
``[[note#heading]]`` and embeds ``![[note]]`` (pure functions).

Links are kept by the name they use; they are resolved to documents when read,
so a link to a note that arrives later starts to resolve without re-indexing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from docshelf.model import BlockKind, ParsedDocument

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#^\n]+)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


@dataclass(frozen=True)
class WikiLink:
    target: str  # the normalised note name: lowercase, no ".md", forward slashes
    heading: str | None
    alias: str | None
    embed: bool


def note_name(name: str) -> str:
    """How notes are matched: case-insensitive, without a Markdown extension."""
    name = name.strip().replace("\\", "/").casefold()
    for ext in (".md", ".markdown"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def is_attachment(target: str) -> bool:
    """Whether a link names a file that is not a note (``![[diagram.png]]``,
    ``[[paper.pdf]]``): its name ends in an extension of letters (and digits) that is not
    a note's. ``[[Release 1.2]]`` names a note."""
    suffix = PurePosixPath(target).suffix.lower()[1:]
    return 0 < len(suffix) <= 5 and suffix.isascii() and suffix.isalnum() and not suffix.isdigit()


def wikilinks(doc: ParsedDocument) -> list[WikiLink]:
    """The wikilinks of a parsed Markdown document, outside code, in order, deduplicated."""
    found: dict[WikiLink, None] = {}
    for block in doc.blocks:
        if block.kind is BlockKind.CODE:
            continue
        text = _INLINE_CODE.sub(" ", doc.body[block.start : block.end])
        for m in _WIKILINK.finditer(text):
            target = note_name(m.group(2))
            if not target:
                continue
            heading = (m.group(3) or "").strip() or None
            alias = (m.group(4) or "").strip() or None
            found.setdefault(WikiLink(target, heading, alias, bool(m.group(1))), None)
    return list(found)


def names_for(rel_path: str, title: str, aliases: Iterable[str]) -> list[str]:
    """The names a note answers to: its path and file name (without extension),
    its title and its aliases — all normalised with ``note_name``."""
    path = note_name(rel_path)
    names = [path, PurePosixPath(path).name, note_name(title), *map(note_name, aliases)]
    return [n for n in dict.fromkeys(names) if n]
