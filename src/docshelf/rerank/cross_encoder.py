"""A sentence-transformers CrossEncoder loaded from a local folder (never a hub)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docshelf.errors import Unavailable


class CrossEncoderReranker:
    name = "cross-encoder"

    def __init__(self, path: str, model: Any = None) -> None:
        self.path = Path(path).expanduser()
        if model is None and not self.path.is_dir():
            raise Unavailable(f"No cross-encoder model folder at {self.path}")
        self._model = model
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                try:
                    from sentence_transformers import CrossEncoder
                except ImportError:
                    raise Unavailable(
                        "The cross-encoder reranker needs `docshelf[local]`"
                    ) from None
                self._model = CrossEncoder(str(self.path), device="cpu")
            return self._model

    def scores(self, query: str, passages: Sequence[str]) -> list[float] | None:
        if not passages:
            return []
        values = self._load().predict([(query, p) for p in passages], show_progress_bar=False)
        return [float(v) for v in values]
