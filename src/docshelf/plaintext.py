"""Markup read as text (pure functions).

Snippets keep their source's syntax (Markdown, Obsidian's wikilinks and comments,
reStructuredText's Sphinx roles): that is what is indexed and cited. What a person reads
is this module's form of it:

- :func:`readable` — a snippet or a context as a person reads it, kept whole: Markdown
  read by a CommonMark parser (markdown-it: code as written, emphasis marks, link
  syntax, HTML tags and comments gone, lists as bullets), reStructuredText with its
  Sphinx roles as Sphinx shows them, any other text as it is. Every face shows this
  (``views`` adds it to hits and contexts as ``display_text``); :func:`preview` is its
  first lines, for a terminal.
- :func:`units` / :func:`plain_units` — the prose of a text as sentences-to-be
  (paragraphs and list items, no headings, code or tables): extractive answers and
  offline summaries read these.

Which markup a stored text carries is its document's file type (``markup_of``).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # markdown-it is imported when a Markdown text is first read
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

Markup = Literal["markdown", "rst", "plain"]

# Markdown (and Obsidian) syntax, removed so that a sentence reads as text.
# Where one sentence ends and the next begins (answers, enrichment, model adaptation):
# not after an abbreviation that stands inside sentences ("(i.e. Dataview)", "et al.")
SENTENCE_BOUNDARY = re.compile(
    r"(?<!\bi\.e\.)(?<!\be\.g\.)(?<!\bcf\.)(?<!\bvs\.)(?<!\bal\.)"
    r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
# the bullets a PDF's or a Word file's text carries for its lists' items
_BULLETS = "•◦▪●‣"
# a list item: Markdown's markers, or a bullet
_LIST_ITEM = re.compile(rf"^\s*(?:[-*+{_BULLETS}]|\d{{1,9}}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# A label line: a few words, then ":", a dash or "=", then a value ("Plugin ID: `switcher`",
# "**Linux** — 12.1%", "Default: ``True``"): a fact of its own even without a full stop.
_LABEL_LINE = re.compile(
    r"^\s*(?:\*\*|__)?[^\W_][\w.'/()&+%-]*(?:\s[\w.'/()&+%-]+){0,4}?(?:\*\*|__)?"
    r"(?::|\s[\u2014\u2013=]|\s--?)\s+\S"
)
# Where a line may end a unit so that a label line after it begins its own: a sentence's
# end or a lead-in's colon.
_ENDS_UNIT = re.compile(r"[.!?:;][\"')\]*_`]*\s*$")
# A line that is a template's directive alone, not text: mdBook's "{{#include …}}", a
# Jinja "{% … %}" (what a docs build puts there is not in the source).
_DIRECTIVE = re.compile(r"^\s*(?:\{\{.*\}\}|\{%.*%\})\s*$")
_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]")
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
# a link's destination: in <…>, or with parentheses that pair up ("…/Hierarchy+(SOP)")
_DESTINATION = r"\((?:<[^>\n]*>[^)\n]*|(?:[^()\n]|\([^()\n]*\))*)\)"
_IMAGE = re.compile(r"!\[([^\]\n]*)\]" + _DESTINATION)
_LINK = re.compile(r"\[([^\]\n]*)\]" + _DESTINATION)
# [text][label] and [text][]: a reference link (not an index, a[0][1], after a word)
_REF_LINK = re.compile(r"(?<![\w\]])\[([^\]\n]+)\]\[[^\]\n]*\]")
_FOOTNOTE = re.compile(r"\[\^[^\]\n]+\]")
# underscores inside a word (snake_case) are not emphasis
_EMPHASIS = re.compile(r"(\*{1,3}|(?<!\w)_{1,3}|~~|==)(?=\S)(.+?)(?<=\S)\1(?!(?<=_)\w)")
_CODE = re.compile(r"`+([^`\n]*)`+")
# an HTML tag as Markdown holds one (lower case): not a generic type, Option<String>
_HTML_TAG = re.compile(r"</?[a-z][a-z0-9-]*(?:\s[^<>\n]*)?/?>")
_HELD = re.compile(r"\ue000(\d+)\ue001")  # a code span set aside while markup goes
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_BULLET = re.compile(rf"\s*[{_BULLETS}]\s+")  # bullets inside extracted (PDF) text
# a Sphinx role: :meth:`~flask.Flask.route`, :py:class:`Blueprint`, :ref:`the tutorial <t>`
_RST_ROLE = re.compile(r":((?:[\w.+-]+:)*[\w.+-]+):`([^`\n]+)`")
_ROLE_TITLE = re.compile(r"(.*?)\s*<([^<>]*)>", re.DOTALL)  # "title <target>"
# Python's cross-references: a target's leading "." and "~" only say how to find it and
# how much of it to show; functions and methods are shown with "()"
_PYTHON_ROLES = frozenset(
    {"class", "meth", "func", "attr", "data", "exc", "obj", "mod", "const", "type"}
)
_CALLABLE_ROLES = frozenset({"func", "meth"})
_NUMBERED_ROLES = {"pep": "PEP", "rfc": "RFC"}
_RST_LINK = re.compile(r"`([^`<\n]+?)\s*<[^>`\n]*>`_{1,2}")  # `text <https://…>`_
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::")  # .. code-block:: python
# a console session's first line, its prompt and command ("$ flask --app hello run",
# ">>> app.url_map"): in a text whose code is not marked (a parsed page, a PDF), the lines
# down to the next blank one are the session and its output (" * Serving Flask app")
_PROMPT = re.compile(r"^\s*(?:\$|>>>)\s")


def wikilinks_as_text(text: str) -> str:
    """``text`` with each wikilink as Obsidian shows it: its alias, else its target
    ("An Introduction to [[dataview|Dataview]]" reads "An Introduction to Dataview")."""
    return _WIKILINK.sub(_wikilink_text, text)


def _wikilink_text(match: re.Match[str]) -> str:
    target, heading, alias = match.group(1), match.group(2), match.group(3)
    if alias and alias.strip():
        return alias.strip()
    return (target or "").strip() or (heading or "").strip()


def _role_text(match: re.Match[str]) -> str:
    """A Sphinx role as Sphinx shows it: an explicit title (``:ref:`the guide <g>```);
    else its target without a leading ``!``, and for Python's cross-references without
    a leading ``.`` or the parts a ``~`` drops (``~flask.Flask.route`` → ``route``), a
    function or method with ``()``; ``:pep:`8``` as PEP 8."""
    role, content = match.group(1).removeprefix("py:"), match.group(2).strip()
    titled = _ROLE_TITLE.fullmatch(content)
    if titled and titled.group(1):
        return titled.group(1)
    text = (titled.group(2) if titled else content).strip().removeprefix("!")
    if role in _NUMBERED_ROLES:
        return f"{_NUMBERED_ROLES[role]} {text}"
    if role not in _PYTHON_ROLES:
        return text  # a file, a label, a document, an option: as written
    text = text.lstrip(".")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    if role in _CALLABLE_ROLES and not text.endswith(")"):
        text += "()"
    return text


def sphinx_roles(text: str) -> str:
    """``text`` with each Sphinx role (``:class:`~flask.Flask```) as Sphinx shows it
    (``Flask``); the rest as it is."""
    return _RST_ROLE.sub(_role_text, text) if ":`" in text else text


def inline_plain(text: str) -> str:
    """One line of Markdown or reStructuredText as text: links and roles as their
    text, emphasis, code marks, tags and footnote marks removed, whitespace collapsed.
    Code is kept as written: ``Vec<T>`` is not a tag, ``__init__`` not emphasis."""
    text = sphinx_roles(text)  # (their backticks are not code marks)
    text = _RST_LINK.sub(r"\1", text)
    codes: list[str] = []

    def hold(match: re.Match[str]) -> str:
        codes.append(match.group(1))
        return f"\ue000{len(codes) - 1}\ue001"

    text = _CODE.sub(hold, text)
    text = _EMBED.sub("", text)
    text = wikilinks_as_text(text)
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


# what is not a block's words: a link's address, an HTML tag, a URL
_ADDRESS = re.compile(rf"\]\([^)\n]*\)|{_HTML_TAG.pattern}|\b(?:https?://|www\.)\S+")
_WORD = re.compile(r"\w+")


def repeat_key(text: str) -> str | None:
    """A block of text as many files repeat it (a footer, a template's boilerplate): a
    hash of its words as read — a link's text, not its address; no HTML tags, no URLs;
    case and punctuation aside — so the same footer linking to each file's own address
    has one key. None for a text with no words."""
    words = _WORD.findall(_ADDRESS.sub(" ", text).casefold())
    return hashlib.sha1(" ".join(words).encode()).hexdigest()[:16] if words else None


def plain_units(text: str, markup: Markup = "markdown") -> list[str]:
    """The prose of ``text`` as readable units: paragraphs and list items with their
    markup removed (wikilinks as their alias or target, links as their text, emphasis,
    list and quote markers, comments gone). Heading lines, rules, tables and code
    blocks are not prose, so they are left out: an answer never starts with ``##``.
    Text that is not Markdown (``markup``) keeps its characters: only its Sphinx roles
    read as text (``Flask(__name__)`` is no emphasis there, ``>>>`` no quote)."""
    return [unit for unit, _ in units(text, markup)]


def units(text: str, markup: Markup = "markdown") -> list[tuple[str, bool]]:
    """:func:`plain_units`, each saying whether it is a list item. A label line
    (``Plugin ID: `switcher```) after a sentence's end, a colon or another label line
    is a unit of its own, read as an item: lines of facts are not one run-on sentence."""
    markdown = markup == "markdown"
    units: list[tuple[str, bool]] = []
    current: list[str] = []
    item = False

    def close() -> None:
        for k, part in enumerate(_BULLET.split(" ".join(current))):
            plain = inline_plain(part) if markdown else " ".join(sphinx_roles(part).split())
            if plain:
                units.append((plain, item or k > 0))
        current.clear()

    in_code = was_quote = console = False
    literal = False  # in reStructuredText's indented block after "::" or a directive
    if markdown:  # comments unseen, links as their text (not inside code), embeds gone
        text = _HTML_COMMENT.sub("", _obsidian(text, prose=True))
    for line in text.splitlines():
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
            continue
        if _RST_DIRECTIVE.match(line):
            close()
            literal = True
            continue
        if not markdown and (console or _PROMPT.match(line)):
            console = bool(line.strip())
            close()
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
        is_quote = markdown and bool(_QUOTE.match(line))
        quoted = _QUOTE.sub("", line) if markdown else line
        marker = _LIST_ITEM.match(quoted)
        label = not marker and _label_after(quoted, current)
        if marker or label or is_quote != was_quote:  # an item or a quote begins a unit
            close()
            item = bool(marker) or label
            quoted = quoted[marker.end() :] if marker else quoted
        elif not current:
            item = False
        was_quote = is_quote
        current.append(quoted)
    close()
    return units


def _label_after(line: str, current: list[str]) -> bool:
    """Whether ``line`` is a label line that begins a unit of its own after ``current``'s
    lines: at the start, or after a line that ends a sentence or is a label itself."""
    if not _LABEL_LINE.match(line):
        return False
    return (
        not current or bool(_ENDS_UNIT.search(current[-1])) or bool(_LABEL_LINE.match(current[-1]))
    )


# -- what a person reads -------------------------------------------------------------------


INTRODUCED_CHARS = 300  # of a lead-in's list or code, at most


def introduced(text: str, markup: Markup = "markdown") -> dict[str, str]:
    """What each lead-in of ``text`` that ends in ":" introduces when a list or a code
    block follows it: keyed by the lead-in's last line as plain text (colon kept), the
    list's items joined by commas or the code's lines by "; ", at most
    ``INTRODUCED_CHARS`` characters ("run the following from your shell:" brings
    ``rustup self uninstall``; "reserved for future use:" its keywords)."""
    lines = text.splitlines()
    found: dict[str, str] = {}
    for i, line in enumerate(lines):
        # (a colon inside emphasis ends a lead-in too: "**Add markers using:**")
        lead_in = line.rstrip().rstrip("*_").endswith(":")
        if not lead_in or _FENCE.match(line) or _LIST_ITEM.match(line):
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        parts: list[str] = []
        if j < len(lines) and _FENCE.match(lines[j]):
            for code in lines[j + 1 :]:
                if _FENCE.match(code):
                    break
                if code.strip() and not _DIRECTIVE.match(code):
                    parts.append(code.strip())
            block = "; ".join(parts)
        else:
            parts = _items(lines[j:], markup)
            block = ", ".join(p for p in parts if p)
        if block:
            lead = inline_plain(line) if markup == "markdown" else " ".join(line.split())
            found[lead] = (
                block if len(block) <= INTRODUCED_CHARS else block[: INTRODUCED_CHARS - 1] + "…"
            )
    return found


def _items(lines: list[str], markup: Markup) -> list[str]:
    """The items of the list that ``lines`` begin with, as plain text: its list items, or
    in Markdown its label lines ("**Linux** — 12.1%"), blank lines between them (a loose
    list) and the quoted lines under one (its details) passed over."""
    items: list[str] = []
    for line in lines:
        if not line.strip() or (items and _QUOTE.match(line)):
            continue
        if marker := _LIST_ITEM.match(line):
            items.append(inline_plain(line[marker.end() :]).rstrip(".;,"))
        elif markup == "markdown" and _LABEL_LINE.match(line):
            items.append(inline_plain(line).rstrip(".;,"))
        else:
            break
    return items


def markup_of(file_type: str, has_headings: bool) -> Markup:
    """The markup a stored text of a ``file_type`` document carries. A text file is read
    as Markdown when its parse found headings (a plain text parse finds none: the file
    was read as Markdown); other formats' parsers store text, not markup — except the
    Sphinx roles docutils leaves in reStructuredText."""
    if file_type == "markdown" or (file_type == "text" and has_headings):
        return "markdown"
    return "rst" if file_type == "rst" else "plain"


def readable(text: str, markup: Markup) -> str:
    """``text`` as a person reads it (see the module's docstring): blocks apart by a blank
    line, list items and table rows a line each, code blocks line for line as written."""
    if markup == "markdown":
        return _markdown(text)
    if markup == "rst":
        return sphinx_roles(text)
    return text


def preview(text: str, limit: int, *, lines: int = 6, skip: Collection[str] = ()) -> str:
    """The start of a :func:`readable` text, to read beside its citation: its non-blank
    lines (at most ``lines``; leading lines that are among ``skip``, the headings the
    citation names, left out), at most ``limit`` characters, then "…" if there was more."""
    kept = [line.rstrip() for line in text.split("\n") if line.strip()]
    while len(kept) > 1 and kept[0].strip() in skip:
        kept.pop(0)
    out = "\n".join(kept[:lines])
    more = len(kept) > lines
    if len(out) > limit:
        out = out[:limit]
        space = out.rfind(" ")
        if space > limit * 0.8:
            out = out[:space]
        more = True
    return out.rstrip() + "…" if more else out


@functools.cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# what an Obsidian note holds outside code that CommonMark does not know: a code span
# (kept as it is), a %% comment (to its closing %%, or the end), a wikilink or embed
_OBSIDIAN = re.compile(
    r"(?P<code>(`+)(?:[^`\n]|\n(?![ \t]*\n))*?(?<!`)\2(?!`))"
    r"|%%.*?(?:%%|\Z)"
    r"|!?\[\[(?P<link>[^\[\]\n]*)\]\]",
    re.DOTALL,
)


def _wikilink(target: str, prose: bool) -> str:
    """``[[Note#Heading|alias]]`` as a reader sees it: the alias, else "Note > Heading"
    (in ``prose``, a sentence's: "Note", or "Heading" of a link inside the note)."""
    link, _, alias = target.partition("|")
    if alias.strip():
        return alias.strip()
    note, _, heading = (p.strip() for p in link.partition("#"))
    if prose:
        return note or heading
    return " > ".join(p for p in (note, heading) if p)


def _obsidian(text: str, prose: bool = False) -> str:
    """``text`` without its ``%%`` comments and with its wikilinks as their text, code
    (fenced blocks, code spans) as it is. In ``prose`` (what a sentence reads), embeds
    are gone and a link is its note's name (:func:`_wikilink`)."""
    if "%%" not in text and "[[" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        if match.group("code") is not None:
            return match.group(0)
        link = match.group("link")
        if link is None or (prose and match.group(0).startswith("!")):
            return ""
        return _wikilink(link, prose)

    return _outside_code(text, lambda part: _OBSIDIAN.sub(one, part))


def blank_comments(text: str) -> str:
    """``text`` with its Obsidian ``%%`` comments (outside code) as spaces, line breaks
    kept: the same length, so that offsets into it still hold."""
    if "%%" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        if match.group(0).startswith("%%"):
            return re.sub(r"[^\n]", " ", match.group(0))
        return match.group(0)

    return _outside_code(text, lambda part: _OBSIDIAN.sub(one, part))


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    """``text`` with ``change`` applied to each stretch of lines outside fenced code."""
    out: list[str] = []
    between: list[str] = []  # lines outside fenced code
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        opened = _FENCE_LINE.match(line)
        if fence is None and opened:
            out.append(change("".join(between)))
            between.clear()
            fence = opened.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            closing = line.strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                fence = None
        else:
            between.append(line)
    out.append(change("".join(between)))
    return "".join(out)


def _markdown(text: str) -> str:
    tokens = _parser().parse(_obsidian(text))
    # each block with its group: the lines of one list or one table follow each other
    # without a blank line; other blocks stand apart
    blocks: list[tuple[str, int | None]] = []
    groups = 0
    group: int | None = None
    lists: list[int | None] = []  # each open list's next number (None: bullets)
    marker: str | None = None  # a list item's, until its first block
    row: list[str] | None = None  # a table row's cells

    def add(block: str) -> None:
        nonlocal marker
        if not block.strip():
            return
        if lists:
            indent = "  " * len(lists)
            lines = block.split("\n")
            first = marker if marker is not None else indent
            block = "\n".join([first + lines[0], *(indent + line for line in lines[1:])])
            marker = None
        blocks.append((block, group))

    for token in tokens:
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open", "table_open"):
            if group is None:
                groups += 1
                group = groups
            if kind != "table_open":
                lists.append(int(token.attrs.get("start", 1)) if kind[0] == "o" else None)
        elif kind in ("bullet_list_close", "ordered_list_close", "table_close"):
            if kind != "table_close":
                lists.pop()
            if not lists:
                group = None
        elif kind == "list_item_open":
            number = lists[-1]
            if number is not None:
                lists[-1] = number + 1
            marker = "  " * (len(lists) - 1) + ("• " if number is None else f"{number}. ")
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None:
            add(" | ".join(row))
            row = None
        elif kind == "inline":
            line = _inline(token.children or [])
            if row is not None:
                row.append(line)
            else:
                add(line)
        elif kind in ("fence", "code_block"):
            add(token.content.rstrip("\n"))
        elif kind == "html_block":
            add(html_text(token.content))
    out: list[str] = []
    for n, (block, in_group) in enumerate(blocks):
        if n:
            out.append("\n" if in_group is not None and in_group == blocks[n - 1][1] else "\n\n")
        out.append(block)
    return "".join(out)


def _inline(children: list[Token]) -> str:
    parts: list[str] = []
    for child in children:
        kind = child.type
        if kind == "text":
            parts.append(_FOOTNOTE.sub("", _REF_LINK.sub(r"\1", child.content)))
        elif kind == "code_inline":
            parts.append(child.content)
        elif kind == "softbreak":
            parts.append(" ")
        elif kind == "hardbreak":
            parts.append("\n")
    return "".join(parts).strip()


def html_text(markup: str) -> str:
    """The text of a block of HTML as a browser shows it: tags (whatever their
    attributes hold), comments and the content of scripts and styles gone, entities
    read; its lines apart, blank ones left out."""
    from html.parser import HTMLParser  # (only for a note that holds HTML)

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.hidden = 0  # inside <script> or <style>

        def handle_starttag(self, tag: str, attrs: object) -> None:
            if tag in _UNSHOWN:
                self.hidden += 1

        def handle_endtag(self, tag: str) -> None:
            if tag in _UNSHOWN and self.hidden:
                self.hidden -= 1

        def handle_data(self, data: str) -> None:
            if not self.hidden:
                self.parts.append(data)

    parser = Text()
    parser.feed(_OPEN_COMMENT.sub("", markup))  # (a comment this block does not close)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


_UNSHOWN = frozenset({"script", "style"})
_OPEN_COMMENT = re.compile(r"<!--(?:(?!-->).)*\Z", re.DOTALL)
