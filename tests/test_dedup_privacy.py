"""Dedup is invisible between users (issue 41): bytes someone else holds already look,
to the user who uploads them too, like a fresh upload of their own — the same fields,
the same stage stream, their own times, event ids that move with nothing but their own
events — and /metrics does not tell a linked upload from a new one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app
from docshelf.model import User
from docshelf.shelf import Shelf
from docshelf.store import Listing, SearchFilters
from tests.conftest import FILLER
from tests.fakes import HashEmbedder
from tests.test_api import Api, asgi, drain, sse_events, sse_events_of

# Two notes of one shape (the same length, words and chunks), different bytes.
SHARED = ("plain words about raft consensus and leader election. " + FILLER + "\n\n").encode() * 3
OWN = SHARED.replace(b"raft", b"paxo")
DAY = 86_400.0


@pytest.fixture
def client(shelf: Shelf) -> Iterator[TestClient]:
    with TestClient(create_app(shelf)) as c:
        yield c


def _user(shelf: Shelf, client: TestClient, name: str) -> Api:
    user, token = shelf.create_user(name)
    return Api(client, token, user)


def _a_day_ago(monkeypatch: pytest.MonkeyPatch) -> None:
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - DAY)


def _stages(api: Api, doc_id: str, last: str = "") -> list[dict[str, str]]:
    headers = {"Last-Event-ID": last} if last else {}
    return sse_events(api.get(f"/v1/documents/{doc_id}/events", headers=headers).text)


def _seen(events: list[dict[str, str]]) -> list[tuple[str, dict[str, Any]]]:
    return [(e["event"], json.loads(e["data"])) for e in events]


@pytest.mark.parametrize("linked_while", ["queued", "complete"])
def test_a_linked_upload_looks_like_a_fresh_one_to_its_uploader(
    shelf: Shelf, client: TestClient, linked_while: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    with monkeypatch.context() as yesterday:  # alice sent the bytes a day ago
        _a_day_ago(yesterday)
        shared = alice.upload("alice.txt", SHARED).json()["document_id"]
        if linked_while == "complete":
            drain(shelf)
    alices_stages = _stages(alice, shared) if linked_while == "complete" else None

    start = time.time()
    own = bob.upload("own.txt", OWN).json()["document_id"]  # new bytes, first
    linked = bob.upload("linked.txt", SHARED).json()["document_id"]  # alice's, last
    drain(shelf)

    # the records: the same fields, bob's own times (not a day old)
    records = {d: bob.get(f"/v1/documents/{d}").json() for d in (own, linked)}
    assert records[own].keys() == records[linked].keys()
    for record in records.values():
        assert record["status"] == "complete"
        assert record["added_at"] >= start and record["updated_at"] >= record["added_at"]
        assert record["enriched_at"] is None or record["enriched_at"] >= record["added_at"]
    jobs = {d: records[d]["job"] for d in (own, linked)}
    for job in jobs.values():
        assert job["updated_at"] >= start and job["next_attempt_at"] >= start
    assert jobs[own]["attempts"] == jobs[linked]["attempts"]
    # his list sorted by when he added them, and filtered by his dates
    listed = bob.get("/v1/documents", params={"sort": "added"}).json()["documents"]
    assert [d["id"] for d in listed] == [linked, own]
    assert listed[0]["added_at"] == records[linked]["added_at"]
    since = Listing(filters=SearchFilters(dated_from=start))
    assert shelf.count_documents(user_id=bob.user.id, listing=since) == 2

    # the stage streams: event for event the same, numbered 1, 2, 3 … each
    streams = {d: _stages(bob, d) for d in (own, linked)}
    assert _seen(streams[linked]) == _seen(streams[own])
    stages = [data["stage"] for _, data in _seen(streams[linked])]
    assert stages[0] == "queued" and stages[-1] == "complete"
    assert {"parsing", "chunking", "embedding", "indexing"} <= set(stages)
    for events in streams.values():
        assert [e["id"] for e in events] == [str(n) for n in range(1, len(events) + 1)]
    # resumed after any of them: exactly the rest
    middle = streams[linked][2]["id"]
    assert _stages(bob, linked, middle) == streams[linked][3:]
    # alice's own stream is hers as it was
    if alices_stages is not None:
        assert _stages(alice, shared) == alices_stages

    # the lifecycle stream: the same kinds for both, opaque ids that resume
    lifecycle = sse_events_of(bob, "/v1/events")
    kinds = {
        d: [(e["event"], json.loads(e["data"])["stage"]) for e in lifecycle if d in e["data"]]
        for d in (own, linked)
    }
    assert kinds[own] == kinds[linked]
    assert kinds[own][0] == ("document.queued", "queued")
    assert ("document.completed", "complete") in kinds[own]
    ids = [e["id"] for e in lifecycle]
    assert len(set(ids)) == len(ids) and all(len(i) > 18 for i in ids)


def test_event_ids_move_with_nothing_another_user_does(shelf: Shelf, client: TestClient) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    mine = bob.upload("mine.txt", OWN).json()["document_id"]
    drain(shelf)
    before = _stages(bob, mine)
    lifecycle = sse_events_of(bob, "/v1/events")

    for n in range(3):  # alice is busy: events bob must not be able to count
        alice.upload(f"a{n}.txt", SHARED + str(n).encode())
    drain(shelf)
    again = bob.upload("again.txt", SHARED + b"again").json()["document_id"]
    drain(shelf)

    assert _stages(bob, mine) == before
    assert [e["id"] for e in _stages(bob, again)][:2] == ["1", "2"]
    later = sse_events_of(bob, "/v1/events")
    assert later[: len(lifecycle)] == lifecycle  # his ids are the same as before
    # resumed after his last id before alice's work: his next event, and nothing else
    status, body, _ = _lifecycle_after(bob, lifecycle[-1]["id"])
    assert status == 200
    resumed = sse_events(body.decode())
    assert resumed == later[len(lifecycle) :]
    assert resumed and all(again in e["data"] for e in resumed)


def test_a_lifecycle_id_not_sent_to_the_caller_is_refused(shelf: Shelf, client: TestClient) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    alice.upload("a.txt", OWN)
    drain(shelf)
    theirs = sse_events_of(alice, "/v1/events")[-1]["id"]
    for bad in (theirs, "1", str(int(theirs) ^ 1)):
        status, body, _ = _lifecycle_after(bob, bad)
        assert status == 400, body


def _lifecycle_after(api: Api, last: str) -> tuple[int, bytes, int]:
    return asgi(api.client.app, "GET", "/v1/events", {**api.headers, "Last-Event-ID": last})


def test_metrics_do_not_tell_a_linked_upload_from_a_new_one(
    shelf: Shelf, client: TestClient
) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    assert alice.upload("alice.txt", SHARED).status_code == 202  # bob's will link to it
    assert bob.get("/metrics").status_code == 403  # the pipeline's counters: operators only
    operator = {"Authorization": f"Bearer {shelf.create_user('ops', admin=True)[1]}"}

    def uploads() -> dict[str, str]:
        scrape = client.get("/metrics", headers=operator)
        assert scrape.status_code == 200
        lines = scrape.text.splitlines()
        return {
            line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1]
            for line in lines
            if line.startswith("upload_")
            and not line.startswith("upload_latency_ms_bucket")
            # when this process first saw an outcome: set by whichever upload came first
            and "_created{" not in line
        }

    before = uploads()
    bob.upload("linked.txt", SHARED)
    linked = uploads()
    bob.upload("own.txt", OWN)
    fresh = uploads()
    moved_by_link = {k for k in linked if linked[k] != before.get(k)}
    moved_by_new = {k for k in fresh if fresh[k] != linked.get(k)}
    assert moved_by_link == moved_by_new
    assert not any("dedup" in k or "created" in k.split("{")[-1] for k in fresh)


def test_bytes_from_another_user_s_folder_stream_the_stages_too(
    shelf: Shelf, client: TestClient, tmp_path: Path
) -> None:
    # a folder's document has no recorded run (sync indexed it): its stages are told
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    folder = tmp_path / "alice"
    folder.mkdir()
    (folder / "secret.txt").write_bytes(SHARED)
    shelf.add(folder, user_id=alice.user.id)
    linked = bob.upload("linked.txt", SHARED).json()["document_id"]
    own = bob.upload("own.txt", OWN).json()["document_id"]
    drain(shelf)
    told, ran = (_steps(_stages(bob, d)) for d in (linked, own))
    assert told == ran
    assert told[0] == "queued" and told[-1] == "complete" and "embedding" in told


def _steps(events: list[dict[str, str]]) -> list[str]:
    """The stages a stream went through, each once (a run reports embedding per batch)."""
    stages = [json.loads(e["data"])["stage"] for e in events]
    return [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]


@pytest.fixture
def shared(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Shelf, User, User]]:
    """A library on every store, with two users: (shelf, alice, bob)."""
    monkeypatch.setenv("DOCSHELF_DATABASE_URL", store_url)
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as shelf:
        yield shelf, shelf.create_user("alice")[0], shelf.create_user("bob")[0]


def test_a_path_filter_matches_only_the_caller_s_own_paths(
    shared: tuple[Shelf, User, User], tmp_path: Path
) -> None:
    # Bob holds Alice's bytes under his own name: a path filter must not let him probe
    # her folder's path or file name, one prefix at a time, in search or in the list.
    shelf, alice, bob = shared
    folder = tmp_path / "alice-secret"
    folder.mkdir()
    (folder / "merger-with-acme.md").write_bytes(SHARED)
    shelf.add(folder, user_id=alice.id)
    [doc] = shelf.documents()
    shelf.upload(bob.id, "linked.md", SHARED)
    drain(shelf)

    def found(user_id: str, prefix: str) -> tuple[set[str], set[str]]:
        filters = SearchFilters(path_prefix=prefix)
        hits = shelf.search("raft", mode="lexical", filters=filters, user_id=user_id).hits
        listed = shelf.documents(user_id=user_id, listing=Listing(filters=filters))
        return {h.chunk.document_id for h in hits}, {d.id for d in listed}

    theirs = (str(folder), f"{folder}/merger", "merger", "merger-with-acme.md")
    for prefix in theirs:
        assert found(bob.id, prefix) == (set(), set()), prefix
        assert found(alice.id, prefix) == ({doc.id}, {doc.id}), prefix
    assert found(bob.id, "linked") == ({doc.id}, {doc.id})
    assert found(alice.id, "linked") == (set(), set())


def test_another_user_s_folder_is_no_source_of_mine(
    shared: tuple[Shelf, User, User], tmp_path: Path
) -> None:
    # the source a document was first indexed from is not a fact of its bytes: Bob's
    # facets, source filter and record show only sources of his own
    shelf, alice, bob = shared
    mine, theirs = tmp_path / "bob", tmp_path / "alice"
    for folder in (mine, theirs):
        folder.mkdir()
    (theirs / "secret.md").write_bytes(SHARED)
    (mine / "own.md").write_bytes(OWN)
    shelf.add(theirs, user_id=alice.id)
    shelf.add(mine, user_id=bob.id)
    shelf.upload(bob.id, "linked.md", SHARED)
    drain(shelf)
    source_a, source_b = (s.id for s in sorted(shelf.sources(), key=lambda s: s.path))

    def facets(user_id: str) -> dict[str, int]:
        return shelf.facets(user_id=user_id).counts["source"]

    def found(user_id: str, source_id: str) -> int:
        filters = SearchFilters(source_id=source_id)
        return len(shelf.search("raft", mode="lexical", filters=filters, user_id=user_id).hits)

    assert facets(bob.id) == {source_b: 1}
    assert facets(alice.id) == {source_a: 1}
    assert (found(bob.id, source_a), found(alice.id, source_a)) == (0, 1)
