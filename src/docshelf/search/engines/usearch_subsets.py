"""The filtered searches of the vector index (``usearch.py``): what one set of filters
lets through of the graph, as the checkpoint's entries tell (``Subset``), kept for the
last few filter sets (``Subsets``). A share the index scans exactly holds its vectors;
a broader one only its size, which sets how deep the graph is searched.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import TYPE_CHECKING

from docshelf.search.engines.sidecar import DocumentsWithin, SidecarStore
from docshelf.search.entries import Entry
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# A filtered search whose filter lets through no more snippets than the index's threshold
# scans those exactly, as a library of that size is scanned; its vectors are kept for the
# next searches with the same filters (this many filter sets: at most threshold x dim x 4
# bytes each, 30 MB at 20,000 vectors of 384), a change reading only its own. A graph search
# would have to fetch ~limit / share of its candidates: at 10% of 100k snippets 3,200 at
# ef 3,200, 86 ms a hybrid search (docs/benchmarks/filtered-search.md, "Filtered searches:
# the filter's share decides").
SUBSETS_KEPT = 2


class Subset:
    """The snippets one set of filters lets a search show, as the graph's entries tell:
    their ``count``, and when few enough to scan, their seqs and vectors (seq order)."""

    def __init__(
        self,
        count: int,
        seqs: npt.NDArray[np.int64] | None = None,
        matrix: npt.NDArray[np.float32] | None = None,
    ) -> None:
        self.count = count
        self.seqs = seqs
        self.matrix = matrix
        self.stale: set[int] = set()  # seqs whose vector changed since they were read

    def holding(self, seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """For each of ``seqs`` (sorted), the row that still holds its vector, or -1 (not
        read, or its vector changed since)."""
        import numpy as np

        out = np.full(len(seqs), -1, dtype=np.int64)
        mine = self.seqs
        if mine is None or not len(mine) or not len(seqs):
            return out
        at = np.minimum(np.searchsorted(mine, seqs), len(mine) - 1)
        held = mine[at] == seqs
        if self.stale:
            held &= ~np.isin(seqs, np.fromiter(self.stale, dtype=np.int64))
        out[held] = at[held]
        return out

    def nearest(self, q: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The ``k`` best (seq, cosine similarity), best first (ties in seq order)."""
        import numpy as np

        assert self.seqs is not None and self.matrix is not None
        if not len(self.seqs) or k <= 0:
            return []
        sims = self.matrix @ q
        if k < len(sims):
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.lexsort((top, -sims[top]))]
        else:
            top = np.argsort(-sims, kind="stable")
        return list(zip(self.seqs[top].tolist(), sims[top].tolist(), strict=True))


class Subsets:
    """The subsets of one checkpoint's graph, told by its ``entries`` (the rows seq, doc,
    ord, head, wide; None: none, and no subset is told), for the last ``SUBSETS_KEPT``
    filter sets. The index makes one each time it opens a checkpoint."""

    def __init__(
        self,
        store: SidecarStore,
        within: DocumentsWithin,
        entries: npt.NDArray[np.uint64] | None,
    ) -> None:
        self._store = store
        self._within = within
        self._entries = entries
        # the entries' positions sorted by document, and the documents in that order
        self._by_document: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]] | None = None
        self._kept: dict[SearchFilters, tuple[object, Subset]] = {}  # oldest first

    def stale(self, changed: list[int]) -> None:
        """These seqs' vectors changed: the kept subsets read their rows of them again."""
        for _, kept in self._kept.values():
            kept.stale.update(changed)

    def of(
        self,
        filters: SearchFilters,
        threshold: int,
        generation: object,
        changed: set[int],
        delta: Container[int],
        delta_entries: Mapping[int, Entry],
    ) -> Subset | None:
        """What ``filters`` let through of the graph, told by its entries: how many
        snippets, and when they are no more than the threshold, their seqs and vectors
        (kept for the next searches with these filters; see ``_read``), as of the index's
        ``generation``, with the seqs ``changed`` since the checkpoint answered by the
        ``delta`` (the seqs that still have a vector) and its entries. None when the graph
        has no entries to tell it by."""
        import numpy as np

        table = self._entries
        if table is None:
            return None
        kept = self._kept.get(filters)
        if kept is not None and kept[1].seqs is None:
            # a share of the graph: only how deep the graph is asked hangs on it, so it
            # holds until the checkpoint changes (a broad filter's documents are many to
            # read again at every commit; the candidates are checked one by one anyway)
            return kept[1]
        # the filters' documents, read once per commit: a grant or a moved document
        # changes them without a new generation
        documents = self._store.matching_documents(filters)
        if kept is not None and kept[0] == (generation, documents):
            return kept[1]
        if self._by_document is None:  # the entries' positions in document order, once
            order = np.argsort(table[1], kind="stable")
            self._by_document = (order, table[1][order])
        order, docs = self._by_document
        # 0: an entry of no known document (the store tells for it), taken as a match
        wanted = np.array(sorted(self._within(filters)), dtype=np.uint64)
        starts = np.searchsorted(docs, wanted, "left").tolist()
        ends = np.searchsorted(docs, wanted, "right").tolist()
        count = sum(ends) - sum(starts)
        if count > threshold:
            subset = Subset(count)
        else:
            ranges = [order[a:b] for a, b in zip(starts, ends, strict=True) if b > a]
            keys = table[0][np.concatenate(ranges)] if ranges else table[0][:0]
            seqs = keys.astype(np.int64)
            if changed:  # the graph's own vector no longer holds for these
                seqs = seqs[~np.isin(seqs, np.fromiter(changed, dtype=np.int64))]
            if delta_entries:  # the delta's own, whose documents match (or may)
                among = set(wanted.tolist())  # (0 among them)
                extra = [s for s, e in delta_entries.items() if s in delta and e[0] in among]
                seqs = np.concatenate([seqs, np.array(extra, dtype=np.int64)])
            subset = self._read(count, np.unique(seqs), kept[1] if kept else None)
        self._kept.pop(filters, None)  # (kept newest last)
        self._kept[filters] = ((generation, documents), subset)
        while len(self._kept) > SUBSETS_KEPT:
            del self._kept[next(iter(self._kept))]
        return subset

    def _read(self, count: int, seqs: npt.NDArray[np.int64], last: Subset | None) -> Subset:
        """The subset of these seqs (sorted), its vectors exact as the store holds them:
        those the filters' ``last`` subset holds, unchanged since, are not read again, so
        a commit elsewhere in the library costs a user's next search only its own."""
        import numpy as np

        rows = last.holding(seqs) if last is not None else np.full(len(seqs), -1)
        unread = rows < 0
        found, matrix = self._store.vectors_by_seq(seqs[unread].tolist())
        if last is None or last.matrix is None or bool(unread.all()):
            return Subset(count, found, matrix)
        # the unread that have no vector any more are left out
        keep = ~unread
        keep[np.flatnonzero(unread)[np.isin(seqs[unread], found)]] = True
        seqs, rows, unread = seqs[keep], rows[keep], unread[keep]
        out = np.empty((len(seqs), last.matrix.shape[1]), dtype=np.float32)
        out[~unread] = last.matrix[rows[~unread]]
        out[unread] = matrix  # (both in seq order)
        return Subset(count, seqs, out)
