"""The options of the commands ``cli/quick.py`` answers (``sync``, ``status``, ``search``),
written once, as data: the typer commands are declared from them (``typer_params``) and
the quick path's ``argparse`` parsers too (``quick.py``), so the two cannot drift.

Plain data, no typer: ``docshelf sync`` reads its argument line from this module
without importing typer, click, rich or pydantic (docs/benchmarks/start-up.md, "argparse
instead of typer").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple


class Param(NamedTuple):
    """One argument or option of a command, as its function receives it."""

    name: str  # the command function's parameter
    type: type  # str, int, Path or bool (a flag); a list of it when ``many``
    default: Any
    help: str
    flags: tuple[str, ...] = ()  # ("--limit", "-n"); () for a positional argument
    many: bool = False  # repeatable (``--filter A --filter B``): a list, None when absent
    show_default: bool = True

    @property
    def positional(self) -> bool:
        return not self.flags

    @property
    def required(self) -> bool:
        return self.positional and self.default is REQUIRED


REQUIRED: Any = ...  # the default of an argument that must be given


HOME = Param(
    "home",
    Path,
    None,
    "Data directory (overrides DOCSHELF_HOME).",
    ("--home",),
    show_default=False,
)
JSON = Param(
    "json_out",
    bool,
    False,
    "Print the JSON envelope (default when stdout is not a TTY).",
    ("--json",),
)
PROGRESS = Param(
    "progress_out",
    bool,
    False,
    "With --json: progress events as JSON lines on stderr (stdout keeps the envelope).",
    ("--progress",),
)

SYNC = (
    Param(
        "source",
        str,
        None,
        "A source id; all sources when omitted.",
        show_default=False,
    ),
    Param(
        "full",
        bool,
        False,
        "Read every file, not only those whose size or time changed, and try again the "
        "files that failed (a file whose bytes failed is otherwise passed over until it "
        "changes).",
        ("--full",),
    ),
)
STATUS = (
    Param(
        "check",
        bool,
        False,
        "Also check the library: every cited file on disk, every chunk reachable, every "
        "index entry in the store.",
        ("--check",),
    ),
    Param(
        "repair",
        bool,
        False,
        "Check, and mend what can be: forget files gone from disk, cite documents at a "
        "file that holds them, drop dead rows, rebuild the indexes.",
        ("--repair",),
    ),
)
SEARCH = (
    Param("query", str, REQUIRED, "What to look for, in your own words."),
    Param("limit", int, 10, "Number of hits.", ("--limit", "-n")),
    Param("mode", str, "hybrid", "hybrid, lexical or vector.", ("--mode",)),
    Param(
        "filter_",
        str,
        None,
        "KEY=VALUE, repeatable: source=ID, path=PREFIX, type=FILETYPE (or "
        "filetype=; markdown, pdf, …), doctype=DOCTYPE (paper, note, …), tag=TAG, "
        "concept=C, date=2026 (or 2026-03, 2025..2026).",
        ("--filter",),
        many=True,
    ),
    Param(
        "group",
        str,
        "snippet",
        "snippet: the best snippet per cited place (file and heading or page); "
        "section: one per section; document: one per document; all: every snippet.",
        ("--group",),
    ),
    Param("expand", str, None, "parent-section: include each hit's section text.", ("--expand",)),
    Param("notebook", str, None, "Search within this notebook (its name or id).", ("--notebook",)),
)

# command → (its parameters, whether it takes --progress)
COMMANDS: dict[str, tuple[tuple[Param, ...], bool]] = {
    "sync": (SYNC, True),
    "status": (STATUS, False),
    "search": (SEARCH, False),
}
