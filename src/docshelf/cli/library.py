"""The library's commands: add, sync, watch, list, show, status, remove."""

from __future__ import annotations

import threading
from contextlib import nullcontext, suppress
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from docshelf.cli import options, quick
from docshelf.cli.command import (
    Action,
    Outcome,
    Run,
    command,
    console,
    emit,
    envelope,
    err_console,
    q,
    report_render,
)
from docshelf.cli.core import hanging, under_title
from docshelf.terminal import printable_tree
from docshelf.wording import counted


@command(render=report_render("Indexed"), progress=True)
def add(
    run: Run,
    path: Annotated[str, typer.Argument(help="A file or folder to index where it lives.")],
    follow_symlinks: Annotated[
        bool | None,
        typer.Option(
            "--follow-symlinks/--no-follow-symlinks",
            help="Follow symlinks that lead outside the folder (remembered on the source; "
            "not followed by default).",
            show_default=False,
        ),
    ] = None,
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Return once the files are searchable by their words; a process of its "
            "own embeds them (and enriches them) after (`docshelf status` shows how far).",
        ),
    ] = False,
) -> Outcome:
    """Register a file or folder and index it where it lives.

    Markdown (Obsidian vaults too), plain text, PDF, HTML, DOCX and reStructuredText.
    A file is searchable by its words as soon as it is stored, by meaning once embedded.
    """
    from docshelf import views

    shelf = run.shelf()
    if background:
        return _add_in_background(run, path, follow_symlinks)
    # Once per home: the query model a new `docshelf search` runs (~10 s of export in
    # child processes), made while the files are indexed — here rather than in the
    # first search, and beside the parsing and indexing, which leave a core free.
    # (Nothing to make for a lexical library; a mistyped path fails at once, no export.)
    preparing = threading.Thread(target=shelf.prepare_query_model, name="query-model", daemon=True)
    if shelf.embedder is not None and Path(path).expanduser().exists():
        preparing.start()
    with run.progress("Indexing") as progress:
        report = shelf.add(path, progress=progress, follow_symlinks=follow_symlinks)
    if preparing.is_alive():
        with nullcontext() if run.as_json else err_console.status("Preparing search…"):
            preparing.join()
    return Outcome(
        views.report(report),
        [
            Action(run.cmd('search "your question"'), "Search what was indexed"),
            Action(run.cmd("status"), "See counts, failures and embedding coverage"),
        ],
    )


def _add_in_background(run: Run, path: str, follow_symlinks: bool | None) -> Outcome:
    """``add --background``: the words now, the vectors in a process of its own."""
    from docshelf import views
    from docshelf.cli import background

    shelf = run.shelf()
    with run.progress("Indexing") as progress:
        report = shelf.add(
            path, progress=progress, follow_symlinks=follow_symlinks, background=True
        )
    result = views.report(report)
    waiting = shelf.waiting_for_vectors()
    result["embedding"] = {"pending": waiting, "pid": None}
    if waiting or shelf.settings.enrich != "off":
        result["embedding"]["pid"] = background.start(shelf.settings)
    return Outcome(
        result,
        [
            Action(
                run.cmd('search "your question"'), "Search by words now, by meaning as it comes"
            ),
            Action(run.cmd("status"), "See how many documents are embedded"),
        ],
    )


# sync and status: cli/quick.py's functions and options (cli/options.py), which the
# quick path runs without typer
sync = command("sync", render=quick.render_sync, progress=True, params=options.SYNC)(
    quick.sync_command
)


@command()
def watch(run: Run) -> Outcome:
    """Follow the registered sources live: sync now, then on every change (Ctrl-C stops)."""
    from docshelf import views
    from docshelf.ingest.watch import watch as follow

    render = report_render("Synced")

    def show(report: Any) -> None:
        result = views.report(report)
        if run.as_json:  # one envelope per sync while watching
            emit(envelope("watch", result, []))
        elif any(result["counts"][k] for k in result["counts"] if k != "unchanged"):
            render(Outcome(printable_tree(result)))

    shelf = run.shelf()
    if not run.as_json:
        err_console.print(f"Watching {len(shelf.sources())} source(s); Ctrl-C to stop")
    with suppress(KeyboardInterrupt):
        follow(shelf, show)
    return Outcome({"stopped": True}, [Action(run.cmd("status"), "See the library's state")])


def _render_list(o: Outcome) -> None:
    from rich.table import Table

    r = o.result
    sources = Table("source", "path", "kind", title="Sources")
    for s in r["sources"]:
        sources.add_row(s["id"], s["path"], s["kind"])
    console.print(sources)
    docs = Table("document", "title", "path", "type", "snippets", "status", title="Documents")
    docs.columns[2].overflow = "fold"
    for d in r["documents"]:
        docs.add_row(
            d["id"],
            d["title"],
            d["path"],
            d["document_type"] or "",
            str(d["chunk_counts"].get("snippet", 0)),
            d["status"],
        )
    console.print(docs)
    shown, total = len(r["documents"]), r["total"]
    if shown < total:  # a page of the library: say so, and how to see the rest
        first = f" from the {_ordinal(r['offset'] + 1)}" if r["offset"] else ""
        following = r["next_offset"]
        more = f"--offset {following} for the next, " if following is not None else ""
        console.print(
            Text(f"{shown} of {total} shown{first}; {more}--limit N or --all for more", "yellow")
        )


def _ordinal(n: int) -> str:
    ends = {1: "st", 2: "nd", 3: "rd"}
    return f"{n}{'th' if 10 <= n % 100 <= 20 else ends.get(n % 10, 'th')}"


@command("list", render=_render_list)
def list_(
    run: Run,
    source: Annotated[
        str | None, typer.Option("--source", help="Only documents of this source id.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many documents.", min=1)] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many documents.", min=0)] = 0,
    all_: Annotated[bool, typer.Option("--all", help="Every document (no --limit).")] = False,
) -> Outcome:
    """List sources and documents, a page at a time (``total`` counts them all).

    Piped without --json, the JSON envelope puts each source and document on a line of
    its own (for head, grep, less); with --json it is one line, as every envelope."""
    from docshelf import views

    shelf = run.shelf()
    docs = shelf.documents(source_id=source, limit=None if all_ else limit, offset=offset)
    total = shelf.count_documents(source_id=source)
    after = offset + len(docs)
    following = after if after < total and docs else None
    actions = [Action(run.cmd(f"show {d.id}"), f"Show {d.title}") for d in docs[:1]]
    if following is not None:
        at = (f"--source {q(source)} " if source else "") + (
            f"--limit {limit} " if limit != 100 else ""
        )
        actions.append(
            Action(run.cmd(f"list {at}--offset {following}"), f"The next of {total} documents")
        )
    if not docs and not total:
        actions.append(Action(run.cmd("add PATH"), "Index a file or folder"))
    return Outcome(
        {
            "sources": [views.source(s) for s in shelf.sources()],
            "documents": [views.document(d) for d in docs],
            "total": total,  # as the HTTP API and MCP's list_sources page
            "limit": None if all_ else limit,
            "offset": offset,
            "next_offset": following,
        },
        actions,
        lined=True,
    )


_SHOWN = (
    "id",
    "title",
    "path",
    "file_type",
    "size_bytes",
    "status",
    "tags",
    "document_type",
    "category",
    "concept_ids",
    "enrichment_mode",
    "chunk_counts",
    "embedding_model",
    "sha256",
)


def _shown(key: str, value: Any) -> str:
    """A record field as a person reads it: lists joined, nothing as "—", chunk counts
    in words ("1 section, 9 snippets"), never a Python repr."""
    if key == "chunk_counts" and isinstance(value, dict):
        return ", ".join(counted(n, tier) for tier, n in value.items()) or "—"
    if value is None or value == "" or value == [] or value == {}:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _render_show(o: Outcome) -> None:
    from rich.table import Table

    r = o.result
    table = Table(show_header=False, box=None)
    for key in _SHOWN:
        table.add_row(Text(key, style="bold"), Text(_shown(key, r[key])))
    if r["summary"]:
        table.add_row(Text("summary", style="bold"), Text(r["summary"]))
    if r["page_count"]:
        pages = f"{r['page_count']}"
        notes = [f"{r['ocr_pages']} read by OCR"] if r.get("ocr_pages") else []
        if r["pages_without_text"]:
            notes.append(f"{r['pages_without_text']} pages without text")
        if notes:
            pages += f" ({'; '.join(notes)})"
        table.add_row(Text("pages", style="bold"), Text(pages))
    console.print(table)
    if r["sections"]:
        console.print(Text("Sections:", style="bold"))
        rows = [
            (s["chunk_id"], " > ".join(under_title(s["heading_path"], r["title"])) or "(top)")
            for s in r["sections"]
        ]
        console.print(hanging(rows))
    if r["distillates"]:
        console.print(Text("Key claims:", style="bold"))
        claims = [("•", f"{x['text']}  [{', '.join(x['chunk_ids'])}]") for x in r["distillates"]]
        console.print(hanging(claims))
    if r["links"]:
        console.print(Text("Links:", style="bold"))
        links: dict[str, list[str]] = {}  # each target once, however often and however
        embedded: set[str] = set()  # (alias, heading) the note links it; an attachment
        for link in r["links"]:  # (an image) is no note, and never a document
            ids = links.setdefault(link["target"], [])
            ids += [i for i in link["document_ids"] if i not in ids]
            if link["embed"]:
                embedded.add(link["target"])
        files = {link["target"] for link in r["links"] if link["attachment"]}
        for target, ids in links.items():
            missing = "(an attachment, not a note)" if target in files else "(no such note)"
            mark = "!" if target in embedded else ""
            console.print(Text(f"  {mark}[[{target}]] -> {', '.join(ids) or missing}"))
    if r["backlinks"]:
        console.print(Text("Backlinks:", style="bold"))
        for b in r["backlinks"]:
            console.print(Text(f"  {b['document_id']}  {b['title']}"))


@command(render=_render_show)
def show(
    run: Run,
    document_id: Annotated[
        str,
        typer.Argument(help="A document id (see `list`), or the start of one: doc_3f2a, 3f2a."),
    ],
) -> Outcome:
    """Show a document's record, its files and its sections."""
    from docshelf import views

    shelf = run.shelf()
    view = shelf.document(shelf.document_id(document_id))
    actions = [
        Action(run.cmd(f"context {s.id} --mode parent-section"), "Read the first section")
        for s in view.sections[:1]
    ]
    return Outcome(views.document_view(view), actions)


status = command("status", render=quick.render_status, params=options.STATUS)(quick.status_command)


@command(render=report_render("Removed"))
def remove(
    run: Run,
    source: Annotated[str, typer.Argument(help="A source id or the path it was added with.")],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask first (a terminal asks).")
    ] = False,
) -> Outcome:
    """Unregister a source; its documents leave the index (the files stay untouched).

    On a terminal it names the source and its documents and asks first; --yes, or
    JSON output (a script, an agent), does not ask."""
    from docshelf import views
    from docshelf.terminal import printable

    shelf = run.store_shelf()
    if not (yes or run.as_json):
        found = shelf.source(source)
        n = shelf.count_documents(source_id=found.id)
        asked = (
            f"Remove {found.id} ({printable(found.path)}) and its {counted(n, 'document')} "
            "from the library? The files stay where they are."
        )
        try:
            agreed = typer.confirm(asked, default=False)
        except typer.Abort:  # no answer (Ctrl-C, or stdin at its end)
            agreed = False
        if not agreed:
            err_console.print("Nothing removed.")
            raise typer.Exit(1)
    report = shelf.remove(source)
    return Outcome(views.report(report), [Action(run.cmd("list"), "See what remains")])
