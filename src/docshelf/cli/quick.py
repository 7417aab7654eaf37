"""``docshelf sync``, ``status`` and ``search`` without typer, click, rich or pydantic at
start-up.

An agent calling the CLI as a tool, a script, or a person syncing at a terminal pays
every import on every run; typer (with the pydantic adapters it builds per option),
click and rich were most of these commands' start-up (docs/benchmarks/start-up.md).
:func:`main` reads their argument line with the standard library's ``argparse``,
built from the same option definitions the typer commands are declared from
(``cli/options.py``), and runs the same command functions (below) through the same
``cli/core.Run``, so the output is the typer app's, on a terminal and in JSON. Any
line argparse does not read as one of them — help, a usage error, an unknown option,
another command — is left to the typer app, which words the error (exit status 2).

A search runs :func:`search_json`: the library's resident helper first
(``cli/resident.py``), then the search in this process (``resident.searched``, the
helper's own search). ``resident`` never imports this module.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Protocol

from docshelf.cli import core
from docshelf.cli import options as spec
from docshelf.cli.core import Action, Outcome
from docshelf.wording import counted

if TYPE_CHECKING:
    from docshelf.cli.resident import SearchRequest
    from docshelf.config import Settings
    from docshelf.shelf import Shelf


class Parsed(NamedTuple):
    """An argument line the quick path answers: the command and its parameters."""

    command: str
    home: Path | None
    json: bool  # --json given (stdout not being a terminal also means JSON)
    progress: bool  # --progress given (sync)
    values: dict[str, Any]  # the command function's parameters (cli/options.py names)


class _Defer(Exception):
    """argparse would have printed an error: the typer app words it instead."""


class _Quiet(argparse.HelpFormatter):
    """Never shown (the typer app words help and errors): a fixed width, so argparse
    does not ask the terminal for its size at every argument."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=80)


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(add_help=False, allow_abbrev=False, formatter_class=_Quiet, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise _Defer(message)


def _integer(value: str) -> int:
    """An integer as typer reads one, in ASCII digits; anything else (``٣``, ``0x10``,
    `` 3``) is typer's to judge, as argparse's ``int`` would read some it refuses."""
    digits = value[1:] if value[:1] == "-" else value
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(value)
    return int(value)


def _add(parser: argparse.ArgumentParser, p: spec.Param) -> None:
    kind: Any = {Path: str, int: _integer}.get(p.type, p.type)
    if p.positional:
        if p.required:
            parser.add_argument(p.name, type=kind)
        else:
            parser.add_argument(p.name, type=kind, nargs="?", default=p.default)
    elif p.type is bool:
        parser.add_argument(*p.flags, dest=p.name, action="store_true")
    elif p.many:
        parser.add_argument(*p.flags, dest=p.name, type=kind, action="append", default=None)
    else:
        parser.add_argument(*p.flags, dest=p.name, type=kind, default=p.default)


def _root() -> _Parser:
    """``docshelf [--home H] [--json] COMMAND ...``: the root options, the command's name
    and the rest (read by the command's own parser: one parser for the one command run,
    as argparse asks gettext for its titles' translations, ~0.5 ms a parser)."""
    root = _Parser(prog="docshelf")
    _add(root, spec.HOME)
    root.add_argument(*spec.JSON.flags, dest="root_json", action="store_true")
    root.add_argument("command", choices=list(spec.COMMANDS))
    root.add_argument("rest", nargs=argparse.REMAINDER)
    return root


def _command(name: str) -> _Parser:
    """The parser of command ``name``: its parameters (cli/options.py), ``--json`` and,
    for long work, ``--progress``."""
    params, with_progress = spec.COMMANDS[name]
    parser = _Parser(prog=f"docshelf {name}")
    for p in (*params, spec.JSON, *((spec.PROGRESS,) if with_progress else ())):
        _add(parser, p)
    return parser


def parse(argv: list[str]) -> Parsed | None:
    """The command ``argv`` asks for, when it is ``sync``, ``status`` or ``search`` with
    options argparse reads as typer does; None otherwise (the typer app then parses it,
    errors and all)."""
    try:
        for arg in argv:
            arg.encode()  # a lone surrogate (an argument not in UTF-8): typer's to judge
    except UnicodeEncodeError:
        return None
    # argparse reads "-n=3" as 3, click as "=3" (an error); and "--" (all that follows
    # is an argument) would end the root's parse, not the command's: typer's to judge
    if "--" in argv or any(a[:1] == "-" and a[1:2] != "-" and "=" in a for a in argv):
        return None
    try:
        root = _root().parse_args(argv)
        command = root.command
        ns = vars(_command(command).parse_args(root.rest))
    except _Defer:
        return None
    params, _ = spec.COMMANDS[command]
    if any(str(ns[p.name]).startswith("-") for p in params if p.positional and ns[p.name]):
        return None  # argparse took "-1" for an argument; click, for an option it lacks
    home = root.home
    as_json = root.root_json | ns.pop(spec.JSON.name)
    progress = bool(ns.pop(spec.PROGRESS.name, False))
    return Parsed(command, None if home is None else Path(home), as_json, progress, ns)


class SearchRun(Protocol):
    """What a search needs of its command's run (``core.Run``; the resident helper's own)."""

    def settings(self) -> Settings: ...

    def shelf(self, **kwargs: Any) -> Shelf: ...

    def store_shelf(self) -> Shelf: ...

    def cmd(self, rest: str) -> str: ...


def search_json(run: SearchRun, request: SearchRequest) -> tuple[dict[str, Any], list[Action]]:
    """The result (``views.search``) and the next actions of one search: answered by the
    library's resident helper when one is running and trusted, else in this process
    (which then starts a helper, when ``DOCSHELF_SEARCH_HELPER=auto``)."""
    from docshelf.cli import resident

    settings = run.settings()
    helper, absent = resident.policy(settings), False
    if helper != "off":
        reply = resident.ask(settings, request)
        if reply.result is not None:
            return reply.result, _actions(run, reply.result)
        absent = reply.refused == "absent"
    from docshelf import views

    result = views.search(resident.searched(run.shelf(embed_purpose="query"), request))
    if helper == "auto" and absent and resident.SUPPORTED:
        resident.start(settings)  # for the next search
    return result, _actions(run, result)


def _actions(run: SearchRun, result: dict[str, Any]) -> list[Action]:
    if not result["hits"]:
        return [Action(run.cmd("status"), "Check what is indexed")]
    top = result["hits"][0]
    return [
        Action(
            run.cmd(core.context_line(top["chunk_id"], "parent-section", top["citation"])),
            "Read the section around the top hit",
        ),
        Action(run.cmd(f"show {top['document_id']}"), "Show the top hit's document"),
    ]


# -- the commands (the typer app declares the same functions: library.py, search.py) --


def sync_command(run: core.Run, source: str | None = None, full: bool = False) -> Outcome:
    """Re-read registered sources: pick up new, changed, moved and deleted files."""
    from docshelf import views

    with run.progress("Syncing") as progress:
        report = run.shelf().sync(source, progress=progress, full=full)
    return Outcome(views.report(report), [Action(run.cmd("status"), "See the library's state")])


def status_command(run: core.Run, check: bool = False, repair: bool = False) -> Outcome:
    """Counts, failures, embedding coverage (and with --check, integrity; --repair mends)."""
    result, actions = status_json(run, check, repair)
    return Outcome(result, actions)


def search_command(
    run: core.Run,
    query: str,
    limit: int = 10,
    mode: str = "hybrid",
    filter_: list[str] | None = None,
    group: str = "snippet",
    expand: str | None = None,
    notebook: str | None = None,
) -> Outcome:
    """Hybrid search over snippets; every hit is cited.

    The query may hold "exact phrases", -exclusions and filters: tag:X path:P type:T (or
    filetype:T) doctype:D source:S concept:C date:2026.
    """
    from docshelf.cli.resident import SearchRequest

    request = SearchRequest(query, limit, mode, filter_ or [], group, expand, notebook)
    result, actions = search_json(run, request)  # the helper, or in-process
    return Outcome(result, actions)


render_sync = core.report_render("Synced")


def render_status(o: Outcome) -> None:
    from rich.text import Text

    console = core.console()
    r = o.result
    console.print(Text(f"Library at {r['home']}", style="bold"))
    console.print(
        f"{r['documents']} documents from {r['sources']} sources; "
        f"{r['chunks']['section']} sections, {r['chunks']['snippet']} snippets"
    )
    console.print(f"Embeddings: {r['embedding_model']}, coverage {r['embedding_coverage']:.0%}")
    if waiting := r.get("embedding_pending"):
        done = r["documents"] - waiting
        console.print(
            f"  searchable by meaning: {done} of {r['documents']} documents "
            f"(the other {waiting} by their words until embedded)"
        )
    vi = r["vector_index"]
    if vi.get("engine"):  # an engine of the user's own (docs/engines.md)
        kind = vi["engine"].split(":", 1)[0].split("+", 1)[0]
        if vi.get("path") == "exact":
            console.print(f"Vector search: exact until {kind} is built (`docshelf reindex`)")
        else:
            console.print(
                f"Vector search: {kind} at {vi['engine']} ({vi['indexed']} + {vi['delta']} pending)"
            )
    elif vi.get("path") == "ann":
        console.print(f"Vector search: ANN index ({vi['indexed']} + {vi['delta']} pending)")
    elif vi.get("needs_build"):
        console.print("Vector search: exact until the ANN index is built (`docshelf reindex`)")
    li = r.get("lexical_index") or {}
    if li.get("engine"):
        if li.get("path") == "typesense":
            console.print(f"Lexical search: typesense at {li['engine']} ({li['indexed']} snippets)")
        else:
            console.print("Lexical search: FTS5 until Typesense catches up")
        if li.get("documents"):
            console.print(f"Filters and facets: typesense, collection {li['documents']}")
        else:
            console.print("Filters and facets: the store until Typesense's documents catch up")
    elif li.get("path") == "tantivy":
        console.print(f"Lexical search: tantivy index ({li['indexed']} snippets)")
    elif li.get("recorded") == "tantivy":
        console.print("Lexical search: FTS5 until the tantivy index catches up")
    if r["enrichment"]:
        parts = ", ".join(f"{n} {k}" for k, n in sorted(r["enrichment"].items()))
        console.print(f"Enrichment: {parts}")
    if r.get("reindex_due"):
        console.print(Text(f"Reindex due: {r['reindex_due']}", style="yellow"))
    if r.get("ocr_pages"):
        console.print(f"{counted(r['ocr_pages'], 'page')} read by OCR (scanned pages, images)")
    if r["pages_without_text"]:
        docs = r.get("documents_with_pages_without_text", [])
        console.print(
            f"{r['pages_without_text']} pages without text (scanned? not read by OCR)"
            + (f", in {len(docs)} document{'s' if len(docs) != 1 else ''}:" if docs else "")
        )
        rows = [
            (d["document_id"], f"{d['path']}: {d['pages_without_text']} of {d['page_count']} pages")
            for d in docs
        ]
        if rows:
            console.print(core.hanging(rows))
    if r["unmapped_tags"]:
        tags = ", ".join(f"{t} ({n})" for t, n in list(r["unmapped_tags"].items())[:12])
        console.print(f"Tags not in the taxonomy: {tags}")
    failures = r["failures"]
    listed = len(failures) < r["failed"]  # never, unless the store changes under us
    console.print(f"Failures: {r['failed']}" + (f" ({len(failures)} listed)" if listed else ""))
    core.print_failures(console, failures)
    for done in r.get("repaired", []):
        console.print(Text(f"Repaired: {done}", style="green"))
    if "problems" in r:
        found = len(r["problems"])
        console.print(Text(f"Integrity: {counted(found, 'problem') if found else 'ok'}"))
        for p in r["problem_details"]:
            console.print(Text(f"  ✗ {p['problem']}", style="red"))
            for item in p["items"][:5]:
                console.print(Text(f"      {item}"))
            if len(p["items"]) > 5:
                console.print(Text(f"      … and more (--json lists {len(p['items'])})"))
            if p["hint"]:
                console.print(Text(f"    → {p['hint']}"))


# Why a rule ranks a hit above hits of higher score (search/candidate.py's Precedence).
PLACED_BY = {
    "named": "its heading is your query",
    "quoted": "quotes your query word for word",
    "written": "holds your query's words as you wrote them",
    "strong": "far ahead in one of the two searches",
    "few": "one of few holding a rare word of your query",
    "passage": "holds more of your words than its other passages",
}
WEAK_RESULT = (
    "No close match: no hit holds half of the query's words or comes near its meaning. "
    "These are only the nearest passages."
)


def render_hits(o: Outcome) -> None:
    from rich.padding import Padding
    from rich.text import Text

    from docshelf import plaintext

    console = core.console()
    r = o.result
    if r.get("notice"):
        console.print(Text(r["notice"], style="yellow"))
    if not r["hits"]:
        console.print("No hits.")
    if r["weak"]:
        console.print(Text(WEAK_RESULT, style="yellow"))
    # No scores: a fused score ranks hits among themselves and means nothing alone (the
    # JSON has them); a hit that matches neither the words nor the meaning says so, and
    # one a rule ranks above hits of higher score says why (docs/search.md).
    hits = r["hits"]
    for n, h in enumerate(hits, start=1):
        c = h["citation"]
        head = Text(f"{n}. ", style="bold")
        head.append(c["label"], style="bold cyan")
        if h.get("ocr"):  # its text read by OCR: it may hold OCR's errors
            head.append(f"  OCR {h['ocr']['confidence']:.0%}", style="magenta")
        if h["weak"] and not r["weak"]:
            head.append("  weak match", style="yellow")
        if h.get("placed_by") and any(x["score"] > h["score"] for x in hits[n:]):
            head.append(f"  ↑ {PLACED_BY.get(h['placed_by'][0], h['placed_by'][0])}", "dim")
        console.print(head)
        # the headings under the title (a document's title often heads its top too)
        headings = core.under_title(c["heading_path"], c["title"])
        place = Text(f"§ {' > '.join(headings)}  ", style="cyan") if headings else Text()
        place.append(h["chunk_id"], style="dim")
        console.print(Padding(place, (0, 0, 0, 3), expand=False))
        shown = plaintext.preview(h["display_text"], 300, skip={*c["heading_path"], c["title"]})
        console.print(Padding(Text(shown), (0, 0, 1, 3)))


class OneShot(core.Run):
    """A run of the quick path: a process that exits when the command is done."""

    def shelf(self, **kwargs: Any) -> Shelf:
        # Nothing scrapes a one-shot process's metrics (a helped search opens no shelf,
        # and loads no telemetry).
        from docshelf.telemetry import stop_recording_metrics

        stop_recording_metrics()
        return super().shelf(**kwargs)


COMMANDS: dict[str, tuple[Any, core.Render]] = {
    "sync": (sync_command, render_sync),
    "status": (status_command, render_status),
    "search": (search_command, render_hits),
}


def main(argv: list[str]) -> bool:
    """Answer ``argv`` if it is ``sync``, ``status`` or ``search`` as cli/options.py
    defines them, on a terminal or in JSON; False to leave it to the typer app. Prints
    what the typer app prints; exits 1 on a docshelf error, with its error envelope
    or line."""
    parsed = parse(argv)
    if parsed is None:
        return False
    # numpy's OpenBLAS starts a thread per core that spins before it sleeps (~90 ms of
    # CPU a search on 2 cores); these commands' linear algebra is one query's worth.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    run = OneShot(parsed.home, parsed.command, parsed.json, parsed.progress)
    fn, render = COMMANDS[parsed.command]
    run.finish(lambda: fn(run, **parsed.values), render)
    return True


def exit_now() -> None:
    """End the process now that a one-shot command has answered, when nothing is left
    running: its library is closed and its output flushed, so all the interpreter's own
    finalisation would still do is free numpy's, ONNX Runtime's and the sidecars' objects
    one by one, ~90 ms of a 400-500 ms in-process search (docs/benchmarks/search-new-process.md,
    "Issue 20, a faster host"). A thread still at work, or output that cannot be flushed,
    leaves the exit to the interpreter.
    Only the installed command calls this: a caller of :func:`main` goes on."""
    import threading

    if threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # a closed pipe: the interpreter reports it as it always did
    if "logging" in sys.modules:
        import logging

        logging.shutdown()  # what its atexit hook would do
    os._exit(0)


def status_json(
    run: SearchRun, check: bool, repair: bool = False
) -> tuple[dict[str, Any], list[Action]]:
    """``docshelf status``: counts, failures (all of them), embedding coverage, and with
    ``check`` the integrity check's problems (``repair``: mended first, then checked
    again: what remains)."""
    from docshelf import views

    shelf = run.store_shelf()
    found = shelf.check(repair=True) if repair else None
    problems = shelf.check() if check or repair else None
    st = shelf.status()
    actions = [Action(run.cmd("sync"), "Pick up changes in the registered sources")]
    if st.enrichment.get("pending"):
        actions.append(Action(run.cmd("enrich --all"), "Enrich the documents still pending"))
    if st.reindex_due:
        actions.append(Action(run.cmd("reindex"), "Re-chunk the library with this chunker"))
    if st.documents == 0:
        actions = [Action(run.cmd("add PATH"), "Index a file or folder")]
    if problems and any(p.repairable for p in problems):
        actions.insert(0, Action(run.cmd("status --repair"), "Mend what the check found"))
    result = views.status(st, problems, repaired=found)
    # The status holds the first failures; the command lists them all, as it counts them.
    if st.failure_count > len(st.failures):
        every = shelf.failures(limit=st.failure_count)
        result["failures"] = [{"path": f.path, "reason": f.reason} for f in every]
    if st.pages_without_text:  # which documents have them, as it counts them
        from docshelf.store import Listing

        result["documents_with_pages_without_text"] = [
            {
                "document_id": d.id,
                "title": d.title,
                "path": d.path,
                "pages_without_text": d.pages_without_text,
                "page_count": d.page_count,
            }
            for d in shelf.documents(listing=Listing(pages_without_text=True))
        ]
    if st.by_status.get("failed"):  # documents whose processing failed count as failures too
        for doc in shelf.documents():
            if doc.status == "failed":
                name, reason = _failed_job(shelf, doc.id)
                result["failures"].append({"path": name or doc.path, "reason": reason})
    return result, actions


def _failed_job(shelf: Shelf, document_id: str) -> tuple[str | None, str]:
    """An upload's name and why its processing failed (its job's last error)."""
    from docshelf.errors import NotFound

    try:
        job = shelf.job(document_id)
    except NotFound:
        return None, "processing failed"
    return job.name, job.last_error or "processing failed"
