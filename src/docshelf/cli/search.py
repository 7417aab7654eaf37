"""Finding and reading: search, ask, context, distillates."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from docshelf.cli import options, quick
from docshelf.cli.command import Action, Outcome, Run, command, console
from docshelf.cli.core import Wrapping, context_line, under_title

# search: cli/quick.py's function and options (cli/options.py), which the quick path
# runs without typer
NOTEBOOK = typer.Option("--notebook", help="Within this notebook (its name or id).")

search = command("search", render=quick.render_hits, params=options.SEARCH)(quick.search_command)


def _render_answer(o: Outcome, *, streamed: bool = False) -> None:
    r = o.result
    if r.get("notice"):
        console.print(Text(r["notice"], style="yellow"))
    if not streamed:  # a streamed answer is on the screen already
        console.print(Text(r["answer"], style="" if r.get("answered", True) else "yellow"))
    mode = f"{r['mode']}, conversation {r['conversation']}" if r.get("conversation") else r["mode"]
    console.print(Text(f"\n({mode})", style="dim"))
    for c in r["citations"]:
        line = Text(f"[{c['n']}] {c['label']}", style="cyan")
        cited = c["citation"]
        headings = under_title(cited["heading_path"], cited["title"])
        if headings:
            line.append(f"  § {' > '.join(headings)}", style="cyan")
        line.append(f"  {c['chunk_id']}", style="dim")
        console.print(line)


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
    notebook: Annotated[str | None, NOTEBOOK] = None,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            help="A turn of this conversation ('new' starts one; its id is printed): a "
            "follow-up is searched with the questions before it.",
        ),
    ] = None,
) -> Outcome:
    """Answer from your documents with [n] citations (LLM if configured, else extractive)."""
    from docshelf import views

    streamed = stream and not run.as_json
    if streamed:
        answer, shown, wrote = None, Wrapping(console), False
        shelf = run.shelf(embed_purpose="query")
        pieces = shelf.ask_stream(
            question, limit=limit, notebook=notebook, conversation=conversation
        )
        for piece in pieces:
            if piece.kind == "text":
                shown.write(piece.text)
                wrote = True
            answer = piece.answer or answer
        assert answer is not None
        if not wrote:  # nothing matched: the answer says so, in one piece
            shown.write(answer.answer)
        shown.close()
    else:
        answer = run.shelf(embed_purpose="query").ask(
            question, limit=limit, notebook=notebook, conversation=conversation
        )
    result = views.answer(answer)
    actions = [
        Action(
            run.cmd(context_line(c["chunk_id"], "parent-section", c["citation"])),
            f"Read source [{c['n']}]",
        )
        for c in result["citations"][:2]
    ]
    if answer.conversation:
        follow = f"ask 'FOLLOW-UP' --conversation {answer.conversation}"
        actions.insert(0, Action(run.cmd(follow), "Ask a follow-up question in this conversation"))
    return Outcome(result, actions, _render_streamed if streamed else None)


def _render_context(o: Outcome) -> None:
    """The context as a person reads it: the place as a search hit shows it (its headings
    under the title), the hit in plain type and the rest dimmed."""
    r = o.result
    cited = r["citation"]
    console.print(Text(cited["label"], style="bold cyan"))
    headings = under_title(cited["heading_path"], cited["title"])
    if headings:
        console.print(Text(f"§ {' > '.join(headings)}", style="cyan"))
    shown = r["display"]
    text = Text("…\n\n" if r["cut"]["before"] else "", style="dim")
    text.append(shown["before"] + "\n\n" if shown["before"] else "", style="dim")
    text.append(shown["hit"])
    text.append("\n\n" + shown["after"] if shown["after"] else "", style="dim")
    text.append("\n\n…" if r["cut"]["after"] else "", style="dim")
    console.print(text)


@command(render=_render_context)
def context(
    run: Run,
    chunk_id: Annotated[str, typer.Argument(help="A chunk id from a search hit.")],
    mode: Annotated[
        str, typer.Option(help="snippet-window, parent-section or section-neighborhood.")
    ] = "snippet-window",
    window: Annotated[int, typer.Option(help="Neighbours on each side (snippet-window).")] = 1,
    anchor: Annotated[
        int | None,
        typer.Option(help="The hit's citation anchor: cite it under the same heading."),
    ] = None,
    notebook: Annotated[str | None, NOTEBOOK] = None,
) -> Outcome:
    """Expand a hit: its neighbouring snippets, its section, or its section's neighbours."""
    from docshelf import views

    shelf = run.store_shelf()
    found = views.context(shelf.context(chunk_id, mode, window, anchor=anchor, notebook=notebook))
    others = [m for m in ("snippet-window", "parent-section", "section-neighborhood") if m != mode]
    return Outcome(
        found,
        [
            Action(run.cmd(context_line(chunk_id, m, found["citation"])), f"Expand as {m}")
            for m in others
        ],
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
