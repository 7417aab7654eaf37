"""Keeping the library: reindex, enrich, inbox, export, import, retry, migrate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from docshelf.cli.command import Action, Outcome, Run, command, console, emit, err_console, q
from docshelf.cli.core import print_failures
from docshelf.terminal import printable_tree


def _render_reindex(o: Outcome) -> None:
    r = o.result
    if "documents" in r:
        console.print(
            f"Reindexed {r['documents']} documents ({r['snippets']} snippets) with "
            f"{r['embedding_model']} in {r['seconds']} s: {r['rechunked']} re-chunked, "
            f"{r['reembedded']} re-embedded as they were, {r['resumed']} resumed"
        )
        print_failures(console, r["failures"])
    console.print(f"Vector index: {r['vector_index']}")


@command(render=_render_reindex, progress=True)
def reindex(
    run: Run,
    index_only: Annotated[
        bool,
        typer.Option(
            "--index-only",
            help="Only rebuild the vector index beside the database from the store (repair).",
        ),
    ] = False,
    document: Annotated[
        str | None, typer.Option("--doc", help="Rebuild this document alone.", show_default=False)
    ] = None,
) -> Outcome:
    """Rebuild chunks, vectors and indexes with the current model and chunking settings.

    Search keeps answering from the old generation until the new one is complete;
    an interrupted run resumes where it stopped."""
    shelf = run.shelf(check_model=False)
    with run.progress("Rebuilding the index" if index_only else "Reindexing") as progress:
        result = shelf.reindex(progress=progress, index_only=index_only, document_id=document)
    return Outcome(result, [Action(run.cmd("status"), "Check embedding coverage")])


def _render_manifest(r: dict[str, Any]) -> None:
    from docshelf.wording import counted

    matched, by = r["matched"], r["matched_by"]
    verb = "Would write" if r["dry_run"] else "Wrote"
    console.print(
        Text(
            f"{verb} the enrichment of {matched} of {counted(r['lines'], 'line')} of "
            f"{r['manifest']} ({by['sha256']} matched by sha256, {by['path']} by path), "
            "with no LLM call"
            + (f"; {counted(r['reembedded'], 'snippet')} re-embedded" if r["reembedded"] else ""),
            style="bold",
        )
    )
    if r["unmatched"]:
        console.print(Text(f"Not written ({len(r['unmatched'])}):", style="yellow"))
        for u in r["unmatched"][:20]:
            console.print(Text(f"  line {u['line']}: {u['reason']}"))
        if len(r["unmatched"]) > 20:
            console.print(Text(f"  … and {len(r['unmatched']) - 20} more (--json lists all)"))
    if r["unmapped"]:
        console.print(
            Text(f"No concept in the taxonomy {r['taxonomy_version']} for:", style="yellow")
        )
        for m in r["unmapped"][:20]:
            lines = ", ".join(str(n) for n in m["lines"][:8]) + (
                ", …" if len(m["lines"]) > 8 else ""
            )
            console.print(Text(f"  {m['field']} {m['value']!r} (line {lines})"))
        if len(r["unmapped"]) > 20:
            console.print(Text(f"  … and {len(r['unmapped']) - 20} more (--json lists all)"))
    if r["ignored_fields"]:
        ignored = ", ".join(f"{k} ({n})" for k, n in r["ignored_fields"].items())
        console.print(Text(f"Fields a manifest does not know, ignored: {ignored}"))


def _render_enrich(o: Outcome) -> None:
    from rich.table import Table

    if "manifest" in o.result:
        _render_manifest(o.result)
        return
    table = Table("document", "type", "category", "mode", "summary", title="Enriched")
    table.columns[4].overflow = "fold"
    for d in o.result["documents"]:
        mode = d["mode"] + (" (cached)" if d["cached"] else "")
        table.add_row(d["document_id"], d["document_type"], d["category"], mode, d["summary"])
    console.print(table)
    for d in o.result["documents"]:
        if d.get("notice"):
            console.print(Text(f"{d['document_id']}: {d['notice']}", style="yellow"))


@command(render=_render_enrich, progress=True)
def enrich(
    run: Run,
    document_ids: Annotated[
        list[str] | None,
        typer.Argument(help="Document ids (see `list`).", show_default=False),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every document in the library.")] = False,
    manifest: Annotated[
        str | None,
        typer.Option(
            "--from-manifest",
            metavar="FILE.jsonl",
            help="Write enrichment computed elsewhere (JSON Lines, `-` for stdin; "
            "docs/knowledge.md), with no LLM call.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="With --from-manifest: report, write nothing."),
    ] = False,
) -> Outcome:
    """Summarise, classify and distil documents (LLM when configured, else offline).

    With --from-manifest: write summaries, types, categories, tags and concepts computed
    elsewhere (JSON Lines, matched by sha256 or path), with no LLM call; the report lists
    the lines not written and why, and what maps to no concept of the taxonomy."""
    from docshelf import views
    from docshelf.errors import InvalidInput

    if manifest is not None:
        if document_ids or all_:
            raise InvalidInput("--from-manifest takes no document ids nor --all")
        return _from_manifest(run, manifest, dry_run)
    if dry_run:
        raise InvalidInput("--dry-run goes with --from-manifest")
    if bool(document_ids) == all_:
        raise InvalidInput("Name document ids or give --all (not both)")
    with run.progress("Enriching") as progress:
        results = run.shelf().enrich(None if all_ else document_ids, progress=progress)
    return Outcome(
        {"documents": [views.enrich_result(r) for r in results]},
        [
            Action(run.cmd(f"show {r.document_id}"), "See the summary and key claims")
            for r in results[:1]
        ],
    )


def _from_manifest(run: Run, manifest: str, dry_run: bool) -> Outcome:
    import sys

    from docshelf import views

    given = sys.stdin.buffer if manifest == "-" else manifest
    with run.progress("Reading the manifest" if dry_run else "Backfilling") as progress:
        report = run.shelf().enrich_from_manifest(given, dry_run=dry_run, progress=progress)
    result = views.manifest_report(report)
    actions = []
    if dry_run and report.applied:
        actions.append(Action(run.cmd(f"enrich --from-manifest {q(manifest)}"), "Write it"))
    for a in report.applied[:1]:
        actions.append(Action(run.cmd(f"show {a.document_id}"), "See a backfilled document"))
    if report.unmapped:
        actions.append(Action(run.cmd("status"), "See the tags the taxonomy maps to no concept"))
    return Outcome(result, actions)


def _render_inbox(o: Outcome) -> None:
    for f in o.result["filed"]:
        console.print(Text(f"  {f['from']} → {f['to']}"))
    print_failures(console, o.result["failures"])
    console.print(Text(f"Filed {len(o.result['filed'])}", style="bold"))


@command(render=_render_inbox)
def inbox(
    run: Run,
    folder: Annotated[str, typer.Argument(help="The inbox folder to empty.")],
    library: Annotated[
        str, typer.Option("--library", help="Where files go: LIBRARY/<type>/<category>/<name>.")
    ],
    watch_: Annotated[
        bool, typer.Option("--watch", help="Keep going: file new arrivals as they come.")
    ] = False,
) -> Outcome:
    """File the inbox: index, classify and move each file into the library (opt-in)."""
    from docshelf import views
    from docshelf.ingest.filing import Filing, FilingReport, watch_inbox

    def each_run(r: dict[str, Any]) -> None:
        if run.as_json:  # one line per run while watching
            emit(r)
        else:
            _render_inbox(Outcome(printable_tree(r), []))

    filing = Filing(run.shelf(), folder, library)
    if watch_:
        err_console.print(f"Filing {filing.inbox} into {filing.library}; Ctrl-C stops")
        watch_inbox(filing, on_run=lambda r: each_run(views.filing(r)))
        report = FilingReport()
    else:
        with run.progress("Filing") as progress:
            report = filing.run(progress)
    return Outcome(views.filing(report), [Action(run.cmd("list"), "See the filed documents")])


def _render_export(o: Outcome) -> None:
    c = o.result["counts"]
    console.print(
        f"Exported {c['documents']} documents ({c['snippets']} snippets, {c['vectors']} "
        f"vectors, {c['blobs']} uploads) and {c['users']} users to {o.result['path']} "
        f"({o.result['size_bytes'] / 2**20:.1f} MB)"
    )


@command("export", render=_render_export)
def export_(
    run: Run,
    path: Annotated[Path, typer.Argument(help="The archive to write, e.g. library.zip.")],
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
) -> Outcome:
    """Write the whole library to one portable file (to move it to another store)."""
    from docshelf import views

    with run.progress("Exporting") as progress:
        shelf = run.store_shelf()
        report = shelf.export_library(path, overwrite=force, progress=progress)
    return Outcome(
        views.export_report(report),
        [
            Action(
                f"docshelf --home OTHER_HOME import {q(str(report.path))}",
                "Import it into another library (with DOCSHELF_DATABASE_URL=postgresql://… "
                "into PostgreSQL), without re-embedding",
            )
        ],
    )


def _render_import(o: Outcome) -> None:
    added, skipped = o.result["added"], o.result["skipped"]
    console.print(
        f"Imported {added.get('documents', 0)} documents, {added.get('users', 0)} users, "
        f"{added.get('blobs', 0)} uploads; {skipped.get('documents', 0)} documents "
        "were here already"
    )
    if o.result["requeued"]:
        console.print(f"{o.result['requeued']} unfinished ingest jobs are queued again")


@command("import", render=_render_import)
def import_(
    run: Run,
    path: Annotated[Path, typer.Argument(help="An archive made by `docshelf export`.")],
) -> Outcome:
    """Import an exported library into this one, without re-embedding (safe to repeat)."""
    from docshelf import views

    with run.progress("Importing") as progress:
        shelf = run.store_shelf()
        report = shelf.import_library(path, progress=progress)
    return Outcome(
        views.import_report(report),
        [
            Action(run.cmd("status --check"), "Check the imported library"),
            Action(run.cmd('search "your question"'), "Search it"),
        ],
    )


def _render_retry(o: Outcome) -> None:
    console.print(f"Re-queued {o.result['document_id']} at {o.result['stage']}.")


@command(render=_render_retry)
def retry(
    run: Run,
    document_id: Annotated[str, typer.Argument(help="A document whose ingest job failed.")],
) -> Outcome:
    """Re-queue a failed ingest job at the stage where it failed."""
    from docshelf import views

    job = run.store_shelf().retry(document_id)
    return Outcome(
        views.retried(job),
        [
            Action(run.cmd(f"show {document_id}"), "Follow the document's status"),
            Action(run.cmd("worker"), "Run a worker if no server is running one"),
        ],
    )


def _render_migrate(o: Outcome) -> None:
    console.print(f"{o.result['database']} is at schema version {o.result['schema_version']}.")


@command(render=_render_migrate)
def migrate(run: Run) -> Outcome:
    """Bring the store's schema up to date, then exit (what a deployment runs first).

    Every process does this when it opens the store, one at a time; running it
    alone first keeps the API and workers from waiting on each other. Loads no model.
    """
    from docshelf import views
    from docshelf.config import Settings
    from docshelf.store import open_store

    store = open_store(Settings.from_env(run.state.home).database_url)
    try:
        result = views.schema(store.url, store.schema_version())
    finally:
        store.close()
    return Outcome(result, [Action(run.cmd("status"), "See what the library holds")])
