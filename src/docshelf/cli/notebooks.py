"""``docshelf notebook``: named sets of sources and documents to search and ask within."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from docshelf.cli.command import Action, Outcome, Run, command, console
from docshelf.wording import counted

if TYPE_CHECKING:
    from docshelf.model import Notebook

app = typer.Typer(
    help="Notebooks: named sets of sources and documents to search and ask within.",
    no_args_is_help=True,
)

NAME = typer.Argument(help="The notebook's name (or id).")
SOURCES = typer.Option("--source", help="A source: its folder's path or id; repeatable.")
DOCUMENTS = typer.Option("--doc", help="A document id; repeatable.")
FILTERS = typer.Option(
    "--filter", help="KEY=VALUE narrowing it (tag=, type=, path=, date= …); repeatable."
)


def _render_notebook(o: Outcome) -> None:
    n = o.result
    line = Text(n["name"], style="bold")
    line.append(f"  {n['notebook_id']}", style="dim")
    if n["read_only"]:
        line.append("  (shared with you, read only)", style="dim")
    console.print(line)
    parts = [counted(len(n["sources"]), "source"), counted(len(n["documents"]), "document")]
    if n["filters"]:
        shown = [f"{k}={v}" for k, vs in n["filters"].items() for v in [vs] if isinstance(vs, str)]
        shown += [f"{k}={v}" for k, vs in n["filters"].items() if isinstance(vs, list) for v in vs]
        parts.append("filters " + ", ".join(shown))
    if n["shared_with"]:
        parts.append("shared with " + counted(len(n["shared_with"]), "user"))
    console.print(Text("  " + "; ".join(parts)))


def _render_list(o: Outcome) -> None:
    if not o.result["notebooks"]:
        console.print("No notebooks yet.")
    for n in o.result["notebooks"]:
        _render_notebook(Outcome(n, []))


def _done(run: Run, notebook: Notebook) -> Outcome:
    from docshelf import views

    shelf = run.store_shelf()
    result = views.notebook(notebook, shelf.notebooks.reader(None))
    name = notebook.name if " " not in notebook.name else f'"{notebook.name}"'
    return Outcome(
        result,
        [
            Action(run.cmd(f"search QUERY --notebook {name}"), "Search within it"),
            Action(run.cmd(f"ask QUESTION --notebook {name}"), "Ask within it"),
        ],
    )


@command("create", label="notebook create", render=_render_notebook)
def create(
    run: Run,
    name: Annotated[str, typer.Argument(help="The new notebook's name.")],
    source: Annotated[list[str] | None, SOURCES] = None,
    doc: Annotated[list[str] | None, DOCUMENTS] = None,
    filter_: Annotated[list[str] | None, FILTERS] = None,
) -> Outcome:
    """Create a notebook of sources, documents and filters."""
    notebooks = run.store_shelf().notebooks
    made = notebooks.create(name, sources=source or [], documents=doc or [], filters=filter_ or [])
    return _done(run, made)


@command("add", label="notebook add", render=_render_notebook)
def add(
    run: Run,
    name: Annotated[str, NAME],
    source: Annotated[list[str] | None, SOURCES] = None,
    doc: Annotated[list[str] | None, DOCUMENTS] = None,
    filter_: Annotated[list[str] | None, FILTERS] = None,
) -> Outcome:
    """Add sources, documents or filters to a notebook of yours."""
    notebooks = run.store_shelf().notebooks
    return _done(
        run,
        notebooks.change(
            name, add_sources=source or [], add_documents=doc or [], add_filters=filter_ or []
        ),
    )


@command("drop", label="notebook drop", render=_render_notebook)
def drop(
    run: Run,
    name: Annotated[str, NAME],
    source: Annotated[list[str] | None, SOURCES] = None,
    doc: Annotated[list[str] | None, DOCUMENTS] = None,
    filter_: Annotated[list[str] | None, FILTERS] = None,
) -> Outcome:
    """Take sources, documents or filters out of a notebook of yours."""
    notebooks = run.store_shelf().notebooks
    return _done(
        run,
        notebooks.change(
            name, drop_sources=source or [], drop_documents=doc or [], drop_filters=filter_ or []
        ),
    )


@command("list", label="notebook list", render=_render_list)
def list_(run: Run) -> Outcome:
    """List your notebooks, and those shared with you."""
    from docshelf import views

    notebooks = run.store_shelf().notebooks
    reader = notebooks.reader(None)
    found: list[dict[str, Any]] = [views.notebook(n, reader) for n in notebooks.list()]
    return Outcome(
        {"notebooks": found},
        [Action(run.cmd("notebook create NAME --source FOLDER"), "Create a notebook")],
    )


@command("show", label="notebook show", render=_render_notebook)
def show(run: Run, name: Annotated[str, NAME]) -> Outcome:
    """A notebook's sources, documents and filters."""
    return _done(run, run.store_shelf().notebooks.find(name))


@command("share", label="notebook share", render=_render_notebook)
def share(
    run: Run,
    name: Annotated[str, NAME],
    user: Annotated[str, typer.Argument(help="The user (name or id) who may read it.")],
    stop: Annotated[bool, typer.Option("--stop", help="Stop sharing it with them.")] = False,
) -> Outcome:
    """Share a notebook read-only with another user of the server (or stop)."""
    return _done(run, run.store_shelf().notebooks.share(name, user, shared=not stop))


def _render_deleted(o: Outcome) -> None:
    console.print(f"Deleted notebook {o.result['name']} (its documents stay in the library).")


@command("delete", label="notebook delete", render=_render_deleted)
def delete(run: Run, name: Annotated[str, NAME]) -> Outcome:
    """Delete a notebook (never its documents)."""
    from docshelf import views

    notebooks = run.store_shelf().notebooks
    gone = notebooks.delete(name)
    return Outcome(
        views.notebook(gone, notebooks.reader(None)),
        [Action(run.cmd("notebook list"), "See your notebooks")],
    )


for _command in (create, add, drop, list_, show, share, delete):
    app.command(_command.name)(_command.callback)
