"""Upload load benchmark: concurrent uploads against a real server on loopback.

Starts `uvicorn --factory docshelf.api:app_from_env` in a subprocess (a fresh
temporary DOCSHELF_HOME, one in-process ingest worker), creates two users, and
sends all uploads at once: new Markdown files plus duplicates of some of them
(a few by the second user, who gets an access link). Prints:
- p50 / p95 / max of the upload response time (the request only: parsing and
  embedding happen in the worker);
- the time from the first upload until every document is `complete`;
- dedup hits: the server's `upload_dedup` counter from /metrics (every upload
  answers 202, known bytes or not);
- the queue drained (jobs left unfinished) and duplicates: documents in the
  store beyond one per distinct file, read from the store after the run.

    .venv/bin/python bench/upload_load.py [--embedder none|local] [--new 35] [--duplicates 15]

Bounded: one request per file, and the whole run stops after --timeout seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from docshelf.shelf import Shelf

WORDS = [
    "raft",
    "paxos",
    "leader",
    "follower",
    "quorum",
    "ledger",
    "replica",
    "snapshot",
    "compaction",
    "shard",
    "tenant",
    "index",
    "vector",
    "lexical",
    "citation",
    "section",
    "snippet",
    "heading",
    "chunk",
    "token",
    "model",
    "cache",
]


@dataclass(frozen=True)
class Upload:
    user: str
    name: str
    data: bytes


@dataclass(frozen=True)
class Answer:
    upload: Upload
    status: int
    document_id: str
    seconds: float


def markdown(i: int, rng: random.Random) -> bytes:
    parts = []
    for j in range(rng.randrange(3, 7)):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(80, 200)))
        parts.append(f"## Part {j}\n\nNote {i} part {j}: {text}.")
    return (f"# Note {i}\n\n" + "\n\n".join(parts) + "\n").encode()


def plan(new: int, duplicates: int, seed: int = 7) -> list[Upload]:
    """``new`` distinct files by alice, then ``duplicates`` copies of earlier ones
    (every other one by bob), shuffled so copies race their originals."""
    rng = random.Random(seed)
    files = [Upload("alice", f"note{i:03}.md", markdown(i, rng)) for i in range(new)]
    copies = [
        Upload("bob" if k % 2 else "alice", f"copy{k:03}.md", files[(k * 7) % new].data)
        for k in range(duplicates)
    ]
    uploads = files + copies
    rng.shuffle(uploads)
    return uploads


def start_server(home: Path, embedder: str) -> tuple[subprocess.Popen[bytes], str]:
    """The real server on a free loopback port. (Not `uvicorn --fd`: it wraps the
    socket as AF_UNIX, so asyncio skips TCP_NODELAY and every response waits ~40 ms
    for a delayed ACK.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(home),
        "DOCSHELF_EMBEDDER": embedder,
        "DOCSHELF_WORKERS": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "docshelf.api:app_from_env",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    return subprocess.Popen(cmd, env=env), f"http://127.0.0.1:{port}"


async def wait_ready(client: httpx.AsyncClient, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if (await client.get("/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit("the server did not become ready in 60 s")


async def send(client: httpx.AsyncClient, upload: Upload, token: str) -> Answer:
    started = time.perf_counter()
    r = await client.post(
        "/v1/documents",
        files={"file": (upload.name, upload.data, "text/markdown")},
        headers={"Authorization": f"Bearer {token}"},
    )
    seconds = time.perf_counter() - started
    if r.status_code not in (200, 202):
        raise SystemExit(f"upload {upload.name} answered {r.status_code}: {r.text}")
    return Answer(upload, r.status_code, r.json()["document_id"], seconds)


async def wait_complete(
    client: httpx.AsyncClient, answers: list[Answer], tokens: dict[str, str]
) -> dict[str, str]:
    """Poll each document until it is complete or failed; returns id → final status."""
    todo = {a.document_id: tokens[a.upload.user] for a in answers}
    final: dict[str, str] = {}
    while todo:
        for doc_id, token in list(todo.items()):
            r = await client.get(
                f"/v1/documents/{doc_id}", headers={"Authorization": f"Bearer {token}"}
            )
            status = r.json()["status"]
            if status in ("complete", "failed"):
                final[doc_id] = status
                del todo[doc_id]
        if todo:
            await asyncio.sleep(0.05)
    return final


def dedup_counter(metrics: str) -> dict[str, float]:
    pattern = re.compile(r'^upload_dedup_total\{kind="([^"]+)"\} ([0-9.e+]+)$', re.M)
    return {kind: float(value) for kind, value in pattern.findall(metrics)}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def run(args: argparse.Namespace, base_url: str, proc: subprocess.Popen[bytes]) -> None:
    tokens = args.tokens
    uploads = plan(args.new, args.duplicates)
    limits = httpx.Limits(max_connections=len(uploads), max_keepalive_connections=len(uploads))
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        await wait_ready(client, proc)
        t0 = time.perf_counter()
        answers = await asyncio.gather(*(send(client, u, tokens[u.user]) for u in uploads))
        sent = time.perf_counter() - t0
        final = await wait_complete(client, answers, tokens)
        all_complete = time.perf_counter() - t0
        metrics = (await client.get("/metrics")).text

    times = sorted(a.seconds for a in answers)
    p95 = statistics.quantiles(times, n=20, method="inclusive")[18]
    distinct = len({u.data for u in uploads})
    print(f"uploads:            {len(answers)} ({args.new} new, {args.duplicates} duplicates)")
    print(f"embedder:           {args.embedder}")
    print(f"upload p50:         {ms(statistics.median(times))}")
    print(f"upload p95:         {ms(p95)}")
    print(f"upload max:         {ms(times[-1])}")
    print(f"all answered after: {ms(sent)}")
    print(f"all complete after: {ms(all_complete)} (from the first upload)")
    print(f"documents:          {len(final)} ({sum(s == 'complete' for s in final.values())} ok)")
    print(f"distinct files:     {distinct}; distinct document ids {len(final)}")
    print(f"upload_dedup:       {dedup_counter(metrics)}")
    args.distinct = distinct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=["none", "local"], default="none")
    parser.add_argument("--new", type=int, default=35, help="distinct files")
    parser.add_argument("--duplicates", type=int, default=15, help="copies of earlier files")
    parser.add_argument("--timeout", type=float, default=120.0, help="stop after this many s")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="docshelf-upload-bench-") as tmp:
        home = Path(tmp) / "home"
        with Shelf(home, embedder=None) as shelf:
            args.tokens = {name: shelf.create_user(name)[1] for name in ("alice", "bob")}
        proc, base_url = start_server(home, args.embedder)
        try:
            asyncio.run(asyncio.wait_for(run(args, base_url, proc), timeout=args.timeout))
        except TimeoutError:
            raise SystemExit(f"stopped: the run took over {args.timeout:g} s") from None
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with Shelf(home, embedder=None) as shelf:
            docs = shelf.store.list_documents(limit=10_000)
            unfinished = [d.id for d in docs if d.status not in ("complete", "failed")]
            print(f"queue drained:      {not unfinished} ({len(unfinished)} unfinished)")
            print(f"duplicates:         {len(docs) - args.distinct} ({len(docs)} documents)")


if __name__ == "__main__":
    main()
