"""Cutting a unit too big for a chunk: the largest prefix that fits a budget, at the
coarsest boundary its kind allows (list items, lines, sentence ends, spaces, characters),
balanced when the rest would fit one chunk."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from docshelf.chunk.tokens import TokenCounter, approx_tokens, largest
from docshelf.chunk.units import PROBE_CHARS_PER_TOKEN, Unit, capped_count, strip_span
from docshelf.model import BlockKind

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

_BALANCE_CHARS_PER_TOKEN = 8  # a longer span is cut greedily, uncounted (see _balanced)
_SEGMENT_GROUP = 16  # whitespace segments counted per call by _sum_segments


class Cutter:
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

    def cut(self, unit: Unit, budget: int, limit: int) -> tuple[Unit, Unit] | None:
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

    def _window_end(self, unit: Unit, budget: int) -> int:
        """An end such that every prefix fitting the budget ends before it."""
        # the first window is the span capped_count probed when it counted this unit (the
        # rest of the last cut), so its count is a hit in chunk_document's count cache
        size = max(64, PROBE_CHARS_PER_TOKEN * (budget + 1))
        while True:
            stop = min(unit.end, unit.start + size)
            if stop == unit.end or self.count(self.body[unit.start : stop]) > budget:
                return stop
            size *= 2

    def _balanced(self, unit: Unit, budget: int, limit: int) -> tuple[int, int, int] | None:
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
        self, unit: Unit, cuts: Sequence[int], span: tuple[int, int, int]
    ) -> int | None:
        """Of the cuts whose head counts between ``low`` and ``budget``, the one nearest
        to ``ideal`` (None if there is none)."""
        low, ideal, budget = span
        start = unit.start

        def head(k: int) -> int:  # the count of the head up to the k-th cut (1-based)
            return self.count(self.body[start : cuts[k - 1]])

        k = largest(lambda k: head(k) <= ideal, len(cuts))
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
        k = largest(lambda k: self.count(self.body[start : cuts[k - 1]]) <= budget, len(cuts))
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

    def _piece(self, unit: Unit, start: int, end: int, limit: int) -> Unit:
        start, end = strip_span(self.body, start, end)
        tokens = capped_count(self.count, self.body, start, end, limit)
        return Unit(
            start, end, unit.kind, unit.heading_path, unit.page, tokens, whole=False, ocr=unit.ocr
        )
