"""Markdown (CommonMark plus tables) with optional YAML frontmatter.

Blocks are markdown-it's top-level block tokens, located through their line
maps. Only headings' inline markup is parsed (for their plain text, from at
most the first ``HEADING_CHARS`` characters): the inline parse of a whole
body would cost many times its size in tokens, and nothing else needs it.

A valid frontmatter mapping (``---`` … ``---`` at the very top) is read for
``title``, ``tags`` and ``aliases`` and removed from the body, so ``body``
and every span into it start after the frontmatter. Frontmatter that is not
valid YAML, or not a mapping, is only a warning: its text stays in the body as
ordinary content, so nothing is lost.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from docshelf.model import Block, BlockKind, ParsedDocument
from docshelf.plaintext import wikilinks_as_text

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@functools.cache
def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    """The block parser and the headings' inline one, built on first use: a command
    that parses nothing (an unchanged sync) never imports markdown-it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").disable("inline"), MarkdownIt("commonmark")


HEADING_CHARS = 1000

_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"(`+).*?\1", re.DOTALL)
_INLINE_HTML = re.compile(r"</?[A-Za-z][^<>]*>")  # a tag of inline HTML, attributes and all
_INLINE_TAG = re.compile(r"(?<!\S)#([^\W\d_][\w/-]*)")
_LIST_SEPARATORS = re.compile(r"[,\s]+")
# A title that is only a template's placeholders ("{{title}}", "<% tp.file.title %>"): a note
# made from a template and never named; it names nothing, so the file's own name stands.
_PLACEHOLDER_TITLE = re.compile(r"\A\s*(?:(?:\{\{[^{}]*\}\}|<%.*?%>)\s*)+\Z", re.DOTALL)

_BLOCK_KINDS: dict[str, BlockKind] = {
    "heading_open": BlockKind.HEADING,
    "paragraph_open": BlockKind.PARAGRAPH,
    "bullet_list_open": BlockKind.LIST,
    "ordered_list_open": BlockKind.LIST,
    "fence": BlockKind.CODE,
    "code_block": BlockKind.CODE,
    "table_open": BlockKind.TABLE,
    "blockquote_open": BlockKind.QUOTE,
}


@dataclass
class _Frontmatter:
    title: str | None = None
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_markdown(text: str) -> ParsedDocument:
    """Parse decoded markdown (LF line ends) into blocks, title, tags and aliases."""
    front, body = _split_frontmatter(text)
    tokens = _parsers()[0].parse(body)
    blocks = tuple(_blocks(body, tokens))
    h1_titles = (b.heading_path[0] for b in blocks if b.level == 1 and b.heading_path)
    named = (t for t in (front.title, *h1_titles) if t and not _PLACEHOLDER_TITLE.match(t))
    title = next(named, None)
    return ParsedDocument(
        body=body,
        blocks=blocks,
        title=title,
        tags=_unique([*front.tags, *_inline_tags(body, blocks, _html_starts(body, tokens))]),
        aliases=_unique(front.aliases),
        warnings=tuple(front.warnings),
    )


# -- frontmatter ---------------------------------------------------------------


def _split_frontmatter(text: str) -> tuple[_Frontmatter, str]:
    """The frontmatter's fields and the body after it (the whole text if there is none)."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return _Frontmatter(), text
    import yaml  # only for a file with frontmatter

    try:
        data = yaml.safe_load(match.group(1) or "")
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        return _Frontmatter(warnings=[f"invalid YAML frontmatter, ignored: {_describe(exc)}"]), text
    if data is None:
        return _Frontmatter(), text[match.end() :]
    if not isinstance(data, dict):
        kind = type(data).__name__
        return _Frontmatter(warnings=[f"frontmatter is a {kind}, not a mapping; ignored"]), text
    return _read_fields(data), text[match.end() :]


def _describe(exc: Exception) -> str:
    """A one-line description of a YAML error, with its line number in the file."""
    import yaml

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        # +2: marks are 0-based and counted from the line after the opening "---".
        return f"{exc.problem} at line {exc.problem_mark.line + 2}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _read_fields(data: dict[Any, Any]) -> _Frontmatter:
    front = _Frontmatter()
    title = data.get("title")
    if isinstance(title, str | int | float) and not isinstance(title, bool):
        front.title = " ".join(str(title).split()) or None
    elif title is not None:
        front.warnings.append("frontmatter title is not text; ignored")
    front.tags = [t.lstrip("#") for t in _strings(data.get("tags"), _LIST_SEPARATORS)]
    front.tags = [t for t in front.tags if t]
    front.aliases = _strings(data.get("aliases"), re.compile(r"\s*,\s*"))
    return front


def _strings(value: object, separators: re.Pattern[str]) -> list[str]:
    """A list of strings from a YAML list, or from a string split on ``separators``."""
    if isinstance(value, str):
        items: Sequence[object] = separators.split(value)
    elif isinstance(value, list):
        items = value
    else:
        return []
    strings = (" ".join(str(v).split()) for v in items if isinstance(v, str | int | float))
    return [s for s in strings if s]


# -- blocks --------------------------------------------------------------------


def _blocks(body: str, tokens: Sequence[Token]) -> Iterator[Block]:
    """One Block per top-level token, with the heading path in force at it."""
    line_starts = _line_starts(body)
    headings: list[tuple[int, str]] = []  # the open headings: (level, text)
    for i, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        start, end = _span(body, line_starts, token.map[0], token.map[1])
        if start >= end:
            continue
        kind = _BLOCK_KINDS.get(token.type, BlockKind.OTHER)
        level = 0
        if kind is BlockKind.HEADING:
            level = int(token.tag[1:])
            while headings and headings[-1][0] >= level:
                headings.pop()
            text = _heading_text(tokens[i + 1]) if i + 1 < len(tokens) else ""
            if text:
                headings.append((level, text))
        yield Block(kind, start, end, tuple(t for _, t in headings), level=level)


def _line_starts(body: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", body))]


def _span(body: str, line_starts: list[int], first: int, last: int) -> tuple[int, int]:
    """Character span of lines [first, last), without surrounding whitespace."""
    start = line_starts[first] if first < len(line_starts) else len(body)
    end = line_starts[last] if last < len(line_starts) else len(body)
    text = body[start:end]
    stripped = text.strip()
    if not stripped:
        return start, start
    start += len(text) - len(text.lstrip())
    return start, start + len(stripped)


def _heading_text(inline: Token) -> str:
    """The visible text of a heading's inline token (its words, without markup; a
    wikilink as its alias or target, as Obsidian shows it)."""
    parsed = _parsers()[1].parseInline(inline.content[:HEADING_CHARS])
    parts: list[str] = []
    prose: list[str] = []  # the text since the last code span or image

    def said() -> None:
        parts.append(wikilinks_as_text("".join(prose)))
        prose.clear()

    for child in parsed[0].children or [] if parsed else []:
        if child.type == "text":
            prose.append(child.content)
        elif child.type in ("code_inline", "image"):
            said()
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            prose.append(" ")
    said()
    return " ".join("".join(parts).split())


# -- tags ----------------------------------------------------------------------


def _inline_tags(body: str, blocks: Sequence[Block], html: frozenset[int]) -> list[str]:
    """``#tags`` in the text of non-code blocks, outside inline code spans and HTML
    (``html``: where HTML blocks start; their text is not markdown, so the colours of a
    ``<td style="color: #fff">`` are no tags, as Obsidian sees them)."""
    tags: list[str] = []
    for block in blocks:
        if block.kind is BlockKind.CODE or block.start in html:
            continue
        text = _INLINE_HTML.sub(" ", _INLINE_CODE.sub(" ", body[block.start : block.end]))
        tags.extend(m.group(1) for m in _INLINE_TAG.finditer(text))
    return tags


def _html_starts(body: str, tokens: Sequence[Token]) -> frozenset[int]:
    """Where each top-level HTML block starts in ``body`` (as its ``Block`` does)."""
    html = [t.map for t in tokens if t.type == "html_block" and t.level == 0 and t.map]
    if not html:
        return frozenset()
    line_starts = _line_starts(body)
    return frozenset(_span(body, line_starts, first, last)[0] for first, last in html)


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
