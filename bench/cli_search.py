"""``docshelf search`` as a whole new process: wall time, CPU time and peak RSS, per path.

What a person at a terminal, or an agent calling the CLI as a tool, pays per query:
the interpreter, the imports, opening the library and its sidecar indexes, the query
vector, the search and the JSON. One library (bench/search.py's builder: documents of
ten snippets, Zipf vocabulary, 384-d vectors around 200 centres, spread 1.0; the ANN
and tantivy sidecars built) bound to the packaged model's id, so the real CLI embeds
each query with the real model. It is cached in ``--dir`` and reused by the next run.

Variants, run round-robin (so a noisy moment hits them alike), after one warm-up each
(which also writes the ONNX exports and compiles each tree's modules once):

- ``before``       the code before this change (``--before SRC``, e.g. ``git archive
                   4e2bfed | tar -x -C DIR``), in-process (``DOCSHELF_SEARCH_HELPER=off``;
                   a tree older than the helper ignores it): no runtime set, so the
                   lean query model
- ``before-lex``   the same tree, ``--mode lexical`` (no query vector)
- ``in-process``   this tree, ``DOCSHELF_SEARCH_HELPER=off``: cli/quick.py, in-process
- ``lexical``      this tree, in-process, ``--mode lexical``
- ``resident``     this tree, ``DOCSHELF_SEARCH_HELPER=use``, a helper running
                   (cli/resident.py, started once before the runs; its RSS reported apart)
- ``torch``        this tree, ``DOCSHELF_EMBED_BACKEND=torch``, in-process (opt-in)

Each child runs ``python -m docshelf.cli search … --json`` with its tree first on
``PYTHONPATH`` and bytecode caching on, as an installed docshelf does. Wall time, CPU
time (user + system: less sensitive to a busy machine than wall time) and peak RSS are
each child's own (``os.wait4``); the parent stays small (the library is built in a
child). ``bench/ann.py``'s speed probe is printed from before and after the runs. Then
``python -X importtime`` of one in-process search of this tree, its import time summed
by top-level package.

    flock /tmp/docshelf-bench.lock .venv/bin/python bench/cli_search.py \
        [--snippets 100000] [--runs 20] [--dir DIR] [--before SRC] [--variants ...]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "src"
# name: (tree, environment changes, extra CLI arguments)
VARIANTS: dict[str, tuple[str, dict[str, str | None], list[str]]] = {
    "before": ("before", {"DOCSHELF_SEARCH_HELPER": "off"}, []),
    "before-lex": ("before", {"DOCSHELF_SEARCH_HELPER": "off"}, ["--mode", "lexical"]),
    "in-process": ("current", {"DOCSHELF_SEARCH_HELPER": "off"}, []),
    "lexical": ("current", {"DOCSHELF_SEARCH_HELPER": "off"}, ["--mode", "lexical"]),
    "resident": ("current", {"DOCSHELF_SEARCH_HELPER": "use"}, []),
    "torch": ("current", {"DOCSHELF_SEARCH_HELPER": "off", "DOCSHELF_EMBED_BACKEND": "torch"}, []),
}
DEFAULT_VARIANTS = ["before", "before-lex", "in-process", "lexical", "resident"]
BASELINE = "before"


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
            shelf.runtime.maintain_vector_index(force=True)
        if shelf.lexical_index is not None:
            shelf.lexical_index.maintain(force=True)
    print(f"built {snippets:,} snippets in {time.perf_counter() - t:.0f} s", file=sys.stderr)


def child_env(src: Path, home: Path, changes: dict[str, str | None]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules compiled once
    env.update(PYTHONPATH=str(src), DOCSHELF_HOME=str(home), DOCSHELF_EMBEDDER="local")
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_once(
    trees: dict[str, Path], query: str, home: Path, variant: str
) -> tuple[float, float, float]:
    """One ``docshelf search`` as a new process: (wall s, CPU s, peak RSS MB)."""
    tree, changes, extra = VARIANTS[variant]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "docshelf.cli", "search", query, "--json", *extra],
            env=child_env(trees[tree], home, changes),
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
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def probe() -> str:
    """``bench/ann.py``'s speed probe, in a child (this process stays small): how fast the
    shared host is right now, so runs at different times can be told apart."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", "from bench.ann import speed_probe; print(speed_probe())"],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    return done.stdout.strip() or f"unavailable ({done.stderr.strip()[-200:]})"


def start_helper(home: Path) -> subprocess.Popen[bytes]:
    """This tree's resident helper for the library, listening once it returns."""
    env = child_env(HERE, home, {"DOCSHELF_SEARCH_HELPER_IDLE": "3600"})
    proc = subprocess.Popen([sys.executable, "-m", "docshelf.cli.resident", str(home)], env=env)
    deadline = time.monotonic() + 300
    while not (home / "search.sock").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the search helper did not start")
        time.sleep(0.1)
    return proc


def helper_memory(pid: int) -> str:
    """The helper's resident memory, split into its own (anonymous) pages and the pages
    of mapped files (the model's weights, the ANN graph: page cache, shared with every
    process that maps them)."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    parts = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
    return ", ".join(f"{k} {fields[k].strip()}" for k in parts if k in fields)


def cuts(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    c = statistics.quantiles(values, n=100, method="inclusive")
    return c[49], c[94]


def import_breakdown(home: Path, top: int) -> None:
    """Import time of one in-process search of this tree, self time by top-level package."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "docshelf.cli", "search", "term1 term2"],
        env=child_env(HERE, home, {"DOCSHELF_SEARCH_HELPER": "off"}),
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
    print(f"\nimports of one in-process `docshelf search` (-X importtime): {total / 1e3:.0f} ms")
    print("| package | self time, summed (ms) |\n|---|---|")
    for package, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {package} | {us / 1e3:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snippets", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--before", type=Path, default=None, help="src folder of the old code")
    ap.add_argument("--variants", nargs="+", default=None, choices=list(VARIANTS))
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
    trees = {"current": HERE}
    variants = args.variants or [
        v for v in DEFAULT_VARIANTS if args.before or VARIANTS[v][0] != "before"
    ]
    if args.before:
        trees["before"] = args.before.resolve()
    helper = start_helper(home) if "resident" in variants else None
    probe_before = probe()
    try:
        for variant in variants:  # warm-up: exports, page cache, .pyc files, sidecars
            run_once(trees, "warm up", home, variant)
        walls: dict[str, list[float]] = {v: [] for v in variants}
        cpus: dict[str, list[float]] = {v: [] for v in variants}
        rss: dict[str, list[float]] = {v: [] for v in variants}
        for i in range(args.runs):
            query = f"term{3 * i + 1} term{7 * i + 2} term{11 * i + 5}"  # distinct per round
            for variant in variants:
                wall, cpu, peak = run_once(trees, query, home, variant)
                walls[variant].append(wall * 1000)
                cpus[variant].append(cpu * 1000)
                rss[variant].append(peak)
        held = helper_memory(helper.pid) if helper else ""
    finally:
        if helper is not None:
            helper.send_signal(signal.SIGTERM)
            helper.wait(timeout=60)
    print(
        f"\n`docshelf search` as a new process, hybrid unless noted, {args.snippets:,} "
        f"snippets, {args.runs} runs each, round-robin; load average "
        f"{os.getloadavg()[0]:.1f} at the end; speed probe {probe_before} before, "
        f"{probe()} after"
    )
    print(
        "| variant | p50 ms | p95 ms | CPU p50 ms | peak RSS MB (max) | p50 ÷ before |\n"
        "|---|---|---|---|---|---|"
    )
    base_p50 = cuts(walls[BASELINE])[0] if BASELINE in walls else None
    for variant in variants:
        p50, p95 = cuts(walls[variant])
        ratio = f"{p50 / base_p50:.2f}" if base_p50 else "—"
        cpu50 = statistics.median(cpus[variant])
        print(
            f"| {variant} | {p50:.0f} | {p95:.0f} | {cpu50:.0f} | {max(rss[variant]):.0f} "
            f"| {ratio} |"
        )
    if held:
        print(f"\nthe resident helper after the runs: {held}")
    import_breakdown(home, args.top)


if __name__ == "__main__":
    main()
