"""The sidecar ANN index of the SQLite store: a usearch HNSW graph in files beside
the database, derived from the store and never trusted over it.

How it stays consistent (ARCHITECTURE.md, "Decisions already taken"):

- While the index is on (meta ``vector_index = 'ann:<epoch>'``), triggers in the
  store append every changed vector's chunk seq to ``vector_log`` *in the same
  transaction* as the change. The index file is a **checkpoint**: the graph as of
  one log position. Search answers from the checkpoint plus the **delta** — the
  log entries after it, read back from the store and scanned exactly — so a crash
  between a commit and an index update can hide nothing and resurrect nothing:
  a chunk in the delta is answered from the store, never from the graph.
- Every candidate is checked before it is returned: it still has a vector (the graph
  answers only for seqs that have not changed since its checkpoint), and its document
  is complete and matches the filters. Unfiltered, the checkpoint's **entries** (each
  graph key's document, position and heading key: search/entries.py, in a file beside
  the graph) answer that without reading the candidates from the store; filtered, or
  without entries, the store checks them.
- Checkpoints are written by whoever holds ``lock`` (``maintain()``: after ingest,
  by idle workers, by ``reindex``) to a new file, then published by atomically
  replacing ``current.json``; readers map the file read-only (``view``), so many
  processes share one copy in the page cache and a reload costs nothing.
- A checkpoint from another epoch, model or dimension is ignored (exact search
  answers until ``maintain()`` rebuilds); below ``threshold`` vectors exact search
  stays and no log is kept. The switch is recorded in the store's meta.

This module is the index itself: the switch, keeping up with the store (checkpoint plus
delta), search and status. The graph's files are ``usearch_graph.py``, writing them
``usearch_writer.py``, filtered searches' shares of the graph ``usearch_subsets.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, cast

from docshelf.search.engines.exact import ExactVectorIndex
from docshelf.search.engines.sidecar import (
    DocumentsWithin,
    OnVectorLog,
    Progress,
    SidecarStore,
    deeper,
    scan_matching,
    shown,
    sidecar_dir,
)
from docshelf.search.engines.usearch_graph import (
    EXPANSION_SEARCH,
    Checkpoint,
    GraphView,
    expansion_search,
    has_entries,
    read_checkpoint,
    read_entries,
    usearch_index,
)
from docshelf.search.engines.usearch_subsets import Subset, Subsets
from docshelf.search.engines.usearch_writer import CheckpointWriter, made_entries
from docshelf.search.entries import UNKNOWN, Entry, Known
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

# Vectors; below this an exact scan is fast enough (docs/benchmarks/search-latency.md,
# "Search latency").
DEFAULT_THRESHOLD = 20_000
MAX_FETCH = 4096  # the deepest over-fetch before a filter is answered exactly


def index_dir(store: SidecarStore) -> Path:
    """Beside the database: ``docshelf.db`` → ``docshelf.ann/``."""
    return sidecar_dir(store, SidecarVectorIndex.SUFFIX)


class SidecarVectorIndex(OnVectorLog):
    """Vector search for the SQLite store: exact below ``threshold`` vectors, the
    checkpointed graph plus the exact delta above it."""

    META_KEY = "vector_index"
    ON = "ann"
    OFF = "exact"
    SUFFIX = ".ann"
    LOG = "vector_log"
    NAME = "vector index (usearch)"

    def __init__(self, store: SidecarStore, threshold: int = DEFAULT_THRESHOLD) -> None:
        super().__init__(store, threshold)
        self._exact = ExactVectorIndex(store)
        self._generation: object = None  # _version() when last synced
        self._maintained: object = None  # _version() maintain() last looked at
        self._looking: object = None  # _version() the running maintain() looks at
        self._checkpoint: Checkpoint | None = None
        self._graph: GraphView | None = None
        self._graph_size = 0  # len(self._graph), read once when it is opened
        self._connectivity = 0  # the graph's M, read with it
        self._ef = 0  # the search depth last set on the graph
        self._position = 0
        self._delta: dict[int, npt.NDArray[np.float32]] = {}  # seq -> current vector
        self._delta_entries: dict[int, Entry] = {}  # seq -> its entry, for the delta
        self._changed: set[int] = set()  # seqs the graph must not answer for
        # the checkpoint's entries: rows seq (sorted), doc, ord, head, wide (None: none)
        self._entries: npt.NDArray[np.uint64] | None = None
        self._within = DocumentsWithin(store)
        self._subsets = Subsets(store, self._within, None)  # the open checkpoint's
        self._writer = CheckpointWriter(store, self.directory)
        # set by _open before the graph answers (numpy is imported when first needed)
        self._delta_keys: npt.NDArray[np.int64] = cast("npt.NDArray[np.int64]", ())
        self._delta_matrix: npt.NDArray[np.float32] = cast("npt.NDArray[np.float32]", ())

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """Which path answers now: ``ann`` or ``exact``."""
        with self._lock:
            self._sync()
            return "ann" if self._graph is not None else "exact"

    @property
    def graph_size(self) -> int:
        """Vectors in the graph this process searches (0 while the exact scan answers), as
        of its last search."""
        return self._graph_size if self._graph is not None else 0

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        """(chunk_id, cosine similarity), best first, filters honoured; what the entries
        tell of each hit goes into ``known``. ``near``: the query lies among snippets a
        search has just found (the feedback pass), where the graph is searched at its
        base depth (``EXPANSION_SEARCH``) whatever its size: recall@10 0.980 there at
        1M, where a query of its own needs ef 1,024 for 0.975
        (docs/benchmarks/search-latency.md, "Server search at 1M snippets")."""
        import numpy as np

        if limit <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32)
        with self._lock:
            self._sync()
            if self._graph is None:
                allowed = None if filters.empty else self._store.documents_matching(filters)
                return self._exact.search(q, limit, allowed)
            fetch = limit + 10
            subset = None if filters.empty else self._subset(filters)
            within: frozenset[int] | None = None  # see sidecar.DocumentsWithin
            if subset is None and not filters.empty:
                fetch = 4 * limit  # no entries to tell the filter's share by
            elif subset is not None and subset.seqs is None:  # a share of the graph
                fetch = min(MAX_FETCH, deeper(fetch, subset.count, self._graph_size))
                within = self._within.for_depth(filters, fetch, limit + 10)
            while True:
                if subset is not None and subset.seqs is not None:
                    candidates = subset.nearest(q, fetch)
                else:
                    candidates = self._candidates(q, fetch, near)
                entries = self._entries_of([s for s, _ in candidates])
                found = len(candidates)
                if within is not None:  # only the filter's documents' are looked at
                    kept = [i for i, entry in enumerate(entries) if entry[0] in within]
                    candidates = [candidates[i] for i in kept]
                    entries = [entries[i] for i in kept]
                hits = shown(
                    self._store, candidates, entries, filters, self._store.visible_snippets, known
                )
                if len(hits) >= limit:
                    return hits[:limit]
                if subset is not None and subset.seqs is not None and found < fetch:
                    return hits  # every snippet the filter lets through, scanned
                # Asked for the whole graph (or the most we fetch) and still short: a
                # graph search need not reach every node, so never trust it for the rest.
                if found < fetch or fetch >= MAX_FETCH:
                    break
                wanted = deeper(fetch, len(hits), found)
                if within is None:
                    within = self._within.for_depth(filters, wanted, fetch)
                fetch = min(MAX_FETCH, max(2 * fetch, wanted))
        # A very selective filter: few vectors match, so scan exactly those.
        return scan_matching(self._store, q, limit, filters)

    def _candidates(
        self, q: npt.NDArray[np.float32], k: int, near: bool = False
    ) -> list[tuple[int, float]]:
        """The best ``k`` seqs of graph + delta, graph entries the delta supersedes left out."""
        import numpy as np

        scores: dict[int, float] = {}
        size = self._graph_size  # a read-only view: its size is fixed while it is open
        ef = max(EXPANSION_SEARCH if near else expansion_search(size, self._connectivity), k)
        graph = self._graph
        assert graph is not None  # (called only while a graph is open)
        if ef != self._ef:
            graph.expansion_search = self._ef = ef
        want = k + len(self._changed) if len(self._changed) < k else 2 * k
        found = graph.search(q, min(want, size))
        keys, distances = found.keys.tolist(), found.distances.tolist()
        if not self._changed:  # nothing to leave out or add: the graph's order, best first
            ranked = [(key, 1.0 - distance) for key, distance in zip(keys, distances, strict=True)]
            d = found.distances
            if len(d) > 1 and bool((d[1:] < d[:-1]).any()):  # not nearest first: sort
                ranked.sort(key=lambda kv: -kv[1])  # (sorted already, a stable sort is a no-op)
            return ranked[:k]
        for key, distance in zip(keys, distances, strict=True):
            if key not in self._changed:
                scores[int(key)] = 1.0 - float(distance)  # ip distance is 1 - dot
        if len(self._delta_keys):
            sims = self._delta_matrix @ q
            top = np.argsort(-sims, kind="stable")[:k]
            for i in top:
                scores[int(self._delta_keys[i])] = float(sims[i])
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])
        return ranked[:k]

    def _subset(self, filters: SearchFilters) -> Subset | None:
        """What ``filters`` let through of the graph (``Subsets.of``), as of the last sync."""
        return self._subsets.of(
            filters,
            self.threshold,
            self._generation,
            self._changed,
            self._delta,
            self._delta_entries,
        )

    def _entries_of(self, seqs: list[int]) -> list[Entry]:
        """The entry of each seq: the delta's for a changed seq, the checkpoint's for the
        others (``UNKNOWN`` for every seq when the checkpoint has none)."""
        import numpy as np

        table = self._entries
        if table is None or not seqs:
            return [UNKNOWN] * len(seqs)
        keys = table[0]
        wanted = np.asarray(seqs, dtype=np.uint64)
        at = np.searchsorted(keys, wanted)
        at[at >= len(keys)] = 0
        rows = table[:, at]
        out: list[Entry] = list(zip(*rows[1:].tolist(), strict=True))
        for n in np.flatnonzero(rows[0] != wanted).tolist():  # not in the checkpoint
            out[n] = UNKNOWN
        if self._changed:  # the delta answers for the seqs changed since
            changed, delta = self._changed, self._delta_entries
            for n, seq in enumerate(seqs):
                if seq in changed:
                    out[n] = delta.get(seq, UNKNOWN)
        return out

    def _sync(self) -> None:
        """Catch up with the store: reopen a newer checkpoint, read the delta."""
        import numpy as np

        generation = self._version()
        if generation == self._generation:
            return
        epoch = self.epoch_of(self.mode())
        checkpoint = self._usable_checkpoint(epoch)
        if checkpoint is None:
            self._close_graph()
            self._generation = generation
            return
        if checkpoint != self._checkpoint:
            self._open(checkpoint)
        try:
            position, changed = self._store.vector_changes(self._position)
        except LookupError:  # pruned past us: a newer checkpoint was published
            checkpoint = self._usable_checkpoint(epoch)
            try:
                if checkpoint is None:
                    raise LookupError("no checkpoint")
                self._open(checkpoint)
                position, changed = self._store.vector_changes(self._position)
            except LookupError:  # still racing a writer: answer exactly this time
                self._close_graph()
                self._generation = None
                return
        if changed:
            self._subsets.stale(changed)  # their rows of these seqs are read again
            seqs, matrix = self._store.vectors_by_seq(changed)
            present = dict(zip(seqs.tolist(), matrix, strict=True))
            made = made_entries(self._store, list(present)) if self._entries is not None else {}
            for seq in changed:
                self._changed.add(seq)
                if seq in present:
                    self._delta[seq] = present[seq]
                    self._delta_entries[seq] = made.get(seq, UNKNOWN)
                else:
                    self._delta.pop(seq, None)
                    self._delta_entries.pop(seq, None)
            self._delta_keys = np.fromiter(self._delta, dtype=np.int64, count=len(self._delta))
            self._delta_matrix = (
                np.stack(list(self._delta.values()))
                if self._delta
                else np.zeros((0, checkpoint.dim), dtype=np.float32)
            )
        self._position = position
        self._generation = generation

    def _usable_checkpoint(self, epoch: str | None) -> Checkpoint | None:
        if self.threshold <= 0 or epoch is None:
            return None
        checkpoint = read_checkpoint(self.directory)
        if checkpoint is None or checkpoint.epoch != epoch:
            return None
        if checkpoint.model != (self._store.get_meta("embedding_model") or ""):
            return None
        if checkpoint.dim != int(self._store.get_meta("embedding_dim") or 0):
            return None
        if not (self.directory / checkpoint.file).exists():
            return None
        return checkpoint

    def _open(self, checkpoint: Checkpoint) -> None:
        import numpy as np

        try:
            self._graph = GraphView(str(self.directory / checkpoint.file))
        except (OSError, RuntimeError, ValueError) as exc:  # removed or torn: answer exactly
            log.warning("cannot open the vector index %s: %s", checkpoint.file, exc)
            self._graph = None
        self._checkpoint = checkpoint if self._graph is not None else None
        self._graph_size = len(self._graph) if self._graph is not None else 0
        self._connectivity = int(self._graph.connectivity) if self._graph is not None else 0
        self._ef = 0
        self._position = checkpoint.position
        self._delta = {}
        self._delta_entries = {}
        self._changed = set()
        self._delta_keys = np.zeros(0, dtype=np.int64)
        self._delta_matrix = np.zeros((0, checkpoint.dim), dtype=np.float32)
        self._entries = None if self._graph is None else read_entries(self.directory, checkpoint)
        self._subsets = Subsets(self._store, self._within, self._entries)

    def _close_graph(self) -> None:
        import numpy as np

        self._graph = None
        self._checkpoint = None
        self._entries = None
        self._subsets = Subsets(self._store, self._within, None)
        self._delta = {}
        self._delta_entries = {}
        self._changed = set()
        self._delta_keys = np.zeros(0, dtype=np.int64)

    def state(self) -> dict[str, object]:
        """For ``status``: which path answers, and how far the index is behind (read
        from the files and the log; the graph itself is not opened)."""
        mode = self.mode()
        c = self._usable_checkpoint(self.epoch_of(mode))
        delta = 0
        if c is not None:
            try:
                delta = len(self._changes(c.position)[1])
            except LookupError:
                c = None
        return self._status(
            mode,
            "ann" if c is not None else "exact",
            c.count if c else 0,
            self.epoch_of(mode) is not None and c is None,
            delta=delta,
            checkpoint_position=c.position if c else None,
            file_bytes=(self.directory / c.file).stat().st_size if c else 0,
        )

    def close(self) -> None:
        """Nothing held beyond this process's maps (the external engines hold a client)."""

    # -- writing (one process at a time, under the lock file: SidecarIndex.maintain) --------
    def _forget(self) -> None:
        self._generation = None

    def _held(self, epoch: str) -> tuple[npt.NDArray[np.int64], int]:
        import numpy as np

        checkpoint = self._usable_checkpoint(epoch)
        if checkpoint is None:
            raise LookupError(epoch)
        graph = usearch_index().restore(str(self.directory / checkpoint.file), view=True)
        if graph is None:
            raise ValueError(f"{checkpoint.file} is not a usearch index")
        return np.asarray(graph.keys[:], dtype=np.int64), checkpoint.position

    def _update(self, epoch: str, *, force: bool, rebuild: bool, progress: Progress | None) -> str:
        """Fold the delta into a new checkpoint when it has grown (any, when ``force``),
        rebuild when the graph holds too many replaced vectors, switch off below half
        the threshold."""
        if not force and self._size() < self.threshold // 2:
            return self._switch_off()
        current = read_checkpoint(self.directory)
        usable = self._usable_checkpoint(epoch)
        if usable is None or rebuild:
            self._build(epoch, progress)
            return "rebuilt"
        try:
            position, changed = self._changes(usable.position)
        except LookupError:
            self._build(epoch, progress)
            return "rebuilt"
        if not changed and has_entries(self.directory, usable):
            if current:
                self._prune_once(current.position)
            return "current"
        if changed and not force and len(changed) < max(1_000, usable.count // 100):
            return "deferred"
        if usable.replaced + len(changed) > usable.built_count // 2:
            self._build(epoch, progress)
            return "rebuilt"
        self._fold(usable, position, changed)
        return "checkpointed"

    def _build(self, epoch: str, progress: Progress | None) -> None:
        """A new graph from every vector in the store (``CheckpointWriter.build``)."""
        self._writer.build(epoch, progress)
        self._generation = None  # reopen on the next search

    def _fold(self, base: Checkpoint, position: int, changed: list[int]) -> None:
        """The published graph with the delta applied (``CheckpointWriter.fold``)."""
        self._writer.fold(base, position, changed)
        self._generation = None  # reopen on the next search
