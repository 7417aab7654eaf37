"""A process really killed in the middle of `add` loses nothing committed and
leaves a store that opens, passes its integrity check and resumes: with the model
too, whose work is committed some seconds at a time, and in the enrichment that
follows indexing, which the next `add` finishes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from docshelf.embed import local_available
from docshelf.ingest import batches, vectors
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder


def _count(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _kill_add_once(
    root: Path, env: dict[str, str], ready: Callable[[], bool], timeout: float
) -> None:
    """A real lexical-only `docshelf add` of ``root``, killed (SIGKILL) once ``ready()``
    says the store shows enough of its work: stopped (SIGSTOP) when it first does and
    asked again, so the kill leaves what ``ready()`` saw (else it goes on)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "docshelf.cli", "--json", "add", str(root)],
        env={**os.environ, "DOCSHELF_EMBEDDER": "none", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            os.kill(proc.pid, signal.SIGSTOP)
            if ready():
                break
            os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.01)
    assert proc.poll() is None, "add finished before it could be killed; make the folder bigger"
    assert ready(), "add was not ready to be killed in time"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_kill_during_add_then_resume(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    n_files = 1500
    for i in range(n_files):
        body = "\n\n".join(
            f"## Part {j}\n\nNote {i} paragraph {j} about topic{i % 17}." for j in range(6)
        )
        (root / f"note{i:04}.md").write_text(f"# Note {i}\n\n{body}\n")
    home = tmp_path / "home"
    db = home / "docshelf.db"
    _kill_add_once(root, {"DOCSHELF_HOME": str(home)}, lambda: _count(db) >= 50, 60)
    partial = _count(db)
    assert 0 < partial < n_files

    with Shelf(home, embedder=None) as shelf:
        assert shelf.check() == []
        report = shelf.add(root)
        assert report.failed == 0
        assert report.added + report.unchanged == n_files
        assert report.unchanged >= partial
        assert len(shelf.documents()) == n_files
        assert shelf.check() == []
        assert shelf.search("topic3 paragraph", mode="lexical").hits


# -- commits in small batches (issue 41: 10 kills over 355 s of `add` left nothing) ---------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _TimedEmbedder(HashEmbedder):
    """A model that takes ``seconds_per_text`` of the fake clock per text, as a CPU model
    does, and notes how many documents the store holds at each of its calls."""

    def __init__(self, clock: _Clock, seconds_per_text: float = 0.1) -> None:
        super().__init__("timed-hash")
        self.clock = clock
        self.seconds_per_text = seconds_per_text
        self.documents: Callable[[], int] = lambda: 0
        self.seen: list[int] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.seen.append(self.documents())
        self.clock.now += self.seconds_per_text * len(texts)
        return super().embed(texts)


def _sectioned_notes(root: Path, n: int, sections: int = 4) -> Path:
    root.mkdir()
    for i in range(n):
        body = "\n\n".join(
            f"## Part {j}\n\n" + " ".join(f"word{i}x{j}y{k} topic{k % 7}" for k in range(30))
            for j in range(sections)
        )
        (root / f"note{i:04}.md").write_text(f"# Note {i}\n\n{body}\n")
    return root


def test_an_add_stores_every_file_before_its_vectors_and_commits_them_in_batches(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two phases (issue 39): every file is written, searchable by its words, before the
    model's first call; then the vectors are committed a batch at a time, so the store
    holds some while the model is at others, and a kill loses at most one batch."""
    clock = _Clock()
    embedder = _TimedEmbedder(clock)
    notes = _sectioned_notes(tmp_path / "notes", 120)
    with Shelf(isolated_home, embedder=embedder) as shelf:
        embedder.documents = lambda: shelf.store.stats().documents
        vectors: list[int] = []
        embed = embedder.embed

        def counted(texts: Sequence[str]) -> npt.NDArray[np.float32]:
            vectors.append(shelf.store.stats().snippets_with_vectors)
            return embed(texts)

        monkeypatch.setattr(embedder, "embed", counted)
        report = shelf.add(notes)
        assert report.added == 120
        assert embedder.seen[0] == 120  # all stored before the model's first call
        # 480 snippets in batches of vectors.BATCH: the store held each batch's vectors
        # before the model started the next
        assert len(vectors) >= 2 and vectors[0] == 0
        assert vectors == sorted(vectors) and vectors[-1] > 0
        assert shelf.store.stats().snippets_with_vectors == shelf.store.stats().snippets
        assert shelf.store.pending_embedding() == 0
        assert shelf.check() == []


def test_the_words_are_committed_every_few_seconds_of_parsing(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first commit comes after FIRST_COMMIT_SECONDS of parsing, the next every
    ``commit_seconds``: a new library answers its first search within seconds."""

    class Ticking(_Clock):
        def __call__(self) -> float:
            self.now += 0.25  # each look at the clock: a quarter second of parsing
            return self.now

    monkeypatch.setattr(batches, "CLOCK", Ticking())
    notes = _sectioned_notes(tmp_path / "notes", 60)
    with Shelf(isolated_home, embedder=None) as shelf:
        commits: list[int] = []
        put = shelf.runtime.writer.put

        def counting(*args: Any, **kwargs: Any) -> None:
            commits.append(batches_written[0])
            put(*args, **kwargs)

        batches_written = [0]
        write_batch = batches.BatchWriter._write_batch

        def batch(self: batches.BatchWriter, items: list[batches.Pending]) -> None:
            batches_written[0] += 1 if items else 0
            write_batch(self, items)

        monkeypatch.setattr(shelf.runtime.writer, "put", counting)
        monkeypatch.setattr(batches.BatchWriter, "_write_batch", batch)
        assert shelf.add(notes).added == 60
    sizes = [commits.count(n) for n in sorted(set(commits))]
    assert sizes[0] <= 1 + batches.FIRST_COMMIT_SECONDS / 0.25  # the first: soon
    assert len(sizes) >= 4  # then every few seconds, not all at the end


def _embedded_snippets(line: str) -> int:
    try:
        event = json.loads(line)
    except ValueError:
        return 0
    if event.get("event") != "progress" or event.get("phase") != "embed":
        return 0
    return int(event.get("snippets") or 0)


@pytest.mark.model
@pytest.mark.skipif(not local_available(), reason="the packaged model is not installed")
def test_kill_during_an_add_with_the_model_keeps_the_embedded_documents(
    tmp_path: Path,
) -> None:
    """A real `docshelf add` with the packaged model, killed once the model has embedded
    more than a batch of the folder's snippets (as its progress says): every file is
    stored (the words come first), the vectors of the batches before are committed, the
    store is whole, and the next `add` embeds the rest, each file once."""
    n_files = 64
    root = _sectioned_notes(tmp_path / "notes", n_files, sections=5)
    home = tmp_path / "home"
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(home),
        "DOCSHELF_EMBEDDER": "local",
        "DOCSHELF_ENRICH": "off",
    }
    argv = [sys.executable, "-m", "docshelf.cli", "--json", "add", str(root), "--progress"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    past = vectors.BATCH + 16  # past the first batch of vectors, short of the last
    assert past < n_files * 5
    reached = 0
    for line in proc.stderr:
        reached = max(reached, _embedded_snippets(line))
        if reached >= past:
            break
    assert reached >= past, "add ended before it embedded a batch of snippets"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert _count(home / "docshelf.db") == n_files  # all searchable by their words
    with Shelf(home, embedder=None, check_model=False) as shelf:
        stats = shelf.store.stats()
        assert 0 < stats.snippets_with_vectors < stats.snippets
        assert 0 < shelf.store.pending_embedding() < n_files

    rerun = subprocess.run(argv[:-1], env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert json.loads(rerun.stdout)["result"]["counts"]["unchanged"] == n_files
    with Shelf(home, embedder=None, check_model=False) as shelf:
        assert shelf.check() == []
        docs = shelf.documents()
        assert len(docs) == n_files
        assert len({d.path for d in docs}) == n_files  # each file once
        assert shelf.store.stats().files == n_files
        stats = shelf.store.stats()
        assert stats.snippets_with_vectors == stats.snippets
        assert shelf.store.pending_embedding() == 0


def _enrichment(db: Path) -> tuple[int, int, int]:
    """(enriched, pending, leased) complete documents, read without disturbing the writer;
    leased: pending ones under a lease that has not run out."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute(
                "SELECT COUNT(enriched_at), COUNT(*) - COUNT(enriched_at), "
                "COUNT(*) FILTER (WHERE enriched_at IS NULL AND enrich_lease_until > ?) "
                "FROM documents WHERE status = 'complete'",
                (time.time(),),
            ).fetchone()
            return int(row[0]), int(row[1]), int(row[2])
        finally:
            con.close()
    except sqlite3.Error:
        return 0, 0, 0


def test_enrichment_killed_midway_is_finished_by_the_next_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`add` killed while it enriches (kill -9 once the store shows a few documents
    enriched and one under its lease): the next `add`, with nothing new to index,
    enriches the rest, the one the dead process held included — its lease named a
    process of this host that is gone, so it does not wait out its time (issue 41)."""
    root = _sectioned_notes(tmp_path / "notes", 400, sections=3)
    home = tmp_path / "home"
    db = home / "docshelf.db"
    env = {"DOCSHELF_HOME": str(home), "DOCSHELF_ENRICH": "offline"}

    def enriching() -> bool:  # a few done, and one under the process's lease
        enriched, _, leased = _enrichment(db)
        return enriched >= 5 and leased == 1

    _kill_add_once(root, env, enriching, 120)
    enriched, pending, leased = _enrichment(db)
    assert enriched >= 5 and pending > 0 and leased == 1  # the dead process's lease holds

    monkeypatch.setenv("DOCSHELF_ENRICH", "offline")
    with Shelf(home, embedder=None) as shelf:
        report = shelf.add(root)
        assert report.added == report.updated == 0  # nothing to index: only the enriching
        assert _enrichment(db) == (400, 0, 0)
        assert shelf.check() == []
