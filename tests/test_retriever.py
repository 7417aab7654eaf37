"""The Retriever built from its parts, its public stages, and the engines chosen for a store."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from docshelf.config import Settings
from docshelf.knowledge.taxonomy import configured_taxonomy
from docshelf.model import Chunk, Citation, Document, Hit
from docshelf.search.cache import RetrievalCache
from docshelf.search.candidate import Candidate
from docshelf.search.engines import engines_for
from docshelf.search.engines.exact import ExactVectorSearch
from docshelf.search.engines.pg_text import PostgresText
from docshelf.search.engines.pgvector import PgVector
from docshelf.search.engines.tantivy import SidecarLexicalIndex
from docshelf.search.engines.usearch import SidecarVectorIndex
from docshelf.search.evidence import exact_matches
from docshelf.search.order import FusionSettings, fusion, product
from docshelf.search.pipeline import Search, Stage, run
from docshelf.search.query import ParsedQuery, satisfies
from docshelf.search.results import SearchResult
from docshelf.search.retriever import Retriever
from docshelf.search.stages.cite import Cite, group_key
from docshelf.search.stages.exact import ExactFirst, exact_first
from docshelf.search.stages.recall import Recall
from docshelf.shelf import Shelf
from docshelf.store import SearchFilters, SearchStore
from docshelf.telemetry import Metrics
from tests.conftest import FILLER
from tests.fakes import HashEmbedder

QUERIES = ["leader election heartbeat", "starter flour", "plumber leak", "replicated log"]


def test_engines_follow_what_the_store_can_do(store: SearchStore, tmp_path: Path) -> None:
    engines = engines_for(store, Settings.from_env(tmp_path))
    if store.url.startswith("sqlite"):
        assert isinstance(engines.lexical, SidecarLexicalIndex)
        assert isinstance(engines.vector, SidecarVectorIndex)
        assert engines.lexical is engines.lexical_sidecar
        assert engines.vector is engines.vector_sidecar
    else:  # PostgreSQL answers both by itself: its full-text search and pgvector HNSW
        assert isinstance(engines.lexical, PostgresText)
        assert isinstance(engines.vector, PgVector)
        assert engines.lexical_sidecar is None and engines.vector_sidecar is None


def test_the_exact_scan_agrees_with_the_sidecar_below_its_threshold(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    shelf.add(notes)
    assert shelf.vector_index is not None and shelf.vector_index.path == "exact"
    exact = ExactVectorSearch(shelf.store)
    for text in QUERIES:
        q = embedder.embed([text])[0]
        for filters in (SearchFilters(), SearchFilters(file_type="text")):
            got = exact.search(q, 5, filters)
            assert got, (text, filters)
            assert got == shelf.vector_index.search(q, 5, filters)


def _own_retriever(shelf: Shelf, embedder: HashEmbedder, fusion: FusionSettings) -> Retriever:
    """A Retriever wired by hand, from parts only: nothing of the Shelf but its store."""
    engines = engines_for(shelf.store, shelf.settings)

    def seen_by(docs: Sequence[Document], user_id: str | None) -> list[Document]:
        return list(docs)

    return Retriever(
        shelf.store,
        lexical=engines.lexical,
        vector=engines.vector,
        embedder=lambda: embedder,
        ranking=product(fusion),
        reranker=None,
        rerank_top_k=20,
        taxonomy=configured_taxonomy(),
        cache=RetrievalCache[SearchResult](0),
        metrics=Metrics(),
        seen_by=seen_by,
    )


def _ids(result: SearchResult) -> list[tuple[str, float]]:
    return [(h.chunk.id, round(h.score, 9)) for h in result.hits]


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_a_retriever_from_its_parts_answers_as_the_shelf_does(
    shelf: Shelf, notes: Path, embedder: HashEmbedder, mode: str
) -> None:
    shelf.add(notes)
    retriever = _own_retriever(shelf, embedder, shelf.fusion)
    for text in QUERIES:
        mine = retriever.search(text, mode=mode, limit=5)
        theirs = shelf.search(text, mode=mode, limit=5)
        assert mine.hits, text
        assert _ids(mine) == _ids(theirs)
        assert mine.candidates == theirs.candidates


def _prepared(retriever: Retriever, text: str, stages: Sequence[Stage], **kw: object) -> Search:
    """The search of ``text`` after ``stages`` (``Retriever.prepare``'s options ``kw``)."""
    search, _ = retriever.prepare(text, **kw)  # type: ignore[arg-type]
    assert search is not None
    run(stages, search)
    return search


def test_the_stages_compose_to_search(shelf: Shelf, notes: Path, embedder: HashEmbedder) -> None:
    """The product's stages run one by one on a prepared search give the search's answer;
    without the feedback stage, the answer of feedback turned off."""
    shelf.add(notes)
    settings = shelf.fusion
    retriever = _own_retriever(shelf, embedder, settings)
    off = _own_retriever(shelf, embedder, dataclasses.replace(settings, feedback_docs=0))
    for text in QUERIES:
        stages = product(settings).stages
        by_hand = _prepared(retriever, text, stages, limit=5)
        searched = retriever.search(text, limit=5)
        assert by_hand.hits and _hit_ids(by_hand.hits) == _hit_ids(searched.hits)
        assert by_hand.pool == searched.candidates
        assert by_hand.before_feedback is not None  # feedback ran: a second vector list
        unfed = _prepared(retriever, text, [s for s in stages if s.name != "feedback"], limit=5)
        assert _hit_ids(unfed.hits) == _hit_ids(off.search(text, limit=5).hits)


def _hit_ids(hits: Sequence[Hit]) -> list[tuple[str, float]]:
    return [(h.chunk.id, h.score) for h in hits]


def test_a_library_of_another_model_is_searched_lexically(
    shelf: Shelf, notes: Path, embedder: HashEmbedder
) -> None:
    shelf.add(notes)
    other = HashEmbedder(model_id="another-model")
    retriever = _own_retriever(shelf, other, shelf.fusion)
    assert not retriever.can_embed_queries()
    result = retriever.search("leader election", limit=3)
    assert result.mode == "lexical" and result.notice and result.hits
    assert not other.embedded  # no query vector from a model the library was not made with
    assert _own_retriever(shelf, embedder, shelf.fusion).can_embed_queries()


def _hits_reading_everything(
    retriever: Retriever, fused: Sequence[Candidate], limit: int, parsed: ParsedQuery, group: str
) -> tuple[list[tuple[str, float, str]], list[str]]:
    """The hits stage as it was before it read only what the page needs: every
    candidate's chunk read first, one document read per hit (the reference)."""
    store = retriever.store
    chunks = {c.id: c for c in store.get_chunks([f.id for f in fused])}
    pool = [chunks[f.id].document_id for f in fused if f.id in chunks]
    groups: set[object] = set()
    texts: set[str] = set()
    out: list[tuple[str, float, str]] = []
    for f in fused:
        chunk = chunks.get(f.id)
        if chunk is None or (parsed.constrained and not satisfies(chunk.text, parsed)):
            continue
        same_text = " ".join(chunk.text.casefold().split())[:400]
        key = group_key(chunk, group)
        if same_text in texts or key in groups:
            continue
        doc = store.get_document(chunk.document_id)
        if doc is None:
            continue
        texts.add(same_text)
        groups.add(key)
        out.append((chunk.id, f.score, Citation.for_chunk(chunk, doc).label))
        if len(out) == limit:
            break
    return out, pool


def test_hits_read_only_what_the_page_needs_and_answer_as_reading_everything(
    shelf: Shelf, tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every candidate's place is read, the text only of those that may become hits; the
    hits and the pool are those of reading every candidate, in every grouping, with
    phrases and exclusions, at small and large limits."""
    root = tmp_path / "lib"
    root.mkdir()
    for n in range(6):  # many snippets under few headings; some texts repeated exactly
        sections = "\n\n".join(
            f"## Part {p}\n\n"
            + "\n\n".join(
                f"Raft log entry {n}-{p}-{i} replicated to followers. "
                + ("The same sentence in every note. " if i == 0 else f"Words {i} {p}. ")
                + FILLER
                for i in range(4)
            )
            for p in range(3)
        )
        shared = "## Shared\n\nRaft followers keep the same replicated log, word for word."
        (root / f"note{n}.md").write_text(f"# Note {n}\n\n{sections}\n\n{shared}\n")
    shelf.add(root)
    # Without text evidence (the exact-match rule reads every candidate's text).
    settings = dataclasses.replace(shelf.fusion, feedback_docs=0, exact_first=False)
    retriever = _own_retriever(shelf, embedder, settings)
    asked: list[str] = []
    store_get_chunks = shelf.store.get_chunks

    def counting(ids: Sequence[str]) -> list[Chunk]:
        asked.extend(ids)
        return store_get_chunks(ids)

    monkeypatch.setattr(shelf.store, "get_chunks", counting)
    fusing = [Recall(), *fusion(settings)]
    for text in ["raft log replicated", '"same sentence" raft', "followers -Part", "entry words"]:
        for group in ("snippet", "section", "document", "all"):
            for limit in (1, 3, 10, 200):
                search = _prepared(retriever, text, fusing, limit=limit, group=group)
                fused = list(search.candidates)
                assert len(fused) > 20, text
                want = _hits_reading_everything(retriever, fused, limit, search.parsed, group)
                asked.clear()
                Cite()(search)
                got = [(h.chunk.id, h.score, h.citation.label) for h in search.hits]
                assert (got, search.pool) == want, (text, group, limit)
                if limit <= 3 and group != "all":
                    assert len(set(asked)) < len(fused) // 2, (text, group, limit)


def test_the_exact_match_rule_reads_places_and_texts_only_for_a_quotable_query(
    shelf: Shelf, tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the exact-match rule on, a query of fewer than four words is ordered from the
    candidates' places and headings alone (no candidate's text read but the few that
    may become hits), a longer one reads every candidate's text once, and the hits are
    those of the rule applied to every candidate read whole: headings named (a section's,
    a file's title at its top), lines quoted, or neither."""
    root = tmp_path / "lib"
    root.mkdir()
    for n in range(10):
        parts = "\n\n".join(
            f"## Part {p} of {n}\n\n"
            + "\n\n".join(f"Raft log entry {n}-{p}-{i} replicated. {FILLER}" for i in range(3))
            for p in range(3)
        )
        quoted = "Raft followers keep the same replicated log" if n == 4 else "Raft logs"
        (root / f"kettle manual {n}.md").write_text(f"{quoted}, word for word.\n\n{parts}\n")
    shelf.add(root)
    settings = dataclasses.replace(shelf.fusion, feedback_docs=0)
    assert settings.exact_first
    retriever = _own_retriever(shelf, embedder, settings)
    asked: list[str] = []
    texts_read: list[int] = []
    get_chunks, chunk_texts = shelf.store.get_chunks, shelf.store.chunk_texts

    def counting(ids: Sequence[str]) -> list[Chunk]:
        asked.extend(ids)
        return get_chunks(ids)

    def counting_texts(ids: Sequence[str]) -> dict[str, str]:
        texts_read.append(len(ids))
        return chunk_texts(ids)

    monkeypatch.setattr(shelf.store, "get_chunks", counting)
    monkeypatch.setattr(shelf.store, "chunk_texts", counting_texts)
    queries = {
        "part 2 of 3": "Part 2 of 3",  # a section's heading
        "kettle manual 7": "kettle manual 7",  # a file's title, at its top (no heading)
        "keep the same replicated log": "quoted",
        "raft replicated entry followers": None,  # long enough, quoted nowhere
        "raft log": None,
    }
    fusing = [Recall(), *fusion(settings)]
    for text, rule in queries.items():
        for limit in (1, 10):
            search = _prepared(retriever, text, fusing, limit=limit)
            fused = list(search.candidates)
            assert len(fused) > 20, text
            # the reference: the rule applied to every candidate read whole
            whole = get_chunks([c.id for c in fused])
            named, verbatim = exact_matches(search.parsed.text, whole)
            ordered = [copy.copy(c) for c in fused]
            exact_first(ordered, named, verbatim)
            want = _hits_reading_everything(retriever, ordered, limit, search.parsed, "snippet")
            asked.clear()
            texts_read.clear()
            run([ExactFirst(), Cite()], search)
            hits = search.hits
            assert ([(h.chunk.id, h.score, h.citation.label) for h in hits], search.pool) == want
            if len(text.split()) >= 4:
                assert texts_read == [len(fused)], text
            else:
                assert texts_read == [], text
                if limit == 1:
                    assert len(set(asked)) < len(fused) // 2, text
        if rule == "quoted":
            assert "Raft followers keep the same replicated log" in hits[0].chunk.text
        elif rule is not None:  # the named heading (or title) is the first hit
            top = hits[0].chunk
            assert (top.heading_path or (hits[0].document.title,))[-1] == rule, text


def test_one_long_document_does_not_fill_the_page(tmp_path: Path) -> None:
    """A document with many matching sections gives at most ``per_document`` hits before
    the other documents' (its further ones follow when there is room); a search for one
    document, or with no limit, has them all in score order."""
    notes = tmp_path / "notes"
    notes.mkdir()
    sections = "\n\n".join(
        f"## Part {n}\n\nRaft consensus elects a leader, part {n}. {FILLER}" for n in range(6)
    )
    (notes / "long.md").write_text(f"# Raft consensus\n\n{sections}\n")
    (notes / "paxos.md").write_text(f"# Paxos\n\nPaxos reaches consensus too. {FILLER}\n")
    (notes / "zab.md").write_text(f"# Zab\n\nZab is a consensus protocol. {FILLER}\n")
    home = tmp_path / "home"
    found: dict[int, list[str]] = {}
    for cap in (3, 0):
        with Shelf(home, embedder=HashEmbedder(), fusion=FusionSettings(per_document=cap)) as shelf:
            shelf.add(notes)
            hits = shelf.search("raft consensus", mode="lexical", limit=5).hits
            found[cap] = [h.document.rel_path for h in hits]
            long = next(h.document.id for h in hits if h.document.rel_path == "long.md")
            alone = shelf.search(
                "raft consensus",
                mode="lexical",
                limit=5,
                filters=SearchFilters(document_ids=(long,)),
            ).hits
            assert [h.document.rel_path for h in alone] == ["long.md"] * 5
    assert found[0] == ["long.md"] * 5  # no limit: the long document fills the page
    assert found[3][:3] == ["long.md"] * 3
    assert sorted(found[3][3:]) == ["paxos.md", "zab.md"]
