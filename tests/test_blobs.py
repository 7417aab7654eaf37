"""The blob store contract, on a local folder and on a real S3 server: SeaweedFS's S3
gateway on loopback (tests/seaweed.py), started once for this module."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from docshelf.api import create_app
from docshelf.blobs import BlobStore, blob_key, open_blob_store
from docshelf.blobs.local import LocalBlobStore
from docshelf.blobs.s3 import S3BlobStore
from docshelf.errors import InvalidInput, NotFound, TooLarge, Unavailable
from docshelf.ingest.worker import Worker
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.seaweed import S3Server, seaweed_s3

BUCKET = "docshelf-blobs"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    with seaweed_s3() as server:
        server.client().create_bucket(Bucket=BUCKET)
        yield server


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """The server in the standard AWS variables (what docshelf's S3 store reads), and a
    ``bucket/prefix`` of this test's own."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return f"{BUCKET}/{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["local", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return LocalBlobStore(tmp_path / "blobs")
    base = request.getfixturevalue("s3_env")
    return open_blob_store(f"s3://{base}/lib/uploads", tmp_path)


def _keys(server: S3Server, prefix: str) -> list[str]:
    listed = server.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def test_write_read_exists_delete(blobs: BlobStore) -> None:
    data = b"hello blobs\n" * 1000
    with blobs.writer(max_bytes=1 << 20) as w:
        for i in range(0, len(data), 4096):
            w.write(data[i : i + 4096])
        sha = w.commit()
    assert sha == hashlib.sha256(data).hexdigest() and w.size == len(data)
    assert blobs.exists(sha) and blobs.read(sha) == data
    with blobs.open(sha) as fh:
        assert fh.read() == data
    # the same bytes again: one blob, no error
    with blobs.writer(max_bytes=1 << 20) as w:
        w.write(data)
        assert w.commit() == sha
    blobs.delete(sha)
    assert not blobs.exists(sha)
    with pytest.raises(NotFound):
        blobs.read(sha)


def test_size_limit_and_abort_leave_nothing(blobs: BlobStore, tmp_path: Path) -> None:
    with pytest.raises(TooLarge), blobs.writer(max_bytes=10) as w:
        w.write(b"x" * 11)
    with blobs.writer(max_bytes=100) as w:
        w.write(b"abandoned")
    sha = hashlib.sha256(b"abandoned").hexdigest()
    assert not blobs.exists(sha)
    assert not any((tmp_path / "blobs" / "tmp").glob("upload-*"))


def test_hostile_hashes_are_unknown(blobs: BlobStore) -> None:
    for bad in ("../../etc/passwd", "a" * 63, "g" * 64, ""):
        with pytest.raises(NotFound):
            blobs.read(bad)


def test_layout_and_urls(tmp_path: Path) -> None:
    sha = "ab" + "c" * 62
    assert blob_key(sha) == f"ab/cc/{sha}"
    assert isinstance(open_blob_store(None, tmp_path), LocalBlobStore)
    local = open_blob_store(f"file://{tmp_path}/elsewhere", tmp_path)
    assert isinstance(local, LocalBlobStore) and local.root == tmp_path / "elsewhere"
    with pytest.raises(InvalidInput):
        open_blob_store("ftp://x/y", tmp_path)


def test_s3_keys_are_content_addressed(s3_env: str, s3_server: S3Server, tmp_path: Path) -> None:
    store = open_blob_store(f"s3://{s3_env}/pre", tmp_path)
    assert isinstance(store, S3BlobStore)
    with store.writer(1000) as w:
        w.write(b"abc")
        sha = w.commit()
    prefix = s3_env.split("/", 1)[1]
    assert _keys(s3_server, prefix) == [f"{prefix}/pre/{sha[:2]}/{sha[2:4]}/{sha}"]
    stored = s3_server.client().get_object(Bucket=BUCKET, Key=f"{prefix}/pre/{blob_key(sha)}")
    assert stored["Body"].read() == b"abc"


@pytest.mark.parametrize("checksums", ["when_supported", "when_required"])
def test_a_large_upload_goes_up_in_parts_and_reads_back_byte_identical(
    checksums: str,
    s3_env: str,
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past boto3's multipart threshold (8 MiB) the upload is a multipart upload; the
    object SeaweedFS holds is the very bytes, whichever way they are read back. Both with
    boto3's default integrity checksums and with them only where required (the setting
    docs/deploy.md gives for a server that refuses them)."""
    monkeypatch.setenv("AWS_REQUEST_CHECKSUM_CALCULATION", checksums)
    monkeypatch.setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", checksums)
    data = os.urandom(1 << 20) * 20 + b"tail"  # 20 MiB and a bit: three parts
    store = open_blob_store(f"s3://{s3_env}", tmp_path)
    with store.writer(max_bytes=len(data)) as w:
        for i in range(0, len(data), 1 << 16):
            w.write(data[i : i + (1 << 16)])
        sha = w.commit()
    assert sha == hashlib.sha256(data).hexdigest()
    key = f"{s3_env.split('/', 1)[1]}/{blob_key(sha)}"
    head = s3_server.client().head_object(Bucket=BUCKET, Key=key)
    assert head["ContentLength"] == len(data)
    assert head["ETag"].strip('"').endswith("-3")  # a multipart upload's ETag: 3 parts
    assert hashlib.sha256(store.read(sha)).hexdigest() == sha
    with store.open(sha) as fh:
        assert fh.read() == data
    assert not any(tmp_path.rglob("upload-*"))  # the staged copy is gone


def test_a_named_endpoint_is_addressed_path_style(
    s3_env: str, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint named by host (not an IP address) is still addressed path-style
    (``http://host:port/bucket/key``), as every S3-compatible server takes it without
    DNS set up for a host per bucket."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint.replace("127.0.0.1", "localhost"))
    store = open_blob_store(f"s3://{s3_env}", tmp_path)
    assert isinstance(store, S3BlobStore)
    urls: list[str] = []
    store.client.meta.events.register(
        "before-send.s3", lambda request, **_: urls.append(request.url)
    )
    with store.writer(100) as w:
        w.write(b"path style")
        sha = w.commit()
    assert store.read(sha) == b"path style"
    port = s3_server.endpoint.rsplit(":", 1)[1]
    assert urls and all(u.startswith(f"http://localhost:{port}/{BUCKET}/") for u in urls), urls


def test_missing_objects_and_a_missing_bucket(s3_env: str, tmp_path: Path) -> None:
    """A blob not stored is NotFound; a bucket that is not there is the store being
    unusable (Unavailable), never an empty library."""
    store = open_blob_store(f"s3://{s3_env}", tmp_path)
    sha = hashlib.sha256(b"never stored").hexdigest()
    assert not store.exists(sha)
    with pytest.raises(NotFound):
        store.read(sha)
    with pytest.raises(NotFound):
        store.open(sha)
    store.delete(sha)  # deleting what is not there is no error, as on a folder
    nowhere = open_blob_store("s3://docshelf-no-such-bucket/x", tmp_path)
    with pytest.raises(Unavailable):
        nowhere.read(sha)
    with pytest.raises(Unavailable, match="NoSuchBucket") as refused, nowhere.writer(100) as w:
        w.write(b"bytes with nowhere to go")
        w.commit()
    assert "upload-" not in str(refused.value)  # the staged file's name is not told
    assert not any(tmp_path.rglob("upload-*"))


def test_wrong_credentials_are_unavailable_not_missing(
    s3_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server checks the request's signature: a wrong secret is refused (403), which
    the store reports as Unavailable, never as a blob that is not there."""
    store = open_blob_store(f"s3://{s3_env}", tmp_path)
    with store.writer(100) as w:
        w.write(b"signed")
        sha = w.commit()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    wrong = open_blob_store(f"s3://{s3_env}", tmp_path)
    for call in (wrong.exists, wrong.read):
        with pytest.raises(Unavailable):
            call(sha)
    assert store.read(sha) == b"signed"


def test_blobs_committed_together_go_up_side_by_side(s3_env: str, tmp_path: Path) -> None:
    store = open_blob_store(f"s3://{s3_env}", tmp_path)
    datas = [b"one\n" * 100, b"two\n" * 100, b"one\n" * 100, b"three\n" * 100]
    writers = []
    for data in datas:
        writer = store.writer(1 << 20)
        writer.write(data)
        writers.append(writer)
    outcomes = store.commit_many(writers)
    assert outcomes == [hashlib.sha256(d).hexdigest() for d in datas]
    assert [store.read(str(sha)) for sha in outcomes] == datas
    assert not any(tmp_path.rglob("upload-*"))


def test_uploads_through_s3_end_to_end(
    s3_env: str, s3_server: S3Server, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small upload waits in the store until its job is parsed, then lives in S3; a
    large one goes to S3 at once and the worker reads it from there. Both are indexed,
    searchable, byte-identical in SeaweedFS, and gone from it when deleted."""
    from docshelf.ingest.held import HOLD_BYTES

    monkeypatch.setenv("DOCSHELF_BLOB_URL", f"s3://{s3_env}/docs")
    small = b"# Raft\n\nleader election\n"
    paragraph = b"Paxos acceptors promise ballots to a proposer and then accept its value. "
    large = b"# Paxos\n\n" + b"\n\n".join([paragraph * 40] * (HOLD_BYTES // 2000))
    assert len(large) > HOLD_BYTES

    def stored(sha: str) -> bytes | None:
        key = f"{s3_env.split('/', 1)[1]}/docs/{blob_key(sha)}"
        if not _keys(s3_server, key):
            return None
        body: bytes = s3_server.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()
        return body

    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        held = shelf.upload(user, "raft.md", small)
        big = shelf.upload(user, "paxos.md", large)
        assert stored(big.fingerprint) == large  # in S3 before any worker ran
        worker = Worker(shelf)
        assert worker.run_once() and worker.run_once()
        for up in (held, big):
            assert shelf.job(up.document_id).status == "complete"
        assert stored(held.fingerprint) == small  # moved to S3 when parsed
        assert shelf.search("election", user_id=user).hits
        assert shelf.search("acceptors ballots", user_id=user).hits
        assert not [p for p in (isolated_home / "blobs").rglob("*") if p.is_file()]
        for up in (held, big):
            assert shelf.delete_document(up.document_id, user)
            assert not shelf.blobs.exists(up.fingerprint)
            assert stored(up.fingerprint) is None


def test_the_http_api_stores_uploads_in_s3_and_serves_them_back(
    s3_env: str, s3_server: S3Server, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_api import RAFT, Api, drain

    monkeypatch.setenv("DOCSHELF_BLOB_URL", f"s3://{s3_env}/http")
    with (
        Shelf(isolated_home, embedder=HashEmbedder()) as shelf,
        TestClient(create_app(shelf)) as client,
    ):
        user, token = shelf.create_user("alice")
        alice = Api(client, token, user)
        r = alice.upload("raft.md", RAFT)
        assert r.status_code == 202
        body = r.json()
        assert drain(shelf) == 1
        hits = alice.request("POST", "/v1/search", json={"query": "leader election"})
        assert hits.json()["hits"][0]["document_id"] == body["document_id"]
        key = f"{s3_env.split('/', 1)[1]}/http/{blob_key(body['fingerprint'])}"
        assert s3_server.client().get_object(Bucket=BUCKET, Key=key)["Body"].read() == RAFT
        assert alice.get(f"/v1/documents/{body['document_id']}/blob").content == RAFT
        # nothing kept on the local disk (the staging folder is empty again)
        assert not [p for p in (isolated_home / "blobs").rglob("*") if p.is_file()]


def test_a_small_upload_touches_the_disk_only_at_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to SPOOL_BYTES the bytes wait in memory (the event loop writes no file while an
    upload streams in); past it they spill to the temporary file; either way the blob is
    placed whole at commit, and an abort leaves no file behind."""
    import docshelf.blobs.local as local

    monkeypatch.setattr(local, "SPOOL_BYTES", 1000)
    store = LocalBlobStore(tmp_path / "blobs")

    def temp_files() -> list[Path]:
        return list(store.tmp.glob("upload-*")) if store.tmp.exists() else []

    small = store.writer(10_000)
    small.write(b"a" * 600)
    assert temp_files() == []
    sha = small.commit()
    assert store.read(sha) == b"a" * 600 and temp_files() == []

    large = store.writer(10_000)
    large.write(b"b" * 600)
    large.write(b"b" * 600)  # over the spool: now a temporary file
    assert len(temp_files()) == 1
    large.write(b"b" * 10)
    sha = large.commit()
    assert store.read(sha) == b"b" * 1210 and temp_files() == []

    for size in (600, 1200):
        dropped = store.writer(10_000)
        dropped.write(b"c" * size)
        dropped.abort()
        assert temp_files() == []
    with pytest.raises(TooLarge):
        too_big = store.writer(1100)
        too_big.write(b"d" * 600)
        too_big.write(b"d" * 600)
    assert temp_files() == []
