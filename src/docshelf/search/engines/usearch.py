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
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from docshelf.durable import fsync
from docshelf.search.engines.exact import ExactVectorIndex
from docshelf.search.engines.sidecar import (
    DocumentsWithin,
    Progress,
    SidecarIndex,
    SidecarStore,
    deeper,
    read_record,
    remove_index_files,
    shown,
    sidecar_dir,
    write_record,
)
from docshelf.search.entries import UNKNOWN, Entry, Known, entry_of
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 20_000  # vectors; below this an exact scan is fast enough (BENCHMARKS.md)
# HNSW "M" of the graphs built from now on. At 1M snippets a graph of M 32 gave recall@10
# 0.993 at ef 256 in 2.2 / 4.2 ms (p50 / p95), where M 16 gave 0.975 at ef 1,024 in
# 3.2 / 6.7 ms, for 14% more file (BENCHMARKS.md, "A denser graph"); graphs of M 16 keep
# their own depth rule.
CONNECTIVITY = 32
EXPANSION_ADD = 128  # "efConstruction"
EXPANSION_SEARCH = 256  # "ef" up to EF_GROWS_FROM vectors (BENCHMARKS.md: recall and latency by ef)
# Beyond this many vectors ef grows with the graph, by the graph's M: a graph of M 16
# needs ef 1,024 at 1M; one of M 32 does at 1M with 256 what M 16 did at 250k.
EF_GROWS_FROM = {16: 250_000, 32: 1_000_000}
MAX_EXPANSION_SEARCH = 4096
DTYPE = "f16"  # half the memory of f32 at the same recall (bench/ann_libraries.py)
MAX_FETCH = 4096  # the deepest over-fetch before a filter is answered exactly
# A filtered search whose filter lets through no more snippets than the index's threshold
# scans those exactly, as a library of that size is scanned; its vectors are kept for the
# next searches with the same filters (this many filter sets: at most threshold x dim x 4
# bytes each, 30 MB at 20,000 vectors of 384), a change reading only its own. A graph search
# would have to fetch ~limit / share of its candidates: at 10% of 100k snippets 3,200 at
# ef 3,200, 86 ms a hybrid search (BENCHMARKS.md, "Filtered searches").
SUBSETS_KEPT = 2
ENTRIES_SUFFIX = ".entries.npy"  # beside each graph file: its keys' entries


@dataclass(frozen=True)
class Checkpoint:
    """What ``current.json`` says about the published index file."""

    epoch: str
    file: str
    position: int  # vector_log position folded into the file
    generation: int  # the store's generation when it was taken
    model: str
    dim: int
    count: int  # vectors in the graph
    built_count: int  # vectors at the last full build
    replaced: int  # removals since that build (tombstones in the graph)
    created_at: float
    entries: str = ""  # the file of the graph keys' entries ("": none, the store checks)
    stamp: str = ""  # evidence.HEADING_KEY_STAMP the entries' heading keys were made with


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


def index_dir(store: SidecarStore) -> Path:
    """Beside the database: ``docshelf.db`` → ``docshelf.ann/``."""
    return sidecar_dir(store, SidecarVectorIndex.SUFFIX)


class SidecarVectorIndex(SidecarIndex):
    """Vector search for the SQLite store: exact below ``threshold`` vectors, the
    checkpointed graph plus the exact delta above it."""

    META_KEY = "vector_index"
    ON = "ann"
    OFF = "exact"
    SUFFIX = ".ann"
    LOG = "vector_log"

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
        # the entries' positions sorted by document, and the documents in that order
        self._by_document: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]] | None = None
        self._subsets: dict[SearchFilters, tuple[object, Subset]] = {}  # oldest first
        self._within = DocumentsWithin(store)
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
        1M, where a query of its own needs ef 1,024 for 0.975 (BENCHMARKS.md)."""
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
        return self._exact_matching(q, limit, filters)

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
        """What ``filters`` let through of the graph, told by its entries: how many
        snippets, and when they are no more than the threshold, their seqs and vectors
        (kept for the next searches with these filters; see ``_read_subset``). None when
        the graph has no entries to tell it by."""
        import numpy as np

        table = self._entries
        if table is None:
            return None
        kept = self._subsets.get(filters)
        if kept is not None and kept[1].seqs is None:
            # a share of the graph: only how deep the graph is asked hangs on it, so it
            # holds until the checkpoint changes (a broad filter's documents are many to
            # read again at every commit; the candidates are checked one by one anyway)
            return kept[1]
        # the filters' documents, read once per commit: a grant or a moved document
        # changes them without a new generation
        documents = self._store.matching_documents(filters)
        if kept is not None and kept[0] == (self._generation, documents):
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
        changed = self._changed
        if count > self.threshold:
            subset = Subset(count)
        else:
            ranges = [order[a:b] for a, b in zip(starts, ends, strict=True) if b > a]
            keys = table[0][np.concatenate(ranges)] if ranges else table[0][:0]
            seqs = keys.astype(np.int64)
            if changed:  # the graph's own vector no longer holds for these
                seqs = seqs[~np.isin(seqs, np.fromiter(changed, dtype=np.int64))]
            if self._delta_entries:  # the delta's own, whose documents match (or may)
                among = set(wanted.tolist())  # (0 among them)
                extra = [
                    s for s, e in self._delta_entries.items() if s in self._delta and e[0] in among
                ]
                seqs = np.concatenate([seqs, np.array(extra, dtype=np.int64)])
            subset = self._read_subset(count, np.unique(seqs), kept[1] if kept else None)
        self._subsets.pop(filters, None)  # (kept newest last)
        self._subsets[filters] = ((self._generation, documents), subset)
        while len(self._subsets) > SUBSETS_KEPT:
            del self._subsets[next(iter(self._subsets))]
        return subset

    def _read_subset(self, count: int, seqs: npt.NDArray[np.int64], last: Subset | None) -> Subset:
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

    def _exact_matching(
        self, q: npt.NDArray[np.float32], limit: int, filters: SearchFilters
    ) -> list[tuple[str, float]]:
        import numpy as np

        seqs, matrix = self._store.vectors_matching(filters)
        if not len(seqs):
            return []
        sims = matrix @ q
        top = np.argsort(-sims, kind="stable")[:limit]
        visible = self._store.visible_snippets([int(seqs[i]) for i in top], filters)
        return [(visible[int(seqs[i])], float(sims[i])) for i in top if int(seqs[i]) in visible]

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
            for _, kept in self._subsets.values():
                kept.stale.update(changed)  # their rows of these seqs are read again
            seqs, matrix = self._store.vectors_by_seq(changed)
            present = dict(zip(seqs.tolist(), matrix, strict=True))
            made = self._made_entries(list(present)) if self._entries is not None else {}
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

    def _version(self) -> tuple[int, str | None, str | None, str | None]:
        """What the index's validity depends on: the generation (bumped by every change
        to chunks and vectors) and the meta keys that bind the index."""
        meta = self._store.get_meta
        return (
            self._store.generation(),
            meta("vector_index"),
            meta("embedding_model"),
            meta("embedding_dim"),
        )

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
        self._by_document = None
        self._subsets = {}

    def _close_graph(self) -> None:
        import numpy as np

        self._graph = None
        self._checkpoint = None
        self._entries = None
        self._by_document = None
        self._subsets = {}
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

    # -- writing (one process at a time, under the lock file: SidecarIndex.maintain) --------
    def _log_position(self) -> int:
        return self._store.vector_log_position()

    def _changes(self, after: int) -> tuple[int, list[int]]:
        return self._store.vector_changes(after)

    def _prune_log(self, through: int) -> None:
        self._store.prune_vector_log(through)

    def _size(self) -> int:
        return self._store.vector_count()

    def _forget(self) -> None:
        self._generation = None

    def _up_to_date(self, *, force: bool, rebuild: bool) -> bool:
        self._looking = self._version()
        return self._looking == self._maintained and not (force or rebuild)

    def _locked(self) -> None:
        self._maintained = self._looking

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
        """A new graph from every vector in the store. The log position is read first:
        whatever changes while the build streams is logged after it and overlaid."""
        import numpy as np

        Index = usearch_index()

        store = self._store
        position = store.vector_log_position()
        generation = store.generation()
        dim = int(store.get_meta("embedding_dim") or 0)
        model = store.get_meta("embedding_model") or ""
        total = store.vector_count()
        graph = Index(
            ndim=dim,
            metric="ip",
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        done = 0
        entries = []
        for seqs, matrix in store.iter_vectors():
            if matrix.shape[1] != dim:
                raise ValueError(f"vector of {matrix.shape[1]} dims in a {dim}-dim library")
            graph.add(seqs.astype(np.uint64), matrix)
            entries.append(self._read_entries(seqs.tolist()))
            done += len(seqs)
            if progress:
                progress(done, total, "building the vector index")
        table = np.concatenate(entries, axis=1) if entries else np.zeros((5, 0), np.uint64)
        self._publish(graph, epoch, position, generation, model, dim, len(graph), 0, table)

    def _fold(self, base: Checkpoint, position: int, changed: list[int]) -> None:
        """The published graph with the delta applied, as a new checkpoint."""
        import numpy as np

        Index = usearch_index()

        graph = Index.restore(str(self.directory / base.file))
        if graph is None:
            raise ValueError(f"{base.file} is not a usearch index")
        keys = np.asarray(changed, dtype=np.uint64)
        removed = int(graph.remove(keys)) if len(keys) else 0
        seqs, matrix = self._store.vectors_by_seq(changed)
        if len(seqs):
            graph.add(seqs.astype(np.uint64), matrix)
        # the base's entries less the changed seqs, and the re-added seqs' own (all read
        # anew when the base has none, or of another stamp)
        table = read_entries(self.directory, base)
        if table is None:
            table = self._read_entries(np.sort(graph.keys[:]).tolist())  # (keys[:]: one copy)
        else:
            kept = table[:, ~np.isin(table[0], keys)]
            table = np.concatenate([kept, self._read_entries(seqs.tolist())], axis=1)
            table = table[:, np.argsort(table[0], kind="stable")]
        self._publish(
            graph,
            base.epoch,
            position,
            self._store.generation(),
            base.model,
            base.dim,
            len(graph),
            base.replaced + removed,
            table,
            built_count=base.built_count,
        )

    def _read_entries(self, seqs: list[int]) -> npt.NDArray[np.uint64]:
        """The entries of ``seqs`` (sorted) made from the store, as the rows seq, doc,
        ord, head, wide (``UNKNOWN`` for a seq that is no longer a snippet: it is in the
        log, never read)."""
        import numpy as np

        made = self._made_entries(seqs)
        rows = [(seq, *made.get(seq, UNKNOWN)) for seq in seqs]
        return np.array(rows, dtype=np.uint64).reshape(-1, 5).T.copy()

    def _made_entries(self, seqs: list[int]) -> dict[int, Entry]:
        """The entry of each of ``seqs`` that is a snippet, from its place and text."""
        places = self._store.snippet_places(seqs)
        texts = {seq: text for seq, _, text in self._store.snippets_by_seq(list(places))}
        return {seq: entry_of(*places[seq], texts[seq]) for seq in places if seq in texts}

    def _publish(
        self,
        graph: Any,
        epoch: str,
        position: int,
        generation: int,
        model: str,
        dim: int,
        count: int,
        replaced: int,
        entries: npt.NDArray[np.uint64],
        *,
        built_count: int | None = None,
    ) -> None:
        """Write the graph and its entries to new files, then point ``current.json`` at
        them atomically; only then is the log pruned and the previous files removed."""
        import numpy as np

        from docshelf.search.evidence import HEADING_KEY_STAMP

        self.directory.mkdir(parents=True, exist_ok=True)
        import uuid

        name = f"index-{position}-{uuid.uuid4().hex[:8]}.usearch"
        tmp = self.directory / (name + ".tmp")
        graph.save(str(tmp))
        fsync(tmp)
        os.replace(tmp, self.directory / name)
        table = name + ENTRIES_SUFFIX
        tmp = self.directory / (table + ".tmp")
        with tmp.open("wb") as fh:
            np.save(fh, np.ascontiguousarray(entries, dtype=np.uint64))
        fsync(tmp)
        os.replace(tmp, self.directory / table)
        checkpoint = Checkpoint(
            epoch=epoch,
            file=name,
            position=position,
            generation=generation,
            model=model,
            dim=dim,
            count=count,
            built_count=count if built_count is None else built_count,
            replaced=replaced,
            created_at=time.time(),
            entries=table,
            stamp=HEADING_KEY_STAMP,
        )
        write_checkpoint(self.directory, checkpoint)
        self._prune_log(position)
        remove_index_files(self.directory, keep=name)
        self._generation = None  # reopen on the next search


def expansion_search(count: int, connectivity: int = CONNECTIVITY) -> int:
    """The search depth ("ef") for a graph of ``count`` vectors and M ``connectivity``:
    EXPANSION_SEARCH up to EF_GROWS_FROM (by M; an M it does not list gets M 16's),
    then in proportion to the graph. A bigger graph needs a deeper search for the same
    recall: at 1M with M 16 (efConstruction 128) recall@10 was 0.920 at ef 256, 0.956 at
    512, 0.974 at 768, 0.976 at 1,024 and 0.978 at 2,048, the vector stage ~3 ms slower
    at 1,024 than at 256; with M 32, 0.993 at ef 256 (BENCHMARKS.md)."""
    grows_from = EF_GROWS_FROM.get(connectivity, EF_GROWS_FROM[16])
    if count <= grows_from:
        return EXPANSION_SEARCH
    return min(MAX_EXPANSION_SEARCH, EXPANSION_SEARCH * count // grows_from)


def read_checkpoint(directory: Path) -> Checkpoint | None:
    return read_record(directory, Checkpoint)


def has_entries(directory: Path, checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's graph has entries search can use (of this code's stamp)."""
    from docshelf.search.evidence import HEADING_KEY_STAMP

    return (
        bool(checkpoint.entries)
        and checkpoint.stamp == HEADING_KEY_STAMP
        and (directory / checkpoint.entries).exists()
    )


def read_entries(directory: Path, checkpoint: Checkpoint) -> npt.NDArray[np.uint64] | None:
    """The checkpoint's entries (mapped, read-only), or None: none, of another stamp, or
    unreadable (the store checks every candidate then)."""
    import numpy as np

    if not has_entries(directory, checkpoint):
        return None
    try:
        table = np.load(directory / checkpoint.entries, mmap_mode="r")
    except (OSError, ValueError) as exc:
        log.warning("cannot read the vector index's entries %s: %s", checkpoint.entries, exc)
        return None
    if table.ndim != 2 or table.shape[0] != 5 or table.dtype != np.uint64:
        return None
    # a plain array over the map: np.memmap's own indexing costs ~0.1 ms a search
    return cast("npt.NDArray[np.uint64]", np.asarray(table))


def write_checkpoint(directory: Path, checkpoint: Checkpoint) -> None:
    write_record(directory, checkpoint)


def usearch_index() -> Any:
    """usearch's ``Index`` class (its Python wrapper), for building and folding."""
    usearch_compiled()
    from usearch.index import Index

    return Index


def usearch_compiled() -> Any:
    """usearch's native module. onnxruntime is imported first when it is installed:
    importing it *after* usearch's native module crashes the process (seen with
    onnxruntime 1.32 and usearch 2.x), and the ONNX embedder may be loaded later."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401

    from usearch import compiled

    return compiled


class Found(NamedTuple):
    """One graph search's answer, nearest first: keys (seqs) and ip distances."""

    keys: npt.NDArray[np.uint64]
    distances: npt.NDArray[np.float32]


class GraphView:
    """A published graph mapped read-only from its file and searched one query at a
    time, through usearch's native module alone.

    Port note: usearch's Python wrapper (``usearch.index``) imports tqdm and ``inspect``
    for progress bars and callbacks a search never uses (~13 ms of a new process's
    search), and wraps each answer in objects read once. This calls the same native
    ``Index`` with the arguments the wrapper's ``restore(view=True)`` and ``search``
    pass (``tests/test_ann.py`` compares both answers); building and folding keep the
    wrapper."""

    def __init__(self, path: str) -> None:
        native = usearch_compiled()
        meta = native.index_dense_metadata_from_path(path)
        self._graph = native.Index(
            ndim=meta["dimensions"],
            dtype=meta["kind_scalar"],
            metric_kind=meta["kind_metric"],
            metric_signature=native.MetricSignature.ArrayArraySize,
        )
        self._graph.view_index_from_path(path, None)
        self._unknown = native.ScalarKind.Unknown  # the query's own dtype
        self.connectivity = int(self._graph.connectivity)
        self._size = len(self._graph)

    def __len__(self) -> int:
        return self._size

    @property
    def expansion_search(self) -> int:
        return int(self._graph.expansion_search)

    @expansion_search.setter
    def expansion_search(self, ef: int) -> None:
        self._graph.expansion_search = ef

    def search(self, query: npt.NDArray[np.float32], k: int) -> Found:
        """The ``k`` nearest keys to ``query`` (one contiguous float32 vector), on this
        thread: one query is one thread's work whatever the pool (the wrapper's default,
        ``threads=0``, gives the same answer)."""
        keys, distances, counts, _, _ = self._graph.search_many(
            query.reshape(1, -1), count=k, exact=False, threads=1, dtype=self._unknown
        )
        n = int(counts[0])
        return Found(keys[0, :n], distances[0, :n])
