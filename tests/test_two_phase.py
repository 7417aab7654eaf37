"""Searchable in seconds (issue 39): a file is found by its words as soon as it is stored,
before its vectors; a partly embedded library says what a search covers and never ranks
a document lower for lacking its vectors; the vectors follow, in this process or another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from docshelf import views
from docshelf.embed import local_available
from docshelf.search.results import SearchResult
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder


class _Watching(HashEmbedder):
    """Runs ``during`` once, at the model's first call: the second phase has begun and no
    vector is written yet."""

    def __init__(self) -> None:
        super().__init__()
        self.during: Callable[[], Any] | None = None
        self.seen: list[Any] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.during is not None:
            look, self.during = self.during, None
            self.seen.append(look())
        return super().embed(texts)


def _notes(root: Path, notes: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, body in notes.items():
        (root / name).write_text(body)
    return root


FILLER = "A note about gardens, tomatoes and the weather in spring. " * 6


def test_a_file_stored_but_not_embedded_is_found_during_the_add(
    isolated_home: Path, tmp_path: Path
) -> None:
    embedder = _Watching()
    notes = _notes(
        tmp_path / "vault",
        {
            "keeper.md": "# Keeper\n\nThe zephyrine lighthouse keeper logs every ship.\n",
            "garden.md": f"# Garden\n\n{FILLER}\n",
            "spring.md": f"# Spring\n\n{FILLER}\n",
        },
    )
    with Shelf(isolated_home, embedder=embedder) as shelf:

        def look() -> tuple[int, SearchResult]:
            return shelf.store.pending_embedding(), shelf.search("zephyrine lighthouse", limit=3)

        embedder.during = look
        assert shelf.add(notes).added == 3
        pending, during = embedder.seen[0]
        assert pending == 3  # stored, none embedded yet
        assert during.mode == "hybrid"
        assert during.hits and during.hits[0].document.rel_path == "keeper.md"
        assert views.search(during)["coverage"] == {"documents": 3, "by_meaning": 0}
        assert during.notice == (
            "Searching 3 documents by their words; by meaning 0 of 3 so far "
            "(the rest are being embedded)"
        )
        after = shelf.search("zephyrine lighthouse", limit=3)
        assert after.notice is None and after.hits[0].document.rel_path == "keeper.md"
        assert shelf.store.pending_embedding() == 0


def test_a_document_waiting_for_vectors_is_ranked_by_its_words_not_lower(
    isolated_home: Path, tmp_path: Path
) -> None:
    """An embedded note that holds the query's words once, and a pending one that holds
    them throughout: the pending one is first (without the rule its fused score could
    not pass 0.15, the lexical weight, while the embedded one's vector gave 0.85)."""
    embedder = _Watching()
    first = _notes(
        tmp_path / "a",
        {"once.md": f"# Tides\n\n{FILLER} Harbour tides come twice a day.\n"},
    )
    second = _notes(
        tmp_path / "b",
        {"tides.md": "# Harbour tides\n\nHarbour tides, harbour tides: the tides table.\n"},
    )
    with Shelf(isolated_home, embedder=embedder) as shelf:
        shelf.add(first)
        embedder.during = lambda: shelf.search("harbour tides", limit=2)
        shelf.add(second)
        during = embedder.seen[0]
        assert [h.document.rel_path for h in during.hits] == ["tides.md", "once.md"]
        assert during.notice is not None and "by meaning 1 of 2" in during.notice
        lexical = shelf.search("harbour tides", limit=2, mode="lexical")
        assert lexical.notice is None  # a lexical search covers everything it searches


def test_add_in_the_background_leaves_the_vectors_for_another_process(
    isolated_home: Path, tmp_path: Path
) -> None:
    embedder = HashEmbedder()
    notes = _notes(tmp_path / "vault", {"a.md": "# A\n\nalpha words\n", "b.md": "# B\n\nbeta\n"})
    with Shelf(isolated_home, embedder=embedder) as shelf:
        report = shelf.add(notes, background=True)
        assert report.added == 2 and embedder.embedded == []
        assert shelf.store.pending_embedding() == 2
        assert shelf.search("alpha", limit=1).hits[0].document.rel_path == "a.md"
        assert shelf.embed_pending() == 2
        assert shelf.store.pending_embedding() == 0
        stats = shelf.store.stats()
        assert stats.snippets_with_vectors == stats.snippets


def test_a_dead_embedders_lease_is_taken_by_the_next_at_once(
    isolated_home: Path, tmp_path: Path
) -> None:
    """Documents leased by a process that has died are embedded by the next one at once,
    not when the lease runs out; a live owner's are left to it."""
    dead = subprocess.run(
        [sys.executable, "-c", "from docshelf import owners; print(owners.this_process())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    notes = _notes(tmp_path / "vault", {f"{n}.md": f"# {n}\n\nword {n}\n" for n in "abc"})
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes, background=True)
        now = time.time()
        assert len(shelf.store.claim_embedding(now, 120.0, "other-host:1:0:x", 1)) == 1
        assert len(shelf.store.claim_embedding(now, 120.0, dead, 2)) == 2
        assert shelf.store.pending_embedding(now) == 2  # the dead one's two: free again
        assert shelf.embed_pending() == 2
        assert shelf.store.pending_embedding() == 1  # the live owner's is still its own


@pytest.mark.model
@pytest.mark.skipif(not local_available(), reason="the packaged model is not installed")
def test_cli_add_in_the_background_returns_with_the_words_and_a_process_embeds_the_rest(
    tmp_path: Path,
) -> None:
    notes = _notes(
        tmp_path / "vault",
        {f"note{n}.md": f"# Note {n}\n\nquartz{n} {FILLER}\n" for n in range(12)},
    )
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(tmp_path / "home"),
        "DOCSHELF_EMBEDDER": "local",
        "DOCSHELF_ENRICH": "off",
    }

    def cli(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "docshelf.cli", "--json", *args],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)["result"]  # type: ignore[no-any-return]

    added = cli("add", str(notes), "--background")
    assert added["counts"]["added"] == 12
    embedding = added["embedding"]
    assert embedding["pending"] == 12 and embedding["pid"]
    found = cli("search", "quartz7", "--mode", "lexical", "--limit", "1")
    assert found["hits"][0]["citation"]["path"].endswith("note7.md")
    deadline = time.monotonic() + 600  # (only a bound on waiting: the child is not ours)
    while Path(f"/proc/{embedding['pid']}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    status = cli("status")
    assert status["embedding_pending"] == 0 and status["embedding_coverage"] == 1.0
    log = (tmp_path / "home" / "background.log").read_text()
    assert "12 documents embedded" in log


def test_a_worker_between_jobs_embeds_what_an_add_left(isolated_home: Path, tmp_path: Path) -> None:
    """``serve``'s workers (and ``docshelf worker``) take pending documents when no job is
    due, a claim at a time, before enrichment."""
    from docshelf.ingest.vectors import CLAIM
    from docshelf.ingest.worker import Worker

    n = CLAIM + 3
    notes = _notes(tmp_path / "vault", {f"n{i}.md": f"# N{i}\n\nword{i}\n" for i in range(n)})
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes, background=True)
        worker = Worker(shelf, name="between-jobs")
        assert worker.run_once() is False  # no job: uploads come first
        assert worker.embed_some() is True
        assert shelf.store.pending_embedding() == 3  # one claim of CLAIM documents
        assert worker.embed_some() is True
        assert worker.embed_some() is False
        assert shelf.store.pending_embedding() == 0


def test_the_whole_jobs_eta_counts_the_parsing_left_and_every_vector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While files are parsed, the ETA is the whole job's: the files left at the parsing
    rate so far, then the vectors of all the snippets (parsed, still to come at the same
    count per file, and left waiting by an earlier run) at the model's measured rate."""
    from docshelf.ingest import batches
    from docshelf.progress import Rate, describe

    now = [100.0]
    monkeypatch.setattr(batches, "CLOCK", lambda: now[0])
    tally = batches.Tally(files=10, model_seconds=0.5, waiting=4)
    assert tally.eta() is None  # nothing parsed yet: no rate
    now[0] += 4.0
    tally.seen, tally.parsed_snippets = 2, 8
    # 8 files at 2 s each, then (8 * 10 / 2 + 4) snippets at 0.5 s
    assert tally.eta() == 8 * 2.0 + 44 * 0.5
    event = batches.event("parse", tally, "b.md")
    assert "ETA 0:38" in describe(event, Rate(lambda: now[0]))
    assert batches.Tally(files=10).eta() is None  # the model never measured: the face's own


def test_an_embedding_run_remembers_the_models_rate_for_the_next_eta(
    isolated_home: Path, tmp_path: Path
) -> None:
    from docshelf.ingest.vectors import BATCH, measured_rate

    notes = _notes(
        tmp_path / "vault",
        {f"n{i}.md": f"# N{i}\n\nword{i} {FILLER}\n" for i in range(BATCH)},
    )
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        assert measured_rate(shelf.runtime) is None
        shelf.add(notes)
        rate = measured_rate(shelf.runtime)
        assert rate is not None and rate > 0


def test_each_user_is_told_of_their_own_documents_waiting_for_vectors(
    isolated_home: Path, tmp_path: Path
) -> None:
    """What the web page's library shows (`embedding_pending` of /v1/documents) and what a
    search's coverage counts: the caller's documents, never another user's."""
    alice_notes = _notes(tmp_path / "a", {f"a{i}.md": f"# A{i}\n\nalpha {i}\n" for i in range(3)})
    bob_notes = _notes(tmp_path / "b", {"b.md": "# B\n\nalpha beta\n"})
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        alice, _ = shelf.create_user("alice")
        bob, _ = shelf.create_user("bob")
        shelf.add(bob_notes, user_id=bob.id)
        shelf.add(alice_notes, user_id=alice.id, background=True)
        assert shelf.waiting_for_vectors(alice.id) == 3
        assert shelf.waiting_for_vectors(bob.id) == 0
        assert shelf.waiting_for_vectors() == 3
        found = shelf.search("alpha", user_id=bob.id)
        assert found.backlog is None and found.notice is None  # his are all embedded
        assert shelf.search("alpha", user_id=alice.id).backlog == (3, 3)


def test_progress_counts_files_searchable_then_files_embedded(
    isolated_home: Path, tmp_path: Path
) -> None:
    """The files' count passes each phase in turn: all searchable by their words (parse)
    before the first embed event, then embedded files of those waiting, and snippets
    embedded of all that wait, ending whole."""
    from docshelf.progress import ProgressEvent

    n = 40
    notes = _notes(
        tmp_path / "vault",
        {
            f"n{i:02}.md": f"# N{i}\n\n" + f"word{i} {FILLER}\n\n## More\n\n{FILLER}"
            for i in range(n)
        },
    )
    events: list[ProgressEvent] = []
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes, progress=events.append)
        snippets = shelf.store.stats().snippets
    parse = [e for e in events if e.phase == "parse"]
    embed = [e for e in events if e.phase == "embed"]
    first_embed = events.index(embed[0])
    assert all(events.index(e) < first_embed for e in parse)
    assert parse[-1].done == parse[-1].total == n
    assert [e.done for e in parse] == sorted(e.done for e in parse)
    assert {e.total for e in embed} == {n} and embed[-1].done == n
    assert [e.done for e in embed] == sorted(e.done for e in embed)
    assert embed[-1].snippets == embed[-1].snippets_total == snippets
    assert [e.snippets for e in embed] == sorted(e.snippets or 0 for e in embed)


def test_a_document_rewritten_while_embedded_stays_pending(
    isolated_home: Path, tmp_path: Path
) -> None:
    """An embedder that read a document's snippets before a sync rewrote it writes vectors
    for chunks that are gone: the document, now holding new snippets, stays pending."""
    notes = _notes(tmp_path / "vault", {"a.md": "# A\n\nfirst words\n"})
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(notes, background=True)
        doc = shelf.documents()[0]
        old = shelf.store.snippets_without_vectors(10, document_id=doc.id)
        (notes / "a.md").write_text("# A\n\nother words now\n")
        shelf.sync(background=True)
        new = shelf.documents()[0]
        vectors = shelf.runtime.embedder.embed([c.retrieval_text for c in old])  # type: ignore[union-attr]
        with shelf.store.transaction():
            shelf.runtime.writer.add_vectors([c.id for c in old], vectors, [doc.id, new.id])
        assert shelf.store.pending_embedding() == 1
        assert shelf.embed_pending() == 1


def test_a_sync_of_several_sources_stores_all_their_words_before_any_vector(
    isolated_home: Path, tmp_path: Path
) -> None:
    embedder = _Watching()
    one = _notes(tmp_path / "one", {"a.md": "# A\n\nalpha\n"})
    two = _notes(tmp_path / "two", {"b.md": "# B\n\nbeta\n"})
    with Shelf(isolated_home, embedder=embedder) as shelf:
        shelf.add(one)
        shelf.add(two)
        (one / "c.md").write_text("# C\n\ngamma\n")
        (two / "d.md").write_text("# D\n\ndelta\n")
        embedder.during = lambda: sorted(d.rel_path for d in shelf.documents())
        report = shelf.sync()
        assert report.added == 2
        assert embedder.seen == [["a.md", "b.md", "c.md", "d.md"]]
        assert shelf.store.pending_embedding() == 0


def test_a_library_exported_while_being_embedded_is_embedded_after_its_import(
    tmp_path: Path,
) -> None:
    """The archive carries no lease and no pending mark (the exporting library's work):
    the importing library finds the snippets without vectors and embeds them."""
    notes = _notes(tmp_path / "vault", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    archive = tmp_path / "library.tar"
    with Shelf(tmp_path / "one", embedder=HashEmbedder()) as shelf:
        shelf.add(notes, background=True)
        shelf.export_library(archive)
    with Shelf(tmp_path / "two", embedder=HashEmbedder()) as shelf:
        shelf.import_library(archive)
        assert shelf.store.pending_embedding() == 2
        assert shelf.embed_pending() == 2
        stats = shelf.store.stats()
        assert stats.snippets_with_vectors == stats.snippets
        shelf.export_library(archive, overwrite=True)
    with Shelf(tmp_path / "three", embedder=HashEmbedder()) as shelf:
        shelf.import_library(archive)  # a whole library: nothing waits, nothing is said
        assert shelf.store.pending_embedding() == 0
        assert shelf.search("alpha").notice is None
