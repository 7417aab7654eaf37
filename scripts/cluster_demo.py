"""`make cluster-demo`: docshelf as a cluster on the local PostgreSQL and RabbitMQ.

Creates a schema of its own in the PostgreSQL database, starts the API
(`DOCSHELF_WORKERS=0 docshelf serve`) and N `docshelf worker` processes in the
background, uploads the project's docs (docs/*.md and README.md) over HTTP with
the admin token `serve` prints, waits until every document is complete, prints
a search, then stops everything it started: the processes, the queues, the
schema (unless --keep) and the temporary home that held the uploaded bytes.

    .venv/bin/python scripts/cluster_demo.py \\
        --database-url postgresql://postgres@127.0.0.1:5432/test \\
        --amqp-url 'amqp://guest:guest@127.0.0.1:5672/%2F' --workers 2
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import httpx
import pika
import psycopg

ROOT = Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"\bdsk_[A-Za-z0-9_-]{20,}")


def say(message: str) -> None:
    print(f"[cluster-demo] {message}", flush=True)


def schema_url(url: str, schema: str) -> str:
    options = quote(f"-c search_path={schema},public", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={options}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Demo:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.run_id = uuid.uuid4().hex[:8]
        self.schema = f"docshelf_demo_{self.run_id}"
        self.queue = f"docshelf.demo.{self.run_id}"
        self.home = Path(tempfile.mkdtemp(prefix="docshelf-cluster-demo-"))
        self.port = args.port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.schema_created = False

    # -- setting up ------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        amqp = self.args.amqp_url
        return {
            **os.environ,
            "DOCSHELF_HOME": str(self.home),  # the blob folder every process here shares
            "DOCSHELF_DATABASE_URL": schema_url(self.args.database_url, self.schema),
            "DOCSHELF_QUEUE_URL": f"{amqp}{'&' if '?' in amqp else '?'}queue={self.queue}",
            "DOCSHELF_EMBEDDER": self.args.embedder,
        }

    def create_schema(self) -> None:
        with psycopg.connect(self.args.database_url, autocommit=True) as conn:
            conn.execute("SET client_min_messages = warning")
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            conn.execute(f'CREATE SCHEMA "{self.schema}"')
        self.schema_created = True
        say(f"schema {self.schema} in {self.args.database_url.split('@')[-1]}")

    def start(self, name: str, *args: str, extra: dict[str, str] | None = None) -> None:
        log = (self.home / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "docshelf.cli", *args],
            env={**self.env(), **(extra or {})},
            stdout=log,
            stderr=log,
            cwd=ROOT,
        )
        self.procs.append((name, proc))
        say(f"started {name} (pid {proc.pid}): docshelf {' '.join(args)}")

    def log(self, name: str) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")

    def wait_for_api(self) -> str:
        """The admin token `serve` prints on a fresh library, once the API answers."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            api = self.procs[0][1]
            if api.poll() is not None:
                raise SystemExit(f"the API exited:\n{self.log('api')}")
            match = TOKEN.search(self.log("api"))
            if match:
                try:
                    if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                        return match.group(0)
                except httpx.TransportError:
                    pass
            time.sleep(0.2)
        raise SystemExit(f"the API did not become ready:\n{self.log('api')}")

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> None:
        self.create_schema()
        self.start("api", "serve", "--port", str(self.port), extra={"DOCSHELF_WORKERS": "0"})
        token = self.wait_for_api()
        say(f"API at {self.base} (no workers of its own); admin token read from its output")
        for n in range(self.args.workers):
            self.start(f"worker-{n + 1}", "worker")
        files = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
        headers = {"Authorization": f"Bearer {token}"}
        started = time.monotonic()
        with httpx.Client(base_url=self.base, headers=headers, timeout=60) as client:
            ids = {}
            for path in files:
                r = client.post("/v1/documents", files={"file": (path.name, path.read_bytes())})
                r.raise_for_status()
                ids[r.json()["document_id"]] = path.name
            say(f"uploaded {len(ids)} files over HTTP: {', '.join(sorted(ids.values()))}")
            self.wait_until_done(client, ids)
            say(f"all {len(ids)} documents complete in {time.monotonic() - started:.1f} s")
            query = self.args.query
            result = client.post("/v1/search", json={"query": query, "limit": 3}).json()
            say(f'search "{query}" ({result["mode"]}):')
            for n, hit in enumerate(result["hits"], start=1):
                text = " ".join(hit["text"].split())[:100]
                print(f"  {n}. {hit['citation']['label']}  {hit['score']:.3f}\n     {text}…")

    def wait_until_done(self, client: httpx.Client, ids: dict[str, str]) -> None:
        deadline = time.monotonic() + self.args.timeout
        last = ""
        while True:
            statuses = {d: client.get(f"/v1/documents/{d}").json()["status"] for d in ids}
            summary = ", ".join(f"{n} {s}" for s, n in sorted(_counts(statuses).items()))
            if summary != last:
                say(f"documents: {summary}")
                last = summary
            failed = [ids[d] for d, s in statuses.items() if s == "failed"]
            if failed:
                raise SystemExit(f"ingest failed for {failed}")
            if all(s == "complete" for s in statuses.values()):
                return
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise SystemExit(f"{name} exited:\n{self.log(name)}")
            if time.monotonic() > deadline:
                raise SystemExit("timed out waiting for the documents")
            time.sleep(0.3)

    # -- tearing down ---------------------------------------------------------------------
    def stop(self) -> None:
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            say(f"stopped {name} (exit {proc.returncode})")
        try:
            conn = pika.BlockingConnection(pika.URLParameters(self.args.amqp_url))
            ch = conn.channel()
            for name in (self.queue, f"{self.queue}.dead"):
                ch.queue_delete(name)
            ch.exchange_delete(f"{self.queue}.dlx")
            conn.close()
            say(f"deleted queues {self.queue}, {self.queue}.dead and exchange {self.queue}.dlx")
        except pika.exceptions.AMQPError as exc:
            say(f"could not delete the queues: {exc!r}")
        if self.schema_created and not self.args.keep:
            with psycopg.connect(self.args.database_url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
            say(f"dropped schema {self.schema}")
        elif self.schema_created:
            url = self.env()["DOCSHELF_DATABASE_URL"]
            say(f"kept schema {self.schema}: DOCSHELF_DATABASE_URL='{url}'")
        shutil.rmtree(self.home, ignore_errors=True)


def _counts(statuses: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in statuses.values():
        out[s] = out.get(s, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/%2F")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--embedder", default=os.environ.get("DOCSHELF_EMBEDDER", "auto"))
    ap.add_argument("--port", type=int, default=0, help="the API's port (default: a free one)")
    ap.add_argument("--query", default="how are chunks cited")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--keep", action="store_true", help="keep the schema afterwards")
    args = ap.parse_args()
    demo = Demo(args)
    try:
        demo.run()
    finally:
        demo.stop()


if __name__ == "__main__":
    main()
