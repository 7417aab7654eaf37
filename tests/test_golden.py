"""Golden output: what the CLI prints on a fixed library, byte for byte.

The library in ``tests/golden/library`` is indexed with the deterministic hash embedder;
every command's JSON and human output is compared with ``tests/golden/*.txt``. A change
in ranking, citations, JSON shape or wording fails here, so a refactor that claims to
keep behaviour can prove it. When a change is meant, regenerate with
``DOCSHELF_UPDATE_GOLDEN=1 pytest tests/test_golden.py`` and review the diff.

Only what differs from run to run is masked: the temporary folder, clock times,
durations and generated ids (numbered in order of first appearance, so which hit
points at which document still counts).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.testing

from docshelf.cli import app
from docshelf.runtime import model as runtime_model  # where the embedder is made
from tests.fakes import HashEmbedder
from tests.screen import plain

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("DOCSHELF_UPDATE_GOLDEN") == "1"

# (name, arguments): run in this order on one library, each as --json and as text.
COMMANDS: list[tuple[str, list[str]]] = [
    ("status", ["status"]),
    ("list", ["list"]),
    ("search-hybrid", ["search", "leader election heartbeat"]),
    ("search-lexical", ["search", "explicit is better than implicit", "--mode", "lexical"]),
    ("search-vector", ["search", "restore a snapshot", "--mode", "vector"]),
    ("search-title", ["search", "team meeting notes"]),
    ("search-filter", ["search", "starter flour", "--filter", "tag:baking"]),
    ("search-syntax", ["search", 'type:md "replicated log"']),
    ("search-limit", ["search", "search", "--limit", "3"]),
    ("search-nothing", ["search", "zebra quantum xylophone"]),
    ("ask", ["ask", "How does a follower become leader in Raft?"]),
    ("context", ["context", "committed entries state machine"]),
    ("distillates", ["distillates"]),
]


def _normalise(text: str, root: Path) -> str:
    text = text.replace(str(root), "<TMP>")
    text = re.sub(r'("(?:source_)?host": ?)"[^"]*"', r'\1"<HOST>"', text)
    text = re.sub(r'("\w+_at": ?)[0-9.]+', r"\1<EPOCH>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?", "<TIME>", text)
    text = re.sub(r'("\w*(?:_ms|_seconds|elapsed)"\s*:\s*)[0-9.]+', r"\1<N>", text)
    text = re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b(?= |\)|$)", "<DURATION>", text, flags=re.M)
    ids: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return ids.setdefault(match.group(0), f"<ID{len(ids) + 1}>")

    # a hex id: one with a letter, or any after a prefix's underscore (`src_449495875477`:
    # an id of digits only comes about once in 300 temporary folders)
    hex_id = r"(?<![0-9a-z.])(?:(?<=_)|(?=[0-9]*[a-f]))[0-9a-f]{12,64}(?![0-9a-z])"
    return re.sub(hex_id, number, text)


@pytest.fixture
def library(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # A folder name of fixed length, so tables that wrap long paths wrap the same way.
    base = Path(tempfile.mkdtemp(prefix="docshelf-golden-"))
    root = base / "library"
    shutil.copytree(GOLDEN / "library", root)
    monkeypatch.setenv("DOCSHELF_HOME", str(base / "home"))
    # Fixed modification times: nothing in the output may depend on when the test ran.
    for path in sorted(root.rglob("*")):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    embedder = HashEmbedder()

    def make(name: str, **_: Any) -> HashEmbedder | None:
        return embedder if name in ("local", "auto") else None

    monkeypatch.setattr(runtime_model, "make_embedder", make)
    monkeypatch.setattr(
        typer.testing._NamedTextIOWrapper,
        "isatty",
        lambda self: self.name == "<stdout>",
        raising=False,
    )
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "local")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _run(args: list[str]) -> str:
    """One command; without --json its stdout counts as a terminal (stderr does not, so
    progress bars with their timings stay out of the output)."""
    result = typer.testing.CliRunner().invoke(app, args, env={"COLUMNS": "240", "NO_COLOR": "1"})
    return f"$ docshelf {' '.join(args)}\n[exit {result.exit_code}]\n{plain(result.output)}"


def test_cli_output_is_unchanged_on_a_fixed_library(library: Path) -> None:
    folder = str(library / "library")
    outputs = {"add": _run(["--json", "add", folder])}
    outputs["add-again"] = _run(["add", folder])
    for name, args in COMMANDS:
        outputs[name] = _run(["--json", *args]) + "\n" + _run(args)
    documents = re.findall(r'"document_id": ?"(doc_[0-9a-f]+)"', outputs["search-hybrid"])
    assert documents, outputs["search-hybrid"]
    outputs["show"] = _run(["--json", "show", documents[0]]) + "\n" + _run(["show", documents[0]])

    _compare(outputs, library)


def _compare(outputs: dict[str, str], root: Path) -> None:
    mismatched = []
    for name, raw in outputs.items():
        text = _normalise(raw, root)
        path = GOLDEN / f"{name}.txt"
        if UPDATE:
            path.write_text(text, encoding="utf-8")
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            mismatched.append(name)
            path.with_suffix(".actual").write_text(text, encoding="utf-8")
    assert not mismatched, (
        f"output changed for {mismatched}; compare tests/golden/<name>.txt with <name>.actual"
    )


HTTP_SEARCHES: list[dict[str, Any]] = [
    {"query": "leader election heartbeat"},
    {"query": "explicit is better than implicit", "mode": "lexical", "limit": 3},
    {"query": "restore a snapshot", "mode": "vector", "limit": 4},
    {"query": "starter flour", "filters": {"tag": ["baking"]}},
    {"query": 'type:rst "snapshot"'},
]


def test_http_output_is_unchanged_on_a_fixed_library(library: Path) -> None:
    from fastapi.testclient import TestClient

    from docshelf.api import create_app
    from docshelf.shelf import Shelf

    _run(["--json", "add", str(library / "library")])
    outputs: dict[str, str] = {}
    with Shelf(library / "home") as shelf:
        token = shelf.local_admin_token()  # the folder's documents are the local admin's
        assert token
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(shelf)) as client:
            lines = []
            for body in HTTP_SEARCHES:
                r = client.post("/v1/search", json=body, headers=headers)
                lines.append(f"POST /v1/search {json.dumps(body)}\n[{r.status_code}]\n{r.text}\n")
            for path in ("/v1/documents", "/v1/sources"):
                r = client.get(path, headers=headers)
                lines.append(f"GET {path}\n[{r.status_code}]\n{r.text}\n")
            hit = client.post("/v1/search", json={"query": "raft"}, headers=headers).json()
            for path in (
                f"/v1/documents/{hit['hits'][0]['document_id']}",
                f"/v1/chunks/{hit['hits'][0]['chunk_id']}/context?mode=parent-section",
            ):
                r = client.get(path, headers=headers)
                lines.append(f"GET {path}\n[{r.status_code}]\n{r.text}\n")
            r = client.post("/v1/ask", json={"question": "What is Paxos?"}, headers=headers)
            lines.append(f"POST /v1/ask\n[{r.status_code}]\n{r.text}\n")
            outputs["http"] = "\n".join(lines)
    _compare(outputs, library)
