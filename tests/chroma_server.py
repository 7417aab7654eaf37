"""A real Chroma server for tests: ``chroma run`` (the chromadb package's own command,
the ``chroma`` extra) on a free loopback port, its data in a temporary folder, ready
when its heartbeat answers, stopped by killing its process group.

Without chromadb the tests that need it are skipped with the reason, except under
``CI=true``, where they fail (tests/optional.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.optional import missing
from tests.servers import die_with_parent, free_ports, log_tail, stop

STARTUP_SECONDS = 60  # a loaded machine; it is ready in about 1 s


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
    log = root / "chroma.log"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    command = [program, "run", "--path", str(root / "data"), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            preexec_fn=die_with_parent,
        )
    try:
        _wait_ready(f"http://127.0.0.1:{port}/api/v2/heartbeat", proc, log)
        yield f"127.0.0.1:{port}"
    finally:
        stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"chroma exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.1)
    stop(proc)
    raise AssertionError(f"chroma was not ready in {STARTUP_SECONDS} s ({last}):\n{log_tail(log)}")
