"""reStructuredText: sections, paragraphs, lists, literal blocks and tables, with docutils.

docutils parses the text into a document tree; its messages go nowhere (not to
stderr) and nothing is ever read from outside the text: ``include`` and
``raw`` directives are disabled and docutils configuration files are ignored,
so the result depends on the text alone.

- The document title (a lone top-level section title, docutils' usual
  promotion) is a level-1 heading and the title; sections below it are
  headings one level deeper per nesting (at most 6).
- A file that opens with an RFC 822 header block (``Key: value`` lines, as
  Python PEPs do) is parsed with docutils' RFC 2822 front matter; its
  ``Title:`` is the title and the block is kept as a list. Without either, the
  title is the first top-level heading unless that is a generic section name
  ("Abstract", "Introduction", …): then there is none and the file name
  stands in for it.
- A directive docutils does not know — Sphinx's ``py:data``, ``function``,
  ``versionadded``, ``autoclass``, ``sourcecode`` … — is read as its argument line
  (a config key, a signature; ``versionadded`` as "New in version …") and its body
  as reStructuredText (``sourcecode``'s as code), where docutils alone would keep
  only an error message; ``toctree``, ``currentmodule``, ``literalinclude`` and
  ``rst-class`` name files or settings, not text, and are left out. docutils'
  messages (an unknown role's, say) are never part of the text.
- Paragraphs → PARAGRAPH; literal and doctest blocks → CODE; tables → TABLE
  (a line per row, cells joined with `` | ``); bullet, enumerated,
  definition, field and option lists → LIST (``- item`` per item, nested
  lists indented); block quotes → QUOTE. Admonitions, topics, sidebars and
  other containers are read through.
"""

from __future__ import annotations

import copy
import functools
import io
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from docutils import nodes
from docutils.core import publish_doctree
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import SystemMessage, new_document

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse._blocks import BodyBuilder, one_line

__all__ = ["parse_rst"]

_SETTINGS = {
    "report_level": 5,  # no messages kept in the tree
    "halt_level": 5,  # never stop at an error
    "warning_stream": io.StringIO(),  # replaced per call; never stderr
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "_disable_config": True,
    "input_encoding": "unicode",
    "traceback": True,  # our caller reports errors; docutils must not exit
    "syntax_highlight": "none",
}
_LISTS = (
    nodes.bullet_list,
    nodes.enumerated_list,
    nodes.definition_list,
    nodes.field_list,
    nodes.option_list,
)
_SKIP = (
    nodes.system_message,
    nodes.comment,
    nodes.target,
    nodes.substitution_definition,
    nodes.pending,
    nodes.raw,
    nodes.footnote_reference,
)
# An RFC 822 header block: "Key: value" lines (continuations indented) up to a blank line.
_HEADER_BLOCK = re.compile(
    r"\A(?:[A-Za-z][\w-]*:[ \t][^\n]*\n(?:[ \t]+\S[^\n]*\n)*)+(?:[ \t]*\n|\Z)"
)
_HEADER_TITLE = re.compile(r"^title:[ \t]", re.I | re.M)
_GENERIC_HEADINGS = frozenset(
    {
        "abstract",
        "introduction",
        "overview",
        "summary",
        "contents",
        "table of contents",
        "preface",
        "foreword",
        "background",
        "motivation",
        "rationale",
    }
)


# Sphinx directives that are not text: a table of contents, the module later
# names are read in, a file to include, a class for the next block.
_NOT_TEXT = frozenset({"toctree", "currentmodule", "literalinclude", "include", "rst-class"})
_VERSIONED = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
}
# (docutils reads code-block itself; highlight names a language only)
_CODE = frozenset({"sourcecode", "highlight"})
_DIRECTIVE_LINE = re.compile(r"\.\. +([\w:.+-]+)::[ \t]*(.*)")
_OPTION_LINE = re.compile(r":[\w-]+:(?:[ \t].*)?")


def parse_rst(text: str) -> ParsedDocument:
    """Parse decoded reStructuredText (LF line ends)."""
    header = _HEADER_BLOCK.match(text)
    rfc822 = header is not None and _HEADER_TITLE.search(header.group()) is not None
    tree = _doctree(text, rfc822)
    _mend(tree)
    builder = BodyBuilder()
    title = tree.get("title") or _header_title(tree)
    has_title = any(isinstance(child, nodes.title) for child in tree.children)
    for node, depth in _walk(tree):
        _add(node, depth + (1 if has_title else 0), builder)
    if not builder.blocks:
        raise InvalidInput("no text in the reStructuredText document")
    return builder.build(title=title or _first_heading(builder))


def _doctree(text: str, rfc822: bool = False) -> nodes.document:
    settings = {**_SETTINGS, "warning_stream": io.StringIO()}
    try:
        return publish_doctree(text, parser=Parser(rfc2822=rfc822), settings_overrides=settings)
    except SystemMessage as exc:
        raise InvalidInput(f"malformed reStructuredText: {exc}") from None


def _unknown_directive(message: nodes.system_message) -> nodes.document | None:
    """The text of a directive docutils does not know, which it keeps only inside its
    error message (as the directive's source): the argument line, then the body with
    its options left out, parsed as reStructuredText. None for any other message (a
    known directive's error), and for a directive that holds no text (``_NOT_TEXT``)."""
    raw = next(iter(message.findall(nodes.literal_block)), None)
    said = next(iter(message.findall(nodes.paragraph)), None)
    if raw is None or said is None or not said.astext().startswith("Unknown directive type"):
        return None  # (a known directive's error, as a disabled ``raw``'s, keeps it out)
    first, _, rest = raw.astext().partition("\n")
    directive = _DIRECTIVE_LINE.fullmatch(first.strip())
    if directive is None or directive.group(1) in _NOT_TEXT:
        return None
    name, argument = directive.group(1), directive.group(2).strip()
    lines = textwrap.dedent(rest).split("\n")
    while lines and _OPTION_LINE.fullmatch(lines[0].strip()):
        lines.pop(0)
    body = "\n".join(lines).strip("\n")
    if name in _CODE:
        body = "::\n\n" + textwrap.indent(body, "    ") if body else ""
        argument = ""  # the language
    elif name in _VERSIONED:
        argument = f"{_VERSIONED[name]} {argument}." if argument else ""
    if argument:
        argument = "``" + argument.replace("`", "'") + "``"  # a signature, read as it is
    source = "\n\n".join(part for part in (argument, body) if part)
    return _fragment(source) if source.strip() else None


@functools.cache
def _fragment_settings() -> Any:
    settings = get_default_settings(Parser)
    for name, value in _SETTINGS.items():
        setattr(settings, name, value)
    return settings


def _fragment(text: str) -> nodes.document | None:
    """``text`` parsed alone, without the whole publisher's set-up (~2 ms a call): a
    file of Sphinx directives may hold hundreds of them."""
    settings = copy.copy(_fragment_settings())
    settings.warning_stream = io.StringIO()
    document = new_document("<directive>", settings)
    try:
        Parser().parse(text, document)
    except SystemMessage:
        return None
    return document


def _mend(tree: nodes.Element) -> None:
    """docutils' messages out of ``tree`` (an unknown role's sits inside a list item or a
    definition, where its text would join the item's); an unknown directive's replaced
    in place by the directive's own text (``_unknown_directive``), mended likewise."""
    for message in list(tree.findall(nodes.system_message)):
        parent = message.parent
        if parent is None:
            continue
        at = parent.index(message)
        parent.remove(message)
        recovered = _unknown_directive(message)
        if recovered is not None:
            _mend(recovered)
            parent.insert(at, list(recovered.children))


def _header_title(tree: nodes.document) -> str | None:
    """The ``Title`` field of the front matter (an RFC 822 block or a docinfo field list)."""
    for docinfo in tree.findall(nodes.docinfo):
        for field in docinfo.findall(nodes.field):
            name = field.next_node(nodes.field_name)
            body = field.next_node(nodes.field_body)
            if name is not None and body is not None and name.astext().strip().lower() == "title":
                return one_line(body.astext()) or None
    return None


def _first_heading(builder: BodyBuilder) -> str | None:
    """The first top-level heading, unless it names a generic section rather than the text."""
    heading = builder.first_heading(1)
    if heading is None or heading.strip(" .:").casefold() in _GENERIC_HEADINGS:
        return None
    return heading


def _walk(tree: nodes.document) -> Iterator[tuple[nodes.Node, int]]:
    """Each unit of the tree in order, with its section depth (0 at the top)."""
    stack: list[tuple[Iterator[nodes.Node], int]] = [(iter(tree.children), 0)]
    while stack:
        children, depth = stack[-1]
        node = next(children, None)
        if node is None:
            stack.pop()
        elif isinstance(node, _SKIP):
            continue
        elif isinstance(node, nodes.section):
            stack.append((iter(node.children), depth + 1))
        elif isinstance(node, nodes.title | nodes.subtitle) or _is_unit(node):
            yield node, depth
        elif isinstance(node, nodes.Element) and node.children:
            stack.append((iter(node.children), depth))  # a container: read through it
        elif isinstance(node, nodes.Text) and node.astext().strip():
            yield node, depth


_UNITS = (
    nodes.paragraph,
    nodes.literal_block,
    nodes.doctest_block,
    nodes.table,
    nodes.block_quote,
    nodes.line_block,
    nodes.rubric,
    nodes.caption,
    nodes.docinfo,
    *_LISTS,
)


def _is_unit(node: nodes.Node) -> bool:
    return isinstance(node, _UNITS)


def _add(node: nodes.Node, level: int, builder: BodyBuilder) -> None:
    if isinstance(node, nodes.title) and isinstance(node.parent, nodes.section | nodes.document):
        builder.add(BlockKind.HEADING, node.astext(), level=max(level, 1))
    elif isinstance(node, nodes.subtitle):
        builder.add(BlockKind.PARAGRAPH, node.astext())
    elif isinstance(node, nodes.literal_block | nodes.doctest_block):
        builder.add(BlockKind.CODE, node.astext())
    elif isinstance(node, nodes.table):
        builder.add(BlockKind.TABLE, _table(node))
    elif isinstance(node, (*_LISTS, nodes.docinfo)):
        builder.add(BlockKind.LIST, "\n".join(_list_lines(node)))
    elif isinstance(node, nodes.block_quote):
        builder.add(BlockKind.QUOTE, node.astext())
    elif isinstance(node, nodes.line_block):
        builder.add(BlockKind.PARAGRAPH, node.astext())
    else:
        builder.add(BlockKind.PARAGRAPH, one_line(node.astext()))


def _table(table: nodes.table) -> str:
    lines = []
    for title in table.findall(nodes.title, include_self=False, descend=False):
        lines.append(one_line(title.astext()))
    for row in table.findall(nodes.row):
        cells = [one_line(entry.astext()) for entry in row.children]
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _list_lines(root: nodes.Element) -> list[str]:
    """``- item`` per item; lists inside an item are indented under it."""
    lines: list[str] = []
    stack: list[tuple[Iterator[nodes.Node], int]] = [(iter(root.children), 0)]
    while stack:
        items, depth = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            continue
        if not isinstance(item, nodes.Element):
            continue
        nested = [c for c in item.children if isinstance(c, _LISTS)]
        own = " ".join(
            one_line(c.astext()) for c in item.children if not isinstance(c, (*_LISTS, *_SKIP))
        )
        if isinstance(item, nodes.field | nodes.definition_list_item | nodes.option_list_item):
            own = _pair(item)
            nested = []
        elif isinstance(item, nodes.Bibliographic):  # docinfo: author, date, version, ...
            own = f"{item.tagname.capitalize()}: {own}"
        if own:
            lines.append(f"{'  ' * depth}- {own}")
        for sub in reversed(nested):
            stack.append((iter(sub.children), depth + 1))
    return lines


def _pair(item: nodes.Element) -> str:
    """A field, definition or option: ``name: body``."""
    parts = [one_line(c.astext()) for c in item.children if not isinstance(c, _SKIP)]
    return f"{parts[0]}: {' '.join(parts[1:])}" if len(parts) > 1 else " ".join(parts)
