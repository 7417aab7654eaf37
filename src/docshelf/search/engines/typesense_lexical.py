"""Full-text search by Typesense (``DOCSHELF_SEARCH_URL``), kept beside the SQLite store as
the tantivy index is (``tantivy.py``), and like it derived from the store and never
trusted over it.

- A snippet is a document of the library's ``<name>_text_<build>`` collection: its seq
  (the id), chunk id and document id, its place (``CHUNK_FIELDS``: tier, position,
  parent, previous and next chunk, heading path, pages), its header and text as
  written (``context_prefix``, ``content``; none of these searched),
  and the fields every lexical index has (``store/lexical_fields.py``: title and
  headings from its header, the body) as the words the tantivy index makes of them
  (lowercased, accents folded, English stems: ``tantivy.text_analyzer``), so a word
  matches its other forms as in FTS5.
- Beside it, the library's documents (``<name>_documents``: ``typesense_documents.py``),
  brought in line by the same upkeep whenever the store changed; search's filters are
  said in Typesense's syntax to it.
- The collection holds the store as of one position of its lexical change log, named by
  the record beside the database (``docshelf.typesense/current.json``). Only a
  collection at the store's own position answers; while it is behind (a write not yet
  applied), off, or failing, FTS5 answers, as it does for tantivy.
- ``maintain()`` upserts and deletes what changed since the record and then moves it on
  (idempotent: a crash half-way is healed by doing it again); a build fills a new
  collection, publishes it, and drops the older ones.

Typesense ranks for search-as-you-type (``text_match``: how many of the query's tokens
match, in which field), not by how rare a word is, so on its own it ranked the right
place first for a third of docqa-dev's questions where FTS5 does for three in four.
docshelf asks it for each word on its own instead (one request), takes each word's
document frequency from the count Typesense reports, and scores a snippet as the sum,
over the words it holds, of the word's BM25 IDF times the weight of the best field it
holds it in: any of the words, the rarer ones counting more, as FTS5's OR of the words
does (without BM25's term frequency and length). No typos, no prefixes.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from docshelf.search.engines.backend import PUSHED, collection_base
from docshelf.search.engines.collections import CollectionIndex, fetched
from docshelf.search.engines.fts5 import Fts5
from docshelf.search.engines.sidecar import (
    OnLexicalLog,
    Progress,
    SidecarStore,
    read_record,
)
from docshelf.search.engines.tantivy import text_analyzer
from docshelf.search.engines.typesense import TypesenseServer, only
from docshelf.search.engines.typesense_documents import TypesenseDocuments
from docshelf.search.entries import Known
from docshelf.store.base import SearchFilters
from docshelf.store.lexical_fields import WEIGHTS, header_fields

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

BATCH = 1_000  # snippets written at a time
FIELDS = ("title", "headings", "body")
# Typesense's field weights are integers; the shared weights, scaled
QUERY_WEIGHTS = ",".join(str(round(w * 4)) for w in (WEIGHTS.title, WEIGHTS.headings, WEIGHTS.body))


# What a snippet's document holds besides the searched fields: its ids and place, and
# its text as written (its header, the context prefix, then the content); none searched.
CHUNK_FIELDS: list[dict[str, Any]] = [
    {"name": "seq", "type": "int64"},
    {"name": "document_id", "type": "string"},
    *(
        {"name": name, "type": kind, "index": False, "optional": True}
        for name, kind in [
            ("chunk_id", "string"),
            ("chunk_type", "string"),
            ("index", "int32"),
            ("parent_id", "string"),
            ("prev_id", "string"),
            ("next_id", "string"),
            ("heading_path", "string[]"),
            ("page", "int32"),
            ("page_end", "int32"),
            ("context_prefix", "string"),
            ("content", "string"),
        ]
    ),
]
LAYOUT = 4  # the fields and their analysis above; a collection of another is rebuilt
WEIGHT = {"title": WEIGHTS.title, "headings": WEIGHTS.headings, "body": WEIGHTS.body}


@dataclasses.dataclass(frozen=True)
class Held:
    """What the engine holds: a collection as of a lexical-log position."""

    epoch: str
    where: str
    collection: str
    position: int
    count: int
    layout: int = 0


class TypesenseLexicalIndex(OnLexicalLog, CollectionIndex):
    """Lexical search for the SQLite store by Typesense; FTS5 while it is behind."""

    META_KEY = "lexical_index"  # the store logs snippet changes while this is on
    ON = "tantivy"  # (the log's triggers name the first index that used it)
    OFF = "fts5"
    SUFFIX = ".typesense"
    LOG = "lexical_log"
    NAME = "lexical index (typesense)"
    KIND = "_text"

    def __init__(
        self, store: SidecarStore, server: TypesenseServer, *, strict: bool = False
    ) -> None:
        super().__init__(store, threshold=1)  # on from the first snippet
        self.server = server
        self.strict = strict  # an engine's failure raised, not answered by FTS5 (tests)
        self._fts5 = Fts5(store)
        self._analyzer = text_analyzer()
        self._synced: object = None
        self._ready: Held | None = None
        # the library's documents, kept in step with the text (typesense_documents.py)
        self.documents = TypesenseDocuments(store, server, self.directory, self._base)

    # -- reading -------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """Which engine answers now: ``typesense`` or ``fts5``."""
        with self._lock:
            return "typesense" if self._sync() is not None else "fts5"

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk_id, score: the IDF-weighted sum the module tells), best first, filters
        honoured."""
        if not terms or limit <= 0:
            return []
        with self._lock:
            held = self._sync()
        if held is not None:
            try:
                hits = self._search(held, terms, limit, filters, known)
            except Exception as exc:  # any failure of the engine: FTS5 answers
                if self.strict:
                    raise
                log.warning("the %s failed, FTS5 answers: %s", self.NAME, exc)
                self._synced = None
            else:
                if hits is not None:
                    return hits
        return self._fts5.search(terms, limit, filters)

    def _search(
        self,
        held: Held,
        terms: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None,
    ) -> list[tuple[str, float]] | None:
        """None: a filter so selective that FTS5 (filters in SQL) should answer."""
        tokens = list(dict.fromkeys(t for term in terms for t in self._analyzer.analyze(term)))
        if not tokens:
            return []
        documents = self.documents.pushed(filters, PUSHED)
        if documents is not None and not documents:
            return []
        return fetched(
            self._store,
            lambda n: self._matches(held, tokens, n, documents),
            limit,
            filters,
            self._store.lexical_visible,
            known,
        )

    def _matches(
        self, held: Held, tokens: list[str], fetch: int, documents: Collection[str] | None
    ) -> tuple[list[tuple[int, float]], bool]:
        """(seq, score) best first, from each token's first ``fetch`` matches (scored as
        the module says), and whether every token's matches were all there."""
        query: dict[str, Any] = {
            "query_by": ",".join(FIELDS),
            "query_by_weights": QUERY_WEIGHTS,
            "prefix": "false",
            "num_typos": 0,
            "typo_tokens_threshold": 0,
            "drop_tokens_threshold": 0,
            "include_fields": "seq",
            "highlight_fields": ",".join(FIELDS),
            **only(documents),
        }
        answers = self.server.search_each(
            held.collection, [{**query, "q": token} for token in tokens], fetch
        )
        scores: dict[int, float] = {}
        total = max(held.count, 1)
        for hits, df in answers:
            idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
            for hit in hits:
                fields = [h.get("field") for h in hit.get("highlights", ())]
                weight = max((WEIGHT.get(f, 1.0) for f in fields if f), default=1.0)
                seq = int(hit["document"]["seq"])
                scores[seq] = scores.get(seq, 0.0) + idf * weight
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked, all(len(hits) >= df for hits, df in answers)

    def _sync(self) -> Held | None:
        """The record, when it may answer: on, of this engine, at the store's position."""
        mode = self.mode()
        position = self._log_position()
        try:  # (a rebuild elsewhere moves the record at the same log position)
            stamp = (self.directory / "current.json").stat().st_mtime_ns
        except OSError:
            stamp = 0
        key = (mode, position, stamp)
        if key == self._synced:
            return self._ready
        self._synced = key
        self._ready = self._usable(self.epoch_of(mode))
        if self._ready is not None and self._ready.position != position:
            self._ready = None  # behind the store: FTS5 answers until it catches up
        return self._ready

    def _usable(self, epoch: str | None) -> Held | None:
        if epoch is None:
            return None
        record = read_record(self.directory, Held)
        if record is None or record.epoch != epoch or record.where != self.server.where:
            return None
        return record if record.layout == LAYOUT else None

    def state(self) -> dict[str, object]:
        """For ``status``: which engine answers and how far the index is behind."""
        mode = self.mode()
        record = self._usable(self.epoch_of(mode))
        behind = self._log_position() - record.position if record else 0
        return self._status(
            mode,
            "typesense" if record is not None and not behind else "fts5",
            record.count if record else 0,
            self.epoch_of(mode) is not None and record is None,
            engine=self.server.where,
            collection=record.collection if record else None,
            documents=self.documents.collection if self.documents.held() else None,
            behind=behind,
        )

    def close(self) -> None:
        self.server.close()

    # -- writing (one process at a time, under the lock file: SidecarIndex.maintain) --------
    def _up_to_date(self, *, force: bool, rebuild: bool) -> bool:
        if force or rebuild:
            return False
        record = self._usable(self.epoch_of(self.mode()))
        if record is None or record.position != self._log_position():
            return False
        return self.documents.held() is not None  # (its documents at the store's generation)

    def _update(self, epoch: str, *, force: bool, rebuild: bool, progress: Progress | None) -> str:
        done = super()._update(epoch, force=force, rebuild=rebuild, progress=progress)
        return "updated" if self.documents.sync() and done == "current" else done

    def _apply(self, collection: str, seqs: Sequence[int]) -> None:
        for start in range(0, len(seqs), BATCH):
            part = list(seqs[start : start + BATCH])
            rows = self._store.snippets_by_seq(part)
            self._write(collection, rows)
            kept = {seq for seq, _, _ in rows}
            gone = [seq for seq in part if seq not in kept]
            if gone:
                self.server.delete(collection, gone)

    def _write(self, collection: str, rows: list[tuple[int, str, str]]) -> None:
        """Upsert snippets (seq, header, text) with their ids and place (``CHUNK_FIELDS``)."""
        places = self._store.snippet_places([seq for seq, _, _ in rows])
        chunks = {c.id: c for c in self._store.get_chunks([c for c, _ in places.values()])}
        documents: list[dict[str, Any]] = []
        for seq, header, text in rows:
            if seq not in places or places[seq][0] not in chunks:
                continue
            chunk = chunks[places[seq][0]]
            title, headings = header_fields(header)
            document: dict[str, Any] = {
                "id": str(seq),
                "seq": seq,
                "chunk_id": chunk.id,
                "document_id": chunk.document_id,
                "chunk_type": chunk.tier.value,
                "index": chunk.index,
                "heading_path": list(chunk.heading_path),
                "context_prefix": header,
                "content": text,
            }
            optional = {
                "parent_id": chunk.parent_id,
                "prev_id": chunk.prev_id,
                "next_id": chunk.next_id,
                "page": chunk.page_start,
                "page_end": chunk.page_end,
            }
            document.update({k: v for k, v in optional.items() if v is not None})
            for name, value in zip(FIELDS, (title, headings, text), strict=True):
                document[name] = " ".join(self._analyzer.analyze(value))
            documents.append(document)
        if documents:
            self.server.upsert(collection, documents)

    def _build(self, epoch: str, progress: Progress | None) -> None:
        """A new collection from every snippet in the store, published by the record."""
        position = self._log_position()
        collection = self._new_collection()
        searched = [{"name": name, "type": "string"} for name in FIELDS]
        fields: list[dict[str, Any]] = [*CHUNK_FIELDS, *searched]
        self.server.client.collections.create({"name": collection, "fields": fields})
        total, done = self._size(), 0
        for rows in self._store.iter_snippets(batch=BATCH):
            self._write(collection, rows)
            done += len(rows)
            if progress:
                progress(done, total, f"building the {self.NAME}")
        self._publish(Held(epoch, self.server.where, collection, position, 0, LAYOUT), built=True)
        self.documents.sync()

    def _base(self) -> str:
        return collection_base(self._store, self.server.prefix)

    def _count(self, collection: str) -> int:
        return self.server.count(collection)

    def _keys(self, collection: str) -> list[int]:
        return self.server.keys(collection)

    def _names(self) -> list[str]:
        return self.server.names()

    def _drop(self, name: str) -> None:
        self.server.drop(name)

    def _reread(self) -> None:
        self._synced = None
