"""Progress of long work (add, sync, reindex, enrich) as structured events.

The work emits a ``ProgressEvent`` at each step: which phase it is in (scan,
parse, embed, index, enrich, …), how much of it is done of how much, in which
unit, on which item, and how many snippets so far. The faces turn events into
what their users read: the CLI a rich bar (``cli/command.py``) or NDJSON lines on
stderr (``--json --progress``). ``Rate`` gives rate and ETA from a clock it is
handed, so a test can drive it with a fake one.

Light on purpose (standard library only): every command imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

PHASES = ("scan", "parse", "embed", "index", "enrich")


@dataclass(frozen=True)
class ProgressEvent:
    """One step of long work. ``total`` is None while unknown (scanning a folder)."""

    phase: str
    done: int
    total: int | None
    unit: str = "files"
    item: str = ""
    # snippets prepared (parse) or embedded (embed) so far in this run, of how many known
    snippets: int | None = None
    snippets_total: int | None = None
    # seconds left for the whole job (the words and the vectors), when the work can tell
    # from throughput it measured (ingest/batches.py); else a face estimates the phase's
    eta: float | None = None

    def as_json(self) -> dict[str, Any]:
        return {"event": "progress", **asdict(self)}


# What long work is handed to report its steps.
Progress = Callable[[ProgressEvent], None]
# The plain counter some upkeep steps still call (an index build, an export).
Counter = Callable[[int, int, str], None]


def counter(progress: Progress | None, phase: str, unit: str = "documents") -> Counter | None:
    """A ``(done, total, item)`` counter that reports ``phase`` events to ``progress``."""
    if progress is None:
        return None
    report = progress

    def count(done: int, total: int, item: str) -> None:
        report(ProgressEvent(phase, done, total, unit, item))

    return count


def middle_ellipsis(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by ``…``: both the
    start of a path (its folder) and its end (the file name) stay readable."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    tail = (width - 1) // 2 + (width - 1) % 2
    head = width - 1 - tail
    return text[:head] + "…" + text[len(text) - tail :]


class Rate:
    """Items per second and time left, from ``clock`` (``time.monotonic`` in use; a
    fake clock in tests). The rate is the average since the current count began (a
    new unit or total, or a count going back; parse and embed share the files of one
    sync): steady enough to read, honest about pauses."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started = clock()
        self._count: tuple[str, int | None] | None = None
        self._phase_start = self.started
        self._phase_done0 = 0
        self._finished: float | None = None  # when the count was complete: time stops
        # snippets embedded: the embed phase's own rate (files are written per batch)
        self._snippets_start = self.started
        self._snippets0: int | None = None

    def observe(self, event: ProgressEvent) -> None:
        now = self.clock()
        count = (event.unit, event.total)
        if count != self._count or event.done < self._phase_done0:  # a new count began
            self._count = count
            self._phase_start = now
            self._phase_done0 = event.done
        complete = event.total is not None and event.done >= event.total
        self._finished = (self._finished or now) if complete else None
        if event.phase != "embed" or event.snippets is None:
            self._snippets0 = None
        elif self._snippets0 is None:
            self._snippets_start, self._snippets0 = now, event.snippets

    def _now(self) -> float:
        return self._finished if self._finished is not None else self.clock()

    def elapsed(self) -> float:
        return self._now() - self.started

    def per_second(self, event: ProgressEvent) -> float | None:
        """Units per second; in the embed phase, snippets per second."""
        if self._snippets0 is not None and event.snippets is not None:
            spent, moved = self._now() - self._snippets_start, event.snippets - self._snippets0
        else:
            spent, moved = self._now() - self._phase_start, event.done - self._phase_done0
        if spent <= 0 or moved <= 0:
            return None
        return moved / spent

    def eta(self, event: ProgressEvent) -> float | None:
        """Time left for the count (in the embed phase: for the snippets parsed so far)."""
        rate = self.per_second(event)
        if self._snippets0 is not None and event.snippets is not None:
            left = None if event.snippets_total is None else event.snippets_total - event.snippets
        else:
            left = None if event.total is None else event.total - event.done
        if rate is None or left is None:
            return None
        return max(0.0, left / rate)

    def rate_unit(self, event: ProgressEvent) -> str:
        return "snippets" if self._snippets0 is not None else event.unit


def clock_text(seconds: float) -> str:
    s = int(seconds + 0.5)
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


SEPARATOR = " · "  # between a progress line's fields


def describe(event: ProgressEvent, rate: Rate, item_width: int = 40) -> str:
    """The line a person reads: phase, done of total, snippets, rate, ETA, elapsed, item."""
    return SEPARATOR.join(describe_parts(event, rate, item_width))


def describe_parts(event: ProgressEvent, rate: Rate, item_width: int = 40) -> list[str]:
    """``describe``'s fields, each to be kept on one line where the line is wrapped."""
    parts = [f"{event.phase:<6}"]
    total = "?" if event.total is None else f"{event.total:,}"
    parts.append(f"{event.done:,}/{total} {event.unit}")
    if event.snippets is not None:
        of = f"/{event.snippets_total:,}" if event.snippets_total is not None else ""
        parts.append(f"{event.snippets:,}{of} snippets")
    complete = event.total is not None and event.done >= event.total
    per_second = None if complete else rate.per_second(event)
    if per_second is not None:
        parts.append(f"{per_second:,.1f} {rate.rate_unit(event)}/s")
    eta = None if complete else (event.eta if event.eta is not None else rate.eta(event))
    if eta is not None:
        parts.append(f"ETA {clock_text(eta)}")
    parts.append(clock_text(rate.elapsed()))
    if event.item:
        parts.append(middle_ellipsis(event.item, item_width))
    return parts
