"""Chunking: a parsed document into two linked tiers of chunks (SPEC §3).

*Sections* (large, for context) and *snippets* (small, sized to the embedding
window, for recall) are built the same way: the document's blocks are units,
packed greedily in order into groups of at most a token limit. A heading starts
a new group once the current one has reached the tier's minimum (a snippet that
packs short sections keeps the places of the headings inside it), a group never
ends with a heading whose content follows (the heading is carried over), and a
block is cut only when it alone is over the limit: at list items or lines for
lists, at lines for code, tables and quotes, at sentence ends for paragraphs,
then at spaces, and at characters as a last resort. Snippets are packed inside
each section, so a snippet never crosses a section boundary.

Coverage: every non-whitespace character of ``doc.body`` lands in exactly one
section and exactly one snippet; text between blocks (markdown link reference
definitions have no block, for example) becomes a unit of its own. For
markdown the body starts after any frontmatter (see ``parse.markdown``).

Deterministic: no model, no randomness; the same input and settings give the
same chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence

from docshelf.chunk.header import build_header
from docshelf.chunk.pack import Packer
from docshelf.chunk.settings import ChunkSettings
from docshelf.chunk.tokens import TokenCounter, approx_tokens
from docshelf.chunk.units import Unit, units_of
from docshelf.chunk.version import CHANGES as CHANGES
from docshelf.chunk.version import CHUNKER_META, CHUNKER_VERSION, reindex_due
from docshelf.model import (
    Chunk,
    InnerHeading,
    PageBreak,
    ParsedDocument,
    Tier,
    chunk_id,
    document_id,
)

__all__ = [
    "CHUNKER_META",
    "CHUNKER_VERSION",
    "ChunkSettings",
    "TokenCounter",
    "approx_tokens",
    "build_header",
    "chunk_document",
    "plan_chunks",
    "reindex_due",
]

_COUNT_CACHE = 256  # texts whose counts chunk_document remembers (a few MB at most)


def chunk_document(
    doc: ParsedDocument,
    *,
    fp: str,
    title: str,
    settings: ChunkSettings,
    count_tokens: TokenCounter = approx_tokens,
    concepts: Sequence[str] = (),
    on_cut: Callable[[int], None] | None = None,
) -> list[Chunk]:
    """All sections (index 0..), then all snippets (index 0..), linked within and across tiers.

    ``fp`` is the document's fingerprint (ids derive from it); ``title`` and
    ``concepts`` go into each chunk's header. A document without content gives [].
    ``on_cut(n)`` hears of each cut of a block too big for a chunk (``n`` characters
    cut off): the progress of a huge one (the sandbox's child renews its time limit).
    """
    _, chunks = plan_chunks(
        doc,
        fp=fp,
        title=title,
        settings=settings,
        count_tokens=count_tokens,
        concepts=concepts,
        on_cut=on_cut,
    )
    return list(chunks)


def plan_chunks(
    doc: ParsedDocument,
    *,
    fp: str,
    title: str,
    settings: ChunkSettings,
    count_tokens: TokenCounter = approx_tokens,
    concepts: Sequence[str] = (),
    on_cut: Callable[[int], None] | None = None,
) -> tuple[dict[Tier, int], Iterator[Chunk]]:
    """``chunk_document``'s chunks as an iterator, with each tier's count known first.

    The cutting and packing are done before this returns (spans only, no text); each
    chunk, with its copy of the text, is made as the iterator reaches it, so a caller
    that sends or writes them as they come never holds all of a huge file's at once.
    """
    # The same text is counted more than once (a group checked when packed is a chunk
    # whose count is stored; a section that fits is a snippet too): count it once. The
    # cache is bounded, as it holds the texts: cutting a huge block counts many of them.
    count_tokens = functools.lru_cache(maxsize=_COUNT_CACHE)(count_tokens)
    limit = max(settings.section_max_tokens, settings.snippet_max_tokens)
    units = units_of(doc, count_tokens, limit)
    sections = Packer(
        doc.body, count_tokens, settings.section_max_tokens, settings.section_min_tokens, on_cut
    ).pack(units)
    del units
    snippet_packer = Packer(
        doc.body,
        count_tokens,
        settings.snippet_max_tokens,
        settings.snippet_min_tokens,
        on_cut,
        per_heading=settings.snippet_per_heading,
    )
    snippets: list[list[Unit]] = []
    parents: list[int] = []  # each snippet's section, by index
    for index, section in enumerate(sections):
        groups = snippet_packer.pack(section)
        snippets.extend(groups)
        parents.extend([index] * len(groups))

    @functools.cache
    def header(path: tuple[str, ...]) -> str:
        return build_header(title, path, concepts, settings.header_max_tokens, count_tokens)

    def chunks() -> Iterator[Chunk]:
        yield from _link(doc.body, fp, Tier.SECTION, sections, None, header, count_tokens)
        yield from _link(doc.body, fp, Tier.SNIPPET, snippets, parents, header, count_tokens)

    return {Tier.SECTION: len(sections), Tier.SNIPPET: len(snippets)}, chunks()


def _link(
    body: str,
    fp: str,
    tier: Tier,
    groups: Sequence[Sequence[Unit]],
    parents: Sequence[int] | None,
    header: Callable[[tuple[str, ...]], str],
    count: TokenCounter,
) -> Iterator[Chunk]:
    """One tier's chunks, each linked to its neighbours and parent (a section, by index).
    Each id is made once, shared by the chunk and its neighbours' links (as the parent's
    by its section's snippets): a huge file's chunks held at once cost less."""
    doc_id, last = document_id(fp), len(groups) - 1
    this, before = chunk_id(fp, tier, 0), None
    parent: tuple[int, str | None] = (-1, None)
    for i, group in enumerate(groups):
        start, end = group[0].start, group[-1].end
        text = body[start:end]
        pages = [u.page for u in group if u.page is not None]
        # Cited where its content sits: a chunk that opens with headings (an H1, then an
        # H2 and its text) belongs under the last of them, not the first.
        first = next((k for k, u in enumerate(group) if not u.is_heading), len(group) - 1)
        path = group[first].heading_path
        # a snippet (not on a page: a page is cited by its number) that packs several short
        # sections keeps where each later heading's part starts
        inner = _inner(group, first) if parents is not None and not pages else ()
        # a snippet on pages keeps where each later page's text starts in it
        breaks = _page_breaks(group) if parents is not None and pages else ()
        after = chunk_id(fp, tier, i + 1) if i < last else None
        if parents is not None and parents[i] != parent[0]:
            parent = (parents[i], chunk_id(fp, Tier.SECTION, parents[i]))
        yield Chunk(
            id=this,
            document_id=doc_id,
            tier=tier,
            index=i,
            text=text,
            header=header(path),
            start=start,
            end=end,
            heading_path=path,
            parent_id=parent[1],
            prev_id=before,
            next_id=after,
            page_start=min(pages, default=None),
            page_end=max(pages, default=None),
            token_count=count(text),
            inner=inner,
            page_breaks=breaks,
            ocr_confidence=_ocr_confidence(group),
        )
        this, before = after or "", this


def _ocr_confidence(group: Sequence[Unit]) -> float | None:
    """The mean word confidence of the group's text that OCR read, by characters; None
    when OCR read none of it."""
    read = [(u.ocr, u.end - u.start) for u in group if u.ocr is not None]
    if not read:
        return None
    return round(sum(c * n for c, n in read) / (sum(n for _, n in read) or 1), 4)


def _page_breaks(group: Sequence[Unit]) -> tuple[PageBreak, ...]:
    """Where each later page of a group on pages starts: at its first unit on that page."""
    out: list[PageBreak] = []
    current = next(u.page for u in group if u.page is not None)
    for u in group:
        if u.page is not None and u.page != current:
            out.append(PageBreak(u.start, u.page))
            current = u.page
    return tuple(out)


def _inner(group: Sequence[Unit], first: int) -> tuple[InnerHeading, ...]:
    """The inner headings of a group whose first content unit is ``group[first]``: each
    unit after it under another heading path than the one before starts a part (at the
    heading's own line, when the part opens with its headings)."""
    out: list[InnerHeading] = []
    current = group[first].heading_path
    opening: int | None = None  # the start of the headings that open the next part
    for u in group[first + 1 :]:
        if u.is_heading:
            opening = u.start if opening is None else opening
        if u.heading_path != current and not u.is_heading:
            out.append(InnerHeading(u.start if opening is None else opening, u.heading_path))
            current = u.heading_path
        if not u.is_heading:
            opening = None
    return tuple(out)
