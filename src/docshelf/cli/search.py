"""Finding and reading: search, ask, context, distillates."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.padding import Padding
from rich.text import Text

from docshelf.cli.command import Action, Outcome, Run, command, console
from docshelf.terminal import printable


def _render_hits(o: Outcome) -> None:
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


@command(render=_render_hits)
def search(
    run: Run,
    query: Annotated[str, typer.Argument(help="What to look for, in your own words.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Number of hits.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, lexical or vector.")] = "hybrid",
    filter_: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            help="KEY=VALUE, repeatable: source=ID, path=PREFIX, type=FILETYPE (or "
            "filetype=; markdown, pdf, …), doctype=DOCTYPE (paper, note, …), tag=TAG, "
            "concept=C, date=2026 (or 2026-03, 2025..2026).",
        ),
    ] = None,
    group: Annotated[
        str,
        typer.Option(
            help="snippet: the best snippet per cited place (file and heading or page); "
            "section: one per section; document: one per document; all: every snippet."
        ),
    ] = "snippet",
    expand: Annotated[
        str | None, typer.Option(help="parent-section: include each hit's section text.")
    ] = None,
) -> Outcome:
    """Hybrid search over snippets; every hit is cited.

    The query may hold "exact phrases", -exclusions and filters: tag:X path:P type:T (or
    filetype:T) doctype:D source:S concept:C date:2026.
    """
    from docshelf.cli.quick import SearchRequest, search_json

    request = SearchRequest(query, limit, mode, filter_ or [], group, expand)
    result, actions = search_json(run, request)  # cli/quick.py: the helper, or in-process
    return Outcome(result, [Action(a.command, a.description) for a in actions])


def _render_answer(o: Outcome, *, streamed: bool = False) -> None:
    r = o.result
    if r.get("notice"):
        console.print(Text(r["notice"], style="yellow"))
    if not streamed:  # a streamed answer is on the screen already
        console.print(Text(r["answer"]))
    console.print(Text(f"\n({r['mode']})", style="dim"))
    for c in r["citations"]:
        console.print(Text(f"[{c['n']}] {c['label']}  {c['chunk_id']}", style="cyan"))


def _render_streamed(o: Outcome) -> None:
    _render_answer(o, streamed=True)


@command(render=_render_answer)
def ask(
    run: Run,
    question: Annotated[str, typer.Argument(help="A question about your documents.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Hits to answer from.")] = 5,
    stream: Annotated[
        bool, typer.Option("--stream", help="Print verified sentences as they are written.")
    ] = False,
) -> Outcome:
    """Answer from your documents with [n] citations (LLM if configured, else extractive)."""
    from docshelf import views

    streamed = stream and not run.as_json
    if streamed:
        answer = None
        for piece in run.shelf(embed_purpose="query").ask_stream(question, limit=limit):
            if piece.kind == "text":
                console.print(Text(printable(piece.text)), end="")
                console.file.flush()
            answer = piece.answer or answer
        console.print()
        assert answer is not None
    else:
        answer = run.shelf(embed_purpose="query").ask(question, limit=limit)
    actions = [
        Action(run.cmd(f"context {c.chunk_id} --mode parent-section"), f"Read source [{c.n}]")
        for c in answer.citations[:2]
    ]
    return Outcome(views.answer(answer), actions, _render_streamed if streamed else None)


def _render_context(o: Outcome) -> None:
    console.print(Text(o.result["citation"]["label"], style="bold cyan"))
    console.print(Text(o.result["text"]))


@command(render=_render_context)
def context(
    run: Run,
    chunk_id: Annotated[str, typer.Argument(help="A chunk id from a search hit.")],
    mode: Annotated[
        str, typer.Option(help="snippet-window, parent-section or section-neighborhood.")
    ] = "snippet-window",
    window: Annotated[int, typer.Option(help="Neighbours on each side (snippet-window).")] = 1,
) -> Outcome:
    """Expand a hit: its neighbouring snippets, its section, or its section's neighbours."""
    from docshelf import views

    result = run.store_shelf().context(chunk_id, mode, window)
    others = [m for m in ("snippet-window", "parent-section", "section-neighborhood") if m != mode]
    return Outcome(
        views.context(result),
        [Action(run.cmd(f"context {chunk_id} --mode {m}"), f"Expand as {m}") for m in others],
    )


def _render_distillates(o: Outcome) -> None:
    if not o.result["distillates"]:
        console.print("No key claims matched.")
    for d in o.result["distillates"]:
        console.print(Text(f"• {d['text']}"))
        console.print(Text(f"  {d['title']} — {', '.join(d['chunk_ids'])}", style="dim"))


@command(render=_render_distillates)
def distillates(
    run: Run,
    query: Annotated[
        str | None, typer.Argument(help="Words to look for in key claims.", show_default=False)
    ] = None,
    document: Annotated[
        str | None, typer.Option("--doc", help="The key claims of this document id.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many.")] = 20,
) -> Outcome:
    """Search the documents' key claims (distillates), each citing its chunks."""
    from docshelf import views

    found = run.store_shelf().distillates(query, document_id=document, limit=limit)
    actions = [
        Action(run.cmd(f"context {d.chunk_ids[0]} --mode parent-section"), "Read the evidence")
        for d, _ in found[:1]
        if d.chunk_ids
    ]
    return Outcome({"distillates": [views.distillate(d, doc) for d, doc in found]}, actions)
