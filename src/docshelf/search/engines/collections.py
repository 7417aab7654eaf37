"""What the indexes kept in an engine of the user's own share (``external.py``: vectors in
Qdrant, Milvus, Chroma or Typesense; ``typesense_lexical.py``: text in Typesense), on top
of the sidecars' life cycle (``sidecar.py``):

- the library's collections are named ``<base><KIND>_<build>`` (``backend.collection_base``),
  and a record beside the database (``current.json``: a dataclass with at least
  ``collection``, ``position`` and ``count``) names the one published;
- upkeep applies what the store's change log says changed since the record, by id
  (upserts and deletes: doing it again after a crash half-way writes the same), settles
  the writes, and only then moves the record on;
- a build fills a new collection and publishes it the same way, then drops the library's
  older ones (and any a crashed build left);
- an unusable record, a log pruned past it, or an engine holding a different number of
  entries than the record says is rebuilt from the store.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from docshelf.search.engines.sidecar import (
    Progress,
    SidecarIndex,
    SidecarStore,
    deeper,
    shown,
    write_record,
)
from docshelf.search.entries import UNKNOWN, Known
from docshelf.store.base import SearchFilters

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

MAX_FETCH = 4096  # the deepest over-fetch before a filter is answered by the store
Asked = Callable[[int], tuple[list[tuple[int, float]], bool]]


def pushed(store: SidecarStore, filters: SearchFilters, most: int) -> frozenset[str] | None:
    """The documents ``filters`` let through, when an engine is to apply them (at most
    ``most``); None: no filter, or too many to pass (the store checks each candidate).
    An empty set: nothing can match."""
    if filters.empty:
        return None
    matching = store.matching_documents(filters)
    return matching if not matching or len(matching) <= most else None


def fetched(
    store: SidecarStore,
    ask: Asked,
    limit: int,
    filters: SearchFilters,
    visible: Callable[[list[int], SearchFilters], dict[int, str]],
    known: dict[str, Known] | None,
) -> list[tuple[str, float]] | None:
    """The best ``limit`` candidates search may show, ``ask(n)`` giving an engine's best
    ``n`` (seq, score) and whether that was all it holds: asked again, deeper, while the
    filters leave too few. None: still too few at ``MAX_FETCH`` (the store answers)."""
    fetch = limit + 10
    while True:
        found, complete = ask(fetch)
        hits = shown(store, found, [UNKNOWN] * len(found), filters, visible, known)
        if len(hits) >= limit or complete:
            return hits[:limit]
        if fetch >= MAX_FETCH:
            return None
        fetch = min(MAX_FETCH, max(2 * fetch, deeper(fetch, len(hits), len(found))))


class CollectionIndex(SidecarIndex):
    """The upkeep of an index kept in an engine's collections; a subclass reads and
    writes its engine and builds (``_build``: a new collection, then ``_publish``)."""

    KIND: ClassVar[str] = ""  # between the base and the build in a collection's name

    # -- what each does its own way ---------------------------------------------------------
    def _usable(self, epoch: str | None) -> Any:
        """The record, when it may answer for ``epoch`` (None: rebuild)."""
        raise NotImplementedError

    def _base(self) -> str:
        raise NotImplementedError

    def _count(self, collection: str) -> int:
        raise NotImplementedError

    def _keys(self, collection: str) -> list[int]:
        raise NotImplementedError

    def _names(self) -> list[str]:
        raise NotImplementedError

    def _drop(self, name: str) -> None:
        raise NotImplementedError

    def _apply(self, collection: str, seqs: Sequence[int]) -> None:
        """Write those seqs as the store has them now: upsert the ones it holds, delete
        the others."""
        raise NotImplementedError

    def _settle(self, collection: str) -> None:
        """Make the writes searchable at full speed (``VectorBackend.settle``)."""

    def _reread(self) -> None:
        """Have this process's searches read the record again."""
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    def _new_collection(self) -> str:
        return f"{self._base()}{self.KIND}_{uuid.uuid4().hex[:12]}"

    def _held(self, epoch: str) -> tuple[npt.NDArray[np.int64], int]:
        import numpy as np

        record = self._usable(epoch)
        if record is None:
            raise LookupError(epoch)
        return np.asarray(self._keys(record.collection), dtype=np.int64), record.position

    def _forget(self) -> None:
        self._reread()
        self._drop_others(keep=None)

    def _update(self, epoch: str, *, force: bool, rebuild: bool, progress: Progress | None) -> str:
        """Apply what changed since the record (every change: a write by id is cheap), or
        rebuild (an unusable record, a log pruned past it, an engine that lost entries)."""
        record = self._usable(epoch)
        if record is None or rebuild:
            self._build(epoch, progress)
            return "rebuilt"
        try:
            position, changed = self._changes(record.position)
        except LookupError:
            self._build(epoch, progress)
            return "rebuilt"
        if self._count(record.collection) != record.count:
            log.warning("the %s does not hold what it did: rebuilding it", self.NAME)
            self._build(epoch, progress)
            return "rebuilt"
        if not changed:
            self._prune_once(record.position)
            return "current"
        self._apply(record.collection, changed)
        self._publish(dataclasses.replace(record, position=position), built=False)
        return "updated"

    def _publish(self, record: Any, *, built: bool) -> None:
        """Settle the writes, then point the record at them (its count the engine's);
        after a build, drop the library's other collections."""
        self._settle(record.collection)
        record = dataclasses.replace(record, count=self._count(record.collection))
        write_record(self.directory, record)
        self._prune_log(record.position)
        if built:
            self._drop_others(keep=record.collection)
        self._reread()

    def _drop_others(self, keep: str | None) -> None:
        """Drop this library's collections of this kind but ``keep``."""
        ours = re.compile(re.escape(self._base() + self.KIND) + r"_[0-9a-f]{12}")
        for name in self._names():
            if name != keep and ours.fullmatch(name):
                self._drop(name)
