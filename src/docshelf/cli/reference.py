"""Generate docs/cli.md from the commands' own help (``make docs-cli``).

A test regenerates it and fails when docs/cli.md differs, so the reference
cannot go stale. Help is rendered in click's plain format (typer vendors click
as ``typer._click``), not the terminal's rich panels, so the text is stable.
"""

from __future__ import annotations

from typing import Any

import typer.main
from typer._click import core

from docshelf.cli import app


def _help(command: Any, ctx: Any) -> str:
    formatter = ctx.make_formatter()
    core.Command.format_help(command, ctx, formatter)
    return str(formatter.getvalue()).rstrip()


def render() -> str:
    group: Any = typer.main.get_command(app)
    root = core.Context(group, info_name="docshelf", terminal_width=100, max_content_width=100)
    parts = [
        "# docshelf command reference",
        "",
        "Generated from `--help` by `make docs-cli`; do not edit by hand.",
        "",
        "```",
        _help(group, root),
        "```",
    ]
    for name in group.list_commands(root):
        command = group.get_command(root, name)
        ctx = core.Context(command, info_name=name, parent=root)
        parts += ["", f"## docshelf {name}", "", "```", _help(command, ctx), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
