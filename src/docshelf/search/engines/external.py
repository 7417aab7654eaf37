"""Vector search by an engine the user already runs — Qdrant, Milvus, Chroma or Typesense,
one file each (``qdrant.py``, ``milvus.py``, ``chroma.py``, ``typesense.py``) behind
``VectorBackend`` (``backend.py``) — kept beside the SQLite store as the usearch graph
is (``sidecar.py``), and like it derived from the store and never trusted over it
(ARCHITECTURE.md, "Decisions already taken").

- A point is keyed by its snippet's seq and carries the chunk id and its document's id
  (the one filter the engine applies), **never the text**: the text has one home, and
  each hit is read from the store by its id.
- The engine holds the library as of one position of the store's vector log; the record
  beside the database (``docshelf.vectors/current.json``) names the collection, the
  engine, its epoch, model, dimension and that position. Search answers from the engine
  plus the **delta** — the log's entries after the position, read from the store and
  scanned exactly, the engine's answers for those seqs left out — so a crash between a
  commit and the engine's update hides nothing and resurrects nothing.
- ``maintain()`` upserts and deletes what changed since the position, then moves the
  record on; both are idempotent, so a crash half-way is healed by doing it again. A
  build fills a new collection (``<name>_<build>``), publishes it by the record, and
  drops the older ones; readers of an old one go on until they sync.
- An engine that fails, or has lost points, is not trusted: search answers exactly from
  the store (with a warning) and the next ``maintain()`` rebuilds.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import ParseResult, urlparse

from docshelf.errors import InvalidInput, Unavailable
from docshelf.search.engines.backend import VectorBackend, checked_name, collection_base
from docshelf.search.engines.collections import CollectionIndex, fetched, pushed
from docshelf.search.engines.exact import ExactVectorIndex
from docshelf.search.engines.sidecar import (
    OnVectorLog,
    Progress,
    SidecarStore,
    read_record,
    scan_matching,
)
from docshelf.search.entries import Known
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

BATCH = 2_000  # points written at a time
SCHEMES = (
    "qdrant",
    "qdrants",
    "qdrant+local",
    "milvus",
    "milvuss",
    "chroma",
    "chromas",
    "typesense",
    "typesenses",
)


def open_backend(url: str) -> tuple[VectorBackend, str | None]:
    """The engine ``DOCSHELF_VECTOR_URL`` names, and the name it gives this library's
    collections (None: unnamed, ``docshelf_<library>``)."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    name = parsed.path.strip("/") if parsed.netloc else ""
    for part in parsed.query.split("&"):
        key, _, value = part.partition("=")
        if key == "collection":
            name = value
    if scheme not in SCHEMES:
        raise InvalidInput(
            f"DOCSHELF_VECTOR_URL: {scheme or 'a URL without a scheme'!r} is not a vector engine "
            "(qdrant://, qdrant+local://, milvus://, chroma://, typesense://)"
        )
    checked_name(name, "DOCSHELF_VECTOR_URL")
    try:
        return _backend(scheme, parsed), name or None
    except InvalidInput:
        raise
    except Exception as exc:  # each client's own errors: the engine is unreachable
        where = f"{scheme}://{parsed.hostname or ''}{parsed.path if not parsed.hostname else ''}"
        raise Unavailable(f"Cannot open the vector engine at {where}: {exc}") from exc


def _backend(scheme: str, parsed: ParseResult) -> VectorBackend:
    if scheme.startswith("qdrant"):
        from docshelf.search.engines.qdrant import Qdrant

        return Qdrant.from_url(parsed)
    if scheme.startswith("milvus"):
        from docshelf.search.engines.milvus import Milvus

        return Milvus.from_url(parsed)
    if scheme.startswith("typesense"):
        from docshelf.search.engines.typesense import Typesense

        return Typesense.from_url(parsed)
    from docshelf.search.engines.chroma import Chroma

    return Chroma.from_url(parsed)


@dataclasses.dataclass(frozen=True)
class View:
    """What one search reads, made whole by each sync and never changed after (searches
    run outside the lock, so a sync replaces it): the record, and the delta after it —
    every seq changed since (the engine's answers for them left out), and the vectors
    of those that still have one."""

    published: Published
    changed: frozenset[int] = frozenset()
    delta: Mapping[int, npt.NDArray[np.float32]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Published:
    """What the engine holds: a collection as of a vector-log position."""

    epoch: str
    where: str
    collection: str
    model: str
    dim: int
    position: int
    count: int


class ExternalVectorIndex(OnVectorLog, CollectionIndex):
    """Vector search for the SQLite store by an external engine, the delta exactly."""

    META_KEY = "vector_index"  # the store logs vector changes while this is on
    ON = "ann"
    OFF = "exact"
    SUFFIX = ".vectors"
    LOG = "vector_log"

    def __init__(
        self,
        store: SidecarStore,
        backend: VectorBackend,
        name: str | None = None,
        *,
        strict: bool = False,
    ) -> None:
        super().__init__(store, threshold=1)  # on from the first vector
        self.backend = backend
        self.name = name  # of this library's collections (None: docshelf_<library>)
        self.strict = strict  # an engine's failure raised, not answered exactly (tests)
        self.NAME = f"vector index ({backend.kind})"
        # the documents a search's filters let through, named in the engine's query: the
        # store's by default (Typesense's documents collection: engines._typesense)
        self.push: Callable[[SearchFilters, int], frozenset[str] | None] = partial(pushed, store)
        self._exact = ExactVectorIndex(store)
        self._generation: object = None
        self._view: View | None = None
        self._position = 0

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """Which path answers now: the engine's kind, or ``exact``."""
        with self._lock:
            return self.backend.kind if self._sync() is not None else "exact"

    @property
    def graph_size(self) -> int:
        return self._view.published.count if self._view is not None else 0

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        """(chunk_id, cosine similarity), best first, filters honoured."""
        import numpy as np

        if limit <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32)
        with self._lock:
            view = self._sync()
        if view is not None:  # (outside the lock: an engine's round trips run side by side)
            try:
                return self._search(view, q, limit, filters, known)
            except Exception as exc:  # any engine's failure: the store answers
                if self.strict:
                    raise
                log.warning("the %s failed, searching exactly: %s", self.NAME, exc)
                with self._lock:
                    self._generation = self._maintained = None  # look again next time
        allowed = None if filters.empty else self._store.documents_matching(filters)
        return self._exact.search(q, limit, allowed)

    def _search(
        self,
        view: View,
        q: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None,
    ) -> list[tuple[str, float]]:
        """Over-fetch until the filters leave ``limit`` (or the engine has no more); a
        filter the engine cannot apply that lets through very few is scanned exactly."""
        documents = self.push(filters, self.backend.pushed)
        if documents is not None and not documents:
            return []
        hits = fetched(
            self._store,
            lambda n: self._candidates(view, q, n, documents),
            limit,
            filters,
            self._store.visible_snippets,
            known,
        )
        return hits if hits is not None else scan_matching(self._store, q, limit, filters)

    def _candidates(
        self,
        view: View,
        q: npt.NDArray[np.float32],
        k: int,
        documents: Collection[str] | None,
    ) -> tuple[list[tuple[int, float]], bool]:
        """The best ``k`` seqs of engine + delta, the engine's for changed seqs left out,
        and whether the engine gave all it holds (fewer than asked for)."""
        import numpy as np

        changed = view.changed
        want = k + len(changed) if len(changed) < k else 2 * k
        nearest = self.backend.nearest(view.published.collection, q, want, documents)
        scores = {seq: score for seq, score in nearest if seq not in changed}
        if view.delta:
            keys = list(view.delta)
            sims = np.stack(list(view.delta.values())) @ q
            for i in np.argsort(-sims, kind="stable")[:k].tolist():
                scores[keys[i]] = float(sims[i])
        return sorted(scores.items(), key=lambda kv: -kv[1])[:k], len(nearest) < want

    def _sync(self) -> View | None:
        """Catch up with the store: the record published now, and the delta after it
        (a new ``View``; None while the exact scan answers)."""
        try:  # (a rebuild elsewhere moves the record, not the store's generation)
            stamp = (self.directory / "current.json").stat().st_mtime_ns
        except OSError:
            stamp = 0
        generation = (self._version(), stamp)
        if generation == self._generation:
            return self._view
        published = self._usable(self.epoch_of(self.mode()))
        view = self._view
        if published is None or view is None or published != view.published:
            view = View(published) if published is not None else None
            self._position = published.position if published else 0
        if view is not None:
            try:
                position, changed = self._store.vector_changes(self._position)
            except LookupError:  # pruned past this record: a newer one is published
                self._view = self._generation = None
                return None
            if changed:
                seqs, matrix = self._store.vectors_by_seq(changed)
                present = dict(zip(seqs.tolist(), matrix, strict=True))
                delta = {**view.delta, **present}
                for seq in set(changed) - present.keys():
                    delta.pop(seq, None)
                view = View(view.published, view.changed | set(changed), delta)
            self._position = position
        self._view = view
        self._generation = generation
        return view

    def _usable(self, epoch: str | None) -> Published | None:
        """The record, when it is of this epoch, engine, model and dimension."""
        if epoch is None:
            return None
        record = read_record(self.directory, Published)
        if record is None or record.epoch != epoch or record.where != self.backend.where:
            return None
        if record.model != (self._store.get_meta("embedding_model") or ""):
            return None
        if record.dim != int(self._store.get_meta("embedding_dim") or 0):
            return None
        return record

    def state(self) -> dict[str, object]:
        """For ``status``: which path answers, the engine, and how far it is behind."""
        mode = self.mode()
        record = self._usable(self.epoch_of(mode))
        delta = 0
        if record is not None:
            try:
                delta = len(self._changes(record.position)[1])
            except LookupError:
                record = None
        return self._status(
            mode,
            self.backend.kind if record is not None else "exact",
            record.count if record else 0,
            self.epoch_of(mode) is not None and record is None,
            engine=self.backend.where,
            collection=record.collection if record else None,
            delta=delta,
        )

    def close(self) -> None:
        self.backend.close()

    # -- writing (one process at a time, under the lock file: SidecarIndex.maintain) --------
    def _apply(self, collection: str, seqs: Sequence[int]) -> None:
        """Upsert the seqs that still have a vector, delete the others."""
        for start in range(0, len(seqs), BATCH):
            part = list(seqs[start : start + BATCH])
            present, matrix = self._store.vectors_by_seq(part)
            self._write(collection, present.tolist(), matrix)
            kept = set(present.tolist())
            gone = [seq for seq in part if seq not in kept]
            if gone:
                self.backend.delete(collection, gone)

    def _write(self, collection: str, seqs: list[int], matrix: npt.NDArray[np.float32]) -> None:
        """Upsert the points of those ``seqs`` that are snippets, with their ids."""
        places = self._store.snippet_places(seqs)
        rows = [n for n, seq in enumerate(seqs) if seq in places]
        if rows:
            chunks = [(places[seqs[n]][0], places[seqs[n]][1].document_id) for n in rows]
            self.backend.upsert(collection, [seqs[n] for n in rows], matrix[rows], chunks)

    def _build(self, epoch: str, progress: Progress | None) -> None:
        """A new collection from every vector in the store, published by the record. The
        log position is read first: what changes meanwhile is logged after it."""
        store = self._store
        position = store.vector_log_position()
        dim = int(store.get_meta("embedding_dim") or 0)
        collection = self._new_collection()
        self.backend.create(collection, dim)
        total, done = store.vector_count(), 0
        for seqs, matrix in store.iter_vectors(batch=BATCH):
            if matrix.shape[1] != dim:
                raise ValueError(f"vector of {matrix.shape[1]} dims in a {dim}-dim library")
            self._write(collection, seqs.tolist(), matrix)
            done += len(seqs)
            if progress:
                progress(done, total, f"building the {self.NAME}")
        model = store.get_meta("embedding_model") or ""
        record = Published(epoch, self.backend.where, collection, model, dim, position, 0)
        self._publish(record, built=True)

    def _base(self) -> str:
        return collection_base(self._store, self.name)

    def _count(self, collection: str) -> int:
        return self.backend.count(collection)

    def _keys(self, collection: str) -> list[int]:
        return self.backend.keys(collection)

    def _names(self) -> list[str]:
        return self.backend.names()

    def _drop(self, name: str) -> None:
        self.backend.drop(name)

    def _settle(self, collection: str) -> None:
        self.backend.settle(collection)

    def _reread(self) -> None:
        self._generation = None
