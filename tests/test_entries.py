"""What the sidecar indexes keep of each snippet (search/entries.py), and the search path
that reads it instead of the store (issue 20): the same answers as the long way."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docshelf.model import Tier, User, chunk_id, document_id
from docshelf.search.engines import sidecar
from docshelf.search.engines import tantivy as lexical_module
from docshelf.search.engines import usearch as ann_module
from docshelf.search.entries import UNKNOWN, Told, document_id_of, entry_of, wide
from docshelf.search.evidence import (
    HEADING_KEY_STAMP,
    content_words,
    has_verbatim,
    heading_key,
    names_heading,
    query_heading_key,
    words,
)
from docshelf.shelf import Shelf
from docshelf.store.base import ChunkPlace, SearchFilters
from tests.fakes import HashEmbedder

FP = "3f2a9c1b04de" + "7" * 52


def place(path: tuple[str, ...] = (), index: int = 3, page: int | None = None) -> ChunkPlace:
    header = "[DOC: Team meeting notes]\n[PATH: x]" if index == 0 else None
    return ChunkPlace(document_id(FP), None, path, page, index, header)


# -- entries -----------------------------------------------------------------------------


def test_an_entry_names_its_chunk_and_document() -> None:
    at = place(("A", "Leader election"))
    entry = entry_of(chunk_id(FP, Tier.SNIPPET, 3), at, "x")
    doc, ord_, head, is_wide = entry
    assert document_id_of(doc) == document_id(FP)
    assert (ord_, head, is_wide) == (3, heading_key(at), 0) and head != 0

    class Store:  # what `shown` asks of a store, unfiltered
        def incomplete_documents(self) -> frozenset[str]:
            return frozenset()

        def remember_seqs(self, seqs: dict[str, int]) -> None:
            self.seqs = seqs

    store, told = Store(), Told()
    found = sidecar.shown(store, [(7, 0.5)], [entry], SearchFilters(), None, told)  # type: ignore[arg-type]
    assert found == [(chunk_id(FP, Tier.SNIPPET, 3), 0.5)]
    assert told[chunk_id(FP, Tier.SNIPPET, 3)] == (document_id(FP), head, 7, 0)
    assert store.seqs == {chunk_id(FP, Tier.SNIPPET, 3): 7}


def test_ids_of_another_pattern_are_left_to_the_store() -> None:
    assert entry_of("chunk_other_3", place(), "x") == UNKNOWN
    assert entry_of(chunk_id(FP, Tier.SNIPPET, 4), place(index=3), "x") == UNKNOWN  # its ord
    odd = ChunkPlace("doc_NOT-HEX-AT-ALL!", None, (), None, 3)
    assert entry_of("chunk_NOT-HEX-AT-A_3", odd, "x") == UNKNOWN
    assert entry_of(chunk_id(FP, Tier.SECTION, 3), place(), "x") == UNKNOWN  # a section


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain ASCII words, 42 of them_too", False),
        ("curly \u201cquotes\u201d \u2014 dashes \u2026 and \u00a0 spaces", False),
        ("caf\u00e9 au lait", True),
        ("stra\u00dfe", True),
        ("\ufb01nance", True),  # a ligature
        ("\u0928\u092e\u0938\u094d\u0924\u0947", True),
        ("e\u0301", True),  # a combining mark
    ],
)
def test_wide_marks_word_characters_beyond_ascii(text: str, expected: bool) -> None:
    assert wide(text) is expected


# -- heading keys ------------------------------------------------------------------------

headings = st.lists(
    st.sampled_from(["Team", "meeting", "notes", "the", "Plugins", "plugin", "run", "Running"]),
    max_size=4,
).map(" ".join)


@given(heading=headings, query=headings)
def test_a_heading_the_query_names_has_the_querys_key(heading: str, query: str) -> None:
    """The key is a hint that never misses: a heading the query names has its key."""
    at = place(("Top", heading))
    if names_heading(content_words(query), at):
        assert heading_key(at) == query_heading_key(query) != 0
    if len(content_words(heading)) < 2:
        assert heading_key(at) == 0


def test_the_title_heads_a_file_without_headings() -> None:
    assert heading_key(place((), index=0)) == query_heading_key("team meeting notes")
    assert heading_key(place((), index=0, page=2)) == 0  # page 2 of a PDF has no title


def test_heading_keys_are_stable() -> None:
    """Sidecar indexes keep these keys on disk. When this fails, the keys changed: bump
    evidence.HEADING_KEY_VERSION (the indexes are then rebuilt) and update the values."""
    probe = ["Team meeting notes", "Running the plugins", "Leader election", "café crème"]
    assert HEADING_KEY_STAMP.startswith("2:")
    assert [f"{query_heading_key(q):016x}" for q in probe] == [
        "8b2b7dbabe9cd8a8",
        "a5bc9ae32cd5b25f",
        "aaf52290693dfa03",
        "236681bba87de155",
    ]


# -- the search path over the entries: the same answers as the store's ---------------------

TOPICS = [
    ("raft", "Raft", ["Leader election", "Log replication", "Safety"]),
    ("paxos", "Paxos made simple", ["Prepare phase", "Accept phase"]),
    ("bread", "Team meeting notes", ["Starter", "Baking day", "Flour"]),
    ("plugins", "Obsidian core plugins", ["Daily notes", "Graph view", "Templates"]),
    ("crdt", "CRDTs", ["State based", "Operation based"]),
]
WORDS = [
    *("leader election heartbeat votes term log entries replicated follower candidate",),
    *("quorum proposal acceptor learner starter flour water dough oven graph template",),
    *("daily vault merge counter register set operation state commutative network",),
]
WORDS = " ".join(WORDS).split(" ")


def _note(rng: random.Random, title: str, sections: list[str], extra: str) -> str:
    out = [f"# {title}\n"]
    for heading in sections:
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
        out.append(f"## {heading}\n\n{body}.\n")
    out.append(extra)
    return "\n".join(out)


@pytest.fixture
def library(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Shelf]:
    """Notes with shared words, headings a query may name, a remembered line and words
    beyond ASCII; both sidecar indexes on."""
    monkeypatch.setenv("DOCSHELF_ANN_THRESHOLD", "10")
    monkeypatch.setenv("DOCSHELF_LEXICAL_THRESHOLD", "10")
    monkeypatch.setenv("DOCSHELF_RETRIEVAL_CACHE_SECONDS", "0")  # each search runs
    rng = random.Random(7)
    root = tmp_path / "notes"
    root.mkdir()
    for n in range(24):
        name, title, sections = TOPICS[n % len(TOPICS)]
        extra = ""
        if n == 3:
            extra = "Explicit is better than implicit, said the leader to the follower.\n"
        if n == 5:
            extra = "Der Anführer schreibt straße und café in das Log: leader election votes.\n"
        (root / f"{name}-{n}.md").write_text(
            _note(rng, f"{title} {n}" if n > 4 else title, sections, extra)
        )
    # a sign the index takes for part of a word, the exact-match rule for a break
    (root / "votes.md").write_text(
        "# Votes\n\nIn the log, the leader\u093e election votes count twice.\n"
    )
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        shelf.add(root)
        shelf.store.put_user(User(id="u1", name="ann", is_admin=False, created_at=1.0), None)
        for doc in shelf.store.list_documents()[::3]:  # a user who may read a third of them
            shelf.store.grant("u1", doc.id)
        assert shelf.vector_index is not None and shelf.lexical_index is not None
        shelf.vector_index.maintain(force=True)
        shelf.lexical_index.maintain(force=True)
        assert (shelf.vector_index.path, shelf.lexical_index.path) == ("ann", "tantivy")
        yield shelf


QUERIES = [
    "leader election heartbeat",
    "team meeting notes",  # a title
    "leader election",  # a heading
    "explicit is better than implicit",  # a remembered line
    "leader election votes count twice",  # ... in a text the index cuts otherwise
    "straße café log",
    "flour water dough oven starter",
    "graph template daily vault",
    "quorum",
    "zebra xylophone",
]


def _long_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sidecars as before entries: every candidate checked and described by the store."""
    real = sidecar.shown

    def store_checks(
        store: Any, found: Any, entries: Any, filters: Any, checked: Any, known: Any
    ) -> Any:
        return real(store, found, [UNKNOWN] * len(entries), filters, checked, None)

    monkeypatch.setattr(ann_module, "shown", store_checks)
    monkeypatch.setattr(lexical_module, "shown", store_checks)


def _answers(shelf: Shelf, **options: Any) -> list[Any]:
    out = []
    for mode in ("hybrid", "lexical", "vector"):
        for query in QUERIES:
            result = shelf.search(query, mode=mode, **options)
            hits = [(h.chunk.id, h.score, h.scores, h.citation) for h in result.hits]
            out.append((mode, query, hits, result.candidates))
    return out


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"limit": 3},
        {"group": "document", "limit": 5},
        {"group": "all"},
        {"expand": "parent-section"},
        {"filters": SearchFilters(path_prefix="bread")},
        {"filters": SearchFilters(user_id="u1")},
        {"filters": SearchFilters(tags=("nothing-has-it",))},
    ],
    ids=["default", "limit", "by-document", "every-snippet", "expand", "path", "user", "none"],
)
def test_the_entries_give_the_answers_of_the_store(
    library: Shelf, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    asked: list[int] = []  # the entries' way asks only which documents are not complete
    incomplete = library.store.incomplete_documents  # type: ignore[attr-defined]

    def counted() -> frozenset[str]:
        asked.append(1)
        return incomplete()  # type: ignore[no-any-return]

    monkeypatch.setattr(library.store, "incomplete_documents", counted)
    fast = _answers(library, **options)
    assert any(hits for *_, hits, _ in fast) or options["filters"].tags
    assert asked
    _long_way(monkeypatch)
    asked.clear()
    assert _answers(library, **options) == fast
    assert not asked


def test_a_document_not_complete_is_hidden_and_a_deleted_one_gone(
    library: Shelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = library.store
    bread = next(d for d in store.list_documents() if d.title == "Team meeting notes")
    raft = next(d for d in store.list_documents() if d.title == "Raft")
    with store.transaction():
        store.set_document_status(bread.id, "embedding")  # on its way again: not shown
    store.delete_document(raft.id)  # after the checkpoint: the graph still holds it
    assert library.vector_index is not None
    delta = library.vector_index.state()["delta"]
    assert isinstance(delta, int) and delta > 0
    fast = _answers(library)
    shown = {cid for *_, hits, _ in fast for (cid, *_rest) in hits}
    gone = {c.id for c in store.chunks_of_document(bread.id, Tier.SNIPPET)}
    assert shown and not shown & gone
    assert not any(raft.id in pool for *_, pool in fast)
    _long_way(monkeypatch)
    assert _answers(library) == fast


def test_a_remembered_line_is_found_whatever_the_index_rules_out(library: Shelf) -> None:
    hits = library.search("explicit is better than implicit", limit=1).hits
    assert hits and "Explicit is better than implicit" in hits[0].chunk.text
    hits = library.search("straße und café in das", limit=1).hits  # words beyond ASCII
    assert hits and "straße und café" in hits[0].chunk.text
    hits = library.search("leader election votes count twice", limit=1).hits
    assert hits and "election votes count twice" in hits[0].chunk.text


# -- what the lexical index rules out for a quoted line -----------------------------------

ascii_words = st.sampled_from(["leader", "election", "votes", "x_y", "3d", "Runs", "running", "a"])


@settings(max_examples=60, deadline=None)  # each example builds a store and an index
@given(
    texts=st.lists(
        st.lists(
            st.one_of(ascii_words, st.sampled_from([",", ".", "-", "\u2014", "_", "!"])),
            min_size=1,
            max_size=30,
        ).map(" ".join),
        min_size=1,
        max_size=8,
    ),
    pick=st.integers(0, 7),
    start=st.integers(0, 25),
    length=st.integers(4, 7),
)
def test_may_hold_never_rules_out_a_text_that_quotes_the_query(
    tmp_path_factory: pytest.TempPathFactory,
    texts: list[str],
    pick: int,
    start: int,
    length: int,
) -> None:
    """Every snippet whose text holds the query word for word, as the exact-match rule
    reads it, is among those the index may not rule out."""
    from docshelf.search.engines.tantivy import SidecarLexicalIndex
    from docshelf.store.sqlite import SQLiteStore
    from tests.test_store import put

    source = words(texts[pick % len(texts)])
    query = " ".join(source[start : start + length])
    if len(words(query)) < 4:
        return
    store = SQLiteStore(tmp_path_factory.mktemp("lex") / "docshelf.db")
    try:
        for n, text in enumerate(texts):
            put(store, n + 1, text)
        index = SidecarLexicalIndex(store, threshold=1)
        index.maintain(force=True)
        held = index.may_hold(words(query), 1000)
        assert held is not None
        seqs = [seq for batch in store.iter_snippets() for seq, _, _ in batch]
        for seq, (cid, _) in store.snippet_places(seqs).items():
            chunk = store.get_chunks([cid])[0]
            if has_verbatim(words(query), chunk):
                assert seq in held, (query, chunk.text)
    finally:
        store.close()
