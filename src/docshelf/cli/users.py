"""``docshelf users``: the users of the HTTP API and their tokens."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from docshelf.cli.command import Action, Outcome, Run, command, console
from docshelf.terminal import printable

app = typer.Typer(help="Manage the users of the HTTP API and their tokens.", no_args_is_help=True)


@command("create", label="users create")
def create(
    run: Run,
    name: Annotated[str, typer.Argument(help="The new user's name.")],
    admin: Annotated[bool, typer.Option("--admin", help="Make the user an administrator.")] = False,
) -> Outcome:
    """Create a user and print their bearer token (shown once; only its hash is kept)."""
    from docshelf import views

    user, token = run.store_shelf().create_user(name, admin=admin)
    shown = printable(name)

    def render(o: Outcome) -> None:
        console.print(f"Created user {shown} ({o.result['user_id']}). Token (shown once):")
        console.print(Text(o.result["token"], style="bold"))

    return Outcome(
        views.created_user(user, token),
        [Action(run.cmd("users list"), "See all users")],
        render,
    )


def _render_users(o: Outcome) -> None:
    from rich.table import Table

    table = Table("user", "name", "admin", "revoked")
    for u in o.result["users"]:
        table.add_row(u["user_id"], u["name"], str(u["admin"]), str(u["revoked"]))
    console.print(table)


@command("list", label="users list", render=_render_users)
def list_(run: Run) -> Outcome:
    """List users (tokens are never shown again)."""
    from docshelf import views

    users = run.store_shelf().users()
    return Outcome(
        {"users": [views.user(u) for u in users]},
        [Action(run.cmd("users create NAME"), "Create a user and a token")],
    )


def _render_revoked(o: Outcome) -> None:
    console.print(f"Revoked {o.result['name']}.")


@command("revoke", label="users revoke", render=_render_revoked)
def revoke(
    run: Run,
    user: Annotated[str, typer.Argument(help="A user name or id.")],
) -> Outcome:
    """Revoke a user's token: their requests are refused from now on."""
    from docshelf import views

    revoked = run.store_shelf().revoke_user(user)
    return Outcome(views.user(revoked), [Action(run.cmd("users list"), "See all users")])


for _command in (create, list_, revoke):
    app.command(_command.name)(_command.callback)
