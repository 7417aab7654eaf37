"""Hybrid search with a user filter, as every search over HTTP makes it (the caller may
read some of the library's documents), on a library of ``bench/ann.py``.

Three users are granted documents of the library (once; kept in it): ``all`` of them,
about ``half`` and about a ``tenth``, drawn with a fixed seed. A fresh process per tree
and round runs 200 hybrid searches per user after 20 warm-up ones (the bench's queries,
excluding the query embedding, ``limit=10``), unfiltered first, and reports p50/p95;
rounds alternate between this tree and ``--baseline SRC`` (e.g. ``git archive <commit>
src | tar -x -C DIR``). Then each user's results are compared: the two trees, and with
``--exact`` each tree against the exact path (``DOCSHELF_ANN_THRESHOLD=0``: every vector
scanned, slow above 100k).

    .venv/bin/python bench/ann.py --sizes 100000 --home $LIB --no-search    # the library
    flock /tmp/docshelf-bench.lock .venv/bin/python bench/filtered.py --home $LIB \\
        [--baseline $BASE/src] [--rounds 2] [--exact]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

USERS = {"all": 1.0, "half": 0.5, "tenth": 0.1}
N_WARM = 20


def grant(home: Path) -> None:
    """The bench users and their grants, unless the library has them already."""
    from bench.search import FixedQueries
    from docshelf.model import User
    from docshelf.shelf import Shelf

    with Shelf(home, embedder=FixedQueries({})) as shelf:
        store = shelf.store
        if store.get_user("u_all") is not None:
            return
        ids = [d.id for d in store.list_documents()]
        rng = random.Random(1)
        for name, share in USERS.items():
            store.put_user(User(f"u_{name}", name, False, time.time()), None)
            with store.transaction():
                for document_id in ids:
                    if rng.random() < share:
                        store.grant(f"u_{name}", document_id)


def searches(home: Path, out: Path) -> None:
    """In the child: each user's searches, timed; results written to ``out``."""
    import numpy as np

    from bench.search import FixedQueries
    from docshelf.shelf import Shelf
    from docshelf.store.base import SearchFilters

    texts = json.loads((home / "queries.json").read_text())
    vectors = np.load(home / "queries.npy")
    fixed = FixedQueries(dict(zip(texts, vectors, strict=True)))
    report: dict[str, Any] = {}
    with Shelf(home, embedder=fixed) as shelf:
        for user in ["-", *(f"u_{name}" for name in USERS)]:
            filters = SearchFilters(user_id=None if user == "-" else user)
            for text in texts[:N_WARM]:
                shelf.search(text, limit=10, mode="hybrid", filters=filters)
            times, hits = [], []
            stages: dict[str, list[float]] = {}
            for text in texts:
                t = time.perf_counter()
                result = shelf.search(text, limit=10, mode="hybrid", filters=filters)
                times.append((time.perf_counter() - t) * 1000)
                hits.append([(h.chunk.id, round(h.score, 5)) for h in result.hits])
                for stage, ms in result.timings_ms.items():
                    stages.setdefault(stage, []).append(ms)
            report[user] = {
                "p50": percentile(times, 0.5),
                "p95": percentile(times, 0.95),
                "hits": hits,
                "stages": {k: (percentile(v, 0.5), percentile(v, 0.95)) for k, v in stages.items()},
            }
    out.write_text(json.dumps(report))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def run(home: Path, src: Path | None, env: dict[str, str] | None = None) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        environment = dict(os.environ, DOCSHELF_RETRIEVAL_CACHE_SECONDS="0", **(env or {}))
        if src is not None:
            environment["PYTHONPATH"] = str(src.resolve())
        subprocess.run(
            [sys.executable, __file__, "--child", str(home), out.name],
            env=environment,
            check=True,
        )
        result: dict[str, Any] = json.loads(Path(out.name).read_text())
        return result


def compare(a: list[Any], b: list[Any]) -> str:
    """How alike two users' result lists are: lists in the same order, hits kept."""
    same = sum([c for c, _ in x] == [c for c, _ in y] for x, y in zip(a, b, strict=True))
    kept = sum(len({c for c, _ in x} & {c for c, _ in y}) for x, y in zip(a, b, strict=True))
    return f"{same}/{len(a)} lists in the same order, {kept}/{sum(len(x) for x in a)} hits kept"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, help="a library of bench/ann.py (--home DIR)")
    ap.add_argument("--baseline", type=Path, help="the source tree to compare with")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--exact", action="store_true", help="compare with the exact path")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        searches(Path(args.child[0]), Path(args.child[1]))
        return
    if args.home is None:
        ap.error("--home is required")
    grant(args.home)
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline:
        trees.insert(0, ("baseline", args.baseline))
    last: dict[str, dict[str, Any]] = {}
    print("| round | tree | " + " | ".join(["unfiltered", *USERS]) + " (p50 / p95 ms) |")
    print("|---|---|" + "---|" * (len(USERS) + 1))
    for n in range(args.rounds):
        for name, src in trees:
            report = last[name] = run(args.home, src)
            cells = [f"{r['p50']:.1f} / {r['p95']:.1f}" for r in report.values()]
            print(f"| {n + 1} | {name} | " + " | ".join(cells) + " |", flush=True)
    for name, report in last.items():  # the last round's stages
        for user, r in report.items():
            line = ", ".join(f"{k} {a:.1f}/{b:.1f}" for k, (a, b) in r["stages"].items())
            print(f"{name}, {user}, per stage p50/p95 ms: {line}")
    exact = run(args.home, None, {"DOCSHELF_ANN_THRESHOLD": "0"}) if args.exact else None
    for user in last["this tree"]:
        mine = last["this tree"][user]["hits"]
        if args.baseline:
            print(f"{user}: against the baseline {compare(last['baseline'][user]['hits'], mine)}")
        if exact is not None:
            for name in last:
                alike = compare(exact[user]["hits"], last[name][user]["hits"])
                print(f"{user}: {name} against the exact path {alike}")


if __name__ == "__main__":
    main()
