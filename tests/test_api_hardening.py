"""Hostile-test findings on the HTTP API (issue 17): shared bytes keep each user's own
name, integer parameters are bounded, long names keep their extension, unknown methods
are 405 with ``Allow``, and ``/docs`` loads nothing from elsewhere."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from docshelf.accounts.access import as_named, described
from docshelf.api import create_app
from docshelf.ingest.uploads import sanitize_filename
from docshelf.model import Document
from docshelf.parse import file_type_for
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.test_api import Api, drain, sse_events, sse_events_of

# No heading: the title comes from the file name, which must not travel to other users.
NOTE = ("plain words about raft consensus and leader election. " + FILLER + "\n\n").encode() * 3
SECRET = "alice-secret-plan"
MAX_NAME_CHARS = 200  # docshelf.ingest.uploads.MAX_NAME_CHARS, the documented bound


@pytest.fixture
def client(shelf: Shelf) -> Iterator[TestClient]:
    with TestClient(create_app(shelf)) as c:
        yield c


def _user(shelf: Shelf, client: TestClient, name: str) -> Api:
    user, token = shelf.create_user(name)
    return Api(client, token, user)


# -- item 3: identical bytes, each user's own name -------------------------------------------


@pytest.mark.parametrize("linked_while", ["complete", "queued"])
def test_shared_bytes_show_each_user_their_own_name(
    shelf: Shelf, client: TestClient, linked_while: str
) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    first = alice.upload(f"{SECRET}.txt", NOTE)
    doc_id = first.json()["document_id"]
    if linked_while == "complete":
        drain(shelf)
    second = bob.upload("bob-notes.txt", NOTE)
    drain(shelf)

    # the same answer as for new bytes: bob cannot tell that someone holds them
    assert (first.status_code, second.status_code) == (202, 202)
    assert second.json() == {**first.json(), "status": "queued"}

    seen = [
        bob.get(f"/v1/documents/{doc_id}"),
        bob.get("/v1/documents"),
        bob.request("POST", "/v1/search", json={"query": "raft consensus", "mode": "lexical"}),
        bob.request("POST", "/v1/ask", json={"question": "what about raft consensus?"}),
    ]
    for r in seen:
        assert r.status_code == 200, r.text
        assert SECRET not in r.text, r.request.url
    record = seen[0].json()
    assert record["title"] == "bob-notes"
    hits = seen[2].json()["hits"]
    assert hits and hits[0]["citation"]["title"] == "bob-notes"
    assert hits[0]["citation"]["label"].startswith("bob-notes (bob-notes.txt")
    context = bob.get(f"/v1/chunks/{hits[0]['chunk_id']}/context")
    assert SECRET not in context.text and "bob-notes.txt" in context.json()["citation"]["label"]
    blob = bob.get(f"/v1/documents/{doc_id}/blob")
    assert blob.content == NOTE
    assert blob.headers["content-disposition"].endswith("''bob-notes.txt")

    stage_events = sse_events(bob.get(f"/v1/documents/{doc_id}/events").text)
    lifecycle = sse_events_of(bob, "/v1/events")
    for events in (stage_events, lifecycle):
        assert events and not any(SECRET in json.dumps(e) for e in events)
    # only events from after bob's access began: his own queued, never alice's
    assert [e["event"] for e in lifecycle] == ["document.queued", "document.completed"]
    assert json.loads(stage_events[-1]["data"])["stage"] == "complete"

    # ... and alice still sees hers
    assert alice.get(f"/v1/documents/{doc_id}").json()["title"] == SECRET
    mine = alice.get(f"/v1/documents/{doc_id}/blob").headers["content-disposition"]
    assert mine.endswith(f"''{SECRET}.txt")
    assert "bob-notes" not in json.dumps(sse_events_of(alice, "/v1/events"))


def test_another_holder_s_name_is_neither_matched_nor_sorted_by(
    shelf: Shelf, client: TestClient
) -> None:
    # The attack: bob holds the same bytes and guesses alice's name a prefix at a time
    # (`?q=`), or reads its place in a sort by title or path. He finds only his own.
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    shared = alice.upload(f"{SECRET}.txt", NOTE).json()["document_id"]
    drain(shelf)
    bob.upload("m-notes.txt", NOTE)
    for name in ("b-list.txt", "z-list.txt"):
        bob.upload(name, f"{name}: {FILLER}\n".encode())
    drain(shelf)

    def titles(api: Api, **params: str) -> list[str]:
        return [d["title"] for d in api.get("/v1/documents", params=params).json()["documents"]]

    for guess in ("alice", "alice-sec", "secret-plan", "plan"):
        assert titles(bob, q=guess) == [], guess
        assert bob.get("/v1/documents", params={"q": guess}).json()["total"] == 0
    assert titles(bob, q="m-notes") == ["m-notes"]
    for sort in ("title", "path"):  # by his names: b-list < m-notes < z-list, not a… first
        assert titles(bob, sort=sort) == ["b-list", "m-notes", "z-list"], sort
    assert titles(alice, q="secret-plan") == [SECRET]
    assert [d["id"] for d in alice.get("/v1/documents").json()["documents"]] == [shared]


def test_bytes_in_another_user_s_folder_show_none_of_its_paths(
    shelf: Shelf, client: TestClient, tmp_path: Path
) -> None:
    alice, bob, carol = (_user(shelf, client, n) for n in ("alice", "bob", "carol"))
    hers, his = tmp_path / SECRET, tmp_path / "carols-notes"
    hers.mkdir()
    his.mkdir()
    (hers / "plan.md").write_bytes(b"# Raft\n\n" + NOTE)
    (his / "copy.md").write_bytes(b"# Raft\n\n" + NOTE)
    shelf.add(hers, user_id=alice.user.id)
    shelf.add(his, user_id=carol.user.id)  # the same bytes in carol's own folder
    [doc] = shelf.documents()
    bob.upload("mine.md", b"# Raft\n\n" + NOTE)
    drain(shelf)

    seen = [
        bob.get(f"/v1/documents/{doc.id}"),
        bob.get("/v1/documents"),
        bob.request("POST", "/v1/search", json={"query": "raft consensus", "mode": "lexical"}),
        bob.get(f"/v1/documents/{doc.id}/events"),
    ]
    for r in seen:
        assert r.status_code == 200, r.text
        assert SECRET not in r.text and "carols-notes" not in r.text, r.request.url
    record = seen[0].json()
    assert record["files"] == [] and record["source_id"] is None
    assert record["path"].startswith("upload://")
    hit = seen[2].json()["hits"][0]
    assert hit["citation"]["path"].startswith("upload://")

    # carol is cited at her own copy, and told of no file but hers
    record = carol.get(f"/v1/documents/{doc.id}").json()
    assert record["path"] == str(his / "copy.md") and record["files"] == [str(his / "copy.md")]
    search = carol.request("POST", "/v1/search", json={"query": "raft", "mode": "lexical"})
    assert search.json()["hits"][0]["citation"]["path"] == str(his / "copy.md")
    assert SECRET not in search.text
    # and alice at hers
    assert alice.get(f"/v1/documents/{doc.id}").json()["files"] == [str(hers / "plan.md")]


def test_a_title_from_the_content_is_shared(shelf: Shelf, client: TestClient) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    data = b"# Raft\n\n" + NOTE
    doc_id = alice.upload(f"{SECRET}.md", data).json()["document_id"]
    drain(shelf)
    bob.upload("mine.md", data)
    record = bob.get(f"/v1/documents/{doc_id}").json()
    assert record["title"] == "Raft"
    assert SECRET not in json.dumps(record)


def test_a_removal_event_names_the_remover_s_own_file(shelf: Shelf, client: TestClient) -> None:
    alice, bob = _user(shelf, client, "alice"), _user(shelf, client, "bob")
    doc_id = alice.upload(f"{SECRET}.txt", NOTE).json()["document_id"]
    drain(shelf)
    bob.upload("bob-notes.txt", NOTE)
    assert bob.request("DELETE", f"/v1/documents/{doc_id}").json()["removed"] is False
    removed = [e for e in sse_events_of(bob, "/v1/events") if e["event"] == "document.removed"]
    assert [json.loads(e["data"])["message"] for e in removed] == ["bob-notes.txt"]


def _doc(title: str, rel_path: str, path: str, source_id: str | None = None) -> Document:
    return Document("doc_1", "ab" * 32, title, path, rel_path, source_id, "h", "text", 1, 0, 0)


def test_what_an_llm_is_told_of_an_upload_names_no_uploader() -> None:
    upload = f"upload://{'ab' * 32}"
    named_after_file = described(_doc(SECRET, f"{SECRET}.txt", upload))
    assert SECRET not in named_after_file and "text" in named_after_file
    titled = described(_doc("Raft", f"{SECRET}.md", upload))
    assert "Raft" in titled and SECRET not in titled
    source = described(_doc("Raft", "notes/raft.md", "/lib/notes/raft.md", "src_1"))
    assert "notes/raft.md" in source  # a folder's paths are its owner's own


def test_as_named_is_the_shared_record_under_a_user_s_name() -> None:
    doc = _doc(SECRET, f"{SECRET}.txt", "upload://x")
    mine = as_named(doc, "mine.txt")
    assert (mine.title, mine.rel_path, mine.id) == ("mine", "mine.txt", doc.id)
    assert as_named(doc, None) is doc
    titled = as_named(dataclasses.replace(doc, title="Raft"), "mine.txt")
    assert titled.title == "Raft"


# -- item 8: bounded integers -------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/v1/documents?offset=9223372036854775808",
        "/v1/documents?offset=-1",
        "/v1/documents?limit=9223372036854775808",
        "/v1/distillates?q=x&limit=99999999999999999999",
        "/v1/chunks/chunk_x_0/context?window=9223372036854775808",
    ],
)
def test_huge_integers_are_400_never_500(shelf: Shelf, client: TestClient, url: str) -> None:
    alice = _user(shelf, client, "alice")
    r = alice.get(url)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_input"


def test_a_huge_last_event_id_is_400(shelf: Shelf, client: TestClient) -> None:
    alice = _user(shelf, client, "alice")
    doc_id = alice.upload("raft.md", NOTE).json()["document_id"]
    for url in (f"/v1/documents/{doc_id}/events", "/v1/events"):
        r = alice.get(url, headers={"Last-Event-ID": "9223372036854775808"})
        assert r.status_code == 400, r.text


# -- item 10: long names keep their extension -------------------------------------------------


def test_a_long_upload_name_keeps_its_extension(shelf: Shelf, client: TestClient) -> None:
    alice = _user(shelf, client, "alice")
    r = alice.upload("n" * 300 + ".md", b"# Long\n\nsome text\n")
    assert r.status_code == 202, r.text
    doc = shelf.store.get_document(r.json()["document_id"])
    assert doc is not None and doc.file_type == "markdown"
    assert doc.rel_path == "n" * (MAX_NAME_CHARS - 3) + ".md"


STEMS = st.one_of(st.text(min_size=1, max_size=60), st.text("ab é_-", min_size=190, max_size=400))


@given(STEMS, st.sampled_from(["md", "txt", "pdf", "docx"]))
def test_sanitized_names_are_bounded_and_keep_the_type(stem: str, ext: str) -> None:
    name = sanitize_filename(f"{stem}.{ext}")
    assert 0 < len(name) <= MAX_NAME_CHARS
    assert "/" not in name and "\\" not in name
    clean_stem = sanitize_filename(stem)
    if clean_stem != "upload" and "." not in stem and "/" not in stem and "\\" not in stem:
        assert file_type_for(name) == file_type_for(f"x.{ext}")


# -- item 12: the API says what it does ------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "allow"),
    [
        ("TRACE", "/v1/documents", "GET, POST"),
        ("PATCH", "/v1/search", "POST"),
        ("TRACE", "/healthz", "GET"),
        ("PUT", "/v1/documents/doc_x", "DELETE, GET"),
    ],
)
def test_a_method_the_path_does_not_take_is_405_with_allow(
    shelf: Shelf, client: TestClient, method: str, url: str, allow: str
) -> None:
    alice = _user(shelf, client, "alice")
    r = alice.request(method, url)
    assert r.status_code == 405
    assert r.headers["allow"] == allow
    assert r.json()["error"]["code"] == "method_not_allowed"


def test_schema_valid_requests_are_accepted(shelf: Shelf, client: TestClient) -> None:
    alice = _user(shelf, client, "alice")
    r = alice.get("/v1/distillates?limit=20")
    assert r.status_code == 200, r.text
    assert r.json()["distillates"] == [] and "notice" in r.json()
    assert alice.get("/v1/distillates?q=%20%20").status_code == 200


def test_constraints_are_in_the_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    search = spec["components"]["schemas"]["SearchRequest"]["properties"]
    assert search["query"]["minLength"] == 1 and "pattern" in search["query"]
    assert search["mode"]["enum"] == ["hybrid", "lexical", "vector"]
    offset = next(
        p for p in spec["paths"]["/v1/documents"]["get"]["parameters"] if p["name"] == "offset"
    )
    assert offset["schema"]["maximum"] == 1_000_000_000
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            statuses = set(operation["responses"])
            assert "422" not in statuses, (method, path)  # the API answers 400, never 422
            if path.startswith("/v1/"):
                assert {"400", "401", "503"} <= statuses, (method, path)
                body = operation["responses"]["401"]["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/ErrorBody"}
    upload = spec["paths"]["/v1/documents"]["post"]["responses"]
    assert {"202", "413", "415", "507"} <= set(upload) and "200" not in upload


def test_an_unknown_query_parameter_is_400(shelf: Shelf, client: TestClient) -> None:
    alice = _user(shelf, client, "alice")
    r = alice.get("/v1/documents?limt=5")
    assert r.status_code == 400
    assert "limt" in r.json()["error"]["message"]
