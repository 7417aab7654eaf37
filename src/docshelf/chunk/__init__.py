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
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from docshelf.chunk.tokens import TokenCounter, approx_tokens
from docshelf.errors import InvalidInput
from docshelf.model import (
    Block,
    BlockKind,
    Chunk,
    InnerHeading,
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

# What a library records of the parsers and chunker that made its chunks (meta
# ``chunker_version``): raised whenever the same file and settings would give other
# chunks or chunk columns, so ``status`` can tell a library made by an older one that a
# ``reindex`` is due. 1: every library before the number was recorded; then what each
# version changed (what ``status`` names):
CHANGES = {
    2: "a snippet that packs short sections is cited under the one the query's words are in",
    3: "reStructuredText keeps the text of Sphinx directives (`py:data`, `versionadded`, "
    "`autofunction` …), PDFs find numbered section headings set in the body's size and "
    "keep each column's lines apart, and Markdown takes no tags from HTML",
}
CHUNKER_VERSION = max(CHANGES)
CHUNKER_META = "chunker_version"


def reindex_due(recorded: str | None) -> str | None:
    """What ``status`` says of a library whose meta ``chunker_version`` is ``recorded``
    (None: made before the number was kept), or None when its chunks are current."""
    try:
        version = int(recorded) if recorded is not None else 1
    except ValueError:
        version = 1
    if version >= CHUNKER_VERSION:
        return None
    since = "; ".join(CHANGES[v] for v in sorted(CHANGES) if v > version)
    return (
        f"The library was indexed by older parsers and chunker (version {version}; this "
        f"one is {CHUNKER_VERSION}: {since}). Search works as before; run `docshelf "
        "reindex` to re-index every file (search keeps answering meanwhile)."
    )


# -- settings and header -------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkSettings:
    """Token limits of the two tiers and of the structural header."""

    snippet_max_tokens: int = 200
    snippet_min_tokens: int = 48  # below this a heading does not start a new snippet: short
    # sections are packed, and the snippet keeps its inner headings' places (Chunk.inner),
    # so a search cites it under the one the query's words are in (search/citing.py)
    # With ``snippet_per_heading`` every heading not on a page starts a snippet instead
    # (design (a) of issue 15, off by default: BENCHMARKS.md, "Inner headings").
    snippet_per_heading: bool = False
    section_max_tokens: int = 2200
    section_min_tokens: int = 1200  # a heading starts a new section once this is reached
    header_max_tokens: int = 48

    def __post_init__(self) -> None:
        if min(self.snippet_max_tokens, self.section_max_tokens) < 1:
            raise InvalidInput("chunk token limits must be at least 1")
        if min(self.snippet_min_tokens, self.section_min_tokens, self.header_max_tokens) < 0:
            raise InvalidInput("chunk token minimums and the header limit cannot be negative")

    @classmethod
    def for_window(cls, window: int) -> ChunkSettings:
        """Settings for an embedding model that reads at most ``window`` tokens.

        What is embedded is ``[CLS] header <blank line> snippet [SEP]``: two special
        tokens, the header and the snippet (whitespace costs no tokens). So
        ``snippet_max = window - 2 - header_max``, where ``header_max = min(48,
        window // 4)`` leaves a small window most of its room for text. Snippets
        are kept between 16 and 512 tokens (SPEC §3: snippets are for precise
        recall, roughly 250-600 tokens even for large models); ``snippet_min`` is
        a quarter of ``snippet_max``, at most 48 (it applies to headings on pages:
        ``snippet_per_heading``). Sections keep their defaults.
        """
        if window < 32:
            raise InvalidInput(f"an embedding window of {window} tokens is too small to chunk for")
        header = min(48, window // 4)
        snippet_max = min(512, max(16, window - 2 - header))
        return cls(
            snippet_max_tokens=snippet_max,
            snippet_min_tokens=min(48, snippet_max // 4),
            header_max_tokens=header,
        )


def build_header(
    title: str,
    heading_path: Sequence[str],
    concepts: Sequence[str],
    max_tokens: int,
    count_tokens: TokenCounter = approx_tokens,
) -> str:
    """The structural header: ``[DOC: …]``, ``[PATH: a > b]``, ``[CONCEPTS: x, y]`` lines.

    Empty lines are left out. Over ``max_tokens`` the header is shortened: concepts
    are dropped (last first), then the path from the left, then the title is cut
    (at words, then characters), down to "" if nothing fits.
    """
    title = _one_line(title)
    path = [p for p in map(_one_line, heading_path) if p]
    if path and path[0].casefold() == title.casefold():
        path = path[1:]  # an H1 that repeats the title says nothing new
    names = [c for c in map(_one_line, concepts) if c]

    def fits(header: str) -> bool:
        return not header or count_tokens(header) <= max_tokens

    while names or path:
        header = _render_header(title, path, names)
        if fits(header):
            return header
        if names:
            names.pop()
        else:
            path.pop(0)
    words = title.split(" ")
    keep = _largest(lambda k: fits(_render_header(" ".join(words[:k]), [], [])), len(words))
    if keep:
        return _render_header(" ".join(words[:keep]), [], [])
    first = words[0]
    keep = _largest(lambda k: fits(_render_header(first[:k], [], [])), len(first))
    return _render_header(first[:keep], [], []) if keep else ""


def _render_header(title: str, path: Sequence[str], concepts: Sequence[str]) -> str:
    lines = []
    if title:
        lines.append(f"[DOC: {title}]")
    if path:
        lines.append(f"[PATH: {' > '.join(path)}]")
    if concepts:
        lines.append(f"[CONCEPTS: {', '.join(concepts)}]")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _largest(fits: Callable[[int], bool], n: int) -> int:
    """The largest k in 1..n with fits(k), by bisection (fits is taken as monotone); else 0."""
    if n < 1 or not fits(1):
        return 0
    good, bad = 1, n + 1
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


# -- units ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    """A block, or a piece of one, as packed: a stripped span and its token count."""

    start: int
    end: int
    kind: BlockKind
    heading_path: tuple[str, ...]
    page: int | None
    tokens: int
    whole: bool = True  # False for a piece of a cut block

    @property
    def is_heading(self) -> bool:
        return self.whole and self.kind is BlockKind.HEADING


_NON_SPACE = re.compile(r"\S")
_STRIP_WINDOW = 4096


def _strip(body: str, start: int, end: int) -> tuple[int, int]:
    """The span without surrounding whitespace (empty at ``start`` if all whitespace).

    Without copying the span: cutting a huge block strips every remainder of it,
    so the time and memory must not grow with the span's length."""
    first = _NON_SPACE.search(body, start, end)
    if first is None:
        return start, start
    start = first.start()
    while end > start:
        tail = body[max(start, end - _STRIP_WINDOW) : end]
        kept = len(tail.rstrip())
        end -= len(tail) - kept
        if kept:
            break
    return start, end


def _capped_count(count: TokenCounter, body: str, start: int, end: int, limit: int) -> int:
    """The count of ``body[start:end]``, or ``limit + 1`` once it is clearly over ``limit``.

    Counting a huge span in full (a 25 MB one-line file, or every remainder of it
    as it is cut) costs memory and time in proportion to it, and only spans that
    fit the limit need an exact count: a span whose opening alone is over the
    limit is not counted further.
    """
    size = _PROBE_CHARS_PER_TOKEN * (limit + 1)
    while start + size < end:  # growing probes: text of few tokens per character (long
        if count(body[start : start + size]) > limit:  # runs of spaces) is not counted
            return limit + 1  # whole at every cut of it, which would be quadratic
        size *= 4
    return count(body[start:end])


def _units(doc: ParsedDocument, count: TokenCounter, limit: int) -> list[_Unit]:
    """The document's blocks in order, plus any text between them, as units (each
    counted up to ``limit``: see ``_capped_count``)."""
    body = doc.body
    units: list[_Unit] = []
    pos = 0
    before: Block | None = None  # the block before a gap lends it its heading path and page

    def add(start: int, end: int, kind: BlockKind) -> None:
        start, end = _strip(body, start, end)
        if start < end:
            path, page = (before.heading_path, before.page) if before else ((), None)
            tokens = _capped_count(count, body, start, end, limit)
            units.append(_Unit(start, end, kind, path, page, tokens))

    for block in sorted(doc.blocks, key=lambda b: (b.start, b.end)):
        start = min(max(block.start, pos), len(body))
        end = min(block.end, len(body))
        add(pos, start, BlockKind.OTHER)
        before = block
        add(start, end, block.kind)
        pos = max(pos, end)
    add(pos, len(body), BlockKind.OTHER)
    return units


# -- cutting a block that is too big -------------------------------------------------------

_SENTENCE_END = re.compile("[.!?\u2026][\"'\u201d\u2019)\\]]*(?=\\s)")  # . ! ? … then closers
_LIST_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$))", re.MULTILINE)
_NEWLINE = re.compile(r"\n")
_SPACE = re.compile(r"\s+")

CutFinder = Callable[[str, int, int], Sequence[int]]


def _after(pattern: re.Pattern[str]) -> CutFinder:
    return lambda body, start, stop: [m.end() for m in pattern.finditer(body, start, stop)]


def _before(pattern: re.Pattern[str]) -> CutFinder:
    return lambda body, start, stop: [m.start() for m in pattern.finditer(body, start, stop)]


def _any_char(body: str, start: int, stop: int) -> Sequence[int]:
    return range(start + 1, stop)


_SENTENCES, _ITEMS, _LINES, _WORDS = (
    _after(_SENTENCE_END),
    _before(_LIST_ITEM),
    _before(_NEWLINE),
    _before(_SPACE),
)
_CUTS: dict[BlockKind, tuple[CutFinder, ...]] = {
    BlockKind.PARAGRAPH: (_SENTENCES, _WORDS, _any_char),
    BlockKind.HEADING: (_SENTENCES, _WORDS, _any_char),
    BlockKind.LIST: (_ITEMS, _LINES, _WORDS, _any_char),
}
_LINES_FIRST = (_LINES, _WORDS, _any_char)  # code, tables, quotes, other

_PROBE_CHARS_PER_TOKEN = 5  # see _capped_count: prose has ~4 characters per token
_BALANCE_CHARS_PER_TOKEN = 8  # a longer span is cut greedily, uncounted (see _balanced)
_SEGMENT_GROUP = 16  # whitespace segments counted per call by _sum_segments
_COUNT_CACHE = 256  # texts whose counts chunk_document remembers (a few MB at most)


class _Cutter:
    """Cuts the largest prefix that fits a budget off a unit, at the coarsest boundary."""

    def __init__(
        self, body: str, count: TokenCounter, on_cut: Callable[[int], None] | None = None
    ) -> None:
        self.body = body
        self.count = count
        self.on_cut = on_cut  # told the characters each cut takes off (progress)
        # approx_tokens adds up across whitespace exactly, so a cut found by adding up
        # segments needs no second count (a tokenizer's is checked)
        self.additive = getattr(count, "__wrapped__", count) is approx_tokens

    def cut(self, unit: _Unit, budget: int, limit: int) -> tuple[_Unit, _Unit] | None:
        """(head, rest) with head's count <= budget, or None if not even a character fits.

        When the rest would fit one chunk, the cut is balanced (see ``_balanced``)."""
        if budget < 0:
            return None
        stop = self._window_end(unit, budget)
        span = self._balanced(unit, budget, limit)
        for find in _CUTS.get(unit.kind, _LINES_FIRST):
            cuts = find(self.body, unit.start, stop)
            at = self._balanced_cut(unit, cuts, span) if span else None
            if at is None:
                at = self._largest_cut(unit.start, cuts, budget)
            if at is not None:
                head = self._piece(unit, unit.start, at, limit)
                rest = self._piece(unit, at, unit.end, limit)
                if self.on_cut is not None:
                    self.on_cut(at - unit.start)
                return head, rest
        return None

    def _window_end(self, unit: _Unit, budget: int) -> int:
        """An end such that every prefix fitting the budget ends before it."""
        # the first window is the span _capped_count probed when it counted this unit (the
        # rest of the last cut), so its count is a hit in chunk_document's count cache
        size = max(64, _PROBE_CHARS_PER_TOKEN * (budget + 1))
        while True:
            stop = min(unit.end, unit.start + size)
            if stop == unit.end or self.count(self.body[unit.start : stop]) > budget:
                return stop
            size *= 2

    def _balanced(self, unit: _Unit, budget: int, limit: int) -> tuple[int, int, int] | None:
        """(low, ideal, budget) for a cut whose head and rest both fit, when the unit is
        at most one chunk more than the budget; None otherwise (or when it is too long to
        count cheaply).

        Cutting the largest prefix that fits off a block of, say, 1.1 chunks leaves a
        tail of a few words: a snippet of its own that reads as nothing (``</span>``, the
        end of a sentence) and, being short, ranks high for any word in it. So the cut
        aims at chunks of even size: ``ideal`` makes the group (``limit - budget``
        tokens of carried headings and the head) as large as the rest; a head of at
        least ``low`` leaves a rest that fits.
        """
        most = budget + limit
        if unit.end - unit.start > _BALANCE_CHARS_PER_TOKEN * most:
            return None  # a tail of a few words is within the last cuts of any block
        total = self.count(self.body[unit.start : unit.end])
        if total > most:
            return None
        low = max(1, total - limit)
        ideal = min(budget, max(low, (total - (limit - budget) + 1) // 2))
        return low, ideal, budget

    def _balanced_cut(
        self, unit: _Unit, cuts: Sequence[int], span: tuple[int, int, int]
    ) -> int | None:
        """Of the cuts whose head counts between ``low`` and ``budget``, the one nearest
        to ``ideal`` (None if there is none)."""
        low, ideal, budget = span
        start = unit.start

        def head(k: int) -> int:  # the count of the head up to the k-th cut (1-based)
            return self.count(self.body[start : cuts[k - 1]])

        k = _largest(lambda k: head(k) <= ideal, len(cuts))
        best: tuple[int, int] | None = None  # (distance from ideal, cut)
        for j in (k, k + 1):
            if 1 <= j <= len(cuts):
                n = head(j)
                if low <= n <= budget and (best is None or abs(n - ideal) < best[0]):
                    best = (abs(n - ideal), cuts[j - 1])
        return None if best is None else best[1]

    def _largest_cut(self, start: int, cuts: Sequence[int], budget: int) -> int | None:
        """The last cut whose prefix fits the budget (None if even the first does not)."""
        if isinstance(cuts, list):  # whitespace boundaries: try adding up the segments first
            guess = self._sum_segments(start, cuts, budget)
            if guess is not None and (
                self.additive or self.count(self.body[start:guess]) <= budget
            ):
                return guess
        k = _largest(lambda k: self.count(self.body[start : cuts[k - 1]]) <= budget, len(cuts))
        return cuts[k - 1] if k else None

    def _sum_segments(self, start: int, cuts: list[int], budget: int) -> int | None:
        """The last cut before the running sum of segment counts passes the budget.

        Exact, in one pass, for counters that add up across whitespace (approx_tokens
        and WordPiece both do); the caller checks the result either way.
        """
        total, previous, best = 0, start, None
        i, step = 0, _SEGMENT_GROUP
        while i < len(cuts):
            # a group of segments in one call (counts add up across whitespace), then,
            # once a group would pass the budget, its segments one by one: a 25 MB line
            # is cut in ~8x fewer calls than one per word
            j = min(len(cuts), i + step)
            tokens = self.count(self.body[previous : cuts[j - 1]])
            if total + tokens <= budget:
                total, previous, best, i = total + tokens, cuts[j - 1], cuts[j - 1], j
            elif step > 1:
                step = 1
            else:
                break
        return best

    def _piece(self, unit: _Unit, start: int, end: int, limit: int) -> _Unit:
        start, end = _strip(self.body, start, end)
        tokens = _capped_count(self.count, self.body, start, end, limit)
        return _Unit(start, end, unit.kind, unit.heading_path, unit.page, tokens, whole=False)


# -- packing -------------------------------------------------------------------------------


class _Packer:
    """Greedy, structure-aware packing of units into groups of at most ``limit`` tokens."""

    def __init__(
        self,
        body: str,
        count: TokenCounter,
        limit: int,
        min_tokens: int,
        on_cut: Callable[[int], None] | None = None,
        *,
        per_heading: bool = False,
    ) -> None:
        self.body = body
        self.count = count
        self.limit = limit
        self.min_tokens = min_tokens
        self.per_heading = per_heading  # a heading off a page breaks whatever the minimum
        self.cutter = _Cutter(body, count, on_cut)
        self.pending: deque[_Unit] = deque()
        self.groups: list[list[_Unit]] = []
        self.current: list[_Unit] = []
        self.tokens = 0  # estimate for ``current``: the sum of its units' counts

    def pack(self, units: Iterable[_Unit]) -> list[list[_Unit]]:
        self.pending = deque(units)
        self.groups, self.current, self.tokens = [], [], 0
        while self.pending or self.current:
            if self.pending:
                self._take(self.pending.popleft())
            else:
                self._flush(carry=False)
        return self.groups

    def _take(self, unit: _Unit) -> None:
        has_content = any(not u.is_heading for u in self.current)
        heading_break = (
            unit.is_heading
            and has_content
            and (self.tokens >= self.min_tokens or (self.per_heading and unit.page is None))
        )
        if not heading_break and self.tokens + unit.tokens <= self.limit:
            self._add(unit)
        elif heading_break or has_content:
            self.pending.appendleft(unit)  # retried after the flush, with any heading carried
            self._flush(carry=True)
        elif unit.tokens <= self.limit:
            # It does not fit after the carried heading but fits a group of its own:
            # a block that fits is never cut, so the heading stands alone.
            self.pending.appendleft(unit)
            self._flush(carry=False)
        else:
            self._cut(unit)

    def _cut(self, unit: _Unit) -> None:
        """Fill what is left of the group (empty, or holding headings) with a piece of ``unit``."""
        pieces = self.cutter.cut(unit, self.limit - self.tokens, self.limit)
        if pieces is not None:
            head, rest = pieces
            self._add(head)
            self.pending.appendleft(rest)
        elif self.current:
            self.pending.appendleft(unit)
            self._flush(carry=False)
        else:  # indivisible: not even one character fits
            self._add(unit)
            self._flush(carry=False)

    def _add(self, unit: _Unit) -> None:
        self.current.append(unit)
        self.tokens += unit.tokens

    def _flush(self, *, carry: bool) -> None:
        """Close the current group; with ``carry``, trailing headings start the next one."""
        group, self.current, self.tokens = self.current, [], 0
        # The sum of unit counts is an estimate: check the real text, giving back units.
        while len(group) > 1 and self._count(group) > self.limit:
            self.pending.appendleft(group.pop())
        keep = len(group)
        if carry:
            while keep > 0 and group[keep - 1].is_heading:
                keep -= 1
            keep = keep or len(group)  # a group of only headings is not carried
        self.groups.append(group[:keep])
        for heading in group[keep:]:
            self._add(heading)

    def _count(self, group: Sequence[_Unit]) -> int:
        return self.count(self.body[group[0].start : group[-1].end])


# -- chunks --------------------------------------------------------------------------------


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
    units = _units(doc, count_tokens, limit)
    sections = _Packer(
        doc.body, count_tokens, settings.section_max_tokens, settings.section_min_tokens, on_cut
    ).pack(units)
    del units
    snippet_packer = _Packer(
        doc.body,
        count_tokens,
        settings.snippet_max_tokens,
        settings.snippet_min_tokens,
        on_cut,
        per_heading=settings.snippet_per_heading,
    )
    snippets: list[list[_Unit]] = []
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
    groups: Sequence[Sequence[_Unit]],
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
        )
        this, before = after or "", this


def _inner(group: Sequence[_Unit], first: int) -> tuple[InnerHeading, ...]:
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
