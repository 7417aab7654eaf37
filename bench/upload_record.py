"""The commit of an upload burst, without a server: what the API's group commit runs on
its thread for one batch (the blobs made durable, the uploads recorded in one
transaction), on SQLite and on PostgreSQL.

    .venv/bin/python bench/upload_record.py [--rounds 10] [--new 35] [--duplicates 15]
        [--postgres URL] [--before SRC]

Each round is a child process that warms up on one fresh library, then makes another (a
temporary home; with ``--postgres``, also a fresh schema on that server, dropped
afterwards) with two users and one upload, and times the commit of ``--new`` new
Markdown notes and ``--duplicates`` copies (bench/upload_load.py's plan: every other
copy by the second user), read whole into blob writers as the API reads them.
``--before SRC`` runs the same rounds with another ``src`` folder's code (with it on
``PYTHONPATH``), alternating round by round, so a busy disk or server weighs on both.
Prints p50 / min / max of the wall time per backend and code, and the statements the
store ran (SQLite's trace, where each row of a many-row statement counts).
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def one_round(new: int, duplicates: int, seed: int, postgres: str | None) -> dict[str, float]:
    """One batch committed in a fresh library: its wall time and SQLite's statements."""
    from bench.upload_load import fresh_database, plan
    from docshelf.shelf import Shelf

    with (
        tempfile.TemporaryDirectory(prefix="docshelf-record-bench-") as tmp,
        fresh_database(postgres) as url,
    ):
        if url is not None:
            os.environ["DOCSHELF_DATABASE_URL"] = url
        with Shelf(Path(tmp) / "home", embedder=None) as shelf:
            users = {name: shelf.create_user(name)[0].id for name in ("alice", "bob")}
            shelf.upload(users["alice"], "first.md", b"# First\n\nthe library's first note\n")
            batch = []
            for upload in plan(new, duplicates, seed=seed):
                writer = shelf.blobs.writer(1 << 20)
                writer.write(upload.data)
                batch.append((users[upload.user], upload.name, writer))
            statements: list[str] = []
            db = getattr(shelf.store, "_db", None)  # SQLite: count what it runs
            if db is not None:
                db.set_trace_callback(statements.append)
            wall = time.perf_counter()
            outcomes = commit(shelf, batch)
            wall = time.perf_counter() - wall
            if db is not None:
                db.set_trace_callback(None)
            failed = [o for o in outcomes if isinstance(o, BaseException)]
            assert not failed, failed
    return {"wall": wall, "statements": len(statements)}


def commit(shelf: Any, batch: Sequence[tuple[str, str, Any]]) -> list[object]:
    """The API's group commit of ``batch``, in this tree's words or an older tree's (the
    blobs committed together, then ``register_uploads`` of ``(user, name, sha, size)``)."""
    receive = getattr(shelf, "receive_uploads", None)
    if receive is not None:
        return list(receive(batch))
    writers = [writer for _, _, writer in batch]
    hashes = shelf.blobs.commit_many(writers)
    return list(
        shelf.register_uploads(
            [
                (user, name, sha, writer.size)
                for (user, name, writer), sha in zip(batch, hashes, strict=True)
            ]
        )
    )


def run_in(
    src: Path | None, args: argparse.Namespace, seed: int, postgres: str | None
) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    cmd = [sys.executable, __file__, "--child", str(seed), "--new", str(args.new)]
    cmd += ["--duplicates", str(args.duplicates)]
    if postgres is not None:
        cmd += ["--postgres", postgres]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"a round failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--new", type=int, default=35)
    parser.add_argument("--duplicates", type=int, default=15)
    parser.add_argument("--postgres", default=None, help="also on this PostgreSQL server")
    parser.add_argument("--before", type=Path, default=None, help="src folder to compare")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:  # one round in a fresh library, after one to warm up
        one_round(args.new, args.duplicates, args.child + 10_000, args.postgres)
        print(json.dumps(one_round(args.new, args.duplicates, args.child, args.postgres)))
        return
    backends: list[tuple[str, str | None]] = [("SQLite", None)]
    if args.postgres:
        backends.append(("PostgreSQL", args.postgres))
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.before is not None:
        trees.insert(0, ("before", args.before.resolve()))
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for seed in range(args.rounds):
        for backend, url in backends:
            for label, src in trees:
                results.setdefault((backend, label), []).append(run_in(src, args, seed, url))
    print(
        f"\nthe commit of {args.new} new uploads and {args.duplicates} copies, "
        f"{args.rounds} rounds, alternating\n"
    )
    print("| store | code | p50 | min | max | SQLite statements |")
    print("|---|---|---|---|---|---|")
    for (backend, label), rounds in results.items():
        walls = [r["wall"] * 1000 for r in rounds]
        statements = int(statistics.median(r["statements"] for r in rounds))
        print(
            f"| {backend} | {label} | {statistics.median(walls):.1f} ms | {min(walls):.1f} ms "
            f"| {max(walls):.1f} ms | {statements if backend == 'SQLite' else '—'} |"
        )


if __name__ == "__main__":
    main()
