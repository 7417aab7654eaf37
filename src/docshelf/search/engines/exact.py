"""The exact scan: cosine similarity against every snippet vector of the store.

The matrix is loaded once and reused until the store's generation moves,
so a long-running process pays the load once per change, not per query.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from docshelf.search.entries import Known
from docshelf.store.base import SearchFilters, SearchStore, VectorSnapshot

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class ExactVectorIndex:
    """The scan over one store's vectors, by the documents a search may show."""

    def __init__(self, store: SearchStore) -> None:
        self._store = store
        self._snapshot: VectorSnapshot | None = None
        self._doc_codes: npt.NDArray[np.int32] | None = None
        self._doc_index: dict[str, int] = {}
        self._lock = threading.Lock()

    def _current(self) -> VectorSnapshot:
        import numpy as np

        with self._lock:
            generation = self._store.generation()
            if self._snapshot is None or self._snapshot.generation != generation:
                snap = self._store.vector_snapshot()
                self._doc_index = {}
                codes = [
                    self._doc_index.setdefault(d, len(self._doc_index)) for d in snap.document_ids
                ]
                self._doc_codes = np.asarray(codes, dtype=np.int32)
                self._snapshot = snap
            return self._snapshot

    def __len__(self) -> int:
        return len(self._current().chunk_ids)

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        allowed_documents: set[str] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk_id, cosine similarity), best first; vectors are unit length."""
        import numpy as np

        snap = self._current()
        if not snap.chunk_ids or limit <= 0:
            return []
        scores = snap.matrix @ np.asarray(query, dtype=np.float32)
        if allowed_documents is not None:
            assert self._doc_codes is not None
            allowed = [self._doc_index[d] for d in allowed_documents if d in self._doc_index]
            mask = np.isin(self._doc_codes, np.asarray(allowed, dtype=np.int32))
            scores = np.where(mask, scores, -np.inf)
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(snap.chunk_ids[i], float(scores[i])) for i in top if np.isfinite(scores[i])]


class ExactVectorSearch:
    """The exact scan as a vector engine: masked by the documents the filters allow."""

    def __init__(self, store: SearchStore) -> None:
        self._store = store
        self._index = ExactVectorIndex(store)

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        allowed = None if filters.empty else self._store.documents_matching(filters)
        return self._index.search(query, limit, allowed)
