"""``Retriever``: one query from words to cited hits, in one place.

recall (lexical and vector, by the engines ``engines_for`` chose) → fuse → feedback
(vector recall again, for the query moved toward the first fusion's top) → hits (the
concept boost, phrase and exclusion checks, near-duplicates and groups dropped,
citations) → rerank → the caller's view of each document → facets. Identical
searches are answered from the retrieval cache while the library has not changed.

Its parts are handed to it (the store, the engines, the embedder, fusion settings,
reranker, taxonomy, cache, metrics and the per-user view of documents): it knows
nothing of how they were wired.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from docshelf.errors import InvalidInput, NotFound
from docshelf.model import Chunk, Citation, Distillate, Document, Hit, Scores, Tier
from docshelf.search import citing
from docshelf.search.cache import ResultCache
from docshelf.search.engines import LexicalEngine, VectorEngine, Verbatim
from docshelf.search.entries import Known, Told
from docshelf.search.evidence import by_evidence, named_headings, needs_places, words
from docshelf.search.filters import SEARCH_MODES, with_query_fields
from docshelf.search.fusion import (
    Fused,
    FusionSettings,
    as_fused,
    boost,
    feedback_query,
    fuse,
    fused_ids,
)
from docshelf.search.query import STOPWORDS, ParsedQuery, lexical_terms, parse_query, satisfies
from docshelf.search.results import (
    CACHED_LIMIT,
    CANDIDATE_POOL,
    CONTEXT_MODES,
    GROUPS,
    MAX_LIMIT,
    ContextResult,
    SearchResult,
)
from docshelf.store.base import ChunkPlace, SearchFilters, Store

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from docshelf.embed import Embedder
    from docshelf.knowledge.taxonomy import Taxonomy
    from docshelf.rerank import Reranker
    from docshelf.telemetry import Metrics

T = TypeVar("T")
SIDE_BY_SIDE = 250_000  # vectors in the ANN graph from which both engines answer at once
# The most snippets of the library that may quote a query before every candidate's text
# is read instead (``Retriever.may_quote``).
QUOTABLE = 1_000
# The caller's view of shared documents: each with their own name for it (access.as_named).
SeenBy = Callable[[Sequence[Document], str | None], list[Document]]
NO_EMBEDDER = (
    "No embedding model for this library: results are lexical only "
    "(install `docshelf[local]` and run `docshelf reindex` for hybrid search)"
)


class Retriever:
    """Search, context and distillates over one store."""

    def __init__(
        self,
        store: Store,
        *,
        lexical: LexicalEngine,
        vector: VectorEngine,
        embedder: Callable[[], Embedder | None],
        fusion: FusionSettings,
        reranker: Reranker | None,
        rerank_top_k: int,
        taxonomy: Taxonomy,
        cache: ResultCache[SearchResult],
        metrics: Metrics,
        seen_by: SeenBy,
    ) -> None:
        self.store = store
        self.lexical = lexical
        self.vector = vector
        self._embedder = embedder  # read at each query: the caller may swap its embedder
        self.fusion = fusion
        self.reranker = reranker
        self.rerank_top_k = rerank_top_k
        self.taxonomy = taxonomy
        self.cache = cache
        self.metrics = metrics
        self.seen_by = seen_by

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder()

    # -- search ---------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        mode: str = "hybrid",
        filters: SearchFilters | None = None,
        candidates: int | None = None,
        user_id: str | None = None,
        group: str = "snippet",
        expand: str | None = None,
        facets: bool = False,
    ) -> SearchResult:
        """Snippet-first hybrid search: lexical and vector recall, fused, then cited
        (``Shelf.search`` tells the query syntax and options). An identical search
        within the cache's TTL is answered from it, unless the library changed since."""

        def run() -> SearchResult:
            return self._search(
                query,
                limit=limit,
                mode=mode,
                filters=filters,
                candidates=candidates,
                user_id=user_id,
                group=group,
                expand=expand,
                facets=facets,
            )

        with self.store.searching():
            if expand is not None or limit > CACHED_LIMIT:
                return run()  # large results are not kept: the cache stays a few MB at most
            # What else shapes the result: fusion (eval compares settings on one Shelf),
            # reranker (the object itself, not its id(): a freed reranker's id is reused).
            args: tuple[object, ...] = (query, limit, mode, filters, candidates, user_id, group)
            args += (facets, self.fusion, self.reranker, self.rerank_top_k)
            generation = self.store.generation()
            return self.cache.get_or_compute(args, generation, run, user_id=user_id)

    def _search(
        self,
        query: str,
        *,
        limit: int,
        mode: str,
        filters: SearchFilters | None,
        candidates: int | None,
        user_id: str | None,
        group: str,
        expand: str | None,
        facets: bool,
    ) -> SearchResult:
        _check_search(query, limit, mode, group, expand)
        parsed = parse_query(query)
        if not parsed.text:  # any string is a valid query; this one asks for nothing
            empty = "The query has only filters or exclusions; add words to search for"
            return SearchResult(query=query, mode=mode, hits=[], notice=empty)
        filters = with_query_fields(
            filters or SearchFilters(), parsed.fields, user_id, self.taxonomy
        )
        started = time.perf_counter()
        notice: str | None = None
        embedder = self.embedder
        if mode != "lexical" and not self.can_embed_queries():
            notice = NO_EMBEDDER
            mode = "lexical"
        # A fixed pool: min-max fusion normalises over the candidates, so the
        # pool must not move with `limit` (bench/fusion.py measured 100 best).
        size = max(candidates or CANDIDATE_POOL, limit)
        if parsed.constrained or group in ("section", "document"):
            size *= 3  # phrases, exclusions and grouping discard candidates
        timings: dict[str, float] = {}
        lexical: list[tuple[str, float]] = []
        vector: list[tuple[str, float]] = []
        known = Told()  # each candidate's document and heading key, if an engine told them

        def lexical_side() -> list[tuple[str, float]]:
            with _timed(timings, "lexical"):
                return self.lexical_recall(lexical_terms(parsed.text), size, filters, known)

        if mode == "lexical":
            lexical = lexical_side()
        else:
            assert embedder is not None
            with _timed(timings, "embed"):  # (the model takes every core it is given)
                qvec = embedder.embed([parsed.text])[0]
            # hybrid: on a large library the lexical engine answers on another thread
            # meanwhile (both engines let go of the GIL while they work)
            side = _beside(lexical_side) if mode == "hybrid" and self._side_by_side() else None
            if mode == "hybrid" and side is None:
                lexical = lexical_side()
            try:
                with _timed(timings, "vector"):
                    vector = self.vector_recall(qvec, size, filters, known)
            finally:
                if side is not None:
                    lexical = side.result()
        feedback = mode == "hybrid" and self.fusion.feedback_docs > 0 and bool(vector)
        with _timed(timings, "fusion"):
            if feedback:  # the first fusion only says which snippets feedback learns from
                top = fused_ids(lexical, vector, self.fusion, self.fusion.feedback_docs)
            else:
                fused = (
                    fuse(lexical, vector, self.fusion)
                    if mode == "hybrid"
                    else as_fused(lexical, vector)
                )
        if feedback:
            with _timed(timings, "feedback"):
                moved = self.feedback_recall(qvec, top, size, filters, known)
                fused = fuse(lexical, moved, self.fusion, before_feedback=vector)
        with _timed(timings, "fetch"):
            wanted = max(limit, self.rerank_top_k) if self.reranker else limit
            concepts = self.named_concepts(parsed)
            hits, pool = self.hits(fused, wanted, parsed, group, expand, concepts, known)
        if self.reranker is not None and len(hits) > 1:
            with _timed(timings, "rerank"):
                hits = self.rerank(parsed.text, hits)
        hits = self.hits_seen_by(hits[:limit], filters.user_id)
        self.metrics.searched(mode, (time.perf_counter() - started) * 1000)
        counts: dict[str, dict[str, int]] = {}
        if facets:
            with _timed(timings, "facets"):
                counts = self.facets(pool)
        return SearchResult(query, mode, hits, notice, timings, pool, counts)

    def _side_by_side(self) -> bool:
        """Whether a hybrid search recalls lexically on another thread: only where the
        engines take long enough to gain by it (from a graph of ``SIDE_BY_SIDE`` vectors;
        at 100k snippets the hand-over cost what the overlap saved: BENCHMARKS.md)."""
        return getattr(self.vector, "graph_size", 0) >= SIDE_BY_SIDE

    def can_embed_queries(self) -> bool:
        """An embedder, of the model the library's vectors were made with (or the library
        has none yet): a query vector from another model would not be comparable."""
        embedder = self.embedder
        if embedder is None:
            return False
        return self.store.get_meta("embedding_model") in (None, embedder.model_id)

    # -- the stages, public for evaluation and benchmarks (bench/feedback.py) ---------------
    def lexical_recall(
        self,
        terms: list[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """(chunk_id, score) from the lexical engine, best first (``known``: what it
        tells of each, see ``LexicalEngine``)."""
        return self.lexical.search(terms, limit, filters, known)

    def vector_recall(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
        near: bool = False,
    ) -> list[tuple[str, float]]:
        """(chunk_id, cosine similarity) from the vector engine, best first (``near``:
        see ``VectorEngine``)."""
        return self.vector.search(query, limit, filters, known, near)

    def feedback_recall(
        self,
        query: npt.NDArray[np.float32],
        top: Sequence[str],
        limit: int,
        filters: SearchFilters,
        known: dict[str, Known] | None = None,
    ) -> list[tuple[str, float]]:
        """Vector recall again, for the query moved toward the vectors of the first
        fusion's top snippets ``top`` (pseudo-relevance feedback: no model call, one more
        vector search)."""
        found = self.store.get_vectors(top)
        moved = feedback_query(
            query, [found[i] for i in top if i in found], self.fusion.feedback_weight
        )
        return self.vector_recall(moved, limit, filters, known, near=True)

    def hits(
        self,
        fused: Sequence[Fused],
        limit: int,
        parsed: ParsedQuery,
        group: str,
        expand: str | None,
        concepts: tuple[str, ...] = (),
        known: Mapping[str, Known] | None = None,
    ) -> tuple[list[Hit], list[str]]:
        """Fused candidates to cited hits, in order: the concept boost, phrase/exclusion
        checks, near-identical snippets dropped, one hit per group, optionally with the
        parent section. Also the document ids of all the candidates, in fused order (what
        evaluation measures).

        What the engines told of a candidate (``known``: its document and heading key)
        is not read again; every other candidate's place (document, section, heading
        path, page) is read at once. The places of the known ones are read as the hits
        are made, a few at a time, in fused order, and the text only of those that could
        still become a hit — a candidate whose group has its hit already is passed over
        unread."""
        ids = [f.id for f in fused]
        places = _Places(self.store, ids, known or {}, max(8, limit + 4))
        chunks = places.chunks  # (the candidates read whole: with their places, or below)
        documents = places.documents()

        if concepts:
            fused = self.boost_concepts(fused, documents, concepts)

        # the text of every candidate that may quote the query, only for the exact-match
        # rule of a query long enough to be quoted (the text alone: the few hits are read
        # whole below)
        def quotable() -> Mapping[str, str]:
            return self.store.chunk_texts(self.may_quote(ids, parsed, known or {}))

        fused = self.sections_first(fused, places, parsed, quotable)
        pool = [documents[f.id] for f in fused if f.id in documents]
        query_words = citing.query_words(parsed.text)  # the citation step's
        docs: dict[str, Document] = {}
        groups: set[Hashable] = set()
        texts: set[str] = set()
        hits: list[Hit] = []
        read: set[str] = set()  # the candidates looked at for a hit (text and document)
        asked: set[str] = set()  # the documents read (or gone)
        for n, f in enumerate(fused):
            where = places.get(f.id)
            if where is None:
                continue  # deleted between recall and fetch
            key = place_key(f.id, where, group)
            if all(k in groups for k in citing.possible_keys(where, key, group)):
                continue
            if f.id not in read and f.id not in chunks:  # the next few that may be hits
                wanted = self._next_unread(
                    fused[n:], places, groups, group, read, limit - len(hits)
                )
                unread = [i for i in wanted if i not in chunks]
                if unread:
                    chunks.update((c.id, c) for c in self.store.get_chunks(unread))
                read.update(wanted)
            chunk = chunks.get(f.id)
            if chunk is None:
                continue  # deleted between recall and fetch
            if chunk.document_id not in asked:  # of this and the next few chunks read
                ahead = (chunks[g.id].document_id for g in fused[n:] if g.id in chunks)
                missing = [d for d in dict.fromkeys(ahead) if d not in asked]
                missing = missing[: max(4, limit - len(hits) + 2)]
                asked.update(missing)
                docs.update(self.store.get_documents(sorted(missing)))
            if parsed.constrained and not satisfies(chunk.text, parsed):
                continue
            same_text = " ".join(chunk.text.casefold().split())[:400]
            if same_text in texts:
                continue
            doc = docs.get(chunk.document_id)
            if doc is None:
                continue
            # cited under the inner heading whose part holds the query's words, if any:
            # then one hit per (file, that heading)
            at = citing.cited_under(chunk, query_words)
            if at is not None and group == "snippet":
                key = (where.document_id, at.heading_path, where.page_start)
            if key in groups:
                continue
            texts.add(same_text)
            groups.add(key)
            hits.append(
                Hit(
                    chunk=chunk,
                    document=doc,
                    score=f.score,
                    scores=Scores(lexical=f.lexical, vector=f.vector, fused=f.score),
                    citation=Citation.for_chunk(chunk, doc, at),
                )
            )
            if len(hits) == limit:
                break
        if expand == "parent-section":
            parents = {
                c.id: c for c in self.store.get_chunks([h.chunk.parent_id or "" for h in hits])
            }
            hits = [
                dataclasses.replace(h, context=parents.get(h.chunk.parent_id or "")) for h in hits
            ]
        return hits, pool

    @staticmethod
    def _next_unread(
        ahead: Sequence[Fused],
        places: _Places,
        groups: set[Hashable],
        group: str,
        read: set[str],
        short: int,
    ) -> list[str]:
        """The next candidates whose text is needed: not read yet, and of a group with no
        hit yet (one per group: the first may be dropped by a later check, so each group
        gets a second look in the next read, if it comes to that). A few more than the
        hits still missing, as checks drop some."""
        want = max(8, 2 * short)
        taken: set[Hashable] = set()
        out: list[str] = []
        for f in ahead:
            if f.id in read:
                continue
            where = places.get(f.id)
            if where is None:
                continue
            key = place_key(f.id, where, group)
            if key in taken or all(k in groups for k in citing.possible_keys(where, key, group)):
                continue
            taken.add(key)
            out.append(f.id)
            if len(out) == want:
                break
        return out

    def may_quote(
        self, ids: list[str], parsed: ParsedQuery, known: Mapping[str, Known]
    ) -> list[str]:
        """The candidates whose text may hold the whole query word for word: those the
        lexical engine cannot rule out (``Verbatim``: by the entries the engines told of
        them), or all of them."""
        if not isinstance(self.lexical, Verbatim) or not all(i in known for i in ids):
            return ids
        held = self.lexical.may_hold(words(parsed.text), QUOTABLE)
        if held is None:
            return ids
        return [i for i in ids if known[i][3] or known[i][2] in held]

    def sections_first(
        self,
        fused: Sequence[Fused],
        places: _Places,
        parsed: ParsedQuery,
        texts: Callable[[], Mapping[str, str]],
    ) -> list[Fused]:
        """The text evidence of the fusion settings (``evidence.by_evidence``): snippets
        under a heading that names the query's words, of a place several candidates point
        at, and exact matches of the query move up. It reads the places of the
        candidates the engines did not describe and, of the others, of those whose
        heading key is the query's (every place, for the section and sibling evidence),
        and ``texts`` only when the query is long enough to be quoted."""
        if needs_places(self.fusion):
            return by_evidence(fused, places.every(), parsed.text, self.fusion, texts)
        named = None
        if self.fusion.exact_first:
            named = named_headings(parsed.text, places.read, places.heads(), places.some)
        return by_evidence(fused, places.read, parsed.text, self.fusion, texts, named)

    def named_concepts(self, parsed: ParsedQuery) -> tuple[str, ...]:
        """The concepts the query names — in its words (a label or alternative label of the
        taxonomy) or a ``concept:`` field — with their narrower ones; () when the boost is
        off."""
        if self.fusion.concept_boost <= 0:
            return ()
        named = self.taxonomy.mentioned(parsed.text, STOPWORDS)
        for name, value in parsed.fields:
            concept = self.taxonomy.resolve(value) if name == "concepts" else None
            if concept is not None:
                named.append(concept)
        return tuple(sorted({c for n in named for c in self.taxonomy.narrower_or_same(n)}))

    def boost_concepts(
        self, fused: Sequence[Fused], documents: Mapping[str, str], concepts: tuple[str, ...]
    ) -> list[Fused]:
        """Raise the candidates whose document (``documents``: candidate id -> document
        id) carries one of ``concepts`` (SPEC §4)."""
        docs = list(dict.fromkeys(documents.values()))
        marked: set[str] = set()
        for start in range(0, len(docs), 400):
            marked |= self.store.documents_matching(
                SearchFilters(
                    document_ids=tuple(docs[start : start + 400]), concept_groups=(concepts,)
                )
            )
        ids = {f.id for f in fused if documents.get(f.id) in marked}
        return boost(fused, ids, self.fusion.concept_boost)

    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        """The top-K hits in the reranker's order; if it declines, the fused order stands."""
        assert self.reranker is not None
        top = hits[: self.rerank_top_k]
        scores = self.reranker.scores(query, [h.chunk.retrieval_text for h in top])
        if scores is None or len(scores) != len(top):
            return hits
        ranked = sorted(range(len(top)), key=lambda i: (-scores[i], i))
        reranked = [
            dataclasses.replace(top[i], scores=dataclasses.replace(top[i].scores, rerank=scores[i]))
            for i in ranked
        ]
        return reranked + hits[len(top) :]

    def hits_seen_by(self, hits: list[Hit], user_id: str | None) -> list[Hit]:
        """The hits as ``user_id`` sees them: each document under their own name for it."""
        if user_id is None:
            return hits
        docs = list({h.document.id: h.document for h in hits}.values())
        seen = {d.id: d for d in self.seen_by(docs, user_id)}
        out = []
        for h in hits:
            doc = seen[h.document.id]
            if doc is not h.document:
                at = citing.inner_at(h.chunk, h.citation.anchor)
                h = dataclasses.replace(
                    h, document=doc, citation=Citation.for_chunk(h.chunk, doc, at)
                )
            out.append(h)
        return out

    def facets(self, document_ids: list[str]) -> dict[str, dict[str, int]]:
        """Counts per tag, concept and file type over the documents of the candidates."""
        unique = tuple(dict.fromkeys(document_ids))
        docs = self.store.list_documents(document_ids=unique) if unique else []
        facets: dict[str, dict[str, int]] = {"tag": {}, "concept": {}, "type": {}}
        for doc in docs:
            for key, values in (
                ("tag", doc.tags),
                ("concept", doc.concept_ids),
                ("type", (doc.file_type,)),
            ):
                for value in values:
                    facets[key][value] = facets[key].get(value, 0) + 1
        return {
            k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in facets.items()
        }

    # -- around a hit ------------------------------------------------------------------------
    def visible(self, document_id: str, user_id: str | None) -> Document:
        """The document as the caller sees it, if they may see it; another user's is
        answered as unknown."""
        doc = self.store.get_document(document_id)
        if doc is None or (user_id is not None and not self.store.has_access(user_id, doc.id)):
            raise NotFound(f"No document {document_id!r}")
        return self.seen_by([doc], user_id)[0]

    def context(
        self,
        chunk_id: str,
        mode: str = "snippet-window",
        window: int = 1,
        user_id: str | None = None,
        anchor: int | None = None,
    ) -> ContextResult:
        """Widen a hit: its neighbours, its section, or its section's neighbours. With a
        search citation's ``anchor``, cited as the search cited it (under the inner heading
        that starts there; any other anchor: under the chunk's own heading)."""
        if mode not in CONTEXT_MODES:
            raise InvalidInput(
                f"Unknown context mode {mode!r}; use one of {', '.join(CONTEXT_MODES)}"
            )
        if not 0 <= window <= 20:
            raise InvalidInput(f"window must be between 0 and 20, not {window}")
        found = self.store.get_chunks([chunk_id])
        if not found:
            raise NotFound(f"No chunk {chunk_id!r}")
        chunk = found[0]
        try:
            doc = self.visible(chunk.document_id, user_id)
        except NotFound:
            raise NotFound(f"No chunk {chunk_id!r}") from None
        if mode == "snippet-window":
            chunks = self._neighbours(chunk, window)
        else:
            section = chunk
            if chunk.tier is Tier.SNIPPET and chunk.parent_id:
                section = self.store.get_chunks([chunk.parent_id])[0]
            chunks = [section] if mode == "parent-section" else self._neighbours(section, 1)
        at = citing.inner_at(chunk, anchor) if anchor is not None else None
        return ContextResult(chunk_id, mode, chunks, Citation.for_chunk(chunk, doc, at))

    def _neighbours(self, chunk: Chunk, window: int) -> list[Chunk]:
        tier = self.store.chunks_of_document(chunk.document_id, chunk.tier)
        lo, hi = max(0, chunk.index - window), chunk.index + window + 1
        return tier[lo:hi]

    def distillates(
        self,
        query: str | None = None,
        *,
        document_id: str | None = None,
        limit: int = 20,
        user_id: str | None = None,
    ) -> list[tuple[Distillate, Document]]:
        """Key claims: a document's (``document_id``), or those matching ``query``."""
        if document_id is not None:
            doc = self.visible(document_id, user_id)
            return [(d, doc) for d in self.store.distillates_of(doc.id)[:limit]]
        if not query or not query.strip():
            raise InvalidInput("Give a query or a document id to list distillates")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        parsed = parse_query(query)
        filters = with_query_fields(SearchFilters(), parsed.fields, user_id, self.taxonomy)
        found = self.store.search_distillates(lexical_terms(parsed.text), limit, filters)
        listed = self.store.list_documents(
            document_ids=tuple(dict.fromkeys(x.document_id for x, _ in found))
        )
        docs = {d.id: d for d in self.seen_by(listed, user_id)}
        return [(x, docs[x.document_id]) for x, _ in found if x.document_id in docs]


class _Places:
    """The places of one search's candidates (``ChunkPlace``): of those the engines did
    not describe, read at once; of the others (``known``), read as the hits stage reaches
    them, ``batch`` at a time in fused order, whole (``chunks``: the hits stage wants the
    text of most of them). A candidate deleted since its recall has none."""

    def __init__(
        self, store: Store, ids: list[str], known: Mapping[str, Known], batch: int
    ) -> None:
        self._store = store
        self._order = ids
        self._batch = batch
        self._known = known  # (it may tell of others too: the order says which count)
        unknown = [i for i in ids if i not in known]
        self.read: dict[str, ChunkPlace] = store.chunk_places(unknown) if unknown else {}
        self.chunks: dict[str, Chunk] = {}  # the candidates read whole
        self._asked = set(unknown)  # read, or asked for and gone

    def documents(self) -> dict[str, str]:
        """Each candidate's document id (those deleted since their recall left out,
        unless an engine described them)."""
        known, read = self._known, self.read
        out: dict[str, str] = {}
        for i in self._order:
            told = known.get(i)
            if told is not None:
                out[i] = told[0]
            elif i in read:
                out[i] = read[i].document_id
        return out

    def heads(self) -> dict[str, int]:
        """The heading key of each candidate an engine described."""
        known = self._known
        return {i: known[i][1] for i in self._order if i in known}

    def get(self, chunk_id: str) -> ChunkPlace | None:
        """The candidate's place, read whole with the next few unread candidates if need
        be."""
        found = self.read.get(chunk_id)
        if found is not None or chunk_id in self._asked or chunk_id not in self._known:
            return found
        start = self._order.index(chunk_id)
        batch: list[str] = []
        for i in self._order[start:]:
            if i not in self._asked:
                batch.append(i)
                if len(batch) == self._batch:
                    break
        self._asked.update(batch)
        for chunk in self._store.get_chunks(batch):
            self.chunks[chunk.id] = chunk
            self.read[chunk.id] = chunk_place(chunk)
        return self.read.get(chunk_id)

    def some(self, ids: list[str]) -> dict[str, ChunkPlace]:
        """The places of ``ids`` (candidates), read from the store where not read yet."""
        wanted = [i for i in ids if i not in self._asked]
        if wanted:
            self._asked.update(wanted)
            self.read.update(self._store.chunk_places(wanted))
        return {i: self.read[i] for i in ids if i in self.read}

    def every(self) -> dict[str, ChunkPlace]:
        """Every candidate's place."""
        return self.some(self._order)


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


def group_key(chunk: Chunk, group: str) -> Hashable:
    """One hit per key: per cited place (``snippet``, the default: the best snippet of
    each file and heading path or page), per ``section`` chunk, per ``document``, or
    every snippet (``all``)."""
    return place_key(chunk.id, chunk_place(chunk), group)


def place_key(chunk_id: str, where: ChunkPlace, group: str) -> Hashable:
    """``group_key`` of the chunk ``chunk_id`` that sits at ``where``."""
    if group == "document":
        return where.document_id
    if group == "section":
        return where.parent_id or chunk_id
    if group == "all":
        return chunk_id
    return where.document_id, where.heading_path, where.page_start


def _check_search(query: str, limit: int, mode: str, group: str, expand: str | None) -> None:
    if not query or not query.strip():
        raise InvalidInput("The query is empty; give some words to search for")
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"Unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    if group not in GROUPS:
        raise InvalidInput(f"Unknown grouping {group!r}; use one of {', '.join(GROUPS)}")
    if expand not in (None, "parent-section"):
        raise InvalidInput(f"Unknown expansion {expand!r}; use parent-section")


_SIDE: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool) of _beside


def _beside(work: Callable[[], T]) -> Future[T]:
    """``work`` started on another thread (a small pool per process, made on first use:
    a forked child makes its own)."""
    global _SIDE
    side = _SIDE
    if side is None or side[0] != os.getpid():
        side = _SIDE = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix="docshelf-recall"))
    return side[1].submit(work)


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Record how long the block took, in ms, as ``timings[stage]``."""
    started = time.perf_counter()
    yield
    timings[stage] = (time.perf_counter() - started) * 1000
