"""The blob store contract, on a local folder and on a real S3-protocol server
(moto's standalone server on loopback)."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from docshelf.blobs import BlobStore, blob_key, open_blob_store
from docshelf.blobs.local import LocalBlobStore
from docshelf.blobs.s3 import S3BlobStore
from docshelf.errors import InvalidInput, NotFound, TooLarge
from docshelf.ingest.worker import Worker
from docshelf.shelf import Shelf


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3_env(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    for key, value in {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    import boto3

    bucket = f"docshelf-{_free_port()}"
    boto3.client("s3").create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture(params=["local", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return LocalBlobStore(tmp_path / "blobs")
    bucket = request.getfixturevalue("s3_env")
    return open_blob_store(f"s3://{bucket}/lib/uploads", tmp_path)


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


def test_s3_keys_are_content_addressed(s3_env: str, tmp_path: Path) -> None:
    import boto3

    store = open_blob_store(f"s3://{s3_env}/pre", tmp_path)
    assert isinstance(store, S3BlobStore)
    with store.writer(1000) as w:
        w.write(b"abc")
        sha = w.commit()
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=s3_env)["Contents"]]
    assert keys == [f"pre/{sha[:2]}/{sha[2:4]}/{sha}"]


def test_uploads_through_s3_end_to_end(
    s3_env: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_BLOB_URL", f"s3://{s3_env}/docs")
    with Shelf(isolated_home, embedder=None) as shelf:
        user = shelf.create_user("alice")[0].id
        up = shelf.upload(user, "raft.md", b"# Raft\n\nleader election\n")
        assert Worker(shelf).run_once()
        assert shelf.job(up.document_id).status == "complete"
        assert shelf.search("election", user_id=user).hits
        assert not (isolated_home / "blobs" / "ab").exists()
        assert shelf.delete_document(up.document_id, user)
        assert not shelf.blobs.exists(up.fingerprint)


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
