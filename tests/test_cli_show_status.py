"""`docshelf show` and `status` as a person reads them on a terminal: no Python reprs,
each link once, and the failures listed matching the failure count."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import typer.testing

from docshelf.cli import app
from docshelf.shelf import Shelf
from tests.screen import plain
from tests.test_worker import drain


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Path:
    """stdout counts as a terminal (human output), the library is ``isolated_home``."""
    monkeypatch.setattr(
        typer.testing._NamedTextIOWrapper,
        "isatty",
        lambda self: self.name == "<stdout>",
        raising=False,
    )
    monkeypatch.setenv("DOCSHELF_HOME", str(isolated_home))
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    return isolated_home


def _human(*args: str) -> str:
    result = typer.testing.CliRunner().invoke(
        app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    return plain(result.output)


def test_show_prints_values_not_python_reprs_and_each_link_once(
    terminal: Path, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "raft.md").write_text(
        "---\ntags: [consensus, distributed]\n---\n# Raft\n\n"
        + "See [[Paxos]] and again [[Paxos]], [[Paxos|the older one]], [[Paxos#Roles]] "
        "and [[Paxos]]. Also [[Zab]].\n"
    )
    (root / "paxos.md").write_text("# Paxos\n\nAcceptors promise ballots.\n")
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(root)
        raft = next(d for d in shelf.documents() if d.title == "Raft")
    out = _human("show", raft.id)
    for repr_mark in ("['", "{'", "None", "':"):
        assert repr_mark not in out
    assert "consensus, distributed" in out
    assert "1 section, 1 snippet" in out
    assert "—" in out  # no document type yet: a dash, not None
    links = [line for line in out.splitlines() if line.strip().startswith("[[")]
    assert len(links) == 2  # Paxos once (however often and however linked), Zab once
    assert links[0].strip().lower().startswith("[[paxos]] -> doc_")
    assert links[1].strip().lower() == "[[zab]] -> (no such note)"


def test_status_lists_as_many_failures_as_it_counts(terminal: Path, tmp_path: Path) -> None:
    root = tmp_path / "broken"
    root.mkdir()
    for i in range(23):  # more than the store lists at once
        (root / f"scan{i:02}.pdf").write_bytes(b"not a pdf at all " * 4)
    (root / "fine.md").write_text("# Fine\n\nThis one reads.\n")
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(root)
    out = _human("status")
    counted = next(line for line in out.splitlines() if line.startswith("Failures:"))
    listed = [line for line in out.splitlines() if line.strip().startswith("✗")]
    assert counted == "Failures: 23" and len(listed) == 23  # the store keeps 20 at hand
    assert sorted(line.split("/")[-1].split(":")[0] for line in listed) == [
        f"scan{i:02}.pdf" for i in range(23)
    ]


def test_a_long_failure_wraps_under_its_text_not_under_the_cross(
    terminal: Path, tmp_path: Path
) -> None:
    root = tmp_path / "broken"
    root.mkdir()
    (root / ("a-rather-long-name-for-a-scan-" * 2 + ".pdf")).write_bytes(b"not a pdf " * 4)
    with Shelf(terminal, embedder=None) as shelf:
        shelf.add(root)
    result = typer.testing.CliRunner().invoke(
        app, ["status"], env={"COLUMNS": "60", "NO_COLOR": "1"}
    )
    lines = plain(result.output).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("✗"))
    cross = lines[at].index("✗")
    text = lines[at].index("/", cross)  # where the failure's text starts
    rest = list(itertools.takewhile(lambda line: line[:text].isspace(), lines[at + 1 :]))
    assert len(rest) >= 1 and all(line[text] != " " for line in rest), lines  # hangs under it
    assert "not a PDF" in " ".join(line.strip() for line in lines[at : at + 1 + len(rest)])


def test_status_counts_and_lists_documents_whose_processing_failed(
    terminal: Path, tmp_path: Path
) -> None:
    with Shelf(terminal, embedder=None) as shelf:
        alice = shelf.create_user("alice")[0].id
        bad = shelf.upload(alice, "latin1.md", "caf\xe9".encode("latin-1"))
        drain(shelf)
        assert shelf.document(bad.document_id, alice).document.status == "failed"
    out = _human("status")
    counted = next(line for line in out.splitlines() if line.startswith("Failures:"))
    listed = [line for line in out.splitlines() if line.strip().startswith("✗")]
    assert counted == "Failures: 1" and len(listed) == 1
    assert "latin1.md" in listed[0] and "UTF-8" in listed[0]
