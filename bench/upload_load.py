"""Upload load benchmark: concurrent uploads against a real server on loopback.

Starts `docshelf serve` in a subprocess (a fresh temporary DOCSHELF_HOME, one
ingest worker: in a process of its own, `--worker-process`, or with `--shape
thread` as a thread of the server, serve's default), creates two
users, and sends all uploads at once: new Markdown files plus duplicates of some
of them (a few by the second user, who gets an access link). With `--warm` one
upload is sent and ingested first, so the model is loaded (and has embedded)
before the burst; without it the burst meets a freshly started server. Prints:
- p50 / p95 / max of the upload response time (the request only: parsing and
  embedding happen in the worker);
- the time from the first upload until every document is `complete`;
- dedup hits: uploads that made no document of their own (every upload answers
  202, known bytes or not, and no metric tells them apart: docs/observability.md);
- the queue drained (jobs left unfinished) and duplicates: documents in the
  store beyond one per distinct file, read from the store after the run;
- the server's idle memory once ready (the server process's RSS, and the sum
  over it and every process below it).

    .venv/bin/python bench/upload_load.py [--embedder none|local] [--new 35] [--duplicates 15]
        [--shape process,thread] [--rounds 1] [--warm] [--client raw|httpx] [--before SRC]
        [--variant LABEL=SRC ...] [--variants-only] [--http auto,h11] [--postgres URL]

With several shapes and rounds, the runs alternate (process, thread, process, …)
so a busy machine weighs on both alike; a table of every run ends the output, with
the load average (1 min) at each run's start and end. ``--before SRC`` runs each shape a
second time with the server's code from SRC (a ``src`` folder, e.g. ``git archive
HEAD src | tar -x -C /tmp/before``) on ``PYTHONPATH``, right before this tree's run,
so the baseline is measured in the same session; ``--variant LABEL=SRC`` (repeatable)
does the same for any other tree, its rows labelled LABEL. ``--http h11`` hides
httptools and uvloop from the server (uvicorn then runs h11 on asyncio's loop), ``auto``
leaves uvicorn's own choice; ``auto,h11`` runs both, back to back.
`process@0` runs the worker process at the server's own CPU priority (serve's
`--worker-nice`, default 10). The client sends prepared request bytes on
connections opened before the clock starts (`--client raw`), so the times are
the server's; `--client httpx` is the previous client.

``--postgres URL`` puts each run's store in a fresh schema on that PostgreSQL server
(the team deployment's store; the blobs stay in the temporary home).

Bounded: one request per file, and the whole run stops after --timeout seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


BOUNDARY = "docshelf-bench-boundary"


def raw_request(upload: Upload, token: str) -> bytes:
    """The whole upload request as bytes, built before the clock starts."""
    body = (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{upload.name}"\r\nContent-Type: text/markdown\r\n\r\n'
        ).encode()
        + upload.data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )
    head = (
        "POST /v1/documents HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def send_raw(
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter], upload: Upload, request: bytes
) -> Answer:
    """One request on an open connection, its bytes prepared: the client's own work is a
    write and a read, so the time is the server's (httpx spends ~2 ms of CPU per upload
    here, which on 2 shared cores queues the burst in the client)."""
    reader, writer = streams
    started = time.perf_counter()
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length)
    seconds = time.perf_counter() - started
    status = int(head.split(b" ", 2)[1])
    if status not in (200, 202):
        raise SystemExit(f"upload {upload.name} answered {status}: {body[:300]!r}")
    return Answer(upload, status, json.loads(body)["document_id"], seconds)


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


# uvicorn takes httptools (HTTP parsing in C) and uvloop (the event loop on libuv) when
# they are installed (the `speedups` extra); a folder where both fail to import makes it
# fall back to h11 and asyncio's own loop, so both stacks run from one venv.
NO_SPEEDUPS = {
    "httptools.py": "raise ImportError('hidden by bench/upload_load.py --http h11')\n",
    "uvloop.py": "raise ImportError('hidden by bench/upload_load.py --http h11')\n",
}


def hide_speedups(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in NO_SPEEDUPS.items():
        (folder / name).write_text(text)
    return folder


@contextmanager
def fresh_database(postgres: str | None) -> Iterator[str | None]:
    """None for the embedded SQLite store, or a URL of a new schema on ``postgres``
    (dropped afterwards)."""
    if postgres is None:
        yield None
        return
    from bench.cluster import fresh_schema

    with fresh_schema(postgres) as url:
        yield url


def start_server(
    home: Path, embedder: str, shape: str, src: Path | None = None, hidden: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`docshelf serve` on a free loopback port, its workers in a process or threads;
    with ``src``, the server's code from that folder; with ``hidden``, a folder that
    hides httptools and uvloop (``hide_speedups``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(home),
        "DOCSHELF_EMBEDDER": embedder,
        "DOCSHELF_ENRICH": "off",
        "DOCSHELF_WORKERS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    first = [str(p) for p in (hidden, src) if p is not None]
    if first:
        env["PYTHONPATH"] = os.pathsep.join([*first, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "docshelf.cli", "serve", "--port", str(port)]
    if shape == "thread":
        cmd.append("--in-process-workers")
    else:
        cmd.append("--worker-process")
    if "@" in shape:  # process@N: the worker process at nice N (serve's default 10)
        cmd += ["--worker-nice", shape.split("@", 1)[1]]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settle(root: int, limit: float = 240.0) -> float:
    """Wait until ``root`` and its children are quiet (under 10% of a core for half a
    second): a server started on a new home makes its query model in a child first
    (``Runtime.prepare_query_model``), once per home. Returns the seconds waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        before = sum(cpu_seconds(p) for p in tree(root))
        await asyncio.sleep(0.5)
        if 0 <= sum(cpu_seconds(p) for p in tree(root)) - before < 0.05:
            break
    return time.perf_counter() - started


def tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


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


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def run(
    args: argparse.Namespace, base_url: str, proc: subprocess.Popen[bytes], row: dict[str, str]
) -> None:
    tokens = args.tokens
    uploads = plan(args.new, args.duplicates)
    limits = httpx.Limits(max_connections=len(uploads), max_keepalive_connections=len(uploads))
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        await wait_ready(client, proc)
        await asyncio.sleep(2.0)  # the worker process started too
        server, everything = rss_mb(proc.pid), sum(rss_mb(p) for p in tree(proc.pid))
        print(f"idle RSS:           server {server:.0f} MB; with its children {everything:.0f} MB")
        row["idle"] = f"{server:.0f} / {everything:.0f} MB"
        if args.warm:  # one upload ingested first: the model is loaded and has embedded
            warm = Upload("alice", "warm.md", markdown(10_000, random.Random(1)))
            await wait_complete(client, [await send(client, warm, tokens["alice"])], tokens)
            print(f"quiet after:        {await settle(proc.pid):.1f} s")
        host, port = base_url.rsplit("//", 1)[1].split(":")
        if args.client == "raw":  # connected and built before the clock starts
            requests = [raw_request(u, tokens[u.user]) for u in uploads]
            conns = [await asyncio.open_connection(host, int(port)) for _ in uploads]
        t0 = time.perf_counter()
        server_cpu, client_cpu = cpu_seconds(proc.pid), time.process_time()
        if args.client == "raw":
            answers = await asyncio.gather(
                *(send_raw(c, u, r) for c, u, r in zip(conns, uploads, requests, strict=True))
            )
        else:
            answers = await asyncio.gather(*(send(client, u, tokens[u.user]) for u in uploads))
        sent = time.perf_counter() - t0
        server_cpu = cpu_seconds(proc.pid) - server_cpu
        client_cpu = time.process_time() - client_cpu
        if args.client == "raw":
            for _, w in conns:
                w.close()
        final = await wait_complete(client, answers, tokens)
        all_complete = time.perf_counter() - t0

    times = sorted(a.seconds for a in answers)
    p95 = statistics.quantiles(times, n=20, method="inclusive")[18]
    distinct = len({u.data for u in uploads})
    print(f"uploads:            {len(answers)} ({args.new} new, {args.duplicates} duplicates)")
    print(f"embedder:           {args.embedder}")
    print(f"upload p50:         {ms(statistics.median(times))}")
    print(f"upload p95:         {ms(p95)}")
    print(f"upload max:         {ms(times[-1])}")
    print(f"all answered after: {ms(sent)}")
    print(
        f"CPU while answering: server process {ms(server_cpu)} "
        f"({ms(server_cpu / len(answers))} per upload), this client {ms(client_cpu)}"
    )
    print(f"all complete after: {ms(all_complete)} (from the first upload)")
    print(f"documents:          {len(final)} ({sum(s == 'complete' for s in final.values())} ok)")
    print(f"distinct files:     {distinct}; distinct document ids {len(final)}")
    dedup = len(answers) - len(final)
    print(f"dedup hits:         {dedup}")
    args.distinct = distinct + (1 if args.warm else 0)
    row.update(
        p50=ms(statistics.median(times)),
        p95=ms(p95),
        max=ms(times[-1]),
        cpu=ms(server_cpu / len(answers)),
        complete=f"{all_complete:.1f} s",
        dedup=str(dedup),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=["none", "local"], default="none")
    parser.add_argument("--new", type=int, default=35, help="distinct files")
    parser.add_argument("--duplicates", type=int, default=15, help="copies of earlier files")
    parser.add_argument("--timeout", type=float, default=120.0, help="stop after this many s")
    parser.add_argument(
        "--shape", default="process", help="process, process@NICE, thread, or several: a,b"
    )
    parser.add_argument("--rounds", type=int, default=1, help="runs of each shape, alternated")
    parser.add_argument("--warm", action="store_true", help="ingest one upload before the burst")
    parser.add_argument(
        "--client", choices=["raw", "httpx"], default="raw", help="raw: prepared bytes"
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="src folder of the code to compare with"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL=SRC",
        help="another src folder to run, labelled LABEL (repeatable; runs before this tree's)",
    )
    parser.add_argument(
        "--http",
        default="auto",
        help="auto (httptools and uvloop when installed), h11 (hidden), or both: auto,h11",
    )
    parser.add_argument(
        "--variants-only", action="store_true", help="run the variants, not this tree"
    )
    parser.add_argument(
        "--postgres", default=None, help="the store on this PostgreSQL server (a fresh schema)"
    )
    args = parser.parse_args()
    shapes = [s.strip() for s in args.shape.split(",") if s.strip()]
    trees: list[tuple[str, Path | None]] = []
    if args.before is not None:
        trees.append(("before ", args.before.resolve()))
    for variant in args.variant:
        label, sep, src = variant.partition("=")
        if not sep or not label or not src:
            parser.error(f"--variant takes LABEL=SRC, not {variant!r}")
        trees.append((f"{label} ", Path(src).resolve()))
    if not args.variants_only:
        trees.append(("", None))
    stacks = [s.strip() for s in args.http.split(",") if s.strip()]
    if set(stacks) - {"auto", "h11"}:
        parser.error(f"--http takes auto, h11 or both, not {args.http!r}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="docshelf-upload-h11-") as hidden:
        for round_no in range(1, args.rounds + 1):
            for shape in shapes:
                for label, src in trees:
                    for stack in stacks:
                        hide = hide_speedups(Path(hidden)) if stack == "h11" else None
                        name = f"{label}{shape}" + (f" {stack}" if len(stacks) > 1 else "")
                        print(f"-- {label}workers in a {shape}, http {stack}, round {round_no}")
                        rows.append(one_run(args, shape, src, name, round_no, hide))
    print(
        "\n| code, workers | round | load avg | idle RSS server / tree | upload p50 | p95 | max "
        "| all complete | server CPU / upload | dedup hits | queue drained | duplicates |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['shape']} | {r['round']} | {r['load']} | {r.get('idle', '')} "
            f"| {r.get('p50', '')} | {r.get('p95', '')} | {r.get('max', '')} "
            f"| {r.get('complete', '')} | {r.get('cpu', '')} | {r.get('dedup', '')} "
            f"| {r.get('drained', '')} | {r.get('duplicates', '')} |"
        )


def one_run(
    args: argparse.Namespace,
    shape: str,
    src: Path | None,
    label: str,
    round_no: int,
    hidden: Path | None = None,
) -> dict[str, str]:
    row = {"shape": label, "round": str(round_no), "load": f"{os.getloadavg()[0]:.1f}"}
    with (
        tempfile.TemporaryDirectory(prefix="docshelf-upload-bench-") as tmp,
        fresh_database(args.postgres) as url,
    ):
        if url is not None:  # the server and this process's reads: a schema of its own
            os.environ["DOCSHELF_DATABASE_URL"] = url
        home = Path(tmp) / "home"
        with Shelf(home, embedder=None) as shelf:
            args.tokens = {name: shelf.create_user(name)[1] for name in ("alice", "bob")}
        proc, base_url = start_server(home, args.embedder, shape, src, hidden)
        try:
            asyncio.run(asyncio.wait_for(run(args, base_url, proc, row), timeout=args.timeout))
        except TimeoutError:
            raise SystemExit(f"stopped: the run took over {args.timeout:g} s") from None
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with Shelf(home, embedder=None) as shelf:
            docs = shelf.store.list_documents(limit=10_000)
            unfinished = [d.id for d in docs if d.status not in ("complete", "failed")]
            print(f"queue drained:      {not unfinished} ({len(unfinished)} unfinished)")
            print(f"duplicates:         {len(docs) - args.distinct} ({len(docs)} documents)")
            row["load"] += f" → {os.getloadavg()[0]:.1f}"
            row["drained"] = "yes" if not unfinished else f"no ({len(unfinished)} left)"
            row["duplicates"] = str(len(docs) - args.distinct)
    return row


if __name__ == "__main__":
    main()
