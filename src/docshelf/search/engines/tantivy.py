"""The sidecar lexical index of the SQLite store: a tantivy BM25 index in a folder
beside the database, derived from the store and never trusted over it.

FTS5 ranks an OR query by scoring every row that matches any term; at a million
snippets a query with one common word scores hundreds of thousands of rows
(docs/benchmarks/ann-and-sidecars.md, "Closing the gap at 1M"). Tantivy keeps per-block
score bounds and skips whole blocks that cannot reach the top ``k`` (block-max WAND), so
it answers in about a millisecond.

How it stays consistent (ARCHITECTURE.md, "Decisions already taken"):

- While the index is on (meta ``lexical_index = 'tantivy:<epoch>'``), triggers in
  the store append the seq of every snippet added or removed to ``lexical_log`` *in
  the same transaction* as the change (snippets are immutable: a changed document
  is new snippets).
- The index holds a **watermark** — the log position it has applied — as a document
  of its own, committed atomically with the snippets. Search uses the index only
  when the watermark equals the store's log position; otherwise (a crash between a
  store commit and the index update, another process's write not folded in yet)
  FTS5 answers, exactly as below the threshold. Nothing is ever shown from a stale
  index.
- Every candidate is checked before it is returned: its document is complete and
  matches the filters. Unfiltered, each snippet's **entry** in the index (its
  document, position and heading key: search/entries.py, fast fields beside its seq)
  answers that without reading the candidates from the store; filtered, the store
  checks them (and then also that the snippet still exists).
- ``maintain()`` (after ingest, by idle workers, by ``reindex``) applies the log
  under ``lock``: each logged seq is deleted from the index and re-added if the
  store still has it, so replaying is harmless. A full build goes to a new folder,
  published by atomically replacing ``current.json``.
- Below ``threshold`` snippets FTS5 answers and no log is kept; the switch is
  recorded in the store's meta.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docshelf.durable import fsync, make_private, private_dir
from docshelf.search.engines.fts5 import Fts5
from docshelf.search.engines.sidecar import (
    DocumentsWithin,
    OnLexicalLog,
    Progress,
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
from docshelf.store.lexical_fields import WEIGHTS, header_fields

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

# Snippets; below this FTS5 is fast enough (docs/benchmarks/ann-and-sidecars.md, "Closing the
# gap at 1M").
DEFAULT_THRESHOLD = 50_000
MAX_FETCH = 4096  # the deepest over-fetch before a filtered query is answered by FTS5
WATERMARK_SEQ = 0  # chunk seqs start at 1: seq 0 is the document carrying the watermark
ANALYZER = "docshelf"
LAYOUT = 3  # the schema and analyzer below; an index of another layout is rebuilt
# The fields and their boosts, as FTS5's bm25() column weights (store/lexical_fields.py).
FIELDS = (("title", WEIGHTS.title), ("headings", WEIGHTS.headings), ("body", WEIGHTS.body))
ENTRY_FIELDS = ("doc", "ord", "head", "wide")


@dataclass(frozen=True)
class Pointer:
    """What ``current.json`` says: which folder holds the index of which epoch."""

    epoch: str
    folder: str
    created_at: float
    layout: int = 0
    stamp: str = ""  # evidence.HEADING_KEY_STAMP of its entries' heading keys


def index_dir(store: SidecarStore) -> Path:
    """Beside the database: ``docshelf.db`` → ``docshelf.lex/``."""
    return sidecar_dir(store, SidecarLexicalIndex.SUFFIX)


def text_analyzer() -> Any:
    """Close to FTS5's ``porter unicode61 remove_diacritics 2``: words split at anything
    not a letter or digit, lowercased, accents folded, English stemming."""
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema() -> Any:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("seq", indexed=True, fast=True)
    builder.add_integer_field("mark", fast=True)
    for name in ENTRY_FIELDS:  # the snippet's entry (search/entries.py)
        builder.add_unsigned_field(name, fast=True)
    for name, _ in FIELDS:
        builder.add_text_field(name, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


class SidecarLexicalIndex(OnLexicalLog):
    """Lexical search for the SQLite store: FTS5 below ``threshold`` snippets (or while
    the index is behind the store), the tantivy index above it."""

    META_KEY = "lexical_index"
    ON = "tantivy"
    OFF = "fts5"
    SUFFIX = ".lex"
    LOG = "lexical_log"
    NAME = "lexical index (tantivy)"

    def __init__(self, store: SidecarStore, threshold: int = DEFAULT_THRESHOLD) -> None:
        super().__init__(store, threshold)
        self._synced: tuple[str, int, int] | None = None  # (mode, position, pointer stamp)
        self._ready = False
        self._index: Any = None  # tantivy.Index
        self._folder: str | None = None
        self._analyzer: Any = None
        self._within = DocumentsWithin(store)
        self._fts5 = Fts5(store)  # what answers while the index is off or behind

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """Which engine answers now: ``tantivy`` or ``fts5``."""
        with self._lock:
            return "tantivy" if self._sync() else "fts5"

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk_id, BM25 score), best first, filters honoured; what the entries tell of
        each hit goes into ``known``."""
        if not terms or limit <= 0:
            return []
        with self._lock:
            if self._sync():
                hits = self._search(terms, limit, filters, known)
                if hits is not None:
                    return hits
        return self._fts5.search(terms, limit, filters)

    def _search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None,
    ) -> list[tuple[str, float]] | None:
        """None: a filter so selective that FTS5 (filters in SQL) should answer."""
        query = self._query(terms)
        if query is None:
            return []
        searcher = self._index.searcher()
        # Filtered or not, the first ``limit`` that may be shown among the best ``fetch``
        # are the best ``limit`` that may be shown whenever that many are among them
        # (tantivy's top k is exact): fetch more only when short. Tantivy's part of a deep
        # fetch is cheap, looking at each candidate is not: a filter that lets few through
        # has the candidates of other documents dropped by their entry's ``doc`` first.
        fetch = limit + 10
        within: frozenset[int] | None = None
        while True:
            found = searcher.search(query, fetch, count=False).hits
            scores = [score for score, _ in found]
            addresses = [address for _, address in found]
            if within is not None:
                docs = searcher.fast_field_values("doc", addresses)
                kept = [i for i, doc in enumerate(docs) if doc in within]
                scores = [scores[i] for i in kept]
                addresses = [addresses[i] for i in kept]
            seqs = searcher.fast_field_values("seq", addresses)
            columns = [searcher.fast_field_values(name, addresses) for name in ENTRY_FIELDS]
            candidates: list[tuple[int, float]] = []
            entries: list[Entry] = []
            for score, seq, doc, ord_, head, wide in zip(scores, seqs, *columns, strict=True):
                if seq:  # (not the watermark)
                    candidates.append((seq, float(score)))
                    entries.append((doc, ord_, head, wide) if doc else UNKNOWN)
            hits = shown(
                self._store, candidates, entries, filters, self._store.lexical_visible, known
            )
            if len(hits) >= limit or len(found) < fetch:
                return hits[:limit]
            if fetch >= MAX_FETCH:
                return None
            wanted = deeper(fetch, len(hits), len(found))
            if within is None:
                within = self._within.for_depth(filters, wanted, fetch)
            fetch = min(MAX_FETCH, max(2 * fetch, wanted))

    def may_hold(self, words: Sequence[str], limit: int) -> set[int] | None:
        """The seqs of the snippets whose text may hold every one of ``words`` (the
        exact-match rule's: ``evidence.words``, each ASCII), unless the text has word
        characters beyond ASCII (``entries.wide``: the caller keeps those): those whose
        body has every token the index makes of the words. A text whose words are ASCII
        and hold the rule's words has those tokens: the index cuts and stems its words as
        it cuts and stems the rule's. None when the index cannot tell (not current, a
        word beyond ASCII, or more than ``limit`` such snippets): the caller reads every
        text."""
        if not words or not all(w.isascii() for w in words):
            return None
        import tantivy

        with self._lock:
            if not self._sync():
                return None
            schema = self._index.schema
            tokens = dict.fromkeys(t for w in words for t in self._analyzer.analyze(w))
            if not tokens:
                return None
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, tantivy.Query.term_query(schema, "body", t, "freq"))
                    for t in tokens
                ]
            )
            searcher = self._index.searcher()
            found = searcher.search(query, limit + 1, count=False).hits
            if len(found) > limit:
                return None
            return set(searcher.fast_field_values("seq", [address for _, address in found]))

    def _query(self, terms: Sequence[str]) -> Any:
        """Any of the words in any field, like FTS5's ``"a" OR "b"`` (a term of several
        words, such as ``foo_bar``, matches any of them here where FTS5 wants the phrase);
        each field's BM25 boosted by its weight and summed, as FTS5's weighted bm25()."""
        import tantivy

        schema = self._index.schema
        tokens = dict.fromkeys(t for term in terms for t in self._analyzer.analyze(term))
        clauses = [
            (
                tantivy.Occur.Should,
                tantivy.Query.boost_query(
                    tantivy.Query.term_query(schema, name, token, "freq"), weight
                ),
            )
            for token in tokens
            for name, weight in FIELDS
        ]
        return tantivy.Query.boolean_query(clauses) if clauses else None

    def _sync(self) -> bool:
        """Whether the index may answer: on, opened, and its watermark at the store's log
        position (an index behind the store is never used)."""
        mode = self.mode()
        position = self._log_position()
        key = (mode, position, _stamp(self.directory / "current.json"))  # a rebuild moves it
        if key == self._synced:
            return self._ready
        self._ready = False
        self._synced = key
        epoch = self.epoch_of(mode)
        if self.threshold <= 0 or epoch is None:
            self._close()
            return False
        pointer = read_pointer(self.directory)
        if pointer is None or pointer.epoch != epoch or not _current_layout(pointer):
            self._close()
            return False
        try:
            if pointer.folder != self._folder:
                self._open(pointer.folder)
            else:
                self._index.reload()
            watermark = self._watermark()
        except (OSError, ValueError, RuntimeError) as exc:  # removed or torn: FTS5 answers
            log.warning("cannot open the lexical index %s: %s", pointer.folder, exc)
            self._close()
            self._synced = None
            return False
        self._ready = watermark == position
        if watermark != position:
            self._synced = None  # look again next time (a maintainer may be catching up)
        return self._ready

    def _open(self, folder: str) -> None:
        import tantivy

        path = self.directory / folder
        if not (path / "meta.json").exists():
            raise OSError(f"{path} holds no index")
        index = tantivy.Index.open(str(path))
        self._analyzer = text_analyzer()
        index.register_tokenizer(ANALYZER, self._analyzer)
        index.config_reader(reload_policy="Manual")
        self._index = index
        self._folder = folder

    def _close(self) -> None:
        self._index = None
        self._folder = None

    def _watermark(self) -> int:
        return _read_watermark(self._index)

    def state(self) -> dict[str, object]:
        """For ``status``: which engine answers and how far the index is behind."""
        mode = self.mode()
        with self._lock:
            ready = self._sync()
            indexed = self._index.searcher().num_docs - 1 if self._index is not None else 0
            watermark = self._watermark() if self._index is not None else None
        position = self._log_position()
        return self._status(
            mode,
            "tantivy" if ready else "fts5",
            max(indexed, 0),
            self.epoch_of(mode) is not None and watermark is None,
            behind=position - watermark if watermark is not None else 0,
        )

    # -- writing (one process at a time, under the lock file: SidecarIndex.maintain) --------
    def _forget(self) -> None:
        self._synced = None

    def _held(self, epoch: str) -> tuple[npt.NDArray[np.int64], int]:
        import numpy as np
        import tantivy

        pointer = read_pointer(self.directory)
        if pointer is None or pointer.epoch != epoch or not _current_layout(pointer):
            raise LookupError(epoch)
        index = tantivy.Index.open(str(self.directory / pointer.folder))
        searcher = index.searcher()
        every = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1), count=False)
        seqs = np.asarray(
            searcher.fast_field_values("seq", [address for _, address in every.hits]), np.int64
        )
        return seqs[seqs != WATERMARK_SEQ], _read_watermark(index)

    def _up_to_date(self, *, force: bool, rebuild: bool) -> bool:
        mode = self.mode()
        return (
            self.epoch_of(mode) is not None
            and not (force or rebuild)
            and self._synced is not None
            and self._synced[:2] == (mode, self._log_position())
            and self._ready
        )

    def _update(self, epoch: str, *, force: bool, rebuild: bool, progress: Progress | None) -> str:
        """Apply the log, or rebuild (asked to, or the folder is of another epoch or
        layout, torn, or behind a pruned log); switch off when the library is below half
        the threshold (found on by another index of the same log, Typesense's, it is
        not built at all)."""
        if not force and self._size() < self.threshold // 2:
            return self._switch_off()
        pointer = read_pointer(self.directory)
        if rebuild or pointer is None or pointer.epoch != epoch or not _current_layout(pointer):
            self._build(epoch, progress)
            return "rebuilt"
        try:
            return self._apply(pointer, switch_off=not force)
        except LookupError:  # the log was pruned past this index: start again
            self._build(epoch, progress)
            return "rebuilt"
        except (OSError, ValueError, RuntimeError) as exc:  # torn or removed folder
            log.warning("rebuilding the lexical index: %s", exc)
            self._build(epoch, progress)
            return "rebuilt"

    def _apply(self, pointer: Pointer, *, switch_off: bool = True) -> str:
        """Fold the log entries after the index's watermark into it, in one commit
        (``switch_off``: back to FTS5 if the library shrank below half the threshold)."""
        import tantivy

        store = self._store
        remove_index_files(self.directory, keep=pointer.folder)  # leftovers of an interrupted build
        index = tantivy.Index.open(str(self.directory / pointer.folder))
        index.register_tokenizer(ANALYZER, text_analyzer())
        index.reload()
        watermark = _read_watermark(index)
        position, changed = self._changes(watermark)
        if not changed:
            self._prune_once(watermark)
            return "current"
        writer = index.writer(heap_size=50_000_000, num_threads=1)
        for seq in changed:
            writer.delete_documents_by_term("seq", seq)
        rows = store.snippets_by_seq(changed)
        entries = _entries(store, rows)
        for seq, header, text in rows:
            writer.add_document(_doc(seq, header, text, entries[seq]))
        _set_watermark(writer, position)
        writer.commit()
        writer.wait_merging_threads()
        for entry in (self.directory / pointer.folder).iterdir():
            make_private(entry)  # the commit's new segments
        self._prune_log(position)
        self._synced = None
        index.reload()
        if switch_off and index.searcher().num_docs - 1 < self.threshold // 2:
            return self._switch_off()
        return "updated"

    def _build(self, epoch: str, progress: Progress | None) -> None:
        """A new index from every snippet in the store, in a new folder. The log position
        is read first; whatever changes while the build streams is logged after it and
        applied on top before the folder is published."""
        import tantivy

        store = self._store
        position = self._log_position()
        total = self._size()
        import uuid

        folder = f"index-{position}-{uuid.uuid4().hex[:8]}"
        path = self.directory / folder
        private_dir(path)
        index = tantivy.Index(_schema(), path=str(path))
        index.register_tokenizer(ANALYZER, text_analyzer())
        writer = index.writer(heap_size=200_000_000, num_threads=min(2, os.cpu_count() or 1))
        done = 0
        for rows in store.iter_snippets():
            entries = _entries(store, rows)
            for seq, header, text in rows:
                writer.add_document(_doc(seq, header, text, entries[seq]))
            done += len(rows)
            if progress:
                progress(done, total, "building the lexical index")
        _set_watermark(writer, position)
        writer.commit()
        writer.wait_merging_threads()
        for entry in path.iterdir():
            make_private(entry)  # (tantivy follows the umask; the folder is private meanwhile)
            if entry.is_file():
                fsync(entry)
        fsync(path)
        write_pointer(self.directory, Pointer(epoch, folder, time.time(), LAYOUT, _stamp_now()))
        remove_index_files(self.directory, keep=folder)
        self._synced = None
        pointer = read_pointer(self.directory)
        if pointer is not None:
            self._apply(pointer, switch_off=False)  # what changed while the build streamed


def _doc(seq: int, header: str, text: str, entry: Entry) -> Any:
    """A snippet in the index's fields (the header split as every backend splits it) and
    its entry."""
    import tantivy

    title, headings = header_fields(header)
    doc = tantivy.Document(seq=seq, title=title, headings=headings, body=text)
    for name, value in zip(ENTRY_FIELDS, entry, strict=True):
        doc.add_unsigned(name, value)  # (a Python int past 2**63 would be taken for a float)
    return doc


def _entries(store: SidecarStore, rows: Sequence[tuple[int, str, str]]) -> dict[int, Entry]:
    """The entry of each snippet of ``rows`` (seq, header, text), its place read from the
    store."""
    places = store.snippet_places([seq for seq, _, _ in rows])
    return {
        seq: entry_of(*places[seq], text) if seq in places else UNKNOWN for seq, _, text in rows
    }


def _stamp_now() -> str:
    from docshelf.search.evidence import HEADING_KEY_STAMP

    return HEADING_KEY_STAMP


def _current_layout(pointer: Pointer) -> bool:
    """Whether the index is of this code's layout and heading keys (else it is rebuilt)."""
    return pointer.layout == LAYOUT and pointer.stamp == _stamp_now()


def _set_watermark(writer: Any, position: int) -> None:
    """Replace the watermark document (deleted and added in the same commit)."""
    import tantivy

    writer.delete_documents_by_term("seq", WATERMARK_SEQ)
    writer.add_document(tantivy.Document(seq=WATERMARK_SEQ, mark=position))


def _read_watermark(index: Any) -> int:
    import tantivy

    searcher = index.searcher()
    query = tantivy.Query.term_query(index.schema, "seq", WATERMARK_SEQ)
    found = searcher.search(query, 1, count=False).hits
    if not found:
        raise ValueError("the lexical index has no watermark")
    value = searcher.fast_field_values("mark", [found[0][1]])[0]
    if value is None:
        raise ValueError("the lexical index has no watermark")
    return int(value)


def _stamp(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def read_pointer(directory: Path) -> Pointer | None:
    return read_record(directory, Pointer)


def write_pointer(directory: Path, pointer: Pointer) -> None:
    write_record(directory, pointer)
