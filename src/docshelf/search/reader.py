"""What one search reads of its candidates from the store, read when a stage first asks.

A stage asks for what it needs — a candidate's document, its place (``ChunkPlace``:
document, section, heading path, page), its text, its whole chunk, a document — and
the reader answers from what it has read or reads it, in as few store calls as it can:

- the places of the candidates no engine told of (``Candidate.told`` is None) are read
  together, at the first question about any of them (a single query);
- a candidate an engine told of is read whole when its place is first needed, with the
  next few such candidates of the order the stage gives (one query a batch);
- chunks and documents are read with the next few a stage says it may want, so a
  page of hits costs a few queries, and a candidate never looked at is never read.

A candidate deleted since its recall has no place, chunk or document: the stages pass
over it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import islice

from docshelf.model import Chunk, Document
from docshelf.plaintext import repeat_key
from docshelf.search.candidate import Candidate
from docshelf.store.base import ChunkPlace, SearchStore


class Reader:
    """The reads of one search, whose page wants ``wanted`` hits: told candidates read
    whole ``wanted + 4`` at a time (at least 8). It keeps what it read, never the search
    (the stages hand it the candidates they ask about), so no cycle outlives a search."""

    def __init__(self, store: SearchStore, wanted: int) -> None:
        self._store = store
        self._batch = max(8, wanted + 4)
        self._places: dict[str, ChunkPlace] = {}
        self._chunks: dict[str, Chunk] = {}
        self._documents: dict[str, Document] = {}
        self._placed: set[str] = set()  # places read, or asked for and gone
        self._read: set[str] = set()  # asked for by ``chunk`` (read, or gone)
        self._asked: set[str] = set()  # documents read, or asked for and gone
        self._repeats: dict[str, bool] = {}  # a block's key -> whether it is repeated
        self._texts: dict[str, str] = {}  # chunk id -> its text, as ``texts`` read it

    # -- places --------------------------------------------------------------------------
    def _untold(self, candidates: Iterable[Candidate]) -> None:
        """The places of every candidate no engine told of, in one read."""
        wanted = [c.id for c in candidates if c.told is None and c.id not in self._placed]
        if wanted:
            self._placed.update(wanted)
            self._places.update(self._store.chunk_places(wanted))

    def document_ids(self, candidates: Sequence[Candidate]) -> dict[str, str]:
        """Each candidate's document id, in the candidates' order (those deleted since
        their recall left out, unless an engine told of them)."""
        self._untold(candidates)
        places = self._places
        out: dict[str, str] = {}
        for c in candidates:
            if c.told is not None:
                out[c.id] = c.told[0]
            elif c.id in places:
                out[c.id] = places[c.id].document_id
        return out

    def read_places(self, candidates: Sequence[Candidate]) -> Mapping[str, ChunkPlace]:
        """The places read so far (every untold candidate's, and those of the told ones
        read whole)."""
        self._untold(candidates)
        return self._places

    def place(self, c: Candidate, ahead: Iterable[Candidate]) -> ChunkPlace | None:
        """``c``'s place; a told candidate's read whole, with the next unread told ones of
        ``ahead`` (the order that follows ``c``, ``c`` first)."""
        found = self._places.get(c.id)
        if found is not None or c.id in self._placed:
            return found
        if c.told is None:
            self._untold(ahead)
            return self._places.get(c.id)
        following = (g.id for g in ahead if g.told is not None and g.id not in self._placed)
        self._whole(list(dict.fromkeys([c.id, *islice(following, self._batch)]))[: self._batch])
        return self._places.get(c.id)

    def places(self, ids: Sequence[str]) -> dict[str, ChunkPlace]:
        """The places of ``ids`` (candidates), those not read yet read in one call."""
        wanted = [i for i in ids if i not in self._placed]
        if wanted:
            self._placed.update(wanted)
            self._places.update(self._store.chunk_places(wanted))
        return {i: self._places[i] for i in ids if i in self._places}

    def every_place(self, candidates: Sequence[Candidate]) -> dict[str, ChunkPlace]:
        """Every candidate's place."""
        return self.places([c.id for c in candidates])

    # -- chunks, texts, documents ------------------------------------------------------------
    def _whole(self, ids: list[str]) -> None:
        self._placed.update(ids)
        for chunk in self._store.get_chunks(ids):
            self._chunks[chunk.id] = chunk
            self._places[chunk.id] = chunk_place(chunk)

    def chunk(self, c: Candidate, more: Iterable[Candidate], count: int) -> Chunk | None:
        """``c``'s chunk; when it is not read yet, read with up to ``count`` of ``more``
        (the candidates the stage may want next, ``c`` among them) in one call."""
        if c.id not in self._chunks and c.id not in self._read:
            wanted = [g.id for g in islice(more, count)]
            unread = [i for i in wanted if i not in self._chunks]
            self._read.update(wanted)
            self._read.add(c.id)
            if c.id not in unread:
                unread.append(c.id)
            self._chunks.update((chunk.id, chunk) for chunk in self._store.get_chunks(unread))
        return self._chunks.get(c.id)

    def repeated(self, chunk: Chunk, least: int) -> bool:
        """Whether ``chunk``'s text is a block ``least`` or more documents hold (a footer
        on every note), asked of the store once a block."""
        key = repeat_key(chunk.text)
        if key is None:
            return False
        if key not in self._repeats:
            self._repeats[key] = bool(self._store.repeated([key], least))
        return self._repeats[key]

    def looked_at(self, c: Candidate) -> bool:
        """Whether ``chunk`` was asked for ``c`` (as one wanted or one of ``more``)."""
        return c.id in self._read

    def texts(self, ids: Sequence[str]) -> Mapping[str, str]:
        """The texts of ``ids`` (candidates) that exist, those not read yet in one read
        (the words-as-written and the exact stages both read a query's candidates)."""
        unread = [i for i in ids if i not in self._texts]
        if unread:
            self._texts.update(self._store.chunk_texts(unread))
        return {i: self._texts[i] for i in ids if i in self._texts}

    def document(self, document_id: str, ahead: Iterable[Candidate], count: int) -> Document | None:
        """A document; when it is not read yet, read with those of the chunks already read
        in ``ahead`` (up to ``count`` in all) in one call."""
        if document_id not in self._asked:
            chunks = self._chunks
            following = (chunks[g.id].document_id for g in ahead if g.id in chunks)
            missing = [d for d in dict.fromkeys([document_id, *following]) if d not in self._asked]
            missing = missing[: max(1, count)]
            self._asked.update(missing)
            self._documents.update(self._store.get_documents(sorted(missing)))
        return self._documents.get(document_id)

    def parents(self, chunks: Sequence[Chunk]) -> dict[str, Chunk]:
        """The sections ``chunks`` belong to, by id."""
        return {c.id: c for c in self._store.get_chunks([c.parent_id or "" for c in chunks])}


def chunk_place(chunk: Chunk) -> ChunkPlace:
    """``Store.chunk_places``'s answer for ``chunk``."""
    header = chunk.header if chunk.index == 0 else None
    return ChunkPlace(
        chunk.document_id,
        chunk.parent_id,
        chunk.heading_path,
        chunk.page_start,
        chunk.index,
        header,
        tuple(i.heading_path for i in chunk.inner),
    )
