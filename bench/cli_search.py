"""``docshelf search`` as a whole new process: wall time and peak RSS, per query runtime.

What a person at a terminal, or an agent calling the CLI as a tool, pays per query:
the interpreter, the imports, opening the library and its sidecar indexes, the query
vector, the search and the JSON. One library (bench/search.py's builder: documents of
ten snippets, Zipf vocabulary, 384-d vectors around 200 centres, spread 1.0; the ANN
and tantivy sidecars built) bound to the packaged model's id, so the real CLI embeds
each query with the real model. It is cached in ``--dir`` and reused by the next run.

Variants, run round-robin (so a noisy moment hits them alike), after one warm-up each
(which also writes the ONNX export the ONNX paths share):

- ``torch``    ``DOCSHELF_EMBED_BACKEND=torch``: today's default runtime
- ``default``  no runtime set: today ``torch``; ``lean`` once search asks for a
               query embedder (``make_embedder(purpose="query")``)
- ``onnx``     ``DOCSHELF_EMBED_BACKEND=onnx``
- ``lexical``  ``--mode lexical``: no query vector at all
- ``lean``     ``DOCSHELF_EMBED_BACKEND=lean`` (embed/lean.py)

Peak RSS is each child's own (``os.wait4``); the parent stays small (the library is
built in a child) so nothing of it is counted. Then ``python -X importtime`` of one
lean search, its import time summed by top-level package.

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/cli_search.py \
        [--snippets 100000] [--runs 20] [--dir DIR] [--variants torch onnx lexical lean]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIANTS: dict[str, tuple[dict[str, str | None], list[str]]] = {
    # name: (environment changes, extra CLI arguments)
    "torch": ({"DOCSHELF_EMBED_BACKEND": "torch"}, []),
    "default": ({"DOCSHELF_EMBED_BACKEND": None}, []),
    "onnx": ({"DOCSHELF_EMBED_BACKEND": "onnx"}, []),
    "lexical": ({"DOCSHELF_EMBED_BACKEND": None}, ["--mode", "lexical"]),
    "lean": ({"DOCSHELF_EMBED_BACKEND": "lean"}, []),
}
BASELINE = "torch"


def build(home: Path, snippets: int) -> None:
    """The library, in this (child) process: written through the store, sidecars built,
    then bound to the packaged model so ``docshelf search`` embeds with it."""
    import numpy as np

    from bench.search import FixedQueries, synthetic_library
    from docshelf.embed.local import MODEL_ID
    from docshelf.shelf import Shelf

    t = time.perf_counter()
    with Shelf(home, embedder=FixedQueries({})) as shelf:
        synthetic_library(shelf, snippets, np.random.default_rng(3), spread=1.0)
        with shelf.store.transaction():  # before the sidecars: they record the model
            shelf.store.set_meta("embedding_model", MODEL_ID)
        if shelf.vector_index is not None:
            shelf.maintain_vector_index(force=True)
        if shelf.lexical_index is not None:
            shelf.lexical_index.maintain(force=True)
    print(f"built {snippets:,} snippets in {time.perf_counter() - t:.0f} s", file=sys.stderr)


def child_env(home: Path, changes: dict[str, str | None]) -> dict[str, str]:
    env = {**os.environ, "DOCSHELF_HOME": str(home), "DOCSHELF_EMBEDDER": "local"}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_once(cli: list[str], query: str, home: Path, variant: str) -> tuple[float, float]:
    """One ``docshelf search`` as a new process: (wall seconds, peak RSS in MB)."""
    changes, extra = VARIANTS[variant]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(
            [*cli, "search", query, "--json", *extra],
            env=child_env(home, changes),
            stdout=out,
            stderr=err,
        )
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, with its own usage
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0 or b'"hits"' not in out.read():
            raise RuntimeError(f"{variant}: docshelf search failed: {err.read().decode()[-800:]}")
    return wall, usage.ru_maxrss / 1024


def cuts(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    c = statistics.quantiles(values, n=100, method="inclusive")
    return c[49], c[94]


def import_breakdown(cli: list[str], home: Path, top: int) -> None:
    """Import time of one lean search, self time summed by top-level package."""
    code = "import sys; from docshelf.cli import main; sys.argv[0] = 'docshelf'; main()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "search", "term1 term2", "--json"],
        env=child_env(home, VARIANTS["lean"][0]),
        capture_output=True,
        text=True,
    )
    by_package: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
        package = name.split(".")[0]
        by_package[package] = by_package.get(package, 0) + int(self_us)
    total = sum(by_package.values())
    print(
        f"\nimport time of one lean `docshelf search` (python -X importtime): {total / 1e3:.0f} ms"
    )
    print("| package | self time, summed (ms) |\n|---|---|")
    for package, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {package} | {us / 1e3:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snippets", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--top", type=int, default=20, help="packages in the import breakdown")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    base = args.dir or Path(tempfile.gettempdir()) / f"docshelf-bench-cli-{args.snippets}"
    home = base / "home"
    if args.build_only:
        build(home, args.snippets)
        return
    built = base / "built"
    if not built.exists():
        home.mkdir(parents=True, exist_ok=True)
        here = Path(__file__).resolve()
        subprocess.run(
            [
                sys.executable,
                str(here),
                "--build-only",
                "--snippets",
                str(args.snippets),
                "--dir",
                str(base),
            ],
            check=True,
            cwd=here.parent.parent,
            env={**os.environ, "PYTHONPATH": str(here.parent.parent)},
        )
        built.write_text(str(args.snippets))
    cli = [str(Path(sys.executable).with_name("docshelf"))]
    for variant in args.variants:  # warm-up: exports, page cache, sidecars opened once
        run_once(cli, "warm up", home, variant)
    walls: dict[str, list[float]] = {v: [] for v in args.variants}
    rss: dict[str, list[float]] = {v: [] for v in args.variants}
    for i in range(args.runs):
        query = f"term{3 * i + 1} term{7 * i + 2} term{11 * i + 5}"  # distinct per round
        for variant in args.variants:
            wall, peak = run_once(cli, query, home, variant)
            walls[variant].append(wall * 1000)
            rss[variant].append(peak)
    print(
        f"\n`docshelf search` as a new process, hybrid unless noted, {args.snippets:,} "
        f"snippets, {args.runs} runs each, round-robin"
    )
    print("| variant | p50 ms | p95 ms | peak RSS MB (max) | p50 ÷ torch |\n|---|---|---|---|---|")
    base_p50 = cuts(walls[BASELINE])[0] if BASELINE in walls else None
    for variant in args.variants:
        p50, p95 = cuts(walls[variant])
        ratio = f"{p50 / base_p50:.2f}" if base_p50 else "—"
        print(f"| {variant} | {p50:.0f} | {p95:.0f} | {max(rss[variant]):.0f} | {ratio} |")
    import_breakdown(cli, home, args.top)


if __name__ == "__main__":
    main()
