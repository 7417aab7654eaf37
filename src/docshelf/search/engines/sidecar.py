"""What the two sidecar indexes of the SQLite store share (``usearch.py``: a usearch graph,
``tantivy.py``: a tantivy index): a folder beside the database, an on/off switch with an
epoch recorded in the store's meta, a size threshold, one writer at a time under a
folder lock, a change log in the store folded into the index and then pruned, and the
status they report.

Each index is derived from the store and never trusted over it; how each one stays
consistent is told in its own module. Here is only the life cycle they have in common:

- off (meta ``<key>`` unset or ``<off>``): the store answers, no log is kept;
- at ``threshold`` (or when forced) ``maintain()`` switches on: meta ``<on>:<epoch>``,
  triggers in the store start logging changes, and a full build is published;
- while on, ``maintain()`` folds the log into the index (or rebuilds it);
- with ``threshold <= 0``, or when the library shrinks, it switches off again: meta
  back to ``<off>``, the log pruned, the files removed.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from docshelf import durable
from docshelf.durable import folder_lock
from docshelf.model import Document
from docshelf.search.entries import Entry, Known, Told, document_bits, document_id_of
from docshelf.store.base import ChunkPlace, SearchFilters, SearchStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Progress = Callable[[int, int, str], None]
R = TypeVar("R")
# A filter whose share would have a sidecar fetch more than this many times its first
# fetch has the candidates of other documents dropped by their entry before they are
# looked at (``DocumentsWithin``; docs/benchmarks/filtered-search.md, "Filtered searches:
# the lexical side").
WITHIN_AT = 4


@runtime_checkable
class SidecarStore(SearchStore, Protocol):
    """What the sidecar indexes (usearch.py: the ANN graph; tantivy.py: the lexical
    index) read from a store that keeps them beside itself (SQLite: store/sqlite_feed.py).
    Rows are keyed by chunk seq; each feed's log says which seqs changed since a position,
    and is pruned once every reader has a checkpoint past it."""

    path: Path  # the database file; the sidecars live in folders beside it

    # -- the ANN index: snippet vectors -------------------------------------------------
    def vector_count(self) -> int: ...
    def vector_seqs(self) -> npt.NDArray[np.int64]:
        """The chunk seq of every vector, sorted (for ``status --check``)."""
        ...

    def vector_log_position(self) -> int:
        """The last vector_log entry ever written (0 when none)."""
        ...

    def vector_changes(self, after: int) -> tuple[int, list[int]]:
        """(log position, chunk seqs whose vector changed after ``after``); raises
        ``LookupError`` when entries after ``after`` were pruned."""
        ...

    def prune_vector_log(self, through: int) -> None: ...
    def vectors_by_seq(
        self, seqs: Sequence[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The vectors of those chunk seqs that still have one (in seq order)."""
        ...

    def iter_vectors(
        self, batch: int = 20_000
    ) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        """Every vector, ``batch`` rows at a time in seq order."""
        ...

    def visible_snippets(self, seqs: Sequence[int], filters: SearchFilters) -> dict[int, str]:
        """chunk seq -> chunk id, for the seqs vector search may show under ``filters``."""
        ...

    def vectors_matching(
        self, filters: SearchFilters
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The vectors search may show under these filters (for very selective ones)."""
        ...

    # -- the lexical index: snippet text -------------------------------------------------
    def snippet_count(self) -> int: ...
    def snippet_seqs(self) -> npt.NDArray[np.int64]:
        """The seq of every snippet, sorted (for ``status --check``)."""
        ...

    def lexical_log_position(self) -> int:
        """The last lexical_log entry ever written (0 when none)."""
        ...

    def lexical_changes(self, after: int) -> tuple[int, list[int]]:
        """(log position, snippet seqs added or removed after ``after``); raises
        ``LookupError`` when entries after ``after`` were pruned."""
        ...

    def prune_lexical_log(self, through: int) -> None: ...
    def snippets_by_seq(self, seqs: Sequence[int]) -> list[tuple[int, str, str]]:
        """(seq, header, text) of those snippet seqs that still exist, in seq order."""
        ...

    def iter_snippets(self, batch: int = 20_000) -> Iterator[list[tuple[int, str, str]]]:
        """Every snippet's (seq, header, text), ``batch`` rows at a time in seq order."""
        ...

    def lexical_visible(self, seqs: Sequence[int], filters: SearchFilters) -> dict[int, str]:
        """chunk seq -> chunk id, for the seqs lexical search may show under ``filters``."""
        ...

    # -- both: what an index keeps of each snippet (search/entries.py) -------------------
    def snippet_places(self, seqs: Sequence[int]) -> dict[int, tuple[str, ChunkPlace]]:
        """chunk seq -> (chunk id, place), for those seqs that are snippets."""
        ...

    def incomplete_documents(self) -> frozenset[str]:
        """The ids of the documents that are not ``complete`` (search may not show them)."""
        ...

    def documents_among(self, filters: SearchFilters, document_ids: Sequence[str]) -> set[str]:
        """Those of ``document_ids`` that match ``filters`` (whatever their status)."""
        ...

    def remember_seqs(self, seqs: Mapping[str, int]) -> None:
        """Chunk id -> seq of chunks an index just named: read them by seq from now on."""
        ...

    def dated_documents(self, after: str, limit: int) -> list[tuple[Document, float]]:
        """The first ``limit`` documents whose id sorts after ``after``, in id order, each
        with its date (its file's last change, else when it was added)."""
        ...

    def matching_documents(self, filters: SearchFilters) -> frozenset[str]:
        """The documents that match ``filters`` (whatever their status), read once per
        commit."""
        ...


@dataclasses.dataclass(frozen=True)
class Audit:
    """Whether a sidecar index holds what the store holds (``docshelf status --check``):
    its entries against the store's rows, the changes it has yet to fold in set aside
    (search overlays them, or waits for them: never a problem)."""

    index: str  # "lexical index (tantivy)"
    extra: int = 0  # entries of rows the store does not hold (or held twice)
    missing: int = 0  # rows of the store it lacks
    unusable: str = ""  # why its entries could not be compared

    def problems(self) -> list[str]:
        out = [f"the {self.index} {self.unusable}"] if self.unusable else []
        if self.extra:
            out.append(f"the {self.index} holds {self.extra} entries the store does not")
        if self.missing:
            out.append(f"the {self.index} lacks {self.missing} snippets of the store")
        return out


def audit(
    name: str,
    held: npt.NDArray[np.int64],
    stored: npt.NDArray[np.int64],
    pending: Sequence[int],
) -> Audit:
    """The seqs an index ``held`` against those the store has (``stored``), leaving out
    the ``pending`` ones (changed after the index's position)."""
    import numpy as np

    unique = np.unique(held)
    later = np.unique(np.asarray(pending, dtype=np.int64))
    extra = np.setdiff1d(np.setdiff1d(unique, stored), later)
    missing = np.setdiff1d(np.setdiff1d(stored, unique), later)
    return Audit(name, len(extra) + len(held) - len(unique), len(missing))


class SidecarIndex:
    """The shared life cycle of a sidecar index; a subclass names its meta key, its on
    and off modes, its folder and its log, and does the building and folding."""

    META_KEY: ClassVar[str]  # the store meta recording the switch: "vector_index"
    ON: ClassVar[str]  # mode prefix while on ("ann"): meta "ann:<epoch>"
    OFF: ClassVar[str]  # mode while off ("exact"): what answers instead
    SUFFIX: ClassVar[str]  # the folder beside the database: docshelf.db -> docshelf<SUFFIX>
    LOG: ClassVar[str]  # the store's change log ("vector_log")
    NAME: str  # as ``status --check`` names it: "vector index (usearch)"

    def __init__(self, store: SidecarStore, threshold: int) -> None:
        self._store = store
        self.threshold = threshold
        self.directory = sidecar_dir(store, self.SUFFIX)
        durable.tighten(self.directory)  # left open to others by an older version
        self._lock = threading.RLock()

    # -- the switch ------------------------------------------------------------------------
    def mode(self) -> str:
        """The switch as the store records it: ``<ON>:<epoch>`` or ``<OFF>``."""
        return self._store.get_meta(self.META_KEY) or self.OFF

    def epoch_of(self, mode: str) -> str | None:
        """The epoch of an ``<ON>:<epoch>`` mode; None while off."""
        prefix = f"{self.ON}:"
        return mode[len(prefix) :] if mode.startswith(prefix) else None

    def _switch_on(self) -> str:
        """A new epoch recorded in the store: from this commit on, its triggers log."""
        import uuid  # (uuid imports platform: not at start-up)

        epoch = uuid.uuid4().hex[:12]
        with self._store.transaction():
            self._store.set_meta(self.META_KEY, f"{self.ON}:{epoch}")
        return epoch

    def _switch_off(self) -> str:
        """Back to what answers without the index: the log dropped, the files removed."""
        with self._store.transaction():
            self._store.set_meta(self.META_KEY, self.OFF)
        self._prune_log(self._log_position())
        remove_index_files(self.directory, keep=None)
        self._forget()
        return f"switched to {self.OFF}"

    # -- the store's change log (each index names its own store methods) ------------------
    def _log_position(self) -> int:
        raise NotImplementedError

    def _changes(self, after: int) -> tuple[int, list[int]]:
        """The log position now and the seqs changed after ``after`` (LookupError: the
        log was pruned past ``after``)."""
        raise NotImplementedError

    def _prune_log(self, through: int) -> None:
        raise NotImplementedError

    def _prune_once(self, through: int) -> None:
        """Prune the log up to what the index holds, unless that was done already."""
        if self._store.get_meta(f"{self.LOG}_pruned") != str(through):
            self._prune_log(through)

    # -- upkeep (one process at a time, under the lock file) ---------------------------------
    def maintain(
        self, *, force: bool = False, rebuild: bool = False, progress: Progress | None = None
    ) -> str:
        """Bring the index in line with the store: switch on or off at the threshold,
        build, or fold the log in (``force``: build below the threshold, fold any change;
        ``rebuild``: a new index from the store, for repair). Returns what it did;
        ``busy`` when another process holds the lock (it is doing the same work)."""
        if self._up_to_date(force=force, rebuild=rebuild):
            return "current"
        # Not under self._lock: searches in this process go on (from what is published)
        # while a build or fold runs; the file lock keeps writers apart.
        with folder_lock(self.directory) as held:
            if not held:
                return "busy"
            self._locked()
            try:
                return self._maintain(force=force, rebuild=rebuild, progress=progress)
            except BaseException:
                self._failed()
                raise

    def _maintain(self, *, force: bool, rebuild: bool, progress: Progress | None) -> str:
        epoch = self.epoch_of(self.mode())
        if self.threshold <= 0:
            return self._switch_off() if epoch is not None else self.OFF
        if epoch is None:
            if not force and self._size() < self.threshold:
                return self.OFF
            epoch = self._switch_on()
            self._build(epoch, progress)
            return "built"
        return self._update(epoch, force=force, rebuild=rebuild, progress=progress)

    def audit(self) -> Audit | None:
        """Its entries against the store's rows (``Audit``); None while it is off."""
        epoch = self.epoch_of(self.mode())
        if self.threshold <= 0 or epoch is None:
            return None
        try:
            held, position = self._held(epoch)
        except LookupError:
            return Audit(self.NAME, unusable=f"is on but not built ({self.OFF} answers)")
        except (OSError, ValueError, RuntimeError) as exc:
            return Audit(self.NAME, unusable=f"cannot be read: {exc}")
        try:
            _, pending = self._changes(position)
        except LookupError:
            return Audit(self.NAME, unusable="is behind its pruned change log")
        return audit(self.NAME, held, self._stored(), pending)

    def _status(
        self, mode: str, path: str, indexed: int, needs_build: bool, **extra: object
    ) -> dict[str, object]:
        """For ``status``: which path answers, the switch, and the index's own figures."""
        return {
            "path": path,
            "recorded": mode.split(":")[0],  # the switch as the store records it
            "threshold": self.threshold,
            "indexed": indexed,
            **extra,
            "needs_build": needs_build,
        }

    # -- what each index does its own way ---------------------------------------------------
    def _up_to_date(self, *, force: bool, rebuild: bool) -> bool:
        """Whether ``maintain`` can answer ``current`` without taking the lock."""
        raise NotImplementedError

    def _locked(self) -> None:
        """Called once the lock is held, before anything is looked at."""

    def _failed(self) -> None:
        """Called when the upkeep under the lock raised: the next one looks again."""

    def _size(self) -> int:
        """What the threshold counts (vectors, snippets)."""
        raise NotImplementedError

    def _build(self, epoch: str, progress: Progress | None) -> None:
        raise NotImplementedError

    def _update(self, epoch: str, *, force: bool, rebuild: bool, progress: Progress | None) -> str:
        """While on: fold the log in, rebuild, or switch off when the library shrank."""
        raise NotImplementedError

    def _forget(self) -> None:
        """Drop what this process remembers of the index (reopen on the next search)."""
        raise NotImplementedError

    def _held(self, epoch: str) -> tuple[npt.NDArray[np.int64], int]:
        """The seqs the published index of ``epoch`` holds, and the log position it is
        at (LookupError: none is published)."""
        raise NotImplementedError

    def _stored(self) -> npt.NDArray[np.int64]:
        """The seqs of the rows the index should hold."""
        raise NotImplementedError


class OnVectorLog(SidecarIndex):
    """An index of the store's snippet vectors, kept from its vector log (``usearch.py``,
    ``external.py``): upkeep looks again whenever the store's generation or the meta that
    binds the index (switch, model, dimension) moved, or the last upkeep failed."""

    _maintained: object = None  # _version() maintain() last looked at
    _looking: object = None  # _version() the running maintain() looks at

    def _log_position(self) -> int:
        return self._store.vector_log_position()

    def _changes(self, after: int) -> tuple[int, list[int]]:
        return self._store.vector_changes(after)

    def _prune_log(self, through: int) -> None:
        self._store.prune_vector_log(through)

    def _size(self) -> int:
        return self._store.vector_count()

    def _stored(self) -> npt.NDArray[np.int64]:
        return self._store.vector_seqs()

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

    def _up_to_date(self, *, force: bool, rebuild: bool) -> bool:
        self._looking = self._version()
        return self._looking == self._maintained and not (force or rebuild)

    def _locked(self) -> None:
        self._maintained = self._looking

    def _failed(self) -> None:
        self._maintained = None


class OnLexicalLog(SidecarIndex):
    """An index of the store's snippet text, kept from its lexical log (``tantivy.py``,
    ``typesense_lexical.py``)."""

    def _log_position(self) -> int:
        return self._store.lexical_log_position()

    def _changes(self, after: int) -> tuple[int, list[int]]:
        return self._store.lexical_changes(after)

    def _prune_log(self, through: int) -> None:
        self._store.prune_lexical_log(through)

    def _size(self) -> int:
        return self._store.snippet_count()

    def _stored(self) -> npt.NDArray[np.int64]:
        return self._store.snippet_seqs()


def shown(
    store: SidecarStore,
    found: Sequence[tuple[int, float]],
    entries: Sequence[Entry],
    filters: SearchFilters,
    checked: Callable[[list[int], SearchFilters], dict[int, str]],
    known: dict[str, Known] | None,
) -> list[tuple[str, float]]:
    """The candidates ``found`` (seq, score; best first) that search may show, as
    (chunk id, score), with what ``entries`` (one per candidate) tell of each in
    ``known``. With every entry known, it reads no candidate from the store: a candidate
    the index still holds exists (the index is current, or answers changed seqs from the
    store), so it is shown unless its document is not complete, or does not match the
    filters (every filter is a document's: asked of the store once per document, and
    remembered until a commit). Otherwise ``checked`` (the store's visibility check for
    these seqs and filters) decides. The store is told each shown candidate's seq, for
    the reads that follow."""
    if not found:
        return []
    out: list[tuple[str, float]] = []
    seqs: dict[str, int] = {}
    if all(e[0] for e in entries):
        hidden = store.incomplete_documents()
        if not filters.empty:  # the documents that match, as (hidden) the ones that do not
            among = {document_id_of(e[0]) for e in entries}
            hidden = hidden | (among - store.documents_among(filters, list(among)))
        named = known.named if isinstance(known, Told) else {}
        for (seq, score), (doc, ord_, head, wide) in zip(found, entries, strict=True):
            chunk_id = named.get(seq)
            if chunk_id is not None:  # named by an earlier list of this search
                out.append((chunk_id, score))
                continue
            hex16 = f"{doc:016x}"  # the ids (entries.document_id_of, model.chunk_id), inline
            document_id = "doc_" + hex16
            if document_id in hidden:
                continue
            chunk_id = f"chunk_{hex16[:12]}_{ord_}"
            out.append((chunk_id, score))
            seqs[chunk_id] = seq
            named[seq] = chunk_id
            if known is not None:
                known[chunk_id] = (document_id, head, seq, wide)
    else:
        visible = checked([seq for seq, _ in found], filters)
        for (seq, score), (doc, _, head, wide) in zip(found, entries, strict=True):
            seen = visible.get(seq)
            if seen is None:
                continue
            out.append((seen, score))
            if known is not None and doc:
                known[seen] = (document_id_of(doc), head, seq, wide)
    if seqs:
        store.remember_seqs(seqs)
    return out


def scan_matching(
    store: SidecarStore, q: npt.NDArray[np.float32], limit: int, filters: SearchFilters
) -> list[tuple[str, float]]:
    """The best ``limit`` of the vectors ``filters`` let through, scanned exactly (a filter
    so selective that an index would fetch too deep for it)."""
    import numpy as np

    seqs, matrix = store.vectors_matching(filters)
    if not len(seqs):
        return []
    sims = matrix @ q
    top = np.argsort(-sims, kind="stable")[:limit].tolist()
    visible = store.visible_snippets([int(seqs[i]) for i in top], filters)
    return [(visible[int(seqs[i])], float(sims[i])) for i in top if int(seqs[i]) in visible]


class DocumentsWithin:
    """Per filter set, the entries' ``doc`` of the documents it lets through, and 0 (an
    unknown entry, which ``shown`` asks the store about). Looking at a candidate costs
    far more than fetching it; checking its entry's ``doc`` against this set first
    leaves ``shown`` only the filter's own. Kept for the last ``kept`` filter sets while
    their documents (the store's ``matching_documents``, read once per commit) stay the
    same."""

    def __init__(self, store: SidecarStore, kept: int = 2) -> None:
        self._store = store
        self._kept = kept
        self._sets: dict[SearchFilters, tuple[frozenset[str], frozenset[int]]] = {}

    def for_depth(self, filters: SearchFilters, depth: int, first: int) -> frozenset[int] | None:
        """The set, when ``filters``' share would have a sidecar fetch ``depth`` candidates
        where ``first`` would do unfiltered: more than ``WITHIN_AT`` times as many."""
        return None if filters.empty or depth <= WITHIN_AT * first else self(filters)

    def __call__(self, filters: SearchFilters) -> frozenset[int]:
        documents = self._store.matching_documents(filters)
        held = self._sets.pop(filters, None)  # (kept newest last)
        if held is None or (held[0] is not documents and held[0] != documents):
            held = (documents, frozenset({document_bits(d) for d in documents} | {0}))
        self._sets[filters] = held
        while len(self._sets) > self._kept:
            del self._sets[next(iter(self._sets))]
        return held[1]


def deeper(fetch: int, passed: int, of: int) -> int:
    """How many candidates to fetch for ``fetch`` to pass a filter that let ``passed`` of
    ``of`` through, with a quarter more for the filter's share varying by neighbourhood."""
    return -(-fetch * of * 5 // (4 * max(passed, 1)))


def sidecar_dir(store: SidecarStore, suffix: str) -> Path:
    """Beside the database: ``docshelf.db`` → ``docshelf<suffix>/``."""
    return store.path.with_name(store.path.stem + suffix)


def read_record(directory: Path, kind: type[R]) -> R | None:
    """The dataclass ``current.json`` holds, or None (missing, torn or of another shape)."""
    data = durable.read_pointer(directory)
    try:
        return kind(**data) if data is not None else None
    except TypeError:
        return None


def write_record(directory: Path, record: Any) -> None:
    """Point ``current.json`` at a new record, atomically."""
    durable.publish_pointer(directory, dataclasses.asdict(record))


def remove_index_files(directory: Path, keep: str | None) -> None:
    """Old index files or folders (``index-*``) and leftovers of interrupted writes; with
    ``keep`` None, the pointer too. (A reader that still maps an old file keeps its pages
    until it lets go.)"""
    if not directory.exists():
        return
    for path in directory.iterdir():
        if path.name.startswith("index-") and not _kept(path.name, keep):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    if keep is None:
        (directory / "current.json").unlink(missing_ok=True)


def _kept(name: str, keep: str | None) -> bool:
    """``keep`` itself, or a finished file named after it (its companion: ``<keep>.…``)."""
    if keep is None:
        return False
    return name == keep or (name.startswith(keep + ".") and not name.endswith(".tmp"))
