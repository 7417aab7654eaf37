"""Packing units into groups of at most a token limit: greedy, in order, a heading
starting a new group once the current one has reached the minimum, and a group never
ending with a heading whose content follows."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from docshelf.chunk.cut import Cutter
from docshelf.chunk.tokens import TokenCounter
from docshelf.chunk.units import Unit


class Packer:
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
        self.cutter = Cutter(body, count, on_cut)
        self.pending: deque[Unit] = deque()
        self.groups: list[list[Unit]] = []
        self.current: list[Unit] = []
        self.tokens = 0  # estimate for ``current``: the sum of its units' counts

    def pack(self, units: Iterable[Unit]) -> list[list[Unit]]:
        self.pending = deque(units)
        self.groups, self.current, self.tokens = [], [], 0
        while self.pending or self.current:
            if self.pending:
                self._take(self.pending.popleft())
            else:
                self._flush(carry=False)
        return self.groups

    def _take(self, unit: Unit) -> None:
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

    def _cut(self, unit: Unit) -> None:
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

    def _add(self, unit: Unit) -> None:
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

    def _count(self, group: Sequence[Unit]) -> int:
        return self.count(self.body[group[0].start : group[-1].end])
