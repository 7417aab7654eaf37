"""Hybrid search at 100k and 1M snippets with the sidecar ANN index (search/engines/usearch.py).

For each size, one synthetic library (bench/search.py's builder: documents of
ten snippets, Zipf vocabulary, 384-d vectors around 200 centres; spread 1.0,
a snippet's cosine to its centre about 0.7) is written through the store, then:

- the ANN index is built from the store (``maintain(force=True)``): build time,
  index file size, and recall@10 of the vector stage against an exact scan
  (queries drawn from the same law as the snippets);
- a fresh process opens the library and runs 200 hybrid searches (2 to 5 terms,
  ``limit=10``) after 20 warm-up ones, excluding the query embedding (a
  precomputed vector), then including it (the packaged local model); it reports
  p50/p95, per-stage p50/p95 and its peak RSS (before and after loading the model);
- the same searches with ``DOCSHELF_ANN_THRESHOLD=0`` (the exact scan), for the
  comparison (excluding the embedding only);
- the same searches with ``DOCSHELF_LEXICAL_THRESHOLD=0`` (FTS5 instead of the
  tantivy sidecar, search/engines/tantivy.py), likewise.

``--home DIR`` keeps the library (and its queries) in DIR and reuses it on the next
run (``--skip-build``: only the searches). ``--ef 256 512 1024`` reports recall@10
and the vector stage's latency at each search depth on the built graph.

    nice .venv/bin/python bench/ann.py --sizes 1000000 --home DIR --no-search   # build
    flock /tmp/docshelf-bench.lock .venv/bin/python bench/ann.py --sizes 1000000 \
        --home DIR --skip-build
    flock /tmp/docshelf-bench.lock .venv/bin/python bench/ann.py [--sizes 100000 1000000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.search import DIM, FixedQueries, synthetic_library, unit
from docshelf.search.engines import usearch as ann_module
from docshelf.search.engines.tantivy import SidecarLexicalIndex
from docshelf.search.engines.usearch_graph import EXPANSION_SEARCH, read_checkpoint
from docshelf.shelf import Shelf
from docshelf.store.base import SearchFilters

N_QUERIES = 200


def peak_rss_mb(field: str = "VmHWM") -> float:
    """Peak RSS (``VmHWM``), or another field of /proc/self/status: ``RssAnon`` leaves
    out the pages of mapped files (the ANN graph, the database), which the page cache
    holds once for every process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build(home: Path, size: int) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    out: dict[str, Any] = {"snippets": size}
    with Shelf(home, embedder=FixedQueries({})) as shelf:
        t = time.perf_counter()
        vocab, centres = synthetic_library(shelf, size, rng, spread=1.0)
        out["library_s"] = time.perf_counter() - t
        assert shelf.vector_index is not None
        t = time.perf_counter()
        out["index"] = shelf.runtime.maintain_vector_index(force=True)  # the ANN index alone
        out["index_build_s"] = time.perf_counter() - t
        checkpoint = read_checkpoint(shelf.vector_index.directory)
        assert checkpoint is not None
        out["index_mb"] = (shelf.vector_index.directory / checkpoint.file).stat().st_size / 1e6
        assert shelf.lexical_index is not None
        t = time.perf_counter()
        out["lexical_index"] = shelf.lexical_index.maintain(force=True)
        out["lexical_build_s"] = time.perf_counter() - t
        out["lexical_mb"] = (
            sum(p.stat().st_size for p in shelf.lexical_index.directory.rglob("*") if p.is_file())
            / 1e6
        )
        out["database_mb"] = sum(p.stat().st_size for p in home.glob("docshelf.db*")) / 1e6
        texts = [
            " ".join(rng.choice(vocab, size=int(rng.integers(2, 6)))) for _ in range(N_QUERIES)
        ]
        picks = centres[rng.integers(len(centres), size=N_QUERIES)]
        noise = rng.normal(size=(N_QUERIES, DIM)).astype(np.float32) / np.sqrt(DIM)
        vectors = unit(picks + noise)
        out["recall@10"] = recall(shelf, vectors)
    (home / "queries.json").write_text(json.dumps(texts))
    np.save(home / "queries.npy", vectors)
    return out


def exact_top10(shelf: Shelf, queries: npt.NDArray[np.float32]) -> list[set[str]]:
    """The exact 10 nearest chunk ids of each query, scanned from the store."""
    assert shelf.vector_index is not None
    store = shelf.vector_index._store
    best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    best_seq = np.zeros((len(queries), 10), dtype=np.int64)
    for seqs, matrix in store.iter_vectors(50_000):
        sims = queries @ matrix.T
        both = np.concatenate([best, sims], axis=1)
        keys = np.concatenate([best_seq, np.broadcast_to(seqs, sims.shape)], axis=1)
        top = np.argpartition(-both, 9, axis=1)[:, :10]
        best = np.take_along_axis(both, top, axis=1)
        best_seq = np.take_along_axis(keys, top, axis=1)
    return [set(store.visible_snippets(row.tolist(), SearchFilters()).values()) for row in best_seq]


def recall(
    shelf: Shelf, queries: npt.NDArray[np.float32], want_ids: list[set[str]] | None = None
) -> float:
    """Recall@10 of the vector stage against an exact scan streamed from the store."""
    assert shelf.vector_index is not None
    want_ids = want_ids if want_ids is not None else exact_top10(shelf, queries)
    found = 0
    for q, want in zip(queries, want_ids, strict=True):
        got = {cid for cid, _ in shelf.vector_index.search(q, 10, SearchFilters())}
        found += len(got & want)
    return found / (10 * len(queries))


def ef_sweep(home: Path, efs: list[int]) -> None:
    """Recall@10 and the vector stage's latency (100 candidates, as hybrid search asks)
    at each search depth, on the library's graph."""
    vectors = np.load(home / "queries.npy")
    with Shelf(home, embedder=FixedQueries({})) as shelf:
        assert shelf.vector_index is not None and shelf.vector_index.path == "ann"
        want = exact_top10(shelf, vectors)
        for ef in efs:
            # (patched where SidecarVectorIndex looks it up)
            ann_module.expansion_search = lambda count, m=0, ef=ef: ef  # type: ignore[attr-defined, misc]
            r = recall(shelf, vectors, want)
            times = []
            for q in vectors:
                t = time.perf_counter()
                shelf.vector_index.search(q, 100, SearchFilters())
                times.append((time.perf_counter() - t) * 1000)
            print(f"    ef {ef:>5}: recall@10 {r:.3f}; vector stage p50/p95 {fmt(cuts(times))} ms")


def speed_probe() -> str:
    """How fast this machine is right now, printed beside the figures so runs at different
    times can be told apart (a shared host's speed drifts within the hour here): ms of a
    fixed pure-Python loop, and of 2M random reads over 256 MB (what a graph search and a
    cold cache feel), each the best of three."""
    loop = gather = float("inf")
    array = np.ones(64_000_000, dtype=np.float32)
    at = np.random.default_rng(0).integers(0, len(array), 2_000_000)
    for _ in range(3):
        t = time.perf_counter()
        x = 0
        for i in range(2_000_000):
            x += i
        loop = min(loop, time.perf_counter() - t)
        t = time.perf_counter()
        array[at].sum()
        gather = min(gather, time.perf_counter() - t)
    return f"{loop * 1000:.0f} ms loop, {gather * 1000:.0f} ms reads"


def cuts(values: list[float]) -> tuple[float, float]:
    c = statistics.quantiles(values, n=100)
    return c[49], c[94]


def measure(shelf: Shelf, queries: list[str], keep: list[Any] | None = None) -> dict[str, Any]:
    """p50/p95 of whole searches and of their stages; ``keep`` gets each result's hits
    (chunk id and scores) and candidate pool, to compare two code paths."""
    for q in queries[:20]:
        shelf.search(q, limit=10)
    times: list[float] = []
    cpu: list[float] = []  # the searching thread's own CPU time: what waiting for a core
    stages: dict[str, list[float]] = {}  # on a shared machine leaves out
    for q in queries:
        t, c = time.perf_counter(), time.thread_time()
        result = shelf.search(q, limit=10)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        if keep is not None:
            hits = [(h.chunk.id, h.score, h.scores.lexical, h.scores.vector) for h in result.hits]
            keep.append({"query": q, "hits": hits, "candidates": result.candidates})
    return {
        "total": cuts(times),
        "cpu": cuts(cpu),
        "stages": {k: cuts(v) for k, v in stages.items()},
        "times": times,
        "cpu_times": cpu,
    }


def engine_times(
    shelf: Shelf, texts: list[str], vectors: npt.NDArray[np.float32]
) -> dict[str, Any]:
    """The engines' own time on each benchmark query, called directly as search calls
    them (tantivy: the same query object, 110 hits; usearch: the same graph, ef and k,
    for the query vector, and at the base depth for the feedback pass's moved vector),
    everything around them (building the query, the moved vector) outside the clock."""
    from docshelf.search.order import fusion
    from docshelf.search.pipeline import run
    from docshelf.search.query import lexical_terms, parse_query
    from docshelf.search.stages.feedback import feedback_query
    from docshelf.search.stages.recall import Recall

    lexical, vector, retriever = shelf.lexical_index, shelf.vector_index, shelf.retriever
    assert lexical is not None and vector is not None
    if not isinstance(lexical, SidecarLexicalIndex) or lexical.path != "tantivy":
        return {}
    if not isinstance(vector, ann_module.SidecarVectorIndex):
        return {}
    if vector.path != "ann":
        return {}
    searcher = lexical._index.searcher()
    graph = vector._graph
    assert graph is not None
    k = 110  # what search asks of either engine, unfiltered: 100 candidates + 10
    # the query's, by the rule SidecarVectorIndex looks up (ef_sweep patches it there)
    deep = max(ann_module.expansion_search(len(graph), graph.connectivity), k)  # type: ignore[attr-defined]
    near = max(EXPANSION_SEARCH, k)  # the feedback pass's (SidecarVectorIndex.search)
    lex_ms: list[float] = []
    ann_ms: list[float] = []
    both_ms: list[float] = []
    for n, (text, q) in enumerate(
        [*zip(texts[:20], vectors[:20], strict=True), *zip(texts, vectors, strict=True)]
    ):
        terms = lexical_terms(parse_query(text).text)
        query = lexical._query(terms)
        prepared, _ = retriever.prepare(text)
        assert prepared is not None
        run([Recall(), *fusion(retriever.fusion)], prepared)  # the first fusion
        top = [c.id for c in prepared.candidates[: retriever.fusion.feedback_docs]]
        found = shelf.store.get_vectors(top)
        moved = feedback_query(
            q, [found[i] for i in top if i in found], retriever.fusion.feedback_weight
        )
        graph.expansion_search = deep
        t0 = time.perf_counter()
        searcher.search(query, k, count=False)
        t1 = time.perf_counter()
        graph.search(q, k)
        t2 = time.perf_counter()
        graph.expansion_search = near  # (outside the clock)
        t3 = time.perf_counter()
        graph.search(moved, k)
        t4 = time.perf_counter()
        if n >= 20:  # the first 20: warm-up, as for the searches
            lex_ms.append((t1 - t0) * 1000)
            ann_ms.extend([(t2 - t1) * 1000, (t4 - t3) * 1000])
            both_ms.append((t2 - t0 + t4 - t3) * 1000)
    return {"tantivy": cuts(lex_ms), "ann": cuts(ann_ms), "engines": cuts(both_ms)}


def search(
    home: Path, with_model: bool, dump: Path | None = None, engines: bool = False
) -> dict[str, Any]:
    texts = json.loads((home / "queries.json").read_text())
    vectors = np.load(home / "queries.npy")
    fixed = FixedQueries(dict(zip(texts, vectors, strict=True)))
    out: dict[str, Any] = {}
    with Shelf(home, embedder=fixed) as shelf:
        assert shelf.vector_index is not None
        out["path"] = shelf.vector_index.path
        assert shelf.lexical_index is not None
        out["lexical_path"] = shelf.lexical_index.path
        kept: list[Any] = []
        out["excluding"] = measure(shelf, texts, kept)
        if dump is not None:
            dump.write_text(json.dumps(kept))
        out["rss_mb"] = peak_rss_mb()
        out["anon_mb"] = peak_rss_mb("RssAnon")
        if engines:
            out["engines"] = engine_times(shelf, texts, vectors)
        if with_model:
            model = query_model(home)
            model.embed(["warm up"])
            fixed.embed = lambda texts: model.embed(texts)  # type: ignore[method-assign]
            out["including"] = measure(shelf, texts)
            out["rss_with_model_mb"] = peak_rss_mb()
    return out


def query_model(home: Path) -> Any:
    """The packaged model for query vectors, on the runtime ``BENCH_QUERY_MODEL`` names:
    ``served`` (the default: what a server or the library embeds queries with once the
    query model is ready, ``Runtime.query_embedder`` — the lean export with its graph
    optimised, a thread per core), ``torch`` (``LocalEmbedder``: the ingest model, what
    they used before), ``onnx`` (the fp32 export, ONNX Runtime as
    ``DOCSHELF_EMBED_BACKEND=onnx`` sets it up) or ``lean`` (what a CLI search uses: the
    same export, no optimisation, one thread, weights mapped). The exports are cached in
    the library's ``models/``."""
    runtime = os.environ.get("BENCH_QUERY_MODEL", "served")
    if runtime == "onnx":
        from docshelf.embed.onnx import OnnxEmbedder

        return OnnxEmbedder(home / "models")
    if runtime in ("lean", "served"):
        from docshelf.embed.lean import LeanEmbedder

        lean = LeanEmbedder(home / "models")
        return lean.for_many_queries() if runtime == "served" else lean
    from docshelf.embed.local import LocalEmbedder

    return LocalEmbedder()


def child(
    home: Path,
    threshold: int | None,
    with_model: bool,
    lexical_threshold: int | None = None,
    *,
    src: Path | None = None,
    dump: Path | None = None,
    engines: bool = False,
) -> dict[str, Any]:
    """One searching process; ``src``: import docshelf from that source tree instead
    (the code before a change), run by that tree's own copy of this script when it has
    one (its modules may have other names); ``dump``: write each result there."""
    env = dict(os.environ, DOCSHELF_RETRIEVAL_CACHE_SECONDS="0")
    if threshold is not None:
        env["DOCSHELF_ANN_THRESHOLD"] = str(threshold)
    if lexical_threshold is not None:
        env["DOCSHELF_LEXICAL_THRESHOLD"] = str(lexical_threshold)
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    script = Path(__file__)
    if src is not None and (src.resolve().parent / "bench" / "ann.py").is_file():
        script = src.resolve().parent / "bench" / "ann.py"
    cmd = [sys.executable, str(script), "--search", str(home)]
    if with_model:
        cmd.append("--model")
    if dump is not None:
        cmd += ["--dump", str(dump)]
    if engines:
        cmd.append("--engines")
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def fmt(pair: tuple[float, float]) -> str:
    return f"{pair[0]:.1f} / {pair[1]:.1f}"


def report_build(size: int, b: dict[str, Any]) -> None:
    print(
        f"{size:>9,} snippets: library written in {b['library_s']:.0f} s "
        f"(database {b['database_mb']:.0f} MB); ANN index {b['index']} in "
        f"{b['index_build_s']:.0f} s, {b['index_mb']:.0f} MB; "
        f"recall@10 of the vector stage {b['recall@10']:.3f}; lexical index "
        f"{b['lexical_index']} in {b['lexical_build_s']:.0f} s, {b['lexical_mb']:.0f} MB",
        flush=True,
    )


def same_results(a: Path, b: Path) -> tuple[int, int]:
    """Assert that two dumps hold the same hits (ids, in order, and each engine's scores)
    and candidate pools, query by query; the number of queries compared, and of hits
    whose shown score differs (the code before issue 35 raised the score of a hit placed
    by a rule to just above the top: such a hit now shows its own)."""
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    assert len(left) == len(right), (len(left), len(right))
    scores = 0
    for x, y in zip(left, right, strict=True):
        same = [(h[0], h[2], h[3]) for h in x["hits"]] == [(h[0], h[2], h[3]) for h in y["hits"]]
        assert same and x["candidates"] == y["candidates"], (
            f"results differ for {x['query']!r}:\n{x}\n{y}"
        )
        scores += sum(h[1] != k[1] for h, k in zip(x["hits"], y["hits"], strict=True))
    return len(left), scores


def changed_results(a: Path, b: Path) -> str:
    """How two dumps differ (for a change meant to move results): the queries whose hits
    are the same ids in the same order, and the mean share of the top hits kept."""
    pairs = zip(json.loads(a.read_text()), json.loads(b.read_text()), strict=True)
    ids = [([h[0] for h in x["hits"]], [h[0] for h in y["hits"]]) for x, y in pairs]
    same = sum(x == y for x, y in ids)
    kept = statistics.mean(len(set(x) & set(y)) / max(1, len(x)) for x, y in ids)
    return (
        f"{same} of {len(ids)} queries with the same hits in the same order, "
        f"{kept:.4f} of the hits kept"
    )


def report_against(home: Path, args: argparse.Namespace) -> None:
    """The code before the change (``--baseline SRC``) and this code, ``--rounds``
    times each, interleaved, in fresh processes on the same library; every result of
    the two must be the same. Then the engines' own time, from this code's process."""
    rounds: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for label, src in (("before", args.baseline), ("after", None)):
                dump = Path(tmp) / f"{label}-{r}.json"
                model = label == "after" and not args.no_model  # with the model: this code's
                where = args.baseline_home if label == "before" and args.baseline_home else home
                got = child(where, None, model, src=src, dump=dump, engines=label == "after")
                rounds[label].append(got)
                print(
                    f"    round {r + 1} {label:>6}: hybrid excluding embedding p50/p95 "
                    f"{fmt(got['excluding']['total'])} ms (CPU time "
                    f"{fmt(got['excluding']['cpu'])} ms); peak RSS {got['rss_mb']:.0f} MB "
                    f"(anonymous now: {got['anon_mb']:.0f} MB); load average "
                    f"{os.getloadavg()[0]:.1f}; speed probe {speed_probe()}",
                    flush=True,
                )
                stages = ", ".join(f"{k} {fmt(v)}" for k, v in got["excluding"]["stages"].items())
                print(f"        per stage p50/p95 ms: {stages}", flush=True)
                if "including" in got:
                    inc = got["including"]
                    stages = ", ".join(f"{k} {fmt(v)}" for k, v in inc["stages"].items())
                    print(
                        f"    round {r + 1} {label:>6}, including the query embedding (the "
                        f"local model): p50/p95 {fmt(inc['total'])} ms; per stage {stages}; "
                        f"peak RSS {got['rss_with_model_mb']:.0f} MB",
                        flush=True,
                    )
            old, new = Path(tmp) / f"before-{r}.json", Path(tmp) / f"after-{r}.json"
            if args.changes:
                print(f"    round {r + 1}: {changed_results(old, new)}")
            else:
                n, moved = same_results(old, new)
                print(
                    f"    round {r + 1}: the {n} results are identical (hits, engine scores, "
                    f"pools); {moved} hits show another score"
                )
    for label, runs in rounds.items():
        times = [t for run in runs for t in run["excluding"]["times"]]
        cpu = [t for run in runs for t in run["excluding"]["cpu_times"]]
        print(
            f"    all rounds {label:>6}: p50/p95 {fmt(cuts(times))} ms (CPU time "
            f"{fmt(cuts(cpu))} ms) over {len(times)} searches"
        )
    including = [
        t for run in rounds["after"] if "including" in run for t in run["including"]["times"]
    ]
    if including:
        print(
            f"    all rounds  after, including the query embedding: p50/p95 "
            f"{fmt(cuts(including))} ms over {len(including)} searches"
        )
    eng = [run["engines"] for run in rounds["after"] if run.get("engines")]
    if eng:
        e = eng[-1]
        after = cuts([t for run in rounds["after"] for t in run["excluding"]["times"]])
        print(
            f"    engines alone (last round): tantivy p50/p95 {fmt(e['tantivy'])} ms, "
            f"usearch {fmt(e['ann'])} ms per search; per hybrid query (1 tantivy + 2 usearch) "
            f"{fmt(e['engines'])} ms; docshelf / engines: p50 {after[0] / e['engines'][0]:.1f}x, "
            f"p95 {after[1] / e['engines'][1]:.1f}x",
            flush=True,
        )


def report_searches(home: Path, args: argparse.Namespace) -> None:
    if args.baseline:
        report_against(home, args)
        return
    probe = speed_probe()
    ann = child(home, None, with_model=not args.no_model)
    including = "" if args.no_model else f"; including {fmt(ann['including']['total'])} ms"
    including += f"; speed probe {probe} before, {speed_probe()} after"
    print(
        f"    ANN ({ann['path']}) + {ann['lexical_path']}: hybrid excluding embedding p50/p95 "
        f"{fmt(ann['excluding']['total'])} ms{including}; peak RSS {ann['rss_mb']:.0f} MB"
        + ("" if args.no_model else f" ({ann['rss_with_model_mb']:.0f} MB with the model)"),
        flush=True,
    )
    for label in ("excluding", "including"):
        if label in ann:
            stages = ", ".join(f"{k} {fmt(v)}" for k, v in ann[label]["stages"].items())
            print(f"        per stage ({label} embedding) p50/p95 ms: {stages}", flush=True)
    others: list[tuple[str, int | None, int | None]] = []
    if not args.no_fts5:
        others.append(("FTS5 instead of the lexical index", None, 0))
    if not args.no_exact:
        others.append(("exact scan instead of ANN", 0, None))
    for label, vector_threshold, lexical_threshold in others:
        ex = child(home, vector_threshold, with_model=False, lexical_threshold=lexical_threshold)
        print(
            f"    {label} ({ex['path']} + {ex['lexical_path']}): hybrid excluding embedding "
            f"p50/p95 {fmt(ex['excluding']['total'])} ms; peak RSS {ex['rss_mb']:.0f} MB",
            flush=True,
        )
        stages = ", ".join(f"{k} {fmt(v)}" for k, v in ex["excluding"]["stages"].items())
        print(f"        per stage p50/p95 ms: {stages}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--search", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--model", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact-scan comparison")
    ap.add_argument("--no-fts5", action="store_true", help="skip the FTS5 comparison")
    ap.add_argument("--no-model", action="store_true", help="skip the figures with the model")
    ap.add_argument("--home", type=Path, help="keep the library here (one size) and reuse it")
    ap.add_argument("--skip-build", action="store_true", help="reuse the library in --home")
    ap.add_argument("--no-search", action="store_true", help="build only")
    ap.add_argument("--ef", type=int, nargs="+", help="recall and latency at these ef")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="a source tree (its src/) of the code before a change: time both, "
        "interleaved, and assert the same results",
    )
    ap.add_argument(
        "--baseline-home",
        type=Path,
        help="with --baseline: a copy of the library whose sidecar indexes the baseline "
        "code built (when this code's layout differs); default: --home",
    )
    ap.add_argument("--rounds", type=int, default=2, help="with --baseline: rounds of each")
    ap.add_argument(
        "--changes",
        action="store_true",
        help="with --baseline: results may differ (a change meant to move them); report how",
    )
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--engines", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.search:
        print(json.dumps(search(args.search, args.model, args.dump, args.engines)))
        return
    for size in args.sizes:
        with contextlib.ExitStack() as stack:
            if args.home:
                home = args.home
                home.mkdir(parents=True, exist_ok=True)
            else:
                tmp = stack.enter_context(
                    tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP"))
                )
                home = Path(tmp)
            if args.skip_build:
                b = json.loads((home / "build.json").read_text())
            else:
                b = build(home, size)
                (home / "build.json").write_text(json.dumps(b))
            report_build(size, b)
            if args.ef:
                ef_sweep(home, args.ef)
            if not args.no_search:
                report_searches(home, args)


if __name__ == "__main__":
    main()
