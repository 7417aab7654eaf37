"""The ``docshelf`` command: a thin face over ``Shelf``.

On a terminal it prints tables and progress bars; with ``--json``, or whenever
stdout is not a terminal, it prints one JSON envelope (SPEC §9):
``{ok, command, result, next_actions, error}``. What it prints for people
passes through ``terminal.printable`` (file names and document text may hold
terminal escapes) and is never read as rich markup. Exit status: 0 on success,
1 on a docshelf error (the envelope's ``error.code`` says which), 2 on a usage
error. Heavy modules (numpy, the store, the model) are imported inside the
commands so ``docshelf --help`` stays fast.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from docshelf.terminal import printable, printable_tree

if TYPE_CHECKING:
    import threading

    from docshelf.ingest.worker import Worker
    from docshelf.ingest.worker_probe import WorkerProbe
    from docshelf.shelf import Progress, Shelf

app = typer.Typer(
    name="docshelf",
    help="Index the documents you already keep, search them, and cite every hit.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
# No rich markup: every string shown may come from a file name or a document.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False)

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the JSON envelope (default when stdout is not a TTY).")
]


@dataclass
class Action:
    command: str
    description: str


@dataclass
class Outcome:
    result: dict[str, Any]
    next_actions: list[Action] = field(default_factory=list)


@dataclass
class CliState:
    home: Path | None = None
    json: bool = False


def _state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, CliState) else CliState()


@app.callback()
def _main(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home", help="Data directory (overrides DOCSHELF_HOME).", show_default=False
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    ctx.obj = CliState(home=home, json=json_out)


def _q(arg: str) -> str:
    return shlex.quote(arg)


def _prefix(state: CliState) -> str:
    return f"docshelf --home {_q(str(state.home))}" if state.home else "docshelf"


class _Run:
    """Runs one command: opens the shelf, renders the outcome or the error."""

    def __init__(self, ctx: typer.Context, command: str, json_flag: bool) -> None:
        self.state = _state(ctx)
        self.command = command
        self.as_json = json_flag or self.state.json or not sys.stdout.isatty()
        self._shelf: Shelf | None = None

    def shelf(self, **kwargs: Any) -> Shelf:
        if self._shelf is None:
            from docshelf.shelf import Shelf

            self._shelf = Shelf(self.state.home, **kwargs)
        return self._shelf

    def store_shelf(self) -> Shelf:
        """A shelf for commands that never embed: no model is bound or checked."""
        return self.shelf(embedder=None, check_model=False)

    def cmd(self, rest: str) -> str:
        return f"{_prefix(self.state)} {rest}"

    @contextmanager
    def progress(self, label: str) -> Iterator[Progress | None]:
        """A rich progress bar on a terminal; nothing in JSON mode."""
        if self.as_json or not sys.stderr.isatty():
            yield None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[item]}", style="dim", markup=False),
            console=err_console,
            transient=True,
        ) as bar:
            task = bar.add_task(label, total=None, item="")

            def update(done: int, total: int, item: str) -> None:
                bar.update(task, completed=done, total=total, item=printable(item[-60:]))

            yield update

    def finish(self, produce: Callable[[], Outcome], render: Callable[[Outcome], None]) -> None:
        from docshelf.errors import DocshelfError

        try:
            outcome = produce()
        except DocshelfError as exc:
            self._fail(exc.code, exc.message)
        except KeyboardInterrupt:
            self._fail("interrupted", "Interrupted; committed work is kept, run the command again")
        finally:
            if self._shelf is not None:
                self._shelf.close()
        if self.as_json:
            envelope = {
                "ok": True,
                "command": self.command,
                "result": outcome.result,
                "next_actions": [a.__dict__ for a in outcome.next_actions],
                "error": None,
            }
            sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
        else:
            render(Outcome(printable_tree(outcome.result), outcome.next_actions))
            if outcome.next_actions:
                console.print(Text("\nNext:", style="bold"))
                for a in outcome.next_actions:
                    console.print(
                        Text(f"  {printable(a.command)}", style="cyan"),
                        Text(f"  {printable(a.description)}"),
                    )

    def _fail(self, code: str, message: str) -> None:
        if self.as_json:
            envelope = {
                "ok": False,
                "command": self.command,
                "result": None,
                "next_actions": [],
                "error": {"code": code, "message": message},
            }
            sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
        else:
            err_console.print(Text(f"Error ({code}): {printable(message)}", style="red"))
        raise typer.Exit(1)


def _report_render(title: str) -> Callable[[Outcome], None]:
    def render(o: Outcome) -> None:
        counts = o.result["counts"]
        summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        console.print(Text(f"{title}: {summary or 'nothing to do'}", style="bold"))
        for f in o.result["failures"][:50]:
            console.print(Text(f"  ✗ {f['path']}: {f['reason']}", style="yellow"))
        if len(o.result["failures"]) > 50:
            console.print(Text(f"  … and {len(o.result['failures']) - 50} more"))

    return render


@app.command()
def add(
    ctx: typer.Context,
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
    json_out: JsonOpt = False,
) -> None:
    """Register a file or folder and index it (Markdown and text)."""
    from docshelf import views

    run = _Run(ctx, "add", json_out)

    def produce() -> Outcome:
        with run.progress("Indexing") as progress:
            report = run.shelf().add(path, progress=progress, follow_symlinks=follow_symlinks)
        return Outcome(
            views.report(report),
            [
                Action(run.cmd('search "your question"'), "Search what was indexed"),
                Action(run.cmd("status"), "See counts, failures and embedding coverage"),
            ],
        )

    run.finish(produce, _report_render("Indexed"))


@app.command()
def sync(
    ctx: typer.Context,
    source: Annotated[
        str | None,
        typer.Argument(help="A source id; all sources when omitted.", show_default=False),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-read registered sources: pick up new, changed, moved and deleted files."""
    from docshelf import views

    run = _Run(ctx, "sync", json_out)

    def produce() -> Outcome:
        with run.progress("Syncing") as progress:
            report = run.shelf().sync(source, progress=progress)
        return Outcome(views.report(report), [Action(run.cmd("status"), "See the library's state")])

    run.finish(produce, _report_render("Synced"))


@app.command()
def watch(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Follow the registered sources live: sync now, then on every change (Ctrl-C stops)."""
    from docshelf import views
    from docshelf.ingest.watch import watch as follow

    run = _Run(ctx, "watch", json_out)
    render = _report_render("Synced")

    def show(report: Any) -> None:
        outcome = Outcome(views.report(report))
        if run.as_json:
            envelope = {
                "ok": True,
                "command": "watch",
                "result": outcome.result,
                "next_actions": [],
                "error": None,
            }
            sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        elif any(outcome.result["counts"][k] for k in outcome.result["counts"] if k != "unchanged"):
            render(Outcome(printable_tree(outcome.result)))

    def produce() -> Outcome:
        shelf = run.shelf()
        if not run.as_json:
            err_console.print(f"Watching {len(shelf.sources())} source(s); Ctrl-C to stop")
        with suppress(KeyboardInterrupt):
            follow(shelf, show)
        return Outcome({"stopped": True}, [Action(run.cmd("status"), "See the library's state")])

    run.finish(produce, lambda o: None)


@app.command("list")
def list_(
    ctx: typer.Context,
    source: Annotated[
        str | None, typer.Option("--source", help="Only documents of this source id.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many documents.", min=1)] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many documents.", min=0)] = 0,
    json_out: JsonOpt = False,
) -> None:
    """List sources and documents."""
    from docshelf import views

    run = _Run(ctx, "list", json_out)

    def produce() -> Outcome:
        shelf = run.shelf()
        docs = shelf.documents(source_id=source, limit=limit, offset=offset)
        actions = [Action(run.cmd(f"show {d.id}"), f"Show {d.title}") for d in docs[:1]]
        if not docs:
            actions.append(Action(run.cmd("add PATH"), "Index a file or folder"))
        return Outcome(
            {
                "sources": [views.source(s) for s in shelf.sources()],
                "documents": [views.document(d) for d in docs],
            },
            actions,
        )

    def render(o: Outcome) -> None:
        sources = Table("source", "path", "kind", title="Sources")
        for s in o.result["sources"]:
            sources.add_row(s["id"], s["path"], s["kind"])
        console.print(sources)
        docs = Table("document", "title", "path", "type", "snippets", "status", title="Documents")
        docs.columns[2].overflow = "fold"
        for d in o.result["documents"]:
            docs.add_row(
                d["id"],
                d["title"],
                d["path"],
                d["document_type"] or "",
                str(d["chunk_counts"].get("snippet", 0)),
                d["status"],
            )
        console.print(docs)

    run.finish(produce, render)


@app.command()
def show(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help="A document id (see `list`).")],
    json_out: JsonOpt = False,
) -> None:
    """Show a document's record, its files and its sections."""
    from docshelf import views

    run = _Run(ctx, "show", json_out)

    def produce() -> Outcome:
        view = run.shelf().document(document_id)
        actions = [
            Action(run.cmd(f"context {s.id} --mode parent-section"), "Read the first section")
            for s in view.sections[:1]
        ]
        return Outcome(views.document_view(view), actions)

    def render(o: Outcome) -> None:
        r = o.result
        table = Table(show_header=False, box=None)
        for key in (
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
        ):
            table.add_row(Text(key, style="bold"), Text(str(r[key])))
        if r["summary"]:
            table.add_row(Text("summary", style="bold"), Text(r["summary"]))
        if r["page_count"]:
            pages = f"{r['page_count']}"
            if r["pages_without_text"]:
                pages += f" ({r['pages_without_text']} pages without text)"
            table.add_row(Text("pages", style="bold"), Text(pages))
        console.print(table)
        for s in r["sections"]:
            console.print(Text(f"  {s['chunk_id']}  {' > '.join(s['heading_path']) or '(top)'}"))
        if r["distillates"]:
            console.print(Text("Key claims:", style="bold"))
            for x in r["distillates"]:
                console.print(Text(f"  • {x['text']}  [{', '.join(x['chunk_ids'])}]"))
        if r["links"]:
            console.print(Text("Links:", style="bold"))
            for link in r["links"]:
                where = ", ".join(link["document_ids"]) or "(no such note)"
                console.print(Text(f"  [[{link['target']}]] -> {where}"))
        if r["backlinks"]:
            console.print(Text("Backlinks:", style="bold"))
            for b in r["backlinks"]:
                console.print(Text(f"  {b['document_id']}  {b['title']}"))

    run.finish(produce, render)


@app.command()
def status(
    ctx: typer.Context,
    check: Annotated[bool, typer.Option("--check", help="Also run an integrity check.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Counts, failures, embedding coverage (and with --check, integrity)."""
    from docshelf import views

    run = _Run(ctx, "status", json_out)

    def produce() -> Outcome:
        shelf = run.store_shelf()
        st = shelf.status()
        actions = [Action(run.cmd("sync"), "Pick up changes in the registered sources")]
        if st.enrichment.get("pending"):
            actions.append(Action(run.cmd("enrich --all"), "Enrich the documents still pending"))
        if st.documents == 0:
            actions = [Action(run.cmd("add PATH"), "Index a file or folder")]
        return Outcome(views.status(st, shelf.check() if check else None), actions)

    def render(o: Outcome) -> None:
        r = o.result
        console.print(Text(f"Library at {r['home']}", style="bold"))
        console.print(
            f"{r['documents']} documents from {r['sources']} sources; "
            f"{r['chunks']['section']} sections, {r['chunks']['snippet']} snippets"
        )
        console.print(f"Embeddings: {r['embedding_model']}, coverage {r['embedding_coverage']:.0%}")
        vi = r["vector_index"]
        if vi.get("path") == "ann":
            console.print(f"Vector search: ANN index ({vi['indexed']} + {vi['delta']} pending)")
        elif vi.get("needs_build"):
            console.print("Vector search: exact until the ANN index is built (`docshelf reindex`)")
        li = r.get("lexical_index") or {}
        if li.get("path") == "tantivy":
            console.print(f"Lexical search: tantivy index ({li['indexed']} snippets)")
        elif li.get("recorded") == "tantivy":
            console.print("Lexical search: FTS5 until the tantivy index catches up")
        if r["enrichment"]:
            parts = ", ".join(f"{n} {k}" for k, n in sorted(r["enrichment"].items()))
            console.print(f"Enrichment: {parts}")
        if r["pages_without_text"]:
            console.print(f"{r['pages_without_text']} pages without text (scanned? no OCR)")
        if r["unmapped_tags"]:
            tags = ", ".join(f"{t} ({n})" for t, n in list(r["unmapped_tags"].items())[:12])
            console.print(f"Tags not in the taxonomy: {tags}")
        console.print(f"Failures: {r['failed']}")
        for f in r["failures"]:
            console.print(Text(f"  ✗ {f['path']}: {f['reason']}", style="yellow"))
        if "problems" in r:
            console.print(Text(f"Integrity: {'ok' if not r['problems'] else ''}"))
            for p in r["problems"]:
                console.print(Text(f"  ✗ {p}", style="red"))

    run.finish(produce, render)


def _parse_filters(items: list[str]) -> Any:
    from docshelf.errors import InvalidInput
    from docshelf.store import SearchFilters

    known = {
        "source": "source_id",
        "path": "path_prefix",
        "type": "file_type",
        "tag": "tags",
        "concept": "concepts",
    }
    values: dict[str, Any] = {"tags": ()}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in known or not value:
            raise InvalidInput(
                f"Bad filter {item!r}; use KEY=VALUE with KEY one of {', '.join(known)}"
            )
        if key == "tag":
            values["tags"] = (*values["tags"], value.lstrip("#"))
        elif key == "concept":
            from docshelf.config import taxonomy_path
            from docshelf.shelf import concept_group
            from docshelf.taxonomy import configured_taxonomy

            group = concept_group(configured_taxonomy(taxonomy_path()), value)
            values["concept_groups"] = (*values.get("concept_groups", ()), group)
        else:
            values[known[key]] = value
    return SearchFilters(**values)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for, in your own words.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Number of hits.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, lexical or vector.")] = "hybrid",
    filter_: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            help="KEY=VALUE, repeatable: source=ID, path=PREFIX, type=TYPE, tag=TAG, concept=C.",
        ),
    ] = None,
    group: Annotated[
        str, typer.Option(help="One hit per snippet, section or document.")
    ] = "snippet",
    expand: Annotated[
        str | None, typer.Option(help="parent-section: include each hit's section text.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Hybrid search over snippets; every hit is cited.

    The query may hold "exact phrases", -exclusions and tag:X path:P type:T source:S filters.
    """
    from docshelf import views

    run = _Run(ctx, "search", json_out)

    def produce() -> Outcome:
        result = run.shelf().search(
            query,
            limit=limit,
            mode=mode,
            filters=_parse_filters(filter_ or []),
            group=group,
            expand=expand,
        )
        actions = []
        if result.hits:
            top = result.hits[0]
            actions = [
                Action(
                    run.cmd(f"context {top.chunk.id} --mode parent-section"),
                    "Read the section around the top hit",
                ),
                Action(run.cmd(f"show {top.document.id}"), "Show the top hit's document"),
            ]
        else:
            actions = [Action(run.cmd("status"), "Check what is indexed")]
        return Outcome(views.search(result), actions)

    def render(o: Outcome) -> None:
        r = o.result
        if r.get("notice"):
            console.print(Text(r["notice"], style="yellow"))
        if not r["hits"]:
            console.print("No hits.")
        for n, h in enumerate(r["hits"], start=1):
            c = h["citation"]
            head = Text(f"{n}. ", style="bold")
            head.append(c["label"], style="bold cyan")
            if c["heading_path"]:
                head.append(f"  > {' > '.join(c['heading_path'])}", style="cyan")
            head.append(f"  {h['score']:.3f}  {h['chunk_id']}", style="dim")
            console.print(head)
            body = " ".join(h["text"].split())
            body = body[:300] + ("…" if len(body) > 300 else "")
            console.print(Padding(Text(body), (0, 0, 1, 3)))

    run.finish(produce, render)


@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="A question about your documents.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Hits to answer from.")] = 5,
    stream: Annotated[
        bool, typer.Option("--stream", help="Print verified sentences as they are written.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Answer from your documents with [n] citations (LLM if configured, else extractive)."""
    from docshelf import views

    run = _Run(ctx, "ask", json_out)
    streamed = stream and not run.as_json

    def produce() -> Outcome:
        if streamed:
            answer = None
            for piece in run.shelf().ask_stream(question, limit=limit):
                if piece.kind == "text":
                    console.print(Text(printable(piece.text)), end="")
                    console.file.flush()
                answer = piece.answer or answer
            console.print()
            assert answer is not None
        else:
            answer = run.shelf().ask(question, limit=limit)
        actions = [
            Action(run.cmd(f"context {c.chunk_id} --mode parent-section"), f"Read source [{c.n}]")
            for c in answer.citations[:2]
        ]
        return Outcome(views.answer(answer), actions)

    def render(o: Outcome) -> None:
        r = o.result
        if r.get("notice"):
            console.print(Text(r["notice"], style="yellow"))
        if not streamed:  # a streamed answer is on the screen already
            console.print(Text(r["answer"]))
        console.print(Text(f"\n({r['mode']})", style="dim"))
        for c in r["citations"]:
            console.print(Text(f"[{c['n']}] {c['label']}  {c['chunk_id']}", style="cyan"))

    run.finish(produce, render)


@app.command()
def context(
    ctx: typer.Context,
    chunk_id: Annotated[str, typer.Argument(help="A chunk id from a search hit.")],
    mode: Annotated[
        str, typer.Option(help="snippet-window, parent-section or section-neighborhood.")
    ] = "snippet-window",
    window: Annotated[int, typer.Option(help="Neighbours on each side (snippet-window).")] = 1,
    json_out: JsonOpt = False,
) -> None:
    """Expand a hit: its neighbouring snippets, its section, or its section's neighbours."""
    from docshelf import views

    run = _Run(ctx, "context", json_out)

    def produce() -> Outcome:
        result = run.store_shelf().context(chunk_id, mode, window)
        others = [
            m for m in ("snippet-window", "parent-section", "section-neighborhood") if m != mode
        ]
        return Outcome(
            views.context(result),
            [Action(run.cmd(f"context {chunk_id} --mode {m}"), f"Expand as {m}") for m in others],
        )

    def render(o: Outcome) -> None:
        console.print(Text(o.result["citation"]["label"], style="bold cyan"))
        console.print(Text(o.result["text"]))

    run.finish(produce, render)


@app.command()
def remove(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="A source id or the path it was added with.")],
    json_out: JsonOpt = False,
) -> None:
    """Unregister a source; its documents leave the index (the files stay untouched)."""
    from docshelf import views

    run = _Run(ctx, "remove", json_out)

    def produce() -> Outcome:
        report = run.store_shelf().remove(source)
        return Outcome(views.report(report), [Action(run.cmd("list"), "See what remains")])

    run.finish(produce, _report_render("Removed"))


@app.command()
def reindex(
    ctx: typer.Context,
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
    json_out: JsonOpt = False,
) -> None:
    """Rebuild chunks, vectors and indexes with the current model and chunking settings.

    Search keeps answering from the old generation until the new one is complete;
    an interrupted run resumes where it stopped."""
    run = _Run(ctx, "reindex", json_out)

    def produce() -> Outcome:
        shelf = run.shelf(check_model=False)
        with run.progress("Rebuilding the index" if index_only else "Reindexing") as progress:
            result = shelf.reindex(progress=progress, index_only=index_only, document_id=document)
        return Outcome(result, [Action(run.cmd("status"), "Check embedding coverage")])

    def render(o: Outcome) -> None:
        r = o.result
        if "documents" in r:
            console.print(
                f"Reindexed {r['documents']} documents ({r['snippets']} snippets) with "
                f"{r['embedding_model']} in {r['seconds']} s: {r['rechunked']} re-chunked, "
                f"{r['reembedded']} re-embedded as they were, {r['resumed']} resumed"
            )
            for f in r["failures"]:
                console.print(Text(f"  ✗ {f['path']}: {f['reason']}", style="yellow"))
        console.print(f"Vector index: {r['vector_index']}")

    run.finish(produce, render)


@app.command()
def enrich(
    ctx: typer.Context,
    document_ids: Annotated[
        list[str] | None,
        typer.Argument(help="Document ids (see `list`).", show_default=False),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every document in the library.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Summarise, classify and distil documents (LLM when configured, else offline)."""
    from docshelf import views
    from docshelf.errors import InvalidInput

    run = _Run(ctx, "enrich", json_out)

    def produce() -> Outcome:
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

    def render(o: Outcome) -> None:
        table = Table("document", "type", "category", "mode", "summary", title="Enriched")
        table.columns[4].overflow = "fold"
        for d in o.result["documents"]:
            mode = d["mode"] + (" (cached)" if d["cached"] else "")
            table.add_row(d["document_id"], d["document_type"], d["category"], mode, d["summary"])
        console.print(table)
        for d in o.result["documents"]:
            if d.get("notice"):
                console.print(Text(f"{d['document_id']}: {d['notice']}", style="yellow"))

    run.finish(produce, render)


@app.command()
def inbox(
    ctx: typer.Context,
    folder: Annotated[str, typer.Argument(help="The inbox folder to empty.")],
    library: Annotated[
        str, typer.Option("--library", help="Where files go: LIBRARY/<type>/<category>/<name>.")
    ],
    watch_: Annotated[
        bool, typer.Option("--watch", help="Keep going: file new arrivals as they come.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """File the inbox: index, classify and move each file into the library (opt-in)."""
    from docshelf.ingest.filing import Filing, FilingReport, watch_inbox

    run = _Run(ctx, "inbox", json_out)

    def result(r: FilingReport) -> dict[str, Any]:
        return {
            "filed": [{"from": a, "to": b} for a, b in r.filed],
            "failures": [{"path": f.path, "reason": f.reason} for f in r.failures],
            "repaired": r.repaired,
        }

    def each_run(r: dict[str, Any]) -> None:
        if run.as_json:  # one line per run while watching
            sys.stdout.write(json.dumps(r, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            render(Outcome(printable_tree(r), []))

    def produce() -> Outcome:
        filing = Filing(run.shelf(), folder, library)
        if watch_:
            err_console.print(f"Filing {filing.inbox} into {filing.library}; Ctrl-C stops")
            watch_inbox(filing, on_run=lambda r: each_run(result(r)))
            report = FilingReport()
        else:
            with run.progress("Filing") as progress:
                report = filing.run(progress)
        return Outcome(result(report), [Action(run.cmd("list"), "See the filed documents")])

    def render(o: Outcome) -> None:
        for f in o.result["filed"]:
            console.print(Text(f"  {f['from']} → {f['to']}"))
        for f in o.result["failures"]:
            console.print(Text(f"  ✗ {f['path']}: {f['reason']}", style="yellow"))
        console.print(Text(f"Filed {len(o.result['filed'])}", style="bold"))

    run.finish(produce, render)


@app.command()
def distillates(
    ctx: typer.Context,
    query: Annotated[
        str | None, typer.Argument(help="Words to look for in key claims.", show_default=False)
    ] = None,
    document: Annotated[
        str | None, typer.Option("--doc", help="The key claims of this document id.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many.")] = 20,
    json_out: JsonOpt = False,
) -> None:
    """Search the documents' key claims (distillates), each citing its chunks."""
    from docshelf import views

    run = _Run(ctx, "distillates", json_out)

    def produce() -> Outcome:
        found = run.store_shelf().distillates(query, document_id=document, limit=limit)
        actions = [
            Action(run.cmd(f"context {d.chunk_ids[0]} --mode parent-section"), "Read the evidence")
            for d, _ in found[:1]
            if d.chunk_ids
        ]
        return Outcome({"distillates": [views.distillate(d, doc) for d, doc in found]}, actions)

    def render(o: Outcome) -> None:
        if not o.result["distillates"]:
            console.print("No key claims matched.")
        for d in o.result["distillates"]:
            console.print(Text(f"• {d['text']}"))
            console.print(Text(f"  {d['title']} — {', '.join(d['chunk_ids'])}", style="dim"))

    run.finish(produce, render)


@app.command("export")
def export_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The archive to write, e.g. library.zip.")],
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write the whole library to one portable file (to move it to another store)."""
    run = _Run(ctx, "export", json_out)

    def produce() -> Outcome:
        with run.progress("Exporting") as progress:
            shelf = run.store_shelf()
            report = shelf.export_library(path, overwrite=force, progress=progress)
        return Outcome(
            {
                "path": str(report.path),
                "size_bytes": report.size_bytes,
                "embedding_model": report.embedding_model,
                "embedding_dim": report.embedding_dim,
                "counts": report.counts,
            },
            [
                Action(
                    f"docshelf --home OTHER_HOME import {_q(str(report.path))}",
                    "Import it into another library (with DOCSHELF_DATABASE_URL=postgresql://… "
                    "into PostgreSQL), without re-embedding",
                )
            ],
        )

    def render(o: Outcome) -> None:
        c = o.result["counts"]
        console.print(
            f"Exported {c['documents']} documents ({c['snippets']} snippets, {c['vectors']} "
            f"vectors, {c['blobs']} uploads) and {c['users']} users to {o.result['path']} "
            f"({o.result['size_bytes'] / 2**20:.1f} MB)"
        )

    run.finish(produce, render)


@app.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="An archive made by `docshelf export`.")],
    json_out: JsonOpt = False,
) -> None:
    """Import an exported library into this one, without re-embedding (safe to repeat)."""
    run = _Run(ctx, "import", json_out)

    def produce() -> Outcome:
        with run.progress("Importing") as progress:
            shelf = run.store_shelf()
            report = shelf.import_library(path, progress=progress)
        return Outcome(
            {
                "path": str(report.path),
                "embedding_model": report.embedding_model,
                "counts": report.counts,
                "added": dict(report.added),
                "skipped": dict(report.skipped),
                "requeued": len(report.requeued),
            },
            [
                Action(run.cmd("status --check"), "Check the imported library"),
                Action(run.cmd('search "your question"'), "Search it"),
            ],
        )

    def render(o: Outcome) -> None:
        added, skipped = o.result["added"], o.result["skipped"]
        console.print(
            f"Imported {added.get('documents', 0)} documents, {added.get('users', 0)} users, "
            f"{added.get('blobs', 0)} uploads; {skipped.get('documents', 0)} documents "
            "were here already"
        )
        if o.result["requeued"]:
            console.print(f"{o.result['requeued']} unfinished ingest jobs are queued again")

    run.finish(produce, render)


@app.command("eval")
def eval_(
    ctx: typer.Context,
    dataset: Annotated[
        Path,
        typer.Argument(
            help="A BEIR-format dataset folder, or a docqa set (qa.jsonl beside corpora/)."
        ),
    ],
    mode: Annotated[
        str,
        typer.Option(
            help="lexical, vector, hybrid, hybrid:rrf, hybrid:convex:W (vector weight) or "
            "hybrid:convex:W:M:B (feedback from the top M snippets with weight B; M=0: none)."
        ),
    ] = "hybrid",
    against: Annotated[
        str | None,
        typer.Option(help="A second configuration: report per-query differences and p-values."),
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Cut-off for the metrics.", min=1)] = 10,
    per_query: Annotated[
        Path | None, typer.Option(help="Write one JSON line per query to this file.")
    ] = None,
    long_doc: Annotated[
        bool,
        typer.Option(
            "--long-doc",
            help="Group passages into multi-section Markdown files and score the cited "
            "section: hit@1, hit@5, hit@k, MRR and nDCG on (file, heading).",
        ),
    ] = False,
    header: Annotated[
        str,
        typer.Option(
            help="Index with the structural retrieval header (on), without it (off), or "
            "both, reporting the difference query by query (compare).",
        ),
    ] = "on",
    data_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="beir, docqa (questions over document collections, scored on the cited "
            "file and heading or page; lexical, vector and the --mode hybrid in one run) "
            "or auto (docqa when the folder holds qa.jsonl and corpora/).",
        ),
    ] = "auto",
    json_out: JsonOpt = False,
) -> None:
    """Measure retrieval quality and latency on BEIR data or a docqa set."""
    run = _Run(ctx, "eval", json_out)

    def produce() -> Outcome:
        if _eval_format(dataset, data_format) == "docqa":
            if long_doc or header != "on":
                from docshelf.errors import InvalidInput

                raise InvalidInput("--long-doc and --header apply to BEIR data, not docqa")
            return _eval_docqa(run, dataset, mode, against, k, per_query)
        if long_doc or header != "on":
            return _eval_variants(run, dataset, mode, against, k, per_query, long_doc, header)
        from docshelf.embed import make_embedder
        from docshelf.evaluate import (
            build_index,
            compare,
            eval_home,
            eval_settings,
            evaluate,
            load_beir,
            parse_config,
        )
        from docshelf.shelf import SEARCH_MODES, Shelf

        for config in (mode, against):
            if config is not None:
                parse_config(config)
        ds = load_beir(dataset)
        main = run.store_shelf()
        embedder = make_embedder(main.settings.embedder)
        model = embedder.model_id if embedder else "none"
        home = eval_home(main.settings.home, ds, model)
        with (
            Shelf(settings=eval_settings(home, model), embedder=embedder) as shelf,
            run.progress("Indexing corpus") as progress,
        ):
            mapping = build_index(shelf, ds, progress)
            first = evaluate(shelf, ds, mapping, mode=mode, k=k)
            second = evaluate(shelf, ds, mapping, mode=against, k=k) if against else None
        if per_query is not None:
            _write_per_query(per_query, first, second)
        if second is not None:
            return Outcome(compare(first, second), [])
        others = [m for m in SEARCH_MODES if m != mode]
        return Outcome(
            first.as_json(),
            [
                Action(
                    run.cmd(f"eval {_q(str(dataset))} --mode {mode} --against {m}"),
                    f"Compare with {m}, query by query",
                )
                for m in others
            ],
        )

    def render(o: Outcome) -> None:
        r = o.result
        if r.get("format") == "docqa":
            _render_docqa(r)
            return
        if "difference" in r:
            table = Table(
                "metric", r["a"]["config"], r["b"]["config"], "delta", "p", title=r["dataset"]
            )
            for name, d in r["difference"].items():
                table.add_row(
                    name,
                    str(r["a"][name]),
                    str(r["b"][name]),
                    f"{d['delta']:+.4f}",
                    str(d["p_value"]),
                )
            console.print(table)
            return
        table = Table("metric", "value", title=f"{r['dataset']} ({r['mode']})")
        for key, value in r.items():
            if key not in ("dataset", "mode"):
                table.add_row(key, str(value))
        console.print(table)

    run.finish(produce, render)


def _eval_format(dataset: Path, data_format: str) -> str:
    from docshelf.docqa_set import is_docqa
    from docshelf.errors import InvalidInput

    if data_format not in ("auto", "beir", "docqa"):
        raise InvalidInput(f"Unknown --format {data_format!r}; use auto, beir or docqa")
    if data_format == "auto":
        return "docqa" if is_docqa(dataset) else "beir"
    return data_format


def _eval_docqa(
    run: _Run, dataset: Path, mode: str, against: str | None, k: int, per_query: Path | None
) -> Outcome:
    """``eval`` on a docqa set: one cached library per collection, every mode in one run."""
    from docshelf.embed import make_embedder
    from docshelf.evaluate_docqa import run_docqa, write_runs

    main = run.store_shelf()
    with run.progress("Indexing collections") as progress:
        report = run_docqa(
            main.settings,
            dataset,
            embedder=make_embedder(main.settings.embedder),
            mode=mode,
            against=[against] if against else [],
            k=k,
            progress=progress,
        )
    result = report.as_json()
    if per_query is not None:
        result["run_files"] = [str(p) for p in write_runs(per_query, report)]
    return Outcome(
        result,
        [
            Action(
                run.cmd(f"eval {_q(str(dataset))} --against hybrid:convex:0.8:0"),
                "Test the hybrid against another fusion, question by question",
            ),
            Action(
                run.cmd(f"eval {_q(str(dataset))} --per-query runs.jsonl"),
                "Keep each question's cited places, one run file per mode",
            ),
        ],
    )


def _render_docqa(r: dict[str, Any]) -> None:
    k = r["k"]
    wanted = ("hit@1", "hit@3", "hit@5", f"hit@{k}", f"mrr@{k}", "hit@1-file", "hit@5-file")
    metrics = list(dict.fromkeys(wanted))
    for name, m in r["runs"].items():
        title = f"{r['dataset']}: {name} ({m['mode']})"
        table = Table("group", "n", *metrics, "none", title=title)
        groups = [("all", m["all"])]
        for by in ("collection", "kind"):
            groups += [(f"{by}={g}", v) for g, v in m[by].items()]
        for label, g in groups:
            cells = [f"{g[x]:.3f}" if x in g else "" for x in metrics]
            table.add_row(label, str(g["n"]), *cells, str(g["no_results"]))
        console.print(table)
        if m.get("notice"):
            console.print(m["notice"], style="yellow")
    if r["comparisons"]:
        title = "delta (p, paired randomisation test)"
        table = Table("comparison", *r["comparisons"][0]["difference"], title=title)
        for c in r["comparisons"]:
            cells = [f"{d['delta']:+.3f} ({d['p_value']:.2f})" for d in c["difference"].values()]
            table.add_row(f"{c['b']} vs {c['a']}", *cells)
        console.print(table)
    for name, lib in r["collections"].items():
        console.print(
            f"{name}: {lib['documents']} documents, {lib['snippets']} snippets, "
            f"{lib['failed']} failed"
        )


def _eval_variants(
    run: _Run,
    dataset: Path,
    mode: str,
    against: str | None,
    k: int,
    per_query: Path | None,
    long_doc: bool,
    header: str,
) -> Outcome:
    """``eval --long-doc`` and ``eval --header off|compare``: one cached index per layout
    (passages or long files) and header setting."""
    from docshelf.errors import InvalidInput
    from docshelf.evaluate_long import run_variants

    if header not in ("on", "off", "compare"):
        raise InvalidInput(f"Unknown --header {header!r}; use on, off or compare")
    if header == "compare" and against is not None:
        raise InvalidInput("--header compare already compares two runs; drop --against")
    main = run.store_shelf()
    with run.progress("Indexing corpus") as progress:
        first, second, result = run_variants(
            main.settings,
            dataset,
            mode=mode,
            against=against,
            k=k,
            long_doc=long_doc,
            header=header,
            progress=progress,
        )
    if per_query is not None:
        _write_per_query(per_query, first, second)
    return Outcome(result, [])


def _write_per_query(path: Path, first: Any, second: Any) -> None:
    from docshelf.errors import InvalidInput

    try:
        with path.open("w", encoding="utf-8") as fh:
            for n, q in enumerate(first.per_query):
                row = {"config": first.config, **q.as_json(first.k)}
                if second is not None:
                    row = {
                        "a": row,
                        "b": {"config": second.config, **second.per_query[n].as_json(second.k)},
                    }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise InvalidInput(f"Cannot write {path}: {exc.strerror or exc}") from None


users_app = typer.Typer(
    help="Manage the users of the HTTP API and their tokens.", no_args_is_help=True
)
app.add_typer(users_app, name="users")


def _user_json(u: Any) -> dict[str, Any]:
    return {
        "user_id": u.id,
        "name": u.name,
        "admin": u.is_admin,
        "revoked": u.revoked_at is not None,
    }


@users_app.command("create")
def users_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The new user's name.")],
    admin: Annotated[bool, typer.Option("--admin", help="Make the user an administrator.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Create a user and print their bearer token (shown once; only its hash is kept)."""
    run = _Run(ctx, "users create", json_out)

    def produce() -> Outcome:
        user, token = run.store_shelf().create_user(name, admin=admin)
        return Outcome(
            {"user_id": user.id, "token": token},
            [Action(run.cmd("users list"), "See all users")],
        )

    def render(o: Outcome) -> None:
        console.print(f"Created user {name} ({o.result['user_id']}). Token (shown once):")
        console.print(Text(o.result["token"], style="bold"))

    run.finish(produce, render)


@users_app.command("list")
def users_list(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """List users (tokens are never shown again)."""
    run = _Run(ctx, "users list", json_out)

    def produce() -> Outcome:
        users = run.store_shelf().users()
        return Outcome(
            {"users": [_user_json(u) for u in users]},
            [Action(run.cmd("users create NAME"), "Create a user and a token")],
        )

    def render(o: Outcome) -> None:
        table = Table("user", "name", "admin", "revoked")
        for u in o.result["users"]:
            table.add_row(u["user_id"], u["name"], str(u["admin"]), str(u["revoked"]))
        console.print(table)

    run.finish(produce, render)


@users_app.command("revoke")
def users_revoke(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="A user name or id.")],
    json_out: JsonOpt = False,
) -> None:
    """Revoke a user's token: their requests are refused from now on."""
    run = _Run(ctx, "users revoke", json_out)

    def produce() -> Outcome:
        revoked = run.store_shelf().revoke_user(user)
        return Outcome(_user_json(revoked), [Action(run.cmd("users list"), "See all users")])

    run.finish(produce, lambda o: console.print(f"Revoked {o.result['name']}."))


@app.command()
def retry(
    ctx: typer.Context,
    document_id: Annotated[str, typer.Argument(help="A document whose ingest job failed.")],
    json_out: JsonOpt = False,
) -> None:
    """Re-queue a failed ingest job at the stage where it failed."""
    run = _Run(ctx, "retry", json_out)

    def produce() -> Outcome:
        job = run.store_shelf().retry(document_id)
        return Outcome(
            {"document_id": job.document_id, "stage": job.stage.value, "status": job.status},
            [
                Action(run.cmd(f"show {document_id}"), "Follow the document's status"),
                Action(run.cmd("worker"), "Run a worker if no server is running one"),
            ],
        )

    run.finish(produce, lambda o: console.print(f"Re-queued {document_id} at {o.result['stage']}."))


@app.command()
def migrate(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Bring the store's schema up to date, then exit (what a deployment runs first).

    Every process does this when it opens the store, one at a time; running it
    alone first keeps the API and workers from waiting on each other. Loads no model.
    """
    run = _Run(ctx, "migrate", json_out)

    def produce() -> Outcome:
        from docshelf.config import Settings
        from docshelf.store import open_store

        store = open_store(Settings.from_env(run.state.home).database_url)
        try:
            result = {"database": store.url, "schema_version": store.schema_version()}
        finally:
            store.close()
        return Outcome(result, [Action(run.cmd("status"), "See what the library holds")])

    run.finish(
        produce,
        lambda o: console.print(
            f"{o.result['database']} is at schema version {o.result['schema_version']}."
        ),
    )


@app.command()
def worker(
    ctx: typer.Context,
    count: Annotated[int, typer.Option("--count", "-c", help="Worker threads.", min=1)] = 1,
    lease: Annotated[float, typer.Option(help="Job lease in seconds.", min=1)] = 30.0,
    probe_port: Annotated[
        int | None,
        typer.Option(
            help="Serve /metrics and /healthz (live while every worker shows a sign of "
            "life within 5 minutes, or two leases if longer) on this port.",
            min=0,
            max=65535,
        ),
    ] = None,
    probe_host: Annotated[
        str, typer.Option(help="Interface for --probe-port (0.0.0.0 in a container).")
    ] = "127.0.0.1",
) -> None:
    """Run ingest workers against the store until interrupted (Ctrl-C or SIGTERM)."""
    from docshelf.errors import DocshelfError
    from docshelf.ingest.worker import Worker, WorkerSettings
    from docshelf.shelf import Shelf
    from docshelf.shutdown import run_workers
    from docshelf.telemetry import configure_tracing

    state = _state(ctx)
    try:
        shelf = Shelf(state.home)
    except DocshelfError as exc:
        err_console.print(Text(f"Error ({exc.code}): {printable(exc.message)}", style="red"))
        raise typer.Exit(1) from None
    configure_tracing()
    workers = [Worker(shelf, WorkerSettings(lease_seconds=lease)) for _ in range(count)]
    probes: list[WorkerProbe] = []

    def open_probe(threads: Sequence[threading.Thread]) -> None:
        probe = _worker_probe(workers, threads, probe_host, probe_port, max(300, 2 * lease))
        if probe is False:
            raise typer.Exit(1)
        if probe:
            probes.append(probe)

    try:
        code = run_workers(  # SIGTERM drains (shutdown.py)
            workers,
            shelf.settings.drain_seconds,
            lambda: err_console.print(f"{count} worker(s) on {shelf.store.url}; Ctrl-C to stop"),
            prepare=open_probe,
        )
    finally:
        for probe in probes:
            probe.close()
        shelf.close()
    if code:
        raise typer.Exit(code)


def _worker_probe(
    workers: list[Worker],
    threads: Sequence[threading.Thread],
    host: str,
    port: int | None,
    stale: float,
) -> WorkerProbe | Literal[False] | None:
    """``docshelf worker``'s /metrics and /healthz when asked for; False when the port
    cannot be had (the error is printed)."""
    if port is None:
        return None
    from docshelf.ingest.worker_probe import WorkerProbe

    try:
        probe = WorkerProbe(workers, threads, host=host, port=port, stale_after=stale)
    except OSError as exc:
        err_console.print(Text(f"Cannot serve the probe on {host}:{port}: {exc}", style="red"))
        return False
    err_console.print(f"metrics and health on http://{host}:{probe.port}/")
    return probe


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8750,
    workers: Annotated[
        int | None,
        typer.Option(help="In-process ingest workers (default DOCSHELF_WORKERS or 1; 0 = none)."),
    ] = None,
    watch_sources: Annotated[
        bool, typer.Option("--watch", help="Also follow the registered sources live.")
    ] = False,
) -> None:
    """Serve the HTTP API (and the web page) with background ingest workers."""
    from docshelf.errors import DocshelfError
    from docshelf.shelf import Shelf
    from docshelf.telemetry import configure_tracing

    state = _state(ctx)
    try:
        import uvicorn  # noqa: F401  (the server extra)

        from docshelf.api import create_app
        from docshelf.shutdown import serve as serve_until_stopped
    except ImportError as exc:
        err_console.print(
            Text(f"The server needs the `server` extra: pip install 'docshelf[server]' ({exc})")
        )
        raise typer.Exit(1) from None
    try:
        shelf = Shelf(state.home)
    except DocshelfError as exc:
        err_console.print(Text(f"Error ({exc.code}): {printable(exc.message)}", style="red"))
        raise typer.Exit(1) from None
    configure_tracing()
    token = shelf.local_admin_token()
    if token:
        err_console.print(Text("Admin token for this library (shown once, keep it):", style="bold"))
        err_console.print(Text(token, style="bold green"))
    n = shelf.settings.workers if workers is None else workers
    if watch_sources:
        from docshelf.ingest.watch import watch_in_background

        watch_in_background(shelf, lambda report: None)
    err_console.print(f"docshelf on http://{host}:{port}/  (API docs at /docs, {n} worker(s))")
    drain = shelf.settings.drain_seconds
    code = serve_until_stopped(create_app(shelf, workers=n), host, port, drain)  # shutdown.py
    shelf.close()
    if code:
        raise typer.Exit(code)


@app.command()
def mcp(ctx: typer.Context) -> None:
    """Serve the library to AI agents over MCP on stdin/stdout.

    Tools: search_documents, get_context, list_sources, get_document. Acts as the
    local admin, like the other commands; `serve` also offers MCP over HTTP at /mcp,
    scoped to each token's user. Messages go to stderr: stdout carries the protocol.
    """
    from docshelf.errors import DocshelfError

    try:
        from docshelf.mcp_server import run_stdio
    except ImportError as exc:
        err_console.print(
            Text(f"The MCP server needs the `mcp` extra: pip install 'docshelf[mcp]' ({exc})")
        )
        raise typer.Exit(1) from None
    run = _Run(ctx, "mcp", json_flag=False)
    try:
        shelf = run.shelf()
    except DocshelfError as exc:
        err_console.print(Text(f"Error ({exc.code}): {printable(exc.message)}", style="red"))
        raise typer.Exit(1) from None
    try:
        run_stdio(shelf)
    finally:
        shelf.close()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
