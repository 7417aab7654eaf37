"""The search read path's shortcuts (issue 20): each gives the answer of the long way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docshelf.model import Tier
from docshelf.store.base import SearchFilters
from docshelf.store.sqlite import SQLiteStore
from tests.test_store import make_doc, put


def test_chunks_the_visibility_checks_saw_are_read_by_seq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a visibility check, the reads of those chunks go by seq (the table's key),
    with the same answers as by id; after a commit, by id again, and still right."""
    store = SQLiteStore(tmp_path / "docshelf.db")
    try:
        doc = put(store, 1, "raft consensus")
        put(store, 2, "paxos")
        snippets = store.chunks_of_document(doc.id, Tier.SNIPPET)
        ids = [c.id for c in snippets]
        other = [c.id for c in store.chunks_of_document(make_doc(2, "")[0].id, Tier.SNIPPET)]
        asked = [*ids, "no-such-chunk", *other]
        by_id = (
            store.get_chunks(asked),
            store.chunk_texts(asked),
            store.chunk_places(asked),
            store.get_vectors(asked).keys(),
        )
        columns: list[str] = []
        each_among = store._each_among

        def spy(column: str, values: Any, query: str, *a: Any, **kw: Any) -> Any:
            columns.append(column)
            return each_among(column, values, query, *a, **kw)

        monkeypatch.setattr(store, "_each_among", spy)
        seqs = [seq for batch in store.iter_snippets() for seq, _, _ in batch]
        store._commits += 1  # as after a commit: nothing remembered
        seen = store.visible_snippets(seqs, SearchFilters())
        assert sorted(seen.values()) == sorted(ids + other)
        columns.clear()
        got = (
            store.get_chunks(asked),
            store.chunk_texts(asked),
            store.chunk_places(asked),
            store.get_vectors(asked).keys(),
        )
        assert got == by_id
        assert "c.seq" in columns
        assert "c.id" in columns  # the unknown id, looked up the long way
        # a commit: what was learnt is forgotten, and the answers stay right
        store.delete_document(doc.id)
        columns.clear()
        assert store.get_chunks(asked) == by_id[0][len(ids) :]
        assert store.chunk_texts(ids) == {}
        assert set(columns) == {"c.id"}
    finally:
        store.close()
