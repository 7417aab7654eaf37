"""HTML: the main content of a page as headings, paragraphs, lists, code and tables.

Parsed with lxml (libxml2's HTML parser: fast, forgiving with broken markup,
and it stops at 256 levels of nesting instead of recursing without end). The
main content is found with a plain heuristic, so what is kept is predictable:

1. Never content: ``script``, ``style``, ``noscript``, ``template``, ``svg``,
   ``canvas``, ``iframe``, ``form``, ``button``, ``select``, ``nav``,
   ``aside``, elements that are ``hidden`` or ``aria-hidden``, and elements
   whose role is navigation, banner, contentinfo, complementary or search.
2. The root: ``<main>`` (or ``role="main"``), else the ``<article>`` with
   the most text, else ``<body>``. Page-level ``<header>`` and ``<footer>``
   (outside the root) go; a header inside an article (its title) stays.
   Under ``<body>``, lists and blocks that are mostly link text (menus not
   marked as ``nav``) go too.
3. Units: ``h1``-``h6`` → headings (levels and paths), ``p`` → paragraphs,
   ``ul``/``ol``/``dl`` → one list each (nested items indented), ``pre`` →
   code (whitespace kept), ``table`` → one table (a line per row, cells joined
   with `` | ``), ``blockquote`` → quote. Loose text between blocks becomes a
   paragraph.

Title: ``<title>``, else the first ``h1``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import lxml.html
from lxml import etree

from docshelf.errors import InvalidInput
from docshelf.model import BlockKind, ParsedDocument
from docshelf.parse._blocks import BINARY_SNIFF_BYTES, BodyBuilder, clean, one_line

__all__ = ["parse_html"]

_DROP_TAGS = frozenset(
    {
        *("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object"),
        *("embed", "form", "button", "select", "input", "textarea", "nav", "aside", "dialog"),
        "head",
    }
)
_DROP_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu"}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCK_CONTAINERS = frozenset(
    {
        *("html", "body", "div", "section", "article", "main", "header", "footer", "address"),
        *("figure", "figcaption", "details", "summary", "fieldset", "center", "hgroup", "li"),
        *("dd", "dt", "td", "th", "tr", "tbody", "thead", "tfoot", "caption", "hr"),
    }
)
_LINK_DENSITY = 0.7  # under <body>, lists/blocks with more link text than this are menus
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)


def parse_html(data: bytes) -> ParsedDocument:
    """Parse an HTML page's bytes (any declared encoding; UTF-8 if none works)."""
    text = _decode(data)
    if not text.strip():
        raise InvalidInput("empty file")
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True)
    try:
        document = lxml.html.document_fromstring(_XML_DECLARATION.sub("", text), parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        raise InvalidInput(f"malformed HTML: {exc}") from None
    warnings = []
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        warnings.append("HTML nested more than 255 elements deep; the text after that was not read")
    title = _title(document)
    root = _content_root(document)
    for br in root.iter("br"):
        br.tail = "\n" + (br.tail or "")
    builder = BodyBuilder()
    _walk(root, builder)
    if not builder.blocks:
        if warnings:
            raise InvalidInput("HTML nested more than 255 elements deep before any text")
        raise InvalidInput("no text in the HTML page's main content")
    return builder.build(title=title or builder.first_heading(1), warnings=tuple(warnings))


def _decode(data: bytes) -> str:
    """BOM, else UTF-8, else the charset a <meta> declares, else Windows-1252. NUL bytes
    early on without a UTF-16 BOM are binary content (an executable, an image), as for
    the other text formats (``parse.decode_text``): no page is made of them."""
    for bom, codec in (
        (b"\xef\xbb\xbf", "utf-8"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if data.startswith(bom):
            return clean(data[len(bom) :].decode(codec, errors="replace"))
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise InvalidInput("binary content, not text")
    try:
        return clean(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    match = _CHARSET.search(data[:4096])
    codec = match.group(1).decode("ascii") if match else "cp1252"
    try:
        return clean(data.decode(codec, errors="replace"))
    except LookupError:
        return clean(data.decode("cp1252", errors="replace"))


def _title(document: lxml.html.HtmlElement) -> str | None:
    element = document.find(".//title")
    if element is None:
        return None
    return one_line(element.text_content()) or None


# -- main content --------------------------------------------------------------------------


def _content_root(document: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    _drop(
        e
        for e in document.iter()
        if isinstance(e.tag, str)
        and (
            e.tag in _DROP_TAGS
            or e.get("hidden") is not None
            or e.get("aria-hidden") == "true"
            or (e.get("role") or "").strip().lower() in _DROP_ROLES
        )
    )
    mains = document.xpath("//main | //*[@role='main']")
    articles = document.xpath("//article")
    if mains:
        root = mains[0]
    elif articles:
        root = max(articles, key=lambda a: len(a.text_content()))
    else:
        body = document.find("body")
        root = body if body is not None else document
        _drop(e for e in root.iter("header", "footer"))
        _drop(_menus(root))
    return root


def _drop(elements: Iterator[lxml.html.HtmlElement]) -> None:
    for element in list(elements):
        if element.getparent() is not None:
            element.drop_tree()  # keeps the element's tail text


def _menus(root: lxml.html.HtmlElement) -> Iterator[lxml.html.HtmlElement]:
    """Lists and blocks of three or more links that are mostly link text (in one pass).

    An element holding over half of the page's text is never a menu: a page
    that is all links (a bookmarks export) keeps its links.
    """
    stack: list[list[int]] = []  # per open element: [text chars, link chars, links]
    found: list[tuple[lxml.html.HtmlElement, int]] = []
    total = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        if event == "start":
            stack.append([_chars(element.text), 0, 0])
            continue
        chars, linked, links = stack.pop()
        if element.tag == "a":
            linked, links = chars, links + 1
        menu_like = element.tag in ("ul", "ol", "div", "table") and links >= 3
        if menu_like and chars and linked / chars > _LINK_DENSITY:
            found.append((element, chars))
        if not stack:
            total = chars
            break
        parent = stack[-1]
        parent[0] += chars + _chars(element.tail)
        parent[1] += linked
        parent[2] += links
    return (element for element, size in found if size <= total / 2)


def _chars(text: str | None) -> int:
    return len(text) - sum(text.count(c) for c in " \n\t\r") if text else 0


# -- blocks --------------------------------------------------------------------------------


def _walk(root: lxml.html.HtmlElement, builder: BodyBuilder) -> None:
    """Emit the root's units in document order; loose text in between as paragraphs."""
    pending: list[str] = []

    def flush() -> None:
        builder.add(BlockKind.PARAGRAPH, one_line("".join(pending)))
        pending.clear()

    walker = etree.iterwalk(root, events=("start", "end"))
    for event, element in walker:
        tag = element.tag if isinstance(element.tag, str) else ""
        unit = tag in _HEADINGS or tag in ("p", "pre", "ul", "ol", "dl", "table", "blockquote")
        if event == "start":
            if unit:
                flush()
                _add_unit(element, tag, builder)
                walker.skip_subtree()
            else:
                if tag in _BLOCK_CONTAINERS:
                    flush()
                pending.append(element.text or "")
        else:
            if tag in _BLOCK_CONTAINERS and element is not root:
                flush()
            if element is not root:
                pending.append(element.tail or "")
    flush()


def _add_unit(element: lxml.html.HtmlElement, tag: str, builder: BodyBuilder) -> None:
    if tag in _HEADINGS:
        builder.add(BlockKind.HEADING, _text(element), level=_HEADINGS[tag])
    elif tag == "pre":
        builder.add(BlockKind.CODE, "".join(element.itertext()))
    elif tag in ("ul", "ol", "dl"):
        builder.add(BlockKind.LIST, _list(element))
    elif tag == "table":
        builder.add(BlockKind.TABLE, _table(element))
    elif tag == "blockquote":
        builder.add(BlockKind.QUOTE, _text(element))
    else:
        builder.add(BlockKind.PARAGRAPH, _text(element))


def _text(element: lxml.html.HtmlElement) -> str:
    return one_line("".join(element.itertext()))


def _table(table: lxml.html.HtmlElement) -> str:
    rows = table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
    lines = []
    caption = table.find("caption")
    if caption is not None and _text(caption):
        lines.append(_text(caption))
    for row in rows:
        cells = [_text(cell) for cell in row.xpath("./td | ./th")]
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _list(root: lxml.html.HtmlElement) -> str:
    """Items as ``- text`` (``1. text`` in ordered lists), nested lists indented."""
    lines: list[str] = []
    stack: list[tuple[Iterator[lxml.html.HtmlElement], int, bool, int]] = [
        (iter(root), 0, root.tag == "ol", 0)
    ]
    while stack:
        items, depth, ordered, number = stack.pop()
        for item in items:
            tag = item.tag if isinstance(item.tag, str) else ""
            if tag not in ("li", "dt", "dd"):
                continue
            nested = [c for c in item if isinstance(c.tag, str) and c.tag in ("ul", "ol", "dl")]
            own = (item.text or "") + "".join(
                ("" if c in nested else "".join(c.itertext())) + (c.tail or "") for c in item
            )
            number += tag == "li"
            marker = f"{number}." if ordered and tag == "li" else ("-" if tag != "dd" else " ")
            if one_line(own):
                lines.append(f"{'  ' * depth}{marker} {one_line(own)}")
            if nested:
                stack.append((items, depth, ordered, number))  # resume after the nested lists
                for sub in reversed(nested):
                    stack.append((iter(sub), depth + 1, sub.tag == "ol", 0))
                break
    return "\n".join(lines)
