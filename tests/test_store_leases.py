"""The store contract for leases' owners (both stores; issue 41): a lease held by a
process of this host that has died is over at once, for enrichment and for jobs; one
held by a live process, or by an owner this host cannot judge, holds until it runs
out."""

from __future__ import annotations

import time

from docshelf import owners
from docshelf.store import SearchStore
from tests.test_owners import dead_token
from tests.test_store import make_doc, make_job, put, vecs

ELSEWHERE = "another-host:4242:12.50:0badc0de"  # a token of a process on another host


def test_an_enrichment_lease_of_a_dead_owner_is_taken_at_once(store: SearchStore) -> None:
    doc = put(store, 1, "a words")
    now = time.time()
    assert store.claim_enrichment(now, 60, dead_token()) == doc.id  # then the owner ended
    assert store.pending_enrichment(now) == 1  # its lease holds nothing
    assert store.claim_enrichment(now, 60, owners.this_process()) == doc.id  # at once
    # held by a live owner (this process): not taken, however many ask
    assert store.pending_enrichment(now) == 0
    assert store.claim_enrichment(now, 60, owners.this_process()) is None
    assert store.claim_enrichment(now, 60, dead_token()) is None
    assert store.claim_enrichment(now + 61, 60, ELSEWHERE) == doc.id  # ... until it runs out


def test_an_enrichment_lease_elsewhere_or_without_owner_runs_out_by_time(
    store: SearchStore,
) -> None:
    a = put(store, 1, "a words")
    b = put(store, 2, "b words")
    now = time.time()
    assert store.claim_enrichment(now, 60, ELSEWHERE) == a.id
    assert store.claim_enrichment(now, 60, "w1") == b.id  # not a token (a hand-made name)
    assert store.pending_enrichment(now) == 0
    assert store.claim_enrichment(now, 60, owners.this_process()) is None
    assert store.pending_enrichment(now + 61) == 2
    assert store.claim_enrichment(now + 61, 60, owners.this_process()) == a.id


def test_a_job_leased_by_a_dead_worker_is_taken_at_once(store: SearchStore) -> None:
    for n in (1, 2, 3):
        put(store, n, "x", status="queued")
        store.put_job(make_job(n, next_at=float(n)))
    now = time.time()
    first = make_doc(1, "")[0].id
    ended = f"{dead_token()}:a1b2c3"  # a worker's name: its process's token, then its own
    held = store.claim_job(ended, 60.0, now)
    assert held is not None and held.document_id == first
    live = f"{owners.this_process()}:d4e5f6"
    taken = store.claim_job(live, 60.0, now)  # at once, before the two jobs still queued
    assert taken is not None and (taken.document_id, taken.lease_owner) == (first, live)
    assert store.renew_lease(first, ended, now + 60) is False  # the dead one is fenced off
    # the rest are held by a live worker and by one elsewhere: until their leases run out
    assert store.claim_job(live, 60.0, now) is not None
    assert store.claim_job(ELSEWHERE, 60.0, now) is not None
    assert store.claim_job(f"{owners.this_process()}:0a0b0c", 60.0, now) is None
    assert store.claim_job("w9", 60.0, now + 61) is not None


def _pending(store: SearchStore, n: int) -> str:
    """A complete document of a model, written without its vectors: pending."""
    import dataclasses

    doc, chunks = make_doc(n, f"words {n}")
    with store.transaction():
        store.put_document(dataclasses.replace(doc, embedding_model="m"), chunks, None)
    return doc.id


def test_documents_waiting_for_vectors_are_leased_once_and_finished(store: SearchStore) -> None:
    """Ingest's second phase (issue 39), on both stores: pending documents are claimed
    oldest first and never twice; a dead owner's are free at once; a document is
    finished only once every snippet has its vector."""
    ids = [_pending(store, n) for n in (1, 2, 3)]
    assert store.pending_embedding() == 3 and store.pending_snippets() == 6
    assert store.embedding_backlog() == (3, 3)
    now = time.time()
    first = store.claim_embedding(now, 60, dead_token(), 2)
    assert len(first) == 2 and set(first) <= set(ids)
    assert store.pending_embedding(now) == 3  # the dead owner's two are free again
    mine = store.claim_embedding(now, 60, owners.this_process(), 5)
    assert len(mine) == 3
    assert store.claim_embedding(now, 60, ELSEWHERE, 5) == []  # all held by a live owner
    store.finish_embedding(mine)
    assert store.pending_embedding() == 3  # no vector written yet: none is finished
    for doc_id in mine:
        snippets = store.snippets_without_vectors(10, document_id=doc_id)
        store.put_vectors([c.id for c in snippets], vecs(len(snippets), seed=1))
    store.finish_embedding(mine)
    assert store.pending_embedding() == 0 and store.embedding_backlog() is None
    assert store.claim_embedding(now, 60, ELSEWHERE, 5) == []
