"""Search latency at 10k and 100k snippets (hybrid, warm).

The libraries are synthetic but shaped like real ones: documents of ten
snippets, text drawn from a Zipf-distributed vocabulary (so BM25 sees common
and rare terms), and 384-dimensional unit vectors around 200 cluster centres.
They are written straight through the store, so building 100k snippets takes
seconds rather than the model's twenty minutes.

Two figures per size, over 200 queries after a warm-up:
- excluding the query embedding (a precomputed query vector), which is
  docshelf's own cost: lexical + vector scan + fusion + fetching and citing;
- including it, with the real local model embedding each query.

    .venv/bin/python bench/search.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from docshelf.embed.local import LocalEmbedder
from docshelf.model import Chunk, Document, Tier, chunk_id, document_id
from docshelf.shelf import Shelf

DIM = 384
PER_DOC = 10
# Queries repeat across rounds: measure search, not the retrieval cache.
os.environ["DOCSHELF_RETRIEVAL_CACHE_SECONDS"] = "0"


class FixedQueries:
    """An embedder that answers each benchmark query with its precomputed vector."""

    model_id = "bench-synthetic"
    dim = DIM
    window = 256

    def __init__(self, vectors: dict[str, npt.NDArray[np.float32]]) -> None:
        self.vectors = vectors

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.vectors[t] for t in texts])


def unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(
        np.float32
    )
    return out


def synthetic_library(
    shelf: Shelf, n_snippets: int, rng: np.random.Generator, spread: float
) -> tuple[list[str], npt.NDArray[np.float32]]:
    """A synthetic library (documents of ten snippets, Zipf vocabulary, vectors around
    200 centres), with the vectors' spread around their centre as a parameter:
    this benchmark uses 4.8 (a snippet's cosine to its centre is about 0.2: nearly
    uniform on the sphere, the hardest case for an ANN index); 1.0 gives about 0.7,
    closer to how real embeddings cluster. Returns the query vocabulary and centres."""
    vocab = [f"term{i}" for i in range(30_000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    centres = unit(rng.normal(size=(200, DIM)).astype(np.float32))
    shelf.store.set_meta("embedding_model", FixedQueries.model_id)
    shelf.store.set_meta("embedding_dim", str(DIM))
    with shelf.store.transaction():
        for d in range(n_snippets // PER_DOC):
            fp = f"{d:016x}".rjust(64, "0")[::-1]
            did = document_id(fp)
            words = rng.choice(len(vocab), size=(PER_DOC, 60), p=weights)
            texts = [" ".join(vocab[w] for w in row) for row in words]
            header = f"[DOC: Doc {d}]"
            section = Chunk(
                chunk_id(fp, Tier.SECTION, 0),
                did,
                Tier.SECTION,
                0,
                "\n\n".join(texts),
                header,
                0,
                1,
            )
            snippets = [
                Chunk(
                    chunk_id(fp, Tier.SNIPPET, i),
                    did,
                    Tier.SNIPPET,
                    i,
                    t,
                    header,
                    0,
                    1,
                    parent_id=section.id,
                )
                for i, t in enumerate(texts)
            ]
            centre = centres[rng.integers(len(centres))]
            noise = rng.normal(size=(PER_DOC, DIM)).astype(np.float32) / np.sqrt(DIM)
            doc = Document(
                did,
                fp,
                f"Doc {d}",
                f"/bench/doc{d}.md",
                f"doc{d}.md",
                None,
                "bench",
                "markdown",
                1000,
                0.0,
                0.0,
            )
            shelf.store.put_document(doc, [section, *snippets], unit(centre + spread * noise))
    return vocab[:5000], centres


def measure(
    shelf: Shelf, queries: list[str]
) -> tuple[float, float, dict[str, tuple[float, float]]]:
    """p50 and p95 of whole searches, and of each stage the search reports."""
    for q in queries[:20]:
        shelf.search(q, limit=10)
    times = []
    stages: dict[str, list[float]] = {}
    for q in queries:
        t = time.perf_counter()
        result = shelf.search(q, limit=10)
        times.append((time.perf_counter() - t) * 1000)
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
    cuts = statistics.quantiles(times, n=100)
    per_stage = {}
    for stage, values in stages.items():
        c = statistics.quantiles(values, n=100)
        per_stage[stage] = (c[49], c[94])
    return cuts[49], cuts[94], per_stage


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    model = LocalEmbedder()
    model.embed(["warm up"])
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            queries_vec: dict[str, npt.NDArray[np.float32]] = {}
            fixed = FixedQueries(queries_vec)
            with Shelf(Path(tmp), embedder=fixed) as shelf:
                t = time.perf_counter()
                vocab, _ = synthetic_library(shelf, size, rng, spread=4.8)
                build_s = time.perf_counter() - t
                queries = [
                    " ".join(rng.choice(vocab, size=int(rng.integers(2, 6)))) for _ in range(200)
                ]
                for q in queries:
                    queries_vec[q] = unit(rng.normal(size=DIM).astype(np.float32))
                excl = measure(shelf, queries)
                t = time.perf_counter()
                model.embed(queries)
                embed_ms = (time.perf_counter() - t) * 1000 / len(queries)
                # the same searches with the real model embedding each query
                fixed.embed = lambda texts: model.embed(texts)  # type: ignore[method-assign]
                incl = measure(shelf, queries)
        print(f"{size:>7} snippets (built in {build_s:.1f} s)")
        print(
            f"        hybrid, excluding query embedding: p50 {excl[0]:.1f} ms, p95 {excl[1]:.1f} ms"
        )
        print(
            f"        hybrid, including query embedding: p50 {incl[0]:.1f} ms, p95 {incl[1]:.1f} ms"
        )
        print(f"        (one query embedding alone, batched mean: {embed_ms:.1f} ms)")
        stages = ", ".join(f"{k} {v[0]:.1f}/{v[1]:.1f}" for k, v in incl[2].items())
        print(f"        per stage p50/p95 ms (with the model): {stages}")


if __name__ == "__main__":
    main()
