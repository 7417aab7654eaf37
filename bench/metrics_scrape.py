"""What one Prometheus scrape of ``/metrics`` costs as the library grows.

``/metrics`` reads the store at scrape time (job counts, the oldest unfinished job
per stage, embedding coverage from the store's counts), so its cost grows with
the library. Synthetic libraries of 10k and 100k snippets (bench/search.py's
generator, written straight through the store), 100 scrapes each after a warm-up,
over the HTTP API in process (Starlette's TestClient); p50 and p95.

    .venv/bin/python bench/metrics_scrape.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search import FixedQueries, synthetic_library
from docshelf.api import create_app
from docshelf.shelf import Shelf


def scrape_ms(shelf: Shelf, n: int = 100) -> tuple[float, float]:
    operator = {"Authorization": f"Bearer {shelf.create_user('ops', admin=True)[1]}"}
    with TestClient(create_app(shelf)) as client:
        for _ in range(5):
            assert client.get("/metrics", headers=operator).status_code == 200
        times = []
        for _ in range(n):
            t = time.perf_counter()
            client.get("/metrics", headers=operator)
            times.append((time.perf_counter() - t) * 1000)
    cuts = statistics.quantiles(times, n=100)
    return cuts[49], cuts[94]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = ap.parse_args()
    rng = np.random.default_rng(5)
    for size in args.sizes:
        with (
            tempfile.TemporaryDirectory() as tmp,
            Shelf(Path(tmp), embedder=FixedQueries({})) as shelf,
        ):
            synthetic_library(shelf, size, rng, spread=4.8)
            p50, p95 = scrape_ms(shelf)
        print(f"SQLite, {size:>7} snippets: /metrics p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
