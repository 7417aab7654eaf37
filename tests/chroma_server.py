"""A real Chroma server for tests: ``chroma run`` (the chromadb package's own command,
the ``chroma`` extra) on a free loopback port, its data in a temporary folder, ready
when its heartbeat answers, stopped by killing its process group (tests/servers.py).

Without chromadb the tests that need it are skipped with the reason, except under
``CI=true``, where they fail (tests/optional.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.optional import missing
from tests.servers import free_ports, http_server


def chroma_program() -> str:
    """The ``chroma`` command installed beside the venv's python, else one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if os.access(beside, os.X_OK) else shutil.which("chroma")
    if found is None:
        missing("Chroma's chroma command is missing (pip install chromadb: the chroma extra)")
    return found


@contextmanager
def chroma_server() -> Iterator[str]:
    """A running Chroma server until the block ends, as ``HOST:PORT``."""
    program = chroma_program()
    root = Path(tempfile.mkdtemp(prefix="docshelf-chroma-"))
    (port,) = free_ports(1)
    command = [program, "run", "--path", str(root / "data"), "--host", "127.0.0.1"]
    with http_server(
        "chroma",
        [*command, "--port", str(port)],
        root,
        f"http://127.0.0.1:{port}/api/v2/heartbeat",
        lambda body: True,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    ):
        yield f"127.0.0.1:{port}"
