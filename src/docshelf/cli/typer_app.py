"""The typer application behind ``docshelf``: the root options and every command, in
the order ``docshelf --help`` lists them (``docshelf.cli`` loads it on demand)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from docshelf.cli import eval as eval_commands
from docshelf.cli import library, notebooks, options, search, serve, upkeep, users
from docshelf.cli.command import CliState, Command, JsonOpt

__all__ = ["app"]

app = typer.Typer(
    name="docshelf",
    help="Index the documents you already keep, search them, and cite every hit.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@app.callback()
def _main(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(*options.HOME.flags, help=options.HOME.help, show_default=False),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    ctx.obj = CliState(home=home, json=json_out)


# In this order in `docshelf --help` and docs/cli.md.
COMMANDS: tuple[Command, ...] = (
    library.add,
    library.sync,
    library.watch,
    library.list_,
    library.show,
    library.status,
    search.search,
    search.ask,
    search.context,
    library.remove,
    upkeep.reindex,
    upkeep.enrich,
    upkeep.inbox,
    search.distillates,
    upkeep.export_,
    upkeep.import_,
    eval_commands.eval_,
    upkeep.retry,
    upkeep.migrate,
    serve.worker,
    serve.serve,
    serve.mcp,
    serve.llm_serve,
)
for _command in COMMANDS:
    app.command(_command.name)(_command.callback)
app.add_typer(users.app, name="users")
app.add_typer(notebooks.app, name="notebook")
