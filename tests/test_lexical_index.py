"""The SQLite store's sidecar lexical index (search/engines/tantivy.py): the same answers as
FTS5 on a small corpus, the threshold switch, filters, and consistency after writes
the index never saw, including a real SIGKILL in the middle of an update."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from docshelf.model import Chunk, Document, Tier, chunk_id, document_id
from docshelf.search.engines import own_engines
from docshelf.search.engines.tantivy import SidecarLexicalIndex, read_pointer
from docshelf.shelf import Shelf
from docshelf.store.base import SearchFilters
from docshelf.store.sqlite import SQLiteStore

PER_DOC = 5
VOCAB = [f"w{i}" for i in range(400)]
NONE = SearchFilters()


def put_doc(store: SQLiteStore, n: int, texts: list[str], *, status: str = "complete") -> str:
    fp = f"{n:016x}".rjust(64, "0")[::-1]
    did = document_id(fp)
    chunks = [
        Chunk(chunk_id(fp, Tier.SNIPPET, i), did, Tier.SNIPPET, i, t, f"[DOC: Doc {n}]", 0, 1)
        for i, t in enumerate(texts)
    ]
    file_type = "markdown" if n % 2 == 0 else "text"
    doc = Document(
        did, fp, f"Doc {n}", f"/lib/d{n}.md", f"d{n}.md", None, "test", file_type, 10, 0.0, 0.0
    )
    store.put_document(doc, chunks, None)
    if status != "complete":
        store.set_document_status(did, status)
    return did


def texts(rng: np.random.Generator) -> list[str]:
    """Snippets of 10 to 60 Zipf-distributed words (a few common, most rare)."""
    weights = 1.0 / np.arange(1, len(VOCAB) + 1)
    weights /= weights.sum()
    sizes = rng.integers(10, 61, size=PER_DOC)
    return [" ".join(VOCAB[w] for w in rng.choice(len(VOCAB), size=n, p=weights)) for n in sizes]


def fill(store: SQLiteStore, n_docs: int, rng: np.random.Generator, first: int = 0) -> list[str]:
    with store.transaction():
        return [put_doc(store, first + d, texts(rng)) for d in range(n_docs)]


def queries(rng: np.random.Generator, n: int) -> list[list[str]]:
    return [list(rng.choice(VOCAB, size=int(rng.integers(1, 4)))) for _ in range(n)]


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [c for c, _ in hits]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "docshelf.db")
    yield s
    s.close()


# -- the same answers as FTS5 ------------------------------------------------------------


def test_the_same_matches_as_fts5_and_nearly_the_same_order(store: SQLiteStore) -> None:
    rng = np.random.default_rng(1)
    fill(store, 300, rng)
    index = SidecarLexicalIndex(store, threshold=100)
    assert index.maintain() == "built"
    assert index.path == "tantivy"
    overlap = 0
    gained = 0.0
    best = 0.0
    qs = queries(rng, 60)
    for terms in qs:
        fts5 = dict(own_engines(store).lexical.search(terms, 5_000, NONE))
        assert set(ids(index.search(terms, 5_000, NONE))) == set(fts5)  # the same matches
        want = ids(own_engines(store).lexical.search(terms, 10, NONE))
        got = ids(index.search(terms, 10, NONE))
        overlap += len(set(want) & set(got))
        gained += sum(fts5[c] for c in got)  # tantivy's top 10, scored by FTS5
        best += sum(fts5[c] for c in want)
    # Both are BM25 with the header weighted double; they differ in how fields are
    # combined and in idf details, so ties and near-ties may swap: tantivy's top 10
    # are nearly as good by FTS5's own scores as FTS5's top 10.
    assert gained / best >= 0.97
    assert overlap / (10 * len(qs)) >= 0.7


def test_words_are_stemmed_and_folded_like_fts5(store: SQLiteStore) -> None:
    put_doc(store, 1, ["Connections between Cafés", "nothing here"])
    index = SidecarLexicalIndex(store, threshold=1)
    index.maintain()
    assert index.path == "tantivy"
    for terms in (["connected"], ["cafe"], ["CONNECTION"]):
        assert ids(index.search(terms, 5, NONE)) == ids(
            own_engines(store).lexical.search(terms, 5, NONE)
        )
        assert len(index.search(terms, 5, NONE)) == 1


# -- the switch --------------------------------------------------------------------------


def test_below_the_threshold_fts5_answers_and_the_switch_is_recorded(
    store: SQLiteStore,
) -> None:
    rng = np.random.default_rng(2)
    docs = fill(store, 20, rng)  # 100 snippets
    index = SidecarLexicalIndex(store, threshold=150)
    assert index.maintain() == "fts5"
    assert index.path == "fts5"
    assert store.get_meta("lexical_index") is None
    assert store.lexical_log_position() == 0  # no log below the threshold
    fill(store, 10, rng, first=100)  # 150 snippets
    assert index.maintain() == "built"
    assert (store.get_meta("lexical_index") or "").startswith("tantivy:")
    assert index.path == "tantivy"
    assert index.maintain() == "current"
    for did in docs[:18]:  # down to 60 snippets: under half the threshold
        store.delete_document(did)
    assert index.maintain() == "switched to fts5"
    assert index.path == "fts5"
    assert read_pointer(index.directory) is None
    assert not list(index.directory.glob("index-*"))


def test_a_threshold_of_zero_keeps_fts5_and_switches_an_index_off(store: SQLiteStore) -> None:
    fill(store, 20, np.random.default_rng(3))
    assert SidecarLexicalIndex(store, threshold=10).maintain() == "built"
    off = SidecarLexicalIndex(store, threshold=0)
    assert off.path == "fts5"
    assert off.maintain() == "switched to fts5"
    assert store.get_meta("lexical_index") == "fts5"


def test_a_forced_build_below_the_threshold_answers(store: SQLiteStore) -> None:
    fill(store, 4, np.random.default_rng(12))
    index = SidecarLexicalIndex(store, threshold=10_000)
    assert index.maintain(force=True) == "built"
    assert index.path == "tantivy"


# -- consistency with the store ------------------------------------------------------------


def test_writes_the_index_never_saw_are_answered_and_deletions_never_resurrect(
    store: SQLiteStore,
) -> None:
    rng = np.random.default_rng(4)
    docs = fill(store, 40, rng)
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    victim = store.chunks_of_document(docs[0], Tier.SNIPPET)[0]
    probe = victim.text.split()[-3:]
    assert victim.id in ids(index.search(probe, 200, NONE))
    # Behind the index's back: a document removed, one added with a new word.
    store.delete_document(docs[0])
    put_doc(store, 500, ["zebra crossing", "w1 w2"])
    assert index.path == "fts5"  # behind the store: never answers stale
    assert victim.id not in ids(index.search(probe, 200, NONE))
    assert len(index.search(["zebra"], 5, NONE)) == 1
    assert index.maintain() == "updated"
    assert index.path == "tantivy"
    assert victim.id not in ids(index.search(probe, 200, NONE))
    assert len(index.search(["zebra"], 5, NONE)) == 1
    assert store._q("SELECT COUNT(*) FROM lexical_log")[0][0] == 0  # pruned once applied


def test_a_deletion_racing_the_index_is_filtered_by_the_store(store: SQLiteStore) -> None:
    """The index has caught up, then a document is deleted in a transaction whose log
    entry the index checks only on its next search: the candidate check hides it."""
    rng = np.random.default_rng(5)
    docs = fill(store, 30, rng)
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    assert index.path == "tantivy"
    chunk = store.chunks_of_document(docs[3], Tier.SNIPPET)[0]
    # Keep the index from noticing the change (as if the check ran just before it).
    index._sync = lambda: True  # type: ignore[method-assign]
    store.delete_document(docs[3])
    assert chunk.id not in ids(index.search(chunk.text.split()[:3], 500, NONE))


def test_documents_that_are_not_complete_are_not_shown(store: SQLiteStore) -> None:
    fill(store, 20, np.random.default_rng(6))
    put_doc(store, 900, ["unicorn meadow"], status="failed")
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    assert index.path == "tantivy"
    assert index.search(["unicorn"], 5, NONE) == []


def test_an_index_of_another_epoch_is_never_used(store: SQLiteStore) -> None:
    fill(store, 20, np.random.default_rng(7))
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    store.set_meta("lexical_index", "tantivy:someoneelse")
    assert index.path == "fts5"
    assert index.maintain() == "rebuilt"
    assert index.path == "tantivy"


def test_a_reader_follows_a_rebuild_made_elsewhere(store: SQLiteStore) -> None:
    fill(store, 20, np.random.default_rng(13))
    reader = SidecarLexicalIndex(store, threshold=10)
    reader.maintain()
    assert reader.search(["w1"], 3, NONE)
    first = reader._folder
    assert SidecarLexicalIndex(store, threshold=10).maintain(rebuild=True) == "rebuilt"
    assert not (reader.directory / str(first)).exists()
    assert reader.search(["w1"], 3, NONE)
    assert reader._folder != first and reader.path == "tantivy"


def test_a_torn_index_folder_falls_back_to_fts5_and_is_rebuilt(store: SQLiteStore) -> None:
    fill(store, 20, np.random.default_rng(8))
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    pointer = read_pointer(index.directory)
    assert pointer is not None
    (index.directory / pointer.folder / "meta.json").unlink()
    fresh = SidecarLexicalIndex(store, threshold=10)
    assert fresh.path == "fts5"
    assert fresh.search(["w1"], 3, NONE) == own_engines(store).lexical.search(["w1"], 3, NONE)
    assert fresh.maintain() == "rebuilt"
    assert fresh.path == "tantivy"


KILLED_UPDATE = """
import os, signal
from pathlib import Path
import docshelf.search.engines.tantivy as lexical
from docshelf.store.sqlite import SQLiteStore

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

lexical.{patch} = die
store = SQLiteStore(Path({db!r}))
lexical.SidecarLexicalIndex(store, threshold=10).maintain({kwargs})
"""


@pytest.mark.parametrize(
    ("patch", "kwargs"),
    [("_set_watermark", ""), ("write_pointer", "rebuild=True")],
    ids=["mid-update", "mid-build"],
)
def test_a_real_sigkill_mid_update_leaves_a_consistent_answer_and_is_repaired(
    store: SQLiteStore, tmp_path: Path, patch: str, kwargs: str
) -> None:
    """A process dies (SIGKILL) after the store committed, in the middle of folding the
    change into the index (documents added to the writer, nothing committed) or of a
    rebuild (the new folder written, not yet published)."""
    rng = np.random.default_rng(9)
    docs = fill(store, 40, rng)
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    before = read_pointer(index.directory)
    gone = store.chunks_of_document(docs[0], Tier.SNIPPET)[0]
    store.delete_document(docs[0])
    put_doc(store, 700, ["platypus burrow"])
    script = KILLED_UPDATE.format(patch=patch, db=str(tmp_path / "docshelf.db"), kwargs=kwargs)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)])
    assert proc.returncode == -signal.SIGKILL
    assert read_pointer(index.directory) == before

    reopened = SidecarLexicalIndex(store, threshold=10)
    assert reopened.path == "fts5"  # the index is behind the store: not used
    assert gone.id not in ids(reopened.search(gone.text.split()[:4], 500, NONE))
    assert len(reopened.search(["platypus"], 5, NONE)) == 1
    assert reopened.maintain() == "updated"
    assert reopened.path == "tantivy"
    assert gone.id not in ids(reopened.search(gone.text.split()[:4], 500, NONE))
    assert len(reopened.search(["platypus"], 5, NONE)) == 1
    assert len(list(index.directory.glob("index-*"))) == 1


def test_concurrent_maintainers_take_turns(store: SQLiteStore) -> None:
    from docshelf.durable import folder_lock as _file_lock

    fill(store, 20, np.random.default_rng(10))
    index = SidecarLexicalIndex(store, threshold=10)
    with _file_lock(index.directory) as held:
        assert held
        assert index.maintain() == "busy"
    assert index.maintain() == "built"


# -- filters -----------------------------------------------------------------------------


def test_filters_are_honoured_broad_and_very_selective(store: SQLiteStore) -> None:
    rng = np.random.default_rng(11)
    fill(store, 200, rng)
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    assert index.path == "tantivy"
    selective = SearchFilters(path_prefix="/lib/d17.")
    for terms in queries(rng, 20):
        broad = index.search(terms, 10, SearchFilters(file_type="text"))
        want = ids(own_engines(store).lexical.search(terms, 10, SearchFilters(file_type="text")))
        assert len(broad) == len(want)
        for chunk in store.get_chunks(ids(broad)):
            document = store.get_document(chunk.document_id)
            assert document is not None and document.file_type == "text"
        narrow = index.search(terms, 10, selective)
        assert set(ids(narrow)) == set(ids(own_engines(store).lexical.search(terms, 10, selective)))


def test_a_selective_filter_drops_other_documents_candidates_first_with_the_same_answer(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter that lets a few documents through has the deeper fetches' candidates of
    other documents dropped by their entry before they are looked at: the same hits and
    BM25 scores as looking at each, and documents that join the filter later are seen."""
    from docshelf.search.engines import sidecar

    rng = np.random.default_rng(12)
    fill(store, 300, rng)
    index = SidecarLexicalIndex(store, threshold=10)
    index.maintain()
    narrowed: list[SearchFilters] = []
    for_depth = index._within.for_depth

    def spy(filters: SearchFilters, depth: int, first: int) -> frozenset[int] | None:
        within = for_depth(filters, depth, first)
        if within is not None:
            narrowed.append(filters)
        return within

    monkeypatch.setattr(index._within, "for_depth", spy)
    selective = SearchFilters(path_prefix="/lib/d7")  # d7, d70-d79: 11 of 300 documents

    def both(terms: list[str]) -> list[tuple[str, float]]:
        got = index.search(terms, 10, selective)
        with monkeypatch.context() as m:
            m.setattr(sidecar, "WITHIN_AT", 10**9)  # each candidate looked at
            assert got == index.search(terms, 10, selective)
        assert len(got) == len(own_engines(store).lexical.search(terms, 10, selective))
        for chunk in store.get_chunks(ids(got)):
            document = store.get_document(chunk.document_id)
            assert document is not None and document.path.startswith("/lib/d7")
        return got

    asked = queries(rng, 20)
    for terms in asked:
        both(terms)
    assert len(narrowed) >= 10  # (the rest found enough in the first fetch)
    later = fill(store, 10, rng, first=700)  # d700-d709 join the filter
    index.maintain()
    seen = {c.document_id for terms in asked for c in store.get_chunks(ids(both(terms)))}
    assert seen & set(later)


# -- through the Shelf -------------------------------------------------------------------


def test_shelf_switches_to_the_lexical_index_and_status_says_so(
    isolated_home: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCSHELF_LEXICAL_THRESHOLD", "3")
    monkeypatch.setenv("DOCSHELF_EMBEDDER", "none")
    with Shelf(isolated_home) as shelf:
        shelf.add(notes)
        assert shelf.lexical_index is not None
        assert shelf.lexical_index.path == "tantivy"
        assert shelf.status().lexical_index["path"] == "tantivy"
        hits = shelf.search("leader election heartbeat", limit=3, mode="lexical").hits
        assert hits and "Leader election" in hits[0].chunk.heading_path
        filtered = shelf.search(
            "sourdough starter", limit=3, mode="lexical", filters=SearchFilters(tags=("baking",))
        ).hits
        assert {h.document.title for h in filtered} == {"Bread"}


def test_the_index_has_the_fields_and_an_index_of_the_old_layout_is_rebuilt(
    store: SQLiteStore,
) -> None:
    import dataclasses

    from docshelf.search.engines import tantivy as lexical
    from docshelf.search.engines.tantivy import index_dir, write_pointer

    with store.transaction():
        put_doc(store, 1, ["plain words about zebras", "nothing else"])
        put_doc(store, 2, ["zebra zebra zebra in a long run of other words here"])
        fp = f"{3:016x}".rjust(64, "0")[::-1]
        titled = Chunk(
            chunk_id(fp, Tier.SNIPPET, 0), document_id(fp), Tier.SNIPPET, 0, "stripes",
            "[DOC: Zebra]\n[PATH: Habitat]", 0, 1, heading_path=("Zebra", "Habitat"),
        )  # fmt: skip
        doc = Document(
            document_id(fp), fp, "Zebra", "/lib/z.md", "z.md", None, "test", "markdown", 1, 0, 0
        )
        store.put_document(doc, [titled], None)
    index = SidecarLexicalIndex(store, threshold=1)
    assert index.maintain() == "built" and index.path == "tantivy"
    # the title (weighted) outranks a body that repeats the word three times
    assert ids(index.search(["zebra"], 5, NONE))[0] == titled.id
    assert ids(index.search(["habitat"], 5, NONE)) == [titled.id]  # the heading is a field
    assert ids(index.search(["path"], 5, NONE)) == []  # the header's labels are not words
    pointer = read_pointer(index_dir(store))
    assert pointer is not None and pointer.layout == lexical.LAYOUT
    write_pointer(index_dir(store), dataclasses.replace(pointer, layout=lexical.LAYOUT - 1))
    old = SidecarLexicalIndex(store, threshold=1)
    assert old.path == "fts5"  # an index of another layout never answers
    assert old.maintain() == "rebuilt" and old.path == "tantivy"
    assert ids(old.search(["habitat"], 5, NONE)) == [titled.id]
