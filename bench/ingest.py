"""Ingest benchmark: `add` of a folder of Markdown files against the bare model.

Prints, for one run on this machine:
- `add` wall time with the local model (model loaded beforehand; its load time
  is printed apart), and the ratio to a bare `model.encode()` of the very same
  retrieval texts in the same process — the pipeline's overhead over the model;
- re-sync with no change, as a fraction of the first `add`;
- lexical-only `add` throughput (no model) in files/s;
- peak RSS of the process.

    .venv/bin/python bench/ingest.py [--files N] [--repeat R] [--memory-files N ...]
        [--backend torch|onnx|onnx-int8]

With ``--backend onnx`` the baseline is the ONNX session's own ``embed`` of the same
texts (tokenising and running the graph), as ``model.encode()`` is for PyTorch.

The files are built from ../shared/data/dbpedia-5k (five passages per file,
one `##` heading each) when that is present, else from generated text.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from docshelf.embed import DEFAULT_BACKEND, Embedder, make_embedder
from docshelf.embed.local import LocalEmbedder
from docshelf.model import Tier
from docshelf.shelf import Shelf

# Ingest alone: enrichment follows indexing and is measured by bench/enrich.py.
os.environ.setdefault("DOCSHELF_ENRICH", "off")

ROOT = Path(__file__).resolve().parent.parent
DBPEDIA = ROOT.parent / "shared" / "data" / "dbpedia-5k" / "corpus.jsonl"


def passages() -> list[tuple[str, str]]:
    if DBPEDIA.is_file():
        rows = [json.loads(line) for line in DBPEDIA.open(encoding="utf-8")]
        return [(r["title"], r["text"]) for r in rows]
    rng = random.Random(7)
    words = [f"w{rng.randrange(5000)}" for _ in range(200_000)]
    return [
        (f"Topic {i}", " ".join(words[i * 40 : i * 40 + rng.randrange(20, 120)]))
        for i in range(5000)
    ]


def make_folder(dst: Path, n_files: int) -> None:
    pool = passages()
    for i in range(n_files):
        parts = [pool[(i * 5 + j) % len(pool)] for j in range(5)]
        body = "\n\n".join(f"## {title}\n\n{text}" for title, text in parts)
        (dst / f"note{i:05}.md").write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")


def child_peak_mb(folder: Path, home: Path, embedder: str, backend: str) -> float:
    """Peak RSS (VmHWM) of a real `docshelf add` process, read by that process at its end.

    (``ru_maxrss`` would not do: on Linux it carries the parent's high-water
    mark across fork and exec.)"""
    code = (
        "import sys; from docshelf.cli import main; "
        "sys.argv = ['docshelf', '--json', 'add', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0]\n"
        "print(hwm.split()[1], file=sys.stderr)"
    )
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(home),
        "DOCSHELF_EMBEDDER": embedder,
        "DOCSHELF_EMBED_BACKEND": backend,
    }
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stderr.strip().splitlines()[-1]) / 1024


def memory(tmp: Path, n_files: int, backend: str, local_sizes: list[int] | None) -> None:
    """Peak memory of `add` at two library sizes: it must not grow with the file count."""
    for embedder, sizes in (
        ("none", (n_files // 4, n_files)),
        ("local", local_sizes or (n_files // 10, n_files // 4)),
    ):
        for n in sizes:
            folder = tmp / f"mem-{embedder}-{n}"
            folder.mkdir()
            make_folder(folder, n)
            home = tmp / f"home-{embedder}-{n}"
            if embedder == "local" and backend.startswith("onnx"):  # export outside the measure
                shared = tmp / "models"
                make_embedder("local", backend=backend, home=tmp).embed(["export"])  # type: ignore[union-attr]
                home.mkdir()
                (home / "models").symlink_to(shared)
            mb = child_peak_mb(folder, home, embedder, backend)
            label = f"{embedder}, {backend}" if embedder == "local" else embedder
            print(f"peak RSS of `docshelf add` ({label}, {n} files): {mb:.0f} MB")


@functools.cache
def sentence_transformer(model_dir: Path) -> Any:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    model.encode(["warm up"])
    return model


def bare_encode(embedder: Embedder, texts: list[str]) -> float:
    """Seconds of the bare model over ``texts``: sentence-transformers' ``model.encode()``
    of the same weights for PyTorch (docshelf runs them without that library, same
    vectors); for ONNX the session's own ``embed`` (tokenising and running the graph),
    with nothing of docshelf's around it."""
    if isinstance(embedder, LocalEmbedder):
        model = sentence_transformer(embedder._dir)
        t = time.perf_counter()
        model.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True)
        return time.perf_counter() - t
    t = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of add and encode")
    ap.add_argument(
        "--memory-files", type=int, nargs="+", help="file counts for the model's memory probe"
    )
    ap.add_argument("--backend", default=os.environ.get("DOCSHELF_EMBED_BACKEND", DEFAULT_BACKEND))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        make_folder(folder, args.files)

        embedder = make_embedder("local", backend=args.backend, home=Path(tmp))
        assert embedder is not None
        t = time.perf_counter()
        embedder.embed(["warm up"])  # loads the model (an ONNX path exports it first)
        load_s = time.perf_counter() - t

        # Rounds of `add` (into a fresh library: no cached vectors) and the bare encode,
        # alternated so that a slow spell of the machine falls on both; the ratio is
        # that of the medians.
        add_times: list[float] = []
        encode_times: list[float] = []
        for round_ in range(args.repeat):
            with Shelf(Path(tmp) / f"home{round_}", embedder=embedder) as shelf:
                t = time.perf_counter()
                report = shelf.add(folder)
                add_times.append(time.perf_counter() - t)
                assert report.failed == 0, report.failures[:3]
                texts = [
                    c.retrieval_text
                    for d in shelf.documents()
                    for c in shelf.store.chunks_of_document(d.id, Tier.SNIPPET)
                ]
                t = time.perf_counter()
                shelf.sync()
                resync_s = time.perf_counter() - t
            encode_times.append(bare_encode(embedder, texts))
        add_s = statistics.median(add_times)
        encode_s = statistics.median(encode_times)

        with Shelf(Path(tmp) / "home-lexical", embedder=None) as shelf:
            t = time.perf_counter()
            shelf.add(folder)
            lexical_s = time.perf_counter() - t

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"backend: {args.backend}; files: {args.files}, snippets: {len(texts)}")
    print(f"model load (with the ONNX export on a first use): {load_s:.2f} s")
    print(f"add (local model): {add_s:.2f} s  ({len(texts) / add_s:.1f} snippets/s)")
    print(f"bare model.encode of the same texts: {encode_s:.2f} s")
    print(f"ratio add / encode: {add_s / encode_s:.3f} (medians of {args.repeat} rounds)")
    rounds = zip(add_times, encode_times, strict=True)
    print("  per round: " + ", ".join(f"{a / e:.3f}" for a, e in rounds))
    print(f"re-sync, no change: {resync_s * 1000:.1f} ms = {resync_s / add_s:.2%} of add")
    print(f"lexical-only add: {lexical_s:.2f} s = {args.files / lexical_s:.0f} files/s")
    print(f"peak RSS of this benchmark process: {peak_mb:.0f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        memory(Path(tmp), args.files, args.backend, args.memory_files)


if __name__ == "__main__":
    main()
