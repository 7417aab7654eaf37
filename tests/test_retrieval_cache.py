"""Recent searches answered from memory: never across a change of the library."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from docshelf.search.cache import RetrievalCache
from docshelf.shelf import Shelf


def test_entries_live_for_their_generation_and_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("docshelf.search.cache.time.monotonic", lambda: now[0])
    cache: RetrievalCache[int] = RetrievalCache(ttl_seconds=30, max_entries=2)
    calls: list[str] = []

    def compute(tag: str, value: int) -> int:
        calls.append(tag)
        return value

    assert cache.get_or_compute("q", 1, lambda: compute("a", 1)) == 1
    assert cache.get_or_compute("q", 1, lambda: compute("b", 2)) == 1  # cached
    assert cache.get_or_compute("q", 2, lambda: compute("c", 3)) == 3  # the library changed
    now[0] += 31
    assert cache.get_or_compute("q", 2, lambda: compute("d", 4)) == 4  # expired
    cache.get_or_compute("r", 2, lambda: compute("e", 5))
    cache.get_or_compute("s", 2, lambda: compute("f", 6))  # "q" is the oldest: evicted
    assert cache.get_or_compute("q", 2, lambda: compute("g", 7)) == 7
    cache.clear()
    assert cache.get_or_compute("s", 2, lambda: compute("h", 8)) == 8
    assert calls == ["a", "c", "d", "e", "f", "g", "h"]
    off: RetrievalCache[int] = RetrievalCache(ttl_seconds=0)
    assert [off.get_or_compute("q", 1, lambda: compute("x", 9)) for _ in range(2)] == [9, 9]
    assert calls[-2:] == ["x", "x"]


def test_shelf_search_is_cached_until_the_library_changes(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    first = shelf.search("leader election")
    assert shelf.search("leader election") is first and shelf._cache.hits == 1
    assert shelf.search("leader election", limit=3) is not first  # another question
    (notes / "extra.md").write_text("# Elections\n\nA leader election needs a quorum.\n")
    shelf.sync()
    again = shelf.search("leader election")
    assert again is not first
    assert any(h.document.rel_path == "extra.md" for h in again.hits)
    user, _ = shelf.create_user("carol")
    assert shelf.search("leader election", user_id=user.id).hits == []  # per user


def test_enrichment_clears_the_cache(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    first = shelf.search("leader election")
    shelf.enrich()
    assert shelf.search("leader election") is not first


def test_losing_access_is_seen_at_once(shelf: Shelf) -> None:
    alice, _ = shelf.create_user("alice")
    up = shelf.upload(alice.id, "raft.md", b"# Raft\n\nA leader election needs a quorum.\n")
    from docshelf.ingest.worker import Worker

    while Worker(shelf, name="w").run_once():
        pass
    assert shelf.search("quorum", user_id=alice.id).hits
    shelf.delete_document(up.document_id, alice.id)
    assert shelf.search("quorum", user_id=alice.id).hits == []


def test_large_results_are_not_kept(shelf: Shelf, notes: Path) -> None:
    shelf.add(notes)
    assert shelf.search("leader", limit=51) is not shelf.search("leader", limit=51)
    expanded = shelf.search("leader", expand="parent-section")
    assert shelf.search("leader", expand="parent-section") is not expanded
    assert shelf._cache.hits == 0


class _Ranks:
    """A reranker that ranks passages by position: first or last on top."""

    name = "positions"

    def __init__(self, reverse: bool) -> None:
        self.reverse = reverse

    def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        n = len(passages)
        return [float(i if self.reverse else n - i) for i in range(n)]


def test_a_new_reranker_is_never_answered_from_the_last_ones_cache(
    shelf: Shelf, notes: Path
) -> None:
    """Keyed by the reranker itself: a new one often gets the freed one's id()."""
    shelf.add(notes)
    fused = [h.chunk.id for h in shelf.search("the", mode="lexical").hits]
    assert len(fused) >= 2
    for reverse in (False, True) * 3:
        shelf.reranker = None  # the last reranker is freed: the next may reuse its address
        shelf.reranker = _Ranks(reverse)
        want = fused[::-1] if reverse else fused
        assert [h.chunk.id for h in shelf.search("the", mode="lexical").hits] == want
