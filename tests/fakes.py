"""Test doubles for the ports."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from docshelf.chunk import approx_tokens


class HashEmbedder:
    """A deterministic bag-of-words embedder: texts sharing words get similar vectors.

    Counts its calls so tests can tell whether anything was (re-)embedded.
    """

    def __init__(self, model_id: str = "fake-hash-64", dim: int = 64, window: int = 256) -> None:
        self.model_id = model_id
        self.dim = dim
        self.window = window
        self.embedded: list[str] = []

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.embedded.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
                out[row, h % self.dim] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out
