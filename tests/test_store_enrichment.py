"""The store contract for enrichment (both stores): fields, distillates, the pending
queue with its lease, the cache, what replacing or deleting a document does, and a
document read a page at a time and re-headed a batch of chunks at a time."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from docshelf.model import Enrichment, Tier, User
from docshelf.search.engines import own_engines
from docshelf.store import SearchFilters, SearchStore
from tests.test_store import make_doc, put, vecs


def _enrichment(chunk_ids: tuple[str, ...], mode: str = "offline") -> Enrichment:
    return Enrichment(
        summary="Consensus in a replicated log.",
        document_type="note",
        category="distributed-systems",
        concept_ids=("distributed-systems", "computing"),
        concept_source="embedding",
        taxonomy_version="t1",
        claims=(
            ("Leaders replicate their log to followers.", chunk_ids[:1]),
            ("A majority of acceptors decides a ballot.", chunk_ids),
        ),
        mode=mode,
    )


def test_enrichment_fields_and_distillates(store: SearchStore) -> None:
    doc = put(store, 1, "raft leader log")
    other = put(store, 2, "bread flour")
    snippets = [c.id for c in store.chunks_of_document(doc.id, Tier.SNIPPET)]
    assert store.get_document(doc.id).enriched_at is None  # type: ignore[union-attr]
    before = store.generation()
    assert store.put_enrichment(doc.id, _enrichment(tuple(snippets)), 123.0)
    # what filters read changed: a search cached under the old generation is not reused
    assert store.generation() > before
    assert not store.put_enrichment("doc_gone", _enrichment(()), 1.0)
    got = store.get_document(doc.id)
    assert got is not None
    assert (got.summary, got.document_type, got.category) == (
        "Consensus in a replicated log.",
        "note",
        "distributed-systems",
    )
    assert got.concept_ids == ("distributed-systems", "computing")
    assert got.primary_concept_id == "distributed-systems" and got.concept_source == "embedding"
    assert (got.enriched_at, got.enrichment_mode) == (123.0, "offline")
    claims = store.distillates_of(doc.id)
    assert [(c.n, c.chunk_ids) for c in claims] == [(0, tuple(snippets[:1])), (1, tuple(snippets))]
    # Concept filters see the new concepts.
    assert store.documents_matching(SearchFilters(concept_groups=(("computing",),))) == {doc.id}
    # Search over distillates: any term, filtered like chunks.
    found = store.search_distillates(["ballot", "nothing"], 10, SearchFilters())
    assert [(d.document_id, d.n) for d, _ in found] == [(doc.id, 1)]
    assert store.search_distillates(["ballot"], 10, SearchFilters(document_ids=(other.id,))) == []
    store.put_user(User("u1", "u", False, 1.0), None)
    assert store.search_distillates(["ballot"], 10, SearchFilters(user_id="u1")) == []
    store.grant("u1", doc.id)
    assert len(store.search_distillates(["ballot"], 10, SearchFilters(user_id="u1"))) == 1
    assert store.search_distillates(['"', "'", "OR", "NEAR("], 10, SearchFilters()) == []
    # Enriching again replaces the list.
    store.put_enrichment(doc.id, _enrichment(tuple(snippets[:1]), mode="llm"), 124.0)
    assert [c.mode for c in store.distillates_of(doc.id)] == ["llm", "llm"]
    # Replacing the document's content resets its enrichment and drops its distillates.
    d, chunks = make_doc(1, "raft leader log")
    with store.transaction():
        store.put_document(d, chunks, vecs(2))
    assert store.get_document(doc.id).enriched_at is None  # type: ignore[union-attr]
    assert store.distillates_of(doc.id) == []
    assert store.search_distillates(["ballot"], 10, SearchFilters()) == []
    store.put_enrichment(doc.id, _enrichment(tuple(snippets)), 125.0)
    with store.transaction():
        store.delete_document(doc.id)
    assert store.distillates_of(doc.id) == []


def test_pending_queue_with_leases(store: SearchStore) -> None:
    a = put(store, 1, "a words")
    b = put(store, 2, "b words")
    put(store, 3, "c words", status="embedding")  # not complete: not enrichable yet
    now = time.time()
    assert store.pending_enrichment(now) == 2
    first = store.claim_enrichment(now, 60, "w1")
    second = store.claim_enrichment(now, 60, "w1")
    assert {first, second} == {a.id, b.id}
    assert store.claim_enrichment(now, 60, "w1") is None  # both leased
    assert store.pending_enrichment(now) == 0  # none to take: both held
    assert store.pending_enrichment(now + 61) == 2  # their leases ran out (a dead process's)
    assert store.claim_enrichment(now + 61, 60, "w1") in {a.id, b.id}  # a lease ran out
    store.put_enrichment(a.id, _enrichment(()), now)
    store.enrichment_failed(b.id, now)
    assert store.get_document(b.id).enrichment_mode == "failed"  # type: ignore[union-attr]
    assert store.claim_enrichment(now + 200, 60, "w1") is None
    assert store.reset_enrichment([b.id]) == 1
    assert store.claim_enrichment(now + 200, 60, "w1") == b.id
    assert store.reset_enrichment() >= 1
    assert store.get_document(a.id).enriched_at is None  # type: ignore[union-attr]


def test_enrichment_cache(store: SearchStore) -> None:
    assert store.cached_enrichment("ab", "en", "offline:1") is None
    store.cache_enrichment("ab", "en", "offline:1", '{"x": 1}')
    store.cache_enrichment("ab", "en", "offline:1", '{"x": 2}')
    store.cache_enrichment("ab", "de", "offline:1", '{"x": 3}')
    assert store.cached_enrichment("ab", "en", "offline:1") == '{"x": 2}'
    assert store.cached_enrichment("ab", "de", "offline:1") == '{"x": 3}'
    assert store.cached_enrichment("ab", "en", "llm:m") is None


def test_a_document_read_a_page_at_a_time(store: SearchStore) -> None:
    doc, chunks = make_doc(1, "raft leader log")
    with store.transaction():
        store.put_document(doc, chunks, vecs(2))
    snippets = store.chunks_of_document(doc.id, Tier.SNIPPET)
    assert store.chunks_after(doc.id, Tier.SNIPPET, -1, 1) == snippets[:1]
    assert store.chunks_after(doc.id, Tier.SNIPPET, 0, 5) == snippets[1:]
    assert store.chunks_after(doc.id, Tier.SNIPPET, 1, 5) == []
    assert store.chunks_after(doc.id, Tier.SECTION, -1, 5) == chunks[:1]
    assert store.chunks_after("doc_gone", Tier.SNIPPET, -1, 5) == []


def test_replacing_some_chunks_re_heads_them_in_the_indexes(store: SearchStore) -> None:
    """What enrichment does when a document's concepts enter its header (issue 41): the
    chunks whose header changed replaced, a batch at a time, with their new vectors."""
    doc = put(store, 1, "raft leader log")
    other = put(store, 2, "bread flour")
    section, first, second = [
        *store.chunks_of_document(doc.id, Tier.SECTION),
        *store.chunks_of_document(doc.id, Tier.SNIPPET),
    ]
    old_vectors = store.get_vectors([first.id, second.id])
    generation = store.generation()
    header = f"{first.header}\n[CONCEPTS: Zeppelins]"
    fresh = [dataclasses.replace(c, header=header) for c in (section, first)]
    with store.transaction():
        store.replace_chunks(doc.id, fresh, vecs(1, seed=9), 50.0)
    assert store.generation() > generation
    assert store.get_document(doc.id).updated_at == 50.0  # type: ignore[union-attr]
    assert store.chunks_of_document(doc.id, Tier.SECTION) == fresh[:1]
    assert store.chunks_of_document(doc.id, Tier.SNIPPET) == [fresh[1], second]
    vectors = store.get_vectors([first.id, second.id])
    np.testing.assert_allclose(vectors[first.id], vecs(1, seed=9)[0], rtol=1e-6)
    np.testing.assert_allclose(vectors[second.id], old_vectors[second.id], rtol=1e-6)
    hits = own_engines(store).lexical.search(["zeppelins"], 10, SearchFilters())
    assert [h[0] for h in hits] == [first.id]  # the new header is indexed, once
    assert len(own_engines(store).lexical.search(["leader"], 10, SearchFilters())) == 2
    assert store.get_document(other.id).updated_at == 1.0  # type: ignore[union-attr]
    assert store.check() == []
    # without vectors (a library with no model) the replaced snippets have none
    with store.transaction():
        store.replace_chunks(doc.id, [dataclasses.replace(second, header="")], None, 51.0)
    assert set(store.get_vectors([first.id, second.id])) == {first.id}
    with pytest.raises(ValueError, match="another document"):
        store.replace_chunks(other.id, fresh, None, 52.0)
    with pytest.raises(ValueError, match="1 vectors for 0 snippets"):
        store.replace_chunks(doc.id, fresh[:1], vecs(1), 52.0)
