"""Markup removed so that text reads as text (pure functions).

Snippets keep their source's syntax (Markdown, Obsidian's wikilinks and comments,
reStructuredText's roles and directives): that is what is indexed and cited. What a
person reads — an extractive answer's sentences, a search hit's preview on a terminal —
is this module's plain form of it.
"""

from __future__ import annotations

import re

# Markdown (and Obsidian) syntax, removed so that a sentence reads as text.
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]")
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
# [text][label] and [text][]: a reference link (not an index, a[0][1], after a word)
_REF_LINK = re.compile(r"(?<![\w\]])\[([^\]\n]+)\]\[[^\]\n]*\]")
_FOOTNOTE = re.compile(r"\[\^[^\]\n]+\]")
# underscores inside a word (snake_case) are not emphasis
_EMPHASIS = re.compile(r"(\*{1,3}|(?<!\w)_{1,3}|~~|==)(?=\S)(.+?)(?<=\S)\1(?!(?<=_)\w)")
_CODE = re.compile(r"`+([^`\n]*)`+")
# an HTML tag as Markdown holds one (lower case): not a generic type, Option<String>
_HTML_TAG = re.compile(r"</?[a-z][a-z0-9-]*(?:\s[^<>\n]*)?/?>")
_HELD = re.compile(r"\ue000(\d+)\ue001")  # a code span set aside while markup goes
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)  # Obsidian and HTML comments
_BULLET = re.compile(r"\s*[•▪◦●]\s+")  # bullets inside extracted (PDF) text
_RST_ROLE = re.compile(
    r":[\w.+-]+(?::[\w.+-]+)*:`[~!]?([^`<\n]*?)\s*(?:<[^>`\n]*>)?`"
)  # :meth:`x <y>`
_RST_LINK = re.compile(r"`([^`<\n]+?)\s*<[^>`\n]*>`_{1,2}")  # `text <https://…>`_
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::")  # .. code-block:: python


def _wikilink_text(match: re.Match[str]) -> str:
    target, heading, alias = match.group(1), match.group(2), match.group(3)
    if alias and alias.strip():
        return alias.strip()
    return (target or "").strip() or (heading or "").strip()


def inline_plain(text: str) -> str:
    """One line of Markdown or reStructuredText as text: links and roles as their
    text, emphasis, code marks, tags and footnote marks removed, whitespace collapsed.
    Code is kept as written: ``Vec<T>`` is not a tag, ``__init__`` not emphasis."""
    text = _RST_ROLE.sub(r"\1", text)  # (their backticks are not code marks)
    text = _RST_LINK.sub(r"\1", text)
    codes: list[str] = []

    def hold(match: re.Match[str]) -> str:
        codes.append(match.group(1))
        return f"\ue000{len(codes) - 1}\ue001"

    text = _CODE.sub(hold, text)
    text = _EMBED.sub("", text)
    text = _WIKILINK.sub(_wikilink_text, text)
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _FOOTNOTE.sub("", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    for _ in range(2):  # nested emphasis: ***x*** or **_x_**
        text = _EMPHASIS.sub(r"\2", text)
    if codes:
        text = _HELD.sub(lambda m: codes[int(m.group(1))], text)
    return " ".join(text.split())


def plain_units(markdown: str) -> list[str]:
    """The text of ``markdown`` as readable units: paragraphs and list items with their
    markup removed (wikilinks as their alias or target, links as their text, emphasis,
    list and quote markers, comments gone). Heading lines, rules, tables and code
    blocks are not prose, so they are left out: an answer never starts with ``##``."""
    return [text for text, _ in units(markdown)]


def units(markdown: str, *, code: bool = False) -> list[tuple[str, bool]]:
    """:func:`plain_units`, each saying whether it is a list item; with ``code``, code
    blocks are kept too (their lines as text, without the fences)."""
    units: list[tuple[str, bool]] = []
    current: list[str] = []
    item = False

    def close() -> None:
        for k, part in enumerate(_BULLET.split(" ".join(current))):
            text = inline_plain(part)
            if text:
                units.append((text, item or k > 0))
        current.clear()

    in_code = was_quote = False
    literal = False  # in reStructuredText's indented block after "::" or a directive
    for line in _COMMENT.sub("", markdown).splitlines():
        if literal and (not line.strip() or line[:1].isspace()):
            in_code = True
        elif literal:
            literal = in_code = False
        if _FENCE.match(line) and not literal:
            in_code = not in_code
            close()
            continue
        if in_code:
            close()
            if code and line.strip():  # as it is: no markup is read inside code
                units.append((" ".join(line.split()), False))
            continue
        if _RST_DIRECTIVE.match(line):
            close()
            literal = True
            continue
        if _SETEXT.match(line) and current:
            current.clear()  # the lines above were a heading
            continue
        if _HEADING.match(line) or _RULE.match(line) or _TABLE_ROW.match(line):
            close()
            continue
        if line.rstrip().endswith("::"):  # "Like this::" reads "Like this:", then code
            literal = True
            line = line.rstrip()[:-1]
            if line.strip() == ":":
                close()
                continue
        if not line.strip():
            close()
            continue
        is_quote = bool(_QUOTE.match(line))
        quoted = _QUOTE.sub("", line)
        marker = _LIST_ITEM.match(quoted)
        if marker or is_quote != was_quote:  # a list item or a quote begins a unit
            close()
            item = bool(marker)
            quoted = quoted[marker.end() :] if marker else quoted
        elif not current:
            item = False
        was_quote = is_quote
        current.append(quoted)
    close()
    return units


def preview(text: str, limit: int) -> str:
    """A snippet's text as one line of at most ``limit`` characters (then "…"), to read
    beside its citation: headings (the citation names them), directives and markup
    removed, code kept as text. A snippet that is all markup shows its own text, less
    its comments (which a reader of the note never sees)."""
    body = " ".join(t for t, _ in units(text, code=True))
    body = body or " ".join(_COMMENT.sub("", text).split()) or " ".join(text.split())
    return body if len(body) <= limit else body[:limit].rstrip() + "…"
