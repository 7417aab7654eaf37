"""``docshelf add --background``'s second half: a process of its own that embeds the
documents the add left searchable by their words only, then enriches them when
enrichment is on, and exits (``Shelf.embed_pending``; ingest/vectors.py).

It runs in its own session, so it outlives the command that started it and a terminal
closed behind it; its output goes to the home's ``background.log``. Several may run at
once (a second add, a ``serve``): each takes documents under a lease, never one another
holds, and one killed leaves its documents to the next at once.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docshelf.config import Settings

LOG = "background.log"


def start(settings: Settings) -> int:
    """Start the process for this library; its pid."""
    from docshelf.cli.resident import detached

    return detached("docshelf.cli.background", settings.home, LOG)


def run(home: Path) -> int:
    """Embed (and enrich) what waits in the library at ``home``, as configured."""
    from docshelf.config import Settings
    from docshelf.errors import DocshelfError
    from docshelf.shelf import Shelf

    try:
        with Shelf(settings=Settings.from_env(home)) as shelf:
            done = shelf.embed_pending()
    except DocshelfError as exc:
        print(f"background embedding for {home}: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    print(f"background embedding for {home}: {done} documents embedded", file=sys.stderr)
    return 0


if __name__ == "__main__":  # python -m docshelf.cli.background HOME
    sys.exit(run(Path(sys.argv[1])))
