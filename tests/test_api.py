"""The HTTP API in process: uploads, dedup, access control, hostile input, retry."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app
from docshelf.ingest.worker import Worker, WorkerSettings
from docshelf.model import Tier, User
from docshelf.shelf import Shelf
from tests.conftest import FILLER
from tests.fakes import HashEmbedder
from tests.fixtures_formats import encrypted_pdf

RAFT = (
    "# Raft\n\nRaft is a consensus algorithm for managing a replicated log. " + FILLER + "\n\n"
    "## Leader election\n\nA follower that hears no heartbeat becomes a candidate. " + FILLER + "\n"
).encode()
BOUNDARY = "docshelf-test-boundary"
# Starlette's TestClient answers with httpx2's or httpx's Response, whichever is installed.
Response = Any


def multipart(
    filename: bytes | None, data: bytes, *, field: bytes = b"file", closed: bool = True
) -> tuple[bytes, dict[str, str]]:
    """A multipart body built by hand, so names and framing can be anything."""
    disposition = b'form-data; name="' + field + b'"'
    if filename is not None:
        disposition += b'; filename="' + filename + b'"'
    body = b"--" + BOUNDARY.encode() + b"\r\nContent-Disposition: " + disposition + b"\r\n"
    body += b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
    if closed:
        body += b"--" + BOUNDARY.encode() + b"--\r\n"
    return body, {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


def drain(shelf: Shelf) -> int:
    """Run due jobs to the end in this thread; returns how many were claimed."""
    worker = Worker(shelf, WorkerSettings(poll_seconds=0.01, backoff_base=0.01))
    n = 0
    while worker.run_once():
        n += 1
    return n


class Api:
    """A test client for one user."""

    def __init__(self, client: TestClient, token: str, user: User) -> None:
        self.client = client
        self.user = user
        self.headers = {"Authorization": f"Bearer {token}"}

    def request(self, method: str, url: str, **kw: Any) -> Response:
        headers = {**self.headers, **kw.pop("headers", {})}
        return self.client.request(method, url, headers=headers, **kw)

    def upload(self, name: str | bytes, data: bytes) -> Response:
        body, headers = multipart(name.encode() if isinstance(name, str) else name, data)
        return self.request("POST", "/v1/documents", content=body, headers=headers)

    def get(self, url: str, **kw: Any) -> Response:
        return self.request("GET", url, **kw)


@pytest.fixture
def client(shelf: Shelf) -> Iterator[TestClient]:
    with TestClient(create_app(shelf)) as c:
        yield c


def _user(shelf: Shelf, client: TestClient, name: str) -> Api:
    user, token = shelf.create_user(name)
    return Api(client, token, user)


@pytest.fixture
def alice(shelf: Shelf, client: TestClient) -> Api:
    return _user(shelf, client, "alice")


@pytest.fixture
def bob(shelf: Shelf, client: TestClient) -> Api:
    return _user(shelf, client, "bob")


def sse_events(text: str) -> list[dict[str, str]]:
    """Parse an SSE body into its events (comments dropped)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                key, _, value = line.partition(":")
                fields[key] = value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


# -- the happy path and dedup ---------------------------------------------------------


def test_upload_then_worker_then_searchable_with_citation(shelf: Shelf, alice: Api) -> None:
    r = alice.upload("raft.md", RAFT)
    assert r.status_code == 202
    body = r.json()
    assert set(body) == {"document_id", "status", "fingerprint", "already_in_library"}
    assert body["already_in_library"] is False
    assert body["status"] == "queued"
    assert alice.get(f"/v1/documents/{body['document_id']}").json()["job"]["status"] == "queued"
    assert drain(shelf) == 1

    doc = alice.get(f"/v1/documents/{body['document_id']}").json()
    assert doc["status"] == "complete"
    assert doc["sha256"] == body["fingerprint"]
    assert doc["job"] == doc["job"] | {"stage": "complete", "status": "complete", "attempts": 0}
    assert doc["sections"]
    listed = alice.get("/v1/documents").json()["documents"]
    assert [d["id"] for d in listed] == [body["document_id"]]

    hits = alice.request("POST", "/v1/search", json={"query": "leader election"}).json()["hits"]
    assert hits[0]["document_id"] == body["document_id"]
    assert hits[0]["citation"]["label"].startswith("Raft (raft.md#")
    ctx = alice.get(f"/v1/chunks/{hits[0]['chunk_id']}/context", params={"mode": "parent-section"})
    assert ctx.status_code == 200
    assert hits[0]["chunk_id"] in [c["chunk_id"] for c in ctx.json()["chunks"]]  # its heading's
    assert ctx.json()["display"]["hit"] == hits[0]["display_text"]
    assert alice.get(f"/v1/documents/{body['document_id']}/blob").content == RAFT

    events = sse_events(alice.get(f"/v1/documents/{body['document_id']}/events").text)
    stages = [json.loads(e["data"])["stage"] for e in events]
    assert stages[0] == "queued" and stages[-1] == "complete"
    assert all(e["event"] == "stage" for e in events)


def test_same_user_same_bytes_is_the_same_document(shelf: Shelf, alice: Api) -> None:
    first = alice.upload("raft.md", RAFT)
    again = alice.upload("raft.md", RAFT)
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json()["document_id"] == first.json()["document_id"]
    assert (first.json()["already_in_library"], again.json()["already_in_library"]) == (False, True)
    assert drain(shelf) == 1
    after = alice.upload("copy-of-raft.md", RAFT)
    assert after.status_code == 202
    assert after.json() == {**first.json(), "status": "complete", "already_in_library": True}
    assert drain(shelf) == 0
    doc_id = first.json()["document_id"]
    assert shelf.store.job_counts() == {"complete": 1}
    assert len(shelf.documents()) == 1
    snippets = shelf.store.chunks_of_document(doc_id, Tier.SNIPPET)
    assert len({c.id for c in snippets}) == len(snippets) > 0


def test_second_user_same_bytes_is_a_dedup_hit(
    shelf: Shelf, alice: Api, bob: Api, embedder: HashEmbedder
) -> None:
    doc_id = alice.upload("raft.md", RAFT).json()["document_id"]
    drain(shelf)
    embedded = len(embedder.embedded)
    assert alice.get(f"/v1/documents/{doc_id}").status_code == 200
    assert bob.get(f"/v1/documents/{doc_id}").status_code == 404

    r = bob.upload("bobs-raft.md", RAFT)
    assert r.status_code == 202  # as for new bytes: no one learns what others hold
    assert r.json()["document_id"] == doc_id
    assert r.json()["status"] == "queued"
    assert r.json()["already_in_library"] is False  # bob had not, whoever else has
    assert drain(shelf) == 0
    assert len(embedder.embedded) == embedded  # nothing parsed or embedded again
    assert shelf.store.job_counts() == {"complete": 1}
    assert bob.get(f"/v1/documents/{doc_id}").json()["status"] == "complete"
    hits = bob.request("POST", "/v1/search", json={"query": "leader election"}).json()["hits"]
    assert hits and hits[0]["document_id"] == doc_id


def test_delete_keeps_data_for_the_other_user_until_the_last(
    shelf: Shelf, alice: Api, bob: Api
) -> None:
    doc_id = alice.upload("raft.md", RAFT).json()["document_id"]
    drain(shelf)
    bob.upload("raft.md", RAFT)
    sha = shelf.store.get_document(doc_id).sha256  # type: ignore[union-attr]

    r = alice.request("DELETE", f"/v1/documents/{doc_id}")
    assert r.json() == {"document_id": doc_id, "removed": False}
    assert alice.get(f"/v1/documents/{doc_id}").status_code == 404
    assert alice.request("POST", "/v1/search", json={"query": "raft"}).json()["hits"] == []
    assert bob.get(f"/v1/documents/{doc_id}").status_code == 200
    assert bob.get(f"/v1/documents/{doc_id}/blob").content == RAFT

    assert bob.request("DELETE", f"/v1/documents/{doc_id}").json()["removed"] is True
    assert bob.get(f"/v1/documents/{doc_id}").status_code == 404
    assert shelf.store.get_document(doc_id) is None
    assert shelf.store.chunks_of_document(doc_id, Tier.SNIPPET) == []
    assert not shelf.blobs.exists(sha)
    kinds = [e["event"] for e in sse_events_of(bob, "/v1/events")]
    assert "document.removed" in kinds


def asgi(
    app: Any,
    method: str,
    path: str,
    headers: dict[str, str],
    *,
    body_chunks: Iterator[bytes] = iter(()),
    seconds: float = 0.5,
) -> tuple[int, bytes, int]:
    """Call the ASGI app directly: (status, body, request chunks read). The client
    disconnects after ``seconds``, which ends a stream that never ends by itself."""
    status = 0
    body = bytearray()
    reads = 0

    async def run() -> None:
        disconnected = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal reads
            chunk = next(body_chunks, None)
            if chunk is not None:
                reads += 1
                return {"type": "http.request", "body": chunk, "more_body": True}
            if reads == 0:
                reads = -1  # an empty body, once
                return {"type": "http.request", "body": b"", "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))

        loop = asyncio.get_running_loop()
        loop.call_later(seconds, disconnected.set)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "server": ("testserver", 80),
            "client": ("testclient", 1),
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        }
        await app(scope, receive, send)

    asyncio.run(run())
    return status, bytes(body), max(reads, 0)


def sse_events_of(api: Api, url: str) -> list[dict[str, str]]:
    """The events a never-ending SSE stream sent in half a second."""
    status, body, _ = asgi(api.client.app, "GET", url, api.headers)
    assert status == 200
    return sse_events(body.decode())


# -- retry and failed jobs ---------------------------------------------------------------


def test_failed_job_keeps_its_reason_and_can_be_retried(
    shelf: Shelf, alice: Api, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failure of the moment (the embedding service away) can succeed on a retry; what
    # the bytes decide (not UTF-8, a truncated or an encrypted PDF) never can, and is
    # refused one.
    never = alice.upload("broken.md", b"# Broken\n\nnot \xff\xfe utf-8\n").json()["document_id"]
    locked = alice.upload("locked.pdf", encrypted_pdf()).json()["document_id"]
    cut = alice.upload("cut.pdf", encrypted_pdf()[:300]).json()["document_id"]
    good = alice.upload("raft.md", RAFT).json()["document_id"]
    assert drain(shelf) == 4  # the worker kept going after the failures

    def unavailable(texts: object) -> object:
        raise ConnectionError("the embedding service is unavailable")

    monkeypatch.setattr(embedder, "embed", unavailable)
    flaky = alice.upload("minutes.md", b"# Minutes\n\nWe met and agreed. " + FILLER.encode())
    away = flaky.json()["document_id"]
    for _ in range(2000):  # each attempt, after its backoff
        if shelf.job(away).status == "failed":
            break
        drain(shelf)
        time.sleep(0.005)
    monkeypatch.undo()

    failed = alice.get(f"/v1/documents/{away}").json()
    assert failed["status"] == "failed"
    assert failed["job"]["status"] == "failed" and failed["job"]["retryable"] is True
    assert "embedding service is unavailable" in failed["job"]["last_error"]
    assert alice.get(f"/v1/documents/{good}").json()["status"] == "complete"
    for doc, reason in ((never, "UTF-8"), (locked, "encrypted"), (cut, "truncated PDF")):
        job = alice.get(f"/v1/documents/{doc}").json()["job"]
        assert job["retryable"] is False and reason in job["last_error"], job
        for_good = alice.request("POST", f"/v1/documents/{doc}/retry")
        assert for_good.status_code == 409 and reason in for_good.json()["error"]["message"]

    not_failed = alice.request("POST", f"/v1/documents/{good}/retry")
    assert not_failed.status_code == 409
    assert not_failed.json()["error"]["code"] == "conflict"
    r = alice.request("POST", f"/v1/documents/{away}/retry")
    assert r.status_code == 202
    assert r.json()["status"] == "queued"
    assert r.json()["last_error"] is None
    assert drain(shelf) == 1
    assert alice.get(f"/v1/documents/{away}").json()["job"]["status"] == "complete"

    events = sse_events(alice.get(f"/v1/documents/{away}/events").text)
    stages = [json.loads(e["data"])["stage"] for e in events]
    assert stages.count("failed") == 1 and stages[-1] == "complete"


# -- access control ----------------------------------------------------------------------


def _ids(shelf: Shelf, api: Api) -> tuple[str, str]:
    doc_id = api.upload("raft.md", RAFT).json()["document_id"]
    drain(shelf)
    return doc_id, shelf.store.chunks_of_document(doc_id, Tier.SNIPPET)[0].id


ID_ENDPOINTS = [
    ("GET", "/v1/documents/{doc}"),
    ("GET", "/v1/documents/{doc}/blob"),
    ("GET", "/v1/documents/{doc}/events"),
    ("GET", "/v1/documents/{doc}/view"),
    ("GET", "/v1/documents/{doc}/view?chunk={chunk}"),
    ("GET", "/v1/documents/{doc}/pages/1"),
    ("POST", "/v1/documents/{doc}/retry"),
    ("GET", "/v1/chunks/{chunk}/context"),
    ("GET", "/v1/chunks/{chunk}/view"),
    ("DELETE", "/v1/documents/{doc}"),  # last: a wrongly allowed delete would show below
]


def test_another_users_ids_are_answered_like_unknown_ones(
    shelf: Shelf, alice: Api, bob: Api, tmp_path: Path
) -> None:
    doc_id, chunk_id = _ids(shelf, alice)
    folder = tmp_path / "alice-notes"
    folder.mkdir()
    (folder / "private.md").write_text("# Private\n\nAlice's own secret sourdough notes.\n")
    shelf.add(folder, user_id=alice.user.id)
    unknown_doc, unknown_chunk = "doc_0123456789abcdef", "chunk_0123456789ab_0"
    for method, template in ID_ENDPOINTS:
        theirs = bob.request(method, template.format(doc=doc_id, chunk=chunk_id))
        unknown = bob.request(method, template.format(doc=unknown_doc, chunk=unknown_chunk))
        assert theirs.status_code == unknown.status_code == 404, template
        assert theirs.headers["content-type"] == unknown.headers["content-type"]
        mine = theirs.text.replace(doc_id, "ID").replace(chunk_id, "ID")
        assert mine == unknown.text.replace(unknown_doc, "ID").replace(unknown_chunk, "ID")
    # Nothing of alice's shows in bob's listings, search or events, and nothing changed.
    assert bob.get("/v1/documents").json()["documents"] == []
    assert bob.get("/v1/sources").json()["sources"] == []
    for query in ("leader election", "sourdough"):
        assert bob.request("POST", "/v1/search", json={"query": query}).json()["hits"] == []
    assert sse_events_of(bob, "/v1/events") == []
    assert [s["user_id"] for s in alice.get("/v1/sources").json()["sources"]] == [alice.user.id]
    docs = alice.get("/v1/documents").json()["documents"]
    assert len(docs) == 2
    (from_folder,) = [d["id"] for d in docs if d["id"] != doc_id]
    assert alice.get(f"/v1/documents/{from_folder}").json()["job"] is None
    # A folder document downloads from its file (while the file holds the same bytes).
    download = alice.get(f"/v1/documents/{from_folder}/blob")
    assert download.status_code == 200
    assert download.content == (folder / "private.md").read_bytes()
    events = alice.get(f"/v1/documents/{from_folder}/events")  # no stages: ends at once
    assert events.status_code == 200 and sse_events(events.text) == []
    assert alice.get(f"/v1/documents/{doc_id}").json()["status"] == "complete"


ALL_ENDPOINTS = [
    ("POST", "/v1/documents"),
    ("GET", "/v1/documents"),
    ("GET", "/v1/documents/{doc}"),
    ("DELETE", "/v1/documents/{doc}"),
    ("GET", "/v1/documents/{doc}/blob"),
    ("GET", "/v1/documents/{doc}/events"),
    ("GET", "/v1/documents/{doc}/view"),
    ("GET", "/v1/documents/{doc}/pages/{page}"),
    ("POST", "/v1/documents/{doc}/retry"),
    ("POST", "/v1/documents/{doc}/enrich"),
    ("POST", "/v1/enrich"),
    ("GET", "/v1/distillates"),
    ("POST", "/v1/reindex"),
    ("GET", "/v1/reindex"),
    ("GET", "/v1/events"),
    ("POST", "/v1/search"),
    ("POST", "/v1/ask"),
    ("GET", "/v1/chunks/{chunk}/context"),
    ("GET", "/v1/chunks/{chunk}/view"),
    ("GET", "/v1/sources"),
    ("GET", "/v1/failures"),
    ("GET", "/v1/facets"),
    ("GET", "/v1/notebooks"),
    ("POST", "/v1/notebooks"),
    ("GET", "/v1/notebooks/{notebook}"),
    ("PATCH", "/v1/notebooks/{notebook}"),
    ("DELETE", "/v1/notebooks/{notebook}"),
    ("PUT", "/v1/notebooks/{notebook}/readers"),
    ("DELETE", "/v1/notebooks/{notebook}/readers/{reader}"),
]


def test_every_v1_route_requires_a_bearer_token(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    operations = {
        (method.upper(), path): op for path, ops in paths.items() for method, op in ops.items()
    }
    v1 = {key for key in operations if key[1].startswith("/v1")}
    assert v1 == {
        (m, p.replace("{doc}", "{document_id}").replace("{chunk}", "{chunk_id}"))
        for m, p in ALL_ENDPOINTS
    }
    for key in v1 | {("GET", "/metrics")}:
        assert operations[key].get("security") == [{"HTTPBearer": []}], key
    for key in operations.keys() - v1 - {("GET", "/metrics")}:
        assert "security" not in operations[key], key


@pytest.mark.parametrize("credentials", ["none", "wrong", "revoked", "not-bearer"])
def test_no_wrong_or_revoked_token_is_401(
    shelf: Shelf, alice: Api, client: TestClient, credentials: str
) -> None:
    doc_id, chunk_id = _ids(shelf, alice)
    headers = {
        "none": {},
        "wrong": {"Authorization": "Bearer dsk_not-a-token"},
        "revoked": alice.headers,
        "not-bearer": {"Authorization": alice.headers["Authorization"].replace("Bearer", "Basic")},
    }[credentials]
    if credentials == "revoked":
        shelf.revoke_user("alice")
    body, multipart_headers = multipart(b"raft.md", RAFT)
    for method, template in ALL_ENDPOINTS:
        r = client.request(
            method,
            template.format(doc=doc_id, chunk=chunk_id, page=1, notebook="nb_x", reader="usr_x"),
            headers={**headers, **multipart_headers},
            content=body if method == "POST" else None,
        )
        assert r.status_code == 401, (method, template)
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"]["code"] == "unauthorized"
    for open_path in ("/healthz", "/readyz", "/", "/docs", "/openapi.json"):
        assert client.get(open_path).status_code == 200, open_path
    assert shelf.store.get_document(doc_id) is not None


@pytest.mark.parametrize(
    ("caller", "status"),
    [("none", 401), ("wrong", 401), ("user", 403), ("admin", 200), ("metrics-token", 200)],
)
def test_metrics_are_for_operators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caller: str, status: int
) -> None:
    # the pipeline's counters move with each document processed: open to every user, they
    # would tell whether an upload's bytes were already in someone's library
    monkeypatch.setenv("DOCSHELF_METRICS_TOKEN", "scrape-me")
    with Shelf(tmp_path / "home", embedder=HashEmbedder()) as operated:
        token = {
            "none": None,
            "wrong": "scrape-me-not",
            "user": operated.create_user("alice")[1],
            "admin": operated.create_user("root", admin=True)[1],
            "metrics-token": "scrape-me",
        }[caller]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with TestClient(create_app(operated)) as client:
            r = client.get("/metrics", headers=headers)
    assert r.status_code == status, r.text
    assert ("# HELP" in r.text) == (status == 200)


# -- hostile uploads ----------------------------------------------------------------------


def _leftovers(shelf: Shelf) -> list[Path]:
    tmp = shelf.settings.home / "blobs" / "tmp"
    return list(tmp.iterdir()) if tmp.exists() else []


def test_empty_missing_and_malformed_uploads_are_400(shelf: Shelf, alice: Api) -> None:
    def post(body: bytes, headers: dict[str, str]) -> Response:
        return alice.request("POST", "/v1/documents", content=body, headers=headers)

    empty = alice.upload("empty.md", b"")
    assert empty.status_code == 400
    assert empty.json()["error"] == {"code": "invalid_input", "message": "empty file"}
    assert post(*multipart(b"raft.md", RAFT, field=b"other")).status_code == 400
    assert post(*multipart(None, RAFT)).status_code == 400  # no filename
    assert post(*multipart(b"raft.md", RAFT, closed=False)).status_code == 400  # truncated
    garbage = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    assert post(b"this is not multipart at all", garbage).status_code == 400
    assert post(b"--" + BOUNDARY.encode() + b"\r\nNo colon\r\n\r\n", garbage).status_code == 400
    assert post(RAFT, {"Content-Type": "text/markdown"}).status_code == 400
    assert post(RAFT, {"Content-Type": "multipart/form-data"}).status_code == 400  # no boundary
    one, headers = multipart(b"a.md", b"# A\n\none\n")
    two = one.removesuffix(b"--" + BOUNDARY.encode() + b"--\r\n") + multipart(b"b.md", b"b")[0]
    r = post(two, headers)
    assert r.status_code == 400 and "one `file`" in r.json()["error"]["message"]
    assert alice.get("/v1/documents").json()["documents"] == []
    assert _leftovers(shelf) == []


def test_client_gone_mid_upload_leaves_nothing(shelf: Shelf, alice: Api) -> None:
    body, headers = multipart(b"raft.md", RAFT * 20, closed=False)
    chunks = iter([body[:4096], body[4096:8192]])  # then the client disconnects
    status, _, reads = asgi(
        alice.client.app, "POST", "/v1/documents", {**alice.headers, **headers}, body_chunks=chunks
    )
    assert reads == 2
    assert status == 400  # (nobody is listening any more)
    assert _leftovers(shelf) == []
    assert shelf.documents() == []


def test_bad_last_event_id_is_400(shelf: Shelf, alice: Api) -> None:
    doc_id = alice.upload("raft.md", RAFT).json()["document_id"]
    for bad in ("abc", "-3"):
        r = alice.get(f"/v1/documents/{doc_id}/events", headers={"Last-Event-ID": bad})
        assert r.status_code == 400
        assert r.json()["error"]["code"] == "invalid_input"


def test_unsupported_type_is_415_naming_the_supported_types(shelf: Shelf, alice: Api) -> None:
    r = alice.upload("slides.pptx", b"PK\x03\x04 not really")
    assert r.status_code == 415
    assert r.json()["error"]["code"] == "unsupported_type"
    for ext in (".md", ".txt"):
        assert ext in r.json()["error"]["message"]
    assert alice.upload("noextension", b"hello").status_code == 415
    assert _leftovers(shelf) == []
    assert not (shelf.settings.home / "blobs").exists() or not any(
        p.is_file() for p in (shelf.settings.home / "blobs").rglob("*")
    )


def test_over_limit_upload_is_413(
    monkeypatch: pytest.MonkeyPatch, isolated_home: Path, embedder: HashEmbedder
) -> None:
    monkeypatch.setenv("DOCSHELF_MAX_UPLOAD_MB", "0.01")  # about 10 KB
    with Shelf(isolated_home, embedder=embedder) as shelf, TestClient(create_app(shelf)) as c:
        api = _user(shelf, c, "alice")
        assert api.upload("small.md", b"# Small\n\nfits\n").status_code == 202
        big = b"# Big\n\n" + b"word " * 4000  # 20 KB: over the limit, under the framing slack
        r = api.upload("big.md", big)
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "too_large"
        assert "upload limit" in r.json()["error"]["message"]
        assert _leftovers(shelf) == []
        assert len(shelf.documents()) == 1

        # A declared Content-Length over the limit is refused before the body is read.
        headers = {
            **api.headers,
            "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
            "Content-Length": str(10 * 2**20),
        }
        chunks = iter([b"x" * 1024] * 10)
        status, body, reads = asgi(c.app, "POST", "/v1/documents", headers, body_chunks=chunks)
        assert status == 413
        assert json.loads(body)["error"]["code"] == "too_large"
        assert reads == 0


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        (b"../../etc/passwd.md", "passwd.md"),
        (b"a/b\\c.md", "c.md"),
        (b"..\\..\\windows\\evil.md", "evil.md"),
        (b"bad\x00name.md", "badname.md"),
        (b"ctl\x01\x1b[31m\x7f.md", "ctl[31m.md"),
        (b"/abs/.hidden.md", "hidden.md"),
    ],
)
def test_hostile_filenames_are_sanitised_never_paths(
    shelf: Shelf, alice: Api, tmp_path: Path, name: bytes, stored: str
) -> None:
    before = {p for p in tmp_path.rglob("*") if p.is_file()}
    data = b"# Notes\n\nsome text for " + name.replace(b"\x00", b"") + b"\n"
    r = alice.upload(name, data)
    assert r.status_code == 202, r.text
    doc = shelf.store.get_document(r.json()["document_id"])
    assert doc is not None and doc.rel_path == stored
    drain(shelf)
    blob = alice.get(f"/v1/documents/{doc.id}/blob")
    assert blob.headers["content-disposition"].endswith("''" + stored.replace("[", "%5B"))
    blobs = shelf.settings.home / "blobs"
    new = {p for p in tmp_path.rglob("*") if p.is_file()} - before
    assert new, "the blob was written"
    for path in new:
        assert path.is_relative_to(blobs) or path.parent == shelf.settings.home, path


def test_hundred_identical_uploads_at_once_make_one_document(
    shelf: Shelf, embedder: HashEmbedder
) -> None:
    _, token = shelf.create_user("alice")
    app = create_app(shelf)
    body, headers = multipart(b"raft.md", RAFT)
    headers["Authorization"] = f"Bearer {token}"

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await asyncio.gather(
                *(c.post("/v1/documents", content=body, headers=headers) for _ in range(100))
            )

    responses = asyncio.run(burst())
    codes = sorted(r.status_code for r in responses)
    assert codes == [202] * 100
    assert len({r.json()["document_id"] for r in responses}) == 1
    assert drain(shelf) == 1
    doc_id = responses[0].json()["document_id"]
    assert len(shelf.documents()) == 1
    assert shelf.store.job_counts() == {"complete": 1}
    snippets = shelf.store.chunks_of_document(doc_id, Tier.SNIPPET)
    assert len(embedder.embedded) == len(snippets) > 0  # one set of chunks, embedded once
    assert shelf.check() == []
    assert _leftovers(shelf) == []


# -- search, health ----------------------------------------------------------------------

HOSTILE_QUERIES = [
    '"',
    "'; DROP TABLE chunks; --",
    "NEAR(raft leader)",
    "raft AND OR NOT",
    "title:raft*",
    "^$%&()[]{}<>?!",
    "raft\x00leader",
    "émigré 東京 🚀",
    "x" * 5000,
    "- -- + ++ * **",
]


def test_hostile_queries_answer_200(shelf: Shelf, alice: Api) -> None:
    alice.upload("raft.md", RAFT)
    drain(shelf)
    for query in HOSTILE_QUERIES:
        for mode in ("hybrid", "lexical", "vector"):
            r = alice.request("POST", "/v1/search", json={"query": query, "mode": mode})
            assert r.status_code == 200, (query, mode, r.text)
    filtered = {"query": "raft", "filters": {"type": "markdown", "tag": ["#x"], "path": "%_"}}
    assert alice.request("POST", "/v1/search", json=filtered).status_code == 200
    for bad in ({"query": "   "}, {"query": "raft", "mode": "fuzzy"}, {"query": "x", "limit": 0}):
        r = alice.request("POST", "/v1/search", json=bad)
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == "invalid_input"


def test_readyz_follows_the_worker_pool(shelf: Shelf) -> None:
    app = create_app(shelf, workers=1, worker_settings=WorkerSettings(poll_seconds=0.02))
    outside = TestClient(app)  # no lifespan: the pool never started
    r = outside.get("/readyz")
    assert r.status_code == 503
    assert "workers" in r.json()["problems"][0]
    with TestClient(app) as c:
        assert c.get("/readyz").json() == {"status": "ready"}
        assert c.get("/healthz").json() == {"status": "ok"}
        page = c.get("/")
        assert "text/html" in page.headers["content-type"] and 'href="/docs"' in page.text
    assert outside.get("/readyz").status_code == 503  # stopped on shutdown


def test_serve_makes_the_query_model_ready_at_start_without_waiting_for_it(
    shelf: Shelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lean export (Runtime.prepare_query_model) is made beside the first requests:
    the app answers while it runs."""
    import threading

    started, release = threading.Event(), threading.Event()

    def prepare() -> bool:
        started.set()
        release.wait(10)
        return True

    monkeypatch.setattr(shelf.runtime, "prepare_query_model", prepare)
    try:
        with TestClient(create_app(shelf)) as client:
            assert started.wait(5)
            assert client.get("/healthz").status_code == 200  # not held by it
    finally:
        release.set()
