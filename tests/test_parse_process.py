"""Parsing ahead in a process of its own (``Preparer.ahead``): the same results as
parsing here, in order; a file that cannot be parsed is a failure, not an error; a
parse process that really dies hands the rest back; stopping early leaves no process."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from docshelf.chunk import ChunkSettings, approx_tokens
from docshelf.errors import InvalidInput
from docshelf.ingest import Prepared, PrepareJob, Preparer
from docshelf.model import Tier
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder

PREPARER = Preparer(
    host="test",
    settings=ChunkSettings.for_window(64),
    count_tokens=approx_tokens,
    embedding_model="fake",
    taxonomy=None,
)


def _note(i: int) -> bytes:
    body = "\n\n".join(f"## Part {j}\n\nNote {i} says {'word ' * (5 + i % 40)}." for j in range(4))
    return f"# Note {i}\n\n{body}\n".encode()


def _jobs(n: int, bad: frozenset[int] = frozenset()) -> list[tuple[int, PrepareJob]]:
    jobs = []
    for i in range(n):
        data, kind = (b"%PDF-1.4 not really", "pdf") if i in bad else (_note(i), "markdown")
        jobs.append((i, PrepareJob(data, kind, f"/n/{i}", f"{i}.{kind}", "src_test")))
    return jobs


def _summary(results: list[tuple[int, Prepared | InvalidInput]]) -> list[object]:
    return [
        (tag, type(r).__name__, r.message)
        if isinstance(r, InvalidInput)
        else (tag, r.document.id, [(c.id, c.text, c.header, c.token_count) for c in r.chunks])
        for tag, r in results
    ]


def test_ahead_gives_what_here_gives_in_order_with_failures() -> None:
    jobs = _jobs(30, bad=frozenset({3, 17}))
    here = list(PREPARER.here(jobs))
    ahead = list(PREPARER.ahead(iter(jobs), depth=4))
    assert [tag for tag, _ in ahead] == list(range(30))
    assert _summary(ahead) == _summary(here)
    assert [tag for tag, r in ahead if isinstance(r, InvalidInput)] == [3, 17]
    assert not multiprocessing.active_children()


def _dies_in_a_child(text: str) -> int:
    """A token counter that kills the parse process (only a child) at a marked file."""
    if "DIE-HERE" in text and multiprocessing.parent_process() is not None:
        os._exit(9)
    return approx_tokens(text)


def test_a_parse_process_that_dies_hands_the_rest_back(caplog: pytest.LogCaptureFixture) -> None:
    preparer = Preparer("test", ChunkSettings.for_window(64), _dies_in_a_child, "fake", None)
    jobs = _jobs(12)
    doomed = PrepareJob(b"# Doomed\n\nDIE-HERE now.\n", "markdown", "/n/x", "x.md", "src_test")
    jobs.insert(5, (99, doomed))
    results = list(preparer.ahead(iter(jobs), depth=3))
    assert [tag for tag, _ in results] == [tag for tag, _ in jobs]
    assert all(isinstance(r, Prepared) for _, r in results)  # the rest were parsed here
    assert _summary([r for r in results if r[0] != 99]) == _summary(
        list(PREPARER.here(j for j in jobs if j[0] != 99))
    )
    assert "parse process died" in caplog.text
    assert not multiprocessing.active_children()


def test_stopping_early_stops_the_parse_process() -> None:
    pulled: list[int] = []

    def endless() -> Iterator[tuple[int, PrepareJob]]:
        i = 0
        while True:
            pulled.append(i)
            yield i, PrepareJob(_note(i), "markdown", f"/n/{i}", f"{i}.md", None)
            i += 1

    for tag, _ in PREPARER.ahead(endless(), depth=3):
        if tag == 5:
            break
    assert len(pulled) <= 5 + 3  # never more than `depth` ahead
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("mode", ["on", "off"])
def test_add_is_the_same_with_a_parse_process_or_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(20):
        (folder / f"n{i:02}.md").write_bytes(_note(i))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    (folder / "copy.md").write_bytes(_note(3))  # bytes already in the batch

    def add(setting: str) -> tuple[object, ...]:
        monkeypatch.setenv("DOCSHELF_PARSE_PROCESS", setting)
        with Shelf(tmp_path / f"home-{setting}", embedder=HashEmbedder()) as shelf:
            report = shelf.add(folder)
            chunks = sorted(
                (c.id, c.text)
                for d in shelf.documents()
                for c in shelf.store.chunks_of_document(d.id, Tier.SNIPPET)
            )
            files = sorted(
                (Path(r.path).name, r.document_id)
                for s in shelf.sources()
                for r in shelf.store.files_of_source(s.id).values()
            )
            assert shelf.check() == []
            return report.added, [f.path for f in report.failures], chunks, files

    assert add(mode) == add("off" if mode == "on" else "on")
