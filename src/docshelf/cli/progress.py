"""How long work's ``ProgressEvent``s reach the person or agent who started it.

On a terminal, ``Board`` keeps one bar for the files (scan, parse, embed, index)
and another for enrichment, each line naming its phase, done of total, snippets,
rate, ETA, elapsed time and the current item (its middle elided); a line too long
for the terminal breaks between those fields, never inside one ("ETA" beside its
time). rich redraws the lines four times a second from the last event, so the
elapsed time ticks even while one model batch runs. With ``--json --progress``,
``JsonLines`` writes each event as one JSON line on stderr, stdout keeping its one
envelope.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from docshelf.progress import SEPARATOR, ProgressEvent, Rate, describe_parts
from docshelf.terminal import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import ProgressColumn, Task, TaskID

ITEM_WIDTH = 40  # characters of the current item shown (a middle ellipsis beyond)
BAR_WIDTH = 24
ENRICHING = "Enriching"  # the enrichment bar's label


def line_room(width: int, label: str) -> int:
    """Characters a bar's line has on a terminal ``width`` wide: what the widest label
    (``label`` or the enrichment bar's) and the bar leave, less the columns' gaps."""
    return width - max(len(label), len(ENRICHING)) - BAR_WIDTH - 2


def bar_of(phase: str) -> str:
    """Which bar an event moves: enrichment has its own, after the files'."""
    return "enrich" if phase == "enrich" else "work"


class Board:
    """The bars' state: the last event and the rate of each bar. Pure (the rich
    display reads it); a test hands it a fake clock."""

    def __init__(self, label: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.clock = clock
        self.events: dict[str, ProgressEvent] = {}
        self.rates: dict[str, Rate] = {}

    def update(self, event: ProgressEvent) -> str:
        key = bar_of(event.phase)
        if key not in self.rates:
            self.rates[key] = Rate(self.clock)
        self.rates[key].observe(event)
        self.events[key] = event
        return key

    def parts(self, key: str) -> list[str]:
        return [printable(p) for p in describe_parts(self.events[key], self.rates[key], ITEM_WIDTH)]

    def line(self, key: str) -> str:
        return SEPARATOR.join(self.parts(key))

    def lines(self) -> list[str]:
        return [self.line(key) for key in self.events]


class RichBoard:
    """``Board`` drawn by rich on stderr: one task per bar, redrawn as time passes."""

    def __init__(self, board: Board, bars: RichProgress) -> None:
        self.board = board
        self.bars = bars
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, event: ProgressEvent) -> None:
        self.show(self.board.update(event), event)

    def show(self, key: str, event: ProgressEvent) -> None:
        """Move bar ``key`` to ``event`` (the board has it already)."""
        if key not in self.tasks:
            title = ENRICHING if key == "enrich" else self.board.label
            self.tasks[key] = self.bars.add_task(title, total=None, key=key)
        self.bars.update(self.tasks[key], completed=event.done, total=event.total)


SHOW_AFTER = 0.3  # seconds of work before the bars appear


class LateBars:
    """``RichBoard``'s bars, drawn once the work has gone on for ``after`` seconds: a
    command done sooner (an unchanged ``sync``) shows none, and loads no rich display
    (~20 ms of a start-up). The board follows every event from the start, so the
    bars, once up, tell the counts, rate and elapsed time of the whole run. A timer
    puts them up even while no event comes (a model loading)."""

    def __init__(
        self, label: str, console: Callable[[], Console], after: float | None = None
    ) -> None:
        after = SHOW_AFTER if after is None else after  # read when made (tests set it)
        self.board = Board(label)
        self._console = console
        self._lock = threading.Lock()
        self._rich: RichBoard | None = None
        self._closed = False
        self._timer = threading.Timer(after, self._show)
        self._timer.daemon = True
        self._timer.start()

    @property
    def shown(self) -> bool:
        return self._rich is not None

    def __call__(self, event: ProgressEvent) -> None:
        with self._lock:
            key = self.board.update(event)
            if self._rich is not None:
                self._rich.show(key, event)

    def _show(self) -> None:
        with self._lock:
            if self._closed:
                return
            from rich.progress import BarColumn, Progress, TextColumn

            console = self._console()
            bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=BAR_WIDTH),
                line_column(self.board, lambda: line_room(console.width, self.board.label)),
                console=console,
                transient=True,
                refresh_per_second=4,
            )
            bars.start()
            self._rich = RichBoard(self.board, bars)
            for key, event in self.board.events.items():  # what happened so far
                self._rich.show(key, event)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._rich is not None:
                self._rich.bars.stop()


def line_column(board: Board, room: Callable[[], int] | None = None) -> ProgressColumn:
    """The column that prints a bar's line, read at every redraw; broken between its
    fields into lines of at most ``room()`` characters (the terminal's width left of
    the label and the bar) when given."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Line(ProgressColumn):
        def render(self, task: Task) -> Text:
            key = task.fields.get("key", "work")
            if key not in board.events:
                return Text("", style="dim")
            parts = board.parts(key)
            lines = [SEPARATOR.join(parts)] if room is None else packed(parts, room())
            return Text("\n".join(lines), style="dim")

    return Line()


def packed(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by the separator into lines of at most ``width`` characters,
    broken only between parts (a part longer than ``width`` has a line of its own)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(SEPARATOR) + len(part) <= width:
            lines[-1] += SEPARATOR + part
        else:
            lines.append(part)
    return lines


class JsonLines:
    """Events as NDJSON on ``stream`` (stderr): each with its rate and ETA. An event of
    the same phase less than ``every`` seconds after the last line written is left out
    (the next line carries its count); a new phase and the end of a count always
    get their line."""

    def __init__(
        self, stream: IO[str], clock: Callable[[], float] = time.monotonic, every: float = 0.5
    ) -> None:
        self.stream = stream
        self.board = Board("", clock)
        self.clock = clock
        self.every = every
        self._last: tuple[str, float] | None = None

    def __call__(self, event: ProgressEvent) -> None:
        key = self.board.update(event)
        now = self.clock()
        final = event.total is not None and event.done >= event.total
        if (
            self._last is not None
            and self._last[0] == event.phase
            and now - self._last[1] < self.every
            and not final
        ):
            return
        self._last = (event.phase, now)
        rate = self.board.rates[key]
        per_second, eta = rate.per_second(event), rate.eta(event)
        line = {
            **event.as_json(),
            "rate": None if per_second is None else round(per_second, 2),
            "eta_seconds": None if eta is None else round(eta, 1),
            "elapsed_seconds": round(rate.elapsed(), 1),
        }
        self.stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.stream.flush()
