"""The one way a ``docshelf`` command runs: open the shelf, produce an outcome, print it.

A command is a function ``(run, **options) -> Outcome`` behind :func:`command`.
The decorator gives it the ``--json`` option and the root ``--home``, turns
docshelf's errors (and Ctrl-C) into the error envelope or a red line, closes
the shelf, and prints the outcome: the JSON envelope (SPEC §9) or the
command's ``render`` and the next actions. No command writes an envelope of
its own. Everything shown to people passes through ``terminal.printable`` and
is never read as rich markup.
"""

from __future__ import annotations

import inspect
import json
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from docshelf.terminal import printable, printable_tree

if TYPE_CHECKING:
    from docshelf.config import Settings
    from docshelf.shelf import Progress, Shelf

# No rich markup: every string shown may come from a file name or a document.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False)

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the JSON envelope (default when stdout is not a TTY).")
]
ProgressOpt = Annotated[
    bool,
    typer.Option(
        "--progress",
        help="With --json: progress events as JSON lines on stderr (stdout keeps the envelope).",
    ),
]


@dataclass
class Action:
    command: str
    description: str


@dataclass
class Outcome:
    result: dict[str, Any]
    next_actions: list[Action] = field(default_factory=list)
    # Prints the result on a terminal when the command's own renderer will not do
    # (``ask --stream`` has printed the answer already).
    render: Callable[[Outcome], None] | None = None


Render = Callable[[Outcome], None]


@dataclass
class CliState:
    home: Path | None = None
    json: bool = False


def state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, CliState) else CliState()


def q(arg: str) -> str:
    return shlex.quote(arg)


def emit(obj: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed (a watching command prints one per run)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def envelope(command: str, result: dict[str, Any], actions: list[Action]) -> dict[str, Any]:
    return {
        "ok": True,
        "command": command,
        "result": result,
        "next_actions": [a.__dict__ for a in actions],
        "error": None,
    }


def print_error(code: str, message: str) -> None:
    err_console.print(Text(f"Error ({code}): {printable(message)}", style="red"))


class Run:
    """One command's run: its shelf (opened on first use), its output form, its progress."""

    def __init__(
        self, ctx: typer.Context, command: str, json_flag: bool, progress_events: bool = False
    ) -> None:
        self.state = state(ctx)
        self.command = command
        self.as_json = json_flag or self.state.json or not sys.stdout.isatty()
        self.progress_events = progress_events  # --progress: NDJSON events on stderr
        self._shelf: Shelf | None = None
        self._settings: Settings | None = None

    def settings(self) -> Settings:
        """The library's settings (read once per run, before the library is opened)."""
        if self._settings is None:
            from docshelf.config import Settings

            self._settings = Settings.from_env(self.state.home)
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
        home = self.state.home
        return f"docshelf --home {q(str(home))} {rest}" if home else f"docshelf {rest}"

    @contextmanager
    def progress(self, label: str) -> Iterator[Progress | None]:
        """Rich progress bars on a terminal (cli/progress.py); in JSON mode nothing, or
        with ``--progress`` JSON lines on stderr."""
        from docshelf.cli.progress import Board, JsonLines, RichBoard, line_column

        if self.as_json:
            yield JsonLines(sys.stderr) if self.progress_events else None
            return
        if not sys.stderr.isatty():
            yield None
            return
        from rich.progress import BarColumn, Progress, TextColumn

        board = Board(label)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            line_column(board),
            console=err_console,
            transient=True,
            refresh_per_second=4,
        ) as bars:
            yield RichBoard(board, bars)

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
            emit(envelope(self.command, outcome.result, outcome.next_actions))
            return
        (outcome.render or render)(Outcome(printable_tree(outcome.result), outcome.next_actions))
        if outcome.next_actions:
            console.print(Text("\nNext:", style="bold"))
            for a in outcome.next_actions:
                console.print(
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
        raise typer.Exit(1)


@dataclass(frozen=True)
class Command:
    """A command ready for ``app.command(name)``: the typer callback and its name."""

    name: str
    callback: Callable[..., None]


def _nothing(o: Outcome) -> None:
    return None


def command(
    name: str | None = None,
    *,
    label: str | None = None,
    render: Render = _nothing,
    progress: bool = False,
) -> Callable[[Callable[..., Outcome]], Command]:
    """Make ``fn(run, **options) -> Outcome`` a command. ``label`` names it in the
    envelope (``users create``; default: ``name``); ``render`` prints its result on a
    terminal; ``progress``: long work, with ``--progress`` for JSON progress lines. The
    callback typer sees has ``fn``'s options, plus the context and ``--json``."""

    def wrap(fn: Callable[..., Outcome]) -> Command:
        title = name or fn.__name__
        shown = label or title

        def callback(
            ctx: typer.Context, json_out: bool = False, progress_out: bool = False, **options: Any
        ) -> None:
            run = Run(ctx, shown, json_out, progress_out)
            run.finish(lambda: fn(run, **options), render)

        return Command(title, _with_options(callback, fn, with_progress=progress))

    return wrap


def plain_command(name: str | None = None) -> Callable[[Callable[..., None]], Command]:
    """A long-running command that prints no envelope (``serve``, ``worker``, ``mcp``)."""

    def wrap(fn: Callable[..., None]) -> Command:
        return Command(name or fn.__name__, fn)

    return wrap


def _with_options(
    callback: Callable[..., None], fn: Callable[..., Outcome], *, with_progress: bool = False
) -> Callable[..., None]:
    """``callback`` as typer should see it: ``fn``'s docstring and options (without
    its first parameter, the run) between the context and ``--json`` (and
    ``--progress``)."""
    options = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
    kind = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("ctx", kind, annotation=typer.Context),
        *(p.replace(kind=kind) for p in options),
        inspect.Parameter("json_out", kind, default=False, annotation=JsonOpt),
    ]
    if with_progress:
        params.append(
            inspect.Parameter("progress_out", kind, default=False, annotation=ProgressOpt)
        )
    setattr(callback, "__signature__", inspect.Signature(params))  # noqa: B010
    callback.__annotations__ = {p.name: p.annotation for p in params}
    callback.__doc__ = fn.__doc__
    callback.__name__ = fn.__name__
    callback.__qualname__ = fn.__qualname__
    callback.__module__ = fn.__module__
    return callback


def report_render(title: str) -> Render:
    """How a sync report (add, sync, remove) looks on a terminal."""

    def render(o: Outcome) -> None:
        counts = o.result["counts"]
        summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        console.print(Text(f"{title}: {summary or 'nothing to do'}", style="bold"))
        for f in o.result["failures"][:50]:
            console.print(Text(f"  ✗ {f['path']}: {f['reason']}", style="yellow"))
        if len(o.result["failures"]) > 50:
            console.print(Text(f"  … and {len(o.result['failures']) - 50} more"))

    return render


def open_shelf_or_exit(run_state: CliState) -> Shelf:
    """The shelf of a long-running command, or the error printed and exit 1."""
    from docshelf.errors import DocshelfError
    from docshelf.shelf import Shelf

    try:
        return Shelf(run_state.home)
    except DocshelfError as exc:
        print_error(exc.code, exc.message)
        raise typer.Exit(1) from None
