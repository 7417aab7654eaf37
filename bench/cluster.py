"""Scale-out benchmarks: the cluster shape (PostgreSQL + RabbitMQ + worker processes)
against the embedded one, on the same files and data in the same run.

Ingest throughput (documents/s and snippets/s), the same Markdown files each time:
- embedded, `Shelf.add` of the folder (SQLite, one process);
- embedded, every file uploaded (`Shelf.upload`, what POST /v1/documents does) and
  ingested by one in-process worker (SQLite);
- PostgreSQL + RabbitMQ, the files uploaded by this process and ingested by 1, 2
  and 3 `docshelf worker` processes (a fresh schema and queue for each run).
The clock runs from the first upload until every job is `complete`; worker
processes are started and ready before it starts. Lexical only by default
(DOCSHELF_EMBEDDER=none); `--embed-files N` repeats it with the local model on N
files (workers then run the `docshelf worker` loop after loading the model, so
its 3-4 s load is not counted — `--embed-files 0` skips it).

Search latency at 100k snippets: a synthetic library shaped like bench/search.py's
(documents of ten snippets, Zipf vocabulary, 384-d vectors around 200 centres)
built in SQLite through the store, exported with `docshelf export` and imported
into PostgreSQL — the same data — then the same 200 queries (query vectors
precomputed, near a centre like the snippets) against both: SQLite (exact vector
scan + FTS5) and PostgreSQL (pgvector HNSW + tsvector); and the HNSW search's
recall@10 against the exact scan. Two vector spreads (`--spreads`): 1.0, clustered
like real embeddings, and bench/search.py's 4.8, nearly uniform on the sphere (the
hardest case for an ANN index). Also the export and import times and their peak
memory (VmHWM of a child process) at 10k and 100k snippets.

    .venv/bin/python bench/cluster.py --database-url postgresql://postgres@127.0.0.1:5432/test \\
        --amqp-url 'amqp://guest:guest@127.0.0.1:5672/%2F' [--files 500] [--embed-files 100]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import numpy.typing as npt

from bench.ingest import make_folder
from bench.search import FixedQueries, synthetic_library, unit
from docshelf.config import Settings
from docshelf.embed import make_embedder
from docshelf.ingest.worker import Worker, WorkerPool, WorkerSettings
from docshelf.shelf import Shelf

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Run:
    label: str
    documents: int
    snippets: int
    seconds: float

    def row(self) -> str:
        return (
            f"| {self.label} | {self.seconds:.2f} s | {self.documents / self.seconds:.1f} | "
            f"{self.snippets / self.seconds:.0f} |"
        )


# -- services ----------------------------------------------------------------------------


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f'CREATE SCHEMA "{schema}"')
    options = quote(f"-c search_path={schema},public", safe="")
    try:
        yield f"{url}{'&' if '?' in url else '?'}options={options}"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def delete_queue(amqp_url: str, queue: str) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(amqp_url))
    ch = conn.channel()
    for name in (queue, f"{queue}.dead"):
        ch.queue_delete(name)
    ch.exchange_delete(f"{queue}.dlx")
    conn.close()


# -- ingest -----------------------------------------------------------------------------------


def files_of(folder: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(folder.glob("*.md"))]


def upload_all(shelf: Shelf, files: list[tuple[str, bytes]]) -> float:
    """Upload every file; wait until every job is complete. Seconds from the first upload."""
    user = shelf.create_user(f"bench{uuid.uuid4().hex[:6]}")[0].id
    started = time.perf_counter()
    for name, data in files:
        shelf.upload(user, name, data)
    while True:
        counts = shelf.store.job_counts()
        if counts.get("failed"):
            raise SystemExit(f"jobs failed: {counts}")
        if counts.get("complete", 0) == len(files):
            return time.perf_counter() - started
        time.sleep(0.02)


def embedded_add(folder: Path, home: Path, embedder: str) -> Run:
    with Shelf(home, embedder=make_embedder(embedder)) as shelf:
        if shelf.embedder is not None:
            shelf.embedder.embed(["warm up"])
        started = time.perf_counter()
        report = shelf.add(folder)
        seconds = time.perf_counter() - started
        assert report.failed == 0, report.failures[:3]
        stats = shelf.store.stats()
    return Run("embedded: `Shelf.add` (SQLite)", stats.documents, stats.snippets, seconds)


def embedded_uploads(files: list[tuple[str, bytes]], home: Path, embedder: str) -> Run:
    with Shelf(home, embedder=make_embedder(embedder)) as shelf:
        if shelf.embedder is not None:
            shelf.embedder.embed(["warm up"])
        pool = WorkerPool(shelf, 1, WorkerSettings(poll_seconds=0.05))
        pool.start()
        try:
            seconds = upload_all(shelf, files)
        finally:
            pool.stop()
        stats = shelf.store.stats()
    return Run(
        "embedded: uploads + 1 in-process worker (SQLite)", stats.documents, stats.snippets, seconds
    )


def cluster_uploads(
    files: list[tuple[str, bytes]],
    n: int,
    args: argparse.Namespace,
    embedder: str,
    tmp: Path,
    threads: int | None = None,
) -> Run:
    queue = f"docshelf.bench.{uuid.uuid4().hex[:8]}"
    amqp = f"{args.amqp_url}{'&' if '?' in args.amqp_url else '?'}queue={queue}"
    home = tmp / f"cluster-{embedder}-{n}-{threads}"
    with fresh_schema(args.database_url) as url:
        env = {
            **os.environ,
            "DOCSHELF_HOME": str(home),
            "DOCSHELF_DATABASE_URL": url,
            "DOCSHELF_QUEUE_URL": amqp,
            "DOCSHELF_EMBEDDER": embedder,
        }
        if threads:  # torch's threads per process (it takes one per core by default)
            env["OMP_NUM_THREADS"] = str(threads)
        settings = Settings(home=home, database_url=url, embedder=embedder, queue_url=amqp)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            with Shelf(settings=settings, embedder=make_embedder(embedder)) as shelf:
                for i in range(n):
                    log = home / f"worker-{i}.log"
                    home.mkdir(parents=True, exist_ok=True)
                    command = (
                        [sys.executable, "-m", "docshelf.cli", "worker"]
                        if embedder == "none"  # the real command
                        else [sys.executable, str(Path(__file__)), "worker"]  # model preloaded
                    )
                    procs.append(
                        subprocess.Popen(
                            command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
                        )
                    )
                for i, proc in enumerate(procs):
                    wait_ready(home / f"worker-{i}.log", proc)
                seconds = upload_all(shelf, files)
                stats = shelf.store.stats()
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(60)
            delete_queue(args.amqp_url, queue)
    label = f"PostgreSQL + RabbitMQ, {n} worker process{'es' if n > 1 else ''}"
    if threads:
        label += f", OMP_NUM_THREADS={threads}"
    return Run(label, stats.documents, stats.snippets, seconds)


def wait_ready(log: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if "worker(s) on" in text or "ready" in text:
            return
        if proc.poll() is not None:
            raise SystemExit(f"a worker exited:\n{text}")
        time.sleep(0.05)
    raise SystemExit("a worker did not start")


def preloaded_worker() -> None:
    """`docshelf worker`'s loop (one thread, default settings) after loading the model."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with Shelf() as shelf:
        if shelf.embedder is not None:
            shelf.embedder.embed(["warm up"])
        print("ready", flush=True)
        Worker(shelf, WorkerSettings()).run(stop)


def ingest(args: argparse.Namespace, tmp: Path, n_files: int, embedder: str) -> None:
    folder = tmp / f"notes-{embedder}"
    folder.mkdir()
    make_folder(folder, n_files)
    files = files_of(folder)
    runs = [
        embedded_add(folder, tmp / f"add-{embedder}", embedder),
        embedded_uploads(files, tmp / f"uploads-{embedder}", embedder),
    ]
    for n in (1, 2, 3):
        runs.append(cluster_uploads(files, n, args, embedder, tmp))
    if embedder != "none":  # one torch thread per core in all, not per process
        cores = os.cpu_count() or 1
        for n in (2, 3):
            runs.append(cluster_uploads(files, n, args, embedder, tmp, max(1, cores // n)))
    snippets = {r.snippets for r in runs}
    assert len(snippets) == 1, f"runs disagree on the snippet count: {runs}"
    print(f"\ningest, {n_files} files, {snippets.pop()} snippets, DOCSHELF_EMBEDDER={embedder}")
    print("| run | wall | documents/s | snippets/s |\n|---|---|---|---|")
    for r in runs:
        print(r.row())


# -- search ---------------------------------------------------------------------------------

DIM = 384
PER_DOC = 10


def child_peak(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a `docshelf` command run in a child process."""
    code = (
        "import sys; from docshelf.cli import main; sys.argv = ['docshelf', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0]\n"
        "print(hwm.split()[1], file=sys.stderr)"
    )
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, "--json", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    assert '"ok": true' in out.stdout, out.stdout + out.stderr
    return seconds, int(out.stderr.strip().splitlines()[-1]) / 1024


def timed(shelf: Shelf, queries: list[str], mode: str) -> tuple[float, float]:
    for q in queries[:20]:
        shelf.search(q, limit=10, mode=mode)
    times = []
    for q in queries:
        t = time.perf_counter()
        shelf.search(q, limit=10, mode=mode)
        times.append((time.perf_counter() - t) * 1000)
    cuts = statistics.quantiles(times, n=100)
    return cuts[49], cuts[94]


def search(args: argparse.Namespace, tmp: Path) -> None:
    """Build in SQLite, move to PostgreSQL with export/import, search both the same way."""
    moves = []
    for size in sorted({10_000, args.snippets}):
        for spread in args.spreads if size == args.snippets else args.spreads[:1]:
            rng = np.random.default_rng(3)
            queries_vec: dict[str, npt.NDArray[np.float32]] = {}
            fixed = FixedQueries(queries_vec)
            home = tmp / f"search-{size}-{spread}"
            with Shelf(home, embedder=fixed) as sqlite_shelf:
                vocab, centres = synthetic_library(sqlite_shelf, size, rng, spread)
            archive = tmp / f"search-{size}-{spread}.zip"
            env = {"DOCSHELF_HOME": str(home), "DOCSHELF_EMBEDDER": "none"}
            export_s, export_mb = child_peak(["export", str(archive)], env)
            with fresh_schema(args.database_url) as url:
                pg_home = str(tmp / "pg-home")
                pg_env = {**env, "DOCSHELF_HOME": pg_home, "DOCSHELF_DATABASE_URL": url}
                import_s, import_mb = child_peak(["import", str(archive)], pg_env)
                size_mb = archive.stat().st_size / 2**20
                moves.append((size, export_s, export_mb, size_mb, import_s, import_mb))
                if size == args.snippets:
                    queries = [
                        " ".join(rng.choice(vocab, size=int(rng.integers(2, 6))))
                        for _ in range(200)
                    ]
                    for q in queries:  # a query near one of the centres, like the snippets
                        noise = rng.normal(size=DIM).astype(np.float32) / np.sqrt(DIM)
                        queries_vec[q] = unit(centres[rng.integers(len(centres))] + spread * noise)
                    settings = Settings(home=Path(pg_home), database_url=url, embedder="none")
                    with (
                        Shelf(home, embedder=fixed) as sqlite_shelf,
                        Shelf(settings=settings, embedder=fixed) as pg_shelf,
                    ):
                        compare(sqlite_shelf, pg_shelf, queries, size, spread)
    print("\n| snippets | export | peak RSS | archive | import into PostgreSQL | peak RSS |")
    print("|---|---|---|---|---|---|")
    for size, es, emb, mb, is_, imb in moves:
        print(f"| {size} | {es:.1f} s | {emb:.0f} MB | {mb:.0f} MB | {is_:.1f} s | {imb:.0f} MB |")


def compare(
    sqlite_shelf: Shelf, pg_shelf: Shelf, queries: list[str], size: int, spread: float
) -> None:
    print(f"\nsearch latency, {size} snippets, vector spread {spread}, limit 10, 200 queries")
    print("| store | hybrid p50 / p95 | lexical p50 / p95 | vector p50 / p95 |\n|---|---|---|---|")
    for label, shelf in (
        ("SQLite (exact scan + FTS5)", sqlite_shelf),
        ("PostgreSQL (HNSW + tsvector)", pg_shelf),
    ):
        cells = [timed(shelf, queries, m) for m in ("hybrid", "lexical", "vector")]
        print(f"| {label} | " + " | ".join(f"{a:.1f} / {b:.1f} ms" for a, b in cells) + " |")
    overlap = []
    for q in queries:
        exact = {h.chunk.id for h in sqlite_shelf.search(q, limit=10, mode="vector").hits}
        approx = {h.chunk.id for h in pg_shelf.search(q, limit=10, mode="vector").hits}
        overlap.append(len(exact & approx) / 10)
    print(f"recall@10 of the HNSW search against the exact scan: {statistics.mean(overlap):.3f}")


def main() -> None:
    if sys.argv[1:2] == ["worker"]:
        preloaded_worker()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/%2F")
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--embed-files", type=int, default=100)
    ap.add_argument("--snippets", type=int, default=100_000)
    ap.add_argument("--spreads", type=float, nargs="+", default=[1.0, 4.8])
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--skip-search", action="store_true")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPU cores")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_ingest:
            if args.files:
                ingest(args, Path(tmp), args.files, "none")
            if args.embed_files:
                ingest(args, Path(tmp), args.embed_files, "local")
        if not args.skip_search:
            search(args, Path(tmp))


if __name__ == "__main__":
    main()
