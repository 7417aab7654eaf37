"""The blob store's share of an upload burst: ``commit_many`` of a batch of small new
blobs (what the API's group commit hands it), timed on its own, without a server.

    .venv/bin/python bench/blob_commit.py [--batch 35] [--rounds 30] [--size 4096]
        [--variant LABEL=SRC ...]

Each round commits ``--batch`` new blobs of ``--size`` bytes into a fresh folder under
the system's temporary folder (the bench of uploads uses the same disk) and times the
call: wall time (the fsyncs' latency, which the answers wait for) and this process's
CPU time. ``--variant LABEL=SRC`` runs the same rounds with the blob store's code from
another ``src`` folder (in a child process with it on ``PYTHONPATH``), alternating with
this tree round by round, so a busy disk weighs on both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_round(batch: int, size: int, seed: int) -> tuple[float, float]:
    """Commit ``batch`` new blobs in a fresh store; (wall s, CPU s) of the commit."""
    from docshelf.blobs.local import LocalBlobStore

    with tempfile.TemporaryDirectory(prefix="docshelf-blob-bench-") as tmp:
        store = LocalBlobStore(Path(tmp) / "blobs")
        writers = []
        for i in range(batch):
            writer = store.writer(1 << 20)
            head = f"round {seed} blob {i}\n".encode()
            writer.write(head + b"x" * max(0, size - len(head)))
            writers.append(writer)
        wall, cpu = time.perf_counter(), time.process_time()
        outcomes = store.commit_many(writers)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert all(isinstance(o, str) for o in outcomes), outcomes
        settled = getattr(store, "settled", None)
        if settled is not None:  # a background settler (the pack): let it finish
            settled()
    return wall, cpu


def child(batch: int, size: int, seed: int) -> None:
    wall, cpu = one_round(batch, size, seed)
    print(json.dumps({"wall": wall, "cpu": cpu}))


def run_in(src: Path | None, batch: int, size: int, seed: int) -> tuple[float, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(batch), str(size), str(seed)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    return float(figures["wall"]), float(figures["cpu"])


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=35, help="new blobs per commit")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--size", type=int, default=4096, help="bytes per blob")
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL=SRC")
    args = parser.parse_args()
    trees: list[tuple[str, Path | None]] = []
    for variant in args.variant:
        label, sep, src = variant.partition("=")
        if not sep or not label or not src:
            parser.error(f"--variant takes LABEL=SRC, not {variant!r}")
        trees.append((label, Path(src).resolve()))
    trees.append(("this tree", None))
    figures: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in trees}
    load_start = os.getloadavg()[0]
    for round_no in range(args.rounds):
        for label, src in trees:
            figures[label].append(run_in(src, args.batch, args.size, round_no))
    load_end = os.getloadavg()[0]
    print(
        f"{args.rounds} rounds of commit_many({args.batch} new blobs of {args.size} B); "
        f"load average {load_start:.1f} at the start, {load_end:.1f} at the end\n"
    )
    print("| code | wall p50 | p95 | max | CPU per batch p50 |")
    print("|---|---|---|---|---|")
    for label, _ in trees:
        walls = sorted(w for w, _ in figures[label])
        cpus = [c for _, c in figures[label]]
        p95 = statistics.quantiles(walls, n=20, method="inclusive")[18]
        print(
            f"| {label} | {statistics.median(walls) * 1000:.1f} ms | {p95 * 1000:.1f} ms "
            f"| {walls[-1] * 1000:.1f} ms | {statistics.median(cpus) * 1000:.1f} ms |"
        )


if __name__ == "__main__":
    main()
