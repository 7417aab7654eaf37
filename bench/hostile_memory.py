"""Memory and responsiveness on a hostile text file: one 25 MB Markdown line.

Two real processes, each started as a user starts it:

- ``docshelf add FILE`` (``--json``);
- ``docshelf serve`` with one ingest worker, in both shapes by default: a thread of
  the server (serve's default, ``--in-process-workers``) and a process of its own
  (``--worker-process``); the file uploaded over HTTP and its stage events followed
  (SSE) until its job completes or fails, while ``/healthz`` is polled.

While each runs, this process samples ``/proc`` every 20 ms: the high-water
mark (VmHWM) of the main process and of every process below it (serve's worker
process, the parser sandbox's processes), and the largest sum of their current
RSS (with each process's share at that moment) and of their PSS (shared pages
counted once). It prints those peaks, the wall time, the outcome (chunks
indexed, or the failure reason, and a digest of the stored chunks) and, for
``serve``, the ``/healthz`` and ``/readyz`` answer times (p50, p99, slowest)
during the upload. ``--baseline DIR`` measures another checkout's ``src/``
first, in the same run (its modules imported before this one's).

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/hostile_memory.py \\
        [--mb 25] [--embedder none|local] [--only add|serve] [--enrich off|auto] [--cap-mb 4096] \\
        [--serve-workers thread|process|both] [--baseline ../main-checkout/src]

The text is ASCII words, without a single line break. The processes run
under an address-space cap (``--cap-mb``, RLIMIT_AS): on a shared machine a
runaway must fail, not take the machine's memory (before the fix, `add` of
this file grew past 20 GB).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

SAMPLE_S = 0.02
LIMITS = {"cap_mb": 4096}  # --cap-mb


def capped() -> None:
    """In the child, before exec: the address-space cap."""
    cap = LIMITS["cap_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def one_line_markdown(path: Path, size: int) -> None:
    """``size`` bytes of ASCII words on one line (a ``# title`` first, no line break)."""
    rng = random.Random(17)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randrange(2, 10)))
        for _ in range(5000)
    ]
    with path.open("w", encoding="ascii") as out:
        written = out.write("# One line ")
        while written < size:
            chunk = " ".join(rng.choices(vocab, k=4096)) + ". "
            written += out.write(chunk[: size - written])


@dataclass
class Peaks:
    """High-water marks of a process tree, from /proc samples."""

    hwm_kb: dict[int, int] = field(default_factory=dict)  # pid -> VmHWM
    names: dict[int, str] = field(default_factory=dict)  # pid -> its role (``role``)
    max_sum_rss_kb: int = 0
    max_sum_pss_kb: int = 0  # shared pages (a fork server's and its child's) counted once
    processes: int = 0  # the most processes the tree had at once
    at_peak_kb: dict[int, int] = field(default_factory=dict)  # pid -> RSS when the sum peaked
    at_peak_anon_kb: dict[int, int] = field(default_factory=dict)  # pid -> its anonymous part
    # the same split by kind (anonymous: the heap; file: mapped files, such as the
    # database SQLite reads through a memory map; shmem: shared memory, its WAL index)
    at_peak_split_kb: dict[str, int] = field(default_factory=dict)
    max_sum_anon_kb: int = 0  # the largest sum of the tree's anonymous RSS

    def sample(self, root: int) -> None:
        total = pss = alive = 0
        now: dict[int, int] = {}
        anon: dict[int, int] = {}
        split = {"anon": 0, "file": 0, "shmem": 0}
        roles: dict[int, str] = {}
        for pid, ppid in tree(root):
            status = read_status(pid)
            if not status:
                continue
            alive += 1
            now[pid] = status.get("VmRSS", 0)
            anon[pid] = status.get("RssAnon", 0)
            self.hwm_kb[pid] = max(self.hwm_kb.get(pid, 0), status.get("VmHWM", 0))
            # the last seen: a new child shows its parent's command line until it execs
            roles[pid] = role(pid, root, roles.get(ppid, ""))
            self.names[pid] = roles[pid]
            total += now[pid]
            pss += read_pss(pid)
            for kind in split:
                split[kind] += status.get(f"Rss{kind.capitalize()}", 0)
        if total > self.max_sum_rss_kb:
            self.max_sum_rss_kb, self.at_peak_kb, self.at_peak_split_kb = total, now, split
            self.at_peak_anon_kb = anon
        self.max_sum_anon_kb = max(self.max_sum_anon_kb, split["anon"])
        self.max_sum_pss_kb = max(self.max_sum_pss_kb, pss)
        self.processes = max(self.processes, alive)

    def report(self, root: int) -> str:
        main = self.hwm_kb.get(root, 0) / 1024
        others = sorted(
            ((kb / 1024, f"{self.names[pid]} [pid {pid}]") for pid, kb in self.hwm_kb.items()),
            reverse=True,
        )
        parts = [f"main process peak {main:.0f} MB"]
        parts += [f"{name}: peak {mb:.0f} MB" for mb, name in others if name != "main"]
        parts.append(
            f"largest sum of the tree's RSS {self.max_sum_rss_kb / 1024:.0f} MB, of its PSS "
            f"{self.max_sum_pss_kb / 1024:.0f} MB (up to {self.processes} processes at once)"
        )
        at_peak = " + ".join(
            f"{kb / 1024:.0f} {self.names.get(pid, '?')} "
            f"({self.at_peak_anon_kb.get(pid, 0) / 1024:.0f} anon)"
            for pid, kb in sorted(self.at_peak_kb.items(), key=lambda item: -item[1])
        )
        kinds = ", ".join(f"{kb / 1024:.0f} {kind}" for kind, kb in self.at_peak_split_kb.items())
        parts.append(f"at that moment: {at_peak} ({kinds})")
        parts.append(
            f"largest sum of the tree's anonymous RSS {self.max_sum_anon_kb / 1024:.0f} MB"
        )
        return "; ".join(parts)


def role(pid: int, root: int, parent_role: str) -> str:
    """What a process of the tree is, from its command line and its parent's role."""
    if pid == root:
        return "main"
    line = cmdline(pid)
    if "resource_tracker" in line:
        return "resource tracker"
    if "forkserver" in line:  # the fork server, or a child forked from it
        return "parser child" if parent_role == "fork server" else "fork server"
    if "--lifeline" in line:
        return "worker process"
    if "docshelf.parse" in line:  # a parser child started as a plain subprocess
        return "parser child"
    return "parser child" if parent_role in ("main", "worker process") else line[:40]


def tree(root: int) -> list[tuple[int, int]]:
    """``root`` and every process below it, as (pid, parent pid), parents first."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[tuple[int, int]] = []
    todo = [(root, 0)]
    while todo:
        pid, ppid = todo.pop()
        found.append((pid, ppid))
        todo.extend((child, pid) for child in children.get(pid, []))
    return found


def read_status(pid: int) -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0])
    return out


def read_pss(pid: int) -> int:
    """Proportional set size in kB: each shared page split among the processes mapping it."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(raw.decode(errors="replace").split("\0"))


def watch(proc: subprocess.Popen[str], peaks: Peaks, stop: threading.Event) -> None:
    while not stop.is_set() and proc.poll() is None:
        peaks.sample(proc.pid)
        time.sleep(SAMPLE_S)


def docshelf() -> list[str]:
    return [sys.executable, "-m", "docshelf.cli"]


def bench_add(file: Path, home: Path, env: dict[str, str], label: str = "add") -> None:
    peaks, stop = Peaks(), threading.Event()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*docshelf(), "--json", "add", str(file)],
        env={**env, "DOCSHELF_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=capped,
    )
    sampler = threading.Thread(target=watch, args=(proc, peaks, stop))
    sampler.start()
    out, err = proc.communicate()
    stop.set()
    sampler.join()
    elapsed = time.perf_counter() - started
    try:
        result = json.loads(out)
    except ValueError:
        result = {"ok": False, "error": {"message": (err or out)[-300:]}}
    print(f"{label}: {elapsed:.1f} s; {outcome_of_add(result)}; {chunk_digest(home)}")
    print(f"{label}: {peaks.report(proc.pid)}")


def outcome_of_add(envelope: dict[str, object]) -> str:
    if not envelope.get("ok"):
        return f"error: {envelope.get('error')}"
    result = envelope["result"]
    assert isinstance(result, dict)
    failures = result.get("failures") or []
    if failures:
        return f"failed: {failures[0]['reason']}"
    return f"counts {result['counts']}"


def chunk_digest(home: Path) -> str:
    """The stored chunks, in order, as a count and a digest of every field (the same file
    chunked the same way gives the same digest, whatever the process that cut it)."""
    db = home / "docshelf.db"
    if not db.exists():
        return "no database"
    digest, rows = hashlib.sha256(), 0
    with contextlib.closing(sqlite3.connect(db)) as con:
        for row in con.execute(
            "SELECT id, tier, ord, parent_id, prev_id, next_id, heading_path, page_start, "
            "page_end, char_start, char_end, token_count, header, text FROM chunks "
            "ORDER BY tier, ord"
        ):
            digest.update(repr(row).encode())
            rows += 1
    return f"{rows} chunks, digest {digest.hexdigest()[:16]}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_serve(
    file: Path, home: Path, env: dict[str, str], shape: str, label: str = "serve"
) -> None:
    env = {**env, "DOCSHELF_HOME": str(home)}
    made = subprocess.run(
        [*docshelf(), "--json", "users", "create", "bench"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    token = json.loads(made.stdout)["result"]["token"]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    option = "--in-process-workers" if shape == "thread" else "--worker-process"
    proc = subprocess.Popen(
        [*docshelf(), "serve", "--port", str(port), "--workers", "1", option],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=capped,
    )
    peaks, stop = Peaks(), threading.Event()
    sampler = threading.Thread(target=watch, args=(proc, peaks, stop))
    sampler.start()
    health: dict[str, list[float]] = {"/healthz": [], "/readyz": []}
    try:
        wait_ready(base, proc)
        time.sleep(2.0)  # the worker process starts too
        idle = read_status(proc.pid).get("VmRSS", 0) / 1024
        idle_tree = sum(read_status(p).get("VmRSS", 0) for p, _ in tree(proc.pid)) / 1024
        headers = {"Authorization": f"Bearer {token}"}
        started = time.perf_counter()
        with httpx.Client(base_url=base, headers=headers, timeout=600) as client:
            with file.open("rb") as fh:
                reply = client.post("/v1/documents", files={"file": (file.name, fh)})
            reply.raise_for_status()
            doc_id = reply.json()["document_id"]
            poller = threading.Thread(target=poll_health, args=(base, health, stop))
            poller.start()
            state = wait_done(client, doc_id, proc)
            stop.set()
            poller.join()
        elapsed = time.perf_counter() - started
    finally:
        stop.set()
        proc.terminate()
        proc.wait(60)
        sampler.join()
    print(
        f"{label}: idle RSS {idle:.0f} MB, {idle_tree:.0f} MB with its children; "
        f"upload to {state} in {elapsed:.1f} s; {chunk_digest(home)}"
    )
    print(f"{label}: {peaks.report(proc.pid)}")
    for path, times in health.items():
        print(f"{label}: {path} polled {len(times)} times during ingest, {percentiles(times)}")


def percentiles(times: list[float]) -> str:
    if not times:
        return "no answers"
    ranked = sorted(times)

    def at(q: float) -> float:
        return ranked[min(len(ranked) - 1, int(q * len(ranked)))] * 1000

    return f"p50 {at(0.5):.1f} ms, p99 {at(0.99):.1f} ms, slowest {ranked[-1] * 1000:.0f} ms"


def wait_ready(base: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("serve did not start")
        time.sleep(0.2)


def wait_done(client: httpx.Client, doc_id: str, proc: subprocess.Popen[str]) -> str:
    """Follow the document's stage events (SSE, as the web page does) to the end."""
    last: dict[str, object] = {}
    with client.stream("GET", f"/v1/documents/{doc_id}/events", timeout=None) as events:
        for line in events.iter_lines():
            if line.startswith("data:"):
                last = json.loads(line[5:])
            if last.get("stage") in ("complete", "failed") or proc.poll() is not None:
                break
    stage = str(last.get("stage", "server exited"))
    return stage + (f" ({last.get('message')})" if stage == "failed" else "")


def poll_health(base: str, times: dict[str, list[float]], stop: threading.Event) -> None:
    """``/healthz`` and ``/readyz`` in turn, ten requests a second."""
    with httpx.Client(base_url=base, timeout=60) as client:
        while not stop.is_set():
            for path, answers in times.items():
                started = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    client.get(path)
                answers.append(time.perf_counter() - started)
                stop.wait(0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=25.0, help="file size in MB (10^6 bytes)")
    ap.add_argument("--embedder", default="none", choices=("none", "local"))
    ap.add_argument("--only", choices=("add", "serve"))
    ap.add_argument(
        "--enrich",
        default="off",
        choices=("off", "auto"),
        help="DOCSHELF_ENRICH: off measures ingest alone; auto the offline enrichment too",
    )
    ap.add_argument("--cap-mb", type=int, default=LIMITS["cap_mb"], help="per-process cap")
    ap.add_argument(
        "--serve-workers",
        choices=("thread", "process", "both"),
        default="both",
        help="serve's worker as a thread of the server (serve's default, "
        "--in-process-workers), in a process of its own (--worker-process), or both in turn",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="a checkout's src/ folder to measure first, in the same run (e.g. main's)",
    )
    args = ap.parse_args()
    LIMITS["cap_mb"] = args.cap_mb
    env = {
        **os.environ,
        "DOCSHELF_EMBEDDER": args.embedder,
        "DOCSHELF_ENRICH": args.enrich,
        "HF_HUB_OFFLINE": "1",
    }
    shapes = ("thread", "process") if args.serve_workers == "both" else (args.serve_workers,)
    runs: list[tuple[str, dict[str, str]]] = [("", env)]
    if args.baseline is not None:  # imported before this checkout's (an editable install)
        runs.insert(0, ("baseline ", {**env, "PYTHONPATH": str(args.baseline.resolve())}))
    with tempfile.TemporaryDirectory(prefix="docshelf-hostile-") as tmp:
        file = Path(tmp) / "one-line.md"
        one_line_markdown(file, int(args.mb * 1e6))
        print(
            f"file: {file.stat().st_size / 1e6:.1f} MB on one line; embedder {args.embedder}; "
            f"enrichment {args.enrich}"
        )
        print(f"load average at the start: {os.getloadavg()}")
        for n, (prefix, run_env) in enumerate(runs):
            if args.only in (None, "add"):
                bench_add(file, Path(tmp) / f"home-add-{n}", run_env, f"{prefix}add")
            for shape in shapes if args.only in (None, "serve") else ():
                home = Path(tmp) / f"home-serve-{shape}-{n}"
                bench_serve(file, home, run_env, shape, f"{prefix}serve ({shape})")
        print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
