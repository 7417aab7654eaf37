"""The same Shelf, end to end, on PostgreSQL: folders, uploads and workers,
hybrid search through pgvector, access control."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from docshelf.config import Settings
from docshelf.ingest.worker import Worker
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters
from tests.fakes import HashEmbedder
from tests.pg import fresh_schema


@pytest.fixture
def pg_shelf(isolated_home: Path) -> Iterator[Shelf]:
    with fresh_schema() as url:
        settings = Settings(home=isolated_home, database_url=url, embedder="none")
        with Shelf(settings=settings, embedder=HashEmbedder()) as shelf:
            yield shelf


def test_folder_upload_worker_and_search(pg_shelf: Shelf, notes: Path) -> None:
    report = pg_shelf.add(notes)
    assert report.added == 3 and report.failed == 0
    result = pg_shelf.search("leader election heartbeat")
    assert result.mode == "hybrid"
    top = result.hits[0]
    assert top.document.rel_path == "projects/raft.md"
    assert top.scores.vector is not None and top.scores.lexical is not None
    tagged = pg_shelf.search("flour", filters=SearchFilters(tags=("baking",)))
    assert {h.document.rel_path for h in tagged.hits} == {"cooking.md"}

    alice = pg_shelf.create_user("alice")[0].id
    bob = pg_shelf.create_user("bob")[0].id
    up = pg_shelf.upload(alice, "paxos.md", b"# Paxos\n\nAcceptors promise ballots.\n")
    assert Worker(pg_shelf).run_once()
    assert pg_shelf.job(up.document_id).status == "complete"
    assert pg_shelf.search("acceptors ballots", user_id=alice).hits
    assert pg_shelf.search("acceptors ballots", user_id=bob).hits == []
    stages = [e.stage for e in pg_shelf.events(document_id=up.document_id)]
    assert stages[0] == "queued" and stages[-1] == "complete"
    assert pg_shelf.check() == []
