"""The embedding model's levers on this machine: speed and fidelity of each runtime and
arithmetic against PyTorch fp32 (the baseline, measured in the same run), on the same
texts, and the peak memory of embedding them as `add` does.

Prints one row per lever: snippets/s, its ratio to PyTorch fp32, the cosine of its
vectors to fp32's (mean, min). The texts are retrieval texts of a library (``--db``, a
``docshelf.db``), else generated notes.

    .venv/bin/python bench/embed_levers.py [--db HOME/docshelf.db] [--texts 600]
    .venv/bin/python bench/embed_levers.py --memory bf16|fp32   # one process per figure
"""

from __future__ import annotations

import argparse
import random
import resource
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def texts_of(db: Path | None, n: int) -> list[str]:
    if db is not None:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute("SELECT header, text FROM chunks WHERE tier = 'snippet' ORDER BY seq")
        texts = [f"{h}\n\n{t}" if h else t for h, t in rows]
        step = max(1, len(texts) // n)
        return texts[::step][:n]
    rng = random.Random(3)
    words = [f"word{i}" for i in range(3000)]
    return [" ".join(rng.choices(words, k=rng.randint(20, 180))) for _ in range(n)]


def timed(embed: Callable[[list[str]], Any], texts: list[str]) -> tuple[float, Any]:
    embed(texts[:32])  # loaded and warm
    started = time.perf_counter()
    vectors = embed(texts)
    return len(texts) / (time.perf_counter() - started), np.asarray(vectors)


def quantised(per_channel: bool) -> Callable[[Path], Any]:
    """An int8 ONNX embedder made from the fp32 export (dynamic quantisation)."""

    def make(cache: Path) -> Any:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from docshelf.embed.onnx import OnnxEmbedder

        fp32 = OnnxEmbedder(cache)
        out = cache / f"study-int8-{'channel' if per_channel else 'tensor'}.onnx"
        quantize_dynamic(
            str(fp32.model_path()), str(out), weight_type=QuantType.QInt8, per_channel=per_channel
        )
        embedder = OnnxEmbedder(cache)
        embedder.model_path = lambda: out  # type: ignore[method-assign]
        return embedder

    return make


def levers() -> dict[str, Callable[[Path], Any]]:
    from docshelf.embed.local import LocalEmbedder
    from docshelf.embed.onnx import OnnxEmbedder

    return {
        "PyTorch bf16 autocast": lambda _: LocalEmbedder(precision="bf16"),
        "ONNX Runtime fp32": lambda cache: OnnxEmbedder(cache),
        "ONNX int8, per tensor": quantised(False),
        "ONNX int8, per channel": quantised(True),
    }


def memory(precision: str, texts: list[str]) -> None:
    """Peak RSS of embedding ``texts`` as `add` does: 256 a batch, 16 a call."""
    from docshelf.embed.local import LocalEmbedder

    embedder = LocalEmbedder(precision=precision)
    started = time.perf_counter()
    for b in range(0, len(texts), 256):
        batch = sorted(texts[b : b + 256], key=len, reverse=True)
        for i in range(0, len(batch), 16):
            embedder.embed(batch[i : i + 16])
    rate = len(texts) / (time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{precision}: {len(texts)} texts, {rate:.1f} snippets/s, peak RSS {peak} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path)
    ap.add_argument("--texts", type=int, default=600)
    ap.add_argument("--memory", choices=("bf16", "fp32"))
    a = ap.parse_args()
    texts = texts_of(a.db, a.texts if a.memory is None else max(a.texts, 3000))
    if a.memory:
        memory(a.memory, texts)
        return
    from docshelf.embed.local import LocalEmbedder

    base_rate, base = timed(LocalEmbedder(precision="fp32").embed, texts)
    print(f"{len(texts)} texts; PyTorch fp32 (baseline): {base_rate:.1f} snippets/s")
    print("| lever | snippets/s | ratio to PyTorch fp32 | cosine to fp32: mean / min |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as cache:
        for name, make in levers().items():
            rate, vectors = timed(make(Path(cache)).embed, texts)
            cos = (vectors * base).sum(axis=1)
            print(
                f"| {name} | {rate:.1f} | {rate / base_rate:.2f} | "
                f"{cos.mean():.5f} / {cos.min():.5f} |"
            )


if __name__ == "__main__":
    main()
