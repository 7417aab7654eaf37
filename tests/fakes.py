"""Test doubles for the ports."""

from __future__ import annotations

import hashlib
import re
import zlib
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


class WeightedWords:
    """A fake model whose meaning of a text is its words, each weighing ``weights[word]``
    (1.0 for a word not there): a text's vector is its words' one-hot vectors (by a
    stable hash) so scaled, normalised. A heavy word pulls every text holding it together."""

    dim = 64
    window = 256

    def __init__(self, weights: dict[str, float], model_id: str = "fake-weighted") -> None:
        self.weights = weights
        self.model_id = model_id

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.casefold()):
                out[row, zlib.crc32(word.encode()) % self.dim] += self.weights.get(word, 1.0)
            out[row] /= np.linalg.norm(out[row]) or 1.0
        return out
