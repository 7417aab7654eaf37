"""hnswlib against usearch on the same synthetic clustered vectors (how the
sidecar index's library was chosen; see docs/benchmarks/ann-and-sidecars.md). hnswlib is not a
dependency: ``pip install hnswlib`` to run this.

Each configuration is built in one process and searched in another, which
opens the saved file the way docshelf does (hnswlib loads it; usearch maps it
with ``view=True``), so the searching process's peak RSS is the index's cost:
build time (2 threads), file size, single-query latency (one thread, like a
search request) and recall@10 against the exact answer, at several depths.

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/ann_libraries.py [--n 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DIM = 384
CONFIGS = ("hnswlib-f32", "usearch-f32", "usearch-f16", "usearch-i8")
EFS = (32, 64, 128, 256)


def clustered(
    n: int, seed: int, spread: float = 1.0
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """``n`` unit vectors around 200 centres, and 200 queries from the same law."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(200, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    def draw(k: int) -> npt.NDArray[np.float32]:
        v = centres[rng.integers(200, size=k)]
        v = v + spread * rng.normal(size=(k, DIM)).astype(np.float32) / np.sqrt(DIM)
        out: npt.NDArray[np.float32] = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(
            np.float32
        )
        return out

    data = np.concatenate([draw(min(100_000, n - i)) for i in range(0, n, 100_000)])
    return data, draw(200)


def exact_top10(
    data: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]
) -> npt.NDArray[np.int64]:
    scores = queries @ data.T
    top = np.argpartition(-scores, 9, axis=1)[:, :10]
    return top.astype(np.int64)


def rss_mb() -> float:
    """Resident memory now (ru_maxrss would carry the parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build(config: str, n: int, spread: float, tmp: Path) -> dict[str, Any]:
    data, queries = clustered(n, seed=7, spread=spread)
    np.save(tmp / "queries.npy", queries)
    np.save(tmp / "truth.npy", exact_top10(data, queries))
    labels = np.arange(n, dtype=np.uint64)
    path = tmp / "index.bin"
    t = time.perf_counter()
    if config.startswith("hnswlib"):
        import hnswlib

        h = hnswlib.Index(space="ip", dim=DIM)
        h.init_index(max_elements=n, ef_construction=128, M=16)
        h.set_num_threads(2)
        h.add_items(data, labels)
        build_s = time.perf_counter() - t
        h.save_index(str(path))
    else:
        from usearch.index import Index

        dtype = config.split("-")[1]
        u = Index(ndim=DIM, metric="ip", dtype=dtype, connectivity=16, expansion_add=128)
        u.add(labels, data, threads=2)
        build_s = time.perf_counter() - t
        u.save(str(path))
    return {"config": config, "build_s": build_s, "size_mb": path.stat().st_size / 1e6}


def search(config: str, n: int, tmp: Path) -> dict[str, object]:
    queries = np.load(tmp / "queries.npy")
    truth = np.load(tmp / "truth.npy")
    path = tmp / "index.bin"
    rss0 = rss_mb()
    if config.startswith("hnswlib"):
        import hnswlib

        h = hnswlib.Index(space="ip", dim=DIM)
        h.load_index(str(path), max_elements=n)
        h.set_num_threads(1)

        def query(q: npt.NDArray[np.float32], ef: int) -> list[int]:
            h.set_ef(ef)
            found, _ = h.knn_query(q, k=10)
            return [int(x) for x in found[0]]
    else:
        from usearch.index import Index

        u = Index.restore(str(path), view=True)
        assert u is not None

        def query(q: npt.NDArray[np.float32], ef: int) -> list[int]:
            u.expansion_search = ef  # type: ignore[misc]  # settable at run time
            return [int(x) for x in u.search(q, 10, threads=1).keys]

    out: dict[str, object] = {}
    for ef in EFS:
        for q in queries[:20]:
            query(q, ef)
        times, hits = [], 0
        for i, q in enumerate(queries):
            t = time.perf_counter()
            found = query(q, ef)
            times.append((time.perf_counter() - t) * 1000)
            hits += len(set(found) & {int(x) for x in truth[i]})
        cuts = statistics.quantiles(times, n=100)
        out[f"ef{ef}"] = {
            "recall@10": hits / (10 * len(queries)),
            "p50_ms": cuts[49],
            "p95_ms": cuts[94],
        }
    out["index_rss_mb"] = rss_mb() - rss0
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--spread", type=float, default=1.0)
    ap.add_argument("--search", nargs=2, metavar=("CONFIG", "DIR"))
    args = ap.parse_args()
    if args.search:
        print(json.dumps(search(args.search[0], args.n, Path(args.search[1]))))
        return
    print(f"{args.n} vectors x {DIM} dims, spread {args.spread}")
    for config in CONFIGS:
        with tempfile.TemporaryDirectory() as tmp:
            r = build(config, args.n, args.spread, Path(tmp))
            cmd = [sys.executable, __file__, "--n", str(args.n), "--search", config, tmp]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            r.update(json.loads(out))
        print(
            f"{config:12} build {r['build_s']:6.1f} s  file {r['size_mb']:7.1f} MB  "
            f"searcher RSS {r['index_rss_mb']:7.0f} MB"
        )
        for ef in EFS:
            e = r[f"ef{ef}"]
            print(
                f"{'':12} ef {ef:3}: recall@10 {e['recall@10']:.3f}  "
                f"p50 {e['p50_ms']:.2f} ms  p95 {e['p95_ms']:.2f} ms"
            )


if __name__ == "__main__":
    main()
