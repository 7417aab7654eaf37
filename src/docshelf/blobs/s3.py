"""Blobs in S3-compatible storage (AWS S3, Garage, MinIO, SeaweedFS, …) with boto3.

``DOCSHELF_BLOB_URL=s3://bucket/prefix``. The endpoint and credentials come
from boto3's standard configuration, read when the store is made (each store
has a boto3 session of its own, so no earlier client's cached credentials
linger): ``AWS_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL_S3`` (for a non-AWS
server, which botocore then addresses path-style: ``endpoint/bucket/key``),
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, or
a profile, ``~/.aws/config`` and an instance role. docs/deploy.md has the
settings per server; tests/test_blobs.py runs against SeaweedFS's gateway.
Bytes are hashed into a local temporary file while they stream in, then
uploaded under ``<prefix>/<sha[:2]>/<sha[2:4]>/<sha>`` — so an object exists
whole under its hash or not at all, and the same bytes twice are one object.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from docshelf.blobs import blob_key, commit_side_by_side
from docshelf.blobs.local import TempWriter
from docshelf.errors import NotFound, Unavailable


class _S3Writer(TempWriter):
    def __init__(self, store: S3BlobStore, max_bytes: int) -> None:
        super().__init__(store.tmp, max_bytes)
        self._store = store

    def place(self, tmp: Path, sha256: str) -> None:
        if not self._store.exists(sha256):
            self._store.call("upload_file", str(tmp), self._store.bucket, self._store.key(sha256))


class S3BlobStore:
    def __init__(self, bucket: str, prefix: str, tmp: Path, client: Any = None) -> None:
        if not bucket:
            raise Unavailable("DOCSHELF_BLOB_URL names no bucket; use s3://bucket/prefix")
        self.bucket = bucket
        self.prefix = prefix
        self.tmp = tmp
        if client is None:
            try:
                import boto3
            except ImportError:
                raise Unavailable("S3 blob storage needs boto3: install `docshelf[s3]`") from None
            client = boto3.session.Session().client("s3")
        self.client = client

    def key(self, sha256: str) -> str:
        return f"{self.prefix}/{blob_key(sha256)}" if self.prefix else blob_key(sha256)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A boto3 call with its errors translated (a missing object is ``NotFound``)."""
        from boto3.exceptions import Boto3Error
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(*args, **kwargs)
        except (ClientError, Boto3Error) as exc:
            # upload_file wraps the server's answer in a Boto3Error whose message names the
            # staged file (never shown): the answer is its context
            answer = exc if isinstance(exc, ClientError) else exc.__cause__ or exc.__context__
            code = (
                str(answer.response.get("Error", {}).get("Code", ""))
                if isinstance(answer, ClientError)
                else type(exc).__name__
            )
            if code in ("404", "NoSuchKey", "NotFound"):
                raise NotFound("No such blob in S3") from None
            raise Unavailable(f"S3 {method} on bucket {self.bucket} failed: {code}") from exc
        except BotoCoreError as exc:
            raise Unavailable(f"S3 {method} on bucket {self.bucket} failed: {exc}") from exc

    def writer(self, max_bytes: int) -> _S3Writer:
        return _S3Writer(self, max_bytes)

    def commit_many(self, writers: Sequence[_S3Writer]) -> list[str | BaseException]:
        return commit_side_by_side(writers)  # an upload is durable once S3 has it

    def read(self, sha256: str) -> bytes:
        body = self.call("get_object", Bucket=self.bucket, Key=self.key(sha256))["Body"]
        data: bytes = body.read()
        return data

    def open(self, sha256: str) -> BinaryIO:
        return io.BytesIO(self.read(sha256))

    def exists(self, sha256: str) -> bool:
        try:
            self.call("head_object", Bucket=self.bucket, Key=self.key(sha256))
        except NotFound:
            return False
        return True

    def delete(self, sha256: str) -> None:
        self.call("delete_object", Bucket=self.bucket, Key=self.key(sha256))
