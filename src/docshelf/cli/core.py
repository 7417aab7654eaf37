"""A command's run and its output, without typer: what the typer commands
(``command.py``) and the quick path (``quick.py``) share, so a command prints the same
whichever path parsed its argument line.

rich loads only when something is shown to a person (``console()``); a JSON run never
imports it. Everything shown to people passes through ``terminal.printable`` and is
never read as rich markup.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from docshelf.config import Settings
    from docshelf.shelf import Progress, Shelf


class Action(NamedTuple):
    command: str
    description: str


class Outcome(NamedTuple):
    result: dict[str, Any]
    next_actions: list[Action] = []  # noqa: RUF012  (never mutated: a new list per outcome)
    # Prints the result on a terminal when the command's own renderer will not do
    # (``ask --stream`` has printed the answer already).
    render: Callable[[Outcome], None] | None = None
    # Piped without --json, the envelope with each record of the result's lists on a line
    # of its own (``list``, which grows with the library): still one JSON document, and
    # ``head`` or ``grep`` read it a document at a time. With --json: one line, as ever.
    lined: bool = False


Render = Callable[[Outcome], None]

# stderr? -> (the stream and settings it was made for, the console)
_CONSOLES: dict[bool, tuple[tuple[object, ...], Console]] = {}


def console(stderr: bool = False) -> Console:
    """The console people read (stdout; stderr for errors and progress): one per stream
    and terminal settings, as rich reads those once. A process makes one; a caller that
    swaps the stream or the settings (the typer test runner, a test's ``COLUMNS``) gets
    its own, never one sized or coloured for another terminal. No rich markup: every
    string shown may come from a file name or a document."""
    from docshelf.config import terminal_settings

    stream = sys.stderr if stderr else sys.stdout
    settings = terminal_settings()
    held = _CONSOLES.get(stderr)
    if held is None or held[0][0] is not stream or held[0][1:] != settings:
        from rich.console import Console

        held = ((stream, *settings), Console(stderr=stderr, markup=False))
        _CONSOLES[stderr] = held
    return held[1]


def q(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def emit(obj: dict[str, Any], *, lined: bool = False) -> None:
    """One JSON line on stdout, flushed (a watching command prints one per run); with
    ``lined``, one JSON document whose records stand a line each (``lined_json``)."""
    sys.stdout.write((lined_json(obj) if lined else json.dumps(obj, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def lined_json(obj: dict[str, Any]) -> str:
    """``obj`` as JSON with every list of records (objects) in it, or in the objects it
    holds, laid out a record a line, each record compact: valid JSON as a whole, which
    tools that read lines (``head``, ``grep``, ``less``) read a record at a time."""

    def value(v: Any) -> str:
        if isinstance(v, dict):
            pairs = (f"{json.dumps(k, ensure_ascii=False)}: {value(x)}" for k, x in v.items())
            return "{" + ", ".join(pairs) + "}"
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return "[\n" + ",\n".join(json.dumps(x, ensure_ascii=False) for x in v) + "\n]"
        return json.dumps(v, ensure_ascii=False)

    return value(obj)


def envelope(command: str, result: dict[str, Any], actions: list[Action]) -> dict[str, Any]:
    return {
        "ok": True,
        "command": command,
        "result": result,
        "next_actions": [a._asdict() for a in actions],
        "error": None,
    }


def print_error(code: str, message: str) -> None:
    from rich.text import Text

    from docshelf.terminal import printable

    console(stderr=True).print(Text(f"Error ({code}): {printable(message)}", style="red"))


class Run:
    """One command's run: its shelf (opened on first use), its output form, its progress."""

    def __init__(
        self, home: Path | None, command: str, as_json: bool, progress_events: bool = False
    ) -> None:
        self.home = home
        self.command = command
        self.as_json = as_json or not sys.stdout.isatty()
        self.asked_json = as_json  # --json given: the machine's form, each envelope a line
        self.progress_events = progress_events  # --progress: NDJSON events on stderr
        self._shelf: Shelf | None = None
        self._settings: Settings | None = None

    def settings(self) -> Settings:
        """The library's settings (read once per run, before the library is opened)."""
        if self._settings is None:
            from docshelf.config import Settings

            self._settings = Settings.from_env(self.home)
        return self._settings

    def shelf(self, **kwargs: Any) -> Shelf:
        if self._shelf is None:
            from docshelf.shelf import Shelf

            self._shelf = Shelf(settings=self.settings(), **kwargs)
        return self._shelf

    def store_shelf(self) -> Shelf:
        """A shelf for commands that never embed: no model is bound or checked."""
        return self.shelf(embedder=None, check_model=False)

    def cmd(self, rest: str) -> str:
        """A command line to suggest, with this run's ``--home``."""
        home = self.home
        return f"docshelf --home {q(str(home))} {rest}" if home else f"docshelf {rest}"

    @contextmanager
    def progress(self, label: str) -> Iterator[Progress | None]:
        """Rich progress bars on a terminal, up once the work has gone on for a moment
        (cli/progress.py, ``LateBars``); in JSON mode nothing, or with ``--progress``
        JSON lines on stderr."""
        if self.as_json:
            if not self.progress_events:
                yield None
                return
            from docshelf.cli.progress import JsonLines

            yield JsonLines(sys.stderr)
            return
        if not sys.stderr.isatty():
            yield None
            return
        from docshelf.cli.progress import LateBars

        bars = LateBars(label, lambda: console(stderr=True))
        try:
            yield bars
        finally:
            bars.close()

    def finish(self, produce: Callable[[], Outcome], render: Render) -> None:
        from docshelf.errors import DocshelfError

        try:
            outcome = produce()
        except DocshelfError as exc:
            self.fail(exc.code, exc.message)
        except KeyboardInterrupt:
            self.fail("interrupted", "Interrupted; committed work is kept, run the command again")
        finally:
            if self._shelf is not None:
                self._shelf.close()
        if self.as_json:
            lined = outcome.lined and not self.asked_json  # piped, for a person's head or grep
            emit(envelope(self.command, outcome.result, outcome.next_actions), lined=lined)
            return
        from rich.text import Text

        from docshelf.terminal import printable, printable_tree

        (outcome.render or render)(Outcome(printable_tree(outcome.result), outcome.next_actions))
        if outcome.next_actions:
            out = console()
            out.print(Text("\nNext:", style="bold"))
            for a in outcome.next_actions:
                out.print(
                    Text(f"  {printable(a.command)}", style="cyan"),
                    Text(f"  {printable(a.description)}"),
                )

    def fail(self, code: str, message: str) -> NoReturn:
        if self.as_json:
            sys.stdout.write(
                json.dumps(
                    {
                        "ok": False,
                        "command": self.command,
                        "result": None,
                        "next_actions": [],
                        "error": {"code": code, "message": message},
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
        else:
            print_error(code, message)
        raise SystemExit(1)


def context_line(chunk_id: str, mode: str, citation: dict[str, Any]) -> str:
    """The ``context`` command that reads around a hit as it was cited: under the same
    (inner) heading, by passing the citation's anchor on."""
    return f"context {chunk_id} --mode {mode} --anchor {citation['anchor']}"


def under_title(path: list[str], title: str) -> list[str]:
    """A heading path as a person reads it under its document's title: without its
    first heading when that repeats the title (it heads the file)."""
    return path[1:] if path and path[0].casefold() == title.casefold() else path


def hanging(rows: Sequence[tuple[str, str]], mark: str = "dim", text: str = "") -> RenderableType:
    """Rows of a mark (an id, a bullet, a cross) and its text, indented two spaces; a
    text too long for the terminal wraps under itself, not under the mark."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # a long path folds, whole, rather than end in "…"
    for m, t in rows:
        grid.add_row(Text(m, style=mark), Text(t, style=text))
    return Padding(grid, (0, 0, 0, 2), expand=False)


def print_failures(out: Console, failures: Sequence[dict[str, Any]]) -> None:
    """Files that could not be read, each with why, as ``✗ path: reason`` rows; one
    that sync passed over says since when it has failed unchanged."""
    if failures:
        rows = [("✗", f"{f['path']}: {f['reason']}{_unchanged(f)}") for f in failures]
        out.print(hanging(rows, mark="yellow", text="yellow"))


def _unchanged(failure: dict[str, Any]) -> str:
    since = failure.get("unchanged_since")
    if since is None:
        return ""
    import time

    return f" — failed (unchanged since {time.strftime('%Y-%m-%d %H:%M', time.localtime(since))})"


def report_render(title: str) -> Render:
    """How a sync report (add, sync, remove) looks on a terminal."""

    def render(o: Outcome) -> None:
        from rich.text import Text

        out = console()
        counts = o.result["counts"]
        summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        out.print(Text(f"{title}: {summary or 'nothing to do'}", style="bold"))
        if counts.get("copies"):
            out.print(
                Text(
                    f"  {counts['copies']} {'copy' if counts['copies'] == 1 else 'copies'}: "
                    "the same bytes as another file, indexed once and cited at each path "
                    "(`docshelf show` lists them)",
                    style="dim",
                )
            )
        if (embedding := o.result.get("embedding")) and embedding["pending"]:
            from docshelf.wording import counted

            pid = f" (process {embedding['pid']})" if embedding["pid"] else ""
            out.print(
                Text(
                    f"  Searchable by their words now; {counted(embedding['pending'], 'document')} "
                    f"being embedded in the background{pid}: `docshelf status` shows how far",
                    style="dim",
                )
            )
        print_failures(out, o.result["failures"][:50])
        if len(o.result["failures"]) > 50:
            out.print(Text(f"  … and {len(o.result['failures']) - 50} more"))
        for done in o.result.get("repaired", []):
            out.print(Text(f"Repaired: {done}", style="green"))
        for problem in o.result.get("problems", []):
            out.print(Text(f"  ✗ {problem} (`docshelf status --check` tells more)", style="red"))

    return render


class Wrapping:
    """Text printed as it arrives (``ask --stream``), wrapped at the terminal's width
    between words, as rich wraps a whole text: a word that would pass the right edge
    starts the next line. A piece's last word waits for the next piece (or ``close``),
    as the piece may end inside it; spaces at a line's end are dropped."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.column = 0  # cells on the current line
        self.held = ""  # the end of the text so far that may be inside a word
        self.space = False  # a space is due before the next word on this line

    def write(self, text: str) -> None:
        import re

        held = self.held + text
        cut = max(held.rfind(" "), held.rfind("\n"), held.rfind("\t")) + 1
        self.held = held[cut:]
        self._put(re.split(r"([ \t]+|\n)", held[:cut]))

    def close(self) -> None:
        """Print the last word and end the line."""
        self._put([self.held])
        self.held = ""
        self.out.print()

    def _put(self, tokens: list[str]) -> None:
        from rich.cells import cell_len
        from rich.text import Text

        from docshelf.terminal import printable

        width, shown = max(self.out.width, 1), []
        for token in tokens:
            if not token:
                continue
            if token == "\n":
                shown.append("\n")
                self.column, self.space = 0, False
            elif token.isspace():
                self.space = self.column > 0
            else:
                word = printable(token)
                cells = cell_len(word)
                if self.column and self.column + self.space + cells > width:
                    shown.append("\n")
                    self.column, self.space = 0, False
                if self.space:
                    shown.append(" ")
                    self.column += 1
                shown.append(word)
                self.column, self.space = (self.column + cells) % width or width, False
        if shown:
            self.out.print(Text("".join(shown)), end="", soft_wrap=True)
            self.out.file.flush()
