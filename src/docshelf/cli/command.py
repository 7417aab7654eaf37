"""The one way a ``docshelf`` command runs: open the shelf, produce an outcome, print it.

A command is a function ``(run, **options) -> Outcome`` behind :func:`command`
(its run and output in ``cli/core.py``, shared with the quick path).
The decorator gives it the ``--json`` option and the root ``--home``, turns
docshelf's errors (and Ctrl-C) into the error envelope or a red line, closes
the shelf, and prints the outcome: the JSON envelope (SPEC §9) or the
command's ``render`` and the next actions. No command writes an envelope of
its own. Everything shown to people passes through ``terminal.printable`` and
is never read as rich markup.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from docshelf.cli import options as spec
from docshelf.cli.core import Action, Outcome, Render, emit, envelope, print_error, q, report_render
from docshelf.cli.core import Run as CoreRun
from docshelf.cli.core import console as _console

if TYPE_CHECKING:
    from rich.console import Console

    from docshelf.shelf import Shelf

__all__ = [
    "Action",
    "CliState",
    "Command",
    "JsonOpt",
    "Outcome",
    "Render",
    "Run",
    "command",
    "console",
    "emit",
    "envelope",
    "err_console",
    "plain_command",
    "print_error",
    "q",
    "report_render",
    "state",
]


class _Current:
    """``core.console()`` at each use: the console of the stream and terminal of the
    moment (a module that printed to one made at import would keep the terminal the
    process had then)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    def __getattr__(self, name: str) -> Any:
        return getattr(_console(self._stderr), name)


# No rich markup: every string shown may come from a file name or a document.
console = cast("Console", _Current(stderr=False))
err_console = cast("Console", _Current(stderr=True))


def typer_annotation(p: spec.Param) -> Any:
    """``p`` (cli/options.py) as typer reads a parameter: its type and its Option or
    Argument, with the help and the flags the quick path's argparse reads too."""
    if p.positional:
        info = typer.Argument(help=p.help, show_default=p.show_default)
    else:
        info = typer.Option(*p.flags, help=p.help, show_default=p.show_default)
    kind: Any = list[p.type] if p.many else p.type  # type: ignore[name-defined]
    if p.default is None:
        kind = kind | None
    return Annotated[kind, info]


JsonOpt = Annotated[bool, typer.Option(*spec.JSON.flags, help=spec.JSON.help)]
ProgressOpt = Annotated[bool, typer.Option(*spec.PROGRESS.flags, help=spec.PROGRESS.help)]


@dataclass
class CliState:
    home: Path | None = None
    json: bool = False


def state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, CliState) else CliState()


class Run(CoreRun):
    """A typer command's run: the root options from the context (``cli/core.py``)."""

    def __init__(
        self, ctx: typer.Context, command: str, json_flag: bool, progress_events: bool = False
    ) -> None:
        self.state = state(ctx)
        super().__init__(self.state.home, command, json_flag or self.state.json, progress_events)


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
    params: tuple[spec.Param, ...] | None = None,
) -> Callable[[Callable[..., Outcome]], Command]:
    """Make ``fn(run, **options) -> Outcome`` a command. ``label`` names it in the
    envelope (``users create``; default: ``name``); ``render`` prints its result on a
    terminal; ``progress``: long work, with ``--progress`` for JSON progress lines;
    ``params``: ``fn``'s options as cli/options.py writes them (the quick path reads the
    same). The callback typer sees has ``fn``'s options, plus the context and ``--json``."""

    def wrap(fn: Callable[..., Outcome]) -> Command:
        title = name or fn.__name__
        shown = label or title

        def callback(
            ctx: typer.Context, json_out: bool = False, progress_out: bool = False, **options: Any
        ) -> None:
            run = Run(ctx, shown, json_out, progress_out)
            run.finish(lambda: fn(run, **options), render)

        return Command(title, _with_options(callback, fn, with_progress=progress, params=params))

    return wrap


def plain_command(name: str | None = None) -> Callable[[Callable[..., None]], Command]:
    """A long-running command that prints no envelope (``serve``, ``worker``, ``mcp``)."""

    def wrap(fn: Callable[..., None]) -> Command:
        return Command(name or fn.__name__, fn)

    return wrap


def _with_options(
    callback: Callable[..., None],
    fn: Callable[..., Outcome],
    *,
    with_progress: bool = False,
    params: tuple[spec.Param, ...] | None = None,
) -> Callable[..., None]:
    """``callback`` as typer should see it: ``fn``'s docstring and options (without
    its first parameter, the run) between the context and ``--json`` (and
    ``--progress``); annotated from ``params`` when given."""
    kind = inspect.Parameter.KEYWORD_ONLY
    if params is None:
        options = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
    else:
        names = list(inspect.signature(fn).parameters)[1:]
        assert names == [p.name for p in params], (fn.__name__, names)
        empty = inspect.Parameter.empty
        options = [
            inspect.Parameter(
                p.name,
                kind,
                default=empty if p.required else p.default,
                annotation=typer_annotation(p),
            )
            for p in params
        ]
    signature = [
        inspect.Parameter("ctx", kind, annotation=typer.Context),
        *(p.replace(kind=kind) for p in options),
        inspect.Parameter("json_out", kind, default=False, annotation=JsonOpt),
    ]
    if with_progress:
        signature.append(
            inspect.Parameter("progress_out", kind, default=False, annotation=ProgressOpt)
        )
    setattr(callback, "__signature__", inspect.Signature(signature))  # noqa: B010
    callback.__annotations__ = {p.name: p.annotation for p in signature}
    callback.__doc__ = fn.__doc__
    callback.__name__ = fn.__name__
    callback.__qualname__ = fn.__qualname__
    callback.__module__ = fn.__module__
    return callback


def open_shelf_or_exit(run_state: CliState) -> Shelf:
    """The shelf of a long-running command, or the error printed and exit 1."""
    from docshelf.errors import DocshelfError
    from docshelf.shelf import Shelf

    try:
        return Shelf(run_state.home)
    except DocshelfError as exc:
        print_error(exc.code, exc.message)
        raise typer.Exit(1) from None
